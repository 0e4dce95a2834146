#!/usr/bin/env bash
# Device call 10 (2026-11-30, session 3): DGELU_BGRAD (bf16 bias gradient) experiment; --graph on without branches.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
echo "== check bf16 fused fused graph on, bgrad"; GPUSCOPE_GPT_DGELU_BGRAD=1 timeout 60 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused --graph on 2>&1 | grep -E "FAIL|^\{|cuBLASLt" | tail -8
echo "== check bf16 fused fused graph on"; timeout 60 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused --graph on 2>&1 | grep -E "FAIL|^\{|cuBLASLt" | tail -8
ALLON="--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --steps 15"
for i in 1 2 3; do
  for v in 0 1; do
    echo "== bgrad $v ($i)"; GPUSCOPE_GPT_DGELU_BGRAD=$v timeout 60 $B/train_gpt $ALLON 2>&1 | grep -E "tokens/s|rror|cuBLASLt" | tail -2
  done
  echo "== graph on ($i)"; timeout 60 $B/train_gpt $ALLON --graph on 2>&1 | grep -E "tokens/s|rror" | tail -1
done
for v in 0 1; do
  echo "== breakdown bgrad $v"; GPUSCOPE_GPT_DGELU_BGRAD=$v timeout 90 $B/train_gpt $ALLON --steps 10 --breakdown 3 2>&1 | grep -E "^  (matmul|bias|sum)|tokens/s"
done
