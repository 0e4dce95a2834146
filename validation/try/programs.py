#!/usr/bin/env python3
"""Programs for `validation/run try`: each has a planted cause that one `gpuscope run --try` fix
answers, and a `--fixed` variant where the code itself is edited the way the fix would be
(the reference the trial's measurement is compared with). Two programs per fix, of different
models and sizes; `three` plants three causes at once (for `--try auto`).

usage: programs.py NAME [--fixed] [--steps N] [--result FILE]
Writes {"step_ms": [...], "losses": [...]} to FILE: every step's period on the GPU's timeline
(CUDA events at step ends, read after the last step) and the first 20 losses.
"""
import argparse
import itertools
import json
import os
import sys
import time

import torch
import torch.nn as nn

PROGRAMS = {
    # name: (fix, what is planted)
    "mlp_fp32": ("tf32", "an fp32 MLP, 8 x 4096, batch 512"),
    "conv_fp32": ("tf32", "an fp32 conv net, 6 layers of 3x3 at 128 channels, 64x64 images, batch 64"),
    "mlp_bf16": ("bf16", "an fp32 MLP, 6 x 8192, batch 1024, without autocast"),
    "encoder_bf16": ("bf16", "an fp32 transformer encoder, 6 layers of d=1024, seq 512, batch 16"),
    "adamw_many": ("fused-optimizer", "AdamW over 400 small layers (foreach, not fused)"),
    "sgd_many": ("fused-optimizer", "SGD with momentum over 800 layers of 128x128"),
    "loader_heavy": ("dataloader", "a DataLoader without workers whose items take ~1 ms of CPU each, batch 32"),
    "loader_light": ("dataloader", "a DataLoader without workers, items ~0.2 ms each, batch 128"),
    "pinned_mlp": ("non-blocking", "an MLP, 8 x 1024, batch 512, whose batches are copied from pinned host memory "
                                   "without non_blocking (the host waits for each copy, so for the GPU's queue)"),
    "pinned_conv": ("non-blocking", "a conv net, 6 layers of 3x3 at 64 channels, 64x64 images, batch 32, its batches "
                                    "copied from pinned host memory without non_blocking"),
    "pinned_wide": ("non-blocking", "a wide input (8192 x 2048 fp32, 64 MiB pinned) into a deep narrow MLP "
                                    "(16 x 256): the host waits for each large copy, then launches small kernels"),
    "no_caching": ("caching-allocator", "PYTORCH_NO_CUDA_MEMORY_CACHING=1 (set by the runner) on an MLP"),
    "no_caching_conv": ("caching-allocator", "PYTORCH_NO_CUDA_MEMORY_CACHING=1 on a conv net"),
    "compile_encoder": ("compile", "an eager transformer encoder, 4 layers of d=512, seq 256, batch 16 (unfused)"),
    "compile_norms": ("compile", "a bf16 MLP with LayerNorm, GELU and residuals between its 12 layers of 2048, "
                                 "batch 4096 (chains of elementwise kernels)"),
    "graphs_mlp": ("reduce-overhead", "an eager MLP of small kernels, 8 x 512, batch 64 (launch-bound)"),
    "graphs_encoder": ("reduce-overhead", "a small transformer encoder, 2 layers of d=256, seq 32, batch 8 "
                                          "(launch-bound)"),
    "frag_tokens": ("expandable-segments", "a bf16 MLP (2048 wide) over batches that grow by 256 tokens a step "
                                           "from 2048 (a sequence-length warm-up) on a GPU kept nearly full: no "
                                           "cached block fits the next step, so the caching allocator frees its cache "
                                           "and calls cudaMalloc again"),
    "frag_images": ("expandable-segments", "a conv net (32 channels) over batches of 16 images that grow by 4 "
                                           "pixels a side a step from 64 (progressive resizing) on a GPU kept "
                                           "nearly full"),
    "frag_varlen": ("expandable-segments", "a bf16 MLP (4096 wide) over batches of 4096 to 16384 tokens drawn at "
                                           "random every step (variable-length batches) on a GPU kept nearly full: "
                                           "a step whose tensors outgrow the cached blocks frees the cache and "
                                           "calls cudaMalloc again"),
    "frag_kv": ("expandable-segments", "decoding with a KV cache that grows by torch.cat every step (as Hugging "
                                       "Face's DynamicCache grows it), 8 tokens a step for a batch of 128 over 16 "
                                       "layers of 1024, prompts of 512 tokens, on a GPU kept nearly full: each "
                                       "step's caches outgrow the blocks the last step's freed"),
    "three": ("auto", "fp32 matmuls, an unfused AdamW and a loader without workers, together"),
}
# frag_*: the GPU's free memory is filled but for HEADROOM times what the largest step needs (the
# fixed variant runs with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, set by the runner).
HEADROOM = 1.1
GROWTH_STEPS = 100  # frag_*: the batches grow for this many steps, then start over
KV = {"layers": 16, "width": 1024, "batch": 128, "prompt": 512, "tokens": 8, "steps": 64}


