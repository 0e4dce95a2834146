#!/usr/bin/env bash
# Device call (2026-12-02, ninth session, C), binaries of main at .carry-s9/COMMIT:
#  1. issue 16: under-batched predicted from a bounded window (the untraced step measured by the
#     bootstrap) and, interleaved untraced, one request at a time against continuous batching at
#     the predicted M;
#  2. issue 16: decode.py --graph at saturation untraced against the eager loop, and its bounded
#     window's findings;
#  3. issue 13: pyzoo dataloader traced (the loader's CPU-time marks) and untraced, unfixed and fixed;
#  4. issue 13: every pyzoo case's fix, traced: its findings (the after-fix check).
set -u
B=$PWD/.carry-s9
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s9c.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"result\": ${2:-null}}" | tee -a $R | cut -c1-160; }
D="python3 examples/serve/decode.py"
Z="python3 examples/pyzoo/pyzoo.py"
# 1.
ONE="--scheduler one --rate 1000 --requests 4 --new-tokens 256"
timeout 150 $B/gpuscope run --no-report --steps 200 --skip-steps 40 -o $OUT/caps/one_win.gpuscope -- $D $ONE > $OUT/cur.out 2>>$OUT/err.log
j one_win "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/one_win.gpuscope > $OUT/one_win.txt 2>&1
grep -E "ms/step|untraced, a step" $OUT/one_win.txt; grep -A9 "under-batched  " $OUT/one_win.txt | head -10
M=$(grep -o 'M\* = [0-9]*' $OUT/one_win.txt | head -1 | awk '{print $3}'); M=${M:-291}; echo "M=$M"
CONT="--scheduler continuous --batch $M --rate 1000000 --requests $M --new-tokens 256"
for round in 1 2; do
  j one_plain_$round "$(timeout 90 $D $ONE 2>>$OUT/err.log | tail -1)"
  j cont_plain_$round "$(timeout 90 $D $CONT 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 2.
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128"
for round in 1 2; do
  j eager_sat_$round "$(timeout 90 $D $SAT 2>>$OUT/err.log | tail -1)"
  j graph_sat_$round "$(timeout 90 $D $SAT --graph 2>>$OUT/err.log | tail -1)"
done
timeout 150 $B/gpuscope run --no-report --steps 60 --skip-steps 30 -o $OUT/caps/graph_win.gpuscope -- $D $SAT --graph > $OUT/cur.out 2>>$OUT/err.log
j graph_win "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/graph_win.gpuscope > $OUT/graph_win.txt 2>&1
grep -E "ms/step|untraced, a step|^  [0-9]\. " $OUT/graph_win.txt | cut -c1-150
echo "t=${SECONDS}s"
# 3.
timeout 150 $B/gpuscope run --no-report -o $OUT/caps/dl.gpuscope -- $Z dataloader > $OUT/cur.out 2>>$OUT/err.log
j dl_traced "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/dl.gpuscope > $OUT/dl.txt 2>&1; grep -A6 "input-bound" $OUT/dl.txt | head -8
for round in 1 2; do
  j dl_plain_$round "$(timeout 90 $Z dataloader 2>>$OUT/err.log | tail -1)"
  j dl_fixed_$round "$(timeout 90 $Z dataloader --fixed 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 4.
for c in launch item pageable alloc optimizer fp32 attention dataloader healthy; do
  [ $SECONDS -ge 500 ] && break
  timeout 90 $B/gpuscope run --no-report -o $OUT/caps/f_$c.gpuscope -- $Z $c --fixed > $OUT/cur.out 2>>$OUT/err.log
  j fixed_traced_$c "$(tail -1 $OUT/cur.out)"
  { echo "== $c --fixed"; $B/gpuscope analyze $OUT/caps/f_$c.gpuscope 2>&1 | grep -E "ms/step|^  [0-9]\. "; } >> $OUT/after.txt
  rm -f $OUT/caps/f_$c.gpuscope
done
cat $OUT/after.txt | cut -c1-150
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -3 $OUT/err.log; echo "t=${SECONDS}s"
