"""A GPT-2-small-shaped decoder serving a seeded Poisson stream of requests, for gpuscope's
serving findings (under-batched, scheduling-gap, tensor-unfriendly-shape).

Random weights, no downloads, no profiler. Each request's prompt is prefilled into its
KV-cache slot; decode iterations run every running request together (one token each), greedy
sampling, and the sampled tokens are read back on the host every iteration (as servers do).
Admitted requests are prefilled together in one forward pass; the KV cache is written with one
scatter per layer for the whole batch.

  python3 examples/serve/decode.py --scheduler continuous --batch 64 --rate 200 --vocab 50304
  python3 examples/serve/decode.py --scheduler continuous --batch 256 --rate 1000000 --graph

--graph (continuous only) decodes the way production servers do: one static-shape step over
every slot, reading the KV cache in place, captured once as a CUDA graph and replayed (see
StaticDecode). Without CUDA the same step runs eagerly. --overlap (with --graph) also queues
each iteration before reading the previous one's tokens, so the host's bookkeeping runs while
the GPU computes (asynchronous scheduling; see Readback). --compile (with --graph) compiles
the static step with torch.compile before it is captured: its elementwise chains fused.

Prints one JSON line: tokens/s and p50/p99 per-token latency (ms; the first token counted from
the request's arrival); "graph" says whether --graph's static step ran, "cuda_graph" whether
it ran as a replayed CUDA graph.
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

# GPT-2 small. Read when a model is built and run; tests shrink them with set_model_size.
LAYERS, HEADS, DMODEL, MAX_POS = 12, 12, 768, 1024
HEAD_DIM = DMODEL // HEADS


def set_model_size(layers, heads, dmodel, max_pos):
    """Sets the model's shape for models built after the call (tests use a small one)."""
    global LAYERS, HEADS, DMODEL, MAX_POS, HEAD_DIM
    LAYERS, HEADS, DMODEL, MAX_POS = layers, heads, dmodel, max_pos
    HEAD_DIM = dmodel // heads


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
        """x [B, T, C]; `at` holds the iteration's index tensors (see GPT.forward and
        StaticDecode). The caches are [slots, H, MAX_POS, D]; the batch's keys are
        cache[at["rows"], :, :span]: a gathered copy when rows is a slot tensor, the cache itself
        (a view) when rows is slice(None)."""
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(DMODEL, dim=2)
        q, k, v = (z.view(b, t, HEADS, HEAD_DIM).transpose(1, 2) for z in (q, k, v))
        # One scatter per cache for the whole batch: [B, T] (slot, position) pairs.
        cache_k[at["slot_bt"], :, at["pos_bt"]] = k.transpose(1, 2)
        cache_v[at["slot_bt"], :, at["pos_bt"]] = v.transpose(1, 2)
        keys, values = cache_k[at["rows"], :, : at["span"]], cache_v[at["rows"], :, : at["span"]]
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
            "rows": slot_t,
            "slot_bt": slot_t[:, None].expand(b, t),
            "pos_bt": positions,
            "span": span,
            "mask": (j[None, None, :] <= positions[:, :, None])[:, None],
        }
        return self.layers(tokens, positions, caches, at)

    def layers(self, tokens, positions, caches, at):
        """tokens and positions [B, T] -> logits of the last position [B, vocab], with the cache
        indices `at` already built (by forward, or once for the run by StaticDecode)."""
        x = self.wte(tokens) + self.wpe(positions)
        for block, (ck, cv) in zip(self.blocks, caches):
            x = block(x, ck, cv, at)
        return self.head(self.ln_f(x[:, -1]))


