#!/usr/bin/env python3
"""`gpuscope run --try` against editing the code: for each program of programs.py, the speedup
the trial measures beside the speedup of the `--fixed` variant, both untraced, and the as-is
trial's step beside the untraced program's. Prints the table docs/validation.md shows, a row
as each program is done.

usage: validation/try/run.py [--gpuscope PATH] [--programs a,b,...] [--pairs 3] [--steps 80]
                             [--rounds 1] [--work DIR] [--resume] [--budget-s S]

Per program: `--pairs` interleaved pairs of untraced runs (as is, then fixed; order swapped
every other pair), each run's step the median of its steps after 10 (dataloader and expandable-segments:
the mean, as their trial compares); the edited speedup is the as-is step over the fixed step,
each the median over its runs. Then one `gpuscope run --try FIX --json`
(warm-up 10, 30 timed). Columns: edited (code changed, untraced), tried (gpuscope's trial), error
= tried / edited - 1 (target within ±10%), as-is drift = the trial's as-is step against the
untraced as-is step (target within 2%), spread = how far apart the untraced as-is runs' own
steps lie, (slowest - fastest) / median (a drift inside it is not resolved), estimate (the
finding's the fix answers, where one was made), est. error = that estimate / edited - 1 (target
within ±25%), and top finding = the first finding of the as-is trial's capture (`gpuscope
analyze`) with its estimate, which need not be the one the fix answers. A second table gives each program's step times as median / mean,
untraced and in the trial's runs on the host's and the GPU's clock: a mean well above its median
shows stalls every few steps that a ratio of medians leaves out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from program_run import run_program  # noqa: E402
PROGRAMS_PY = os.path.join(HERE, "programs.py")
# The fixes whose trial compares mean steps, not medians (`gpuscope run --try`'s statistic).
BY_MEAN = ("dataloader", "expandable-segments")
# An as-is trial whose step is this far from the untraced program's timed something else.
OTHER_STEP = 0.5


def program_env(name, fixed=False):
    """The environment of a program's run. Two programs' causes and fixes are the environment's:
    no_caching* run with the caching allocator off (on, fixed), frag_* (expandable-segments) with
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True where fixed."""
    env = dict(os.environ)
    if name.startswith("no_caching"):
        if fixed:
            env.pop("PYTORCH_NO_CUDA_MEMORY_CACHING", None)
        else:
            env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    if name.startswith("frag_") and fixed:
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    return env


def untraced(name, fixed, steps, work, tag, resume=False):
    """One untraced run's steps after the tenth (ms)."""
    result = os.path.join(work, f"{name}-{tag}.json")
    if resume and os.path.exists(result):
        with open(result) as f:
            return json.load(f)["step_ms"][10:]
    cmd = [sys.executable, PROGRAMS_PY, name, "--steps", str(steps), "--result", result] + (["--fixed"] if fixed else [])
    proc = run_program(cmd, env=program_env(name, fixed))
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {'fixed' if fixed else 'as is'}: " + (proc.stderr.strip().splitlines() or ["?"])[-1])
    with open(result) as f:
        return json.load(f)["step_ms"][10:]


def tried(gpuscope, name, fix, steps, work, resume=False, rounds=1):
    kept = os.path.join(work, f"{name}-try.json")
    if resume and os.path.exists(kept):
        with open(kept) as f:
            return json.load(f)
    out = os.path.join(work, f"{name}-try")
    if os.path.exists(out):  # an earlier sitting's trial that gave no result: --try wants a new folder
        os.rename(out, f"{out}-{int(time.time())}")
    cmd = [gpuscope, "run", "--try", fix, "--try-rounds", str(rounds), "--json", "-o", out, "--", sys.executable,
           PROGRAMS_PY, name,
           "--steps", str(steps)]
    proc = run_program(cmd, env=program_env(name), timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} --try {fix}: exit {proc.returncode}: " + (proc.stderr.strip().splitlines() or ["?"])[-1])
    doc = json.loads(proc.stdout)
    doc["top_finding"] = top_finding(gpuscope, doc["as_is"].get("capture"))
    with open(kept, "w") as f:
        json.dump(doc, f)
    return doc


def trial_steps(work, name, label):
    """The timed steps (ms) of a trial's runs of one label (`as-is`, a fix), pooled over its
    rounds, on the host's clock and on the GPU's: from the result files `--try -o` keeps."""
    folder = os.path.join(work, f"{name}-try")
    host, device = [], []
    if not os.path.isdir(folder):
        return host, device
    for f in sorted(os.listdir(folder)):
        stem = f[:-len(".result.json")] if f.endswith(".result.json") else None
        if stem and (stem == label or stem.startswith(label + ".")):
            with open(os.path.join(folder, f)) as fh:
                doc = json.load(fh)
            host += [v / 1e6 for v in doc.get("host_step_ns", [])]
            device += [v / 1e6 for v in doc.get("device_step_ns", [])]
    return host, device


def stats_cell(steps):
    """`median / mean` of step times in ms: a mean above the median shows slow steps that a
    median leaves out (stalls every few steps), which a user's throughput still pays."""
    if not steps:
        return "-"
    return f"{statistics.median(steps):.3f} / {statistics.fmean(steps):.3f}"


