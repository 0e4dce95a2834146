#!/usr/bin/env python3
"""Table-building logic of validation/cuda_zoo/run (no GPU needed).

  table.py collect --name N --kind zoo|gpt|breakdown --case C --fixed 0|1 --traced 0|1 --rc RC
                            --wall-ms MS --stdout FILE --command CMD
      Parses one run's stdout (the workload's own compact JSON line(s), then, when traced,
      gpuscope's pretty-printed report) and prints one JSON record for results.jsonl.

  table.py --results results.jsonl [--out tables.md] [--notes FILE] [--summary]
      Builds the validation tables from the records; --out writes the Markdown document,
      --summary prints a short plain-text table.
"""
import argparse
import json
import statistics
import sys

# zoo case -> (planted cause in words, the gpuscope finding id that names it)
PLANTED = {
    "input_bound": ("host prepares each batch between steps", "input-bound"),
    "sync_bound": ("cudaDeviceSynchronize after every kernel", "host-sync"),
    "pageable_copy": ("synchronous copies from pageable memory", "memcpy"),
    "launch_bound": ("4096 tiny kernels per step", "launch-bound"),
    "alloc_churn": ("cudaMalloc/cudaFree every step", "allocation"),
    "underfilled_grid": ("16 blocks on 132 SMs", "small-grid"),
    "fp32_gemm": ("fp32 GEMM (no tensor cores)", "precision-fp32"),
    "unfused_chain": ("16 separate elementwise kernels", "kernel-fusion"),
    "low_occupancy": ("200 KiB shared memory per block: 1 block/SM", "low-occupancy"),
}
ZOO_ORDER = list(PLANTED)

# Trainer configurations, all off to all on; each one adds the switch named in `change` and the
# finding that should have predicted that change's effect on the previous configuration.
GPT_ORDER = [
    ("all_off", "fp32 / unfused / per-tensor / sync", None, None),
    ("bf16", "bf16 / unfused / per-tensor / sync", "bf16", "precision-fp32"),
    ("bf16_async", "bf16 / unfused / per-tensor / async", "async input", "input-bound"),
    ("bf16_async_fusedopt", "bf16 / unfused / fused / async", "fused optimizer", "optimizer-unfused"),
    # The fused-kernels switch fuses elementwise chains and replaces the materialised attention
    # with flash attention: its prediction combines both findings (saved fractions add).
    ("fused_kernels", "bf16 / fused / fused / async", "fused kernels", ("kernel-fusion", "attention-unfused")),
    # The step replayed from a CUDA graph: what the launch-bound finding recommends. When the
    # previous configuration had no launch-bound finding, gpuscope's prediction is "no gain".
    ("all_on", "bf16 / fused / fused / async / CUDA graph", "CUDA graph", "launch-bound"),
]


def combined_speedup(findings, fids):
    """The speedup of fixing every finding in fids (a name or a tuple): each finding's saved
    fraction of the step is 1 - 1/speedup; fractions of different findings add. None when none
    of them was reported."""
    fids = (fids,) if isinstance(fids, str) else fids
    got = [findings[f] for f in fids if findings.get(f)]
    if not got:
        return None
    saved = sum(1.0 - 1.0 / x for x in got)
    return 1.0 / max(1e-9, 1.0 - saved)


def fid_label(fids):
    return fids if isinstance(fids, str) else " + ".join(fids)

TARGET_ERR_PCT = 25.0


# ---------------------------------------------------------------------------------------------
# collect


def parse_stdout(text):
    """Splits a run's stdout into the workload's JSON lines and gpuscope's report (or None).

    Workload lines are compact one-line JSON objects; `gpuscope run --json` prints its report
    after the program exits, pretty-printed, starting with a line that is exactly '{'."""
    lines = text.splitlines()
    workload, report, other = [], None, []
    for i, line in enumerate(lines):
        s = line.strip()
        if s == "{":
            try:
                report = json.loads("\n".join(lines[i:]))
            except ValueError as e:
                other.append("report did not parse: %s" % e)
            break
        if s.startswith("{") and s.endswith("}"):
            try:
                workload.append(json.loads(s))
                continue
            except ValueError:
                pass
        if s:
            other.append(s)
    return workload, report, other


