#!/usr/bin/env bash
# Device call 18 (2026-11-30, session 4): gpuscope run with the tracing-cost calibration on the
# zoo cases whose idle is host-gated; predicted speedup against the untraced and traced ones.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader
summ() {  # report.json -> "finding x est | tracing cost"
  python3 -c '
import json,sys
r=json.load(open(sys.argv[1])); d=r["devices"][0] if "devices" in r else r["traces"][0]["devices"][0]
f=[(x["id"],round(x["est_speedup"],2)) for x in (r.get("findings") or d.get("findings") or [])]
print("findings",f[:3],"tracing",d.get("tracing_cost"))' "$1" 2>&1 | head -3
}
sps() { grep -o '"steps_per_s":[0-9.]*' | cut -d: -f2; }
one() {  # case unfixed-steps fixed-steps
  local c=$1 su=$2 sf=$3
  echo "== $c"
  echo "untraced unfixed $($B/zoo $c --steps $su 2>/dev/null | sps)  fixed $($B/zoo $c --fixed --steps $sf 2>/dev/null | sps)"
  local t0=$EPOCHREALTIME
  local u=$($B/gpuscope run --json -o /tmp/$c.gpuscope -- $B/zoo $c --steps $su 2>/tmp/$c.err >/tmp/$c.json; echo)
  local t1=$EPOCHREALTIME
  grep "tracing adds\|not measured" /tmp/$c.err
  echo "traced wall $(python3 -c "print(round($t1-$t0,2))") s"
  cp /tmp/$c.json $OUT/$c.$RANDOM.json; grep -o '"steps_per_s":[0-9.]*' /tmp/$c.json | head -1
  python3 - /tmp/$c.json <<'PY'
import json,sys
txt=open(sys.argv[1]).read()
start=txt.index('\n{',0) if not txt.startswith('{') else 0
# the report is the last JSON document in the file
dec=json.JSONDecoder(); i=0; docs=[]
while i < len(txt):
    j=txt.find('{',i)
    if j<0: break
    try:
        o,e=dec.raw_decode(txt[j:]); docs.append(o); i=j+e
    except Exception: i=j+1
rep=[d for d in docs if isinstance(d,dict) and ("devices" in d or "findings" in d)]
if not rep: print("no report"); sys.exit()
r=rep[-1]
devs=r.get("devices") or []
for d in devs:
    print("tracing_cost",d.get("tracing_cost"))
    st=d.get("steps") or {}
    print("window_us",round(d.get("window_us")),"step mean ms",st.get("mean_ms") if isinstance(st,dict) else None)
fs=r.get("findings") or [f for d in devs for f in d.get("findings",[])]
for f in fs[:3]: print("finding",f["id"],round(f["est_speedup"],2), f["evidence"][-330:])
PY
  echo "traced fixed $($B/gpuscope run --no-report --no-calibrate -o /tmp/${c}f.gpuscope -- $B/zoo $c --fixed --steps $sf 2>/dev/null | sps)"
}
one launch_bound 100 200
one launch_bound 100 200
one sync_bound 750 1200
one alloc_churn 2000 15000
one launch_bound 100 200
one input_bound 500 1000
