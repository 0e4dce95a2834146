#!/usr/bin/env python3
"""Process start-up cost of gpuscope: the median wall time of N runs of `gpuscope --version`
and of `gpuscope analyze TRACE > /dev/null` (time.perf_counter around subprocess.run, so it
includes fork/exec, dynamic loading, relocation and static initialisers). A benchmark, not a
test: it prints numbers and the load average they were taken under.
Usage: bench/startup.py GPUSCOPE [TRACE] [--runs N]
"""
import argparse
import os
import statistics
import subprocess
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median_ms(argv, runs):
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)  # Warm the page cache.
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times), max(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("gpuscope")
    p.add_argument("trace", nargs="?", default=os.path.join(SRC, "testdata/pytorch/fp32_sync.json.gz"))
    p.add_argument("--runs", type=int, default=30)
    a = p.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    for name, argv in (("--version", [a.gpuscope, "--version"]),
                       ("analyze " + os.path.basename(a.trace), [a.gpuscope, "analyze", a.trace])):
        med, lo, hi = median_ms(argv, a.runs)
        print(f"{name:40s} median {med:7.2f} ms  (min {lo:.2f}, max {hi:.2f}, {a.runs} runs)")
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
