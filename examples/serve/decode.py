"""A GPT-2-small-shaped decoder serving a seeded Poisson stream of requests, for gpuscope's
serving findings (under-batched, scheduling-gap, tensor-unfriendly-shape).

Random weights, no downloads, no profiler. Each request's prompt is prefilled into its
KV-cache slot; decode iterations run every running request together (one token each), greedy
sampling, and the sampled tokens are read back on the host every iteration (as servers do).
Admitted requests are prefilled together in one forward pass; the KV cache is written with one
scatter per layer for the whole batch.

  python3 examples/serve/decode.py --scheduler continuous --batch 64 --rate 200 --vocab 50304

Prints one JSON line: tokens/s and p50/p99 per-token latency (ms; the first token counted from
the request's arrival).
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scheduler import SCHEDULERS, admit, percentile, poisson_stream, token_latencies_s  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

LAYERS, HEADS, DMODEL, MAX_POS = 12, 12, 768, 1024
HEAD_DIM = DMODEL // HEADS


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(DMODEL)
        self.qkv = torch.nn.Linear(DMODEL, 3 * DMODEL)
        self.proj = torch.nn.Linear(DMODEL, DMODEL)
        self.ln2 = torch.nn.LayerNorm(DMODEL)
        self.fc = torch.nn.Linear(DMODEL, 4 * DMODEL)
        self.out = torch.nn.Linear(4 * DMODEL, DMODEL)

    def forward(self, x, cache_k, cache_v, at):
        """x [B, T, C]; `at` holds the iteration's index tensors (see GPT.forward). The caches
        are [slots, H, MAX_POS, D]."""
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(DMODEL, dim=2)
        q, k, v = (z.view(b, t, HEADS, HEAD_DIM).transpose(1, 2) for z in (q, k, v))
        # One scatter per cache for the whole batch: [B, T] (slot, position) pairs.
        cache_k[at["slot_bt"], :, at["pos_bt"]] = k.transpose(1, 2)
        cache_v[at["slot_bt"], :, at["pos_bt"]] = v.transpose(1, 2)
        keys, values = cache_k[at["slots"], :, : at["span"]], cache_v[at["slots"], :, : at["span"]]
        y = F.scaled_dot_product_attention(q, keys, values, attn_mask=at["mask"])
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, DMODEL))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, DMODEL)
        self.wpe = torch.nn.Embedding(MAX_POS, DMODEL)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(DMODEL)
        self.head = torch.nn.Linear(DMODEL, vocab, bias=False)

    def forward(self, tokens, caches, slots, pos):
        """tokens [B, T] -> logits of the last position [B, vocab]. Request b's tokens sit at
        positions pos[b] .. pos[b]+T-1 of KV-cache slot slots[b]."""
        b, t = tokens.shape
        dev = tokens.device
        # The iteration's indices, built once and copied to the GPU once (as servers do).
        host = torch.tensor([list(slots), list(pos)], dtype=torch.long).pin_memory() if dev.type == "cuda" \
            else torch.tensor([list(slots), list(pos)], dtype=torch.long)
        slot_t, pos_t = host.to(dev, non_blocking=True)
        steps = torch.arange(t, device=dev)
        positions = pos_t[:, None] + steps[None, :]  # [B, T]
        span = max(pos) + t
        # Key j is visible to query i of request b when j <= pos[b] + i (and so j < its length).
        j = torch.arange(span, device=dev)
        at = {
            "slots": slot_t,
            "slot_bt": slot_t[:, None].expand(b, t),
            "pos_bt": positions,
            "span": span,
            "mask": (j[None, None, :] <= positions[:, :, None])[:, None],
        }
        x = self.wte(tokens) + self.wpe(positions)
        for block, (ck, cv) in zip(self.blocks, caches):
            x = block(x, ck, cv, at)
        return self.head(self.ln_f(x[:, -1]))


def serve(args):
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(args.seed)
    model = GPT(args.vocab).to(device=device, dtype=dtype).eval()
    slots = args.batch if args.scheduler != "one" else 1
    caches = [
        tuple(torch.zeros(slots, HEADS, MAX_POS, HEAD_DIM, device=device, dtype=dtype) for _ in range(2))
        for _ in range(LAYERS)
    ]
    gen = torch.Generator().manual_seed(args.seed)
    requests = poisson_stream(args.requests, args.rate, args.seed, (args.prompt, args.prompt),
                              (args.new_tokens, args.new_tokens))
    pending = list(requests)  # Not arrived yet, in arrival order.
    waiting, running = [], []  # running: [request, slot, position]
    # Each slot's last token stays on the GPU: an iteration's host work does not grow with the
    # batch (one gather and one scatter, not a tensor op per sequence).
    last = torch.zeros(slots, dtype=torch.long, device=device)
    free = list(range(slots))
    iterations = 0
    # cuDNN's attention builds a plan for every new key length (every decode iteration here), which
    # costs tens of ms per iteration until each length has been seen: servers use fixed-size or
    # paged attention kernels instead. The memory-efficient kernel takes any mask and length.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    with torch.inference_mode(), sdpa_kernel(backends):
        start = time.perf_counter()
        while pending or waiting or running:
            now = time.perf_counter() - start
            while pending and pending[0].arrival_s <= now:
                waiting.append(pending.pop(0))
            admitted = admit(args.scheduler, slots, waiting, running, bool(pending))
            if admitted:
                # The admitted requests' prompts are prefilled together, in one forward pass.
                for r in admitted:
                    waiting.remove(r)
                new_slots = [free.pop() for _ in admitted]
                prompts = torch.randint(0, args.vocab, (len(admitted), args.prompt), generator=gen).to(device)
                first = model(prompts, caches, new_slots, [0] * len(admitted)).argmax(-1)
                last[torch.tensor(new_slots, device=device)] = first
                for i, r in enumerate(admitted):
                    running.append([r, new_slots[i], args.prompt])
            if not running:
                # Nothing to run: the host waits for the next arrival (a scheduling gap).
                if pending:
                    time.sleep(max(0.0, pending[0].arrival_s - (time.perf_counter() - start)))
                continue
            run_slots = [e[1] for e in running]
            slot_index = torch.tensor(run_slots, device=device)
            logits = model(last[slot_index].view(-1, 1), caches, run_slots, [e[2] for e in running])
            sampled = logits.argmax(-1)
            last[slot_index] = sampled
            sampled.tolist()  # The host reads the tokens back (stop checks, streaming).
            t = time.perf_counter() - start
            iterations += 1
            for e in running:
                e[0].generated += 1
                e[0].token_times_s.append(t)
                e[2] += 1
            for e in [e for e in running if e[0].done or e[2] >= MAX_POS]:
                running.remove(e)
                free.append(e[1])
        elapsed = time.perf_counter() - start
    lat = token_latencies_s(requests)
    tokens = sum(r.generated for r in requests)
    p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
    return {
        "scheduler": args.scheduler,
        "batch": args.batch,
        "rate": args.rate,
        "vocab": args.vocab,
        "requests": len(requests),
        "iterations": iterations,
        "tokens": tokens,
        "seconds": elapsed,
        "tokens_per_s": tokens / elapsed if elapsed > 0 else math.nan,
        "p50_token_ms": None if p50 is None else 1e3 * p50,
        "p99_token_ms": None if p99 is None else 1e3 * p99,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scheduler", choices=SCHEDULERS, default="continuous")
    p.add_argument("--batch", type=int, default=32, help="sequences per iteration (static, continuous)")
    p.add_argument("--rate", type=float, default=100.0, help="request arrivals per second (Poisson)")
    p.add_argument("--vocab", type=int, choices=(50257, 50304), default=50257)
    p.add_argument("--requests", type=int, default=128)
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens per request")
    p.add_argument("--new-tokens", type=int, default=64, help="tokens generated per request")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    if args.batch < 1 or args.rate <= 0 or args.prompt + args.new_tokens > MAX_POS:
        p.error("--batch >= 1, --rate > 0 and --prompt + --new-tokens <= 1024")
    print(json.dumps(serve(args)))


if __name__ == "__main__":
    main()
