#!/usr/bin/env bash
# Device call (2026-12-02, ninth session, D), binaries of main at .carry-s9/COMMIT (issue 16):
#  1. decode.py at saturation (256 x 128 tokens): eager, --graph, --graph --overlap, untraced,
#     two rounds; the --graph --overlap loop's bounded window and its findings;
#  2. under-batched: a second bounded-window prediction and three more interleaved rounds of one
#     request at a time against continuous batching at the predicted M;
#  3. bounded tracing's cost with the host's noise shared: a plain run and a `run --steps 120`
#     run of the 1200-iteration decode loop started together on disjoint cores (swapped each round).
set -u
B=$PWD/.carry-s9
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s9d.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"result\": ${2:-null}}" | tee -a $R | cut -c1-160; }
D="python3 examples/serve/decode.py"
# 1.
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128"
for round in 1 2; do
  j eager_sat_$round "$(timeout 90 $D $SAT 2>>$OUT/err.log | tail -1)"
  j graph_sat_$round "$(timeout 90 $D $SAT --graph 2>>$OUT/err.log | tail -1)"
  j overlap_sat_$round "$(timeout 90 $D $SAT --graph --overlap 2>>$OUT/err.log | tail -1)"
done
timeout 150 $B/gpuscope run --no-report --steps 60 --skip-steps 30 -o $OUT/caps/overlap_win.gpuscope -- $D $SAT --graph --overlap > $OUT/cur.out 2>>$OUT/err.log
j overlap_win "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/overlap_win.gpuscope > $OUT/overlap_win.txt 2>&1
grep -E "ms/step|busy\)|untraced, a step|^  [0-9]\. \[" $OUT/overlap_win.txt | cut -c1-150
echo "t=${SECONDS}s"
# 2.
ONE="--scheduler one --rate 1000 --requests 4 --new-tokens 256"
timeout 150 $B/gpuscope run --no-report --steps 200 --skip-steps 40 -o $OUT/caps/one_win2.gpuscope -- $D $ONE > $OUT/cur.out 2>>$OUT/err.log
j one_win2 "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/one_win2.gpuscope > $OUT/one_win2.txt 2>&1
grep -E "ms/step|untraced, a step|under-batched  " $OUT/one_win2.txt | cut -c1-150
M=$(grep -o 'M\* = [0-9]*' $OUT/one_win2.txt | head -1 | awk '{print $3}'); M=${M:-294}; echo "M=$M"
CONT="--scheduler continuous --batch $M --rate 1000000 --requests $M --new-tokens 256"
for round in 1 2 3; do
  [ $SECONDS -ge 260 ] && break
  j one_plain_$round "$(timeout 90 $D $ONE 2>>$OUT/err.log | tail -1)"
  j cont_plain_$round "$(timeout 90 $D $CONT 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 3.
BND="--scheduler one --rate 1000 --requests 4 --new-tokens 300"
for i in 1 2 3 4 5 6; do
  [ $SECONDS -ge 400 ] && break
  if [ $((i % 2)) = 1 ]; then A="0-3"; W="8-11"; else A="8-11"; W="0-3"; fi
  taskset -c $A $D $BND > $OUT/plain.out 2>>$OUT/err.log &
  p1=$!
  taskset -c $W $B/gpuscope run --no-calibrate --no-report --steps 120 --skip-steps 10 -o $OUT/caps/w$i.gpuscope -- $D $BND > $OUT/win.out 2>>$OUT/err.log &
  p2=$!
  wait $p1 $p2
  j together_plain_$i "$(tail -1 $OUT/plain.out)"
  j together_window_$i "$(tail -1 $OUT/win.out)"
  rm -f $OUT/caps/w$i.gpuscope
done
rm -f $OUT/plain.out $OUT/win.out
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -3 $OUT/err.log; echo "t=${SECONDS}s"
