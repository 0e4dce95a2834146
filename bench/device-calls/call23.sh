#!/usr/bin/env bash
# Device call 23 (2026-11-30, fifth session): Nsight Compute on the trainer's flash attention
# kernels at the real shape (B 16, NH 12, T 1024), and the tracing cost of cudaMalloc/cudaFree
# (call 22's script).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
nvidia-smi --query-gpu=name,driver_version,serial,clocks.sm,clocks.max.sm,power.draw --format=csv | tee $OUT/gpu.csv
T=(--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph off --steps 1)
export GPUSCOPE_GPT_GEMM_CANDIDATES=1
export GPUSCOPE_GPT_FLASH_BWD=fused_lpt GPUSCOPE_GPT_FLASH_FWD=q128w4lpt
for k in FlashBackwardLptKernel3 FlashForwardLptKernel; do
  timeout 120 $NCU --set full -k regex:$k -c 1 --print-details all $B/train_gpt "${T[@]}" > $OUT/ncu_$k.txt 2>&1
  echo "ncu $k rc=$? lines $(wc -l < $OUT/ncu_$k.txt)"
done
grep -E "^  [A-Za-z].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|L1/TEX Hit|L2 Hit|DRAM Throughput" $OUT/ncu_*.txt | head -80
timeout 60 bash $B/call22.sh 2>&1 | tail -5
