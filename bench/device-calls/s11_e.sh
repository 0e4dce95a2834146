#!/usr/bin/env bash
# Device call (2026-12-02, eleventh session, E), binaries of main at .carry-s11e/COMMIT (issue 13):
# pyzoo dataloader with items an eighth as costly (--loader-width 128), so that the fix's 8
# workers keep up: the input-bound estimate (the one-thread probe) against the fix measured
# untraced, and the fixed program traced again (the planted finding should be gone).
set -u
B=$PWD/.carry-s11e
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s11e.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
Z="python3 examples/pyzoo/pyzoo.py dataloader --loader-width 128"
for fx in "" "--fixed"; do
  n=b_light${fx:+_fixed}
  timeout 120 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/$n.gpuscope -- $Z $fx > $OUT/cur.out 2>>$OUT/err.log
  j $n "$(tail -1 $OUT/cur.out)" $?
  $B/gpuscope analyze $OUT/caps/$n.gpuscope > $OUT/$n.txt 2>&1
  grep -E "ms/step ·|^  [a-z]+ +[0-9.]+%  |^  [0-9]\. |one thread" $OUT/$n.txt | cut -c1-150
done
echo "t=${SECONDS}s"
for round in 1 2 3 4; do
  [ $SECONDS -ge 250 ] && break
  j light_plain_$round "$(timeout 100 $Z --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
  j light_fixed_$round "$(timeout 100 $Z --fixed --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
grep -v "^W1202" $OUT/err.log | tail -3; echo "t=${SECONDS}s"
