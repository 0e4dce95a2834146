#!/usr/bin/env bash
# Device call 22, prepared in session 4 and NOT run (the device time was spent): what tracing adds to cudaMalloc/cudaFree (64 MiB pairs,
# bench/tracing-cost/alloc_cost.cpp), beside alloc_churn traced and untraced, interleaved.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
tr() { "$B/gpuscope" run --no-report --no-calibrate --sample-interval 0 -o /tmp/c.gpuscope -- "$@" 2>/dev/null; }
sps() { grep -o '"steps_per_s":[0-9.]*' | cut -d: -f2; }
for i in 1 2; do
  echo "$i alloc plain $($B/alloc_cost) traced $(tr $B/alloc_cost)" | tee -a $OUT/log.txt
  echo "$i alloc_churn untraced $($B/zoo alloc_churn --steps 2000 2>/dev/null | sps) traced $(tr $B/zoo alloc_churn --steps 2000 | sps)" | tee -a $OUT/log.txt
done
