#!/usr/bin/env bash
# Device call (2026-12-01, sixth session, validation A): one interleaved round of the PyTorch
# zoo (scripts/validate-pyzoo) with this session's binaries, then a torch.profiler trace of a
# healthy bf16 GEMM loop with a schedule (host far ahead of the GPU) as a fixture.
set -u
B=$PWD/.carry-val6
mkdir -p $OUT
OUT=$OUT ROUNDS=1 BUDGET_S=480 scripts/validate-pyzoo $B 2>&1 | tail -14
cat > /tmp/gemm_prof.py <<'PY'
import sys, torch
from torch.profiler import profile, schedule, ProfilerActivity
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
def done(p):
    p.export_chrome_trace(sys.argv[1])
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=3, repeat=1), on_trace_ready=done) as p:
    for _ in range(6):
        for _ in range(10):
            c = a @ b
        p.step()
torch.cuda.synchronize()
PY
timeout 60 python3 /tmp/gemm_prof.py $OUT/h200_gemm_profiler_schedule.json.gz 2>>$OUT/err.log; ls -la $OUT/*.gz
cd $OUT/caps && tar -czf $OUT/caps_a.tar.gz launch-* item-* alloc-* healthy-* 2>/dev/null; tar -czf $OUT/caps_b.tar.gz dataloader-* pageable-* fp32-* 2>/dev/null; tar -czf $OUT/caps_c.tar.gz attention-* 2>/dev/null; tar -czf $OUT/caps_d.tar.gz optimizer-* 2>/dev/null
ls -la $OUT
