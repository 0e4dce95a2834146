#!/usr/bin/env bash
# Device call 12 (2026-11-30, session 3): per-GEMM TFLOP/s of the all-on trainer; split-K candidates.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ALLON="--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --steps 15"
echo "== verbose, heuristic candidates"; GPUSCOPE_GPT_GEMM_VERBOSE=1 timeout 90 $B/train_gpt $ALLON 2>&1 | grep -E "^gemm|tokens/s"
echo "== verbose, + split-K"; GPUSCOPE_GPT_GEMM_VERBOSE=1 GPUSCOPE_GPT_GEMM_SPLITK=1 timeout 120 $B/train_gpt $ALLON 2>&1 | grep -E "^gemm|tokens/s"
for i in 1 2 3; do
  for v in 0 1; do echo "== splitk $v ($i)"; GPUSCOPE_GPT_GEMM_SPLITK=$v timeout 90 $B/train_gpt $ALLON 2>&1 | grep -E "tokens/s" ; done
done
for v in 0 1; do echo "== breakdown splitk $v"; GPUSCOPE_GPT_GEMM_SPLITK=$v timeout 90 $B/train_gpt $ALLON --steps 10 --breakdown 3 2>&1 | grep -E "^  (matmul|sum)"; done
