"""Parallel plans against the single-rank step: transformers GPT-2 and Llama (4
layers; a ViT under 2-D and 2.5-D tensor parallelism) trained 5 steps under a
plan on CPU ranks (mpirun) must give the
per-step losses and final weights of the same model trained by one rank, within
1e-5 (losses relative, weights relative to each tensor's largest magnitude);
and the bytes the ranks send must equal the plan's analytic volume (ranks
that die, hang or fail: test_faults.py).

A plan sums gradients in another order than one rank (per rank, then across
ranks). With SGD that moves weights by rounding only, and 1e-5 holds. Adam
divides each gradient by its own running magnitude, so an element whose
gradient cancels to rounding level (GPT-2's key biases get exactly zero) moves
by up to lr either way whatever the order: no float32 run can follow another
closer than PyTorch float32 follows float64 on the same training. PyTorch
itself shows it: summing two half-batches' gradients (dp=2's order) instead of
one batch's moves its own float32 AdamW weights 7.6e-4 on this GPT-2 (9 of 53
tensors past 1e-5) and 2.5e-5 on this Llama, with SGD 3.4e-7. For AdamW the
weights bound is therefore max(1e-5, 2x the largest distance of a PyTorch
float32 tensor from float64, the furthest of the runs of
train_ref.float32_variants); the worst tensor and PyTorch's distance for that
same tensor are printed."""
import copy
import json
import re
import subprocess

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import models
import train_ref
import zoo
from conftest import BIN, run_colo

RTOL = 1e-5
STEPS = 5
BATCH, SEQ = 4, 16
LAYERS, HIDDEN = 4, 64
LR = 1e-3
CLIP = 0.5
TRAIN = {"adamw": f"loss=lm,optimizer=adamw,lr={LR}",
         "adamw-clip": f"loss=lm,optimizer=adamw,lr={LR},max-grad-norm={CLIP}",
         "sgd": f"loss=lm,optimizer=sgd,lr={10 * LR},momentum=0.9",
         "adamw-bf16": f"loss=lm,optimizer=adamw,lr={LR},precision=bf16"}


def tiny(name):
    """train_ref's GPT-2 or Llama with LAYERS layers; Llama with 8 query and 4
    key/value heads, so that tp=4 splits both. "gpt2-dynamo" is the GPT-2,
    exported by the dynamo exporter instead of the TorchScript one. BERT
    (masked LM, hidden 64) trains with the same next-token loss."""
    torch.manual_seed(models.SEED)
    name = name.removesuffix("-dynamo")
    if name == "bert":
        import transformers as tf
        return models.LogitsOnly(tf.BertForMaskedLM(tf.BertConfig(
            hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4,
            intermediate_size=128, vocab_size=256, max_position_embeddings=32,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)))
    return train_ref._hf(name, LAYERS, heads=8, kv_heads=4) if name == "llama" else \
        train_ref._hf(name, LAYERS)


LOSS = "<loss>"  # torch_distance's key for the losses' spread (bf16)


def torch_distance(model, data, clip=None, bf16=False, batch=BATCH):
    """Per tensor: how far PyTorch float32 AdamW (clipping gradients to norm
    `clip`; with `bf16`, under bf16 autocast) ends from float64 (relative to
    the tensor's largest magnitude) on this training, the furthest of
    train_ref.float32_variants' runs (with `bf16`, one bf16 step apart)."""
    def run(m, dtype):
        m = m.to(dtype)
        opt = torch.optim.AdamW(m.parameters(), lr=LR, weight_decay=0.01)
        autocast = bf16 and dtype == torch.float32
        for i in range(STEPS):
            ids = data[i * batch:(i + 1) * batch]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                logits = m(ids).to(dtype)
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
            opt.step()
            losses.append(float(loss))
        return {k: v.detach().double().numpy() for k, v in m.state_dict().items()}

    losses = []
    f64 = run(copy.deepcopy(model), torch.float64)
    runs = [run(m, torch.float32)
            for m in train_ref.float32_variants(model, relative_step=2.0**-8 if bf16 else None)]
    spread = {k: max(float(np.abs(f32[k] - f64[k]).max()) for f32 in runs) /
              max(float(np.abs(f64[k]).max()), 1e-12) for k in f64}
    if bf16:  # the losses' spread too: bf16 moves them beyond RTOL
        by_run = np.array(losses).reshape(-1, STEPS)
        spread[LOSS] = float(np.max(np.abs(by_run[1:] - by_run[0]) / np.abs(by_run[0])))
    return spread


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """Per model and optimizer (and batch size, if not BATCH): the ONNX
    export, the data, the single-rank run and (AdamW) PyTorch's float32
    distance per tensor."""
    cache = {}

    def get(model_name, opt="adamw", batch=BATCH):
        name = model_name if batch == BATCH else f"{model_name}-batch{batch}"
        if name not in cache:
            tmp = tmp_path_factory.mktemp(name)
            model = tiny(model_name).train()
            path = tmp / "model.onnx"
            ids = torch.randint(0, 256, (batch, SEQ), generator=torch.Generator().manual_seed(1))
            # The dynamo exporter's optimizer turns norm scales, biases and
            # position embeddings into constants; test_zoo exports without it.
            dynamo = {"optimize": False} if name.endswith("-dynamo") else {}
            models.export(model, (ids,), path, "dynamo" if dynamo else "torchscript",
                          input_names=["input_ids"], **dynamo)
            data = torch.randint(0, 256, (STEPS * batch, SEQ),
                                 generator=torch.Generator().manual_seed(2))
            np.savez(tmp / "data.npz", input_ids=data.numpy())
            params = sum(p.numel() for p in model.parameters())
            cache[name] = (tmp, path, params, torch_distance(model, data, batch=batch))
            cache[name, "torch"] = model, data
        if (name, opt) not in cache:
            tmp, path = cache[name][:2]
            cache[name, opt] = train(tmp, path, "", opt, tmp / f"single-{opt}")
        floor = cache[name][3]
        if opt in ("adamw-clip", "adamw-bf16"):
            if (name, opt, "floor") not in cache:
                cache[name, opt, "floor"] = torch_distance(
                    *cache[name, "torch"], CLIP if opt == "adamw-clip" else None,
                    bf16=opt == "adamw-bf16")
            floor = cache[name, opt, "floor"]
        return cache[name][:3] + (floor, cache[name, opt])

    return get


def train(tmp, path, plan, opt, exe):
    """Compiles and runs 5 steps; (losses, weights, the communication line)."""
    args = ["compile", path, "-o", exe, "--train", TRAIN[opt]]
    if plan:
        args += ["--plan", plan]
    run_colo(*args)
    out = run_colo("run", exe, "--steps", STEPS, "--data", tmp / "data.npz", "--threads", 1,
                   "-o", exe / "w.safetensors").stdout
    losses = [float(x) for x in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]
    comm = re.search(r"^communication: (\d+) bytes sent per step by rank 0, (\d+) by all",
                     out, re.M)
    return losses, load_file(exe / "w.safetensors"), comm and (int(comm[1]), int(comm[2]))


def ring_all_reduce_bytes(ranks, elements):
    """Bytes all members of a ring all-reduce send together: 2 (p-1) n * 4."""
    return 2 * (ranks - 1) * elements * 4



def megatron(tp, batch=BATCH):
    """Megatron TP without SP: 4 all-reduces of b*s*h floats per layer per step
    (attention and MLP, forward and backward)."""
    return LAYERS * 4 * ring_all_reduce_bytes(tp, batch * SEQ * HIDDEN)


def megatron_dp(tp, dp, W):
    """Megatron TP in each of the dp groups (ring bytes are linear in the
    size, so the groups' b/dp samples add up to the whole batch) and, in each
    of the tp data-parallel groups, the all-reduce of the rank's gradients
    (blocks of the sharded parameters, the others whole) and of the loss."""
    P = sum(w.size for w in W.values())
    return megatron(tp) + ring_all_reduce_bytes(dp, P + (tp - 1) * tp_replicated(W)) + \
        tp * ring_all_reduce_bytes(dp, 1)


def sp_read(W):
    """Parameters that sequence-parallel regions read whole (norm scales and
    biases, the biases after row-parallel sums): each rank's tokens give part
    of their gradients."""
    return sum(w.size for k, w in W.items()
               if "ln_" in k or "norm" in k or k.endswith("c_proj.bias"))


