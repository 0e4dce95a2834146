#!/usr/bin/env bash
# Device call (2026-12-01, eighth session, A), binaries of main at .carry-s8/COMMIT:
#  1. the pyzoo dataloader case's input scaling (bench/dataloader_probe.py) and its fixed step at
#     2/4/8/16 workers (issue 13's +143% miss);
#  2. the attention case at two more sizes, untraced unfixed/fixed and traced unfixed (its -59% miss);
#  3. tracing overhead on GPT-2 124M bf16 eager: four interleaved pairs (issue 13's 2% target);
#  4. torchrun with two processes on the one GPU (gloo) under gpuscope run (issue 13).
set -u
B=$PWD/.carry-s8
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s8a.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
nproc
log() { echo "{\"name\": \"$1\", \"mode\": \"$2\", \"result\": ${3:-null}}" >> $R; echo "$1 $2 $3" | cut -c1-220; }
Z="python3 examples/pyzoo/pyzoo.py"
# 1. dataloader
timeout 150 python3 bench/dataloader_probe.py > $OUT/probe.jsonl 2>>$OUT/err.log; cat $OUT/probe.jsonl
log dl_unfixed untraced "$(timeout 90 $Z dataloader 2>>$OUT/err.log | tail -1)"
for w in 2 4 8 16; do
  log dl_fixed_w$w untraced "$(timeout 90 $Z dataloader --fixed --workers $w 2>>$OUT/err.log | tail -1)"
done
# 2. attention sizes
for cfg in "1024 8 512" "4096 16 1024"; do
  set -- $cfg; A="--attn-seq $1 --attn-heads $2 --attn-dmodel $3"; n=attn_$1_$2_$3
  log ${n}_unfixed untraced "$(timeout 90 $Z attention $A 2>>$OUT/err.log | tail -1)"
  log ${n}_fixed untraced "$(timeout 90 $Z attention --fixed $A 2>>$OUT/err.log | tail -1)"
  timeout 120 $B/gpuscope run --no-report -o $OUT/caps/$n.gpuscope -- $Z attention $A > $OUT/cur.out 2>>$OUT/err.log
  log ${n}_unfixed traced "$(tail -1 $OUT/cur.out)"
  $B/gpuscope analyze $OUT/caps/$n.gpuscope 2>&1 | grep -i -A3 'attention' | head -8
done
echo "t=${SECONDS}s"
# 3. overhead pairs, order alternating
G="python3 examples/train_gpt.py --steps 30"
for i in 1 2 3 4; do
  [ $SECONDS -ge 430 ] && break
  if [ $((i % 2)) = 1 ]; then
    log gpt_plain_$i untraced "$(timeout 90 $G 2>>$OUT/err.log | tail -1)"
    timeout 120 $B/gpuscope run --no-report -o $OUT/caps/gpt_$i.gpuscope -- $G > $OUT/cur.out 2>>$OUT/err.log
    log gpt_traced_$i traced "$(tail -1 $OUT/cur.out)"
  else
    timeout 120 $B/gpuscope run --no-report -o $OUT/caps/gpt_$i.gpuscope -- $G > $OUT/cur.out 2>>$OUT/err.log
    log gpt_traced_$i traced "$(tail -1 $OUT/cur.out)"
    log gpt_plain_$i untraced "$(timeout 90 $G 2>>$OUT/err.log | tail -1)"
  fi
  rm -f $OUT/caps/gpt_$i.gpuscope
done
echo "t=${SECONDS}s"
# 4. torchrun, two processes sharing the GPU
if [ $SECONDS -lt 500 ]; then
  timeout 90 $B/gpuscope run -o $OUT/caps/ddp.gpuscope -- torchrun --nproc_per_node 2 examples/ddp/train_ddp.py \
    --backend gloo --steps 10 --warmup 2 --layers 2 > $OUT/ddp.txt 2>&1
  echo "torchrun rc=$?"; tail -40 $OUT/ddp.txt
  $B/gpuscope analyze --json $OUT/caps/ddp.gpuscope > $OUT/ddp.json 2>>$OUT/err.log
fi
cd $OUT/caps && tar -czf $OUT/caps.tar.gz . && cd $OUT && rm -rf caps cur.out
ls -la $OUT; tail -5 $OUT/err.log; echo "t=${SECONDS}s"
