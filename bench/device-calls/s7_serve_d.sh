#!/usr/bin/env bash
# Device call (2026-12-01, seventh session, D): issue 16 again with this session's fixes:
# static batching with slow arrivals (rate 5/s), vocab 50257 vs 50304 at saturation in
# interleaved rounds, and bounded tracing (window 100 steps of a 1200-iteration run) against
# untraced in interleaved rounds.
. "$(dirname "$0")/serve_common.sh"
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
  bounded bnd_window_$round 100 $BND
done
cd $OUT/caps && rm -f bnd_window_2* bnd_window_3* bnd_window_4* && tar -czf $OUT/caps.tar.gz . && cd $OUT && rm -rf caps cur.out
ls -la $OUT; tail -3 $OUT/err.log
