#!/usr/bin/env python3
"""The pace of each part of a run traced with a bounded window, from the program's own
iteration ends (examples/serve/decode.py --iteration-ends): one JSON line.

    python3 validation/non_intrusion/window_phases.py ENDS.json --skip K --steps N [--margin M]

Iterations [K, K+N) are the window (approximately: gpuscope counts forward passes, and each
admission adds one); M iterations either side of it are left out of the phases. "before" is
CUPTI attached with device records only, "after" is after the window closed (CUPTI detached).
"whole_run_cost" compares the run with the same run at its own after-window pace:
total / (iterations x mean after) - 1, so the host's noise between processes cancels (the
same statistic of an untraced run, with the same --skip and --steps, is its control: about
0); it leaves out what happens outside the serving loop (start-up, exit), which a plain run
beside it measures. The phases' paces are medians.
"""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ends")
    p.add_argument("--skip", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--margin", type=int, default=10)
    a = p.parse_args()
    with open(a.ends) as f:
        ends = json.load(f)
    d = [b - a_ for a_, b in zip([0.0] + ends, ends)]
    m, k, n = a.margin, a.skip, a.steps
    before, window, after = d[2:max(2, k - m)], d[k + m:k + n - m], d[k + n + m:]
    med = {name: statistics.median(v) * 1e3 if v else None
           for name, v in (("before", before), ("window", window), ("after", after))}
    out = {"iterations": len(d), "seconds": ends[-1] if ends else None,
           **{f"{name}_ms": v for name, v in med.items()}}
    if med["after"]:
        out["whole_run_cost"] = ends[-1] / (len(d) * statistics.fmean(after)) - 1
        if med["before"]:
            out["before_vs_after"] = med["before"] / med["after"] - 1
        if med["window"]:
            out["window_vs_after"] = med["window"] / med["after"] - 1
    print(json.dumps(out))


if __name__ == "__main__":
    main()
