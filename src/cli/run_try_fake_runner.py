#!/usr/bin/env python3
"""Stands in for `gpuscope run` in run_try_test: parses the options `--try` gives each trial and
writes what the bootstrap would (GPUSCOPE_TRY_RESULT) and a capture (a copy of
FAKE_TRY_CAPTURE), with step times that depend on the fixes in the environment:

  as is 10 ms; tf32 5 ms; bf16 4 ms; compile 9.5 ms; fused-optimizer applied 8 ms; dataloader: no DataLoader;
  expandable-segments 9 ms when PYTORCH_CUDA_ALLOC_CONF holds it; caching-allocator 7 ms when
  PYTORCH_NO_CUDA_MEMORY_CACHING is gone. Fixes together multiply their gains. The program
  "fail" exits 3 before any step. With FAKE_TRY_DRIFT=F the as-is run made again at the end
  (capture as-is-again.gpuscope) takes F times as long per step, as on a machine that slowed;
  with FAKE_TRY_SLOW_ROUND2=F every run of the second round (NAME.2.gpuscope) does."""
import json
import os
import shutil
import sys

args = sys.argv[1:]
assert args[:3] == ["run", "--no-report", "--no-calibrate"], args
cap = args[args.index("-o") + 1]
skip = int(args[args.index("--skip-steps") + 1])
program = args[args.index("--") + 1:]
warmup = int(os.environ["GPUSCOPE_TRY_WARMUP"])
if program[-1] == "fail":
    print("Traceback: RuntimeError: CUDA out of memory", file=sys.stderr)
    sys.exit(3)
fixes = [f for f in os.environ.get("GPUSCOPE_TRY", "").split(",") if f]
ms = 10.0
outcome = {}
for f in fixes:
    if f == "tf32":
        ms /= 2
        outcome[f] = {"applied": True, "details": ["float32 matmul precision 'high'"]}
    elif f == "bf16":
        ms /= 2.5
        outcome[f] = {"applied": True, "details": ["autocast(bfloat16)"]}
    elif f == "compile":
        ms *= 0.95
        outcome[f] = {"applied": True, "details": ["torch.compile(Sequential)"]}
    elif f == "reduce-overhead":
        ms *= 0.9
        outcome[f] = {"applied": True, "details": ["torch.compile(Sequential), mode=\"reduce-overhead\""]}
    elif f == "fused-optimizer":
        if program[-1] == "own-step":
            outcome[f] = {"applied": False, "details": ["Lion has a step of its own"]}
        else:
            ms *= 0.8
            outcome[f] = {"applied": True, "details": ["AdamW(fused=True)"]}
if "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
    ms *= 0.9
if os.environ.get("FAKE_TRY_NO_CACHING") and "PYTORCH_NO_CUDA_MEMORY_CACHING" not in os.environ:
    ms *= 0.7
if os.path.basename(cap) == "as-is-again.gpuscope" and os.environ.get("FAKE_TRY_DRIFT"):
    ms *= float(os.environ["FAKE_TRY_DRIFT"])
if ".2." in os.path.basename(cap) and os.environ.get("FAKE_TRY_SLOW_ROUND2"):
    ms *= float(os.environ["FAKE_TRY_SLOW_ROUND2"])
steps = skip - warmup
# A little spread, the same in every run: +-2%.
step_ns = [int(ms * 1e6 * (1 + 0.02 * ((i % 5) - 2) / 2)) for i in range(steps)]
losses = [2.0 - 0.01 * i + (0.001 if "bf16" in fixes else 0) for i in range(skip)]
with open(os.environ["GPUSCOPE_TRY_RESULT"], "w") as out:
    json.dump({"fixes": outcome, "host_step_ns": step_ns, "device_step_ns": step_ns, "losses": losses}, out)
shutil.copyfile(os.environ["FAKE_TRY_CAPTURE"], cap)
print("program output")
