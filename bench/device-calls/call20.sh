#!/usr/bin/env bash
# Device call 20 (2026-11-30, session 4): what the SYNCHRONIZATION and MEMORY2 activity kinds
# (unused by the analysis) cost the host-bound zoo cases under tracing. Interleaved: untraced,
# traced with them (default), traced without (GPUSCOPE_SYNC_MEMORY=0).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader
sps() { grep -o '"steps_per_s":[0-9.]*' | cut -d: -f2; }
tr() { "$B/gpuscope" run --no-report --no-calibrate --sample-interval 0 -o /tmp/c.gpuscope -- "$@" 2>/dev/null; }
for i in 1 2 3; do
  for c in "alloc_churn --steps 2000" "launch_bound --steps 100" "sync_bound --steps 750" "alloc_churn --fixed --steps 15000"; do
    u=$($B/zoo $c 2>/dev/null | sps)
    d=$(tr $B/zoo $c | sps)
    n=$(GPUSCOPE_SYNC_MEMORY=0 tr $B/zoo $c | sps)
    echo "$i $c | untraced $u | traced $d | traced-no-sync-memory $n"
  done
  echo "cal $i plain $($B/gpuscope-calibrate) traced $(tr $B/gpuscope-calibrate) traced-nsm $(GPUSCOPE_SYNC_MEMORY=0 tr $B/gpuscope-calibrate)"
done
