#!/usr/bin/env python3
"""What the Python bootstrap's module hooks cost a module call (CPU only, needs torch): one JSON line.

    PYTHONPATH=src/python/gpuscope_boot python3 bench/module_hooks.py [--rounds 15]

A module of 90 trivial inner modules is called without hooks, with the bootstrap's global
hooks (its first outermost calls) and after they moved onto the outermost module (after
_ROOT_CALLS outermost calls), alternating each round; medians of the rounds, microseconds per
outermost call (91 module calls). The bootstrap is set up as under `gpuscope run` with a window
that never opens, so nothing is emitted.
"""
import argparse
import json
import os
import statistics
import time

import torch

import _gpuscope_boot as boot


class Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.ModuleList(torch.nn.Identity() for _ in range(90))

    def forward(self, x):
        for m in self.inner:
            x = m(x)
        return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=15)
    a = p.parse_args()
    model, x = Chain(), torch.zeros(1)

    def per_call_us(n):
        t = time.perf_counter()
        for _ in range(n):
            model(x)
        return (time.perf_counter() - t) / n * 1e6

    boot._state.update(installed=True, pid=os.getpid(), torch=torch)
    boot._window.update(state="waiting", steps=10**6, skip=10**9)
    per_call_us(200)
    bare, global_hooks, moved = [], [], []
    calls = boot._ROOT_CALLS
    for _ in range(a.rounds):
        bare.append(per_call_us(300))
        boot._install_module_hooks(torch)
        global_hooks.append(per_call_us(calls - 2))  # still global: fewer than _ROOT_CALLS calls
        per_call_us(2)                               # these move them
        moved.append(per_call_us(300))
        boot._detach()
    print(json.dumps({"torch": torch.__version__, "module_calls": 91, "rounds": a.rounds,
                      "bare_us": statistics.median(bare), "global_hooks_us": statistics.median(global_hooks),
                      "moved_us": statistics.median(moved)}))


if __name__ == "__main__":
    main()
