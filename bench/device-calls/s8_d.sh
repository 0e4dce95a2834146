#!/usr/bin/env bash
# Device call (2026-12-01, eighth session, D), binaries of main at .carry-s8/COMMIT: bounded
# tracing on a longer decode run (3000 iterations, window 300 steps: ten times the window) in
# three configurations, interleaved: untraced; `run --steps 300 --skip-steps 10`; and
# `run --after 3600s` (the window never opens: what attaching and detaching alone cost).
set -u
B=$PWD/.carry-s8
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/caps
R=$OUT/s8d.jsonl
j() { echo "{\"case\": \"$1\", \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
D="python3 examples/serve/decode.py"
BND="--scheduler one --rate 1000 --requests 10 --new-tokens 300"
for round in 1 2 3; do
  [ $SECONDS -ge 400 ] && break
  j plain_$round "$(timeout 90 $D $BND 2>>$OUT/err.log | tail -1)"
  timeout 120 $B/gpuscope run --no-calibrate --no-report --steps 300 --skip-steps 10 -o $OUT/caps/w$round.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  j window_$round "$(tail -1 $OUT/cur.out)"
  timeout 120 $B/gpuscope run --no-calibrate --no-report --after 3600s -o $OUT/caps/n$round.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  j never_$round "$(tail -1 $OUT/cur.out)"
done
ls -la $OUT/caps | head; rm -rf $OUT/caps $OUT/cur.out; tail -4 $OUT/err.log; echo "t=${SECONDS}s"
