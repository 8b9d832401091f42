#!/usr/bin/env python3
"""colo against PyTorch on one GPU: GPT-2 small and a Llama-style 1B model
trained a few steps in bf16 mixed precision from the same weights on the same
batches (bench/gpu_check.sh runs it; docs/cuda.md).

    gpu_check.py prepare --colo BIN/colo --out DIR [--tiny] [--target cuda|cpu]
    gpu_check.py check --colo-run BIN/colo-run --exes DIR [--tiny] [--device cuda|cpu]

`prepare` (the development machine, which has colo's compiler) builds each
model as a synthetic colo model (`colo model`: no weights, Hugging Face's
module and parameter names) and compiles its training step. `check` (the GPU
machine, with PyTorch and transformers) builds the same models in
transformers, writes their initial weights (and Llama's rotary tables) as
safetensors for `colo-run --weights`, trains colo and PyTorch (eager, then
torch.compile) on the same batches, and prints the loss differences, the step
times and their ratios, colo's cost model's step time for the GPU's preset
beside colo's measured one, and the MFU of each: model FLOPs per second over the
rate of an 8192^3 bf16 matrix product measured on the same GPU, and over the
datasheet's dense bf16 peak. --tiny shrinks the models and steps so that the
whole path runs on a CPU in seconds (fp32, no autocast, no torch.compile): a
check of this script and of the synthetic models' parity with transformers
(test/e2e/test_gpu_check.py), not of a GPU."""
import argparse
import json
import math
import pathlib
import re
import subprocess
import sys
import time

# name -> (colo model arguments, transformers config, batch)
MODELS = {
    "gpt2-small": {"family": "gpt", "layers": 12, "hidden": 768, "heads": 12,
                   "vocab": 50257, "seq": 1024, "batch": 8},
    # TinyLlama-1.1B's shape (22 layers, hidden 2048, 32 heads over 4 KV heads),
    # with the embedding tied to the head as colo's synthetic Llama has it.
    "llama-1b": {"family": "llama", "layers": 22, "hidden": 2048, "heads": 32,
                 "kv_heads": 4, "ffn": 5632, "vocab": 32000, "seq": 1024, "batch": 4},
}
TINY = {"layers": 2, "hidden": 64, "heads": 4, "vocab": 256, "seq": 32, "batch": 2}
TRAIN = "loss=lm,optimizer=adamw,lr=1e-4,beta1=0.9,beta2=0.999,eps=1e-8,weight-decay=0.01"
# Dense bf16 peak of the datasheets (TFLOP/s): H100 SXM and H200 alike.
DATASHEET_BF16 = {"H100": 989.4, "H200": 989.4, "A100": 312.0}


def config(name, tiny):
    c = dict(MODELS[name])
    if tiny:
        c.update(TINY)
        if c["family"] == "llama":
            c.update(kv_heads=2, ffn=128)
    return c


def prepare(args):
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    precision = "fp32" if args.tiny else "bf16"
    for name in MODELS:
        c = config(name, args.tiny)
        mlir = out / f"{name}.mlir"
        cmd = [args.colo, "model", c["family"], "--layers", c["layers"], "--hidden",
               c["hidden"], "--heads", c["heads"], "--vocab", c["vocab"], "--seq", c["seq"],
               "--batch", c["batch"], "--dtype", "f32", "--dropout", 0, "-o", mlir]
        if c["family"] == "llama":
            cmd += ["--kv-heads", c["kv_heads"], "--ffn", c["ffn"]]
        subprocess.run([str(a) for a in cmd], check=True)
        t = time.perf_counter()
        subprocess.run([str(a) for a in [args.colo, "compile", mlir, "-o", out / name,
                                         "--train", f"{TRAIN},precision={precision}",
                                         "--target", args.target]], check=True)
        print(f"{name}: compiled for {args.target} in {time.perf_counter() - t:.1f} s")
        (out / name / "gpu_check.json").write_text(json.dumps(c))
        mlir.unlink()
    return 0


