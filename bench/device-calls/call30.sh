#!/usr/bin/env bash
# Device call 30 (2026-11-30, fifth session): Nsight Compute on the wgmma backward (wgmma3_lpt) at
# the trainer's shape: details, and the SASS with per-instruction stall samples (CSV).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
T=(--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph off --steps 1)
export GPUSCOPE_GPT_GEMM_CANDIDATES=1 GPUSCOPE_GPT_FLASH_BWD=wgmma3_lpt GPUSCOPE_GPT_FLASH_FWD=wg64lpt
timeout 150 $NCU --set full --import-source no -k regex:FlashBackwardWgmma3LptKernel -c 1 -o /tmp/bwd -f \
  $B/train_gpt "${T[@]}" > $OUT/ncu_run.txt 2>&1
echo "ncu rc=$?"
$NCU -i /tmp/bwd.ncu-rep --print-details all > $OUT/ncu_wgmma3_details.txt 2>&1
$NCU -i /tmp/bwd.ncu-rep --page source --print-source sass --csv > $OUT/ncu_wgmma3_sass.csv 2>&1
wc -l $OUT/*.txt $OUT/*.csv
grep -E "Duration|L1/TEX Cache Throughput|Compute \(SM\) Throughput|SM: Pipe Tensor|Lsu Wavefronts |Achieved Occupancy|Registers Per|Issued Warp Per|Eligible Warps|No Eligible" $OUT/ncu_wgmma3_details.txt | head -20
awk '/Section: Warp State Statistics/,/Section: Instruction Statistics/' $OUT/ncu_wgmma3_details.txt | grep -E "OPT|Stall|cycles" | head -20