class Items(torch.utils.data.Dataset):
    """Items that cost CPU time to build (numpy work), as augmentation does."""

    def __init__(self, n, dim, work):
        self.n, self.dim, self.work = n, dim, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import numpy as np
        rng = np.random.default_rng(i)
        x = rng.standard_normal((self.work, 64)).astype("float32")
        for _ in range(4):
            x = np.tanh(x @ np.eye(64, dtype="float32"))
        v = torch.from_numpy(np.resize(x, self.dim).copy())
        return v, torch.tensor(i % 10)


def mlp(width, depth, out=10):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, out))


class Residual(nn.Module):
    """x + Linear(GELU(LayerNorm(x)) * scale): a GEMM between chains of elementwise kernels."""

    def __init__(self, width):
        super().__init__()
        self.norm, self.linear = nn.LayerNorm(width), nn.Linear(width, width)
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x + self.linear(nn.functional.gelu(self.norm(x)) * self.scale)


def conv_net(ch=128, depth=6):
    layers = [nn.Conv2d(3, ch, 3, padding=1), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(ch, 10))


class KVDecoder(nn.Module):
    """A decoder's attention layers over a KV cache that torch.cat grows every step, as Hugging
    Face's DynamicCache grows it: each step's keys and values are larger than any block the last
    step freed. A batch of sequences is decoded for KV["steps"] steps, then the next batch starts
    from its prompt."""

    def __init__(self, layers, width):
        super().__init__()
        self.qkv = nn.ModuleList(nn.Linear(width, 3 * width, bias=False) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(layers))
        self.cache, self.width = [], width

    def start(self, batch, prompt):
        self.cache = []
        p = next(self.parameters())
        for _ in self.qkv:
            self.cache.append([torch.randn(batch, prompt, self.width, device=p.device, dtype=p.dtype)
                               for _ in range(2)])

    def forward(self, x):
        for layer, (qkv, out) in enumerate(zip(self.qkv, self.out)):
            q, k, v = qkv(x).chunk(3, dim=-1)
            kv = self.cache[layer]
            kv[0] = torch.cat([kv[0], k], dim=1)
            kv[1] = torch.cat([kv[1], v], dim=1)
            scores = (q @ kv[0].transpose(1, 2)) * self.width ** -0.5
            x = x + out(torch.softmax(scores.float(), dim=-1).to(x.dtype) @ kv[1])
        return x


def one_thread_pools(worker_id):
    """The edited loaders' worker_init_fn, as `--try dataloader` does it: each worker's thread
    pools outside torch (numpy's BLAS, OpenMP) limited to one thread, where threadpoolctl is
    installed."""
    try:
        from threadpoolctl import threadpool_limits
        _LIMITS.append(threadpool_limits(limits=1))
    except ImportError:
        pass


_LIMITS = []  # in a worker: its threadpoolctl limiter