def shrink(report, keep=5):
    """Keeps results small (the GPU machine returns files of at most 16 MiB): per-step lists are
    cut to their first `keep` entries (steps.list_total says how many there were)."""
    for d in (report or {}).get("devices") or []:
        steps = d.get("steps") or {}
        lst = steps.get("list")
        if isinstance(lst, list) and len(lst) > keep:
            steps["list_total"] = len(lst)
            steps["list"] = lst[:keep]
    return report


def collect(a):
    with open(a.stdout, errors="replace") as f:
        workload, report, other = parse_stdout(f.read())
    report = shrink(report)
    rec = {"name": a.name, "kind": a.kind, "case": a.case, "fixed": a.fixed == "1",
           "traced": a.traced == "1", "rc": int(a.rc), "wall_ms": int(a.wall_ms), "command": a.command,
           "workload": workload, "report": report, "other_stdout": other[:20]}
    print(json.dumps(rec, separators=(",", ":")))


# ---------------------------------------------------------------------------------------------
# tables


def load(path):
    meta, runs = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if "meta" in r:
                meta = r["meta"]
            else:
                runs.append(r)
    return meta, runs


def main_device(report):
    """The device report with the most kernels (the workloads use one GPU)."""
    if not report or not report.get("devices"):
        return None
    return max(report["devices"], key=lambda d: (d.get("kernels") or {}).get("count") or 0)


def own(run, key):
    """A value of the workload's own (last) JSON line."""
    if not run or not run.get("workload"):
        return None
    return run["workload"][-1].get(key)


def find(runs, kind, case, fixed=False, traced=True):
    for r in runs:
        if r["kind"] == kind and r["case"] == case and r["fixed"] == fixed and r["traced"] == traced:
            return r
    return None


def find_all(runs, kind, case, fixed=False, traced=True):
    return [r for r in runs if r["kind"] == kind and r["case"] == case and r["fixed"] == fixed
            and r["traced"] == traced]


def paired_speedups(runs, case):
    """Fixed over unfixed steps/s of each untraced round (the k-th unfixed run with the k-th fixed)."""
    unfixed = find_all(runs, "zoo", case, traced=False)
    fixed = find_all(runs, "zoo", case, fixed=True, traced=False)
    out = [ratio(own(f, "steps_per_s"), own(u, "steps_per_s")) for u, f in zip(unfixed, fixed)]
    return [x for x in out if x is not None]


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def finding(dev, fid):
    if not dev:
        return None
    for f in dev.get("findings") or []:
        if f.get("id") == fid:
            return f
    return None


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def err_pct(pred, meas):
    return 100.0 * (pred / meas - 1.0) if pred is not None and meas else None


def util(dev):
    """Utilization columns of one device report."""
    if not dev:
        return {}
    hw = dev.get("hardware") or {}
    return {"busy": dev.get("busy_pct"), "sm_est": dev.get("sm_active_est_pct"),
            "hw_util": hw.get("gpu_util_pct"), "hw_sm": hw.get("sm_active_pct"),
            "hw_tensor": hw.get("tensor_active_pct"), "mfu": dev.get("mfu_pct"), "hfu": dev.get("hfu_pct"),
            "step_ms": (dev.get("steps") or {}).get("mean_ms")}


def spread(values, what="round"):
    """'x2.00–x4.00 (3)' over several values, 'one round' for one, 'n/a' for none."""
    values = [v for v in values if v is not None]
    if len(values) > 1:
        return "%s–%s (%d)" % (fx(min(values)), fx(max(values)), len(values))
    return "one %s" % what if values else "n/a"


