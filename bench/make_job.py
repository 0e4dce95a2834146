#!/usr/bin/env python3
"""Builds a realistic multi-rank job from a real PyTorch profiler trace, for bench/job-bench.

Each rank is the real trace (testdata/pytorch/fp32_sync.json.gz: GPT-2 124M on an H200,
recorded with record_shapes=True) repeated COPIES times back to back: every copy's times move
past the previous copy's end, and its correlation ids, flow ids, External ids and step numbers
move past the previous copy's, so the result reads as one long run of the same training loop,
in PyTorch's own formatting. Each rank gets a "distributedInfo" record (rank, world size).

Usage: make_job.py OUTDIR [--ranks 8] [--mb 500] [--trace PATH] [--level 9]

The events are compressed once (gzip level 9 by default, what Python's gzip module and so
torch.profiler's export_chrome_trace write); each rank's file is its own small gzip member
(the header naming the rank) followed by that shared member: a valid multi-member gzip file
that zcat and gpuscope both read whole. Nothing is written into the repository.
"""
import argparse
import gzip
import os
import re
import sys
import zlib

SEPARATOR = "\n  },\n  {\n"
NUMBERED = re.compile(r'("ts": |"correlation": |"External id": |"id": |ProfilerStep#)(-?\d+)')


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--mb", type=float, default=500, help="uncompressed JSON per rank, MB (1e6 bytes)")
    p.add_argument("--trace", default=os.path.join(root, "testdata/pytorch/fp32_sync.json.gz"))
    p.add_argument("--level", type=int, default=9)
    a = p.parse_args()

    with gzip.open(a.trace, "rt", encoding="utf-8") as f:
        text = f.read()
    start = text.index('"traceEvents": [') + len('"traceEvents": [')
    end = text.rindex("]")
    header, body, trailer = text[:start], text[start:end].strip(), text[end:]
    events = body.count(SEPARATOR) + 1
    # One copy's extent in each numbered field.
    parts = NUMBERED.split(body)
    keys = parts[1::3]
    nums = [int(n) for n in parts[2::3]]
    span = {}
    for k, n in zip(keys, nums):
        lo, hi = span.get(k, (n, n))
        span[k] = (min(lo, n), max(hi, n))
    shift_of = {k: hi - lo + (1000 if k == '"ts": ' else 1) for k, (lo, hi) in span.items()}
    # The last copy's ts shift must clear the durations that end after the last start.
    shift_of['"ts": '] += 10_000

    one_copy_bytes = len(body)
    copies = max(1, round(a.mb * 1e6 / one_copy_bytes))
    os.makedirs(a.outdir, exist_ok=True)
    body_path = os.path.join(a.outdir, "events.gz.part")
    total_events = 0
    comp = zlib.compressobj(a.level, zlib.DEFLATED, 31)
    raw_bytes = 0
    with open(body_path, "wb") as out:
        for c in range(copies):
            pieces = []
            for i in range(0, len(parts) - 1, 3):
                pieces.append(parts[i])
                pieces.append(parts[i + 1])
                pieces.append(str(int(parts[i + 2]) + c * shift_of[parts[i + 1]]))
            pieces.append(parts[-1])
            if c < copies - 1:
                pieces.append(",\n  ")
            chunk = "".join(pieces)
            data = chunk.encode("utf-8")
            raw_bytes += len(data)
            out.write(comp.compress(data))
            total_events += events
        tail = ("\n  " + trailer).encode("utf-8")
        raw_bytes += len(tail)
        out.write(comp.compress(tail))
        out.write(comp.flush())
    with open(body_path, "rb") as f:
        shared = f.read()
    os.remove(body_path)
    for r in range(a.ranks):
        head = header.replace(
            "{", '{\n  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d},' % (r, a.ranks), 1)
        with open(os.path.join(a.outdir, "rank%d.json.gz" % r), "wb") as out:
            out.write(gzip.compress(head.encode("utf-8"), a.level))
            out.write(shared)
    print("ranks %d, copies %d, events per rank %d, JSON per rank %.1f MB, gzip per rank %.1f MB"
          % (a.ranks, copies, total_events, (raw_bytes + len(header)) / 1e6, len(shared) / 1e6))
    with open(os.path.join(a.outdir, "job.txt"), "w") as f:
        f.write("events_total=%d\njson_bytes_total=%d\n" % (total_events * a.ranks, (raw_bytes + len(header)) * a.ranks))
    print("events_total=%d" % (total_events * a.ranks))


if __name__ == "__main__":
    sys.exit(main())