class StaticDecode(torch.nn.Module):
    """One decode iteration over every KV-cache slot with shapes fixed for the run (--graph).

    Why it exists: the eager step (GPT.forward over the running sequences) builds its indices on
    the host, copies every running sequence's keys and values out of the cache in every layer
    (padded to the longest), and issues ~240 small kernels from Python per iteration; at
    saturation that loop is launch-bound and the copy is over half of its GPU time. Production
    servers (vLLM, TensorRT-LLM) run decode with static shapes in CUDA graphs and read the cache
    in place; this is that mode, so gpuscope has a healthy server to be measured on.

    Every slot is computed every iteration; inactive slots compute garbage that nobody reads.
    The keys are cache[:, :, :span], a view, with span fixed for the run; a mask built on the
    device from the per-slot positions hides the keys after each slot's position. The new
    token's key and value are written in place at (slot, pos[slot]) for every slot. The inputs
    are static tensors updated in place: `tokens` [slots, 1] (each slot's last token) and `pos`
    [slots] (its position); the step writes the sampled tokens back into `tokens` and advances
    `pos`, so the host writes them only when it admits a request. Positions are clamped to the
    span: an inactive slot keeps writing its garbage at the last position, which a sequence
    using that slot later writes before it reads it.

    On CUDA the step is captured once as a CUDA graph (after a warm-up on a side stream, as the
    torch.cuda.CUDAGraph documentation shows) and replayed; elsewhere it runs eagerly. Calling
    the module (rather than a plain method) makes each iteration, and each warm-up and the
    capture, one forward pass of an outermost module: how gpuscope's Python bootstrap counts
    serving steps.
    """

    def __init__(self, model, caches, slots, span, device, capture, compile_step=False):
        super().__init__()
        self.model, self.caches, self.span = model, caches, span
        if compile_step:
            # --compile: the step's elementwise chains fused by torch.compile (Inductor) before
            # the capture; CUDA graphs stay this class's own (no mode="reduce-overhead").
            self._step = torch.compile(self._step, dynamic=False)
        self.tokens = torch.zeros(slots, 1, dtype=torch.long, device=device)
        self.pos = torch.zeros(slots, dtype=torch.long, device=device)
        self.key_index = torch.arange(span, device=device)
        dtype = caches[0][0].dtype
        # The mask is additive, built once per iteration: given a boolean mask, SDPA converts it
        # in every layer (two more kernels each).
        self.visible_bias = torch.zeros((), dtype=dtype, device=device)
        self.hidden_bias = torch.full((), float("-inf"), dtype=dtype, device=device)
        self.slot_rows = torch.arange(slots, device=device)[:, None]
        self.logits = None  # [slots, vocab] after a step: a static output when captured.
        self.graph = None
        if capture:
            self._capture()

    def _step(self):
        pos = self.pos[:, None]  # [slots, 1]: one new token per slot.
        at = {
            "rows": slice(None),
            "slot_bt": self.slot_rows,
            "pos_bt": pos,
            "span": self.span,
            "mask": torch.where(self.key_index[None, :] <= pos, self.visible_bias,
                                self.hidden_bias)[:, None, None, :],  # [slots, 1, 1, span]
        }
        self.logits = self.model.layers(self.tokens, pos, self.caches, at)
        self.tokens.copy_(self.logits.argmax(-1, keepdim=True))
        self.pos.add_(1).clamp_(max=self.span - 1)

    def _capture(self):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        # Through the module call, as every iteration: each is one forward pass of an outermost
        # module to gpuscope, not one per inner module.
        with torch.cuda.stream(side):
            for _ in range(3):
                self()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: a CUDA call from another thread of the process (a tracer's, say) during
        # the capture neither breaks it nor is captured; only this thread issues the step's work.
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            self()
        self.graph = graph
        # The warm-up wrote garbage into slots that hold no request yet and advanced their
        # positions; admission sets both before a slot's outputs are read.
        self.pos.zero_()

    def admit(self, slot_index, first, position):
        """Slots `slot_index` (a device tensor), just prefilled, decode next from their first
        sampled tokens `first` at `position` (the prompt length)."""
        self.tokens[slot_index, 0] = first
        self.pos[slot_index] = position

    def forward(self):
        """Runs one iteration; returns every slot's sampled token ([slots], on the device)."""
        if self.graph is not None:
            self.graph.replay()
        else:
            self._step()
        return self.tokens[:, 0]


class Readback:
    """--overlap: an iteration's sampled tokens are copied to the host asynchronously, and read
    after the next iteration is queued (as servers with asynchronous scheduling do), so the GPU
    does not wait for the host's per-iteration bookkeeping. Two host buffers alternate."""

    def __init__(self, slots, device):
        cuda = device.type == "cuda"
        self.buffers = [torch.empty(slots, dtype=torch.long, pin_memory=cuda) for _ in range(2)]
        self.events = [torch.cuda.Event() if cuda else None for _ in range(2)]
        self.turn = 0
        self.pending = None  # The queued iteration: (buffer index, the entries it runs for).

    def advance(self, step, running):
        """Queues one iteration of `step` for the `running` entries and the copy of its tokens,
        then returns the previous iteration's (entries, tokens), waiting for its copy; None for
        the first."""
        i = self.turn
        self.turn ^= 1
        self.buffers[i].copy_(step(), non_blocking=True)
        if self.events[i] is not None:
            self.events[i].record()
        previous, self.pending = self.pending, (i, list(running))
        if previous is None:
            return None
        j, entries = previous
        if self.events[j] is not None:
            self.events[j].synchronize()
        by_slot = self.buffers[j].tolist()
        return entries, [by_slot[e[1]] for e in entries]


def serve(args, tokens_out=None, ends_out=None):
    """Serves the request stream that `args` describes; returns the result (the JSON line's
    fields). When `tokens_out` is a dict it receives each request id's greedy tokens: the
    prefill's, then one per decode iteration (for tests). When `ends_out` is a list it receives
    each decode iteration's end, in seconds from the start of serving."""
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(args.seed)
    model = GPT(args.vocab).to(device=device, dtype=dtype).eval()
    slots = args.batch if args.scheduler != "one" else 1
    caches = [
        tuple(torch.zeros(slots, HEADS, MAX_POS, HEAD_DIM, device=device, dtype=dtype) for _ in range(2))
        for _ in range(LAYERS)
    ]
    requests = poisson_stream(args.requests, args.rate, args.seed, (args.prompt, args.prompt),
                              (args.new_tokens, args.new_tokens))
    # Every request's prompt drawn up front, so a request's tokens do not depend on which others
    # it was admitted with.
    prompts = torch.randint(0, args.vocab, (len(requests), args.prompt),
                            generator=torch.Generator().manual_seed(args.seed))
    pending = list(requests)  # Not arrived yet, in arrival order.
    waiting, running = [], []  # running: [request, slot, position]
    # Each slot's last token stays on the GPU: an iteration's host work does not grow with the
    # batch (one gather and one scatter, not a tensor op per sequence).
    last = torch.zeros(slots, dtype=torch.long, device=device)
    free = list(range(slots))
    iterations = 0
    step = None
    # cuDNN's attention builds a plan for every new key length (every decode iteration here), which
    # costs tens of ms per iteration until each length has been seen: servers use fixed-size or
    # paged attention kernels instead. The memory-efficient kernel takes any mask and length.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def record(entries, sampled, t):
        """Each running entry's token of one iteration, read at time t; how many were kept."""
        kept = 0
        for e, token in zip(entries, sampled):
            if e[0].done:  # Overlapped: finished one iteration earlier; this token is dropped.
                continue
            kept += 1
            e[0].generated += 1
            e[0].token_times_s.append(t)
            e[2] += 1
            if tokens_out is not None:
                tokens_out[e[0].rid].append(token)
        return kept

    def retire():
        for e in [e for e in running if e[0].done or e[2] >= MAX_POS]:
            running.remove(e)
            free.append(e[1])

    readback = None
    backends = [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    with torch.inference_mode(), sdpa_kernel(backends):
        if args.graph:  # Captured before the clock starts, as a server does at start-up.
            # The span a multiple of 16 (within the cache): the attention kernel's aligned mask.
            span = min(MAX_POS, -(-(args.prompt + args.new_tokens) // 16) * 16)
            step = StaticDecode(model, caches, slots, span, device, capture=device.type == "cuda",
                                compile_step=args.compile)
            readback = Readback(slots, device) if args.overlap else None
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
                batch = prompts[[r.rid for r in admitted]].to(device)
                first = model(batch, caches, new_slots, [0] * len(admitted)).argmax(-1)
                slot_index = torch.tensor(new_slots, device=device)
                if step is not None:
                    step.admit(slot_index, first, args.prompt)
                else:
                    last[slot_index] = first
                if tokens_out is not None:
                    tokens_out.update((r.rid, [t]) for r, t in zip(admitted, first.tolist()))
                for i, r in enumerate(admitted):
                    running.append([r, new_slots[i], args.prompt])
            if not running:
                # Nothing to run: the host waits for the next arrival (a scheduling gap).
                if pending:
                    time.sleep(max(0.0, pending[0].arrival_s - (time.perf_counter() - start)))
                continue
            if readback is not None:
                # Overlapped: this iteration is queued before the previous one's tokens are read,
                # so the host's bookkeeping runs while the GPU computes. A request that finished
                # in the previous iteration runs once more in its slot; that token is dropped.
                done = readback.advance(step, running)
                if done is not None and record(done[0], done[1], time.perf_counter() - start):
                    iterations += 1
                    if ends_out is not None:
                        ends_out.append(time.perf_counter() - start)
                    retire()
                continue
            # The host reads the tokens back every iteration (stop checks, streaming).
            if step is not None:
                by_slot = step().tolist()
                sampled = [by_slot[e[1]] for e in running]
            else:
                run_slots = [e[1] for e in running]
                slot_index = torch.tensor(run_slots, device=device)
                logits = model(last[slot_index].view(-1, 1), caches, run_slots, [e[2] for e in running])
                chosen = logits.argmax(-1)
                last[slot_index] = chosen
                sampled = chosen.tolist()
            iterations += 1
            if ends_out is not None:
                ends_out.append(time.perf_counter() - start)
            record(running, sampled, time.perf_counter() - start)
            retire()
        elapsed = time.perf_counter() - start
    lat = token_latencies_s(requests)
    tokens = sum(r.generated for r in requests)
    p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
    return {
        "scheduler": args.scheduler,
        "batch": args.batch,
        "rate": args.rate,
        "vocab": args.vocab,
        "graph": bool(args.graph),
        "compile": bool(args.compile),
        "cuda_graph": step is not None and step.graph is not None,
        "overlap": readback is not None,
        "requests": len(requests),
        "iterations": iterations,
        "tokens": tokens,
        "seconds": elapsed,
        "tokens_per_s": tokens / elapsed if elapsed > 0 else math.nan,
        "p50_token_ms": None if p50 is None else 1e3 * p50,
        "p99_token_ms": None if p99 is None else 1e3 * p99,
    }


def main(argv=None):
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
    p.add_argument("--graph", action="store_true",
                   help="continuous only: a static-shape step over all --batch slots reading the "
                        "KV cache in place, replayed as a CUDA graph (eager without CUDA)")
    p.add_argument("--compile", action="store_true",
                   help="with --graph: the static step compiled with torch.compile before it is captured "
                        "(its elementwise chains fused)")
    p.add_argument("--overlap", action="store_true",
                   help="with --graph: queue each iteration before reading the previous one's "
                        "tokens (asynchronous scheduling)")
    p.add_argument("--iteration-ends", metavar="PATH",
                   help="write each decode iteration's end (seconds from the start of serving) to PATH as "
                        "a JSON list: the pace of each part of a run, e.g. before, in and after a bounded "
                        "gpuscope window")
    args = p.parse_args(argv)
    if args.batch < 1 or args.rate <= 0 or args.prompt + args.new_tokens > MAX_POS:
        p.error(f"--batch >= 1, --rate > 0 and --prompt + --new-tokens <= {MAX_POS}")
    if args.graph and args.scheduler != "continuous":
        p.error(f"--graph needs --scheduler continuous (got {args.scheduler}): its static step runs "
                "all --batch slots every iteration, which only a continuous scheduler keeps full")
    if args.compile and not args.graph:
        p.error("--compile needs --graph (it compiles the static step)")
    if args.overlap and not args.graph:
        p.error("--overlap needs --graph (it queues the static step's replays ahead)")
    ends = [] if args.iteration_ends else None
    print(json.dumps(serve(args, ends_out=ends)))
    if ends is not None:
        with open(args.iteration_ends, "w") as f:
            json.dump([round(t, 6) for t in ends], f)


if __name__ == "__main__":
    main()