def zoo_rows(runs):
    rows = []
    for case in ZOO_ORDER:
        # Traced unfixed runs, one per round: each makes its own diagnosis and prediction. The
        # first round also has the traced fixed run and gives the detailed columns.
        us, f = find_all(runs, "zoo", case), find(runs, "zoo", case, fixed=True)
        u = us[0] if us else None
        uu, fu = find(runs, "zoo", case, traced=False), find(runs, "zoo", case, fixed=True, traced=False)
        if not (u or f or uu or fu):
            continue
        cause, fid = PLANTED[case]
        devs = [main_device(x["report"]) if x.get("report") else None for x in us]
        dev = devs[0] if devs else None
        findings = (dev or {}).get("findings") or []
        top = findings[0] if findings else None
        match = finding(dev, fid)
        rank = next((i + 1 for i, x in enumerate(findings) if x.get("id") == fid), None)
        # Per traced round: did the top finding name the planted cause, and what did it predict.
        tops = [((d or {}).get("findings") or [{}])[0].get("id") for d in devs]
        named_rounds = sum(1 for t in tops if t == fid)
        preds_t = [(finding(d, fid) or {}).get("est_speedup") for d in devs]
        pred = median_of(preds_t)
        sps_t = median_of([own(x, "steps_per_s") for x in us])
        meas = ratio(own(f, "steps_per_s"), sps_t)
        # Untraced: the median over the rounds (a host-bound case varies from run to run).
        rounds_u = paired_speedups(runs, case)
        meas_u = median_of(rounds_u)
        e, e_u = err_pct(pred, meas), err_pct(pred, meas_u)
        rows.append({
            "case": case, "cause": cause, "finding_id": fid, "traced": u is not None,
            "rc": [r["rc"] for r in us + [f] if r],
            "top_id": top.get("id") if top else None, "top_speedup": top.get("est_speedup") if top else None,
            "named": bool(devs) and named_rounds == len(devs), "named_rounds": named_rounds,
            "traced_rounds": len(devs), "rank": rank, "predicted": pred,
            "predicted_rounds": [p for p in preds_t if p is not None],
            "measured": meas, "measured_untraced": meas_u, "untraced_rounds": rounds_u, "err_pct": e,
            "tracing_cost": (dev or {}).get("tracing_cost"),
            "within": e is not None and abs(e) <= TARGET_ERR_PCT,
            "err_untraced_pct": e_u, "within_untraced": e_u is not None and abs(e_u) <= TARGET_ERR_PCT,
            "sps": sps_t, "sps_fixed": own(f, "steps_per_s"),
            "sps_untraced": median_of([own(x, "steps_per_s") for x in find_all(runs, "zoo", case, traced=False)]),
            "sps_fixed_untraced": median_of([own(x, "steps_per_s")
                                             for x in find_all(runs, "zoo", case, fixed=True, traced=False)]),
            "findings": [(x.get("id"), x.get("est_speedup")) for x in findings],
            "evidence": match.get("evidence") if match else None,
            "util": util(dev), "util_fixed": util(main_device(f["report"]) if f else None),
        })
    return rows


def gpt_rows(runs):
    rows, prev = [], None
    for name, label, change, fid in GPT_ORDER:
        t, un = find(runs, "gpt", name), find(runs, "gpt", name, traced=False)
        if not (t or un):
            prev = None
            continue
        dev = main_device(t["report"]) if t else None
        findings = (dev or {}).get("findings") or []
        row = {"name": name, "label": label, "change": change, "finding_id": fid_label(fid) if fid else fid,
               "rc": [r["rc"] for r in (t, un) if r],
               "tokens_per_s": own(t, "tokens_per_s"), "mfu_own": own(t, "mfu_pct"),
               "step_ms_own": own(t, "step_ms"),
               "tokens_per_s_untraced": own(un, "tokens_per_s"), "mfu_untraced": own(un, "mfu_pct"),
               "loss_first": own(t or un, "loss_first"), "loss_last": own(t or un, "loss_last"),
               "util": util(dev), "findings": [(x.get("id"), x.get("est_speedup")) for x in findings]}
        # This change's measured effect, and the previous configuration's prediction of it.
        if prev is not None and fid:
            row["measured"] = ratio(row["tokens_per_s"], prev["tokens_per_s"])
            row["measured_untraced"] = ratio(row["tokens_per_s_untraced"], prev["tokens_per_s_untraced"])
            p = combined_speedup(dict(prev["findings"]), fid)
            row["predicted"] = p
            # No finding is a prediction too: less than the 1% a finding needs, i.e. x1.00.
            row["err_pct"] = err_pct(p if p is not None else 1.0, row["measured"])
        rows.append(row)
        prev = row
    return rows