def tp_replicated(W):
    """Parameters tensor parallelism leaves whole: all but the attention and
    MLP projections (and GPT-2's column-parallel biases)."""
    return sum(w.size for k, w in W.items()
               if not ("c_attn" in k or "c_fc" in k or k.endswith("_proj.weight")))


def tp_replicated_ranks(W, tp):
    """k -> tp for a parameter every tensor-parallel rank holds whole, else 1
    (tp_replicated's split)."""
    return lambda k: 1 if ("c_attn" in k or "c_fc" in k or k.endswith("_proj.weight")) else tp


def megatron_sp(tp, W, dp=1):
    """Megatron TP with SP: per layer 2 all-gathers and 2 reduce-scatters of
    b*s*h floats in the forward and as many in the backward, (p-1) n each over
    a ring (together the volume of TP's 4 all-reduces); at the boundaries the
    all-gather of the embeddings' sliced gradient and the gather before the LM
    head, (p-1) n each; and in each of the dp tensor-parallel groups an
    all-reduce of the gradients of the parameters the split regions read.
    With dp > 1, in each of the tp data-parallel groups, the all-reduce of the
    rank's gradients (blocks of the sharded parameters, the others whole) and
    of the loss."""
    n = BATCH * SEQ * HIDDEN
    sent = (LAYERS * 8 + 2) * (tp - 1) * n * 4 + dp * ring_all_reduce_bytes(tp, sp_read(W))
    if dp > 1:
        P = sum(w.size for w in W.values())
        sent += ring_all_reduce_bytes(dp, P + (tp - 1) * tp_replicated(W)) + \
            tp * ring_all_reduce_bytes(dp, 1)
    return sent


def vocab_split(k):
    """The tables vocabulary parallelism splits: the token embedding and the LM
    head (GPT-2's wte is both)."""
    return "wte" in k or "embed_tokens" in k or "lm_head" in k


def megatron_vocab(tp, W, dp=1):
    """Megatron TP with the vocabulary split: TP's 4 all-reduces per layer, and
    per tensor-parallel group and step 2 more of b*s*h floats (the partial
    embeddings summed in the forward; the LM head's input gradient summed in
    the backward, as at the entry of any column-parallel region; the replicated
    LM head had neither) and 3 of b*(s-1) floats, one value per predicted
    token: the largest logit (max), the sum of exponentials and the target's
    logit (sum). Ring all-reduce bytes are linear in the size, so the dp groups'
    b/dp samples add up to the whole batch. With dp > 1, in each of the tp
    data-parallel groups, the all-reduce of the rank's gradients (the embedding
    and head blocks now among the sharded ones) and of the loss."""
    sent = megatron(tp) + 2 * ring_all_reduce_bytes(tp, BATCH * SEQ * HIDDEN) + \
        3 * ring_all_reduce_bytes(tp, BATCH * (SEQ - 1))
    if dp > 1:
        P = sum(w.size for w in W.values())
        replicated = tp_replicated(W) - sum(w.size for k, w in W.items() if vocab_split(k))
        sent += ring_all_reduce_bytes(dp, P + (tp - 1) * replicated) + \
            tp * ring_all_reduce_bytes(dp, 1)
    return sent


def megatron_sp_vocab(tp, W):
    """Both: sequence parallelism's volume, and the vocabulary's: the embeddings'
    sum becomes a reduce-scatter, (p-1) b*s*h, whose gradient is the all-gather
    that sequence parallelism already counts for the embeddings; the gather
    before the LM head now sums its gradient parts by a reduce-scatter, (p-1)
    b*s*h, where it took the rank's slice; the loss's 3 all-reduces of b*(s-1)
    values; and GPT-2's position embeddings, which meet the split tokens whole,
    have their [s, h] gradient all-reduced (each rank's tokens give part of it)."""
    n = BATCH * SEQ * HIDDEN
    wpe = SEQ * HIDDEN if any("wpe" in k for k in W) else 0
    return megatron_sp(tp, W) + 2 * (tp - 1) * n * 4 + \
        3 * ring_all_reduce_bytes(tp, BATCH * (SEQ - 1)) + ring_all_reduce_bytes(tp, wpe)


def tied_embedding(W):
    """Elements of GPT-2's token embedding, tied to the LM head: named wte, or
    (a dynamo export) after the head, the model's only embedding table."""
    wte = [w.size for k, w in W.items() if k.endswith("wte.weight")]
    if wte or any("embed_tokens" in k for k in W):
        return sum(wte)
    return sum(w.size for k, w in W.items() if k.endswith("lm_head.weight"))


def pipeline(pp, W, chunks=None):
    """Pipeline stages exchange the residual stream of every microbatch once
    forward and once backward at each of their chunks - 1 boundaries (b*s*h
    floats per step each way), the last rank sends the loss to the others,
    and a parameter on two ranks (GPT-2's wte, tied to the LM head) has its
    gradient parts exchanged between them."""
    return ((chunks or pp) - 1) * 2 * BATCH * SEQ * HIDDEN * 4 + (pp - 1) * 4 + \
        2 * 4 * tied_embedding(W)


def vocab_pipeline(pp, tp, W, chunks=None):
    """A pipeline under vocabulary parallelism: each tensor-parallel rank of a
    stage sends the activations (replicated over tp) and the loss, and the
    tied table's gradient parts are exchanged by block (tp blocks of it)."""
    tied = 2 * 4 * tied_embedding(W)
    return tp * (pipeline(pp, W, chunks) - tied) + tied


def ulysses_pipeline(pp, sp, W):
    """A pipeline under Ulysses: the stages exchange the activations split
    over sp (each rank its part of the sequence: the whole once), and each
    sequence-parallel rank sends the loss and exchanges the tied table's
    gradient, which it holds whole."""
    return (pp - 1) * 2 * BATCH * SEQ * HIDDEN * 4 + \
        sp * ((pp - 1) * 4 + 2 * 4 * tied_embedding(W))


def three_d(dp, pp, tp, W):
    """dp x pp x tp with ZeRO-1: Megatron TP's all-reduces (over the whole
    batch, as the dp groups' samples add up); the pipeline's messages sent by
    each tensor-parallel rank of a stage (the activations are replicated
    over tp), with the loss and the tied embedding's gradient exchanged in
    each of the dp x tp pipelines; and over dp, each rank's reduce-scatter
    and all-gather of its parameters (blocks of the sharded ones, the others
    whole, the last stage's copy of the tied embedding too) and the loss's
    all-reduce."""
    P = sum(w.size for w in W.values())
    tied = tied_embedding(W)
    boundary = (pp - 1) * 2 * BATCH * SEQ * HIDDEN * 4
    local = P + (tp - 1) * tp_replicated(W) + tp * tied
    return megatron(tp) + tp * boundary + dp * tp * ((pp - 1) * 4 + 2 * 4 * tied) + \
        ring_all_reduce_bytes(dp, local) + tp * pp * ring_all_reduce_bytes(dp, 1)


def ulysses(sp, P, W, tp=1):
    """DeepSpeed-Ulysses: per layer the all-to-alls of q, k, v and the attention
    output in the forward and of their gradients in the backward, (p-1)/p of
    each tensor (b*s*h floats, b*s*h_kv for Llama's grouped k and v); the
    all-gather of the sequence before the LM head, (p-1) b*s*h, and GPT-2's
    position embeddings' gradient, (p-1) s*h (gathered from the ranks'
    positions); and the all-reduce over sp of the gradients of every parameter
    the split tokens read (all but the position embeddings and the LM head,
    which read the whole sequence). With Megatron TP inside: TP's
    all-reduces (on the split sequence: over the sp groups, the whole), the
    all-to-alls of each tp rank's heads (together the same volume), the
    gathers on every tp rank, and the gradients' all-reduce over each tp
    rank's parameters (blocks of the sharded ones, the others whole)."""
    kv = [w.shape[0] for k, w in W.items() if k.endswith("layers.0.self_attn.k_proj.weight")]
    kv = kv[0] if kv else HIDDEN
    a2a = LAYERS * 2 * (sp - 1) * BATCH * SEQ * (2 * HIDDEN + 2 * kv) // sp * 4
    wpe = sum(w.size for k, w in W.items() if "wpe" in k)
    gather = (sp - 1) * (BATCH * SEQ * HIDDEN + (SEQ * HIDDEN if wpe else 0)) * 4
    whole = wpe + sum(w.size for k, w in W.items() if "lm_head" in k)
    local = P + (tp - 1) * tp_replicated(W)
    return (megatron(tp) if tp > 1 else 0) + a2a + tp * gather + \
        ring_all_reduce_bytes(sp, local - tp * whole)


