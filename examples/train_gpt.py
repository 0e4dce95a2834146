#!/usr/bin/env python3
"""A small GPT-2-style training loop whose inefficiencies can be switched on and off.

Used to record the PyTorch profiler traces in testdata/ and to check gpuscope's numbers
against a known workload. Every knob mirrors a finding gpuscope makes:

  --precision fp32|bf16        fp32 GEMMs vs autocast bf16 tensor cores
  --attention manual|flash     unfused softmax(QK^T)V vs scaled_dot_product_attention
  --optimizer per-tensor|fused AdamW(foreach=False) vs AdamW(fused=True)
  --input sync|async           DataLoader in the main process, pageable blocking copies
                               vs worker processes, pinned memory, non_blocking copies
  --host-work-ms N             CPU time each batch takes to prepare (tokenisation stand-in)
  --compile                    torch.compile the model
  --item-every-step            call loss.item() every step (a host sync)

It prints one JSON line with step time, tokens/s and MFU (6N + 12*L*H*Q*T FLOPs per token,
PaLM appendix B, N without position embeddings; peak 989.4 TFLOP/s bf16 dense unless
--peak-tflops). With --profile FILE it also writes a PyTorch profiler trace of --profile-steps
steps (record_shapes=True), gzipped if FILE ends in .gz.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, attention):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_out = nn.Linear(4 * d, d)

    def attend(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.attention == "flash":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            mask = torch.ones(t, t, device=x.device, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))

    def forward(self, x):
        x = x + self.attend(self.ln1(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, layers, heads, d, attention):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, attention) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # Weight tying, as GPT-2.

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class SyntheticText(torch.utils.data.Dataset):
    """Token windows from a fixed pseudo-random corpus; each item costs host_work_ms of CPU."""

    def __init__(self, vocab, seq, batch, host_work_ms, length=10_000):
        self.vocab, self.seq, self.batch = vocab, seq, batch
        self.host_work_s = host_work_ms / 1000.0
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        deadline = time.perf_counter() + self.host_work_s
        g = torch.Generator().manual_seed(i)
        tokens = torch.randint(0, self.vocab, (self.batch, self.seq + 1), generator=g)
        while time.perf_counter() < deadline:  # Stand-in for tokenisation and augmentation.
            pass
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def model_flops_per_token(n_params, layers, heads, d, seq):
    return 6 * n_params + 12 * layers * heads * (d // heads) * seq


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    p.add_argument("--attention", choices=["manual", "flash"], default="flash")
    p.add_argument("--optimizer", choices=["per-tensor", "fused"], default="fused")
    p.add_argument("--input", choices=["sync", "async"], default="async")
    p.add_argument("--host-work-ms", type=float, default=0.0)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--item-every-step", action="store_true")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--dmodel", type=int, default=768)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--peak-tflops", type=float, default=989.4)
    p.add_argument("--profile", help="write a PyTorch profiler trace here")
    p.add_argument("--profile-steps", type=int, default=3)
    p.add_argument("--label", default="")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 here.
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model = GPT(args.vocab, args.seq, args.layers, args.heads, args.dmodel, args.attention).to(dev)
    n_params = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1,
                            foreach=False if args.optimizer == "per-tensor" else None,
                            fused=args.optimizer == "fused")
    step_fn = torch.compile(model) if args.compile else model

    data = SyntheticText(args.vocab, args.seq, args.batch, args.host_work_ms)
    if args.input == "sync":
        loader = torch.utils.data.DataLoader(data, batch_size=None, shuffle=False, num_workers=0)
    else:
        loader = torch.utils.data.DataLoader(data, batch_size=None, shuffle=False, num_workers=4,
                                             pin_memory=True, prefetch_factor=4,
                                             persistent_workers=True)
    batches = iter(loader)

    def train_step():
        # An NVTX range per step lets `gpuscope run` (and Nsight) find step boundaries.
        torch.cuda.nvtx.range_push("train_step")
        x, y = next(batches)
        x = x.to(dev, non_blocking=args.input == "async")
        y = y.to(dev, non_blocking=args.input == "async")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = step_fn(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.item_every_step:
            loss.item()
        torch.cuda.nvtx.range_pop()
        return loss

    for _ in range(args.warmup):
        train_step()
    torch.cuda.synchronize()

    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = train_step()
    final_loss = loss.item()
    torch.cuda.synchronize()
    step_s = (time.perf_counter() - t0) / args.steps

    tokens_per_step = args.batch * args.seq
    flops_per_token = model_flops_per_token(n_params, args.layers, args.heads, args.dmodel, args.seq)
    result = {
        "label": args.label, "precision": args.precision, "attention": args.attention,
        "optimizer": args.optimizer, "input": args.input, "compile": args.compile,
        "batch": args.batch, "seq": args.seq, "layers": args.layers, "params": n_params,
        "step_ms": step_s * 1e3, "tokens_per_s": tokens_per_step / step_s,
        "model_flops_per_step": flops_per_token * tokens_per_step,
        "mfu_pct": 100 * flops_per_token * tokens_per_step / step_s / (args.peak_tflops * 1e12),
        "loss": final_loss, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
    }

    if args.profile:
        from torch.profiler import ProfilerActivity, profile, schedule
        sched = schedule(wait=0, warmup=1, active=args.profile_steps, repeat=1)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                     record_shapes=True) as prof:
            for _ in range(1 + args.profile_steps):
                train_step()
                prof.step()
        torch.cuda.synchronize()
        prof.export_chrome_trace(args.profile)
        result["trace"] = args.profile
    print(json.dumps(result), flush=True)
    os._exit(0)  # Do not wait for persistent DataLoader workers to wind down.


if __name__ == "__main__":
    main()
