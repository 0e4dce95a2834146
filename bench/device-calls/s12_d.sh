#!/usr/bin/env bash
# Device call (2026-12-02, twelfth session, D), binaries of main at .carry-s12d/COMMIT (issue 13):
# a DataLoader with too few workers (pyzoo dataloader --fixed --workers 2, 16 CPUs): the probe's
# copy times the advised 8 together and the input finding predicts the step from that pace;
# against --workers 8 measured untraced (--warmup 40), interleaved pairs, two item costs.
set -u
B=$PWD/.carry-s12d
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s12d.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
Z="python3 examples/pyzoo/pyzoo.py dataloader --fixed"
for w in 128 1024; do
  n=b_few_w$w
  timeout 150 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/$n.gpuscope -- $Z --workers 2 --loader-width $w > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j $n "$(tail -1 $OUT/cur.out)" $rc
  $B/gpuscope analyze $OUT/caps/$n.gpuscope > $OUT/$n.txt 2>&1
  grep -E "ms/step ·|^  [0-9]\. |delivered" $OUT/$n.txt | cut -c1-160
done
echo "t=${SECONDS}s"
for round in 1 2 3; do
  for w in 128 1024; do
    [ $SECONDS -ge 400 ] && break 2
    j w${w}_two_$round "$(timeout 100 $Z --workers 2 --loader-width $w --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
    j w${w}_eight_$round "$(timeout 100 $Z --workers 8 --loader-width $w --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
  done
  echo "t=${SECONDS}s"
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
grep -v "^W1202" $OUT/err.log | tail -3; echo "t=${SECONDS}s"