def ring(n, P, W, tp=1):
    """Ring attention: per layer each rank sends its key and value blocks
    around the ring n - 1 times forward and their gradients n - 1 times back
    (b*s/n*h floats each, b*s/n*h_kv for Llama's grouped k and v; each tp
    rank its heads); the rest is Ulysses' (the gather before the LM head,
    GPT-2's position embeddings' gradient, the gradients' all-reduce over
    the ring, and with Megatron TP inside its all-reduces)."""
    kv = [w.shape[0] for k, w in W.items() if k.endswith("layers.0.self_attn.k_proj.weight")]
    kv = kv[0] if kv else HIDDEN
    shifts = LAYERS * 2 * 2 * (n - 1) * BATCH * SEQ * kv * 4
    a2a = LAYERS * 2 * (n - 1) * BATCH * SEQ * (2 * HIDDEN + 2 * kv) // n * 4
    return ulysses(n, P, W, tp) - a2a + shifts


def backward_unread(k):
    """Parameters the backward does not read: biases and tables only looked up."""
    return k.endswith("bias") or any(
        t in k for t in ("wpe", "embed_tokens", "position_embeddings", "token_type_embeddings"))


def position_gather(sp, W, micro=2):
    """GPT-2's position embeddings' gradient is gathered over sp in every
    microbatch ((p-1) s*h each) and summed by position after: (micro - 1)
    gathers more than one step without microbatches."""
    wpe = any("wpe" in k for k in W)
    return (micro - 1) * (sp - 1) * SEQ * HIDDEN * 4 if wpe else 0


def zero3(dp, P, W):
    """ZeRO-3: the reduce-scatter, an all-gather of every parameter before the
    forward and another before the backward of those the backward reads (all
    but the biases and the embeddings only looked up: GPT-2's wpe, Llama's
    embed_tokens, BERT's position and token-type tables; a table tied to the
    LM head is read), (p-1) n floats each; and the loss's all-reduce."""
    unread = sum(w.size for k, w in W.items() if backward_unread(k))
    return (dp - 1) * 4 * (3 * P - unread) + ring_all_reduce_bytes(dp, 1)


def zero3_micro(dp, P, W, micro):
    """ZeRO-3 under accumulation: each microbatch gathers the parameters for
    its forward and its backward (DeepSpeed's and FSDP's gathers per
    microbatch), but GPT-2's position embeddings, looked up at the same
    positions by every microbatch, once per step; each microbatch's
    reduce-scatter of its gradients (as ZeRO-2's); the loss's all-reduce."""
    unread = sum(w.size for k, w in W.items() if backward_unread(k))
    per_step = sum(w.size for k, w in W.items() if "wpe" in k)
    gathered = micro * (P - per_step) + per_step + micro * (P - unread)
    return (dp - 1) * 4 * (micro * P + gathered) + ring_all_reduce_bytes(dp, 1)


def zero3_tp(dp, tp, W):
    """ZeRO-3 over Megatron TP: TP's all-reduces over the whole batch and, in
    each of the tp data-parallel groups, zero3's volume over the rank's
    parameters (blocks of the sharded ones, the others whole: every rank
    holds a replicated one) and the loss's all-reduce."""
    ranks = tp_replicated_ranks(W, tp)
    local = sum(w.size * ranks(k) for k, w in W.items())
    unread = sum(w.size * ranks(k) for k, w in W.items() if backward_unread(k))
    return megatron(tp) + (dp - 1) * 4 * (3 * local - unread) + \
        tp * ring_all_reduce_bytes(dp, 1)


def two_d(q, W, dp=1, depth=1, batch=BATCH):
    """2-D tensor parallelism (SUMMA) over a q x q grid, all ranks together.
    Per product X [b*s, K] @ W [K, N]: forward, q broadcasts of X's blocks in
    each row and of W's in each column, (q-1) b*s*K and (q-1) K*N floats (a
    chain's members all send the block but the last, and each rank is last
    once), X's broadcasts shared by the products that read the same input
    (Llama's q, k, v and gate, up: CSE merges them); backward, the reduces of
    both gradients, one per product. Per norm, the all-reduce over the columns
    of its statistics (b*s/q floats; 2 for a layer norm, 1 for RMS) and of
    their gradients. Over the rows, the all-reduce of the gradients of what the
    rows share (norm scales, biases, the embedding table, and GPT-2's tied table
    again as the LM head and its position embeddings as looked up, s*h). The LM
    head on GPT-2's tied table is reduce-scattered over the columns along
    the vocabulary (b*s*V over q groups) and gathered backward; Llama's is
    SUMMA. Both leave the logits split over the columns: the loss sums 3
    values per predicted token over them (the largest logit, the sum
    of exponentials, the target's logit). The loss's sum and count are
    summed over the rows (one float each). With dp: that in each of the dp
    grids on its b/dp samples, and each of the q*q data-parallel groups
    all-reduces the rank's parameters (a block of each weight, a column's
    block of what the rows share) and the loss.

    2.5-D (depth d): each of the d copies of the grid runs the above on its
    b/d samples, except that the loss's sum and count and the gradients of
    what the rows share are summed over the copies' rows together (groups of
    q*d), and each rank's blocks of the products' weights (Llama's LM head
    among them) all-reduced over the d copies."""
    B, L = batch // (dp * depth), LAYERS
    S, R = tokens_and_head_rows(W)
    gpt2, groups, linear, table = layer_products(W)
    V, h = table.shape
    x_forward = sum(B * S * linear[g[0]][0] for g in groups)
    x_backward = sum(B * S * k for k, n in linear.values())
    weights = sum(2 * k * n for k, n in linear.values())
    floats = L * (q - 1) * (x_forward + x_backward + weights)
    blocks = L * sum(k * n for k, n in linear.values())  # the weights split q*q ways
    floats += norm_stats(q, B, layer_norms(W), S)
    shared = shared_gradients(W, gpt2, table)
    if gpt2:
        floats += 2 * (q - 1) * B * S * V
    else:
        floats += 2 * (q - 1) * (B * R * h + h * V)
        blocks += h * V  # the untied LM head is SUMMA's too
    floats += 3 * 2 * (q - 1) * B * loss_rows(W)
    n = q * depth  # the ranks of a column of the grid and its copies
    floats = depth * floats + 2 * (n - 1) * shared + 2 * q * 2 * (n - 1) + \
        2 * (depth - 1) * blocks
    # What the q*q ranks of a grid hold: the shared parameters on every row.
    held = sum(w.size for w in W.values()) + (q - 1) * shared_params(W)
    return dp * floats * 4 + depth * ring_all_reduce_bytes(dp, held) + \
        q * q * depth * ring_all_reduce_bytes(dp, 1)


def norm_stats(q, B, layer_norm, S=SEQ):
    """Floats the norms' statistics (2 for a layer norm, 1 for RMS; b*s/q per
    rank, the final norm's too) and their gradients send in all-reduces over
    q ranks."""
    return (2 * LAYERS + 1) * 2 * (2 if layer_norm else 1) * 2 * (q - 1) * B * S


def shared_gradients(W, gpt2, table):
    """The gradients of what the ranks of the samples share under 2-D and
    3-D tensor parallelism: norm scales, biases, the embedding table, and
    GPT-2's tied table again as the LM head and its position embeddings as
    looked up (s*h)."""
    shared = shared_params(W) - sum(w.size for k, w in W.items() if "wpe" in k)
    return shared + (table.size + SEQ * table.shape[1] if gpt2 else 0)