def breakdown_rows(runs, case="all_on"):
    """Per kernel group of the trainer's --breakdown line (untraced run, kind "breakdown"): GPU ms
    per step, achieved TFLOP/s or GB/s, the roofline time and the excess over it, largest first."""
    r = find(runs, "breakdown", case, traced=False)
    line = next((x for x in (r or {}).get("workload") or [] if x.get("workload") == "train_gpt_breakdown"), None)
    if not line:
        return None
    skip = ("step_ms", "sum_ms", "breakdown_wall_ms", "roofline_sum_ms")
    groups = sorted({k[:-3] for k in line if k.endswith("_ms") and k not in skip and not k.endswith("_roofline_ms")})
    rows = []
    for g in groups:
        ms, roof = line.get(g + "_ms"), line.get(g + "_roofline_ms")
        rows.append({"group": g, "ms": ms, "tflops": line.get(g + "_tflops"), "gbps": line.get(g + "_gbps"),
                     "roofline_ms": roof, "excess_ms": ms - roof if ms is not None and roof is not None else None})
    rows.sort(key=lambda x: -(x["excess_ms"] or 0))
    return {"config": "%s / %s / %s" % (line.get("precision"), line.get("kernels"), line.get("optimizer")),
            "step_ms": line.get("step_ms"), "sum_ms": line.get("sum_ms"),
            "roofline_sum_ms": line.get("roofline_sum_ms"), "rows": rows}


def fmt(v, nd=1, suffix=""):
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        out = ("{:,.%df}" % nd).format(v)
        return (out[1:] if out.startswith("-") and not out.strip("-0.,") else out) + suffix  # no "-0"
    return str(v)


def fx(v):
    return "n/a" if v is None else ("x%.2f" % v if v < 100 else "x%.0f" % v)


def headline(zrows, grows):
    named = [r["case"] for r in zrows if r["named"]]
    missed = [r["case"] for r in zrows if not r["named"]]
    t_rounds = max((r["traced_rounds"] for r in zrows), default=0)
    outside = [r["case"] for r in zrows if not r["within"]]
    outside_u = [r["case"] for r in zrows if not r["within_untraced"]]
    n_rounds = max((len(r["untraced_rounds"]) for r in zrows), default=0)
    out = ["Zoo: the top finding names the planted cause in %d of %d cases%s%s." % (
        len(named), len(zrows), " (in every one of %d traced rounds)" % t_rounds if t_rounds > 1 else "",
        " (missed: %s)" % ", ".join(missed) if missed else ""),
        "Predicted speedup%s within ±%d%% of the speedup the fix gives the program run without gpuscope "
        "(median of %d untraced round%s) in %d of %d cases%s; of the speedup measured under tracing in "
        "%d of %d%s." % (
            " (median of the traced rounds)" if t_rounds > 1 else "", TARGET_ERR_PCT, n_rounds, "" if n_rounds == 1 else "s", len(zrows) - len(outside_u), len(zrows),
            " (outside: %s)" % ", ".join(outside_u) if outside_u else "",
            len(zrows) - len(outside), len(zrows), " (outside: %s)" % ", ".join(outside) if outside else "")]
    g = {r["name"]: r for r in grows}
    if "all_off" in g and "all_on" in g:
        a, b = g["all_off"], g["all_on"]
        out.append("Trainer: all-off %s tokens/s at MFU %s%% (gpuscope: busy %s%%, hardware util %s%%) -> "
                   "all-on %s tokens/s at MFU %s%%: %s." % (
                       fmt(a["tokens_per_s"], 0), fmt(a["mfu_own"]), fmt(a["util"].get("busy")),
                       fmt(a["util"].get("hw_util")), fmt(b["tokens_per_s"], 0), fmt(b["mfu_own"]),
                       fx(ratio(b["tokens_per_s"], a["tokens_per_s"]))))
    return out


