#!/usr/bin/env bash
# Device call (2026-12-02, ninth session, B), binaries of main at .carry-s9/COMMIT (issue 16):
#  1. what a bounded window costs a launch-bound decode loop, within one run: the window's traced
#     ms per iteration (its capture) against the run's untraced p50 per-token time (the program's
#     own; 150 of 900 iterations traced), with parts of the tracer turned off one at a time:
#     default; no RUNTIME API records; no copy/set/sync/memory records; no Python stack
#     sampler; no Python bootstrap (a time window instead); no cuBLAS shape interposer;
#  2. decode.py --graph (static shapes, CUDA graph) at saturation against the eager loop, and traced.
set -u
B=$PWD/.carry-s9
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps $B/nb && cp -r $B/* $B/nb/ 2>/dev/null; rm -f $B/nb/libgpuscope_blas.so; rm -rf $B/nb/nb
R=$OUT/s9b.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"window\": \"$3\", \"result\": ${2:-null}}" | tee -a $R | cut -c1-160; }
D="python3 examples/serve/decode.py"
ONE="--scheduler one --rate 1000 --requests 1 --new-tokens 900"
W="--steps 150 --skip-steps 300"
cfg() {  # name, env..., -- run flags
  local name=$1; shift
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 120 $B/gpuscope run --no-calibrate --no-report "$@" -o $OUT/caps/$name.gpuscope -- $D $ONE > $OUT/cur.out 2>>$OUT/err.log
  local win; win=$($B/gpuscope analyze $OUT/caps/$name.gpuscope 2>&1 | grep -o '[0-9.]* ms/step' | head -1)
  j $name "$(tail -1 $OUT/cur.out)" "$win"
}
for round in 1 2; do
  cfg default_$round X=1 -- $W
  cfg noruntime_$round GPUSCOPE_KINDS_OFF=RUNTIME -- $W
  cfg noextra_$round GPUSCOPE_KINDS_OFF=MEMCPY,MEMSET,SYNCHRONIZATION,MEMORY2 -- $W
  cfg nosampler_$round GPUSCOPE_PY_SAMPLE_HZ=0 -- $W
  cfg noboot_$round GPUSCOPE_PYTHON=0 -- --after 8s --for 1s
  cfg noblas_$round GPUSCOPE_LIB_DIR=$B/nb -- $W
  [ $SECONDS -ge 260 ] && break
done
echo "t=${SECONDS}s"
# 2. the static-shape CUDA-graph server at saturation
SAT="--scheduler continuous --batch 256 --rate 1000000 --requests 256 --new-tokens 128"
for round in 1 2; do
  j eager_sat_$round "$(timeout 90 $D $SAT 2>>$OUT/err.log | tail -1)"
  j graph_sat_$round "$(timeout 90 $D $SAT --graph 2>>$OUT/err.log | tail -1)"
done
timeout 150 $B/gpuscope run --no-report -o $OUT/caps/graph_sat.gpuscope -- $D $SAT --graph > $OUT/cur.out 2>>$OUT/err.log
j graph_sat_traced "$(tail -1 $OUT/cur.out)"
$B/gpuscope analyze $OUT/caps/graph_sat.gpuscope > $OUT/graph_sat.txt 2>&1; sed -n '1,14p;/^Idle/,/^Kernels/p;/^Findings/,$p' $OUT/graph_sat.txt | cut -c1-150 | head -60
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -5 $OUT/err.log; echo "t=${SECONDS}s"
