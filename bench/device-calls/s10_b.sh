#!/usr/bin/env bash
# Device call (2026-12-02, tenth session, B), binaries of main at .carry-s10/COMMIT (issue 13):
#  1. bounded windows of pyzoo programs whose host runs ahead of the GPU: the bootstrap's new
#     GPU-timeline mark (untraced_device_step_us) beside the host one, and the findings;
#  2. the kernel-fusion finding's next fix measured: pyzoo --compare compile, now compiling
#     forward, loss and backward together (call A compiled the model only).
set -u
B=$PWD/.carry-s10
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/caps
R=$OUT/s10b.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
j() { echo "{\"case\": \"$1\", \"rc\": ${3:-null}, \"result\": ${2:-null}}" | tee -a $R | cut -c1-200; }
Z="python3 examples/pyzoo/pyzoo.py"
# 1.
for cf in "fp32 --fixed" "pageable --fixed" "healthy" "item --fixed" "dataloader --fixed" "optimizer --fixed" "alloc --fixed" "attention --fixed"; do
  [ $SECONDS -ge 170 ] && break
  set -- $cf
  n=b_$1${2:+_fixed}
  timeout 90 $B/gpuscope run --no-report --steps 15 --skip-steps 12 -o $OUT/caps/$n.gpuscope -- $Z $cf > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j $n "$(tail -1 $OUT/cur.out)" $rc
  { echo "== $cf (bounded)"; $B/gpuscope analyze $OUT/caps/$n.gpuscope 2>&1 | grep -E "ms/step|untraced, a step|^  [0-9]\. "; } >> $OUT/bounded.txt
done
cut -c1-150 $OUT/bounded.txt
echo "t=${SECONDS}s"
# 2.
for c in healthy fp32 attention item alloc pageable launch; do
  [ $SECONDS -ge 480 ] && break
  timeout 110 $Z $c --fixed --compare compile --steps 60 --chunks 6 > $OUT/cur.out 2>>$OUT/err.log
  rc=$?; j next_${c}_compile "$(tail -1 $OUT/cur.out)" $rc
done
(cd $OUT && tar czf caps.tgz caps && rm -rf caps)
tail -5 $OUT/err.log; echo "t=${SECONDS}s"
