#!/usr/bin/env python3
"""ctest report_schema: every JSON report the binary produces over the bundled inputs is valid
against the shipped JSON Schemas (schema/gpuscope.report.v1.schema.json, gpuscope.diff.v1).

usage: validate_report_schema.py GPUSCOPE [SCHEMA_DIR [TESTDATA_DIR]]

- `analyze --json` on every trace and capture file under testdata/ (and on each folder of
  per-rank traces, which gives a report with `ranks`), with and without a --model spec;
- `diff --json` on pairs of traces, captures and recorded reports;
- every recorded report under testdata/golden/.
The schemas are closed (additionalProperties false), so a field the writer adds without
documenting it fails here. Coverage is asserted too: the optional parts of the report
(serving, communication, tracing_cost, untraced, ranks) and non-null MFU must each appear in
at least one validated report, so the inputs exercise the schema's branches. Finally a report
with an unknown field, and one with a required number set to null, must fail validation.
Exit 0 when all pass, 1 otherwise (each failure names the command and the JSON path).
"""
import concurrent.futures
import copy
import json
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("report_schema: python3-jsonschema is missing (scripts/debian-packages)", file=sys.stderr)
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GPT2 = "gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16"
TRACE_SUFFIXES = (".json.gz", ".json", ".gpuscope")
# Pairs for `diff --json` (relative to testdata/): traces, captures, recorded reports.
DIFF_PAIRS = [
    ("pytorch/bf16_sync.json.gz", "pytorch/bf16_async.json.gz"),
    ("pytorch/fp32_sync.json.gz", "pytorch/bf16_compile.json.gz"),
    ("pyzoo/dataloader.gpuscope", "pyzoo/dataloader_fixed.gpuscope"),
    ("pyzoo/fp32.gpuscope", "pyzoo/fp32_fixed.gpuscope"),
    ("serve/one_window.gpuscope", "serve/graph_overlap_window.gpuscope"),
    ("golden/bf16_sync.json", "golden/bf16_async.json"),
    ("hta/trace_diff_control_control.json.gz", "hta/trace_diff_test_test.json.gz"),
    ("ddp/gloo_profiler", "ddp/gloo_capture"),
]


def inputs(testdata):
    files, rank_dirs = [], []
    for dirpath, dirnames, filenames in os.walk(testdata):
        dirnames.sort()
        traces = sorted(f for f in filenames if f.endswith(TRACE_SUFFIXES))
        rel = os.path.relpath(dirpath, testdata)
        if rel.split(os.sep)[0] == "golden":
            continue  # recorded reports, validated as they are
        files += [os.path.join(dirpath, f) for f in traces]
        if rel.split(os.sep)[0] == "ddp" and len(traces) > 1:
            rank_dirs.append(dirpath)
    return files, rank_dirs


def run(gpuscope, args):
    p = subprocess.run([gpuscope, *args], capture_output=True, text=True, timeout=300)
    return args, p


def errors_of(validator, doc):
    return [f"{'/'.join(str(x) for x in e.absolute_path) or '(root)'}: {e.message[:300]}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gpuscope = argv[1]
    schema_dir = argv[2] if len(argv) > 2 else os.path.join(ROOT, "schema")
    testdata = argv[3] if len(argv) > 3 else os.path.join(ROOT, "testdata")
    validators = {}
    for kind in ("report", "diff"):
        with open(os.path.join(schema_dir, f"gpuscope.{kind}.v1.schema.json")) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[kind] = jsonschema.Draft202012Validator(schema)

    files, rank_dirs = inputs(testdata)
    jobs = [("report", ["analyze", "--json", f]) for f in files]
    jobs += [("report", ["analyze", "--json", "--model", GPT2, f]) for f in files if "pytorch" in f]
    jobs += [("report", ["analyze", "--json", d]) for d in rank_dirs]
    jobs += [("diff", ["diff", "--json", os.path.join(testdata, a), os.path.join(testdata, b)]) for a, b in DIFF_PAIRS]

    failures, reports, diffs = [], [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {pool.submit(run, gpuscope, args): kind for kind, args in jobs}
        for fut in concurrent.futures.as_completed(futures):
            kind = futures[fut]
            args, p = fut.result()
            cmd = "gpuscope " + " ".join(os.path.relpath(a, ROOT) if os.path.isabs(a) else a for a in args)
            if p.returncode == 2 and kind == "report" and not p.stdout.strip():
                continue  # not an input analyze accepts (stderr says why); nothing to validate
            try:
                doc = json.loads(p.stdout)
            except json.JSONDecodeError as e:
                failures.append(f"{cmd}: exit {p.returncode}, output is not JSON ({e}); stderr: {p.stderr[:300]}")
                continue
            errs = errors_of(validators[kind], doc)
            failures += [f"{cmd}: {e}" for e in errs]
            if kind == "report":
                reports.append(doc)
            else:
                diffs += 1
    golden = sorted(os.path.join(testdata, "golden", f) for f in os.listdir(os.path.join(testdata, "golden")))
    for g in golden:
        with open(g) as f:
            doc = json.load(f)
        failures += [f"{os.path.relpath(g, ROOT)}: {e}" for e in errors_of(validators["report"], doc)]

    # The inputs must reach every optional part of the schema, or the closed schema proves little.
    devices = [d for r in reports for d in r["devices"]]
    coverage = {
        "ranks": any(r["ranks"] is not None for r in reports),
        "serving": any("serving" in d for d in devices),
        "communication": any("communication" in d for d in devices),
        "tracing_cost": any(d["tracing_cost"] is not None for d in devices),
        "untraced": any(d["untraced"] is not None for d in devices),
        "mfu_pct": any(d["mfu_pct"] is not None for d in devices),
        "hardware.sm_active_pct": any(d["hardware"]["sm_active_pct"] is not None for d in devices),
        "findings with est_speedup": any(f["est_speedup"] is not None for d in devices for f in d["findings"]),
    }
    for what, seen in coverage.items():
        if not seen:
            failures.append(f"coverage: no report over testdata has {what}")
    if len(reports) < 40 or diffs != len(DIFF_PAIRS):
        failures.append(f"coverage: {len(reports)} reports and {diffs} diffs validated "
                        f"(expected at least 40 and {len(DIFF_PAIRS)})")

    # The schema must reject what the writer must never produce.
    sample = next((r for r in reports if r["devices"]), None)
    if sample is None:
        failures.append("coverage: no report with a device")
    else:
        bad = copy.deepcopy(sample)
        bad["devices"][0]["undocumented_field"] = 1
        if not errors_of(validators["report"], bad):
            failures.append("schema accepts a device with an undocumented field")
        bad = copy.deepcopy(sample)
        bad["devices"][0]["busy_pct"] = None
        if not errors_of(validators["report"], bad):
            failures.append("schema accepts busy_pct null")

    for f in failures:
        print(f, file=sys.stderr)
    print(f"report_schema: {len(reports)} reports, {diffs} diffs, {len(golden)} recorded reports; "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
