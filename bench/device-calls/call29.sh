#!/usr/bin/env bash
# Device call 29 (2026-11-30, fifth session): the wgmma forward variants (wg64lpt, wg128lpt) beside the wgmma backward paths: flash_test's
# checks and timings of every path; train_gpt --check with the path forced; the all-on trainer
# untraced, A/B against the binaries before this session's attention changes (train_gpt_old).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version,serial,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.csv
pick() { python3 -c 'import json,sys
for l in sys.stdin:
  if l.startswith("{"):
    d=json.loads(l)
    if d.get("case")=="bench": print("pass",d["pass"],"fwd",round(d["fwd_ms_flash"],4),d["fwd_flash_variant"],"bwd",round(d["bwd_ms_flash"],4),d["bwd_flash_variant"], " ".join("%s=%.4f"%(k[13:],v) for k,v in d.items() if k.startswith("bwd_ms_flash_") or k.startswith("fwd_ms_flash_")), " ".join("%s=%.3g"%(k,v) for k,v in d.items() if k.startswith("out_err_vs_materialised_") or k.startswith("lse_abs_diff_")))
    elif d.get("workload")=="flash_test" and not d.get("pass"): print("FAIL", l.strip()[:600])
    elif "tokens_per_s" in d: print("tok/s",round(d["tokens_per_s"]),"mfu",d.get("mfu_pct"),"step",d.get("step_ms"),"bwd",d.get("flash_bwd"))
'; }
echo "flash_test: $(timeout 90 $B/flash_test 2>>$OUT/err.txt | tee $OUT/flash.jsonl | pick)"
echo "flash_test rc=$(tail -c 300 $OUT/flash.jsonl | grep -c '"pass":true')"
for p in wg64lpt wg128lpt; do
  echo "$p check: $(GPUSCOPE_GPT_FLASH_FWD=$p GPUSCOPE_GPT_FLASH_BWD=wgmma3_lpt timeout 60 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused 2>&1 | tail -1 | grep -o '"worst_grad_rel_err":[^,]*,.*')"
done
T=(--batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph on --steps 15)
for i in 1 2; do
  for v in old new; do
    s=""; [ $v = old ] && s=_old
    echo "$i $v train_gpt: $(timeout 60 $B/train_gpt$s "${T[@]}" 2>>$OUT/err.txt | pick)"
  done
done
