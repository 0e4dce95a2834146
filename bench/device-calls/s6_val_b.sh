#!/usr/bin/env bash
# Device call (2026-12-01, sixth session, validation B): GPT-2 124M (examples/train_gpt.py)
# with torch.compile untraced and under `gpuscope run` (MFU against the program's own count,
# compilation excluded); bf16 eager untraced vs traced, interleaved twice (overhead of tracing
# with the Python bootstrap); the pyzoo `item` case untraced twice more.
set -u
B=$PWD/.carry-val6
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
M=gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16
R=$OUT/gpt.jsonl; : > $R
one() {  # one NAME TRACED ARGS...
  local name=$1 traced=$2; shift 2
  if [ $traced = 1 ]; then
    timeout 200 $B/gpuscope run --no-report -o /tmp/$name.gpuscope -- python3 examples/train_gpt.py "$@" > /tmp/o.txt 2>>$OUT/err.log
    $B/gpuscope analyze --json --model $M /tmp/$name.gpuscope > /tmp/r.json 2>>$OUT/err.log
    $B/gpuscope analyze --model $M /tmp/$name.gpuscope > $OUT/$name.report.txt 2>&1
  else
    timeout 200 python3 examples/train_gpt.py "$@" > /tmp/o.txt 2>>$OUT/err.log; echo '{}' > /tmp/r.json
  fi
  python3 - $name $traced >> $R <<'PY'
import json, sys
prog = [json.loads(l) for l in open("/tmp/o.txt") if l.startswith("{")]
rep = json.load(open("/tmp/r.json"))
d = rep.get("devices", [{}])[0] if rep else {}
print(json.dumps({"run": sys.argv[1], "traced": sys.argv[2] == "1", "program": prog[-1] if prog else None,
                  "gpuscope": {"mfu_pct": d.get("mfu_pct"), "steps": {k: v for k, v in d.get("steps", {}).items() if k != "list"},
                               "busy_pct": d.get("busy_pct"), "findings": [(f["id"], f["est_speedup"]) for f in d.get("findings", [])]} if d else None}))
PY
  echo "$name traced=$traced ${SECONDS}s" >&2
}
one eager_u1 0 --steps 30
one eager_t1 1 --steps 30
one eager_u2 0 --steps 30
one eager_t2 1 --steps 30
one compile_u 0 --compile --steps 30
one compile_t 1 --compile --steps 30
for i in 1 2; do for fx in "" --fixed; do timeout 60 python3 examples/pyzoo/pyzoo.py item $fx | tail -1 >> $OUT/item.jsonl; done; done
cat $R $OUT/item.jsonl
