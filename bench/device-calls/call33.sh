#!/usr/bin/env bash
# Device call 33 (2026-11-30, fifth session): all-on MFU of the validated binaries (commit
# 35dd7cb) on one more lent H200: three 15-step runs and one 40-step run, untraced.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,serial,clocks.max.sm --format=csv,noheader
T=(--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph on)
for steps in 15 15 15 40; do
  timeout 90 $B/train_gpt "${T[@]}" --steps $steps 2>/dev/null | grep -o '"steps":[0-9]*\|"step_ms":[0-9.]*\|"mfu_pct":[0-9.]*\|"flash_[a-z]*":"[a-z0-9_]*"' | tr '\n' ' '; echo
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader
