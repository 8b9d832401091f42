"""Recomputation changes no bits and saves memory: GPT-2 (with dropout),
Llama and ResNet-18 trained 5 steps under recompute=full or selective end
with weights byte-identical to the plain run, alone and under dp=2 and pp=2
(ResNet-18's batch norm rules out pipelines), tp=2 and ZeRO-3. For the transformers, 4 layers
of 8 x 32 tokens, whose activations dominate the step's temporaries, the arena
the program plans for them shrinks too."""
import re

import pytest
import torch

import models
from conftest import ROOT, run_colo

STEPS = 5
TRAIN = {"gpt2": "loss=lm,optimizer=adamw,lr=1e-3",
         "llama": "loss=lm,optimizer=adamw,lr=1e-3",
         "resnet18": "loss=cross-entropy,optimizer=adamw,lr=1e-4"}
CASES = [(name, parallel, policy)
         for name in ("gpt2", "llama")
         for parallel, policies in (("", ("full", "selective")), ("dp=2", ("full",)),
                                    ("pp=2,micro=2", ("full",)))
         for policy in policies] + \
        [("gpt2", "tp=2", "full"), ("llama", "dp=2,zero=3", "full"),
         ("resnet18", "", "full"), ("resnet18", "dp=2", "full")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(weights bytes, arena MB) per model, plan and policy, each run once."""
    tmp = tmp_path_factory.mktemp("recompute")
    paths, cache = {}, {}

    def get(name, parallel, policy):
        if name not in paths:
            model, args = transformer(name) if name in ("gpt2", "llama") else models.build(name)
            paths[name] = tmp / f"{name}.onnx"
            models.export(model.train(), args, paths[name], "torchscript")
        key = (name, parallel, policy)
        if key not in cache:
            plan = ",".join(p for p in (parallel, f"recompute={policy}") if p)
            exe = tmp / f"{name}-{len(cache)}"
            run_colo("compile", paths[name], "-o", exe, "--train", TRAIN[name], "--plan", plan,
                     "--dump-ir", exe / "ir")
            run_colo("run", exe, "--steps", STEPS, "--data", "synthetic", "--threads", 1,
                     "-o", exe / "w.safetensors")
            # The largest of the ranks' programs.
            arena = max(int(b) for b in re.findall(r"arena_bytes = (\d+)",
                                                   (exe / "ir" / "2-program.mlir").read_text()))
            clones = (exe / "ir" / "1-train-step.mlir").read_text().count("colo.recomputed")
            cache[key] = ((exe / "w.safetensors").read_bytes(), arena, clones)
        return cache[key]

    return get


def transformer(name):
    import transformers as tf

    torch.manual_seed(models.SEED)
    if name == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=256,
                                                 n_positions=32, use_cache=False))
    else:
        model = tf.LlamaForCausalLM(tf.LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=256, max_position_embeddings=32,
            use_cache=False))
    return models.LogitsOnly(model), (torch.randint(0, 256, (8, 32)),)


@pytest.mark.parametrize("name,parallel,policy", CASES)
def test_recomputation_changes_no_bits(name, parallel, policy, trained):
    plain, plain_arena, _ = trained(name, parallel, "none")
    weights, arena, clones = trained(name, parallel, policy)
    print(f"\n{name} {parallel or 'one rank'} recompute={policy}: arena {arena} bytes "
          f"(plain {plain_arena}, {arena / plain_arena:.2f}x)")
    assert clones > 0
    assert weights == plain
    if name != "resnet18":  # its peak is in the stem, before the repeated blocks
        assert arena < plain_arena


def test_a_device_memory_budget_is_checked_when_compiling_and_running(tmp_path):
    """colo compile --device-memory refuses a step that plans more, and records
    the budget, which colo run then holds each rank to."""
    model = ROOT / "examples" / "gpt2-tiny.onnx"

    def planned(policy):
        exe = tmp_path / f"free-{policy}"
        run_colo("compile", model, "-o", exe, "--train", "loss=lm", "--plan", f"recompute={policy}")
        out = run_colo("run", exe, "--steps", 1, "--data", "synthetic",
                       "-o", exe / "w.safetensors").stdout
        return float(re.search(r"memory: ([\d.]+) MB planned per rank", out)[1]) * 1e6

    plain, full = planned("none"), planned("full")
    budget = int((plain + full) / 2)
    proc = run_colo("compile", model, "-o", tmp_path / "plain", "--train", "loss=lm",
                    "--device-memory", budget, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("colo: error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert "of device memory per rank" in errors[0] and "the largest buffer" in errors[0]
    assert f"more than the {budget / 1e6:.1f} MB of --device-memory" in errors[0]
    assert not (tmp_path / "plain" / "program.pb").exists()

    exe = tmp_path / "full"
    run_colo("compile", model, "-o", exe, "--train", "loss=lm", "--plan", "recompute=full",
             "--device-memory", budget)
    proc = run_colo("run", exe, "--steps", 1, "--data", "synthetic", "--device-memory",
                    int(full) // 2, "-o", exe / "w.safetensors", check=False)
    assert proc.returncode == 1 and "was compiled to fit" in proc.stderr, proc.stderr
    assert "step 1" not in proc.stdout
    out = run_colo("run", exe, "--steps", 1, "--data", "synthetic",
                   "-o", exe / "w.safetensors").stdout
    assert f"of the {budget / 1e6:.1f} MB of --device-memory" in out, out
