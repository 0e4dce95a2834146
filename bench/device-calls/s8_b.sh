#!/usr/bin/env bash
# Device call (2026-12-01, eighth session, B), binaries of main at .carry-s8/COMMIT:
#  1. the C++ zoo, one round (scripts/validate GPT=0 ROUNDS=1): existing paths stay as good
#     (issue 13) after the 'queued' idle cause;
#  2. every pyzoo case unfixed under gpuscope run (top finding, steps) with this session's
#     bootstrap (the dataloader case now carries the torch-threads mark);
#  3. bounded tracing of the one-sequence decode loop against untraced, three more interleaved
#     rounds (issue 16's 5% target).
set -u
B=$PWD/.carry-s8
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPT=0 ROUNDS=1 BUDGET_S=200 HARD_S=230 END_S=250 OUT=$OUT/zoo bash scripts/validate $B 2>&1 | tail -14
echo "t=${SECONDS}s"
mkdir -p $OUT/caps
R=$OUT/s8b.jsonl
for c in launch item dataloader pageable alloc optimizer fp32 attention healthy; do
  [ $SECONDS -ge 420 ] && break
  timeout 90 $B/gpuscope run --no-report -o $OUT/caps/$c.gpuscope -- python3 examples/pyzoo/pyzoo.py $c > $OUT/cur.out 2>>$OUT/err.log
  prog=$(grep '^{"case"' $OUT/cur.out | tail -1)
  $B/gpuscope analyze --json $OUT/caps/$c.gpuscope > $OUT/caps/$c.json 2>>$OUT/err.log
  top=$(python3 -c "
import json,sys
d=json.load(open('$OUT/caps/$c.json'))['devices'][0]
print(json.dumps({'steps': d['steps']['count'], 'source': d['steps']['source'], 'findings': [(f['id'], round(f['est_speedup'] or 0, 3)) for f in d['findings']][:4]}))" 2>>$OUT/err.log)
  echo "{\"case\": \"$c\", \"program\": ${prog:-null}, \"gpuscope\": ${top:-null}}" | tee -a $R | cut -c1-250
  rm -f $OUT/caps/$c.json
done
echo "t=${SECONDS}s"
grep -h 'gpuscope.host#' -r $OUT/caps 2>/dev/null | head -1
$B/gpuscope analyze $OUT/caps/dataloader.gpuscope 2>&1 | grep -A10 'input-bound' | head -12
D="python3 examples/serve/decode.py"
BND="--scheduler one --rate 1000 --requests 2 --new-tokens 300"
for round in 1 2 3; do
  [ $SECONDS -ge 520 ] && break
  u=$(timeout 60 $D $BND 2>>$OUT/err.log | tail -1); echo "{\"case\": \"bnd_plain_$round\", \"result\": ${u:-null}}" | tee -a $R | cut -c1-200
  timeout 90 $B/gpuscope run --no-calibrate --no-report --steps 50 --skip-steps 10 -o $OUT/caps/bnd_$round.gpuscope -- $D $BND > $OUT/cur.out 2>>$OUT/err.log
  w=$(tail -1 $OUT/cur.out); echo "{\"case\": \"bnd_window_$round\", \"result\": ${w:-null}}" | tee -a $R | cut -c1-200
done
cd $OUT/caps && tar -czf $OUT/caps.tar.gz dataloader.gpuscope launch.gpuscope healthy.gpuscope 2>/dev/null; cd $OUT && rm -rf caps cur.out zoo/caps
ls -la $OUT $OUT/zoo; tail -5 $OUT/err.log; echo "t=${SECONDS}s"
