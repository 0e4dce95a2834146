#!/usr/bin/env python3
"""How the pyzoo dataloader case's input scales: one JSON line per measurement.

    python3 validation/pyzoo/dataloader_probe.py [--batches 30]

main:      batches built in the main process (num_workers=0) at torch's default intra-op threads
           and at one thread: wall and process CPU time per batch.
workers N: the DataLoader alone (no model), N worker processes, pinned or not: batches per second
           after a warm-up, and the main process's CPU per batch.
Facts for the input finding's worker model, measured on the GPU host; no GPU work but pinning.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyzoo  # noqa: E402


def loader(workers, pin):
    kw = dict(num_workers=workers, pin_memory=pin)
    if workers:
        kw.update(prefetch_factor=4, persistent_workers=True)
    return torch.utils.data.DataLoader(pyzoo.Chunks(256, 4096), batch_size=16, collate_fn=pyzoo.concat, **kw)


def timed(it, n):
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        next(it)
    return (time.perf_counter() - w0) / n, (time.process_time() - c0) / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=30)
    a = p.parse_args()
    n = a.batches
    base = {"cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "torch_threads": torch.get_num_threads()}
    print(json.dumps({"probe": "host", **base}), flush=True)
    threads = torch.get_num_threads()
    for t in (threads, 1):
        torch.set_num_threads(t)
        it = iter(loader(0, False))
        timed(it, 3)
        wall, cpu = timed(it, n)
        print(json.dumps({"probe": "main", "threads": t, "wall_ms": round(wall * 1e3, 3), "cpu_ms": round(cpu * 1e3, 3)}),
              flush=True)
    torch.set_num_threads(threads)
    for workers, pin in ((1, True), (2, True), (4, True), (8, True), (8, False), (16, True)):
        it = iter(loader(workers, pin))
        timed(it, 2 * workers + 4)  # start-up and the prefetched batches
        wall, cpu = timed(it, n)
        print(json.dumps({"probe": "workers", "workers": workers, "pin": pin, "wall_ms": round(wall * 1e3, 3),
                          "main_cpu_ms": round(cpu * 1e3, 3)}), flush=True)
        del it


if __name__ == "__main__":
    main()
