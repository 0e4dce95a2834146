#!/usr/bin/env bash
# Device call 35 (2026-11-30, fifth session): Nsight Compute on the final attention kernels at the
# trainer's shape (wgmma3f_lpt backward, wg64lpt forward), for the next round of tuning: details
# and the SASS with per-instruction stall samples (CSV).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
T=(--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph off --steps 1)
export GPUSCOPE_GPT_GEMM_CANDIDATES=1 GPUSCOPE_GPT_FLASH_BWD=wgmma3f_lpt GPUSCOPE_GPT_FLASH_FWD=wg64lpt
for k in FlashBackwardWgmma3LptKernel FlashForwardWgmmaLptKernel; do
  timeout 100 $NCU --set full --import-source no -k regex:$k -c 1 -o /tmp/$k -f $B/train_gpt "${T[@]}" > /dev/null 2>&1
  echo "$k ncu rc=$?"
  $NCU -i /tmp/$k.ncu-rep --print-details all > $OUT/ncu_$k.txt 2>&1
  $NCU -i /tmp/$k.ncu-rep --page source --print-source sass --csv > $OUT/ncu_${k}_sass.csv 2>&1
  grep -E "^    Duration|SM: Pipe Tensor Cycles Active|L1: Data Pipe Lsu Wavefronts |Issued Warp Per Scheduler  " $OUT/ncu_$k.txt | head -4
done
