#!/usr/bin/env bash
# Device call (2026-12-02, eleventh session, B), binaries of main at .carry-s11b/COMMIT:
#  1. issue 13: gloo DDP (two ranks on the one GPU) under gpuscope run with the bootstrap's
#     process-group mark: the CPU all-reduce's waits named as collective (s11_a: launch-bound);
#  2. issue 16: saturation, --graph --overlap against the same with --compile, longer runs
#     (512 tokens per request) so decode dominates, three interleaved rounds;
#  3. issue 13: the dataloader case once more in a bounded window and once traced whole (the
#     one-thread probe in both), and two more interleaved rounds of the fix untraced.
set -u
B=$PWD/.carry-s11b
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s11b.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-220; }
Z="python3 examples/pyzoo/pyzoo.py"
D="python3 examples/serve/decode.py"
# 1.
timeout 90 $B/gpuscope run -o $OUT/caps/gloo.gpuscope -- torchrun --nproc_per_node 2 examples/ddp/train_ddp.py \
  --backend gloo --steps 10 --warmup 2 --layers 2 > $OUT/gloo.txt 2>&1
j gloo "$(grep '^{' $OUT/gloo.txt | tail -1)" $?
grep -E "rank|collective|^  [0-9]\. " $OUT/gloo.txt | cut -c1-150 | head -20
echo "t=${SECONDS}s"
# 2.
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 512 --graph --overlap"
j sat_compile_warm "$(timeout 200 $D $SAT --compile 2>>$OUT/err.log | tail -1)"
for round in 1 2 3; do
  [ $SECONDS -ge 300 ] && break
  j sat_plain_$round "$(timeout 90 $D $SAT 2>>$OUT/err.log | tail -1)"
  j sat_compile_$round "$(timeout 150 $D $SAT --compile 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 3.
timeout 120 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/b_dataloader2.gpuscope -- $Z dataloader > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j b_dataloader2 "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/b_dataloader2.gpuscope 2>&1 | grep -E "ms/step ·|^  [0-9]\. |one thread" | cut -c1-160
timeout 120 $B/gpuscope run --no-report -o $OUT/caps/dataloader_whole.gpuscope -- $Z dataloader > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j dataloader_whole "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/dataloader_whole.gpuscope 2>&1 | grep -E "ms/step ·|^  [0-9]\. |one thread" | cut -c1-160
for round in 1 2; do
  [ $SECONDS -ge 520 ] && break
  j dl_plain_$round "$(timeout 100 $Z dataloader --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
  j dl_fixed_$round "$(timeout 100 $Z dataloader --fixed --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
grep -v "^W1202\|cpp_extension" $OUT/err.log | tail -3; echo "t=${SECONDS}s"
