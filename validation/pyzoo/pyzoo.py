#!/usr/bin/env python3
"""A zoo of small PyTorch training programs, each with one planted cause of lost GPU time.

    python3 pyzoo.py CASE [--fixed] [--compile] [--reduce-overhead] [--graph] [--bf16]
                     [--compare compile|reduce_overhead|graph|bf16] [--steps N]

Plain PyTorch as users write it: no profiler, no annotations, nothing of gpuscope. `--fixed`
applies the usual fix for the planted cause and changes nothing else. The program prints one
JSON line: {"case", "fixed", "step_ms" (the median over --chunks chunks of the mean step
time, wall clock, with a device sync only at the end of each chunk), "steps", "chunk_ms"}.

The next fix, to measure what gpuscope says about a fixed program: `--compile` compiles forward,
loss and backward with torch.compile (kernel fusion); `--reduce-overhead` the same with
mode="reduce-overhead" (their kernels replayed as CUDA graphs, the optimizer and the rest of
the step eager: launch overhead where the step cannot be captured whole); `--graph` captures
the whole step in a CUDA graph (launch overhead; cases whose step has static inputs and no host
sync); `--bf16` runs the step under bf16 autocast (fp32 matrix math; a CUDA graph captures it
so). `--compare FIX` (compile, reduce_overhead, graph, bf16, no_host_work, no_input) builds the
program twice, without and with that fix, and times their chunks alternately in one process,
so the two share the host's noise; it adds "step_ms_with" and "speedup".

cases (planted cause -> fix):
  dataloader  batches built in the main process (num_workers=0)  -> 8 workers, pinned memory
              (--loader-width 128: items an eighth as costly, which 8 workers keep up with)
  item        loss.item() every step, host work before the next   -> the loss kept on the GPU
  pageable    256 MiB copied from pageable memory every step      -> pinned, copied a step ahead on
                                                                     a side stream
  alloc       torch.cuda.empty_cache() every step                 -> caching allocator left alone
  launch      tiny MLP at batch 1: ~40 small kernels a step       -> the step in a CUDA graph
  optimizer   150 small layers, AdamW(foreach=False)             -> AdamW(fused=True)
  fp32        fp32 GEMMs                                          -> bf16 autocast
  attention   attention written out (q @ k^T, softmax, @ v)       -> scaled_dot_product_attention
  healthy     large bf16 GEMMs, nothing between them, fused AdamW -> (nothing to fix)

hidden-style cases: other models and other sizes than the nine above, one planted cause each
(validation/pyzoo/run's PYZOO_SET=hidden):
  lstm             nn.LSTMCell over 24 steps at batch 8, SGD: small  -> the step in a CUDA graph
                   kernels launched one by one
  pageable_both    96 MiB up and 16 MiB down through pageable memory -> both pinned; the upload a step ahead
                   every step                                           on a side stream, the download
                                                                        non-blocking
  numpy_aug        crop, flip, normalise in numpy in the loop        -> uint8 uploaded, the same augmentation
                                                                        in torch on the GPU
  attention_bidir  bidirectional attention written out               -> scaled_dot_product_attention
  fp32_encoder     nn.TransformerEncoder in fp32                     -> bf16 autocast
  adam_loop        40 layers of 1024 at batch 8192,                 -> Adam(fused=True)
                   Adam(foreach=False)
  grad_norms       per-parameter gradient and weight norms read with -> the norms stacked on the GPU,
                   .item() after backward (update-ratio logging)        read once a step
  alloc_conv       conv net, torch.cuda.empty_cache() every step     -> caching allocator left alone
  loader_images    numpy-built images in the main process            -> 6 workers, pinned memory
  launch_conv      3 tiny convs at batch 2, SGD: small kernels       -> the step in a CUDA graph

outside the sets:
  tolist_layers    a per-layer statistic read with .tolist()         -> kept on the GPU, read once a step
                   (its reads cost little: each layer's kernels outlast the next layer's launches)
"""
import argparse
import itertools
import json
import math
import statistics
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = "cuda"
ARGS = argparse.Namespace(workers=8, loader_width=1024, attn_seq=2048, attn_heads=16, attn_dmodel=1024, batch=None,
                          compile=False, reduce_overhead=False, graph=False, bf16=False, no_host_work=False,
                          no_input=False)  # main() sets these
