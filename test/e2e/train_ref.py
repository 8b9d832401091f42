"""PyTorch's side of the training parity tests: the models (tiny, dropout 0 so
that both sides compute the same function), the batches, and PyTorch training
them with the optimizer colo is asked to build."""
import copy

import numpy as np
import torch
import torch.nn.functional as F

import models

STEPS = 5


class Classifier(torch.nn.Module):
    """A TransformerEncoder over a sequence, mean-pooled, then a linear head."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                                 dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                                   enable_nested_tensor=False)
        self.head = torch.nn.Linear(32, 5)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def _hf(name, layers=2, heads=4, kv_heads=2):
    import transformers as tf

    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=layers, n_embd=64, n_head=4, vocab_size=256, n_positions=32,
                            use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0,
                            attn_pdrop=0.0)
        return models.LogitsOnly(tf.GPT2LMHeadModel(cfg))
    cfg = tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         vocab_size=256, max_position_embeddings=32, use_cache=False)
    return models.LogitsOnly(tf.LlamaForCausalLM(cfg))


# name -> (loss colo builds, AdamW learning rate (SGD takes 10x), AdamW eps).
# ResNet-18 trains with batch 16 at 1e-4: with batch 4, or at 1e-3, batch norm
# over a few values makes 5 steps chaotic (PyTorch float32 ends up 6e-2 from
# float64). Its eps is 1e-6: some convolution weights get gradients of 1e-8,
# below float32 rounding of sums of 0.1-sized terms, which eps 1e-8 would turn
# into updates of 0.5 lr of either sign in any float32 implementation.
MODELS = {
    "mlp": ("cross-entropy", 1e-3, 1e-8),
    "classifier": ("cross-entropy", 1e-3, 1e-8),
    "resnet18": ("cross-entropy", 1e-4, 1e-6),
    "gpt2": ("lm", 1e-3, 1e-8),
    "llama": ("lm", 1e-3, 1e-8),
}


def build(name):
    """(module in training mode, example inputs, data arrays for STEPS steps)."""
    torch.manual_seed(models.SEED)
    g = torch.Generator().manual_seed(1)
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 10))
        x = torch.randn(STEPS * 8, 32, generator=g)
        data = {"x": x, "labels": torch.randint(0, 10, (STEPS * 8,), generator=g)}
        batch = 8
    elif name == "classifier":
        model = Classifier()
        data = {"x": torch.randn(STEPS * 4, 8, 32, generator=g),
                "labels": torch.randint(0, 5, (STEPS * 4,), generator=g)}
        batch = 4
    elif name == "resnet18":
        import torchvision
        model = torchvision.models.resnet18(num_classes=10)
        data = {"x": torch.randn(STEPS * 16, 3, 32, 32, generator=g),
                "labels": torch.randint(0, 10, (STEPS * 16,), generator=g)}
        batch = 16
    else:
        model = _hf(name)
        data = {"input_ids": torch.randint(0, 256, (STEPS * 2, 16), generator=g)}
        batch = 2
    first = {k: v[:batch] for k, v in data.items()}
    example = (first["input_ids"],) if "input_ids" in first else (first["x"],)
    return model.train(), example, data, batch


def batches(data, batch):
    for i in range(STEPS):
        yield {k: v[i * batch:(i + 1) * batch] for k, v in data.items()}


def loss_of(model, b, loss):
    if loss == "lm":
        logits = model(b["input_ids"])
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               b["input_ids"][:, 1:].reshape(-1))
    return F.cross_entropy(model(b["x"]), b["labels"])


def optimizer(name, params, lr, eps=1e-8):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, eps=eps)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    raise ValueError(name)


def train(model, data, batch, loss, opt_name, lr, eps=1e-8):
    """PyTorch training: per-step losses and the final state_dict as numpy."""
    opt = optimizer(opt_name, model.parameters(), lr, eps)
    losses = []
    for b in batches(data, batch):
        opt.zero_grad()
        value = loss_of(model, b, loss)
        value.backward()
        opt.step()
        losses.append(value.item())
    return losses, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def float32_variants(model, perturbed=16, relative_step=None):
    """Copies of `model` for float32 runs that differ from each other by
    rounding only: the model itself, then `perturbed` copies whose every
    parameter element is moved one float32 ulp up or down at random (or by
    `relative_step` of itself: 2^-8 is one bf16 step, for runs under bf16
    autocast, where a float32 ulp mostly vanishes in the cast). Where a
    training amplifies rounding (Adam on gradients that cancel to rounding
    level, batch norm over a few values, ReLUs at zero), float32 lands at
    different distances from float64 in each; the worst of them, not one lucky
    draw, is how close float32 can be trusted to follow float64.

    Sixteen copies, not fewer: the furthest of n + 1 draws is exceeded by a
    further draw about once in n + 2, and on tensors whose Adam steps flip
    sign at rounding level the tail is long. On the suite's GPT-2 (AdamW, 5
    steps; AMD EPYC, 2 cores), 16 further PyTorch float32 draws compared with
    the unperturbed one, as test_parallel compares a plan's run with one
    rank's, exceeded twice the furthest of 5 draws 42 times over 53 tensors
    (up to 2.1x, the first MLP's output bias), and twice the furthest of 9 or
    of 17 never (bench/float32_spread.py)."""
    yield copy.deepcopy(model)
    for seed in range(perturbed):
        m = copy.deepcopy(model)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in m.parameters():
                up = torch.rand(p.shape, generator=g) < 0.5
                if relative_step:
                    p.mul_(1 + torch.where(up, 1.0, -1.0) * relative_step)
                else:
                    p.copy_(torch.nextafter(p, torch.where(up, torch.inf, -torch.inf)))
        yield m


def save_npz(path, data, names):
    """The batches as colo run reads them: arrays named like the executable's inputs."""
    np.savez(path, **{n: data[k].numpy() for k, n in names.items()})
