"""Recomputation changes no bits and saves memory: GPT-2, Llama (both with
dropout) and ResNet-18 trained 5 steps under recompute=full or selective end
with weights byte-identical to the plain run, alone and under dp=2 and pp=2
(ResNet-18's batch norm rules out pipelines), while the arena the program
plans for its temporaries shrinks."""
import re

import pytest

import models
from conftest import run_colo

STEPS = 5
TRAIN = {"gpt2": "loss=lm,optimizer=adamw,lr=1e-3",
         "llama": "loss=lm,optimizer=adamw,lr=1e-3",
         "resnet18": "loss=cross-entropy,optimizer=adamw,lr=1e-4"}
CASES = [(name, parallel, policy)
         for name in ("gpt2", "llama")
         for parallel, policies in (("", ("full", "selective")), ("dp=2", ("full",)),
                                    ("pp=2,micro=2", ("full",)))
         for policy in policies] + \
        [("resnet18", "", "full"), ("resnet18", "dp=2", "full")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(weights bytes, arena MB) per model, plan and policy, each run once."""
    tmp = tmp_path_factory.mktemp("recompute")
    paths, cache = {}, {}

    def get(name, parallel, policy):
        if name not in paths:
            model, args = models.build(name)
            paths[name] = tmp / f"{name}.onnx"
            models.export(model, args, paths[name], "torchscript")
        key = (name, parallel, policy)
        if key not in cache:
            plan = ",".join(p for p in (parallel, f"recompute={policy}") if p)
            exe = tmp / f"{name}-{len(cache)}"
            run_colo("compile", paths[name], "-o", exe, "--train", TRAIN[name], "--plan", plan)
            out = run_colo("run", exe, "--steps", STEPS, "--data", "synthetic", "--threads", 1,
                           "-o", exe / "w.safetensors").stdout
            arena = float(re.search(r"\(arena ([\d.]+) MB", out)[1])
            cache[key] = ((exe / "w.safetensors").read_bytes(), arena)
        return cache[key]

    return get


@pytest.mark.parametrize("name,parallel,policy", CASES)
def test_recomputation_changes_no_bits(name, parallel, policy, trained):
    plain, plain_arena = trained(name, parallel, "none")
    weights, arena = trained(name, parallel, policy)
    print(f"\n{name} {parallel or 'one rank'} recompute={policy}: arena {arena} MB "
          f"(plain {plain_arena} MB)")
    assert weights == plain
    assert arena < plain_arena
