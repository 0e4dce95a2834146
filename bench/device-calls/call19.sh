#!/usr/bin/env bash
# Device call 19 and 21 (2026-11-30, session 4): the validation run with gpuscope run measuring the
# tracer's launch cost (gpuscope-calibrate before and after each traced program).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/validate
nvidia-smi --query-gpu=name,driver_version,serial,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee $OUT/gpu_before.csv
OUT=$OUT/validate BUDGET_S=${BUDGET_S:-400} HARD_S=${HARD_S:-420} END_S=${END_S:-445} scripts/validate $B 2>&1 | tail -32
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv | tee $OUT/gpu_after.csv