def layer_products(W):
    """A layer's products with weights: whether the model is GPT-2, the
    weights grouped by the input they multiply, their [in, out] shapes, and
    the token embedding table (the ViT's classifier: an untied head's
    [out, in] weight, as Llama's table)."""
    shape = {k.split("layers.0.")[-1].split("h.0.")[-1].split("layer.0.")[-1]: w.shape
             for k, w in W.items() if ".0." in k}
    gpt2 = any("wpe" in k for k in W)
    if gpt2:  # Conv1D weights are [in, out]
        groups = [["attn.c_attn.weight"], ["attn.c_proj.weight"], ["mlp.c_fc.weight"],
                  ["mlp.c_proj.weight"]]
        linear = {n: shape[n] for g in groups for n in g}
        return gpt2, groups, linear, next(w for k, w in W.items() if "wte" in k)
    if any("cls_token" in k for k in W):  # the ViT
        groups = [["attention.attention.query.weight", "attention.attention.key.weight",
                   "attention.attention.value.weight"], ["attention.output.dense.weight"],
                  ["intermediate.dense.weight"], ["output.dense.weight"]]
    else:
        groups = [["self_attn.q_proj.weight", "self_attn.k_proj.weight",
                   "self_attn.v_proj.weight"], ["self_attn.o_proj.weight"],
                  ["mlp.gate_proj.weight", "mlp.up_proj.weight"], ["mlp.down_proj.weight"]]
    linear = {n: shape[n][::-1] for g in groups for n in g}  # nn.Linear weights are [out, in]
    table = next(w for k, w in W.items() if "embed_tokens" in k or "classifier.weight" in k)
    return gpt2, groups, linear, table


def layer_norms(W):
    """Whether the model's norms are layer norms (with a bias), not RMS."""
    return any(k.endswith("bias") and ("ln_" in k or "layernorm" in k) for k in W)


def tokens_and_head_rows(W):
    """Tokens per sample, and rows of the LM head or classifier per sample:
    the ViT's 16 patches and class token, classified by the class token."""
    pos = next((w for k, w in W.items() if "position_embeddings" in k), None)
    return (SEQ, SEQ) if pos is None else (pos.shape[1], 1)


def loss_rows(W):
    """Positions per sample the loss predicts: all but the last token (loss=lm),
    the ViT's one class."""
    return SEQ - 1 if tokens_and_head_rows(W)[1] > 1 else 1


def tensor_3d(q, W, dp=1, batch=BATCH):
    """3-D tensor parallelism over a q x q x q cube, all ranks together. Per
    product X [b*s, K] @ W [K, N]: forward, X gathered over one axis of the
    cube ((q-1) b*s*K floats, shared by the products that read the same
    input: Llama's q, k, v and gate, up), W over "x" ((q-1) K*N), the product
    reduce-scattered over the third ((q-1) b*s*N); backward, the adjoints of
    the same volumes (X's gradient, summed over the products that read it,
    reduce-scattered once, W's reduce-scattered, Y's gathered). Per norm, its statistics all-reduced
    over q ranks and their gradients, as 2-D's. The gradients of what the
    sample ranks share (norm scales, biases, tables: split q ways, summed
    over the q*q ranks of the samples). The LM head on GPT-2's tied table is
    reduce-scattered over q ranks along the vocabulary and gathered
    backward; Llama's is a product. Both leave the logits split over the
    features' axis: the loss sums 3 values per predicted token over
    it, and its sum and count over the q*q sample ranks. With
    dp: that in each of the dp cubes on its b/dp samples, and each of the
    q^3 data-parallel groups all-reduces the rank's parameters and the
    loss."""
    B, L = batch // dp, LAYERS
    S, R = tokens_and_head_rows(W)
    gpt2, groups, linear, table = layer_products(W)
    V, h = table.shape
    x = sum(B * S * linear[g[0]][0] for g in groups)
    per = sum(k * n + B * S * n for k, n in linear.values())
    floats = L * (q - 1) * 2 * (x + per)
    floats += norm_stats(q, B, layer_norms(W), S)
    shared = shared_gradients(W, gpt2, table)
    if gpt2:
        floats += 2 * (q - 1) * B * S * V
    else:
        floats += 2 * (q - 1) * (B * R * h + h * V + B * R * V)
    floats += 3 * 2 * (q - 1) * B * loss_rows(W)
    floats += 2 * (q * q - 1) * shared + 2 * q * 2 * (q * q - 1)
    # What the q^3 ranks of a cube hold: the shared parameters q*q times.
    held = sum(w.size for w in W.values()) + (q * q - 1) * shared_params(W)
    return dp * floats * 4 + ring_all_reduce_bytes(dp, held) + \
        q ** 3 * ring_all_reduce_bytes(dp, 1)


def shared_params(W):
    """The parameters 2-D tensor parallelism splits over the columns only:
    all but the products' weights (the layers' matrices, an untied head):
    biases, norm scales, embedding and position tables, the ViT's patch
    convolution and class token."""
    def product(k, w):
        return w.ndim == 2 and (".0." in k or any(f".{i}." in k for i in range(LAYERS))) or \
            k.endswith(("lm_head.weight", "classifier.weight"))
    return sum(w.size for k, w in W.items() if not product(k, w))


