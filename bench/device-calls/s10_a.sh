#!/usr/bin/env bash
# Device call (2026-12-02, tenth session, A), binaries of main at .carry-s10/COMMIT:
#  1. issue 16: decode.py --graph (and --overlap) at saturation under a bounded window: the
#     program must finish (it died with "unspecified launch failure" after the window closed
#     before the tracer left CUPTI attached once a graph launch was seen);
#  2. issue 13: every pyzoo case, unfixed and fixed, in a bounded window (--steps 15
#     --skip-steps 12: the bootstrap measures the untraced step before the window);
#  3. issue 13: the next fix of each fixed case, measured in one process (pyzoo --compare).
set -u
B=$PWD/.carry-s10
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s10a.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
D="python3 examples/serve/decode.py"
Z="python3 examples/pyzoo/pyzoo.py"
# 1.
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128"
for v in "--graph" "--graph --overlap"; do
  n=graphwin$(echo $v | tr -d ' -')
  timeout 150 $B/gpuscope run --no-report --steps 60 --skip-steps 30 -o $OUT/caps/$n.gpuscope -- $D $SAT $v > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j $n "$(tail -1 $OUT/cur.out)" $rc
  $B/gpuscope analyze $OUT/caps/$n.gpuscope > $OUT/$n.txt 2>&1
  grep -E "ms/step|untraced, a step|^  [0-9]\. " $OUT/$n.txt | cut -c1-150
done
echo "t=${SECONDS}s"
# 2.
for c in launch item pageable alloc optimizer fp32 attention dataloader healthy; do
  for f in "" "--fixed"; do
    [ $SECONDS -ge 330 ] && break
    n=b_${c}${f:+_fixed}
    timeout 90 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/$n.gpuscope -- $Z $c $f > $OUT/cur.out 2>>$OUT/err.log
    rc=$?; j $n "$(tail -1 $OUT/cur.out)" $rc
    { echo "== $c $f (bounded)"; $B/gpuscope analyze $OUT/caps/$n.gpuscope 2>&1 | grep -E "ms/step|untraced, a step|^  [0-9]\. "; } >> $OUT/bounded.txt
  done
done
cut -c1-150 $OUT/bounded.txt
echo "t=${SECONDS}s"
# 3.
for cc in "optimizer graph" "launch compile" "fp32 compile" "alloc compile" "item compile" "attention compile" "pageable compile" "healthy compile"; do
  [ $SECONDS -ge 460 ] && break
  set -- $cc
  timeout 120 $Z $1 --fixed --compare $2 --steps 60 --chunks 6 > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j next_$1_$2 "$(tail -1 $OUT/cur.out)" $rc
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -5 $OUT/err.log; echo "t=${SECONDS}s"
