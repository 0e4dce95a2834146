#!/usr/bin/env python3
"""The 8-rank job benchmark: gpuscope analyze on a directory of large gzipped
PyTorch traces against zcat inflating the same files on one core, in the same run.

Usage: job_bench.py GPUSCOPE [--job DIR] [--runs 3] [-- extra analyze arguments]

DIR (default: $TMPDIR/gpuscope-job8) is built by bench/make_job.py when it holds no job
(8 ranks x 500 MB of JSON from testdata/pytorch/fp32_sync.json.gz). Each run, in turn:
  zcat:     taskset -c 0 zcat DIR/rank*.json.gz > /dev/null     (one core)
  gpuscope: GPUSCOPE analyze --json DIR > /dev/null              (every core)
both under /usr/bin/time -v. Prints wall time, CPU time, peak RSS and events/s of each run,
the medians, and the machine's load average before and after.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile


def timed(cmd):
    """Runs cmd (a shell string) under /usr/bin/time -v; returns (wall s, cpu s, peak RSS bytes)."""
    r = subprocess.run(["/usr/bin/time", "-v", "sh", "-c", cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("job_bench: failed (%d): %s\n%s" % (r.returncode, cmd, r.stderr[-2000:]))
    t = r.stderr

    def field(name):
        return re.search(re.escape(name) + r": (.*)", t).group(1).strip()

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    seconds = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    return seconds, cpu, int(field("Maximum resident set size (kbytes)")) * 1024


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gpuscope")
    p.add_argument("--job", default=os.path.join(tempfile.gettempdir(), "gpuscope-job8"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    info = os.path.join(a.job, "job.txt")
    if not os.path.exists(info):
        subprocess.run([sys.executable, os.path.join(here, "make_job.py"), a.job], check=True)
    facts = dict(line.strip().split("=") for line in open(info))
    events = int(facts["events_total"])
    files = sorted(os.path.join(a.job, f) for f in os.listdir(a.job) if f.endswith(".json.gz"))
    gz_bytes = sum(os.path.getsize(f) for f in files)
    print("job: %d files, %.0f MB gzip, %.0f MB JSON, %d events" %
          (len(files), gz_bytes / 1e6, int(facts["json_bytes_total"]) / 1e6, events))
    print("load average before: %s" % open("/proc/loadavg").read().strip())
    zcat = "taskset -c 0 zcat %s > /dev/null" % " ".join(files)
    ours = "%s analyze --json %s %s > /dev/null" % (a.gpuscope, " ".join(a.extra), a.job)
    rows = {"zcat": [], "gpuscope": []}
    for run in range(a.runs):
        for name, cmd in (("zcat", zcat), ("gpuscope", ours)):
            wall, cpu, rss = timed(cmd)
            rows[name].append((wall, cpu, rss))
            print("run %d %-8s wall %6.2f s  cpu %6.2f s  peak RSS %5.0f MB  %5.2f M events/s" %
                  (run + 1, name, wall, cpu, rss / 1e6, events / wall / 1e6), flush=True)
    print("load average after: %s" % open("/proc/loadavg").read().strip())
    for name, r in rows.items():
        print("median %-8s wall %6.2f s  cpu %6.2f s  peak RSS %5.0f MB  %5.2f M events/s" %
              (name, statistics.median(x[0] for x in r), statistics.median(x[1] for x in r),
               statistics.median(x[2] for x in r) / 1e6, events / statistics.median(x[0] for x in r) / 1e6))
    ratios = [g[0] / z[0] for g, z in zip(rows["gpuscope"], rows["zcat"])]
    print("gpuscope wall / zcat wall, run by run: %s (median %.2f)" %
          (", ".join("%.2f" % r for r in ratios), statistics.median(ratios)))


if __name__ == "__main__":
    sys.exit(main())