GRAPH_CASES = ("launch", "optimizer", "fp32", "attention", "healthy", "lstm", "attention_bidir", "fp32_encoder",
               "adam_loop", "launch_conv")
ONLY_CASE = {"no_host_work": "item", "no_input": "dataloader"}  # --compare fixes of one case


def built(model):
    """The model on the GPU."""
    return model.to(DEV)


def loss_of(fn):
    """The step's forward and loss, fn(model, *inputs) -> loss, as one compiled function under
    --compile (its backward compiled with it), so every elementwise chain of forward, loss and
    backward is in reach of the fusion; the optimizer stays as it is."""
    if ARGS.reduce_overhead:
        return torch.compile(fn, mode="reduce-overhead")
    return torch.compile(fn) if ARGS.compile else fn


def _squared_output(model, x, autocast):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        return model(x).float().pow(2).mean()


_LOSSES = {}


def adamw(params, **kw):
    """AdamW; capturable under --graph (its step count stays on the GPU)."""
    return torch.optim.AdamW(params, capturable=ARGS.graph, **kw)


def mlp(d, layers, act=nn.GELU):
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(d, d), act()]
    return nn.Sequential(*mods)


def convnet(chans, strides=None, classes=10):
    """3x3 convolutions with ReLU from 3 channels through the widths chans (stride 1 unless told),
    global average pooling and a linear head."""
    mods, c_in = [], 3
    for c, s in zip(chans, strides or [1] * len(chans)):
        mods += [nn.Conv2d(c_in, c, 3, stride=s, padding=1), nn.ReLU()]
        c_in = c
    return nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, classes))


def _train(model, opt, objective, *args):
    """One training step on objective(model, *args) (compiled once per model under --compile);
    returns the loss."""
    fn = _LOSSES.get(id(model))
    if fn is None:
        fn = _LOSSES[id(model)] = loss_of(objective)
    loss = fn(model, *args)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def train_step(model, opt, x, autocast=True):
    """One step on the zoo's stand-in objective (the squared output), bf16 autocast unless
    told otherwise; returns the loss."""
    return _train(model, opt, _squared_output, x, autocast)


def _cross_entropy(model, x, y):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return F.cross_entropy(model(x), y)


def classify_step(model, opt, x, y):
    """One step of classification training (cross-entropy on labels y, bf16 autocast); returns the loss."""
    return _train(model, opt, _cross_entropy, x, y)


def static_step(model, opt, loss_fn, *inputs):
    """A training step on inputs that stay where they are, its gradients kept in place (zeroed, not
    freed), so that a CUDA graph can capture it as it is."""

    def step():
        loss = loss_fn(model, *inputs)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    return step


