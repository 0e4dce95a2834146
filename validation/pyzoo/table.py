#!/usr/bin/env python3
"""The PyTorch zoo's validation table from validation/pyzoo/run's pyzoo.jsonl.

usage: table.py PYZOO_JSONL [--markdown]
       table.py --residuals RESIDUALS_JSONL [--markdown]

Per case: the planted finding, whether it is the top finding in every traced round, its
prediction (median over rounds) against the measured speedup of the fix (median untraced step
unfixed / median untraced step fixed), the error, and after the fix (traced again) the planted
finding's estimate and the largest other finding. The healthy control passes when no finding
exceeds x1.05. --residuals: each residual finding of a fixed case beside the speedup measured by
applying it (validation/pyzoo/run's RESIDUALS mode) and the error.
"""
import json
import statistics
import sys

PLANTED = {"launch": "launch-bound", "item": "host-sync", "dataloader": "input-bound", "pageable": "memcpy",
           "alloc": "allocation", "optimizer": "optimizer-unfused", "fp32": "precision-fp32",
           "attention": "attention-unfused", "healthy": None,
           # hidden-style cases (validation/pyzoo/run's PYZOO_SET=hidden)
           "lstm": "launch-bound", "pageable_both": "memcpy", "numpy_aug": "host-bound",
           "attention_bidir": "attention-unfused", "tolist_layers": "host-sync", "fp32_encoder": "precision-fp32",
           "adam_loop": "optimizer-unfused", "grad_norms": "host-sync", "alloc_conv": "allocation", "loader_images": "input-bound",
           "launch_conv": "launch-bound"}


def est(rec, fid):
    for f in rec.get("gpuscope", {}).get("findings", []):
        if f["id"] == fid:
            return f["est_speedup"]
    return None


def residuals(path, md):
    head = ("case", "residual finding", "estimate", "applied", "measured", "error")
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + " --- |" * len(head))
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        meas = r["speedup"]
        err = f"{(r['estimate'] / meas - 1) * 100:+.0f}%" if meas else "-"
        cells = [r["case"], r["residual"], f"x{r['estimate']:.2f}", r["applied"] or "no way here",
                 f"x{meas:.2f}" if meas else ("failed" if r["applied"] else "-"), err]
        print(("| " + " | ".join(cells) + " |") if md else "  ".join(f"{c:<16}" for c in cells))


def main():
    if sys.argv[1] == "--residuals":
        return residuals(sys.argv[2], "--markdown" in sys.argv)
    recs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    md = "--markdown" in sys.argv
    rows = []
    for case, planted in PLANTED.items():
        mine = [r for r in recs if r["case"] == case]
        if not mine:
            continue
        base = [r["step_ms"] for r in mine if not r["traced"] and not r["fixed"] and r["step_ms"]]
        fixed = [r["step_ms"] for r in mine if not r["traced"] and r["fixed"] and r["step_ms"]]
        measured = statistics.median(base) / statistics.median(fixed) if base and fixed else None
        traced = [r for r in mine if r["traced"] and not r["fixed"] and "gpuscope" in r]
        after = [r for r in mine if r["traced"] and r["fixed"] and "gpuscope" in r]
        tops = [(r["gpuscope"]["findings"] or [{"id": "none", "est_speedup": 1.0}])[0] for r in traced]
        if planted:
            named = bool(tops) and all(t["id"] == planted for t in tops)
            preds = [est(r, planted) for r in traced if est(r, planted)]
            pred = statistics.median(preds) if preds else None
        else:
            named = bool(tops) and all(t["est_speedup"] <= 1.05 for t in tops)
            pred = max((t["est_speedup"] for t in tops), default=None)
        err = (pred / measured - 1) * 100 if pred and measured and planted else None
        after_planted = max((est(r, planted) or 1.0 for r in after), default=None) if planted else None
        after_other = max(((f["est_speedup"], f["id"]) for r in after for f in r["gpuscope"]["findings"]
                           if f["id"] != planted), default=(None, ""))
        steps = traced[0]["gpuscope"]["steps"] if traced else {}
        rows.append((case, planted or "(none > x1.05)", ",".join(sorted({t["id"] for t in tops})), named, pred,
                     measured, err, after_planted, after_other, f'{steps.get("source")} x{steps.get("count")}'))
    head = ("case", "planted", "top finding", "named", "predicted", "measured", "error", "after fix: planted",
            "after fix: largest other", "steps")
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + " --- |" * len(head))
    for case, planted, top, named, pred, meas, err, ap, ao, steps in rows:
        cells = [case, planted, top, "yes" if named else "NO", f"x{pred:.2f}" if pred else "-",
                 f"x{meas:.2f}" if meas else "-", f"{err:+.0f}%" if err is not None else "-",
                 f"x{ap:.2f}" if ap else ("-" if ap is None else "none"),
                 f"{ao[1]} x{ao[0]:.2f}" if ao[0] else "none", steps]
        print(("| " + " | ".join(cells) + " |") if md else "  ".join(f"{c:<14}" for c in cells))


if __name__ == "__main__":
    main()
