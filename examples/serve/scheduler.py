"""The decode loop's request stream and schedulers, free of torch so they can be tested alone.

A request arrives at `arrival_s` (seconds from the start), brings `prompt` tokens and wants
`new_tokens` generated. A scheduler decides, before each decode iteration, which waiting
requests join the running batch:

- one: one request at a time; the next is admitted when the running one has finished.
- static: wait until `batch` requests are waiting (or no more will arrive), admit them together,
  and admit nothing until the whole batch has finished.
- continuous: every iteration, fill the free slots (up to `batch`) from the waiting queue.
"""

import random
from dataclasses import dataclass, field

SCHEDULERS = ("one", "static", "continuous")


@dataclass
class Request:
    rid: int
    arrival_s: float
    prompt: int
    new_tokens: int
    generated: int = 0
    token_times_s: list = field(default_factory=list)

    @property
    def done(self):
        return self.generated >= self.new_tokens


def poisson_stream(n, rate_per_s, seed, prompt=(16, 64), new_tokens=(32, 128)):
    """`n` requests with exponential inter-arrival times (a Poisson process of `rate_per_s`),
    prompt and output lengths uniform in the given inclusive ranges; all from `seed`."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate_per_s)
        out.append(Request(i, t, rng.randint(*prompt), rng.randint(*new_tokens)))
    return out


def admit(scheduler, batch, waiting, running, more_arrivals):
    """The waiting requests (a prefix of `waiting`, in arrival order) to admit now."""
    if scheduler not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {scheduler!r}; one of {SCHEDULERS}")
    if scheduler == "one":
        return waiting[:1] if not running else []
    if scheduler == "static":
        if running:
            return []
        if len(waiting) >= batch or (waiting and not more_arrivals):
            return waiting[:batch]
        return []
    return waiting[: max(0, batch - len(running))]


def percentile(values, p):
    """The value at rank p (0..1) of `values`, nearest-rank; None when empty."""
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p * (len(v) - 1)))))]


def token_latencies_s(requests):
    """Per-token latency: the first token's time from arrival, each later one from the one before."""
    out = []
    for r in requests:
        prev = r.arrival_s
        for t in r.token_times_s:
            out.append(t - prev)
            prev = t
    return out
