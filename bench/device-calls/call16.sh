#!/usr/bin/env bash
# Device call 16 (2026-11-30, session 3): flash_test's backward timings after the clean-up
# (call 15 cut its output line short).
set -u
B=$PWD/.carry-val
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
timeout 120 $B/flash_test 2>/dev/null | grep '"bench"' | tr ',' '\n' | grep -E "ms|tflops"