# plan -> the bytes all ranks send per step, from the parameter count P and the
# single-rank weights W (None: printed, not checked: a composite plan's volume
# depends on which parameters tp shards).
# dp: the averaged gradients (P floats) and the loss, one ring all-reduce each.
# ZeRO-1/2: reduce-scatter plus all-gather of the (here unpadded) gradients and
# parameters, the same volume as dp (the ZeRO paper's 2 Psi), and the loss.
# ZeRO-3 (zero3): at most the paper's 3 Psi (1.5x dp).
PLANS = {
    "dp=2": lambda P, W: ring_all_reduce_bytes(2, P) + ring_all_reduce_bytes(2, 1),
    "dp=4": lambda P, W: ring_all_reduce_bytes(4, P) + ring_all_reduce_bytes(4, 1),
    "dp=2,zero=1": lambda P, W: ring_all_reduce_bytes(2, P) + ring_all_reduce_bytes(2, 1),
    "dp=2,zero=2": lambda P, W: ring_all_reduce_bytes(2, P) + ring_all_reduce_bytes(2, 1),
    # ZeRO-2 under accumulation: a reduce-scatter per microbatch, one
    # all-gather of the updated parameters.
    "dp=2,zero=2,micro=2": lambda P, W: 3 * (2 - 1) * 4 * P + ring_all_reduce_bytes(2, 1),
    "dp=2,pp=2,zero=2,micro=2": None,
    # Compositions the search emits that no case above has: sequence
    # parallelism with a pipeline, ZeRO-2 with tensor parallelism and
    # accumulation, recomputation and offload with a pipeline and ZeRO.
    "tp=2,pp=2,sp,micro=2": None,
    "dp=2,tp=2,zero=2,micro=2": None,
    "dp=2,pp=2,zero=2,micro=2,recompute=full,offload=optimizer": None,
    "dp=2,zero=3": lambda P, W: zero3(2, P, W),
    "dp=2,tp=2,zero=3": lambda P, W: zero3_tp(2, 2, W),
    "dp=2,zero=3,micro=2": lambda P, W: zero3_micro(2, P, W, 2),
    "tp=2": lambda P, W: megatron(2),
    "tp=4": lambda P, W: megatron(4),
    "dp=2,tp=2": lambda P, W: megatron_dp(2, 2, W),
    "tp=2,sp": lambda P, W: megatron_sp(2, W),
    "dp=2,tp=2,sp": lambda P, W: megatron_sp(2, W, dp=2),
    # One sample per tensor-parallel group: the tokens are split along the
    # sequence (with more, along the batch).
    "dp=4,tp=2,sp": lambda P, W: megatron_sp(2, W, dp=4),
    "tp=2,vocab": lambda P, W: megatron_vocab(2, W),
    "dp=2,tp=2,vocab": lambda P, W: megatron_vocab(2, W, dp=2),
    "tp=2,sp,vocab": lambda P, W: megatron_sp_vocab(2, W),
    "micro=2": lambda P, W: 0,
    "pp=2,micro=2,schedule=gpipe": lambda P, W: pipeline(2, W),
    "pp=4,micro=4,schedule=1f1b": lambda P, W: pipeline(4, W),
    "pp=2,micro=4,schedule=interleaved,v=2": lambda P, W: pipeline(2, W, chunks=4),
    # Zero-bubble H1 moves each weight gradient later: the same messages.
    "pp=4,micro=4,schedule=zb-h1": lambda P, W: pipeline(4, W),
    "dp=2,pp=2,tp=2,zero=1,micro=2,schedule=zb-h1": lambda P, W: three_d(2, 2, 2, W),
    "dp=2,pp=2,tp=2,zero=1,micro=2": lambda P, W: three_d(2, 2, 2, W),
    "ulysses=2": lambda P, W: ulysses(2, P, W),
    # More ranks per axis, and compositions the plans above leave out.
    "dp=4,zero=1": lambda P, W: ring_all_reduce_bytes(4, P) + ring_all_reduce_bytes(4, 1),
    "dp=4,zero=3": lambda P, W: zero3(4, P, W),
    "tp=4,sp": lambda P, W: megatron_sp(4, W),
    "tp=4,vocab": lambda P, W: megatron_vocab(4, W),
    "dp=2,tp=2,zero=1,vocab": lambda P, W: megatron_vocab(2, W, dp=2),
    "pp=4,micro=4,schedule=gpipe": lambda P, W: pipeline(4, W),
    "pp=2,micro=4,schedule=interleaved,v=4": lambda P, W: pipeline(2, W, chunks=8),
    "pp=4,micro=4,schedule=interleaved,v=2": lambda P, W: pipeline(4, W, chunks=8),
    "dp=2,ulysses=2": None,
    "dp=2,ulysses=2,zero=1": None,
    # Vocabulary parallelism under accumulation and pipelines: the same
    # all-reduces over the microbatches, each tensor-parallel rank of a stage
    # sending the pipeline's messages, the tied table's gradient exchanged in
    # its vocabulary blocks.
    # Ulysses under accumulation: its gradient all-reduces once per step (as
    # without microbatches), but GPT-2's position embeddings' gradient is
    # gathered per microbatch.
    "ulysses=2,micro=2": lambda P, W: ulysses(2, P, W) + position_gather(2, W),
    "ulysses=2,pp=2,micro=2":
        lambda P, W: ulysses(2, P, W) + position_gather(2, W) + ulysses_pipeline(2, 2, W),
    "ulysses=2,tp=2": lambda P, W: ulysses(2, P, W, tp=2),
    # Compositions the search emits with Ulysses: vocabulary parallelism,
    # recomputation.
    "ulysses=2,tp=2,vocab": None,
    "ulysses=2,recompute=full": None,
    # Ring attention, in zigzag order and contiguous.
    "ring=2": lambda P, W: ring(2, P, W),
    "ring=4": lambda P, W: ring(4, P, W),
    "ring=2,zigzag=0": lambda P, W: ring(2, P, W),
    "dp=2,ring=2": None,
    "ring=2,micro=2": lambda P, W: ring(2, P, W) + position_gather(2, W),
    "ring=2,tp=2": lambda P, W: ring(2, P, W, tp=2),
    # 2-D tensor parallelism (SUMMA over a 2 x 2 grid).
    "tp2d=2": lambda P, W: two_d(2, W),
    "dp=2,tp2d=2": lambda P, W: two_d(2, W, dp=2),
    "dp=2,tp2d=2,zero=1": lambda P, W: two_d(2, W, dp=2),
    "tp2d=2,pp=2,micro=2": None,
    # 2.5-D: two copies of the 2 x 2 grid.
    "tp2p5d=2,2": lambda P, W: two_d(2, W, depth=2),
    # 3-D: a 2 x 2 x 2 cube.
    "tp3d=2": lambda P, W: tensor_3d(2, W),
    # 16 ranks: two stages, each on a cube (the batch of 4 allows no dp or
    # microbatches: q * q = 4 cuts it).
    "tp3d=2,pp=2": None,
    "tp=2,vocab,micro=2": lambda P, W: megatron_vocab(2, W),
    "tp=2,vocab,pp=2,micro=2": lambda P, W: megatron_vocab(2, W) + vocab_pipeline(2, 2, W),
    "tp=2,vocab,pp=2,micro=4,schedule=interleaved,v=2":
        lambda P, W: megatron_vocab(2, W) + vocab_pipeline(2, 2, W, chunks=4),
}
CASES = [("gpt2", p, "adamw") for p in PLANS] + \
    [("llama", p, "adamw") for p in ("dp=2", "dp=2,zero=1", "dp=2,zero=2", "dp=2,zero=3",
                                          "tp=2", "tp=4",
                                          "dp=2,tp=2", "dp=2,tp=2,zero=3", "dp=2,zero=3,micro=2",
                                          "tp=2,sp", "dp=2,tp=2,sp",
                                          "tp=2,vocab", "dp=2,tp=2,vocab", "tp=2,sp,vocab",
                                          "pp=2,micro=2,schedule=gpipe",
                                          "pp=4,micro=4,schedule=1f1b",
                                          "pp=4,micro=4,schedule=zb-h1",
                                          "pp=2,micro=4,schedule=interleaved,v=2",
                                          "dp=2,pp=2,tp=2,zero=1,micro=2", "dp=4,zero=3",
                                          "pp=4,micro=4,schedule=gpipe",
                                          "pp=2,micro=4,schedule=interleaved,v=4",
                                          "dp=2,ulysses=2", "ulysses=2,micro=2",
                                          "ulysses=2,pp=2,micro=2", "ulysses=2,tp=2",
                                          "tp=2,vocab,micro=2",
                                          "tp=2,vocab,pp=2,micro=2",
                                          "ring=2", "ring=4", "ring=2,tp=2",
                                          "tp2d=2", "dp=2,tp2d=2", "tp2p5d=2,2", "tp3d=2")] + \
    [("gpt2", "dp=2", "sgd"), ("gpt2", "tp=2", "sgd"), ("gpt2", "tp=2,sp", "sgd"),
     ("gpt2", "tp=2,vocab", "sgd")] + \
    [("gpt2", "tp=2", "adamw-clip"), ("llama", "dp=2,tp=2", "adamw-clip"),
     ("llama", "tp2d=2", "adamw-clip")] + \
    [("llama", "ulysses=2", "adamw")] + \
    [("bert", p, "adamw") for p in ("dp=2", "dp=2,zero=1", "dp=2,zero=3", "tp=2")] + \
    [("gpt2", p, "adamw-bf16") for p in ("dp=2", "tp=2", "dp=2,zero=3",
                                          "pp=2,micro=2,schedule=gpipe", "ring=2")] + \
    [("gpt2-dynamo", p, "adamw") for p in ("dp=2", "dp=2,zero=3", "tp=2",
                                            "pp=2,micro=2,schedule=gpipe")]


def matches_one_rank(what, opt, losses, weights, want, want_w, floor, comm):
    """The run's losses within RTOL of one rank's, each weight within twice
    its own PyTorch float32 spread (Adam amplifies rounding where gradients
    are small), as test_train does."""
    loss_err = float(np.max(np.abs(np.array(losses) - want) / np.abs(want)))
    assert set(weights) == set(want_w)
    worst = (0.0, 0.0, 0.0, "")  # closest to its bound
    for k, w in want_w.items():
        err = float(np.abs(weights[k] - w).max() / max(np.abs(w).max(), 1e-12))
        bound = max(RTOL, 2 * floor[k]) if opt.startswith("adamw") else RTOL
        assert err <= bound, f"{k}: {err:.2e} > {bound:.2e}"
        worst = max(worst, (err / bound, err, floor[k], k))
    print(f"\n{what}: losses {loss_err:.1e}; weight closest to its bound {worst[3]} "
          f"{worst[1]:.1e} (PyTorch f32 vs f64: {worst[2]:.1e}); sent per step {comm}")
    # In bf16, within twice PyTorch's own bf16 spread of the losses.
    loss_bound = max(RTOL, 2 * floor[LOSS]) if opt == "adamw-bf16" else RTOL
    assert len(losses) == STEPS and loss_err <= loss_bound, (losses, want)


