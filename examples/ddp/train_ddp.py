#!/usr/bin/env python3
"""Data-parallel GPT-2-small training on random tokens, with switches that plant the
multi-GPU problems gpuscope names, and their fixes.

Run under torchrun, one process per GPU:

  gpuscope run -- torchrun --nproc_per_node 2 examples/ddp/train_ddp.py
  gpuscope run -- torchrun --nproc_per_node 2 examples/ddp/train_ddp.py --no-overlap
  gpuscope run -- torchrun --nproc_per_node 2 examples/ddp/train_ddp.py --straggler

  (default)          DistributedDataParallel: gradient buckets (--bucket-cap-mb) all-reduce
                     while backward still runs (the healthy case)
  --no-overlap       no DDP: after backward() the gradients are all-reduced by hand, in
                     buckets of the same size, so no communication overlaps compute
                     (finding: exposed-communication; the fix is the default)
  --straggler        rank --straggler-rank does --straggler-ms of Python host work before
                     each step, so every other rank waits for it at the first all-reduce
                     (finding: straggler; the fix is to drop the switch)

Rank 0 prints one JSON line: step time, tokens/s for the job and per GPU, MFU (6N + 12*L*H*Q*T
FLOPs per token, PaLM appendix B; peak 989.4 TFLOP/s bf16 dense unless --peak-tflops). With
--profile PREFIX each rank writes a PyTorch profiler trace PREFIX.rank<N>.json.gz of
--profile-steps steps (`gpuscope analyze` reads the folder as one job).
"""
import argparse
import json
import os
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the timing (default 5)")
    p.add_argument("--batch", type=int, default=8, help="sequences per GPU per step (default 8)")
    p.add_argument("--seq", type=int, default=1024, help="sequence length (default 1024)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0,
                   help="gradient bucket size, DDP's and the hand all-reduce's (default 25)")
    p.add_argument("--no-overlap", action="store_true", help="all-reduce gradients by hand after backward")
    p.add_argument("--straggler", action="store_true", help="one rank does extra host work each step")
    p.add_argument("--straggler-rank", type=int, default=1, help="which rank straggles (default 1)")
    p.add_argument("--straggler-ms", type=float, default=50.0, help="its host work per step (default 50)")
    p.add_argument("--peak-tflops", type=float, default=989.4, help="dense bf16 peak per GPU")
    p.add_argument("--backend", choices=["nccl", "gloo"], default="nccl",
                   help="gloo lets several ranks share one GPU (a smoke test, not a benchmark)")
    p.add_argument("--profile", metavar="PREFIX", help="write PREFIX.rank<N>.json.gz profiler traces")
    p.add_argument("--profile-steps", type=int, default=5)
    a = p.parse_args(argv)
    for name in ("steps", "batch", "seq", "layers", "d_model", "heads", "vocab"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.d_model % a.heads:
        p.error("--d-model must be a multiple of --heads")
    if not 0 <= a.warmup < a.steps:
        p.error("--warmup must be at least 0 and less than --steps")
    if a.bucket_cap_mb <= 0:
        p.error("--bucket-cap-mb must be positive")
    if a.straggler_ms < 0:
        p.error("--straggler-ms must not be negative")
    return a


def buckets(sizes_bytes, cap_bytes):
    """Groups tensors (by index) into buckets of at most cap_bytes, in reverse order (the order
    backward produces gradients, as DDP buckets them); a tensor larger than the cap is a bucket
    of its own."""
    out, cur, cur_bytes = [], [], 0
    for i in reversed(range(len(sizes_bytes))):
        if cur and cur_bytes + sizes_bytes[i] > cap_bytes:
            out.append(cur)
            cur, cur_bytes = [], 0
        cur.append(i)
        cur_bytes += sizes_bytes[i]
    if cur:
        out.append(cur)
    return out


def straggles(args, rank, world_size):
    """Whether this rank does the planted host work (only in a job of 2+ ranks)."""
    return args.straggler and world_size > 1 and rank == args.straggler_rank % world_size


def host_work(ms):
    """Python work on the host for `ms` milliseconds (a tokeniser or augmentation stand-in)."""
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def flops_per_token(n_params, args):
    return 6 * n_params + 12 * args.layers * args.heads * (args.d_model // args.heads) * args.seq


def main(argv=None):
    args = parse_args(argv)
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank)) % max(1, torch.cuda.device_count())
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d_model
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = (z.view(b, t, args.heads, d // args.heads).transpose(1, 2)
                       for z in self.qkv(self.ln1(x)).split(d, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(args.vocab, args.d_model)
            self.wpe = nn.Embedding(args.seq, args.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.ln_f = nn.LayerNorm(args.d_model)
            self.head = nn.Linear(args.d_model, args.vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

    model = GPT().to(dev)
    n_params = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    params = [p for p in model.parameters() if p.requires_grad]
    if args.no_overlap:
        plan = buckets([p.numel() * p.element_size() for p in params], args.bucket_cap_mb * 2**20)
        train_model = model
    else:
        train_model = DDP(model, device_ids=[local], bucket_cap_mb=args.bucket_cap_mb,
                          gradient_as_bucket_view=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def allreduce_by_hand():
        for bucket in plan:
            grads = [params[i].grad for i in bucket]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat /= world
            off = 0
            for g in grads:
                g.copy_(flat[off:off + g.numel()].view_as(g))
                off += g.numel()

    def step():
        if straggles(args, rank, world):
            host_work(args.straggler_ms)
        idx = torch.randint(args.vocab, (args.batch, args.seq + 1), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = train_model(idx[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, args.vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        if args.no_overlap:
            allreduce_by_hand()
        opt.step()
        opt.zero_grad(set_to_none=False)

    prof = None
    if args.profile:
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=args.profile_steps, repeat=1),
            record_shapes=True)
        prof.start()
    for i in range(args.steps):
        if i == args.warmup:
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
        step()
        if prof:
            prof.step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    if prof:
        prof.stop()
        prof.export_chrome_trace("%s.rank%d.json.gz" % (args.profile, rank))
    timed = args.steps - args.warmup
    step_s = elapsed / timed
    tokens = args.batch * args.seq
    if rank == 0:
        print(json.dumps({
            "world_size": world, "overlap": not args.no_overlap, "straggler": args.straggler,
            "step_ms": step_s * 1e3, "tokens_per_s": tokens * world / step_s,
            "tokens_per_s_per_gpu": tokens / step_s,
            "mfu_pct": 100 * flops_per_token(n_params, args) * tokens / step_s / (args.peak_tflops * 1e12),
            "params": n_params}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
