#!/usr/bin/env python3
"""Every figure docs/ quotes from a report on a bundled trace, regenerated from the binary.

A generated block in a Markdown file is

    <!-- generated: KIND ARGS -->
    ...
    <!-- end generated -->

and its content is what KIND prints from the current binary (run from the repository root):
  output gpuscope ARGS... [| head -N]   the command's stdout in a text fence (first N lines)
  traces-vs-own                         the bundled GPT-2 traces analysed with --model, beside the
                                        training script's own untraced numbers
                                        (testdata/pytorch/results.jsonl)
  trace-predictions                     findings on those traces against the measured effect of
                                        the fix (results.jsonl's untraced step times)
  diff-headlines                        `diff --json` of each bundled GPT-2 trace against the next:
                                        the change it names and the step-time ratio
  prometheus-families                   `gpuscope serve` against the build tree's fake NVML: every
                                        family's name, type and help
  schema-fields report|diff             every field path of schema/gpuscope.KIND.v1.schema.json:
                                        type, whether null, description

usage: docs_figures.py GPUSCOPE [--write] [FILE.md...]     (default: docs/*.md)
Without --write, exits 1 (with a diff) when a block differs from what the binary prints, or when
a file has no generated block but names `<!-- generated` wrongly; with --write, rewrites them.
ctest docs_figures runs it without --write.
"""
import difflib
import glob
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- generated: (.+?) -->\n)(.*?)(<!-- end generated -->)", re.S)
CONFIGS = ["fp32_sync", "bf16_sync", "bf16_async", "bf16_compile"]
# The fix that turns one bundled configuration into the next, and the finding that names it.
FIXES = [("bf16_sync", "input-bound", "async DataLoader, pinned memory, non_blocking copies", "bf16_async"),
         ("bf16_async", "kernel-fusion", "torch.compile", "bf16_compile")]