def build(name, fixed, dev):
    """Model, optimizer, a batch source (an iterator of (x, y) on the device), autocast dtype."""
    g = torch.Generator(device="cpu").manual_seed(0)
    amp = None
    fused = {}
    loader_kwargs = {"num_workers": 0}
    fix = PROGRAMS[name][0]
    if fixed and fix in ("tf32", "auto"):
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = True
    if fixed and fix == "bf16":
        amp = torch.bfloat16
    if fixed and fix in ("fused-optimizer", "auto"):
        fused = {"fused": True}
    if fixed and fix in ("dataloader", "auto"):
        workers = max(1, min(8, len(os.sched_getaffinity(0)) - 1))
        loader_kwargs = {"num_workers": workers, "pin_memory": True, "persistent_workers": True,
                         "worker_init_fn": one_thread_pools}

    def fixed_batches(x, y):
        while True:
            yield x, y

    if name in ("mlp_fp32", "no_caching"):
        model, x = mlp(4096, 8), torch.randn(512, 4096, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (512,), generator=g).to(dev))
    elif name in ("conv_fp32", "no_caching_conv"):
        model, x = conv_net(), torch.randn(64, 3, 64, 64, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (64,), generator=g).to(dev))
    elif name == "mlp_bf16":
        model, x = mlp(8192, 6), torch.randn(1024, 8192, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (1024,), generator=g).to(dev))
    elif name == "encoder_bf16":
        layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, dropout=0.0)
        model = nn.Sequential(nn.TransformerEncoder(layer, 6), nn.Flatten(), nn.LazyLinear(10))
        x = torch.randn(16, 512, 1024, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (16,), generator=g).to(dev))
    elif name == "graphs_mlp":
        model, x = mlp(512, 8), torch.randn(64, 512, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (64,), generator=g).to(dev))
    elif name == "graphs_encoder":
        layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
        model = nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Flatten(),
                              nn.Linear(32 * 256, 10))
        x = torch.randn(8, 32, 256, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (8,), generator=g).to(dev))
    elif name == "compile_norms":
        model = nn.Sequential(*[Residual(2048) for _ in range(12)], nn.Linear(2048, 10))
        amp = torch.bfloat16
        x = torch.randn(4096, 2048, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (4096,), generator=g).to(dev))
    elif name == "compile_encoder":
        layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.0)
        model = nn.Sequential(nn.TransformerEncoder(layer, 4), nn.Flatten(), nn.Linear(256 * 512, 10))
        x = torch.randn(16, 256, 512, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (16,), generator=g).to(dev))
    elif name in ("pinned_mlp", "pinned_conv", "pinned_wide"):
        # A ring of pinned host batches, never rewritten (the safe case for non_blocking copies).
        shape = {"pinned_mlp": (512, 1024), "pinned_conv": (32, 3, 64, 64), "pinned_wide": (8192, 2048)}[name]
        if name == "pinned_wide":
            # Where the host is the slower side, a blocking copy adds its time to every step:
            # the step becomes max(GPU work, host work) + copy, against max(copy + GPU, host).
            model = nn.Sequential(nn.Linear(2048, 256), nn.ReLU(), mlp(256, 16))
        else:
            model = mlp(1024, 8) if name == "pinned_mlp" else conv_net(64)
        ring = [(torch.randn(*shape, generator=g).pin_memory(),
                 torch.randint(0, 10, (shape[0],), generator=g).pin_memory())
                for _ in range(2 if name == "pinned_wide" else 4)]

        def pinned_batches():
            i = 0
            while True:
                x, y = ring[i % len(ring)]
                i += 1
                yield (x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)) if fixed else (x.to(dev), y.to(dev))
        batches = pinned_batches()
    elif name in ("adamw_many", "sgd_many"):
        width, depth = (256, 400) if name == "adamw_many" else (128, 800)
        model, x = mlp(width, depth), torch.randn(64, width, generator=g)
        batches = fixed_batches(x.to(dev), torch.randint(0, 10, (64,), generator=g).to(dev))
    elif name == "frag_kv":
        model = KVDecoder(KV["layers"], KV["width"]).to(dev, torch.bfloat16)

        def decode():
            for i in itertools.count():
                if i % KV["steps"] == 0:
                    model.start(KV["batch"], KV["prompt"])
                yield torch.randn(KV["batch"], KV["tokens"], KV["width"], device=dev, dtype=torch.bfloat16), None
        return model, None, decode(), None
    elif name == "frag_varlen":
        # Variable-length batches (dynamic padding): every activation is over 10 MiB, so the
        # caching allocator gives each its own segment of its own size, and a step with more tokens
        # than the last finds no cached block large enough; the GPU being full, it frees its cache
        # (synchronising) and allocates again. The first batch is the largest (main() sizes the
        # headroom with it); the lengths are seeded, the same in every run.
        model, amp = mlp(4096, 6), torch.bfloat16
        lengths = torch.Generator().manual_seed(1)

        def varlen():
            n = 16384
            while True:
                yield torch.randn(n, 4096, device=dev), torch.randint(0, 10, (n,), device=dev)
                n = 4096 + 128 * int(torch.randint(0, 97, (1,), generator=lengths))
        batches = varlen()
    elif name in ("frag_tokens", "frag_images"):
        # Batches that grow a little every step, as a sequence-length warm-up or progressive
        # resizing makes them: no block the caching allocator freed fits the next step's tensors,
        # so it asks cudaMalloc for new ones and, once the GPU is full, frees its whole cache
        # (synchronising) to retry. Expandable segments grow one mapping in place instead. (On an
        # H100 that made 2 to 7 retries a run, not one a step: docs/validation.md.) The first
        # batch is the largest (main() sizes the headroom with it); the growth starts over every
        # GROWTH_STEPS steps.
        model = mlp(2048, 6) if name == "frag_tokens" else conv_net(32)
        amp = torch.bfloat16 if name == "frag_tokens" else None

        def growing():
            for i in itertools.count(-1):
                k = GROWTH_STEPS - 1 if i < 0 else i % GROWTH_STEPS
                if name == "frag_tokens":
                    n = 2048 + 256 * k
                    shape, rows = (n, 2048), n
                else:
                    side = 64 + 4 * k
                    shape, rows = (16, 3, side, side), 16
                yield torch.randn(*shape, device=dev), torch.randint(0, 10, (rows,), device=dev)
        batches = growing()
    elif name in ("loader_heavy", "loader_light", "three"):
        dim, work, bs = {"loader_heavy": (1024, 256, 32), "loader_light": (1024, 48, 128),
                         "three": (2048, 128, 64)}[name]
        model = mlp(dim, 4)
        loader = torch.utils.data.DataLoader(Items(100000, dim, work), batch_size=bs, shuffle=False, **loader_kwargs)

        def from_loader():
            for xb, yb in loader:
                yield xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        batches = from_loader()
    else:
        raise SystemExit(f"unknown program {name}; one of {', '.join(PROGRAMS)}")
    model = model.to(dev)
    if fixed and fix == "compile":
        model = torch.compile(model)
    if fixed and fix == "reduce-overhead":
        model = torch.compile(model, mode="reduce-overhead")
    if name.startswith("sgd"):
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, **fused)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused)
    return model, opt, batches, amp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=sorted(PROGRAMS))
    ap.add_argument("--fixed", action="store_true")
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--result")
    ap.add_argument("--headroom", type=float, default=HEADROOM,
                    help="frag_*: the free memory left, in steps of the largest batch")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model, opt, batches, amp = build(a.name, a.fixed, dev)
    loss_fn = nn.CrossEntropyLoss()

    def train_step(x, y):
        if opt is None:  # frag_kv decodes: no loss, no optimizer
            with torch.inference_mode():
                return model(x).float().square().mean()
        with torch.autocast("cuda", dtype=amp, enabled=amp is not None):
            loss = loss_fn(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    ballast = None
    if PROGRAMS[a.name][0] == "expandable-segments":
        # One step of the largest batch sizes what a step needs; then all free memory but
        # HEADROOM times that is taken, as a GPU filled by a larger model would be. frag_kv needs
        # its caches at their longest (the blocks its last step freed are what it must give back).
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        train_step(*next(batches))
        torch.cuda.synchronize()
        need = torch.cuda.max_memory_allocated() - base
        if a.name == "frag_kv":
            need = 2 * KV["layers"] * KV["batch"] * KV["width"] * 2 * (KV["prompt"] + KV["tokens"] * KV["steps"])
        torch.cuda.empty_cache()
        free = torch.cuda.mem_get_info()[0]
        ballast = torch.empty(max(0, free - int(a.headroom * need)), dtype=torch.uint8, device=dev)
    ends, losses = [], []
    for step in range(a.steps):
        loss = train_step(*next(batches))
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        ends.append(ev)
        if step < 20:
            losses.append(loss.detach())
    torch.cuda.synchronize()
    step_ms = [a.elapsed_time(b) for a, b in zip(ends, ends[1:])]
    if a.result:
        out = {"step_ms": step_ms, "losses": [float(v) for v in losses]}
        if ballast is not None:
            out["alloc_retries"] = torch.cuda.memory_stats().get("num_alloc_retries")
        with open(a.result, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
