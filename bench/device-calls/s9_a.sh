#!/usr/bin/env bash
# Device call (2026-12-02, ninth session, A), binaries of main at .carry-s9/COMMIT (issue 16):
#  1. under-batched: one request at a time traced (whole run, calibrated) for the prediction;
#     continuous batching at the predicted M traced (what the other kernels really take); then,
#     interleaved and untraced, one at a time against continuous batching at that M (the +-25%
#     target);
#  2. a bounded window recorded verbosely: are cuBLASLt's driver-API launches in it?
#  3. bounded tracing's cost: interleaved pairs, untraced against `run --steps 120` of a 1200-
#     iteration run (ten times the window), pinned to four cores (taskset) against host noise.
set -u
B=$PWD/.carry-s9
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s9a.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
j() { echo "{\"case\": \"$1\", \"wall_s\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-220; }
now() { date +%s.%N; }
D="python3 examples/serve/decode.py"
ONE="--scheduler one --rate 1000 --requests 4 --new-tokens 256"
# 1. the prediction and its check
timeout 150 $B/gpuscope run --no-report -o $OUT/caps/one_full.gpuscope -- $D $ONE > $OUT/cur.out 2>>$OUT/err.log
j one_traced "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/one_full.gpuscope > $OUT/one_full.txt 2>&1
grep -A10 "under-batched" $OUT/one_full.txt | head -11
M=$(grep -o 'M\* = [0-9]*' $OUT/one_full.txt | head -1 | awk '{print $3}'); M=${M:-294}; echo "M=$M"
CONT="--scheduler continuous --batch $M --rate 1000000 --requests $M --new-tokens 256"
timeout 150 $B/gpuscope run --no-report -o $OUT/caps/cont_M.gpuscope -- $D $CONT > $OUT/cur.out 2>>$OUT/err.log
j cont_traced "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/cont_M.gpuscope 2>&1 | sed -n '1,16p;/^Kernels/,/^Top/p'
for round in 1 2 3; do
  [ $SECONDS -ge 200 ] && break
  j one_plain_$round "$(timeout 90 $D $ONE 2>>$OUT/err.log | tail -1)"
  j cont_plain_$round "$(timeout 90 $D $CONT 2>>$OUT/err.log | tail -1)"
done
echo "t=${SECONDS}s"
# 2. a bounded window, verbose
BND="--scheduler one --rate 1000 --requests 4 --new-tokens 300"
GPUSCOPE_VERBOSE=1 timeout 120 $B/gpuscope run --no-report --steps 120 --skip-steps 10 -o $OUT/caps/window.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/verbose.log
j window_verbose "$(tail -1 $OUT/cur.out)"
grep -i "driverapi\|failed" $OUT/verbose.log | sort | uniq -c | head
$B/gpuscope analyze $OUT/caps/window.gpuscope 2>&1 | grep -E "window|GEMM launches|launch call to kernel" | head -5
echo "t=${SECONDS}s"
# 3. bounded tracing's cost, pinned
P="taskset -c 2-5"
plain() {
  local t0 t1 out; t0=$(now); out="$(timeout 90 $P $D $BND 2>>$OUT/err.log | tail -1)"; t1=$(now)
  j plain_$1 "$out" "$(python3 -c "print(round($t1 - $t0, 3))")"
}
window() {
  local t0 t1; t0=$(now)
  timeout 120 $P $B/gpuscope run --no-calibrate --no-report --steps 120 --skip-steps 10 -o $OUT/caps/w$1.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  t1=$(now); j window_$1 "$(tail -1 $OUT/cur.out)" "$(python3 -c "print(round($t1 - $t0, 3))")"; rm -f $OUT/caps/w$1.gpuscope
}
for i in 1 2 3 4 5 6 7 8 9 10; do
  [ $SECONDS -ge 480 ] && break
  if [ $((i % 2)) = 1 ]; then plain $i; window $i; else window $i; plain $i; fi
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -5 $OUT/err.log; echo "t=${SECONDS}s"
