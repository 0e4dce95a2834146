#!/usr/bin/env python3
"""A zoo of small PyTorch training programs, each with one planted cause of lost GPU time.

    python3 pyzoo.py CASE [--fixed] [--compile] [--graph] [--compare compile|graph] [--steps N]

Plain PyTorch as users write it: no profiler, no annotations, nothing of gpuscope. `--fixed`
applies the usual fix for the planted cause and changes nothing else. The program prints one
JSON line: {"case", "fixed", "step_ms" (the median over --chunks chunks of the mean step
time, wall clock, with a device sync only at the end of each chunk), "steps", "chunk_ms"}.

The next fix, to measure what gpuscope says about a fixed program: `--compile` compiles forward,
loss and backward with torch.compile (kernel fusion), `--graph` captures the whole step in a CUDA graph (launch
overhead; cases whose step has static inputs and no host sync). `--compare FIX` (compile,
graph, no_host_work, no_input) builds the program twice, without and with that fix, and times
their chunks alternately in one process, so the two share the host's noise; it adds
"step_ms_with" and "speedup".

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
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = "cuda"
ARGS = argparse.Namespace(workers=8, loader_width=1024, attn_seq=2048, attn_heads=16, attn_dmodel=1024,
                          compile=False, graph=False, no_host_work=False, no_input=False)  # main() sets these
GRAPH_CASES = ("launch", "optimizer", "fp32", "attention", "healthy")
ONLY_CASE = {"no_host_work": "item", "no_input": "dataloader"}  # --compare fixes of one case


def built(model):
    """The model on the GPU."""
    return model.to(DEV)


def loss_of(fn):
    """The step's forward and loss, fn(model, *inputs) -> loss, as one compiled function under
    --compile (its backward compiled with it), so every elementwise chain of forward, loss and
    backward is in reach of the fusion; the optimizer stays as it is."""
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


def train_step(model, opt, x, autocast=True):
    """One step on the zoo's stand-in objective (the squared output), bf16 autocast unless
    told otherwise; returns the loss."""
    fn = _LOSSES.get(id(model))
    if fn is None:
        fn = _LOSSES[id(model)] = loss_of(_squared_output)
    loss = fn(model, x, autocast)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


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
    def __init__(self, d, heads, fused):
        super().__init__()
        self.heads, self.fused = heads, fused
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.qkv(x).split(d, dim=2))
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            mask = torch.ones(t, t, device=x.device, dtype=torch.bool).tril()
            y = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1) @ v
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
    p.add_argument("--compile", action="store_true", help="the model in torch.compile (the next fix: fusion)")
    p.add_argument("--graph", action="store_true", help="the step in a CUDA graph (the next fix: launches)")
    p.add_argument("--compare", choices=("compile", "graph", *ONLY_CASE),
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
    for v in variants:
        ARGS.__dict__.update(v)
        torch.manual_seed(0)
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
        for step, t in zip(steps, times):
            t0 = time.perf_counter()
            for _ in range(chunk):
                step()
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3 / chunk)
    out = {"case": a.case, "fixed": a.fixed, "compile": a.compile, "graph": a.graph,
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
