#!/usr/bin/env python3
"""Multi-rank training steps of GPT-2 (6 layers, hidden 256, 8 heads, seq 128,
vocab 8192, global batch 8) in colo and in PyTorch on the same cores.

    python bench/parallel_bench.py [--ranks 2] [--steps 5] [--rounds 3]

colo runs dp=2, dp=2,zero=3, tp=2 and pp=2 (two microbatches, 1F1B) under
mpirun; PyTorch runs DistributedDataParallel and FSDP2 (fully_shard on each
block and the root) over gloo, and DeepSpeed's ZeRO-3 (its CPU accelerator,
gloo) where `import deepspeed` works: it is not among the pinned packages;
`pip install --target DIR --no-deps deepspeed==0.19.8 hjson py-cpuinfo
msgpack einops ninja pydantic pydantic-core annotated-types
typing-inspection` and PYTHONPATH=DIR run it beside the pinned PyTorch.
Every run splits the cores evenly among its ranks, runs AdamW with the same
settings on the same batches, and reports the median step time after two
warm-up steps. colo and PyTorch run in alternating rounds; each round's ratios
compare runs measured side by side, because this machine's speed drifts."""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import train_bench  # noqa: E402  (the model, its export and the colo binary)

GLOBAL_BATCH = 8
COLO_PLANS = {"dp=2": "dp=2", "dp=2,zero=3": "dp=2,zero=3", "tp=2": "tp=2",
              "pp=2": "pp=2,micro=2,schedule=1f1b"}
PEER_OF = {"dp=2": "ddp", "dp=2,zero=3": "fsdp2", "tp=2": "ddp", "pp=2": "ddp"}


def batches(steps):
    g = torch.Generator().manual_seed(0)
    return [torch.randint(0, 8192, (GLOBAL_BATCH, 128), generator=g)
            for _ in range(steps + 2)]


def export(work, layers, ids):
    """The model's ONNX export and the batches as .npz, in `work`."""
    onnx_path, data = work / "gpt2.onnx", work / "data.npz"
    torch.onnx.export(train_bench.Logits(train_bench.model(layers)), (ids[0],), onnx_path,
                      dynamo=False, input_names=["input_ids"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, opset_version=17)
    np.savez(data, input_ids=np.concatenate([b.numpy() for b in ids]))
    return onnx_path, data


def torch_rank(rank, ranks, kind, layers, steps, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks))
    torch.set_num_threads(max(1, os.cpu_count() // ranks))
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    net = train_bench.Logits(train_bench.model(layers))
    per_rank = GLOBAL_BATCH // ranks
    if kind == "deepspeed":
        # ZeRO-3 on DeepSpeed's CPU accelerator (gloo without oneCCL), with
        # torch's AdamW as the other runs (DeepSpeed's fused Adam needs CUDA).
        import deepspeed
        config = {"train_micro_batch_size_per_gpu": per_rank, "zero_optimization": {"stage": 3},
                  "optimizer": {"type": "AdamW", "params": {
                      "lr": 1e-4, "weight_decay": 0.01, "torch_adam": True}}}
        engine, _, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(),
                                               config=config, dist_init_required=False)
        forward, backward = engine, engine.backward

        def update():
            engine.step()
    else:
        if kind == "ddp":
            net = torch.nn.parallel.DistributedDataParallel(net)
        else:
            from torch.distributed.fsdp import fully_shard
            for block in net.m.transformer.h:
                fully_shard(block)
            fully_shard(net)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-4, weight_decay=0.01)
        forward = net

        def backward(loss):
            loss.backward()

        def update():
            opt.step()
            opt.zero_grad()
    times = []
    for batch in batches(steps):
        local = batch[rank * per_rank:(rank + 1) * per_rank]
        dist.barrier()
        t = time.perf_counter()
        logits = forward(local)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               local[:, 1:].reshape(-1))
        backward(loss)
        update()
        times.append(time.perf_counter() - t)
    if rank == 0:
        out.put(statistics.median(times[2:]))
    dist.destroy_process_group()


def torch_step(kind, ranks, layers, steps, port):
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(torch_rank, args=(ranks, kind, layers, steps, port, out),
                       nprocs=ranks, start_method="spawn")
    return out.get()


def deepspeed_available():
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    try:
        import deepspeed  # noqa: F401
        return True
    except ImportError:
        return False


def colo_step(exe, data, steps, ranks):
    out = subprocess.run([str(train_bench.COLO), "run", str(exe), "--steps", str(steps + 2),
                          "--data", str(data), "--np", str(ranks),
                          "-o", str(exe / "w.safetensors")],
                         check=True, capture_output=True, text=True).stdout
    ms = [float(m) for m in re.findall(r"\((\d+(?:\.\d+)?) ms\)", out)]
    if len(ms) < steps + 2:
        raise RuntimeError(f"colo run printed {len(ms)} step times:\n{out}")
    return statistics.median(ms[2:]) / 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    if args.ranks != 2:
        sys.exit("parallel_bench: the plans compared are for 2 ranks (--ranks 2)")
    ids = batches(args.steps)
    peers = ["ddp", "fsdp2"]
    if deepspeed_available():
        peers.append("deepspeed")
    else:
        print("deepspeed: not installed (its CPU ZeRO-3 is not measured)")
    results = {name: [] for name in list(COLO_PLANS) + peers}
    with tempfile.TemporaryDirectory() as d:
        work = pathlib.Path(d)
        onnx_path, data = export(work, args.layers, ids)
        exes = {}
        for name, plan in COLO_PLANS.items():
            exes[name] = work / name.replace(",", "_").replace("=", "")
            subprocess.run([str(train_bench.COLO), "compile", str(onnx_path), "-o",
                            str(exes[name]), "--plan", plan, "--train",
                            "loss=lm,optimizer=adamw,lr=1e-4,weight-decay=0.01"],
                           check=True, stdout=subprocess.DEVNULL)
        port = 29500 + os.getpid() % 1000
        for r in range(args.rounds):
            for i, peer in enumerate(peers):
                results[peer].append(torch_step(peer, args.ranks, args.layers, args.steps,
                                                port + 10 * r + i))
            for name in COLO_PLANS:
                results[name].append(colo_step(exes[name], data, args.steps, args.ranks))
    print(f"GPT-2 {args.layers} layers, hidden 256, 8 heads, seq 128, vocab 8192, global "
          f"batch {GLOBAL_BATCH}; {args.ranks} ranks, {max(1, os.cpu_count() // args.ranks)} "
          f"threads each; median of {args.steps} steps, {args.rounds} rounds")
    for peer in peers:
        label = "deepspeed zero3" if peer == "deepspeed" else "pytorch " + peer
        print(f"  {label:21s}  {statistics.median(results[peer]) * 1e3:8.1f} ms/step"
              f"   rounds: {', '.join(f'{t * 1e3:.0f}' for t in results[peer])}")
    for name in COLO_PLANS:
        line = f"  colo {name:13s}  {statistics.median(results[name]) * 1e3:8.1f} ms/step"
        for peer in [PEER_OF[name]] + (["deepspeed"] if name == "dp=2,zero=3" and
                                       "deepspeed" in peers else []):
            ratios = [c / t for c, t in zip(results[name], results[peer])]
            line += (f"   colo/{peer} = {statistics.median(ratios):.2f} "
                     f"(rounds {', '.join(f'{x:.2f}' for x in ratios)})")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
