#!/usr/bin/env bash
# Device call (2026-12-02, twelfth session, C), binaries of main at .carry-s12c/COMMIT (issue 13):
# the pyzoo dataloader traced whole (no bounded window: the probe before the first step, the
# analysis's window after start-up) at two item costs, against the medians measured in s12_a/b;
# and launch --fixed in a bounded window (steps from the kernel pattern, now on their device spans).
set -u
B=$PWD/.carry-s12c
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s12c.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
Z="python3 examples/pyzoo/pyzoo.py"
for w in 128 1024; do
  n=whole_w$w
  timeout 150 $B/gpuscope run --no-report -o $OUT/caps/$n.gpuscope -- $Z dataloader --loader-width $w > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j $n "$(tail -1 $OUT/cur.out)" $rc
  $B/gpuscope analyze $OUT/caps/$n.gpuscope > $OUT/$n.txt 2>&1
  grep -E "ms/step ·|left out|^  [0-9]\. |delivered" $OUT/$n.txt | cut -c1-160
done
timeout 120 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/b_launch_fixed.gpuscope -- $Z launch --fixed > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j b_launch_fixed "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/b_launch_fixed.gpuscope > $OUT/b_launch_fixed.txt 2>&1
grep -E "ms/step ·|left out|steps:|^         #|^  [0-9]\. " $OUT/b_launch_fixed.txt | cut -c1-160
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
grep -v "^W1202" $OUT/err.log | tail -3; echo "t=${SECONDS}s"
