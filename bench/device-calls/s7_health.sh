#!/usr/bin/env bash
# Device call (2026-12-01, seventh session, E): issue 18 health readings on the H200 (monitor's
# health records, /metrics health families, NVML call costs, our NVML declarations against the
# driver's nvml.h) and issue 16's decode loop under torch.profiler, analysed.
set -u
B=$PWD/.carry-s7
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
mkdir -p $OUT/live
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/health.txt
echo "== monitor health" >> $OUT/health.txt
timeout 20 $B/gpuscope monitor --duration 2s 2>>$OUT/err.log | grep '"type":"health"' | head -3 >> $OUT/health.txt
echo "== /metrics health families" >> $OUT/health.txt
timeout 25 $B/gpuscope serve --listen 127.0.0.1:9464 2>>$OUT/err.log & SP=$!
sleep 4
curl -s 127.0.0.1:9464/metrics | grep -E "^gpuscope_(xid|ecc|remapped|pcie_replay|nvlink|power_limit|clocks_event)" | head -60 >> $OUT/health.txt
curl -s "127.0.0.1:9464/metrics?dcgm" > /dev/null
kill $SP 2>/dev/null; wait $SP 2>/dev/null
echo "== nvml call cost" >> $OUT/health.txt
timeout 60 python3 scripts/nvml-call-cost.py 200 >> $OUT/health.txt 2>&1
echo "== layout" >> $OUT/health.txt
OUT=$OUT/live GPUSCOPE_BIN=$B/gpuscope bash -c "$(sed -n '12,96p' scripts/gpu-check-live)" > /dev/null 2>&1
cat $OUT/live/layout_check.txt >> $OUT/health.txt 2>/dev/null
echo "== decode under torch.profiler" >> $OUT/health.txt
timeout 120 python3 examples/serve/profile_decode.py $OUT/decode_one.json.gz --scheduler one --rate 1000 --requests 2 --new-tokens 64 >> $OUT/health.txt 2>>$OUT/err.log
ls -la $OUT/decode_one.json.gz >> $OUT/health.txt
NO_COLOR=1 $B/gpuscope analyze $OUT/decode_one.json.gz 2>&1 | grep -E "^  window|serving|^  [0-9]\. " >> $OUT/health.txt
rm -rf $OUT/live
cat $OUT/health.txt | cut -c1-220; tail -5 $OUT/err.log
