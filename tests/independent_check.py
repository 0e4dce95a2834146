#!/usr/bin/env python3
"""Independent check of gpuscope's numbers on a PyTorch profiler trace.

Recomputes, with plain Python over the raw JSON events (no gpuscope code), for each device:
  - the analysis window: steps on the device timeline (each ProfilerStep#N starts at the first
    GPU work launched during it; the last step, whose end is unknown, is left out); without
    steps, the span of the device's GPU activity,
  - busy_pct: the union of kernel intervals inside the window, over the window,
  - matmul FLOPs per step: 2*m*n*k summed over traced matmul ops (mm, addmm, bmm, baddbmm,
    matmul, linear; outermost op counted when nested) and SDPA (4*B*H*T*S*D forward,
    2x that backward),
and compares them with `gpuscope analyze --json`. Exit 1 on disagreement.

  tests/independent_check.py GPUSCOPE_BINARY TRACE...
"""
import gzip
import json
import subprocess
import sys
from collections import defaultdict

MM = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"}
SDPA_FWD = {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
            "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention"}
SDPA_BWD = {n + "_backward" for n in SDPA_FWD if n.startswith("aten::_")}


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def op_flops(name, dims):
    try:
        if name == "aten::mm":
            (m, k), (_, n) = dims[0], dims[1]
            return 2 * m * n * k
        if name == "aten::addmm":
            (m, k), (_, n) = dims[1], dims[2]
            return 2 * m * n * k
        if name == "aten::bmm":
            (b, m, k), (_, _, n) = dims[0], dims[1]
            return 2 * b * m * n * k
        if name == "aten::baddbmm":
            (b, m, k), (_, _, n) = dims[1], dims[2]
            return 2 * b * m * n * k
        if name == "aten::linear":
            x, w = dims[0], dims[1]
            return 2 * prod(x[:-1]) * x[-1] * w[0]
        if name == "aten::matmul":
            a, b = dims[0], dims[1]
            m = a[-2] if len(a) >= 2 else 1
            n = b[-1] if len(b) >= 2 else 1
            batch = max(prod(a[:-2]) if len(a) > 2 else 1, prod(b[:-2]) if len(b) > 2 else 1)
            return 2 * batch * m * n * a[-1]
        if name in SDPA_FWD or name in SDPA_BWD:
            q, k, v = dims[1:4] if name in SDPA_BWD else dims[0:3]
            f = 2 * prod(q[:3]) * k[2] * q[3] + 2 * prod(q[:3]) * k[2] * v[3]
            return 2 * f if name in SDPA_BWD else f
    except (ValueError, IndexError, TypeError):
        return None
    return None


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def expected(trace):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    us = lambda e: float(e["ts"])
    steps = sorted((us(e), us(e) + float(e.get("dur", 0))) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    launches = {e["args"]["correlation"]: us(e) for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    gpu = defaultdict(list)
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            gpu[e["args"].get("device", e.get("pid"))].append(e)
    out = {}
    for dev, evs in gpu.items():
        if steps:
            # Device-timeline steps: each starts at the first GPU work launched during its host
            # range (else its host start); the last one, whose end is unknown, is left out.
            first = [None] * len(steps)
            end = steps[-1][1]
            for e in evs:
                t = launches.get(e["args"].get("correlation"))
                if t is None:
                    continue
                for i, (s0, s1) in enumerate(steps):
                    if s0 <= t < s1:
                        first[i] = us(e) if first[i] is None else min(first[i], us(e))
                        end = max(end, us(e) + float(e["dur"]))
            starts, prev = [], float("-inf")
            for i, (s0, _) in enumerate(steps):
                prev = max(prev, first[i] if first[i] is not None else s0)
                starts.append(prev)
            start = starts[0]
            if len(steps) >= 2:
                end = starts[-1]
        else:
            start = min(us(e) for e in evs)
            end = max(us(e) + float(e["dur"]) for e in evs)
        kernels = sorted((max(us(e), start), min(us(e) + float(e["dur"]), end)) for e in evs
                         if e.get("cat") == "kernel")
        busy, cur_s, cur_e = 0.0, None, None
        for s, e in kernels:
            if e <= s:
                continue
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    busy += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            busy += cur_e - cur_s
        out[dev] = {"busy_pct": 100.0 * busy / (end - start)}

    # Matmul FLOPs: outermost counted op per thread, inside the steps.
    ops = sorted((e for e in events if e.get("cat") == "cpu_op" and (e["name"] in MM or e["name"] in SDPA_FWD
                  or e["name"] in SDPA_BWD)), key=lambda e: (us(e), -float(e.get("dur", 0))))
    until = {}
    total = 0.0
    counted = False
    for e in ops:
        key = (e["pid"], e["tid"])
        if key in until and us(e) < until[key]:
            continue
        f = op_flops(e["name"], e.get("args", {}).get("Input Dims", []))
        if f is None:
            continue
        until[key] = us(e) + float(e.get("dur", 0))
        analysed = steps[:-1] if len(steps) >= 2 else steps
        if steps and not any(s <= us(e) < t for s, t in analysed):
            continue
        total += f
        counted = True
    flops = total / max(1, len(steps) - 1 if len(steps) >= 2 else len(steps)) if counted else None
    return out, flops


def main():
    binary, paths = sys.argv[1], sys.argv[2:]
    failed = False
    for path in paths:
        exp, flops = expected(load(path))
        got = json.loads(subprocess.run([binary, "analyze", "--json", path], check=True, capture_output=True,
                                        text=True).stdout)
        for d in got["devices"]:
            e = exp.get(d["device"])
            diff = abs(d["busy_pct"] - e["busy_pct"])
            ok = diff <= 0.5
            print(f"{path} device {d['device']}: busy gpuscope {d['busy_pct']:.3f}% independent "
                  f"{e['busy_pct']:.3f}% diff {diff:.4f} {'ok' if ok else 'MISMATCH'}")
            failed |= not ok
            g = d["flops"]["matmul"]
            if flops is None:
                ok = g is None
            else:
                ok = g is not None and abs(g - flops) <= 1e-9 * flops
            print(f"  matmul FLOPs/step gpuscope {g} independent {flops} {'ok' if ok else 'MISMATCH'}")
            failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