class Chunks(torch.utils.data.Dataset):
    """Each item is a chunk of rows that costs CPU time to build (decoding and augmentation
    stand-in: random generation, a sort and a normalisation on the CPU)."""

    def __init__(self, rows, d, width=None):
        # width: the columns built on the CPU (then repeated to d); less width, cheaper items.
        self.rows, self.d, self.width = rows, d, width or d // 4

    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.rand(self.rows, self.width, generator=g)
        x = x.sort(dim=1).values
        x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-6)
        return x.repeat(1, self.d // self.width), torch.randint(0, 10, (self.rows,), generator=g)


def concat(batch):
    return torch.cat([x for x, _ in batch]), torch.cat([y for _, y in batch])


def case_dataloader(fixed):
    d, rows, items = 4096, 256, 16  # batches of 16 chunks of 256 rows
    model = built(nn.Sequential(mlp(d, 8), nn.Linear(d, 10)))
    opt = adamw(model.parameters(), fused=True)
    kw = dict(num_workers=ARGS.workers, pin_memory=True, prefetch_factor=4, persistent_workers=True) if fixed else {}
    it = iter(torch.utils.data.DataLoader(Chunks(rows, d, ARGS.loader_width), batch_size=items, collate_fn=concat,
                                          **kw))

    def cross_entropy(model, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.cross_entropy(model(x), y)

    loss_fn = loss_of(cross_entropy)

    first, no_input = [], ARGS.no_input

    def step():
        if no_input and first:
            x, y = first[0]  # --compare no-input: the first batch again, already on the GPU
        else:
            x, y = next(it)
            x, y = x.to(DEV, non_blocking=fixed), y.to(DEV, non_blocking=fixed)
            first[:] = [(x, y)]
        loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def host_work(n=100_000):
    """Per-step CPU work of the training loop (schedule, metrics, tokenisation stand-in)."""
    return sum(i * i % 7 for i in range(n))


def case_item(fixed):
    d, batch = 4096, 4096
    model = built(mlp(d, 12))
    opt = adamw(model.parameters(), fused=True)
    x = torch.randn(batch, d, device=DEV)
    losses = []

    no_host_work = ARGS.no_host_work

    def step():
        if not no_host_work:
            host_work()
        loss = train_step(model, opt, x)
        # Logging the loss every step: .item() waits for the step to finish, so the next step's
        # host work cannot overlap this step's GPU work. Fixed: keep it on the GPU.
        losses.append(loss.detach() if fixed else loss.item())

    return step


def case_pageable(fixed):
    d, batch = 4096, 4096
    model = built(mlp(d, 4))
    opt = adamw(model.parameters(), fused=True)
    host = torch.randn(64, 1024, 1024)  # 256 MiB, e.g. a large batch or a table
    x = torch.randn(batch, d, device=DEV)
    if fixed:
        # Pinned, copied asynchronously on a side stream one step ahead of its use.
        host = host.pin_memory()
        copy_stream = torch.cuda.Stream()
        pending = [None]

        def fetch():
            with torch.cuda.stream(copy_stream):
                t = host.to(DEV, non_blocking=True)
            return t

        pending[0] = fetch()

    def step():
        if fixed:
            torch.cuda.current_stream().wait_stream(copy_stream)
            side = pending[0]
            side.record_stream(torch.cuda.current_stream())
            pending[0] = fetch()
        else:
            side = host.to(DEV)
        train_step(model, opt, x + side[0, :1, :1].float().mean())

    return step


def case_alloc(fixed):
    d, batch = 4096, 4096
    model = built(mlp(d, 4))
    opt = adamw(model.parameters(), fused=True)

    def step():
        x = torch.randn(batch, d, device=DEV)
        scratch = [torch.empty(64 << 20, dtype=torch.uint8, device=DEV) for _ in range(8)]
        train_step(model, opt, x)
        del scratch
        if not fixed:
            torch.cuda.empty_cache()  # "to keep memory low"

    return step


def in_graph(step):
    """The step captured in a CUDA graph as in PyTorch's CUDA graphs documentation: warm up on a
    side stream, capture once; the returned function replays it."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def case_launch(fixed):
    model = built(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(1, 64, device=DEV), torch.randn(1, 1, device=DEV)

    loss_fn = loss_of(lambda model, x, y: F.mse_loss(model(x), y))

    def eager():
        loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    return in_graph(eager) if fixed and not ARGS.graph else eager  # --graph: main() captures it


def case_optimizer(fixed):
    d, batch = 256, 256
    model = built(mlp(d, 150, act=nn.ReLU))
    opt = adamw(model.parameters(), fused=True) if fixed else adamw(model.parameters(), foreach=False)
    x = torch.randn(batch, d, device=DEV)

    return lambda: train_step(model, opt, x)


def case_fp32(fixed):
    d, batch = 4096, 8192
    model = built(mlp(d, 4))
    opt = adamw(model.parameters(), fused=True)
    x = torch.randn(batch, d, device=DEV)

    return lambda: train_step(model, opt, x, autocast=fixed)


class Attention(nn.Module):
    def __init__(self, d, heads, fused, causal=True):
        super().__init__()
        self.heads, self.fused, self.causal = heads, fused, causal
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.qkv(x).split(d, dim=2))
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            if self.causal:
                mask = torch.ones(t, t, device=x.device, dtype=torch.bool).tril()
                att = att.masked_fill(~mask, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return x + self.proj(y.transpose(1, 2).reshape(b, t, d))


def case_attention(fixed):
    d, heads, seq = ARGS.attn_dmodel, ARGS.attn_heads, ARGS.attn_seq
    model = built(nn.Sequential(*[Attention(d, heads, fixed) for _ in range(4)]))
    opt = adamw(model.parameters(), fused=True)
    x = torch.randn(8 * 2048 // seq, seq, d, device=DEV)  # 16,384 tokens a step at any length

    return lambda: train_step(model, opt, x)


def case_healthy(fixed):
    # Large bf16 GEMMs with nothing between them: bf16 weights (no autocast casts), no
    # activations, data on the GPU, fused AdamW.
    d, batch = 8192, 8192
    model = built(nn.Sequential(*[nn.Linear(d, d, bias=False) for _ in range(4)]).to(torch.bfloat16))
    opt = adamw(model.parameters(), fused=True)
    x = torch.randn(batch, d, device=DEV, dtype=torch.bfloat16)

    return lambda: train_step(model, opt, x, autocast=False)


# Hidden-style cases: other models and other sizes than the cases above, one planted cause each.


def case_lstm(fixed):
    # A recurrence written by hand: a few small kernels per time step, each launched from Python.
    seq, batch, d_in, hidden = 24, 8, 64, 192
    model = built(nn.ModuleList([nn.LSTMCell(d_in, hidden), nn.Linear(hidden, 1)]))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x, y = torch.randn(seq, batch, d_in, device=DEV), torch.randn(batch, 1, device=DEV)

    def sequence_loss(model, x, y):
        cell, head = model
        h, c = cell(x[0])
        for xt in x[1:]:
            h, c = cell(xt, (h, c))
        return F.mse_loss(head(h), y)

    eager = static_step(model, opt, loss_of(sequence_loss), x, y)
    return in_graph(eager) if fixed and not ARGS.graph else eager  # --graph: main() captures it


def case_pageable_both(fixed):
    # Features in, embeddings out: each step a batch of 2048 rows of 12,288 fp32 features (96 MiB)
    # goes up and its 2048 x 2048 fp32 output (16 MiB) comes back, both through pageable memory.
    batch, d_in, d = 2048, 12288, 2048
    model = built(nn.Sequential(nn.Linear(d_in, d), nn.GELU(), mlp(d, 2)))
    opt = adamw(model.parameters(), fused=True)
    data, out_host = torch.randn(4, batch, d_in), torch.empty(batch, d)  # four batches, read in turn
    if fixed:
        data, out_host = data.pin_memory(), out_host.pin_memory()
        copy_stream, copied = torch.cuda.Stream(), torch.cuda.Event()
    batches = itertools.cycle(data)

    def fetch():  # fixed: the next batch copied asynchronously on a side stream
        with torch.cuda.stream(copy_stream):
            return next(batches).to(DEV, non_blocking=True)

    def output_and_loss(model, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x).float()
        return out, out.pow(2).mean()

    fn, pending = loss_of(output_and_loss), [fetch() if fixed else None]

    def step():
        if fixed:
            torch.cuda.current_stream().wait_stream(copy_stream)
            x = pending[0]
            x.record_stream(torch.cuda.current_stream())
            pending[0] = fetch()  # one step ahead of its use
        else:
            x = next(batches).to(DEV)
        out, loss = fn(model, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        out_host.copy_(out.detach(), non_blocking=fixed)
        if fixed:
            copied.record()
            copied.synchronize()  # the host reads the output only once it has landed
        return out_host[0, 0].item()  # the host uses the output (stand-in: one element)

    return step


def case_numpy_aug(fixed):
    # Augmentation in the training loop's own thread: uint8 images padded, randomly cropped and
    # flipped, converted and normalised in numpy before the upload. Fixed: the uint8 batch goes up
    # and the same augmentation (the same random choices) runs in torch on the GPU.
    n, batch, size, pad = 768, 48, 112, 8
    model = built(convnet([32, 64, 64, 64], strides=[2, 1, 2, 1]))
    opt = adamw(model.parameters(), fused=True)
    images = np.random.default_rng(0).integers(0, 256, (n, 3, size, size), dtype=np.uint8)
    labels = torch.randint(0, 10, (n,), device=DEV)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
    mean_gpu, std_gpu, r = torch.from_numpy(mean).to(DEV), torch.from_numpy(std).to(DEV), torch.arange(size, device=DEV)
    rng, starts = np.random.default_rng(1), itertools.cycle(range(0, n, batch))

    def step():
        i = next(starts)
        imgs = images[i:i + batch]
        oy, ox = rng.integers(0, 2 * pad + 1, (2, batch))
        flip = rng.random(batch) < 0.5
        if fixed:
            u = F.pad(torch.from_numpy(imgs).to(DEV), (pad,) * 4)
            oy, ox, flip = torch.from_numpy(np.stack([oy, ox, flip])).to(DEV)[:, :, None]
            rows, cols = oy + r, ox + torch.where(flip == 1, size - 1 - r, r)  # crop and flip as one gather
            x = u[torch.arange(batch, device=DEV)[:, None, None, None], torch.arange(3, device=DEV)[:, None, None],
                  rows[:, None, :, None], cols[:, None, None, :]].float()
            x = (x / 255 - mean_gpu) / std_gpu
        else:
            padded = np.pad(imgs, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
            x = np.empty((batch, 3, size, size), np.float32)
            for j in range(batch):
                crop = padded[j, :, oy[j]:oy[j] + size, ox[j]:ox[j] + size]
                x[j] = crop[:, :, ::-1] if flip[j] else crop
            x = torch.from_numpy((x / 255 - mean) / std).to(DEV)
        classify_step(model, opt, x, labels[i:i + batch])

    return step


def case_attention_bidir(fixed):
    # An encoder's attention (no mask) written out: the (32, 12, 512, 512) scores are written and read
    # back by each step between the two products, forward and backward. 16,384 tokens a step.
    model = built(nn.Sequential(*[Attention(768, 12, fixed, causal=False) for _ in range(4)]))
    opt = adamw(model.parameters(), fused=True)
    x = torch.randn(32, 512, 768, device=DEV)

    return lambda: train_step(model, opt, x)


class Residual(nn.Module):
    """x + MLP(LayerNorm(x)), the MLP twice as wide inside."""

    def __init__(self, d):
        super().__init__()
        self.mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.mlp(x)


def case_tolist_layers(fixed):
    # Each layer's kernels (about 0.1 ms at this size) take about as long as the host needs to
    # issue them: without the reads the host's work hides under the GPU's; with a read per layer
    # it is exposed at every layer. (At 1536 x 1024 the GPU's part was the shorter one, the host
    # was behind anyway, and the reads cost nothing measurable: x0.97.)
    d, batch = 2048, ARGS.batch or 4096
    blocks = built(nn.ModuleList([Residual(d) for _ in range(10)]))
    opt = adamw(blocks.parameters(), fused=True)
    x = torch.randn(batch, d, device=DEV)
    log = []

    def forward(blocks, x):
        h, stats = x, []
        with torch.autocast("cuda", dtype=torch.bfloat16):
            for blk in blocks:
                h = blk(h)
                # Each layer's activation scale, for the log. Read on the host at once, it is a sync
                # per layer: the GPU drains and waits for the next layer's launches. Fixed: it stays
                # on the GPU until the step is done.
                s = h.detach().float().abs().mean()
                stats.append(s if fixed else s.tolist())
        return h.float().pow(2).mean(), stats

    fn = loss_of(forward)

    def step():
        loss, stats = fn(blocks, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        log.append(torch.stack(stats).tolist() if fixed else stats)  # fixed: one read a step

    return step


def case_fp32_encoder(fixed):
    layer = nn.TransformerEncoderLayer(640, 10, dim_feedforward=2560, dropout=0.0, batch_first=True)
    model = built(nn.TransformerEncoder(layer, 6))
    opt = adamw(model.parameters(), fused=True)
    x = torch.randn(24, 384, 640, device=DEV)

    return lambda: train_step(model, opt, x, autocast=fixed)


def case_adam_loop(fixed):
    # foreach=False: Adam updates the 80 parameters one by one, about seven kernels each, at the
    # host's pace: about 560 launches a step. At batch 8192 each layer's forward and backward
    # kernels run longer than their launches, so the step is bound by the GPU but for the
    # optimizer. (At batch 1024 forward and backward were launch-bound themselves, and a CUDA
    # graph of the step gained more than the fused optimizer.)
    d, batch = 1024, ARGS.batch or 8192
    model = built(mlp(d, 40, act=nn.ReLU))
    kw = dict(fused=True) if fixed else dict(foreach=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=ARGS.graph, **kw)  # --graph: in a CUDA graph
    x = torch.randn(batch, d, device=DEV)

    return lambda: train_step(model, opt, x)


def case_grad_norms(fixed):
    # Update-ratio logging after backward: each parameter tensor's gradient norm and weight norm,
    # each read with .item(): two host syncs per tensor, 144 a step. Each drains the queue,
    # and the GPU waits while the host reads the value and launches the next norm. Fixed: the
    # norms computed on the GPU, stacked, and read once, after the step is queued.
    d, batch = 2048, ARGS.batch or 2048
    model = built(nn.Sequential(*[Residual(d) for _ in range(12)]))
    opt = adamw(model.parameters(), fused=True)
    params = list(model.parameters())
    x = torch.randn(batch, d, device=DEV)
    objective = loss_of(_squared_output)
    log = []

    def step():
        loss = objective(model, x, True)
        loss.backward()
        if fixed:
            norms = torch.stack([n for p in params for n in (p.grad.norm(), p.detach().norm())])
        else:
            log.append([(p.grad.norm().item(), p.detach().norm().item()) for p in params])
        opt.step()
        opt.zero_grad(set_to_none=True)
        if fixed:
            log.append(norms.tolist())

    return step


def case_alloc_conv(fixed):
    model = built(convnet([64] * 6))
    opt = adamw(model.parameters(), fused=True)

    def step():
        x = torch.randn(64, 3, 56, 56, device=DEV)
        scratch = [torch.empty(96 << 20, dtype=torch.uint8, device=DEV) for _ in range(4)]  # per-step buffers, 384 MiB
        train_step(model, opt, x)
        del scratch
        if not fixed:
            torch.cuda.empty_cache()  # "to avoid fragmentation": the cache goes back, to be cudaMalloc'ed again

    return step


class Images(torch.utils.data.Dataset):
    """Each item a 3x96x96 fp32 image and a label, built on the CPU with numpy (decoding and
    augmentation stand-in: a seeded 192x192 uint8 image, halved by 2x2 averaging, a 5x5 box blur,
    per-channel normalisation)."""

    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        img = g.integers(0, 256, (3, 192, 192), dtype=np.uint8).astype(np.float32) / 255
        img = (img[:, ::2, ::2] + img[:, 1::2, ::2] + img[:, ::2, 1::2] + img[:, 1::2, 1::2]) / 4
        p = np.pad(img, ((0, 0), (2, 2), (2, 2)), mode="edge")
        img = sum(p[:, dy:dy + 96, dx:dx + 96] for dy in range(5) for dx in range(5)) / 25
        img = (img - img.mean(axis=(1, 2), keepdims=True)) / (img.std(axis=(1, 2), keepdims=True) + 1e-6)
        return torch.from_numpy(img), int(g.integers(10))


def case_loader_images(fixed):
    model = built(convnet([32, 64, 128, 128], strides=[1, 2, 2, 1]))
    opt = adamw(model.parameters(), fused=True)
    # The default prefetch (2 batches a worker): a deeper queue, filled while the model builds,
    # would time the queue, not the workers, over the case's 35 steps.
    kw = dict(num_workers=6, pin_memory=True, persistent_workers=True) if fixed else {}
    it = iter(torch.utils.data.DataLoader(Images(), batch_size=64, **kw))

    def step():
        x, y = next(it)
        classify_step(model, opt, x.to(DEV, non_blocking=fixed), y.to(DEV, non_blocking=fixed))

    return step


def case_launch_conv(fixed):
    model = built(convnet([16, 16, 16]))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(2, 3, 16, 16, device=DEV), torch.randint(0, 10, (2,), device=DEV)

    eager = static_step(model, opt, loss_of(lambda model, x, y: F.cross_entropy(model(x), y)), x, y)
    return in_graph(eager) if fixed and not ARGS.graph else eager  # --graph: main() captures it


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--chunks", type=int, default=3, help="timing chunks (median of their mean step)")
    p.add_argument("--workers", type=int, default=8, help="dataloader --fixed: loader worker processes")
    p.add_argument("--loader-width", type=int, choices=(128, 256, 512, 1024), default=1024,
                   help="dataloader: columns each item builds on the CPU (the default 1024: 8 workers do "
                        "not keep up on 16 CPUs; 128: an eighth of the CPU work, they do)")
    p.add_argument("--attn-seq", type=int, default=2048, help="attention: sequence length (divides 16384)")
    p.add_argument("--attn-heads", type=int, default=16, help="attention: heads")
    p.add_argument("--attn-dmodel", type=int, default=1024, help="attention: model width")
    p.add_argument("--batch", type=int,
                   help="tolist_layers, adam_loop, grad_norms: the batch (default 4096, 8192, 2048): how long "
                        "each layer runs on the GPU against the host's time to issue it, which sets what the planted "
                        "cause costs")
    p.add_argument("--compile", action="store_true", help="the model in torch.compile (the next fix: fusion)")
    p.add_argument("--reduce-overhead", action="store_true",
                   help="forward, loss and backward in torch.compile(mode='reduce-overhead'): CUDA graphs of them, "
                        "the rest of the step eager (launch overhead where the step cannot be captured whole)")
    p.add_argument("--graph", action="store_true", help="the step in a CUDA graph (the next fix: launches)")
    p.add_argument("--bf16", action="store_true",
                   help="the step under torch.autocast(bfloat16), built so (the next fix: fp32 matrix math)")
    p.add_argument("--compare", choices=("compile", "reduce_overhead", "graph", "bf16", *ONLY_CASE),
                   help="time the program without and with this fix, chunks alternating in one process "
                        "(no_host_work: item without its per-step host work; no_input: dataloader reusing its "
                        "first batch, the input hidden entirely)")
    a = p.parse_args()
    ARGS.__dict__.update(vars(a))
    if a.compare in ONLY_CASE and a.case != ONLY_CASE[a.compare]:
        p.error(f"--compare {a.compare}: only the {ONLY_CASE[a.compare]} case")
    if (a.graph or a.compare == "graph") and a.case not in GRAPH_CASES:
        p.error(f"--graph: the {a.case} step has host syncs or host inputs; graph cases: {', '.join(GRAPH_CASES)}")
    variants = [{}] if a.compare is None else [{a.compare: False}, {a.compare: True}]
    steps = []
    autocast = []  # each variant's: bf16 autocast while it is built (a CUDA graph captures it) and runs
    for v in variants:
        ARGS.__dict__.update(v)
        torch.manual_seed(0)
        autocast.append(ARGS.bf16)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=ARGS.bf16):
            step = CASES[a.case](a.fixed)
            if ARGS.graph:
                step = in_graph(step)
            for _ in range(a.warmup):
                step()
        torch.cuda.synchronize()
        steps.append(step)
    # Steps are timed in chunks with a device sync only at chunk ends, so the timing adds no
    # sync inside a chunk (a sync after every step would drain the queue every step).
    chunk = max(1, a.steps // a.chunks)
    times = [[] for _ in steps]
    for _ in range(a.chunks):
        for step, t, bf16 in zip(steps, times, autocast):
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                for _ in range(chunk):
                    step()
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3 / chunk)
    out = {"case": a.case, "fixed": a.fixed, "compile": a.compile, "reduce_overhead": a.reduce_overhead,
           "graph": a.graph, "bf16": a.bf16,
           "step_ms": round(statistics.median(times[0]), 4), "steps": chunk * a.chunks,
           "chunk_ms": [round(t, 4) for t in times[0]]}
    if a.compare:
        with_ms = statistics.median(times[1])
        out.update(compare=a.compare, step_ms_with=round(with_ms, 4),
                   chunk_ms_with=[round(t, 4) for t in times[1]],
                   speedup=round(out["step_ms"] / with_ms, 4))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
