#!/usr/bin/env bash
# Device call 11 (2026-11-30, session 3): checks, then the final validation run.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/validate
nvidia-smi --query-gpu=name,driver_version,serial,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee $OUT/gpu_before.csv
for cfg in "bf16 fused fused on" "bf16 fused fused off" "fp32 unfused per-tensor off" "bf16 unfused per-tensor on"; do
  set -- $cfg
  timeout 60 $B/train_gpt --check --precision $1 --kernels $2 --optimizer $3 --graph $4 2>/dev/null | grep '^{' >> $OUT/checks.jsonl
done
grep -c '"pass":true' $OUT/checks.jsonl
OUT=$OUT/validate BUDGET_S=${BUDGET_S:-400} HARD_S=${HARD_S:-420} END_S=${END_S:-445} scripts/validate $B 2>&1 | tail -32
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv | tee $OUT/gpu_after.csv