def breakdown_markdown(b):
    L = ["## Trainer all-on: GPU time per kernel group against its roofline", "",
         "From `train_gpt --breakdown 3` (%s, untraced, same binaries): CUDA events around each group of "
         "kernels, GPU ms per step. Roofline ms = FLOPs / 790 TFLOP/s (bf16 GEMM ceiling measured on the H200, "
         "GPU.md) for GEMM groups, or minimum DRAM bytes / 4.3 TB/s (measured copy ceiling) for the others; "
         "excess = measured − roofline. Timed step %s ms; sum of groups %s ms; sum of rooflines %s ms." % (
             b["config"], fmt(b["step_ms"]), fmt(b["sum_ms"]), fmt(b["roofline_sum_ms"])), "",
         "| group | ms per step | TFLOP/s | GB/s | roofline ms | excess ms |", "| --- | --- | --- | --- | --- | --- |"]
    for r in b["rows"]:
        L.append("| %s | %s | %s | %s | %s | %s |" % (r["group"], fmt(r["ms"], 2), fmt(r["tflops"]),
                                                      fmt(r["gbps"], 0), fmt(r["roofline_ms"], 2),
                                                      fmt(r["excess_ms"], 2)))
    L.append("")
    return L


def markdown(meta, zrows, grows, notes="", breakdown=None):
    L = []
    w = L.append
    w("# Validation: gpuscope's diagnoses on workloads with known behaviour")
    w("")
    w("Generated by `validation/cuda_zoo/table.py` from the results of one run of "
      "`validation/run diagnoses`. Do not edit the tables by hand.")
    w("")
    w("| | |")
    w("| --- | --- |")
    for k, label in (("date_utc", "date"), ("gpu", "GPU"), ("driver", "driver"), ("commit", "commit"),
                     ("command", "command")):
        if meta.get(k):
            w("| %s | %s |" % (label, ("`%s`" % meta[k]) if k == "command" else meta[k]))
    w("")
    w("Every zoo case ran with and without `--fixed` under `gpuscope run --json` (~2-4 s of steps each), "
      "and without gpuscope, in rounds interleaved in time: the first round traces the unfixed and the "
      "fixed program, later rounds trace the unfixed one again; every round runs both untraced. Each traced "
      "unfixed run is diagnosed on its own: its top finding, and the predicted speedup (`est_speedup` of "
      "the finding that names the planted cause); the table gives the median prediction and its range. "
      "Measured speedup: the workload's own steps/s, fixed over unfixed, both untraced (the speedup a user "
      "sees without gpuscope: the median over the rounds, with their range), and both traced (the fixed "
      "run over the median unfixed one). A host-bound case's own speed varies by up to ~25%% from run to "
      "run on a lent host, on both sides of the comparison, hence the medians. `gpuscope run` measures what tracing adds to each launch call on the host before and "
      "after the program and takes it out of the idle it explains, so its predictions are for the "
      "untraced program. Error = predicted / measured − 1; target ±%d%%." % TARGET_ERR_PCT)
    w("")
    w("## Headline")
    w("")
    for h in headline(zrows, grows):
        w("- " + h)
    w("")
    w("## Zoo: diagnosis and predicted vs measured speedup")
    w("")
    w("| case | planted cause | expected finding | gpuscope top finding | names it | rank of expected | "
      "predicted (median) | range over traced rounds | measured (untraced, median) | range over rounds | "
      "error | within ±%d%% | measured (traced) | error (traced) | within (traced) |" % TARGET_ERR_PCT)
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in zrows:
        top = "%s %s" % (r["top_id"], fx(r["top_speedup"])) if r["top_id"] else "none"
        named = fmt(r["named"])
        if r["traced_rounds"] > 1:
            named += " (%d of %d)" % (r["named_rounds"], r["traced_rounds"])
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["case"], r["cause"], r["finding_id"], top, named, r["rank"] if r["rank"] else "absent",
            fx(r["predicted"]), spread(r["predicted_rounds"]), fx(r["measured_untraced"]),
            spread(r["untraced_rounds"]),
            fmt(r["err_untraced_pct"], 0, "%") if r["err_untraced_pct"] is not None else "n/a",
            fmt(r["within_untraced"]), fx(r["measured"]),
            fmt(r["err_pct"], 0, "%") if r["err_pct"] is not None else "n/a",
            fmt(r["within"])))
    w("")
    w("All findings of each unfixed run (the first traced round), by estimated speedup:")
    w("")
    for r in zrows:
        fs = ", ".join("%s %s" % (i, fx(s)) for i, s in r["findings"]) or "none"
        tc = r.get("tracing_cost")
        if tc:
            fs += " (tracing cost measured: %.1f → %.1f µs per launch call, +%.1f µs)" % (
                tc["plain_launch_us"], tc["traced_launch_us"], tc["added_per_launch_us"])
        w("- `%s`: %s" % (r["case"], fs))
    w("")
    w("## Zoo: throughput and utilization vs SM active vs tensor active vs MFU")
    w("")
    w("busy = union of kernel time over the window (what nvidia-smi's utilization measures), from the trace; "
      "SM est. = gpuscope's estimate from grid sizes; hw = NVML/GPM readings during the run. MFU only "
      "where the FLOPs per step are known (fp32_gemm: `--flops-per-step 2·4096³`).")
    w("")
    w("| case | run | steps/s traced | steps/s untraced | step ms (gpuscope) | busy % | SM est. % | hw util % | "
      "hw SM active % | hw tensor % | MFU % |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in zrows:
        for tag, u, s, su in (("unfixed", r["util"], r["sps"], r["sps_untraced"]),
                              ("fixed", r["util_fixed"], r["sps_fixed"], r["sps_fixed_untraced"])):
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["case"], tag, fmt(s, 1), fmt(su, 1), fmt(u.get("step_ms"), 3), fmt(u.get("busy")),
                fmt(u.get("sm_est")), fmt(u.get("hw_util")), fmt(u.get("hw_sm")), fmt(u.get("hw_tensor")),
                fmt(u.get("mfu"))))
    w("")
    w("## GPT-2 124M trainer, batch 16 × 1024: the seed's table")
    w("")
    w("Each configuration under `gpuscope run --json --model gpt:params=123653376,layers=12,heads=12,"
      "dmodel=768,seq=1024,batch=16`. tokens/s and MFU are the trainer's own (same 6N + 12·L·H·Q·T "
      "formula and 989.4 TFLOP/s peak as gpuscope); the other columns are gpuscope's report.")
    w("")
    w("| configuration | tokens/s traced | tokens/s untraced | MFU % (own, traced) | MFU % (gpuscope) | "
      "busy % | SM est. % | hw util % | hw SM active % | hw tensor % | top findings |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in grows:
        u = r["util"]
        fs = ", ".join("%s %s" % (i, fx(s)) for i, s in r["findings"][:3]) or "none"
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], fmt(r["tokens_per_s"], 0), fmt(r["tokens_per_s_untraced"], 0), fmt(r["mfu_own"]),
            fmt(u.get("mfu")), fmt(u.get("busy")), fmt(u.get("sm_est")), fmt(u.get("hw_util")),
            fmt(u.get("hw_sm")), fmt(u.get("hw_tensor")), fs))
    w("")
    w("Each optimization's effect, and what gpuscope predicted for it on the configuration before:")
    w("")
    w("| change | finding on the previous configuration | predicted | measured tokens/s ratio (traced) | "
      "error | measured (untraced) |")
    w("| --- | --- | --- | --- | --- | --- |")
    for r in grows:
        if not r.get("change"):
            continue
        w("| %s | %s | %s | %s | %s | %s |" % (
            r["change"], r["finding_id"],
            fx(r.get("predicted")) if r.get("predicted") else "not reported (x1.00)",
            fx(r.get("measured")), fmt(r.get("err_pct"), 0, "%") if r.get("err_pct") is not None else "n/a",
            fx(r.get("measured_untraced"))))
    w("")
    g = {r["name"]: r for r in grows}
    w("Issue targets for the trainer:")
    w("")
    if "all_off" in g:
        a = g["all_off"]
        bu, mf = a["util"].get("busy"), a["mfu_own"]
        hu = a["util"].get("hw_util")
        w("- All-off shows the seed's signature (utilization ≥ 95%%, MFU ≤ 15%%): busy %s%%, hardware "
          "utilization %s%%, MFU %s%%: %s." % (
              fmt(bu), fmt(hu), fmt(mf),
              "met" if (hu if hu is not None else bu or 0) >= 95 and (mf or 100) <= 15 else "not met"))
    if "all_on" in g:
        mf = g["all_on"]["mfu_untraced"] if g["all_on"]["mfu_untraced"] is not None else g["all_on"]["mfu_own"]
        w("- All-on ≥ 50%% MFU: %s%% (%s): %s." % (
            fmt(mf), "untraced" if g["all_on"]["mfu_untraced"] is not None else "traced",
            "met" if (mf or 0) >= 50 else "not met"))
    w("")
    if breakdown:
        L.extend(breakdown_markdown(breakdown))
    bad = [r for r in zrows + grows if any(rc != 0 for rc in r["rc"])]
    if bad:
        w("Runs with a non-zero exit code: %s." % ", ".join(
            "%s (%s)" % (r.get("case") or r.get("name"), r["rc"]) for r in bad))
        w("")
    if notes.strip():
        w(notes.strip())
        w("")
    return "\n".join(L)


