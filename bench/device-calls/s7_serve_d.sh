#!/usr/bin/env bash
# Device call (2026-12-01, seventh session, D): issue 16 again with this session's fixes:
# static batching with slow arrivals (rate 5/s), vocab 50257 vs 50304 at saturation in
# interleaved rounds, and bounded tracing (window 100 steps of a 1200-iteration run) against
# untraced in interleaved rounds.
set -u
B=$PWD/.carry-s7
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
D="python3 examples/serve/decode.py"
mkdir -p $OUT/caps
R=$OUT/serve.jsonl
log() { echo "{\"case\": \"$1\", \"mode\": \"$2\", \"result\": ${3:-null}}" >> $R; }
untraced() {
  local name=$1; shift
  local out; out=$(timeout 150 $D "$@" 2>>$OUT/err.log | tail -1)
  log $name untraced "$out"; echo "$name untraced $out" | cut -c1-200
}
traced() {
  local name=$1; shift
  timeout 200 $B/gpuscope run --no-report -o $OUT/caps/$name.gpuscope -- $D "$@" > $OUT/cur.out 2>>$OUT/err.log
  local out; out=$(tail -1 $OUT/cur.out)
  log $name traced "$out"; echo "$name traced $out" | cut -c1-200
}
SLOW="--scheduler static --batch 8 --rate 5 --requests 24 --new-tokens 32"
traced static_5 $SLOW
untraced static_5 $SLOW
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 256"
for round in 1 2 3; do
  untraced sat_50257_$round $SAT --vocab 50257
  untraced sat_50304_$round $SAT --vocab 50304
done
traced sat_50304 $SAT --vocab 50304
BND="--scheduler one --rate 1000 --requests 4 --new-tokens 300"
for round in 1 2 3 4; do
  [ $SECONDS -ge 500 ] && break
  untraced bnd_plain_$round $BND
  timeout 150 $B/gpuscope run --no-calibrate --no-report --steps 100 --skip-steps 10 -o $OUT/caps/bnd_$round.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  out=$(tail -1 $OUT/cur.out); log bnd_window_$round traced "$out"; echo "bnd_window_$round $out" | cut -c1-200
done
cd $OUT/caps && rm -f bnd_2* bnd_3* bnd_4* && tar -czf $OUT/caps.tar.gz . && cd $OUT && rm -rf caps cur.out
ls -la $OUT; tail -3 $OUT/err.log
