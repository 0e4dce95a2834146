#!/usr/bin/env bash
# Device call 9 (2026-11-30, session 3): --graph on with side-stream branches (zeroing, bias gradients).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
for cfg in "bf16 fused fused on" "fp32 unfused per-tensor on" "bf16 unfused fused on" "fp32 fused fused on"; do
  set -- $cfg
  echo "== check $cfg"; timeout 60 $B/train_gpt --check --precision $1 --kernels $2 --optimizer $3 --graph $4 2>&1 | grep -E "FAIL|^\{|cuBLASLt" | tail -8
done
ALLON="--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --steps 15"
for i in 1 2 3; do
  for g in off on; do
    echo "== graph $g ($i)"; timeout 60 $B/train_gpt $ALLON --graph $g 2>&1 | grep -E "tokens/s|rror" | tail -1
  done
done
echo "== graph on, 40 steps"; timeout 60 $B/train_gpt $ALLON --steps 40 --graph on 2>&1 | grep -E "tokens/s|rror" | tail -1
echo "== traced graph on"
$B/gpuscope run --json -o /tmp/z.gpuscope --model gpt:params=123653376,layers=12,heads=12,dmodel=768,seq=1024,batch=16 -- $B/train_gpt $ALLON --graph on > /tmp/z.json 2>/tmp/z.err; echo rc=$?
python3 - <<'PY'
import sys; sys.path.insert(0, "scripts")
from validate_table import parse_stdout
w, r, o = parse_stdout(open("/tmp/z.json").read())
print(w[0]["step_ms"], w[0]["mfu_pct"])
if r:
    d = r["devices"][0]
    print("step_ms", d["steps"].get("mean_ms"), "busy", round(d["busy_pct"], 2), "mfu", d.get("mfu_pct"), "hw", d.get("hardware"), "idle", [(c["cause"], round(c["pct"], 2), c["top_host"][:2]) for c in d["idle"]["causes"] if c["pct"] > 0],
          [(f["id"], round(f.get("est_speedup") or 0, 2)) for f in d.get("findings", [])])
PY
