#!/usr/bin/env bash
# Device call 15 (2026-11-30, session 3): after the clean-up of flash_attention.cuh (shared
# backward helpers) and train_gpt (one capture helper): correctness and speed unchanged?
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for g in on off; do
  echo "== check graph $g"; timeout 60 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused --graph $g 2>&1 | grep -E "FAIL|^\{" | cut -c1-200
done
echo "== flash_test"; timeout 120 $B/flash_test 2>&1 > /tmp/ft.jsonl; grep -c '"pass":true' /tmp/ft.jsonl; grep -c '"pass":false' /tmp/ft.jsonl; grep -E '"bench"|ms' /tmp/ft.jsonl | grep -v '"check"' | cut -c1-220 | tail -14
ALLON="--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --steps 15"
for i in 1 2; do echo "== all-on graph on ($i)"; timeout 90 $B/train_gpt $ALLON --graph on 2>&1 | grep tokens/s; done
