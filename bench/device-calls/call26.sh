#!/usr/bin/env bash
# Device call 26 (2026-11-30, fifth session): call 25 again with more rounds, on the kinds that
# mattered: cudaMalloc/cudaFree pairs (alloc_cost) plain, traced with every kind, traced without
# SYNCHRONIZATION, traced without SYNCHRONIZATION and MEMORY2; eight interleaved rounds. Then
# alloc_churn traced both ways, three rounds.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
tr() { "$B/gpuscope" run --no-report --no-calibrate --sample-interval 0 -o /tmp/c.gpuscope -- "$@" 2>/dev/null; }
med() { grep -o '"alloc_pair_ns": [0-9]*' | grep -o '[0-9]*$'; }
for r in 1 2 3 4 5 6 7 8; do
  line="$r plain $($B/alloc_cost | med)"
  for off in none SYNCHRONIZATION SYNCHRONIZATION,MEMORY2; do
    line="$line | off=$off $(GPUSCOPE_KINDS_OFF=$off tr $B/alloc_cost | med)"
  done
  echo "$line" | tee -a $OUT/log.txt
done
sps() { grep -o '"steps_per_s":[0-9.]*' | cut -d: -f2; }
for r in 1 2 3; do
  echo "$r alloc_churn untraced $($B/zoo alloc_churn --steps 2000 2>/dev/null | sps) traced $(tr $B/zoo alloc_churn --steps 2000 | sps) traced-SYNC-MEMORY2-off $(GPUSCOPE_KINDS_OFF=SYNCHRONIZATION,MEMORY2 tr $B/zoo alloc_churn --steps 2000 | sps)" | tee -a $OUT/log.txt
done
