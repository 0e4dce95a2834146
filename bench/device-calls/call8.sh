#!/usr/bin/env bash
# Device call 8 (2026-11-30, session 3): --graph on, DGELU_BGRAD epilogue, vectorised AdamW: correctness and speed.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for cfg in "bf16 fused fused on" "bf16 fused fused off" "fp32 unfused per-tensor on" "bf16 unfused fused on"; do
  set -- $cfg
  echo "== check $cfg"; timeout 60 $B/train_gpt --check --precision $1 --kernels $2 --optimizer $3 --graph $4 2>&1 | grep -E "FAIL|^\{|cuBLASLt" | tail -8
done
ALLON="--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --steps 30"
run() { echo "== $1"; shift; timeout 60 env "$@" 2>&1 | grep -E "tokens/s|cuBLASLt|rror" | tail -2; }
run "graph off, bgrad off" GPUSCOPE_GPT_DGELU_BGRAD=0 $B/train_gpt $ALLON --graph off
run "graph off, bgrad on" $B/train_gpt $ALLON --graph off
run "graph on, bgrad on" $B/train_gpt $ALLON --graph on
run "graph on, bgrad off" GPUSCOPE_GPT_DGELU_BGRAD=0 $B/train_gpt $ALLON --graph on
run "graph on, bgrad on (repeat)" $B/train_gpt $ALLON --graph on
run "graph off, bgrad on (repeat)" $B/train_gpt $ALLON --graph off
echo "== breakdown (bgrad on)"; timeout 90 $B/train_gpt $ALLON --steps 10 --breakdown 3 2>&1 | grep -v "^step" | tail -14
echo "== traced graph on"
$B/gpuscope run --json -o /tmp/z.gpuscope --model gpt:params=123653376,layers=12,heads=12,dmodel=768,seq=1024,batch=16 -- $B/train_gpt $ALLON --steps 15 --graph on > /tmp/z.json 2>/tmp/z.err; echo rc=$?
tail -3 /tmp/z.err
python3 - <<'PY'
import sys; sys.path.insert(0, "scripts")
from validate_table import parse_stdout
w, r, o = parse_stdout(open("/tmp/z.json").read())
print(w)
if r:
    d = r["devices"][0]
    print("step_ms", d["steps"].get("mean_ms"), "busy", round(d["busy_pct"], 2), "mfu", d.get("mfu_pct"), "idle", [(c["cause"], round(c["pct"], 2)) for c in d["idle"]["causes"]],
          [(f["id"], round(f.get("est_speedup") or 0, 2)) for f in d.get("findings", [])])
PY
