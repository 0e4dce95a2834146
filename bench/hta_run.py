#!/usr/bin/env python3
"""What Holistic Trace Analysis computes in bench/hta_paired.py's comparison: its temporal, idle
time and GPU kernel breakdowns of the trace in DIR (as rank-0.json.gz). Needs HTA (PyPI
HolisticTraceAnalysis) in the interpreter that runs it.
usage: hta_run.py DIR
"""
import sys

from hta.trace_analysis import TraceAnalysis

a = TraceAnalysis(trace_dir=sys.argv[1])
print(a.get_temporal_breakdown(visualize=False))
print(a.get_idle_time_breakdown(visualize=False))
print(a.get_gpu_kernel_breakdown(visualize=False))
