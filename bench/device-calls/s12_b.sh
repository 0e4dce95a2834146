#!/usr/bin/env bash
# Device call (2026-12-02, twelfth session, B), binaries of main at .carry-s12/COMMIT (issue 13):
# call A again for the two item costs whose unfixed step spread most (--loader-width 1024 and
# 512): one more bounded window each (the estimate's spread) and four more interleaved pairs
# of all three.
set -u
B=$PWD/.carry-s12
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s12b.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
Z="python3 examples/pyzoo/pyzoo.py dataloader"
for w in 512 1024; do
  n=b2_w$w
  timeout 120 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/$n.gpuscope -- $Z --loader-width $w > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j $n "$(tail -1 $OUT/cur.out)" $rc
  $B/gpuscope analyze $OUT/caps/$n.gpuscope > $OUT/$n.txt 2>&1
  grep -E "ms/step ·|^  [0-9]\. |one thread|delivered" $OUT/$n.txt | cut -c1-160
done
echo "t=${SECONDS}s"
for round in 4 5 6 7; do
  for w in 128 512 1024; do
    [ $SECONDS -ge 520 ] && break 2
    j w${w}_plain_$round "$(timeout 100 $Z --loader-width $w --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
    j w${w}_fixed_$round "$(timeout 100 $Z --loader-width $w --fixed --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
  done
  echo "t=${SECONDS}s"
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
grep -v "^W1202" $OUT/err.log | tail -3; echo "t=${SECONDS}s"
