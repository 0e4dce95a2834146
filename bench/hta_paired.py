#!/usr/bin/env python3
"""Paired wall-time comparison of Holistic Trace Analysis and gpuscope on one trace.

Usage: hta_paired.py HTA_PYTHON HTA_SCRIPT GPUSCOPE DIR [--runs N]

DIR holds the trace as rank-0.json.gz. Each run, in turn: `HTA_PYTHON HTA_SCRIPT DIR` (HTA's
temporal, idle-time and kernel breakdowns: bench/hta_run.py) and
`GPUSCOPE analyze DIR/rank-0.json.gz`, both whole processes with output discarded, timed with
time.perf_counter. Prints each run's walls and ratio, the medians and the median ratio.
"""
import argparse
import os
import statistics
import subprocess
import time


def wall(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"hta_paired: {cmd} failed ({r.returncode})")
    return t


def main():
    p = argparse.ArgumentParser()
    p.add_argument("hta_python")
    p.add_argument("hta_script")
    p.add_argument("gpuscope")
    p.add_argument("dir")
    p.add_argument("--runs", type=int, default=7)
    a = p.parse_args()
    trace = os.path.join(a.dir, "rank-0.json.gz")
    hs, gs, ratios = [], [], []
    print("load average before:", open("/proc/loadavg").read().strip())
    for i in range(a.runs):
        h = wall([a.hta_python, a.hta_script, a.dir])
        g = wall([a.gpuscope, "analyze", trace])
        hs.append(h), gs.append(g), ratios.append(h / g)
        print(f"run {i + 1}: HTA {h:.3f} s  gpuscope {g:.4f} s  ratio {h / g:.1f}")
    print("load average after:", open("/proc/loadavg").read().strip())
    print(f"median: HTA {statistics.median(hs):.3f} s  gpuscope {statistics.median(gs):.4f} s  "
          f"ratio of medians {statistics.median(hs) / statistics.median(gs):.1f}  median ratio {statistics.median(ratios):.1f}")


if __name__ == "__main__":
    main()
