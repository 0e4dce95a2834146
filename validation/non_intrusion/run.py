#!/usr/bin/env python3
"""Non-intrusion matrix: does `gpuscope run` leave a program exactly as fast as it was, and
find its steps? Run on any machine with a GPU and PyTorch; prints the table docs/validation.md
shows.

usage: validation/non_intrusion/run.py [--rows eager,compile,...] [--pairs 5] [--steps 40]
                                       [--budget-s 3600] [--gpuscope PATH] [--work DIR] [--resume]
                                       [--no-calibrate]
       validation/non_intrusion/run.py --split ROW [--conditions A,B] [--pairs ROUNDS] [--steps 200]
                                       [--gpuscope PATH]

A matrix too long for one sitting is made in several: the same --work and --resume each time
(each run's result is kept there as ROW-TAG.run.json, its capture analysed and removed), with
--budget-s under the sitting's length; the table covers every pair made so far.

For every row of programs.py, interleaved pairs of runs (untraced then traced, the order
swapped every other pair) of the same program; each run's step time is the median of its own
step times after 5 warm-up steps, and a row's is the median over its pairs. Columns:
  untraced / traced    ms per step, medians over the pairs; delta, traced against untraced
  dynamo               graphs compiled + graph breaks + recompiles, untraced -> traced
  same losses          the first 20 losses (or outputs) identical in every traced run; "not
                       deterministic" when untraced runs (the warm-up run included) already
                       differ among themselves
  steps found          what `gpuscope analyze` found in the last traced run's capture: source,
                       count (and the warm-up steps it left out of its window) and median ms
                       per step, beside that run's own count and median
--split ROW instead splits one row's tracing cost: rounds of runs, one per condition of SPLIT
(untraced; plain `gpuscope run`; then with the stack sampler, the bootstrap, each optional
activity kind and finally CUPTI itself turned off in turn; last, the peer: the program inside
torch.profiler with no gpuscope), the order reversed every other round; the table gives each
condition's median step per run and its change against untraced.
A run that fails keeps its whole output in --work as ROW-TAG.failed.log, and its capture. After
every round of pairs the table so far is written to --work as table.md, and each run's wall time
goes to stderr: a sitting cut short keeps its table and shows which run was slow.
Before the pairs, each row runs once untimed, so that torch.compile's caches are warm in every
timed run, traced or not, as in a user's second run (--no-warm skips it).
Pairs are taken pair-major (pair 1 of every row, then pair 2, ...): a round of pairs that would
end past --budget-s (judged by the longest round so far) is not begun, so every row has the same
number of pairs, and the table says how many.
"""
import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUN_ARGS = []  # extra options of `gpuscope run` (--run-args)
TRACED_ENV = {}  # extra environment of the traced runs (--traced-env)
KEEP_CAPTURES = False  # --keep-captures
NO_CALIBRATE = False  # --no-calibrate
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs.py")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from program_run import run_program  # noqa: E402


PROFILER = os.path.join(HERE, "under_profiler.py")
PROFILER_KEY = "@torch.profiler"  # in a SPLIT condition's environment: run under PROFILER instead


