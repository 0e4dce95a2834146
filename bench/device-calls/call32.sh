#!/usr/bin/env bash
# Device call 32 (2026-11-30, fifth session): the validation run (scripts/validate: three zoo
# rounds, each tracing the unfixed cases again) with this session's binaries.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/validate
nvidia-smi --query-gpu=name,driver_version,serial,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee $OUT/gpu_before.csv
OUT=$OUT/validate scripts/validate $B 2>&1 | tail -32
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv | tee $OUT/gpu_after.csv
