#!/usr/bin/env bash
# Device call (2026-12-01, sixth session, probe): the PyTorch zoo (examples/pyzoo) untraced and
# under `gpuscope run` with the Python bootstrap (PYTHONPATH set by hand: the binaries carried
# predate run's own wiring); a torch.profiler trace of a healthy GEMM loop with a schedule;
# GPT-2 124M with torch.compile under run. Captures come back as fixtures (tar.gz).
set -u
B=$PWD/.carry-probe
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GPUSCOPE_LIB_DIR=$B
BOOT=$PWD/src/python/gpuscope_boot
C=/tmp/caps; mkdir -p $C $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
python3 -c 'import torch; print("torch", torch.__version__)' | tee -a $OUT/gpu.txt
R=$OUT/results.jsonl; : > $R
for case in launch item dataloader pageable alloc optimizer fp32 attention healthy; do
  for fx in "" "--fixed"; do
    tag=$case${fx:+_fixed}
    echo "== $tag" >&2
    o=$(timeout 60 python3 examples/pyzoo/pyzoo.py $case $fx 2>>$OUT/err.log | tail -1)
    echo "{\"run\":\"$tag\",\"traced\":false,\"out\":${o:-null}}" >> $R
    o=$(PYTHONPATH=$BOOT timeout 90 $B/gpuscope run --no-report -o $C/$tag.gpuscope -- python3 examples/pyzoo/pyzoo.py $case $fx 2>>$OUT/err.log | tail -1)
    echo "{\"run\":\"$tag\",\"traced\":true,\"out\":${o:-null}}" >> $R
    echo "$tag $SECONDS s" >&2
  done
done
# Healthy GEMM loop recorded with torch.profiler and a schedule (host far ahead of the GPU).
cat > /tmp/gemm_prof.py <<'PY'
import torch, sys
from torch.profiler import profile, schedule, ProfilerActivity
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=3)) as p:
    for _ in range(6):
        for _ in range(10):
            c = a @ b
        p.step()
torch.cuda.synchronize()
p.export_chrome_trace(sys.argv[1])
PY
timeout 120 python3 /tmp/gemm_prof.py $C/gemm_profiler_schedule.json.gz 2>>$OUT/err.log && echo gemm ok >&2
# GPT-2 124M bf16 with torch.compile, untraced then traced.
if [ $SECONDS -lt 400 ]; then
  o=$(timeout 150 python3 examples/train_gpt.py --compile --steps 20 2>>$OUT/err.log | tail -1)
  echo "{\"run\":\"gpt_compile\",\"traced\":false,\"out\":${o:-null}}" >> $R
  o=$(PYTHONPATH=$BOOT timeout 170 $B/gpuscope run --no-report -o $C/gpt_compile.gpuscope -- python3 examples/train_gpt.py --compile --steps 20 2>>$OUT/err.log | tail -1)
  echo "{\"run\":\"gpt_compile\",\"traced\":true,\"out\":${o:-null}}" >> $R
fi
ls -la $C > $OUT/caps.txt
(cd $C && tar -czf $OUT/caps_zoo.tar.gz $(ls | grep -v -e optimizer -e gpt -e gemm); tar -czf $OUT/caps_opt.tar.gz optimizer*; tar -czf $OUT/caps_gpt.tar.gz gpt* gemm*)
ls -la $OUT
