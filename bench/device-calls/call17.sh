#!/usr/bin/env bash
# Device call 17 (2026-11-30, session 4): does gpuscope-calibrate (plain vs traced launch cost of an
# empty kernel, separate processes) predict what tracing adds per launch to the zoo's launch_bound?
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version,serial,clocks.sm --format=csv,noheader
nproc; grep -m1 "model name" /proc/cpuinfo
for i in 1 2 3 4; do
  s=$(date +%s.%N); p=$($B/gpuscope-calibrate); e=$(date +%s.%N)
  echo "cal_plain $i $p wall=$(echo "$e - $s" | bc)"
  s=$(date +%s.%N); t=$($B/gpuscope run --no-report --sample-interval 0 -o /tmp/cal$i.gpuscope -- $B/gpuscope-calibrate 2>/dev/null); e=$(date +%s.%N)
  echo "cal_traced $i $t wall=$(echo "$e - $s" | bc)"
  echo "zoo_plain $i $($B/zoo launch_bound --steps 60 2>/dev/null | grep '^{')"
  echo "zoo_traced $i $($B/gpuscope run --no-report --sample-interval 0 -o /tmp/lb$i.gpuscope -- $B/zoo launch_bound --steps 60 2>/dev/null | grep '^{')"
done