@pytest.mark.parametrize("name,plan,opt", CASES, ids=["-".join(c) for c in CASES])
def test_plan_matches_single_rank(name, plan, opt, baseline):
    tmp, path, params, floor, (want, want_w, _) = baseline(name, opt)
    exe = tmp / f"{plan.replace(',', '_')}-{opt}"
    losses, weights, comm = train(tmp, path, plan, opt, exe)
    matches_one_rank(f"{name} {plan} {opt}", opt, losses, weights, want, want_w, floor, comm)
    formula = PLANS[plan]
    if formula and formula(params, want_w) == 0:
        assert comm is None  # one rank
    elif formula:
        # Clipping adds the all-reduce of the sharded gradients' squared
        # norm, in each of the dp tensor-parallel groups.
        groups = int(m[1]) if (m := re.search(r"dp=(\d+)", plan)) else 1
        clip = groups * ring_all_reduce_bytes(2, 1) if opt == "adamw-clip" else 0
        if opt == "adamw-clip" and "tp2d=2" in plan:
            # The weights' blocks over the whole grid, the blocks the rows
            # share over each row.
            clip = ring_all_reduce_bytes(4, 1) + 2 * ring_all_reduce_bytes(2, 1)
        assert comm and comm[1] == formula(params, want_w) + clip, (comm, params)
    else:
        assert comm is not None


# 16 ranks on a batch of 8: two data-parallel copies of a 3-D cube or of a
# 2.5-D grid (a cube's q * q = 4 sample blocks leave the suite's batch of 4
# no room for a second data-parallel rank).
GRIDS_WITH_DP = {
    "dp=2,tp3d=2": lambda W: tensor_3d(2, W, dp=2, batch=8),
    "dp=2,tp3d=2,zero=1": lambda W: tensor_3d(2, W, dp=2, batch=8),
    "dp=2,tp2p5d=2,2": lambda W: two_d(2, W, dp=2, depth=2, batch=8),
}


@pytest.mark.parametrize("plan", list(GRIDS_WITH_DP))
def test_grids_compose_with_data_parallelism(plan, baseline):
    tmp, path, params, floor, (want, want_w, _) = baseline("gpt2", "adamw", batch=8)
    exe = tmp / f"{plan.replace(',', '_')}-adamw"
    losses, weights, comm = train(tmp, path, plan, "adamw", exe)
    matches_one_rank(f"gpt2 (batch 8) {plan}", "adamw", losses, weights, want, want_w, floor,
                     comm)
    assert comm and comm[1] == GRIDS_WITH_DP[plan](want_w), comm


