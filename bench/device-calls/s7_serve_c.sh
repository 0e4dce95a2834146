#!/usr/bin/env bash
# Device call (2026-12-01, seventh session, C; two earlier runs of the same script found the
# bugs fixed since): issue 16 validation on the H200 with
# examples/serve/decode.py. Untraced tokens/s and traced captures for: one request at a time,
# continuous batching at the under-batched finding's token count, static batching with slow
# arrivals, continuous batching at saturation with vocab 50257 vs 50304; then bounded tracing
# (run --steps) against untraced in interleaved rounds.
. "$(dirname "$0")/serve_common.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
untraced smoke --scheduler continuous --batch 4 --requests 4 --new-tokens 4 --rate 1000
ONE="--scheduler one --rate 1000 --requests 4 --new-tokens 256"
untraced one $ONE
traced one --analyze $ONE
M=$(python3 - $OUT/caps/one.json <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
for f in r["devices"][0].get("findings", []):
    text = json.dumps(f)
    m = re.search(r"with (\d+) tokens per GEMM", text)
    if m:
        print(m.group(1)); break
else:
    print(256)
PY
)
echo "under-batched suggests M=$M"
untraced cont_M --scheduler continuous --batch $M --rate 1000000 --requests $M --new-tokens 256
untraced one_b $ONE
untraced cont_128 --scheduler continuous --batch 128 --rate 1000000 --requests 128 --new-tokens 256
untraced cont_M_b --scheduler continuous --batch $M --rate 1000000 --requests $M --new-tokens 256
untraced one_c $ONE
SLOW="--scheduler static --batch 8 --rate 20 --requests 32 --new-tokens 32"
untraced static_slow $SLOW
traced static_slow --analyze $SLOW
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128"
untraced sat_50257 $SAT --vocab 50257
untraced sat_50304 $SAT --vocab 50304
traced sat_50257 --analyze $SAT --vocab 50257
untraced sat_50257_b $SAT --vocab 50257
untraced sat_50304_b $SAT --vocab 50304
# Bounded tracing: a run of about ten times the window (600 iterations, window 50 steps).
BND="--scheduler one --rate 1000 --requests 2 --new-tokens 300"
for round in 1 2 3 4; do
  [ $SECONDS -ge 470 ] && break
  untraced bnd_plain_$round $BND
  bounded bnd_window_$round 50 $BND
done
if [ $SECONDS -lt 520 ]; then
  timeout 150 $B/gpuscope run --no-calibrate --no-report -o $OUT/caps/bnd_full.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  out=$(tail -1 $OUT/cur.out); log bnd_full traced "$out"; echo "bnd_full $out"
fi
for c in bnd_window_1 bnd_window_2 bnd_window_3 bnd_full; do
  [ -f $OUT/caps/$c.gpuscope ] || continue
  NO_COLOR=1 $B/gpuscope analyze $OUT/caps/$c.gpuscope > $OUT/caps/$c.txt 2>&1
  $B/gpuscope analyze --json $OUT/caps/$c.gpuscope > $OUT/caps/$c.json 2>>$OUT/err.log
done
head -12 $OUT/caps/bnd_window_1.txt
cd $OUT/caps && tar -czf $OUT/caps.tar.gz . && cd $OUT && rm -rf caps cur.out
ls -la $OUT; tail -5 $OUT/err.log