def hf_model(c):
    import torch
    import transformers as tf
    torch.manual_seed(0)
    if c["family"] == "gpt":
        cfg = tf.GPT2Config(n_layer=c["layers"], n_embd=c["hidden"], n_head=c["heads"],
                            vocab_size=c["vocab"], n_positions=c["seq"], resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
        return tf.GPT2LMHeadModel(cfg)
    cfg = tf.LlamaConfig(num_hidden_layers=c["layers"], hidden_size=c["hidden"],
                         num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                         intermediate_size=c["ffn"], vocab_size=c["vocab"],
                         max_position_embeddings=c["seq"], rms_norm_eps=1e-5,
                         rope_theta=10000.0, tie_word_embeddings=True, use_cache=False,
                         attention_bias=False, mlp_bias=False)
    return tf.LlamaForCausalLM(cfg)


def initial_weights(model, c, path):
    """The model's parameters under their PyTorch names (tied ones once each),
    and for Llama the rotary tables colo's synthetic model reads as buffers."""
    import torch
    from safetensors.torch import save_file
    tensors = {}
    seen = set()
    for key, t in model.state_dict().items():
        if t.data_ptr() in seen or "rotary_emb" in key:
            continue
        seen.add(t.data_ptr())
        tensors[key] = t.detach().float().contiguous().clone()
    if c["family"] == "llama":
        d = c["hidden"] // c["heads"]
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        freqs = torch.outer(torch.arange(c["seq"], dtype=torch.float32), inv)
        emb = torch.cat([freqs, freqs], dim=-1)
        tensors["model.rotary_emb.cos"] = emb.cos().contiguous()
        tensors["model.rotary_emb.sin"] = emb.sin().contiguous()
    save_file(tensors, str(path))


def torch_train(model, batches, device, compiled):
    """Losses and per-step seconds of AdamW steps under bf16 autocast (CUDA)."""
    import contextlib
    import torch
    import torch.nn.functional as F
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)

    def step(ids):
        opt.zero_grad(set_to_none=True)
        ctx = (torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda"
               else contextlib.nullcontext())
        with ctx:
            logits = model(input_ids=ids).logits
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]),
                               ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return loss

    fn = torch.compile(step) if compiled else step
    losses, times = [], []
    for ids in batches:
        ids = ids.to(device)
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        sync()
        t = time.perf_counter()
        loss = fn(ids)
        sync()
        times.append(time.perf_counter() - t)
        losses.append(float(loss.detach()))
    return losses, times


def colo_train(colo_run, exe, weights, data, steps):
    out = subprocess.run([colo_run, str(exe), "--steps", str(steps), "--data", str(data),
                          "--weights", str(weights), "--no-snapshot",
                          "-o", str(exe.parent / (exe.name + ".out.safetensors"))],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"colo-run {exe.name} failed:\n{out.stderr.strip()}")
    found = re.findall(r"^step \d+/\d+\s+loss (\S+)\s+\((\d+(?:\.\d+)?) ms\)", out.stdout, re.M)
    predicted = re.search(r"^predicted on (\S+): (\S+) ms per step", out.stdout, re.M)
    return ([float(l) for l, _ in found], [float(ms) / 1e3 for _, ms in found],
            (predicted.group(1), float(predicted.group(2)) / 1e3) if predicted else None)


def model_flops(c, params):
    """Per step: 6 N per token for the weights' products, plus attention's
    scores and values, 12 L h s per token (forward and backward)."""
    tokens = c["batch"] * c["seq"]
    return tokens * (6 * params + 12 * c["layers"] * c["hidden"] * c["seq"])


def measured_matmul_rate(device):
    import torch
    if device != "cuda":
        return None
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    return 2 * n ** 3 * 10 / (time.perf_counter() - t)