# --split: the conditions whose traced runs split a row's tracing cost into its parts, each the
# environment of a plain `gpuscope run` (None: untraced). Every optional activity kind can be
# turned off (GPUSCOPE_KINDS_OFF) or, where off by default, on (GPUSCOPE_KINDS_ON).
SPLIT = [
    ("untraced", "untraced", None),
    ("traced", "gpuscope run, defaults", {}),
    ("no-sampler", "stack sampler off", {"GPUSCOPE_PY_SAMPLE_HZ": "0"}),
    ("no-loop", "step-loop search off", {"GPUSCOPE_LOOP": "0"}),
    ("no-boot", "no Python bootstrap", {"GPUSCOPE_PYTHON": "0"}),
    ("sync", "no bootstrap, + SYNCHRONIZATION records", {"GPUSCOPE_PYTHON": "0", "GPUSCOPE_KINDS_ON": "SYNCHRONIZATION"}),
    ("no-runtime", "no bootstrap, no RUNTIME records", {"GPUSCOPE_PYTHON": "0", "GPUSCOPE_KINDS_OFF": "RUNTIME"}),
    ("no-copy", "no bootstrap, no MEMCPY/MEMSET records",
     {"GPUSCOPE_PYTHON": "0", "GPUSCOPE_KINDS_OFF": "MEMCPY,MEMSET"}),
    ("kernels", "no bootstrap, kernel records only",
     {"GPUSCOPE_PYTHON": "0", "GPUSCOPE_KINDS_OFF": "RUNTIME,MEMCPY,MEMSET,MARKER,MEMORY2,DEVICE"}),
    ("cupti-off", "CUPTI off: bootstrap and cuBLAS interposer only", {"GPUSCOPE_DISABLE": "1"}),
    ("hooks-only", "CUPTI off, bootstrap without sampler or loop search",
     {"GPUSCOPE_DISABLE": "1", "GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_LOOP": "0"}),
    ("interposer", "CUPTI off, no bootstrap: cuBLAS interposer only", {"GPUSCOPE_DISABLE": "1", "GPUSCOPE_PYTHON": "0"}),
    # The peer: the same program inside torch.profiler, no gpuscope (under_profiler.py).
    ("kineto", "no gpuscope: torch.profiler, CPU and CUDA activities", {PROFILER_KEY: "cpu,cuda"}),
    ("kineto-cuda", "no gpuscope: torch.profiler, CUDA activity only", {PROFILER_KEY: "cuda"}),
]


def split(row, rounds, steps, gpuscope, work, deadline, conditions=None):
    """Rounds of one run per SPLIT condition of ROW (those named in CONDITIONS, default all; the
    untraced one always; the order reversed every other round, so that no condition always runs
    after the same one); prints each condition's median step per run, their median, and its change
    against the untraced runs'."""
    order = [c for c in SPLIT if c[0] == "untraced" or conditions is None or c[0] in conditions]
    ms = {key: [] for key, _, _ in order}
    longest = 0.0
    for r in range(rounds):
        if time.monotonic() + longest > deadline:
            break
        began = time.monotonic()
        for key, _, env in (order if r % 2 == 0 else order[::-1]):
            profiler = (env or {}).get(PROFILER_KEY)
            out = run_once(row, steps, env is not None and not profiler, gpuscope, work, f"split-{key}-{r}",
                           env=env, analyse=False, profiler=profiler)
            if "run_ms" in out:
                ms[key].append(out["run_ms"])
            print(f"round {r + 1} {key}: {out.get('run_ms', float('nan')):.3f} ms/step", file=sys.stderr, flush=True)
        longest = max(longest, time.monotonic() - began)
    base = statistics.median(ms["untraced"]) if ms["untraced"] else None
    print(f"{row}: {len(ms['untraced'])} rounds, {steps} steps per run, median step per run after 5 warm-up steps")
    print("| condition | ms per run | median ms | vs untraced |")
    print("| --- | --- | --- | --- |")
    for key, text, env in order:
        if not ms[key]:
            print(f"| {text} | failed | | |")
            continue
        m = statistics.median(ms[key])
        change = f"{100 * (m / base - 1):+.1f}%" if base and env is not None else ""
        print(f"| {text} | {', '.join(f'{x:.3f}' for x in ms[key])} | {m:.3f} | {change} |")
    return 0