def print_step_statistics(rows, work):
    """The clock check: for each program (name, the fix's label, its untraced as-is and edited
    steps pooled), median / mean step (ms) of the untraced runs and of the trial's runs on both
    clocks. Speedups above are ratios of medians."""
    if not rows:
        return
    print()
    print("Step times, median / mean in ms (untraced after step 10; trials on the host's and the GPU's clock):")
    print("| program | untraced as is | untraced edited | trial as is, host | trial as is, GPU | tried, host "
          "| tried, GPU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, label, asis_steps, fixed_steps in rows:
        cells = [stats_cell(asis_steps), stats_cell(fixed_steps)]
        for lab in ("as-is", label):
            host, device = trial_steps(work, name, lab)
            cells += [stats_cell(host), stats_cell(device)]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def top_finding(gpuscope, capture):
    """(id, est_speedup) of the first finding `gpuscope analyze` gives the capture; None without one."""
    if not capture or not os.path.exists(capture):
        return None
    proc = subprocess.run([gpuscope, "analyze", "--json", capture], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return None
    findings = [f for d in json.loads(proc.stdout).get("devices", []) for f in d.get("findings", [])]
    if not findings:
        return ["none", None]
    best = max(findings, key=lambda f: f.get("est_speedup") or 0)
    return [best["id"], best.get("est_speedup")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpuscope", default="gpuscope")
    ap.add_argument("--programs", help="comma-separated names of programs.py (default: all)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--work")
    ap.add_argument("--resume", action="store_true", help="reuse the runs kept in --work by an earlier "
                    "invocation (untraced results, --try documents) and make only those missing")
    ap.add_argument("--rounds", type=int, default=1, help="gpuscope run --try-rounds: rounds of trials")
    ap.add_argument("--budget-s", type=float, default=3600,
                    help="begin no program once this many seconds have passed (each row is printed when done)")
    a = ap.parse_args()
    from programs import PROGRAMS  # Needs torch: after --help.
    a.programs = a.programs or ",".join(PROGRAMS)
    work = a.work or tempfile.mkdtemp(prefix="gpuscope-try-validation-")
    os.makedirs(work, exist_ok=True)
    print(f"{a.pairs} interleaved untraced pairs per program, {a.steps} steps, median after 10; one --try run each")
    print("| program | fix | edited | tried (95%) | error | as-is drift | spread | estimate | est. error "
          "| top finding |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    deadline = time.monotonic() + a.budget_s
    measured, other_steps = [], []
    for name in a.programs.split(","):
        if time.monotonic() > deadline:
            add((name, PROGRAMS[name][0], "not run: --budget-s spent"))
            continue
        fix = PROGRAMS[name][0]
        try:
            asis, fixed = [], []
            for p in range(a.pairs):
                order = (False, True) if p % 2 == 0 else (True, False)
                for f in order:
                    (fixed if f else asis).append(untraced(name, f, a.steps, work, f"{p}-{int(f)}", a.resume))
            doc = tried(a.gpuscope, name, fix, max(a.steps, 70), work, a.resume, a.rounds)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            add((name, fix, f"failed: {e}"))
            print(f"{name}: {e}", file=sys.stderr, flush=True)
            continue
        # Each run's step by the statistic the trial compares (mean steps for the fixes whose
        # effect comes as slow steps every few steps), then the median over the runs.
        typical = statistics.fmean if fix in BY_MEAN else statistics.median
        edited = statistics.median(typical(r) for r in asis) / statistics.median(typical(r) for r in fixed)
        runs = [statistics.median(r) for r in asis]
        drift = doc["as_is"]["step_ms_median"] / statistics.median(runs) - 1
        spread = f"{(max(runs) - min(runs)) / statistics.median(runs) * 100:.1f}%"
        best = [t for t in doc["tries"] if t["speedup"] is not None]
        top = doc.get("top_finding")
        top_col = (f"{top[0]} x{top[1]:.2f}" if top[1] else top[0]) if top else "-"
        row = (doc["tries"][-1] if fix == "auto" and doc["tries"] else best[0] if best else None)
        if row is None or row["speedup"] is None:
            why = "; ".join(f"{t['label']}: {t.get('error') or t.get('not_applied') or 'no speedup'}"
                            for t in doc["tries"]) or "no trial"
            add((name, fix, f"x{edited:.2f}", f"no measurement ({why[:300]})", "", "", spread, "", "", top_col))
            continue
        measured.append((name, row["label"], sum(asis, []), sum(fixed, [])))
        err = row["speedup"] / edited - 1
        estimate = row.get("estimated_speedup")
        est = f"x{estimate:.2f}" if estimate else "-"
        est_err = f"{(estimate / edited - 1) * 100:+.0f}%" if estimate else "-"
        add((name, row["label"], f"x{edited:.2f}", f"x{row['speedup']:.2f} "
                     f"(x{row['speedup_interval_95'][0]:.2f}-x{row['speedup_interval_95'][1]:.2f})",
                     f"{err * 100:+.1f}%", f"{drift * 100:+.1f}%", spread, est, est_err, top_col))
        if abs(drift) > OTHER_STEP:
            other_steps.append(f"{name}: the trial's as-is step ({doc['as_is']['step_ms_median']:.3f} ms) is not "
                               f"the program's ({statistics.median(runs):.3f} ms untraced): the trial timed "
                               "something else (a loop inside the step?), so its speedup is not the fix's")
    for line in other_steps:
        print(f"\nNote: {line}", flush=True)
    print_step_statistics(measured, work)


def add(row):
    """Prints one row of the table (a failed program's reason fills the columns it reaches)."""
    row = list(row) + [""] * (10 - len(row))
    print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
