#!/usr/bin/env bash
# Device call (2026-12-02, tenth session, D), binaries of main at .carry-s10/COMMIT:
#  1. issue 13: pyzoo launch --fixed in a bounded window with the bootstrap's optimizer-steps
#     mark (a training step replayed from a CUDA graph must not read as a server);
#  2. issue 16: decode.py --graph --overlap at saturation traced whole-run (the bootstrap now
#     wraps CUDAGraph.replay: the program must run as before) and in a bounded window.
set -u
B=$PWD/.carry-s10
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s10d.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-220; }
Z="python3 examples/pyzoo/pyzoo.py"
D="python3 examples/serve/decode.py"
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128 --graph --overlap"
timeout 90 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/launch_fixed_window.gpuscope -- $Z launch --fixed > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j launch_fixed_window "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/launch_fixed_window.gpuscope 2>&1 | grep -E "ms/step ·|left out|untraced, a step|^  [0-9]\. " | cut -c1-150
echo "t=${SECONDS}s"
timeout 150 $B/gpuscope run --no-report -o $OUT/caps/overlap_whole.gpuscope -- $D $SAT > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j overlap_whole "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/overlap_whole.gpuscope 2>&1 | grep -E "ms/step ·|^  [0-9]\. " | cut -c1-150
rm -f $OUT/caps/overlap_whole.gpuscope
echo "t=${SECONDS}s"
timeout 150 $B/gpuscope run --no-report --steps 60 --skip-steps 30 -o $OUT/caps/overlap_window.gpuscope -- $D $SAT > $OUT/cur.out 2>>$OUT/err.log
rc=$?; j overlap_window "$(tail -1 $OUT/cur.out)" $rc
$B/gpuscope analyze $OUT/caps/overlap_window.gpuscope 2>&1 | grep -E "ms/step ·|left out|untraced, a step|^  [0-9]\. " | cut -c1-150
j overlap_plain "$(timeout 90 $D $SAT 2>>$OUT/err.log | tail -1)"
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -4 $OUT/err.log; echo "t=${SECONDS}s"
