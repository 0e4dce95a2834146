#!/usr/bin/env bash
# Device call (2026-12-02, tenth session, C), binaries of main at .carry-s10/COMMIT:
#  1. issue 13: pyzoo launch --fixed (a step in one CUDA graph) in a bounded window: graph
#     replays now count as steps (call A's window never opened);
#  2. issue 13: the fixed programs' remaining findings measured: item --fixed without its host
#     work (host-bound), dataloader --fixed with its first batch reused (input-bound's bound);
#  3. issue 13: dataloader unfixed against fixed in steady state (--warmup 40 drains the 32
#     prefetched batches before timing), with a bounded window of the unfixed program;
#  4. issue 16: bounded tracing's whole-run cost, one request at a time, more interleaved pairs.
set -u
B=$PWD/.carry-s10
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s10c.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-220; }
Z="python3 examples/pyzoo/pyzoo.py"
D="python3 examples/serve/decode.py"
# 1.
timeout 90 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/b_launch_fixed.gpuscope -- $Z launch --fixed > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j b_launch_fixed "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/b_launch_fixed.gpuscope 2>&1 | grep -E "ms/step ·|untraced, a step|^  [0-9]\. " | cut -c1-150
tail -2 $OUT/err.log
echo "t=${SECONDS}s"
# 2.
timeout 100 $Z item --fixed --compare no_host_work --steps 60 --chunks 6 > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j next_item_no_host_work "$(tail -1 $OUT/cur.out)" $rc
timeout 150 $Z dataloader --fixed --compare no_input --warmup 40 --steps 60 --chunks 6 > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j next_dataloader_no_input "$(tail -1 $OUT/cur.out)" $rc
echo "t=${SECONDS}s"
# 3.
timeout 120 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/b_dataloader.gpuscope -- $Z dataloader > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j b_dataloader "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/b_dataloader.gpuscope 2>&1 | grep -E "ms/step ·|untraced, a step|^  [0-9]\. " | cut -c1-150
for round in 1 2; do
  j dl_plain_$round "$(timeout 100 $Z dataloader --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
  j dl_fixed_$round "$(timeout 100 $Z dataloader --fixed --warmup 40 --steps 30 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 4.
BND="--scheduler one --rate 1000 --requests 4 --new-tokens 300"
for i in 1 2 3 4 5 6 7 8; do
  [ $SECONDS -ge 480 ] && break
  if [ $((i % 2)) = 1 ]; then
    j plain_$i "$(timeout 60 $D $BND 2>>$OUT/err.log | tail -1)"
    timeout 90 $B/gpuscope run --no-calibrate --no-report --steps 120 --skip-steps 10 -o $OUT/w.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
    j window_$i "$(tail -1 $OUT/cur.out)"
  else
    timeout 90 $B/gpuscope run --no-calibrate --no-report --steps 120 --skip-steps 10 -o $OUT/w.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
    j window_$i "$(tail -1 $OUT/cur.out)"
    j plain_$i "$(timeout 60 $D $BND 2>>$OUT/err.log | tail -1)"
  fi
  rm -f $OUT/w.gpuscope
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -3 $OUT/err.log; echo "t=${SECONDS}s"
