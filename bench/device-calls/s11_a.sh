#!/usr/bin/env bash
# Device call (2026-12-02, eleventh session, A), binaries of main at .carry-s11/COMMIT:
#  1. issue 13: pyzoo dataloader in a bounded window with the bootstrap's one-thread probe (the
#     input-bound estimate now uses the measured worker cost), against the fix measured untraced
#     in steady state (--warmup 40), three interleaved rounds;
#  2. issue 16: decode.py at saturation, --graph --overlap against the same with --compile (the
#     kernel-fusion finding's fix), untraced, two rounds; a bounded window of the compiled one;
#  3. issue 16: bounded tracing's whole-run cost measured inside each run (decode.py
#     --iteration-ends: the window's pace against the same run's after-window pace), window runs
#     and plain runs interleaved;
#  4. issue 13: gloo DDP (two ranks on the one GPU) captured, and profiled, to develop on.
set -u
B=$PWD/.carry-s11
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps $OUT/ends
R=$OUT/s11a.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-220; }
Z="python3 examples/pyzoo/pyzoo.py"
D="python3 examples/serve/decode.py"
# 1.
timeout 120 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/b_dataloader.gpuscope -- $Z dataloader > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j b_dataloader "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/b_dataloader.gpuscope > $OUT/b_dataloader.txt 2>&1
grep -E "ms/step ·|untraced, a step|^  [0-9]\. |one thread" $OUT/b_dataloader.txt | cut -c1-160
for round in 1 2 3; do
  [ $SECONDS -ge 170 ] && break
  j dl_plain_$round "$(timeout 100 $Z dataloader --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
  j dl_fixed_$round "$(timeout 100 $Z dataloader --fixed --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 2.
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128 --graph --overlap"
j sat_compile_first "$(timeout 240 $D $SAT --compile 2>>$OUT/err.log | tail -1)"
for round in 1 2; do
  j sat_plain_$round "$(timeout 90 $D $SAT 2>>$OUT/err.log | tail -1)"
  j sat_compile_$round "$(timeout 150 $D $SAT --compile 2>>$OUT/err.log | tail -1)"
done
timeout 200 $B/gpuscope run --no-report --steps 60 --skip-steps 30 -o $OUT/caps/sat_compile_win.gpuscope -- $D $SAT --compile > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j sat_compile_win "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/sat_compile_win.gpuscope > $OUT/sat_compile_win.txt 2>&1
grep -E "ms/step|busy\)|untraced, a step|^  [0-9]\. \[" $OUT/sat_compile_win.txt | cut -c1-150
echo "t=${SECONDS}s"
# 3.
BND="--scheduler one --rate 1000 --requests 4 --new-tokens 300"
for i in 1 2 3 4 5 6; do
  [ $SECONDS -ge 470 ] && break
  timeout 90 $B/gpuscope run --no-calibrate --no-report --steps 120 --skip-steps 300 -o $OUT/w.gpuscope -- $D $BND --iteration-ends $OUT/ends/w$i.json > $OUT/cur.out 2>>$OUT/err.log
  j window_$i "$(tail -1 $OUT/cur.out)"
  j window_phases_$i "$(python3 bench/window_phases.py $OUT/ends/w$i.json --skip 300 --steps 120)"
  j plain_$i "$(timeout 60 $D $BND --iteration-ends $OUT/ends/p$i.json 2>>$OUT/err.log | tail -1)"
  j plain_phases_$i "$(python3 bench/window_phases.py $OUT/ends/p$i.json --skip 300 --steps 120)"
  rm -f $OUT/w.gpuscope
done
echo "t=${SECONDS}s"
# 4.
if [ $SECONDS -le 520 ]; then
  timeout 70 $B/gpuscope run -o $OUT/caps/gloo.gpuscope -- torchrun --nproc_per_node 2 examples/ddp/train_ddp.py \
    --backend gloo --steps 10 --warmup 2 --layers 2 > $OUT/gloo.txt 2>&1
  j gloo "$(grep '^{' $OUT/gloo.txt | tail -1)" $?
  timeout 50 torchrun --nproc_per_node 2 examples/ddp/train_ddp.py --backend gloo --steps 10 --warmup 2 --layers 2 \
    --profile $OUT/caps/gloo_prof --profile-steps 3 > $OUT/gloo_prof.txt 2>&1
  j gloo_prof "$(grep '^{' $OUT/gloo_prof.txt | tail -1)" $?
fi
(cd $OUT && tar czf caps.tgz caps ends && rm -rf caps ends)
tail -3 $OUT/err.log; echo "t=${SECONDS}s"
