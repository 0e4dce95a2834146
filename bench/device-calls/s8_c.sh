#!/usr/bin/env bash
# Device call (2026-12-01, eighth session, C), binaries of main at .carry-s8/COMMIT:
#  1. C++ zoo input_bound (input ranges by name) and launch_bound (its +54% in call B), traced
#     and untraced, unfixed and fixed, two rounds;
#  2. the pyzoo attention case at its default size, untraced unfixed and fixed (twice) and traced
#     unfixed: the sixth session's untraced 48.6 ms against call B's traced 68.2 ms;
#  3. three more interleaved rounds of bounded tracing on the one-sequence decode loop.
set -u
B=$PWD/.carry-s8
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/caps
R=$OUT/s8c.jsonl
j() { echo "{\"case\": \"$1\", \"result\": ${2:-null}}" | tee -a $R | cut -c1-230; }
findings() { $B/gpuscope analyze --json "$1" 2>>$OUT/err.log | python3 -c "
import json,sys; d=json.load(sys.stdin)['devices'][0]
print(json.dumps({'findings': [(f['id'], round(f['est_speedup'] or 0, 3)) for f in d['findings']][:3],
  'idle': {c['cause']: round(c['pct'], 1) for c in d['idle']['causes'] if c['pct'] > 0.5}, 'tracing_cost': d.get('tracing_cost')}))"; }
declare -A ST=([input_bound]="500 1000" [launch_bound]="100 200")
for round in 1 2; do
  for c in input_bound launch_bound; do
    set -- ${ST[$c]}
    j zoo_${c}_u$round "$(timeout 60 $B/zoo $c --steps $1 2>>$OUT/err.log | grep '^{' | tail -1)"
    j zoo_${c}_fixed_u$round "$(timeout 60 $B/zoo $c --fixed --steps $2 2>>$OUT/err.log | grep '^{' | tail -1)"
    timeout 90 $B/gpuscope run --no-report -o $OUT/caps/z.gpuscope -- $B/zoo $c --steps $1 > $OUT/cur.out 2>>$OUT/err.log
    j zoo_${c}_t$round "$(grep '^{' $OUT/cur.out | tail -1)"
    j zoo_${c}_t${round}_gpuscope "$(findings $OUT/caps/z.gpuscope)"
  done
done
echo "t=${SECONDS}s"
Z="python3 examples/pyzoo/pyzoo.py"
for r in 1 2; do
  j attn_unfixed_u$r "$(timeout 90 $Z attention 2>>$OUT/err.log | tail -1)"
  j attn_fixed_u$r "$(timeout 90 $Z attention --fixed 2>>$OUT/err.log | tail -1)"
done
timeout 120 $B/gpuscope run --no-report -o $OUT/caps/attn.gpuscope -- $Z attention > $OUT/cur.out 2>>$OUT/err.log
j attn_unfixed_t "$(tail -1 $OUT/cur.out)"
j attn_unfixed_t_gpuscope "$(findings $OUT/caps/attn.gpuscope)"
echo "t=${SECONDS}s"
D="python3 examples/serve/decode.py"
BND="--scheduler one --rate 1000 --requests 2 --new-tokens 300"
for round in 4 5 6; do
  [ $SECONDS -ge 480 ] && break
  timeout 90 $B/gpuscope run --no-calibrate --no-report --steps 50 --skip-steps 10 -o $OUT/caps/bnd.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  j bnd_window_$round "$(tail -1 $OUT/cur.out)"
  j bnd_plain_$round "$(timeout 60 $D $BND 2>>$OUT/err.log | tail -1)"
done
rm -rf $OUT/caps $OUT/cur.out; tail -3 $OUT/err.log; echo "t=${SECONDS}s"
