#!/usr/bin/env bash
# Device call 34 (2026-11-30, fifth session): the final binaries (GPUSCOPE_GPT_WGMMA build flag)
# still choose the wgmma attention kernels, and their checks pass.
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader
timeout 90 $B/flash_test --iters 10 2>/dev/null | grep '"case":"bench"' | grep -o '"fwd_flash_variant":"[a-z0-9_]*"\|"bwd_flash_variant":"[a-z0-9_]*"\|"fwd_ms_flash":[0-9.]*\|"bwd_ms_flash":[0-9.]*\|"pass":[a-z]*' | tr '\n' ' '; echo
echo "flash_test checks failed: $(timeout 90 $B/flash_test --no-bench 2>/dev/null | grep -c '"pass":false')"
timeout 60 $B/train_gpt --check --precision bf16 --kernels fused --optimizer fused 2>/dev/null | grep -o '"worst_grad_rel_err":[^,]*\|"pass":[a-z]*' | tr '\n' ' '; echo
timeout 60 $B/train_gpt --batch 16 --seq 1024 --precision bf16 --kernels fused --optimizer fused --input async --graph on --steps 15 2>/dev/null | grep -o '"flash_[a-z]*":"[a-z0-9_]*"\|"mfu_pct":[0-9.]*' | tr '\n' ' '; echo
