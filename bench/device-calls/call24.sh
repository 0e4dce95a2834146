#!/usr/bin/env bash
# Device call 24 (2026-11-30, fifth session): flash attention with fewer barriers per tile (forward
# one instead of two, fused backward two instead of three) against the previous binaries, A/B
# interleaved: flash_test (checks and timings) and the all-on trainer untraced; then Nsight Compute
# on the new kernels at the trainer's shape (call23.sh) and call 22 (tracing cost of cudaMalloc).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version,serial,clocks.sm,clocks.max.sm,power.draw --format=csv | tee $OUT/gpu.csv
T=(--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph on --steps 15)
pick() { python3 -c 'import json,sys
for l in sys.stdin:
  if l.startswith("{"):
    d=json.loads(l)
    if d.get("case")=="bench": print("pass",d["pass"],"fwd",round(d["fwd_ms_flash"],4),d["fwd_flash_variant"],"bwd",round(d["bwd_ms_flash"],4),d["bwd_flash_variant"], " ".join("%s=%.4f"%(k[12:],v) for k,v in d.items() if k.startswith("bwd_ms_flash_") or k.startswith("fwd_ms_flash_")))
    elif "tokens_per_s" in d: print("tok/s",round(d["tokens_per_s"]),"mfu",d.get("mfu_pct"),"step",d.get("step_ms"))
'; }
for i in 1 2; do
  for v in old new; do
    s=""; [ $v = old ] && s=_old
    echo "$i $v flash_test: $(timeout 60 $B/flash_test$s 2>>$OUT/err.txt | tee -a $OUT/flash_$v.jsonl | pick) rc=${PIPESTATUS[0]}"
  done
done
for i in 1 2; do
  for v in old new; do
    s=""; [ $v = old ] && s=_old
    echo "$i $v train_gpt: $(timeout 60 $B/train_gpt$s "${T[@]}" 2>>$OUT/err.txt | tee -a $OUT/train_$v.jsonl | pick)"
  done
done
timeout 45 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused 2>&1 | tail -2
[ -n "${SKIP_NCU:-}" ] || timeout 150 bash $B/call23.sh > $OUT/call23.txt 2>&1; tail -30 $OUT/call23.txt
