#!/usr/bin/env bash
# Device call 13 (2026-11-30, session 3): interleaved-median autotuning; extended GEMM tile/cluster search.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "== check"; timeout 60 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused --graph on 2>&1 | grep -E "FAIL|^\{" | cut -c1-220
echo "== flash_test"; timeout 60 $B/flash_test --no-bench 2>&1 | grep -c '"pass":true'
ALLON="--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --steps 15"
echo "== verbose"; GPUSCOPE_GPT_GEMM_VERBOSE=1 timeout 90 $B/train_gpt $ALLON 2>&1 | grep -E "^gemm|tokens/s" | sed 's/batch=1 //'
echo "== verbose, search"; GPUSCOPE_GPT_GEMM_VERBOSE=1 GPUSCOPE_GPT_GEMM_SEARCH=1 timeout 150 $B/train_gpt $ALLON 2>&1 | grep -E "^gemm|tokens/s" | sed 's/batch=1 //'
for i in 1 2 3; do
  for v in 0 1; do echo "== search $v ($i)"; GPUSCOPE_GPT_GEMM_SEARCH=$v timeout 150 $B/train_gpt $ALLON 2>&1 | grep -E "tokens/s" ; done
done
echo "== breakdown search 1"; GPUSCOPE_GPT_GEMM_SEARCH=1 timeout 150 $B/train_gpt $ALLON --steps 10 --breakdown 3 2>&1 | grep -E "^  (matmul|sum)|tokens/s"