def run_once(row, steps, traced, gpuscope, work, tag, resume=False, env=None, analyse=True, profiler=None):
    """One run of a row; its result (the program's, with the runner's findings added) is kept in
    WORK/ROW-TAG.run.json, which --resume reads instead of running again. ENV: the traced run's
    extra environment (default: --traced-env); ANALYSE: what its capture shows, in the result;
    PROFILER: untraced, but inside torch.profiler with these activities (under_profiler.py)."""
    result = os.path.join(work, f"{row}-{tag}.json")
    kept = os.path.join(work, f"{row}-{tag}.run.json")
    if resume and os.path.exists(kept):
        with open(kept) as f:
            return json.load(f)
    cmd = [sys.executable, PROGRAMS, row, "--steps", str(steps), "--result", result]
    if profiler:
        cmd = [sys.executable, PROFILER, profiler] + cmd[1:]
    if traced:
        cap = os.path.join(work, f"{row}-{tag}.gpuscope")
        # Calibrated (unless --no-calibrate): the report then takes the tracer's own cost out of
        # its findings, which is what "no finding caused by tracing" checks.
        cmd = [gpuscope, "run", "--no-report", *(["--no-calibrate"] if NO_CALIBRATE else []), "-o", cap, *RUN_ARGS,
               "--"] + cmd
    extra = TRACED_ENV if env is None else env
    env = dict(os.environ, **extra) if traced and extra else None
    began = time.monotonic()
    proc = run_program(cmd, env=env)
    print(f"  {row} {tag}: {time.monotonic() - began:.1f} s", file=sys.stderr, flush=True)
    if proc.returncode != 0 or not os.path.exists(result):
        # The whole output stays beside the results: a crash's cause is rarely in its last lines.
        with open(os.path.join(work, f"{row}-{tag}.failed.log"), "w") as f:
            f.write(f"$ {' '.join(cmd)}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:] or ["exit %d" % proc.returncode]
        print(f"{row} ({'traced' if traced else 'untraced'}) failed: " + " / ".join(tail), file=sys.stderr, flush=True)
        return {"error": tail[-1]}
    with open(result) as f:
        out = json.load(f)
    out["run_ms"] = statistics.median(out["step_ms"][5:] or out["step_ms"])
    out["tail_ms"] = statistics.median(out["step_ms"][-max(1, len(out["step_ms"]) // 3):])
    if traced:
        # One capture, or one per CUDA process (FILE-stem.<pid>.gpuscope) where helpers such as
        # compile workers started CUDA too.
        stem = os.path.splitext(cap)[0]
        captures = sorted(os.path.join(work, f) for f in os.listdir(work)
                          if os.path.join(work, f).startswith(stem) and f.endswith(".gpuscope"))
        # What the capture shows, now: a later --resume needs the result, not the capture.
        if analyse:
            out["steps_found"] = steps_found(gpuscope, captures)
        if not KEEP_CAPTURES:
            for c in captures:
                os.remove(c)
    with open(kept, "w") as f:
        json.dump(out, f)
    return out


def steps_found(gpuscope, captures):
    """Source, count and ms per step of the device report with the most GPU time, and the top
    finding, in the captures of one traced run."""
    if not captures:
        return "no capture"
    proc = subprocess.run([gpuscope, "analyze", "--json", *captures], capture_output=True, text=True, timeout=600)
    try:
        devices = json.loads(proc.stdout)["devices"]
        dev = max(devices, key=lambda d: d.get("window_us") or 0)
    except (ValueError, KeyError):
        return "analyze: " + (proc.stderr.strip().splitlines() or ["no report"])[-1][:80]
    s = dev.get("steps", {})
    durations = [x["duration_ms"] for x in s.get("list", [])]
    top = dev.get("findings", [])
    top = f"; top: {top[0]['id']} x{top[0].get('est_speedup') or 0:.2f}" if top else ""
    median = f"{statistics.median(durations):.2f}" if durations else "-"
    # Steps found = those analysed and the leading warm-up ones the report left out of its window.
    warm = f" (+{s['skipped_warmup']} warm-up)" if s.get("skipped_warmup") else ""
    return f"{s.get('source')} {s.get('count')}{warm} x {median} ms{top}"


def dynamo_text(runs):
    d = [r.get("dynamo", {}) for r in runs if "dynamo" in r]
    if not d or "error" in d[0]:
        return "-"
    return "/".join(str(max(x.get(k, 0) for x in d)) for k in ("unique_graphs", "graph_breaks", "recompiles"))


def table(rows, runs, warm, a, pairs_done, out):
    """The matrix table of the pairs so far, to OUT."""
    emit = functools.partial(print, file=out)
    emit(f"{pairs_done} interleaved pairs per row, {a.steps} steps per run, median step time after 5 warm-up steps"
          + (f"; traced with `gpuscope run {a.run_args}`" if a.run_args else "")
          + (f"; traced runs with {' '.join(a.traced_env)}" if a.traced_env else ""))
    emit("| program | untraced ms | traced ms | delta | dynamo graphs/breaks/recompiles | same losses | steps found (program's own) |")
    emit("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        u = [r for r in runs[row]["untraced"] if "run_ms" in r]
        t = [r for r in runs[row]["traced"] if "run_ms" in r]
        errors = [r["error"] for r in runs[row]["untraced"] + runs[row]["traced"] if "error" in r]
        if not u or not t:
            emit(f"| {row} | failed: {errors[:1]} | | | | | |")
            continue
        um = statistics.median(r["run_ms"] for r in u)
        tm = statistics.median(r["run_ms"] for r in t)
        same = "yes" if all(r["losses"][:20] == u[0]["losses"][:20] for r in t) else "NO"
        # The control: untraced runs (the warm-up run's first steps included) that disagree among
        # themselves make a difference under tracing no evidence of anything.
        control = [r["losses"] for r in u[1:]] + [warm[row]["losses"]] if row in warm else [r["losses"] for r in u[1:]]
        if any(c[:min(20, len(c))] != u[0]["losses"][:min(20, len(c))] for c in control):
            same = "not deterministic (untraced runs differ)"
        elif same == "NO" and not control:
            same = "NO (no untraced control)"
        if a.run_args:
            ut = statistics.median(r["tail_ms"] for r in u)
            tt = statistics.median(r["tail_ms"] for r in t)
            found = f"last third {ut:.2f} -> {tt:.2f} ms ({100 * (tt / ut - 1):+.1f}%); "
        else:
            found = ""
        found += t[-1].get("steps_found", "no capture")
        own = statistics.median(t[-1]["step_ms"][1:] or t[-1]["step_ms"])
        emit(f"| {row} | {um:.2f} | {tm:.2f} | {100 * (tm / um - 1):+.1f}% | {dynamo_text(u)} -> {dynamo_text(t)} | "
              f"{same} | {found} ({len(t[-1]['step_ms'])} x {own:.2f} ms) |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=None, help="comma-separated rows of programs.py (default: all)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--budget-s", type=float, default=3600)
    ap.add_argument("--gpuscope", default="gpuscope")
    ap.add_argument("--work", default=None)
    ap.add_argument("--resume", action="store_true", help="reuse the runs kept in --work (ROW-TAG.run.json) "
                    "by an earlier invocation with the same --work, so that a matrix can be completed over "
                    "several shorter sessions")
    ap.add_argument("--keep-captures", action="store_true", help="keep each traced run's capture in --work")
    ap.add_argument("--no-calibrate", action="store_true", help="traced runs without gpuscope's calibration of "
                    "its own per-launch cost (faster; the findings then keep the tracer's cost)")
    ap.add_argument("--no-warm", action="store_true", help="skip the untimed run of each row that fills "
                    "torch.compile's caches before the pairs (a first max-autotune run spends minutes there)")
    ap.add_argument("--run-args", default="", help="options for `gpuscope run`, e.g. '--steps 50': the table "
                    "then also gives the last third of the steps (after a bounded window) traced and untraced")
    ap.add_argument("--traced-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment of the traced runs only, e.g. GPUSCOPE_PY_SAMPLE_HZ=0 (the stack sampler "
                    "off) or GPUSCOPE_PYTHON=0 (no bootstrap), to see what part of a cost is whose; repeatable. "
                    "Use a --work of its own: --resume does not tell runs apart by it")
    ap.add_argument("--split", metavar="ROW", help="instead of the matrix: rounds (--pairs of them) of ROW "
                    "untraced and traced with parts of the tracer turned off in turn (no stack sampler, no "
                    "bootstrap, each optional activity kind off or on, kernels only, CUPTI off, torch.profiler "
                    "instead of gpuscope), to see what part of the tracing cost is whose; traced runs are not "
                    "calibrated")
    ap.add_argument("--conditions", metavar="A,B", help="with --split: only these conditions (and untraced): "
                    + ", ".join(key for key, _, _ in SPLIT[1:]))
    a = ap.parse_args()
    for item in a.traced_env:
        name, eq, value = item.partition("=")
        if not name or not eq:
            ap.error(f"--traced-env {item}: expected NAME=VALUE")
        TRACED_ENV[name] = value
    import programs  # needs torch: after --help

    RUN_ARGS.extend(a.run_args.split())
    global KEEP_CAPTURES, NO_CALIBRATE
    KEEP_CAPTURES = a.keep_captures
    NO_CALIBRATE = a.no_calibrate
    rows = a.rows.split(",") if a.rows else programs.ROWS
    work = a.work or tempfile.mkdtemp(prefix="gpuscope-nonintrusion-")
    os.makedirs(work, exist_ok=True)
    deadline = time.monotonic() + a.budget_s
    if a.split:
        if a.split not in programs.ROWS:
            ap.error(f"--split {a.split}: not a row of programs.py ({', '.join(programs.ROWS)})")
        NO_CALIBRATE = True
        conditions = a.conditions.split(",") if a.conditions else None
        unknown = sorted(set(conditions or []) - {key for key, _, _ in SPLIT})
        if unknown:
            ap.error(f"--conditions {','.join(unknown)}: not a condition ({', '.join(k for k, _, _ in SPLIT)})")
        if not a.no_warm:
            run_once(a.split, 6, False, a.gpuscope, work, "warm")
        return split(a.split, a.pairs, a.steps, a.gpuscope, work, deadline, conditions)
    runs = {row: {"untraced": [], "traced": []} for row in rows}
    warm = {}  # row: its untimed warm-up run, kept as a determinism control
    pairs_done = 0
    if not a.no_warm:
        for row in rows:
            if time.monotonic() > deadline:
                break
            began = time.monotonic()
            if a.resume and any(f.startswith(row + "-") and f.endswith(".run.json") for f in os.listdir(work)):
                r = run_once(row, 6, False, a.gpuscope, work, "warm", resume=True)  # kept by that invocation
                if "losses" in r:
                    warm[row] = r
                continue
            r = run_once(row, 6, False, a.gpuscope, work, "warm")
            if "losses" in r:
                warm[row] = r
            print(f"warm {row}: {time.monotonic() - began:.1f} s" + (f" ({r['error']})" if "error" in r else ""),
                  file=sys.stderr, flush=True)
    longest = 0.0  # the longest pair of every row so far: a next one that would end past the budget is not begun
    for p in range(a.pairs):
        if time.monotonic() + longest > deadline:
            break
        began = time.monotonic()
        for row in rows:
            if any("error" in r for r in runs[row]["untraced"] + runs[row]["traced"]):
                continue  # a row that failed once is not run again
            order = (False, True) if p % 2 == 0 else (True, False)
            for traced in order:
                r = run_once(row, a.steps, traced, a.gpuscope, work, f"{'t' if traced else 'u'}{p}", a.resume)
                runs[row]["traced" if traced else "untraced"].append(r)
            print(f"pair {p + 1} {row}: " + " ".join(
                f"{k} {v[-1].get('run_ms', float('nan')):.2f} ms/step, {sum(v[-1].get('step_ms', [])) / 1e3:.2f} s in steps"
                for k, v in runs[row].items()), file=sys.stderr, flush=True)
        pairs_done += 1
        longest = max(longest, time.monotonic() - began)
        # The table so far, kept in --work: a sitting cut short still leaves its pairs' table.
        with open(os.path.join(work, "table.md"), "w") as f:
            table(rows, runs, warm, a, pairs_done, f)
    table(rows, runs, warm, a, pairs_done, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