def summary(zrows, grows):
    out = ["%-17s %-15s %-22s %-7s %8s %9s %7s %9s %7s" % ("case", "expected", "top finding", "named", "pred",
                                                            "untraced", "err", "traced", "err")]
    for r in zrows:
        out.append("%-17s %-15s %-22s %-7s %8s %9s %7s %9s %7s" % (
            r["case"], r["finding_id"], "%s %s" % (r["top_id"], fx(r["top_speedup"])) if r["top_id"] else "none",
            fmt(r["named"]) + ("%d/%d" % (r["named_rounds"], r["traced_rounds"]) if r["traced_rounds"] > 1 else ""),
            fx(r["predicted"]), fx(r["measured_untraced"]),
            fmt(r["err_untraced_pct"], 0, "%") if r["err_untraced_pct"] is not None else "n/a",
            fx(r["measured"]), fmt(r["err_pct"], 0, "%") if r["err_pct"] is not None else "n/a"))
    out.append("")
    out.append("%-36s %10s %10s %6s %6s %6s %6s %6s" % ("trainer", "tok/s", "untraced", "MFU", "busy", "hwSM",
                                                        "tensor", "gsMFU"))
    for r in grows:
        u = r["util"]
        out.append("%-36s %10s %10s %6s %6s %6s %6s %6s" % (
            r["label"], fmt(r["tokens_per_s"], 0), fmt(r["tokens_per_s_untraced"], 0), fmt(r["mfu_own"]),
            fmt(u.get("busy")), fmt(u.get("hw_sm")), fmt(u.get("hw_tensor")), fmt(u.get("mfu"))))
    out.append("")
    out.extend(headline(zrows, grows))
    return "\n".join(out)


def main(argv):
    if argv and argv[0] == "collect":
        p = argparse.ArgumentParser(prog="table.py collect")
        for k in ("name", "kind", "case", "fixed", "traced", "rc", "wall-ms", "stdout", "command"):
            p.add_argument("--" + k, required=True)
        collect(p.parse_args(argv[1:]))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("--results", required=True)
    p.add_argument("--out")
    p.add_argument("--notes")
    p.add_argument("--summary", action="store_true")
    p.add_argument("--command", help="the exact command that produced the results (for the document)")
    a = p.parse_args(argv)
    meta, runs = load(a.results)
    if a.command:
        meta["command"] = a.command
    zrows, grows = zoo_rows(runs), gpt_rows(runs)
    if a.out:
        notes = open(a.notes).read() if a.notes else ""
        with open(a.out, "w") as f:
            f.write(markdown(meta, zrows, grows, notes, breakdown_rows(runs)))
    if a.summary or not a.out:
        print(summary(zrows, grows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
