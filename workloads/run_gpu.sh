#!/usr/bin/env bash
# One-call GPU session for the workloads (run on the GPU machine from the repository root; builds
# nothing there). Binaries come from $BIN (built on the development machine and carried).
#
#   BIN=.carry-work OUT=/some/dir bash workloads/run_gpu.sh
#
# 1. train_gpt --check (GPU gradients vs the CPU reference) in fp32/bf16 × unfused/fused;
# 2. every zoo case without and with --fixed;
# 3. the GPT-2 124M trainer, batch 16 × 1024, from all optimizations off to all on;
# 4. compute-sanitizer memcheck of one --check run, if time is left.
# Everything every program printed goes to $OUT/run.log, every JSON line to $OUT/results.jsonl,
# nvidia-smi's output to $OUT/nvidia-smi.txt; a table is printed last. (Keep it to few files: the
# device tool brings back at most 8 files from $OUT.)
set -u
BIN=${BIN:-.carry-work}
OUT=${OUT:-/tmp/workloads-out}
BUDGET_S=${BUDGET_S:-330}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
RESULTS="$OUT/results.jsonl"
LOG="$OUT/run.log"
: > "$RESULTS"
: > "$LOG"

# run NAME TIMEOUT_S CMD...: stdout JSON lines go to results.jsonl, everything to NAME.log.
run() {
  local name=$1 limit=$2
  shift 2
  if [ "$SECONDS" -ge "$BUDGET_S" ]; then
    echo "SKIPPED $name (time budget spent)" | tee -a "$OUT/skipped.txt"
    return
  fi
  echo "== $name: $*" >> "$LOG"
  timeout "$limit" "$@" > "$OUT/cur.out" 2> "$OUT/cur.err"
  local rc=$?
  cat "$OUT/cur.out" "$OUT/cur.err" >> "$LOG"
  echo "rc=$rc" >> "$LOG"
  grep '^{' "$OUT/cur.out" >> "$RESULTS"
  echo "== $name rc=$rc: $(tail -n 1 "$OUT/cur.err")" >&2
  rm -f "$OUT/cur.out" "$OUT/cur.err"
}

{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; } \
  > "$OUT/nvidia-smi.txt" 2>&1
head -n 20 "$OUT/nvidia-smi.txt"
ldd "$BIN/train_gpt" | grep -E "cublas|not found"

for p in fp32 bf16; do
  run "check_${p}_unfused" 60 "$BIN/train_gpt" --check --precision $p --kernels unfused --optimizer per-tensor
  run "check_${p}_fused" 60 "$BIN/train_gpt" --check --precision $p --kernels fused --optimizer fused
done

for c in input_bound sync_bound pageable_copy launch_bound alloc_churn underfilled_grid fp32_gemm unfused_chain \
         low_occupancy; do
  run "zoo_${c}" 60 "$BIN/zoo" $c
  run "zoo_${c}_fixed" 60 "$BIN/zoo" $c --fixed
done

G="$BIN/train_gpt --batch 16 --seq 1024"
run gpt_all_off 120 $G --precision fp32 --kernels unfused --optimizer per-tensor --input sync --steps 8
run gpt_bf16 90 $G --precision bf16 --kernels unfused --optimizer per-tensor --input sync --steps 15
run gpt_bf16_async 90 $G --precision bf16 --kernels unfused --optimizer per-tensor --input async --steps 20
run gpt_bf16_async_fusedopt 90 $G --precision bf16 --kernels unfused --optimizer fused --input async --steps 20
run gpt_all_on 90 $G --precision bf16 --kernels fused --optimizer fused --input async --steps 30 --breakdown 3
run gpt_all_on_sync 90 $G --precision bf16 --kernels fused --optimizer fused --input sync --steps 15
run gpt_all_off_breakdown 120 $G --precision fp32 --kernels unfused --optimizer per-tensor --input async --steps 3 \
  --breakdown 2
if command -v compute-sanitizer > /dev/null; then
  run sanitizer_check_bf16_fused 90 compute-sanitizer --tool memcheck "$BIN/train_gpt" --check --precision bf16 \
    --kernels fused --optimizer fused
fi

python3 - "$RESULTS" <<'PY' || cat "$RESULTS"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("\n%-34s %s" % ("run", "result"))
for r in rows:
    w = r.get("workload") or "zoo"
    if w == "zoo":
        print("zoo %-30s %.2f steps/s" % (r["case"] + (" --fixed" if r["fixed"] else ""), r["steps_per_s"]))
    elif w == "train_gpt_check":
        print("check %-28s worst grad rel err %.2e, adamw %.2e, pass %s" % (
            r["precision"] + "/" + r["kernels"], r["worst_grad_rel_err"], r["adamw_rel_err"], r["pass"]))
    elif w == "train_gpt":
        print("gpt %-30s %8.1f ms/step %9.0f tok/s  MFU %5.1f%%  loss %.3f -> %.3f" % (
            "/".join([r["precision"], r["kernels"], r["optimizer"], r["input"]]), r["step_ms"],
            r["tokens_per_s"], r["mfu_pct"], r["loss_first"], r["loss_last"]))
    elif w == "train_gpt_breakdown":
        print("breakdown %s/%s/%s, GPU ms per step (step %.1f ms):" % (
            r["precision"], r["kernels"], r["optimizer"], r["step_ms"]))
        for k, v in r.items():
            if k.endswith("_ms") and k not in ("step_ms",):
                tf = r.get(k[:-3] + "_tflops")
                print("  %-26s %8.2f%s" % (k[:-3], v, "  %6.1f TFLOP/s" % tf if tf else ""))
PY
echo "total ${SECONDS}s"