def check(args):
    import numpy as np
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: PyTorch sees no CUDA GPU on this machine", file=sys.stderr)
        return 1
    exes = pathlib.Path(args.exes)
    steps = 3 if args.tiny else args.steps
    warm = 1 if args.tiny else 2
    rate = measured_matmul_rate(args.device)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    peak = next((v for k, v in DATASHEET_BF16.items() if k in gpu), None)
    if rate:
        print(f"{gpu}: 8192^3 bf16 matrix product {rate / 1e12:.0f} TFLOP/s measured"
              + (f", datasheet {peak:.0f}" if peak else ""))
    worst = 0.0
    for name in MODELS:
        exe = exes / name
        c = json.loads((exe / "gpu_check.json").read_text())
        g = torch.Generator().manual_seed(1)
        batches = [torch.randint(0, c["vocab"], (c["batch"], c["seq"]), generator=g)
                   for _ in range(steps)]
        data = exes / f"{name}.npz"
        np.savez(data, input_ids=torch.cat(batches).numpy())
        weights = exes / f"{name}.init.safetensors"
        model = hf_model(c)
        params = sum(p.numel() for p in model.parameters())
        initial_weights(model, c, weights)
        colo_losses, colo_times, predicted = colo_train(args.colo_run, exe, weights, data,
                                                        steps)
        eager_losses, eager_times = torch_train(hf_model(c), batches, args.device, False)
        compiled_times = None
        try:
            if not args.tiny:  # a check of the path, not a measurement
                _, compiled_times = torch_train(hf_model(c), batches, args.device, True)
        except Exception as e:  # noqa: BLE001 - a peer that fails here is reported
            print(f"  torch.compile: not measured ({type(e).__name__}: {str(e)[:100]})")
        diffs = [abs(a - b) / abs(b) for a, b in zip(colo_losses, eager_losses)]
        worst = max(worst, max(diffs))
        print(f"{name}: {params / 1e6:.0f}M parameters, batch {c['batch']} x seq {c['seq']}, "
              f"{steps} AdamW steps on {gpu}")
        print("  losses colo   " + " ".join(f"{l:.5f}" for l in colo_losses))
        print("  losses torch  " + " ".join(f"{l:.5f}" for l in eager_losses))
        print(f"  largest relative loss difference {max(diffs):.2e}")
        med = lambda ts: sorted(ts[warm:])[len(ts[warm:]) // 2]  # noqa: E731
        colo_s, eager_s = med(colo_times), med(eager_times)
        line = (f"  step: colo {colo_s * 1e3:.1f} ms, eager {eager_s * 1e3:.1f} ms "
                f"(colo/eager {colo_s / eager_s:.2f})")
        if compiled_times:
            compiled_s = med(compiled_times)
            line += (f", torch.compile {compiled_s * 1e3:.1f} ms "
                     f"(colo/compile {colo_s / compiled_s:.2f})")
        print(line)
        if predicted:
            preset, seconds = predicted
            print(f"  colo's cost model on {preset}: {seconds * 1e3:.1f} ms per step "
                  f"({(seconds - colo_s) / colo_s:+.1%} against the measured step)")
        flops = model_flops(c, params)
        if rate:
            for who, s in [("colo", colo_s), ("eager", eager_s)] + (
                    [("torch.compile", med(compiled_times))] if compiled_times else []):
                mfu = f"  MFU {who}: {flops / s / rate:.1%} of the measured product rate"
                if peak:
                    mfu += f", {flops / s / (peak * 1e12):.1%} of the datasheet peak"
                print(mfu)
    tolerance = 1e-5 if args.tiny else 1e-2
    print(f"largest relative loss difference {worst:.2e} (tolerance {tolerance:g})")
    return 0 if worst <= tolerance else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--colo", required=True)
    pp.add_argument("--out", required=True)
    pp.add_argument("--target", choices=["cuda", "cpu"], default="cuda")
    pp.add_argument("--tiny", action="store_true")
    pc = sub.add_parser("check")
    pc.add_argument("--colo-run", required=True)
    pc.add_argument("--exes", required=True)
    pc.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    pc.add_argument("--steps", type=int, default=6)
    pc.add_argument("--tiny", action="store_true")
    args = p.parse_args()
    return prepare(args) if args.command == "prepare" else check(args)


if __name__ == "__main__":
    sys.exit(main())
