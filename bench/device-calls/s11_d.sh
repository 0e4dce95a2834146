#!/usr/bin/env bash
# Device call (2026-12-02, eleventh session, D), binaries of main at .carry-s11d/COMMIT (issue 16):
#  1. a bounded window of the decode loop at one sequence with the module hooks moved onto the
#     outermost module (its diagnosis as before: under-batched, from the measured untraced step);
#  2. bounded tracing's whole-run cost inside each run again (as s11_a 3.), eight window runs and
#     eight plain runs interleaved: the hooks had put every module call of the loop on torch's
#     slow path while the window waited and while it was open.
set -u
B=$PWD/.carry-s11d
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps $OUT/ends
R=$OUT/s11d.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
D="python3 examples/serve/decode.py"
# 1.
ONE="--scheduler one --rate 1000 --requests 4 --new-tokens 256"
timeout 150 $B/gpuscope run --no-report --steps 200 --skip-steps 40 -o $OUT/caps/one_win.gpuscope -- $D $ONE > $OUT/cur.out 2>>$OUT/err.log
j one_win "$(tail -1 $OUT/cur.out)" $?
$B/gpuscope analyze $OUT/caps/one_win.gpuscope > $OUT/one_win.txt 2>&1
grep -E "ms/step|untraced, a step|^  [0-9]\. \[" $OUT/one_win.txt | cut -c1-150
echo "t=${SECONDS}s"
# 2.
BND="--scheduler one --rate 1000 --requests 4 --new-tokens 300"
for i in 1 2 3 4 5 6 7 8; do
  [ $SECONDS -ge 330 ] && break
  timeout 90 $B/gpuscope run --no-calibrate --no-report --steps 120 --skip-steps 300 -o $OUT/w.gpuscope -- $D $BND --iteration-ends $OUT/ends/w$i.json > $OUT/cur.out 2>>$OUT/err.log
  j window_$i "$(tail -1 $OUT/cur.out)"
  j window_phases_$i "$(python3 bench/window_phases.py $OUT/ends/w$i.json --skip 300 --steps 120)"
  j plain_$i "$(timeout 60 $D $BND --iteration-ends $OUT/ends/p$i.json 2>>$OUT/err.log | tail -1)"
  j plain_phases_$i "$(python3 bench/window_phases.py $OUT/ends/p$i.json --skip 300 --steps 120)"
  rm -f $OUT/w.gpuscope
done
(cd $OUT && tar czf caps.tgz caps ends && rm -rf caps ends)
grep -v "^W1202" $OUT/err.log | tail -3; echo "t=${SECONDS}s"
