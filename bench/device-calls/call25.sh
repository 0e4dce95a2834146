#!/usr/bin/env bash
# Device call 25 (2026-11-30, fifth session): which CUPTI activity kind makes cudaMalloc/cudaFree
# slower under tracing (call 24: 85 us per 64 MiB pair plain, 128-145 us traced). alloc_cost
# plain, traced with every kind, and traced with one optional kind off (GPUSCOPE_KINDS_OFF), three
# interleaved rounds; then alloc_churn traced with every kind and with the culprit off.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
tr() { "$B/gpuscope" run --no-report --no-calibrate --sample-interval 0 -o /tmp/c.gpuscope -- "$@" 2>/dev/null; }
med() { grep -o '"alloc_pair_ns": [0-9]*' | grep -o '[0-9]*$'; }
for r in 1 2 3; do
  line="$r plain $($B/alloc_cost | med)"
  for off in none MEMORY2 RUNTIME SYNCHRONIZATION MEMCPY,MEMSET,RUNTIME,MARKER,SYNCHRONIZATION,MEMORY2,DEVICE; do
    line="$line | off=$off $(GPUSCOPE_KINDS_OFF=$off tr $B/alloc_cost | med)"
  done
  echo "$line" | tee -a $OUT/log.txt
done
sps() { grep -o '"steps_per_s":[0-9.]*' | cut -d: -f2; }
for r in 1 2; do
  echo "$r alloc_churn untraced $($B/zoo alloc_churn --steps 2000 2>/dev/null | sps) traced $(tr $B/zoo alloc_churn --steps 2000 | sps) traced-MEMORY2-off $(GPUSCOPE_KINDS_OFF=MEMORY2 tr $B/zoo alloc_churn --steps 2000 | sps)" | tee -a $OUT/log.txt
done
