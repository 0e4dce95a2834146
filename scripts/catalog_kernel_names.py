#!/usr/bin/env python3
"""Lists every distinct kernel name in the recorded traces, for the kernel catalogue table.

Reads the PyTorch profiler (Kineto) traces in testdata/pytorch/ and testdata/hta/ and prints
the names of their kernel events ("cat": "kernel", or "Kernel" in older traces), one a line,
sorted. With --missing TABLE it prints only the names that the catalogue table
(testdata/catalog/kernels.tsv: name, category, precision, tab-separated) lacks, with a
placeholder row to fill in by hand, and exits 1 when there are any.

  scripts/catalog_kernel_names.py                      # all names
  scripts/catalog_kernel_names.py --missing testdata/catalog/kernels.tsv >> rows.tsv
"""
import argparse
import glob
import gzip
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE_GLOBS = ("testdata/pytorch/*.json.gz", "testdata/hta/*.json.gz")


def kernel_names(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    for e in events:
        if isinstance(e, dict) and e.get("cat") in ("kernel", "Kernel") and "name" in e:
            yield e["name"]


def table_names(path):
    names = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            names.add(line.rstrip("\n").split("\t")[0])
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", metavar="TABLE", help="print only names missing from TABLE")
    args = parser.parse_args()
    names = set()
    for pattern in TRACE_GLOBS:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            names.update(kernel_names(path))
    if args.missing:
        missing = sorted(names - table_names(args.missing))
        for name in missing:
            print(f"{name}\t?\t?")
        return 1 if missing else 0
    for name in sorted(names):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
