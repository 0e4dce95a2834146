#!/usr/bin/env bash
# Device call 21 (2026-11-30, session 4): gpuscope-calibrate --toggle (tracing off and on in
# alternate rounds of one process) against separate plain/traced processes, and gpuscope run's
# launch_bound prediction with it against the measured speedups.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader
sps() { grep -o '"steps_per_s":[0-9.]*' | cut -d: -f2; }
for i in 1 2 3; do
  echo "toggle $i $(CUDA_INJECTION64_PATH=$B/libgpuscope_inject.so GPUSCOPE_CAPTURE_PREFIX=/tmp/t$i $B/gpuscope-calibrate --toggle 2>&1)"
  echo "plain  $i $($B/gpuscope-calibrate 2>&1)"
done
for i in 1 2; do
  u=$($B/zoo launch_bound --steps 100 2>/dev/null | sps); uf=$($B/zoo launch_bound --fixed --steps 200 2>/dev/null | sps)
  $B/gpuscope run --json -o /tmp/lb.gpuscope -- $B/zoo launch_bound --steps 100 > /tmp/lb.json 2>/tmp/lb.err
  t=$(sps < /tmp/lb.json | head -1)
  p=$(python3 -c "
import json,sys
t=open('/tmp/lb.json').read(); i=t.index('{\n  \"devices\"')
r=json.JSONDecoder().raw_decode(t[i:])[0]
print([(f['id'],round(f['est_speedup'],2)) for d in r['devices'] for f in d['findings']][:2], r['devices'][0]['tracing_cost'])" 2>&1 | tail -1)
  echo "lb $i untraced $u fixed $uf (x$(python3 -c "print(round($uf/$u,2))")) traced $t | $(grep 'tracing' /tmp/lb.err) | $p"
done