def tiny_vit():
    """Hugging Face's ViT (batch first): 16 x 16 images in 4 x 4 patches, LAYERS
    layers of hidden HIDDEN and 4 heads, a class token, 10 classes."""
    import transformers as tf
    torch.manual_seed(models.SEED)
    cfg = tf.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=HIDDEN,
                       num_hidden_layers=LAYERS, num_attention_heads=4, intermediate_size=128,
                       num_labels=10, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
    return zoo.PixelLogits(tf.ViTForImageClassification(cfg)).train()


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    """The ViT's export, batches, one-rank AdamW run and PyTorch's float32
    spread per tensor (as torch_distance, with the classifier's loss)."""
    tmp = tmp_path_factory.mktemp("vit")
    model = tiny_vit()
    g = torch.Generator().manual_seed(2)
    pixels = torch.randn(STEPS * BATCH, 3, 16, 16, generator=g)
    labels = torch.randint(0, 10, (STEPS * BATCH,), generator=g)
    models.export(model, (pixels[:BATCH],), tmp / "vit.onnx", "torchscript",
                  input_names=["pixel_values"])
    np.savez(tmp / "data.npz", pixel_values=pixels.numpy(), labels=labels.numpy())

    def run(m, dtype):
        m = m.to(dtype)
        opt = torch.optim.AdamW(m.parameters(), lr=LR, weight_decay=0.01)
        for i in range(STEPS):
            batch = slice(i * BATCH, (i + 1) * BATCH)
            loss = torch.nn.functional.cross_entropy(m(pixels[batch].to(dtype)), labels[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return {k: v.detach().double().numpy() for k, v in m.state_dict().items()}

    f64 = run(copy.deepcopy(model), torch.float64)
    runs = [run(m, torch.float32) for m in train_ref.float32_variants(model)]
    spread = {k: max(float(np.abs(f32[k] - f64[k]).max()) for f32 in runs) /
              max(float(np.abs(f64[k]).max()), 1e-12) for k in f64}
    return tmp, spread, vit_train(tmp, "", tmp / "single")


def vit_train(tmp, plan, exe):
    args = ["compile", tmp / "vit.onnx", "-o", exe, "--train",
            f"loss=cross-entropy,optimizer=adamw,lr={LR}"]
    run_colo(*args, *(["--plan", plan] if plan else []))
    out = run_colo("run", exe, "--steps", STEPS, "--data", tmp / "data.npz", "--threads", 1,
                   "-o", exe / "w.safetensors").stdout
    losses = [float(x) for x in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]
    comm = re.search(r"^communication: \d+ bytes sent per step by rank 0, (\d+) by all", out,
                     re.M)
    return losses, load_file(exe / "w.safetensors"), comm and int(comm[1])


# plan -> the bytes all ranks send per step, from the ViT's weights (None: not
# checked). The formulas are GPT-2's and Llama's with 17 tokens per sample
# (16 patches and the class token), layer norms, the classifier a product
# on the class token alone, and the patch convolution and class token among
# what the sample ranks share.
VIT_PLANS = {"tp2d=2": lambda W: two_d(2, W), "tp2p5d=2,2": lambda W: two_d(2, W, depth=2),
             "tp3d=2": lambda W: tensor_3d(2, W), "dp=2,tp2d=2": lambda W: two_d(2, W, dp=2),
             "pp=4,micro=4,schedule=zb-h1": None}


@pytest.mark.parametrize("plan", VIT_PLANS)
def test_vit_matches_single_rank(plan, vit, tmp_path):
    """A ViT under 2-D, 2.5-D and 3-D tensor parallelism (the patch
    embedding's convolution splits its output channels as the layout splits
    features, the class token is broadcast to the rank's samples with the
    rank's features, the classifier is a product of the grid or the cube),
    with data parallelism, and in a zero-bubble pipeline; losses within 1e-5
    of one rank, each weight within twice its PyTorch float32 spread, the
    bytes sent those of the plan's formula."""
    tmp, spread, (want, want_w, _) = vit
    losses, weights, comm = vit_train(tmp, plan, tmp_path / "exe")
    matches_one_rank(f"vit {plan}", "adamw", losses, weights, want, want_w, spread, comm)
    assert comm
    if VIT_PLANS[plan]:
        W = {k: v.detach().numpy() for k, v in tiny_vit().state_dict().items()}
        assert comm == VIT_PLANS[plan](W)


COMMUNICATION = re.compile(r"^communication: ([\d.]+) ms exposed of ([\d.]+) ms in flight "
                           r"\((\d+)% overlapped\)", re.M)


def overlapped_and_not(exe, data, tmp_path):
    """colo run's output for 2 profiled steps with overlap (weights
    w.safetensors, trace t.json in tmp_path) and with --no-overlap
    (w--no-overlap.safetensors), by flag."""
    outs = {}
    for flag in ("", "--no-overlap"):
        args = ["run", exe, "--steps", 2, "--data", data, "--threads", 1,
                "-o", tmp_path / f"w{flag}.safetensors", "--profile", tmp_path / f"t{flag}.json"]
        outs[flag] = run_colo(*args, *([flag] if flag else [])).stdout
    return outs


def test_gradient_all_reduces_overlap_the_backward(baseline, tmp_path):
    """dp=2's bucket all-reduces run while the rest of the backward computes:
    the profile shows them in flight on a track of their own, with wait steps,
    and --no-overlap (each finished in its own step) gives the same bits."""
    tmp, path = baseline("gpt2")[:2]
    exe = tmp_path / "dp2"
    run_colo("compile", path, "-o", exe, "--plan", "dp=2", "--bucket-mb", 0.05, "--train",
             TRAIN["adamw"])
    outs = overlapped_and_not(exe, tmp / "data.npz", tmp_path)
    overlapped, blocking = (COMMUNICATION.search(outs[f]) for f in ("", "--no-overlap"))
    assert overlapped and blocking, outs
    # Blocking, each collective is in flight only inside its own step, which
    # is all exposed (the two are read from different clock samples).
    assert blocking[3] == "0" and float(blocking[1]) >= float(blocking[2]) - 0.01, blocking[0]
    assert re.search(r"^profile: .* wait ", outs[""], re.M)
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    in_flight = [e for e in trace if e.get("cat") == "communication"]
    assert len(in_flight) >= 2 * 2 and all(e["tid"] == 1 for e in in_flight)
    # The cost model's iteration beside the measured one: process 1, its
    # compute adding up to the predicted step, the bucket all-reduces on
    # the network track while the backward computes.
    predicted = re.search(r"^predicted on local-cpu: ([\d.]+) ms per step, measured ([\d.]+) ms"
                          r".*; rank 0 sends (\d+) bytes per step by the cost model's rings, "
                          r"(\d+) measured", outs[""], re.M)
    assert predicted, outs[""]
    # The compiled program's collectives, counted on their rings: exactly
    # what the communicator sent.
    assert predicted[3] == predicted[4]
    compute = [e for e in trace if e.get("pid") == 1 and e.get("ph") == "X" and e["tid"] == 0]
    network = [e for e in trace if e.get("pid") == 1 and e.get("ph") == "X" and e["tid"] == 2]
    assert sum(e["dur"] for e in compute) / 1e3 == pytest.approx(float(predicted[1]), abs=0.06)
    assert len(network) >= 2 and all(e["cat"] == "collective" for e in network)
    assert max(e["ts"] + e["dur"] for e in compute) > min(e["ts"] for e in network)
    assert ((tmp_path / "w.safetensors").read_bytes() ==
            (tmp_path / "w--no-overlap.safetensors").read_bytes())


def gpt2_layer_activations(plan, b=BATCH, s=SEQ, h=HIDDEN, heads=4, f=4 * HIDDEN):
    """Bytes (f32) one GPT-2 layer keeps for its backward on a rank
    (docs/parallel.md, "Activation memory"): on one rank the inputs of its
    four products (3h + f), q, k and v (3h), the norms' inputs (2h), the
    GELU's input (f) per token and the scores (heads x s) per token. The
    grids keep the blocks their products received instead of the products'
    inputs, a norm two blocks and a statistic per row; the ring its key and
    value blocks received, its normalized output and per head and position
    a statistic per step."""
    ms = dict(kv.split("=", 1) for kv in plan.split(",") if "=" in kv)
    tokens = b * s
    inputs, rest = tokens * (3 * h + f), tokens * (7 * h + f + heads * s)
    if "tp2d" in ms or "tp2p5d" in ms:
        q, d = (int(ms["tp2d"]), 1) if "tp2d" in ms else \
            map(int, plan.split("tp2p5d=")[1].split(",")[:2])
        return 4 * (inputs // (q * d) + rest // (q * q * d) + 2 * tokens // (q * d))
    if "tp3d" in ms:
        q = int(ms["tp3d"])
        return 4 * (inputs // q ** 2 + rest // q ** 3 + 2 * tokens // q ** 2)
    n = int(ms.get("ring", 1))
    single = tokens * (8 * h + 2 * f) + b * heads * s * s
    return 4 * (single // n + (2 * (n - 1) + 1) * tokens * h // n + b * heads * s) if n > 1 \
        else 4 * single


def explained(model, plan, ranks):
    """colo plan --explain PLAN --train's JSON: the prediction and the step
    it compiles (the microbatch is the batch's)."""
    return json.loads(run_colo(
        "plan", model, "--cluster", f"local-cpu:1x{ranks}", "--explain", f"{plan},mbs={BATCH}",
        "--train", TRAIN["adamw"], "--json").stdout)


ACTIVATION_PLANS = [("tp2d=2", 4), ("tp2p5d=2,2", 8), ("tp3d=2", 8), ("ring=2", 2), ("ring=4", 4)]


def test_activation_memory_matches_the_formulas_and_the_planner(baseline, tmp_path):
    """The activations each rank keeps for its backward under the grids and
    ring attention (colo plan --explain --train: what the compiled step
    keeps between the loss and the backward's reads): a GPT-2 layer's equal
    gpt2_layer_activations exactly (two layers' against four), and the
    planner's prediction of the whole step's is within 5% of the compiled
    one for GPT-2 and Llama, as for one rank and tp=2; and so is its whole
    memory per device (the gradients reusing what the backward frees)."""
    torch.manual_seed(models.SEED)
    two = tmp_path / "gpt2-2.onnx"
    models.export(train_ref._hf("gpt2", 2), (torch.zeros(BATCH, SEQ, dtype=torch.long),), two,
                  "torchscript", input_names=["input_ids"])
    gib = 2 ** 30
    for plan, ranks in ACTIVATION_PLANS:
        four = explained(baseline("gpt2")[1], plan, ranks)["compiled"]["memory_gib"]
        per_layer = round((four["activations"] - explained(two, plan, ranks)["compiled"][
            "memory_gib"]["activations"]) * gib / 2)
        print(f"\ngpt2 {plan}: a layer keeps {per_layer} bytes")
        assert per_layer == gpt2_layer_activations(plan)
    for name in ("gpt2", "llama"):
        for plan, ranks in ACTIVATION_PLANS + [("dp=1", 1), ("tp=2", 2)]:
            out = explained(baseline(name)[1], plan, ranks)
            for what in ("activations", "total"):
                predicted = out["memory_gib"][what]
                compiled = out["compiled"]["memory_gib"][what]
                print(f"{name} {plan} {what}: compiled {compiled * gib:.0f} bytes, predicted "
                      f"{predicted * gib:.0f} ({100 * (predicted / compiled - 1):+.1f}%)")
                assert abs(predicted - compiled) <= 0.05 * compiled


@pytest.mark.parametrize("plan,collective", [("tp2d=2", "broadcast"), ("tp3d=2", "all_gather")])
def test_grid_blocks_travel_while_the_products_run(plan, collective, baseline, tmp_path):
    """tp2d=2's broadcasts of the next SUMMA step's blocks travel while the
    current blocks multiply (double buffering); tp3d=2's gather of each
    product's weight block starts before the previous product's input
    gather. The profile shows them in flight on the communication track
    with wait steps, and --no-overlap (each finished in its own step) gives
    the same bits. Under tp2d=2 rank 0's bytes are what the compiled
    program's collectives move by the cost model's rings; under tp3d=2 the
    loss's one-float sums over 4 sample ranks are chunked unevenly (rank 0
    sends less than an even share), so only all ranks' bytes equal the
    formula (test_plan_matches_single_rank)."""
    tmp, path = baseline("gpt2")[:2]
    exe = tmp_path / plan.replace("=", "")
    run_colo("compile", path, "-o", exe, "--plan", plan, "--train", TRAIN["adamw"])
    outs = overlapped_and_not(exe, tmp / "data.npz", tmp_path)
    overlapped, blocking = (COMMUNICATION.search(outs[f]) for f in ("", "--no-overlap"))
    assert overlapped and blocking, outs
    assert blocking[3] == "0", blocking[0]
    assert re.search(r"^profile: .* wait ", outs[""], re.M)
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    in_flight = {e["name"] for e in trace if e.get("cat") == "communication"}
    assert any(collective in n for n in in_flight), in_flight
    predicted = re.search(r"rank 0 sends (\d+) bytes per step by the cost model's rings, "
                          r"(\d+) measured", outs[""])
    assert predicted and (plan != "tp2d=2" or predicted[1] == predicted[2]), outs[""]
    assert ((tmp_path / "w.safetensors").read_bytes() ==
            (tmp_path / "w--no-overlap.safetensors").read_bytes())


def test_ring_shifts_overlap_and_each_rank_reports_its_waits(baseline, tmp_path):
    """ring=2's next key and value blocks travel while the current ones are
    scored: the profile shows its shifts in flight on the communication
    track, --no-overlap gives the same bits, and every rank's waits are
    reported."""
    tmp, path = baseline("gpt2")[:2]
    exe = tmp_path / "ring2"
    run_colo("compile", path, "-o", exe, "--plan", "ring=2", "--train", TRAIN["adamw"])
    outs = overlapped_and_not(exe, tmp / "data.npz", tmp_path)
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    shifts = [e for e in trace if e.get("cat") == "communication" and ".shift." in e["name"]]
    assert len(shifts) >= 2 * LAYERS * 2, [e["name"] for e in shifts][:4]
    waits = re.search(r"^waiting in communication per step after the first: "
                      r"rank 0 [\d.]+ ms, rank 1 [\d.]+ ms$", outs[""], re.M)
    assert waits, outs[""]
    assert ((tmp_path / "w.safetensors").read_bytes() ==
            (tmp_path / "w--no-overlap.safetensors").read_bytes())


def test_the_same_plan_compiles_to_the_same_program_bytes(baseline, tmp_path):
    """Every file of the executable has the same bytes from compile to
    compile: program.pb is serialized deterministically (param_names, a map,
    in key order), and the kernels' constants are named and placed by first
    use (bufferization creates them in an order that varied from run to
    run, about one compile in three)."""
    tmp, path = baseline("gpt2")[:2]
    exes = [tmp_path / name for name in "abcd"]
    for exe in exes:
        run_colo("compile", path, "-o", exe, "--plan", "dp=2", "--train", TRAIN["adamw"])
    for name in ("program.pb", "kernels.so", "state.safetensors"):
        first = (exes[0] / name).read_bytes()
        assert all((exe / name).read_bytes() == first for exe in exes[1:]), name


def test_given_stages_are_where_the_pipeline_cuts(baseline):
    """A plan file's `stages` cut the pipeline where they say (one layer on the
    first rank, three and the head on the second; balanced by cost, the cut
    would go elsewhere), and the step still matches one rank."""
    tmp, path, params, floor, (want, want_w, _) = baseline("gpt2", "adamw")
    plan = tmp / "stages.json"
    plan.write_text(json.dumps({"mesh": {"pp": 2}, "micro_batches": 2, "schedule": "1f1b",
                                "stages": [[0, 1], [1, LAYERS]]}))
    exe, ir = tmp / "stages-adamw", tmp / "stages-ir"
    run_colo("compile", path, "-o", exe, "--train", TRAIN["adamw"], "--plan", plan,
             "--dump-ir", ir)
    step = (ir / "1-train-step.mlir").read_text()
    first = step[step.index("func.func @train_step_stage0"):step.index("func.func @train_step_stage1")]
    assert "h.0." in first and "h.1." not in first
    losses, weights, comm = train(tmp, path, str(plan), "adamw", exe)
    assert len(losses) == STEPS
    assert float(np.max(np.abs(np.array(losses) - want) / np.abs(want))) <= RTOL
    for k, w in want_w.items():
        err = float(np.abs(weights[k] - w).max() / max(np.abs(w).max(), 1e-12))
        assert err <= max(RTOL, 2 * floor[k]), k
    assert comm[1] == pipeline(2, want_w)


@pytest.mark.parametrize("stages,words", [
    ([[0, 1], [2, LAYERS]], ["stage 1 is layers [2, 4)", "without gaps"]),
    ([[0, 1], [1, 2], [2, LAYERS]], ["3 stages for pp x v = 2"]),
    ([[0, 1], [1, 9]], ["the last pipeline stage ends at layer 9, but the model has 4 layers"]),
])
def test_invalid_stages_are_rejected(stages, words, baseline, tmp_path):
    tmp, path = baseline("gpt2")[:2]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"mesh": {"pp": 2}, "micro_batches": 2, "stages": stages}))
    proc = run_colo("compile", path, "-o", tmp_path / "exe", "--train", TRAIN["adamw"],
                    "--plan", plan, check=False)
    assert proc.returncode == 1 and all(w in proc.stderr for w in words), proc.stderr
    assert not (tmp_path / "exe" / "program.pb").exists()


@pytest.mark.parametrize("plan,words", [
    ("dp=3", ["batch", "3"]),
    ("tp=3", ["tp", "3"]),
    ("pp=32", ["32 pipeline stages", "places"]),
    ("pp=2,micro=3", ["batch", "6"]),
    ("pp=2,micro=1,schedule=interleaved,v=2", ["interleaved", "multiple of pp"]),
    ("pp=2,dp=2,zero=3", ["ZeRO stage 3", "pipeline"]),
    ("dp=2,zero=4", ["ZeRO stage", "4"]),
    ("dp=2,sp", ["sequence parallelism needs tp > 1"]),
    ("dp=2,tp=4,sp", ["tp = 4 does not divide dimension 0 (size 2)", "sequence parallelism"]),
    ("dp=2,vocab", ["vocab parallelism needs tp > 1"]),
    # The vocabulary (256) is checked before the heads (4).
    ("tp=3,vocab", ["tp = 3 does not divide the vocabulary (size 256)"]),
    ("dp=two", ["dp"]),
    # Zigzag order cuts the sequence (16) into 2 ring chunks.
    ("ring=3", ["ring = 3 in zigzag order", "does not divide the sequence length 16"]),
    ("ring=2,pp=2,micro=2", ["ring attention with pipeline parallelism"]),
    ("ring=2,ulysses=2", ["choose one sequence parallelism"]),
    ("ring=2,zigzag=maybe", ["zigzag is 1 or 0"]),
    # The grid's side 3 divides neither the batch (4) nor the hidden size (64).
    ("tp2d=3", ["q = 3 does not divide the batch (size 4)"]),
    ("tp2d=2,tp=2", ["choose one tensor parallelism"]),
    ("tp2d=2,ring=2", ["2-D or 2.5-D tensor parallelism with Ulysses or ring attention"]),
    # 2.5-D cuts the batch (4) over the copies' rows: q * d of them.
    ("tp2p5d=2,4", ["q * depth = 8 does not divide the batch (size 4)"]),
    ("tp2p5d=2", ["tp2p5d=q,d"]),
    # Two of the cube's axes cut the batch (4): q * q = 9 ways.
    ("tp3d=3", ["q * q = 9 does not divide the batch (size 4)"]),
    ("tp3d=2,tp=2", ["choose one tensor parallelism"]),
    ("tp3d=2,ring=2", ["3-D tensor parallelism with Ulysses or ring attention"]),
])
def test_invalid_plans_are_rejected(plan, words, baseline, tmp_path):
    tmp, path = baseline("gpt2")[:2]
    proc = run_colo("compile", path, "-o", tmp_path / "exe", "--train", TRAIN["adamw"],
                    "--plan", plan, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("colo: error:") and all(w in lines[0] for w in words), lines
    assert not (tmp_path / "exe" / "program.pb").exists()


def test_the_rank_count_must_match_the_plan(baseline):
    tmp, path = baseline("gpt2")[:2]
    exe = tmp / "dp=2-adamw"
    if not (exe / "program.pb").exists():
        run_colo("compile", path, "-o", exe, "--train", TRAIN["adamw"], "--plan", "dp=2")
    proc = run_colo("run", exe, "--np", 3, "--data", "synthetic", check=False)
    assert proc.returncode == 1 and "compiled for 2 ranks, not 3" in proc.stderr, proc.stderr


def test_synthetic_data_is_the_same_under_a_plan(baseline, tmp_path):
    """`--data synthetic` draws the same batch whatever the plan: every
    stage's ids lie in the vocabulary, also where Ulysses slices them before
    the embedding reads them (the first stage of pp=2,ulysses=2 once drew
    only 0s and 1s, its last stage the vocabulary)."""
    path = baseline("gpt2")[1]
    losses = []
    for plan in ("", "ulysses=2,pp=2"):
        exe = tmp_path / (plan or "single")
        run_colo("compile", path, "-o", exe, "--train", TRAIN["adamw"],
                 *(["--plan", plan] if plan else []))
        out = run_colo("run", exe, "--steps", 1, "--data", "synthetic", "--threads", 1,
                       "--no-snapshot").stdout
        losses.append(float(re.search(r"^step 1/1\s+loss (\S+)", out, re.M)[1]))
    assert losses[1] == pytest.approx(losses[0], rel=1e-5), losses


def test_an_executable_that_begins_with_a_dash_reaches_every_rank(baseline):
    """`colo run --np` passes the directory after `--`, so a rank's
    `colo run` does not read '-exe' as an option."""
    tmp, path = baseline("gpt2")[:2]
    exe = tmp / "dp=2-adamw"
    if not (exe / "program.pb").exists():
        run_colo("compile", path, "-o", exe, "--train", TRAIN["adamw"], "--plan", "dp=2")
    link = tmp / "-exe"
    if not link.exists():
        link.symlink_to(exe)
    proc = subprocess.run([str(BIN / "colo"), "run", "--np", "2", "--steps", "1", "--data",
                           "synthetic", "--", "-exe"], cwd=tmp, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
