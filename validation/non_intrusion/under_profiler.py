#!/usr/bin/env python3
"""Run a Python program under torch.profiler (Kineto), with no gpuscope: the peer whose cost a
traced step is compared with (`run.py --split ROW --conditions kineto,kineto-cuda`).

usage: under_profiler.py ACTIVITIES PROGRAM [ARGS...]
  ACTIVITIES  cpu,cuda (what torch.profiler records by default) or cuda (kernel records only)

The whole program runs inside one `torch.profiler.profile` with no schedule, as a user who wraps
a short run would; nothing is exported, so only what recording costs is measured.
"""
import os
import runpy
import sys


def main():
    if len(sys.argv) < 3:
        print(next(line for line in __doc__.splitlines() if line.startswith("usage:")), file=sys.stderr)
        return 2
    import torch.profiler as tp

    names = {"cpu": tp.ProfilerActivity.CPU, "cuda": tp.ProfilerActivity.CUDA}
    wanted = sys.argv[1].split(",")
    unknown = [w for w in wanted if w not in names]
    if unknown:
        print(f"under_profiler.py: activity {','.join(unknown)} unknown: use cpu,cuda or cuda", file=sys.stderr)
        return 2
    program = sys.argv[2]
    sys.argv = sys.argv[2:]
    sys.path[0] = os.path.dirname(os.path.abspath(program))  # as `python3 PROGRAM` would
    with tp.profile(activities=[names[w] for w in wanted]):
        try:
            runpy.run_path(program, run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
