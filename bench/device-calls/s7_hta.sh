#!/usr/bin/env bash
# Device call (2026-12-01, seventh session, F): issue 19's comparison with Holistic Trace
# Analysis on an idle 16-core host (the development machine was shared at load 8-10). HTA 0.5.0's
# own package is carried (pure Python); pandas/plotly come from the host's Python if it has them.
set -u
C=$PWD/.carry-hta
export LD_LIBRARY_PATH=$C/lib:${LD_LIBRARY_PATH:-}
nproc; uptime
if ! python3 -c "import pandas, plotly, numpy" 2>$OUT/err.log; then echo "no pandas/plotly here: HTA cannot run"; cat $OUT/err.log; exit 0; fi
python3 -c "import pandas, numpy; print('pandas', pandas.__version__, 'numpy', numpy.__version__)"
mkdir -p /tmp/t1 /tmp/t3
cp testdata/pytorch/fp32_sync.json.gz /tmp/t1/rank-0.json.gz
python3 bench/make_job.py --ranks 1 --mb 51 /tmp/t3 > /dev/null 2>&1; ls -la /tmp/t3
cat > /tmp/hta_run.py <<'PY'
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
print(a.get_temporal_breakdown(visualize=False))
print(a.get_idle_time_breakdown(visualize=False))
print(a.get_gpu_kernel_breakdown(visualize=False))
PY
for d in /tmp/t1 /tmp/t3; do
  f=$(ls $d/*.json.gz | head -1)
  for i in 1 2 3; do
    /usr/bin/time -f "hta $d wall %e cpu %U+%S rss_kb %M" env PYTHONPATH=$C/py python3 /tmp/hta_run.py $d > /dev/null 2>>$OUT/time.log
    /usr/bin/time -f "gpuscope $d wall %e cpu %U+%S rss_kb %M" $C/gpuscope analyze $f > /dev/null 2>>$OUT/time.log
  done
done
grep -E "^(hta|gpuscope) " $OUT/time.log; grep -v -E "^(hta|gpuscope) " $OUT/time.log | tail -5
