#!/usr/bin/env python3
"""Programs shaped like what users run, for the non-intrusion matrix (validation/non_intrusion/run.py).

usage: programs.py ROW [--steps N] --result FILE

Each row trains or serves a small random-init model for N steps and writes one JSON object to
FILE (never to stdout, so a traced run's output stays the program's): its own per-step wall
times in ms (each step ends with a host read of its result, as most loops do), its first 20
losses or outputs, and dynamo's counters (graphs compiled, graph breaks) for comparison
between a traced and an untraced run. Deterministic: the same seed, the same data.
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn

ROWS = ["eager", "compile", "autotune", "reduce_overhead", "module_compile", "compiled_fn", "cuda_graph", "amp",
        "ddp", "fsdp2", "hf", "inference", "plain_decode", "layer_loop", "generator", "short",
        "launch_heavy", "python_optimizer", "gan", "compiled_opt",
        "closure", "nvtx"]


def mlp(width=1024, depth=8):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers).cuda()


def batch(width=1024, rows=256):
    g = torch.Generator(device="cuda").manual_seed(1)
    return (torch.randn(rows, width, device="cuda", generator=g), torch.randn(rows, width, device="cuda", generator=g))


def train(model, steps, out, opt=None, step_fn=None, width=1024):
    x, y = batch(width)
    if step_fn is None:
        opt = opt or torch.optim.AdamW(model.parameters(), lr=1e-4)

    def default_step():
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    step_fn = step_fn or default_step
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step_fn()
        out["losses"].append(loss.item())
        out["step_ms"].append((time.perf_counter() - t0) * 1e3)


def row_cuda_graph(steps, out):
    model = mlp()
    x, y = batch()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm-up on a side stream, as the CUDA-graph docs show
            opt.zero_grad(set_to_none=True)
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = nn.functional.mse_loss(model(x), y)
        static_loss.backward()
        opt.step()
    for _ in range(steps):
        t0 = time.perf_counter()
        g.replay()
        out["losses"].append(static_loss.item())
        out["step_ms"].append((time.perf_counter() - t0) * 1e3)


def row_amp(steps, out):
    model = mlp()
    x, y = batch()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss

    train(model, steps, out, opt, step)


def init_one_process_group():
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("nccl", rank=0, world_size=1)
    return dist


def row_hf(steps, out):
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=512, n_head=8, vocab_size=8192, n_positions=256)).cuda()
    g = torch.Generator(device="cuda").manual_seed(1)
    ids = torch.randint(0, 8192, (16, 256), device="cuda", generator=g)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    train(model, steps, out, opt, step)


def row_inference(steps, out):
    model = mlp()
    x, _ = batch()
    with torch.inference_mode():
        for _ in range(steps):
            t0 = time.perf_counter()
            out["losses"].append(model(x).float().mean().item())
            out["step_ms"].append((time.perf_counter() - t0) * 1e3)


def decode_weights(width=2048, depth=12, vocab=32000):
    g = torch.Generator(device="cuda").manual_seed(1)
    w = [torch.randn(width, width, device="cuda", generator=g, dtype=torch.bfloat16) / width**0.5 for _ in range(depth)]
    emb = torch.randn(vocab, width, device="cuda", generator=g, dtype=torch.bfloat16)
    return w, emb


def row_plain_decode(steps, out):
    # No nn.Module, no optimizer: a decode loop of plain tensor functions, batch 1.
    w, emb = decode_weights()
    tok = torch.zeros(1, dtype=torch.long, device="cuda")
    for _ in range(steps):
        t0 = time.perf_counter()
        h = emb[tok]
        for layer in w:
            h = torch.nn.functional.silu(h @ layer) + h
        tok = torch.argmax(h @ emb.T, dim=-1)
        out["losses"].append(float(tok.item()))
        out["step_ms"].append((time.perf_counter() - t0) * 1e3)


def row_layer_loop(steps, out):
    # Layers called one by one from the loop, statistics read with .tolist() each step.
    m = nn.ModuleList(nn.Linear(2048, 2048) for _ in range(10)).cuda()
    x, _ = batch(2048, 512)
    with torch.no_grad():
        for _ in range(steps):
            t0 = time.perf_counter()
            h = x
            for i in range(10):
                h = torch.relu(m[i](h))
            stats = h.mean(dim=1).tolist()
            out["losses"].append(stats[0])
            out["step_ms"].append((time.perf_counter() - t0) * 1e3)


def row_generator(steps, out):
    w, emb = decode_weights()

    def generate(n):
        tok = torch.zeros(1, dtype=torch.long, device="cuda")
        for _ in range(n):
            h = emb[tok]
            for layer in w:
                h = torch.nn.functional.silu(h @ layer) + h
            tok = torch.argmax(h @ emb.T, dim=-1)
            yield tok

    t0 = time.perf_counter()
    for tok in generate(steps):
        out["losses"].append(float(tok.item()))
        now = time.perf_counter()
        out["step_ms"].append((now - t0) * 1e3)
        t0 = now


def row_python_optimizer(steps, out):
    """A hand-written Adam over each parameter in a Python loop (as custom optimizers and older
    code are written): 24 layers of 512, 49 parameters, about 10 small kernels each per step,
    on top of forward and backward; most of the step is the host issuing them."""
    model = nn.Sequential(*[m for _ in range(24) for m in (nn.Linear(512, 512), nn.ReLU())], nn.Linear(512, 512)).cuda()
    params = list(model.parameters())
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    x, y = batch(512)
    t = [0]

    def step():
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        t[0] += 1
        b1, b2, lr = 0.9, 0.999, 1e-4
        with torch.no_grad():
            for p, mi, vi in zip(params, m, v):
                mi.mul_(b1).add_(p.grad, alpha=1 - b1)
                vi.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                denom = (vi / (1 - b2 ** t[0])).sqrt_().add_(1e-8)
                p.addcdiv_(mi, denom, value=-lr / (1 - b1 ** t[0]))
                p.grad = None
        return loss

    return train(model, steps, out, step_fn=step, width=512)


def row_gan(steps, out):
    """Two optimizers an iteration: a discriminator's step, then a generator's (a GAN)."""
    gen = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 512)).cuda()
    disc = nn.Sequential(nn.Linear(512, 1024), nn.LeakyReLU(0.2), nn.Linear(1024, 1024), nn.LeakyReLU(0.2),
                         nn.Linear(1024, 1)).cuda()
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    g = torch.Generator(device="cuda").manual_seed(1)
    real = torch.randn(256, 512, device="cuda", generator=g)
    z = torch.randn(256, 256, device="cuda", generator=g)
    ones, zeros = torch.ones(256, 1, device="cuda"), torch.zeros(256, 1, device="cuda")
    bce = nn.functional.binary_cross_entropy_with_logits

    def step():
        fake = gen(z)
        loss_d = bce(disc(real), ones) + bce(disc(fake.detach()), zeros)
        opt_d.zero_grad(set_to_none=True)
        loss_d.backward()
        opt_d.step()
        loss_g = bce(disc(fake), ones)
        opt_g.zero_grad(set_to_none=True)
        loss_g.backward()
        opt_g.step()
        return loss_g

    train(gen, steps, out, opt_g, step)


def row_compiled_opt(steps, out):
    """The optimizer step compiled on its own, as PyTorch's recipe for compiling the optimizer
    shows (`torch.compile` of a function that calls `opt.step()`)."""
    model = mlp()
    x, y = batch()
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-4))

    @torch.compile(fullgraph=False)
    def opt_step():
        opt.step()

    def step():
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt_step()
        opt.zero_grad(set_to_none=True)
        return loss

    train(model, steps, out, opt, step)


def row_closure(steps, out):
    """The forward and backward run inside `opt.step(closure)`, as PyTorch Lightning's automatic
    optimisation and LBFGS run them."""
    model = mlp()
    x, y = batch()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def closure():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    train(model, steps, out, opt, lambda: opt.step(closure))


def row_nvtx(steps, out):
    """The program's own NVTX ranges around each phase of the step, as Megatron-LM and NeMo
    emit them: they go on after a bounded window closes."""
    model = mlp()
    x, y = batch()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    nvtx = torch.cuda.nvtx

    def step():
        nvtx.range_push("forward")
        loss = nn.functional.mse_loss(model(x), y)
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        nvtx.range_pop()
        return loss

    train(model, steps, out, opt, step)


def run_row(row, steps, out):
    torch.manual_seed(0)
    if row == "eager":
        return train(mlp(), steps, out)
    if row == "compile":
        return train(torch.compile(mlp()), steps, out)
    if row == "autotune":
        return train(torch.compile(mlp(), mode="max-autotune-no-cudagraphs"), steps, out)
    if row == "reduce_overhead":
        return train(torch.compile(mlp(), mode="reduce-overhead"), steps, out)
    if row == "module_compile":
        model = mlp()
        model.compile()
        return train(model, steps, out)
    if row == "compiled_fn":
        model = mlp()
        x, y = batch()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        @torch.compile
        def loss_fn(x, y):
            return nn.functional.mse_loss(model(x), y)

        def step():
            loss = loss_fn(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        return train(model, steps, out, opt, step)
    if row == "cuda_graph":
        return row_cuda_graph(steps, out)
    if row == "amp":
        return row_amp(steps, out)
    if row == "ddp":
        dist = init_one_process_group()
        from torch.nn.parallel import DistributedDataParallel

        train(DistributedDataParallel(mlp()), steps, out)
        dist.destroy_process_group()
        return None
    if row == "fsdp2":
        dist = init_one_process_group()
        from torch.distributed.fsdp import fully_shard

        model = mlp()
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        train(model, steps, out)
        dist.destroy_process_group()
        return None
    if row == "hf":
        return row_hf(steps, out)
    if row == "inference":
        return row_inference(steps, out)
    if row == "plain_decode":
        return row_plain_decode(steps, out)
    if row == "layer_loop":
        return row_layer_loop(steps, out)
    if row == "generator":
        return row_generator(steps, out)
    if row == "short":
        # A 6-layer MLP with SGD: well under a second of GPU work.
        model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(512, 512), nn.ReLU())]).cuda()
        return train(model, steps, out, torch.optim.SGD(model.parameters(), lr=1e-3), width=512)
    if row == "launch_heavy":
        # About 250k tiny launches a second: a step is 1000 in-place adds on a small tensor.
        x = torch.zeros(16, device="cuda")
        for _ in range(steps):
            t0 = time.perf_counter()
            for _ in range(1000):
                x.add_(1)
            out["losses"].append(x[0].item())
            out["step_ms"].append((time.perf_counter() - t0) * 1e3)
        return None
    if row == "python_optimizer":
        return row_python_optimizer(steps, out)
    if row == "gan":
        return row_gan(steps, out)
    if row == "compiled_opt":
        return row_compiled_opt(steps, out)
    if row == "closure":
        return row_closure(steps, out)
    if row == "nvtx":
        return row_nvtx(steps, out)
    raise SystemExit(f"unknown row {row}; one of {', '.join(ROWS)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("row", choices=ROWS)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--result", required=True)
    a = ap.parse_args()
    out = {"row": a.row, "step_ms": [], "losses": []}
    run_row(a.row, a.steps, out)
    torch.cuda.synchronize()
    try:
        from torch._dynamo.utils import counters

        out["dynamo"] = {"unique_graphs": counters["stats"].get("unique_graphs", 0),
                         "graph_breaks": sum(counters["graph_break"].values()),
                         "recompiles": sum(counters["recompiles"].values()) if "recompiles" in counters else 0}
    except Exception as e:  # a torch without dynamo
        out["dynamo"] = {"error": str(e)}
    with open(a.result, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