def run_json(gpuscope, args):
    p = subprocess.run([gpuscope, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def own_results():
    with open(os.path.join(ROOT, "testdata", "pytorch", "results.jsonl")) as f:
        return {r["label"]: r for r in map(json.loads, f) if "label" in r}


def model_spec(r):
    return "gpt:params=%.2fM,layers=%d,heads=12,dmodel=768,seq=%d,batch=%d" % (
        r["params"] / 1e6, r["layers"], r["seq"], r["batch"])


def fmt(x, digits=1):
    return "null" if x is None else f"{x:.{digits}f}"


def traces_vs_own(gpuscope, _args):
    own = own_results()
    rows = ["| trace | busy % | SM active est. % | step ms (traced) | MFU % | HFU % | step ms (own, untraced) "
            "| MFU % (own, untraced) | findings (est. speedup) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in CONFIGS:
        r = own[c]
        d = run_json(gpuscope, ["analyze", "--json", "--model", model_spec(r),
                                f"testdata/pytorch/{c}.json.gz"])["devices"][0]
        found = ", ".join(f"{f['id']} x{f['est_speedup']:.2f}" for f in d["findings"][:3]
                          if f["est_speedup"] is not None) or "none"
        rows.append(f"| {c} | {fmt(d['busy_pct'])} | {fmt(d['sm_active_est_pct'])} | {fmt(d['steps']['mean_ms'], 2)} "
                    f"| {fmt(d['mfu_pct'])} | {fmt(d['hfu_pct'])} | {r['step_ms']:.2f} | {r['mfu_pct']:.1f} | {found} |")
    return "\n".join(rows) + "\n"


def trace_predictions(gpuscope, _args):
    own = own_results()
    rows = ["| finding on | predicted | fix | measured (untraced steps) | error |", "| --- | --- | --- | --- | --- |"]
    for base, fid, fix, new in FIXES:
        d = run_json(gpuscope, ["analyze", "--json", f"testdata/pytorch/{base}.json.gz"])["devices"][0]
        pred = next((f["est_speedup"] for f in d["findings"] if f["id"] == fid), None)
        a, b = own[base]["step_ms"], own[new]["step_ms"]
        meas = a / b
        pred_s = "not reported" if pred is None else f"x{pred:.2f}"
        err = "n/a" if pred is None else f"{(pred / meas - 1) * 100:+.0f}%"
        rows.append(f"| {base}: {fid} | {pred_s} | {fix} (→ {new}) | {a:.2f} → {b:.2f} ms = x{meas:.2f} | {err} |")
    return "\n".join(rows) + "\n"


def diff_headlines(gpuscope, _args):
    rows = ["| BASE -> NEW | named change (ms per step) | step time NEW / BASE | comparable |",
            "| --- | --- | --- | --- |"]
    for a, b in zip(CONFIGS, CONFIGS[1:]):
        d = run_json(gpuscope, ["diff", "--json", f"testdata/pytorch/{a}.json.gz",
                                f"testdata/pytorch/{b}.json.gz"])["devices"][0]
        h = d["headline"]
        kind = {"idle": "idle", "kernel_category": "kernel time", "precision": "precision"}[h["kind"]]
        change = f"{kind} {h['name']} {h['base_ms']:.1f} -> {h['new_ms']:.1f}"
        comparable = "yes" if d["comparable"] else "no: " + "; ".join(d["warnings"])
        rows.append(f"| {a} -> {b} | {change} | x{d['step_time_ratio']:.2f} | {comparable} |")
    return "\n".join(rows) + "\n"


def prometheus_families(gpuscope, _args):
    """`gpuscope serve` against the fake NVML (built beside the binary, src/nvml) on the bundled
    fixtures, one scrape each: every family's name, type and help."""
    import socket
    import time
    import urllib.request
    fake = os.path.join(os.path.dirname(os.path.dirname(gpuscope)), "nvml", "libgpuscope_fake_nvml.so")
    if not os.path.exists(fake):
        raise FileNotFoundError(f"prometheus-families needs the build tree's fake NVML: {fake}")
    families = {}
    for fixture in ("synthetic_2gpu.txt", "synthetic_health.txt"):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = dict(os.environ, GPUSCOPE_NVML_LIBRARY=fake,
                   GPUSCOPE_FAKE_NVML_FIXTURE=os.path.join(ROOT, "testdata", "nvml", fixture),
                   GPUSCOPE_PROC_ROOT=os.path.join(ROOT, "testdata", "nvml", "proc"))
        server = subprocess.Popen([gpuscope, "serve", "--listen", f"127.0.0.1:{port}", "--interval", "100ms"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            text = None
            for _ in range(100):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                        text = r.read().decode()
                    if "# HELP" in text:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            if not text:
                raise RuntimeError(f"gpuscope serve answered no /metrics with {fixture}")
        finally:
            server.terminate()
            server.wait(timeout=10)
        kinds = dict(re.findall(r"^# TYPE (\S+) (\S+)", text, re.M))
        for name, help_text in re.findall(r"^# HELP (\S+) (.*)$", text, re.M):
            families[name] = (kinds.get(name, ""), help_text)
    rows = ["| family | type | help |", "| --- | --- | --- |"]
    rows += [f"| `{n}` | {t} | {h.replace('|', '/')} |" for n, (t, h) in sorted(families.items())]
    return "\n".join(rows) + "\n"


def schema_fields(_gpuscope, args):
    kind = args[0]
    with open(os.path.join(ROOT, "schema", f"gpuscope.{kind}.v1.schema.json")) as f:
        schema = json.load(f)
    defs = schema.get("$defs", {})
    rows = ["| field | type | description |", "| --- | --- | --- |"]

    def resolve(node):
        seen = 0
        while "$ref" in node and seen < 10:
            ref = defs[node["$ref"].split("/")[-1]]
            merged = {**ref, **{k: v for k, v in node.items() if k != "$ref"}}
            if "properties" in ref and "properties" in node:
                merged["properties"] = {**ref["properties"], **node["properties"]}
            if "required" in ref and "required" in node:
                merged["required"] = ref["required"] + node["required"]
            node, seen = merged, seen + 1
        return node

    def type_of(node):
        node = resolve(node)
        if "oneOf" in node:
            parts = [type_of(n) for n in node["oneOf"]]
            return " or ".join(parts)
        if "const" in node:
            return f"`{json.dumps(node['const'])}`"
        if "enum" in node:
            return "one of " + ", ".join(f"`{e}`" for e in node["enum"])
        t = node.get("type", "object" if "properties" in node else "any")
        t = " or ".join(t) if isinstance(t, list) else t
        if t == "array":
            return "array of " + type_of(node.get("items", {}))
        return t

    def walk(path, node, description="", optional=False):
        node = resolve(node)
        desc = description or node.get("description", "")
        obj = node
        if "oneOf" in node:
            obj = next((resolve(n) for n in node["oneOf"] if "properties" in resolve(n)), node)
        if path:
            t = type_of(node)
            note = " (absent when not applicable)" if optional else ""
            rows.append(f"| `{path}` | {t.replace('|', '/')} | {desc.replace('|', '/')}{note} |")
        if node.get("type") == "array" and "items" in node:
            obj = resolve(node["items"])
            if "oneOf" in obj:
                obj = next((resolve(n) for n in obj["oneOf"] if "properties" in resolve(n)), obj)
            path += "[]"
        required = set(obj.get("required", []))
        for name, sub in obj.get("properties", {}).items():
            walk(f"{path}.{name}" if path else name, sub, sub.get("description", ""), name not in required)

    walk("", schema)
    return "\n".join(rows) + "\n"


def output(gpuscope, args):
    head = None
    if "|" in args:
        i = args.index("|")
        pipe, args = args[i + 1:], args[:i]
        if len(pipe) != 2 or pipe[0] != "head" or not pipe[1].startswith("-"):
            raise ValueError("only `| head -N` may follow the command")
        head = int(pipe[1][1:])
    if not args or args[0] != "gpuscope":
        raise ValueError("an output block's command starts with gpuscope")
    p = subprocess.run([gpuscope, *args[1:]], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"})
    lines = p.stdout.splitlines()
    if head is not None:
        lines = lines[:head]
    return "```text\n" + "\n".join(lines) + "\n```\n"


KINDS = {"traces-vs-own": traces_vs_own, "trace-predictions": trace_predictions, "diff-headlines": diff_headlines,
         "prometheus-families": prometheus_families,
         "schema-fields": schema_fields, "output": output}


def regenerate(gpuscope, text, where):
    def one(m):
        words = shlex.split(m.group(2).split(" (")[0] if not m.group(2).startswith("output") else m.group(2))
        kind, args = words[0], words[1:]
        if kind not in KINDS:
            raise ValueError(f"{where}: unknown generated block '{kind}' (known: {', '.join(KINDS)})")
        return m.group(1) + KINDS[kind](gpuscope, args) + m.group(4)
    return BLOCK.sub(one, text)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gpuscope = os.path.abspath(argv[1])
    write = "--write" in argv
    files = [a for a in argv[2:] if a != "--write"] or sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    bad, blocks = 0, 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        n = len(BLOCK.findall(text))
        if text.count("<!-- generated:") != n:
            print(f"{path}: a '<!-- generated:' marker without its '<!-- end generated -->'", file=sys.stderr)
            bad += 1
            continue
        blocks += n
        new = regenerate(gpuscope, text, path)
        if new == text:
            continue
        if write:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            continue
        bad += 1
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), path, "binary"))
    if bad and not write:
        print(f"docs_figures: {bad} file(s) differ from what the binary prints: run "
              "scripts/docs_figures.py build/src/cli/gpuscope --write", file=sys.stderr)
        return 1
    if blocks == 0:
        print("docs_figures: no generated block found", file=sys.stderr)
        return 1
    print(f"docs_figures: {blocks} generated blocks in {len(files)} files match the binary")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
