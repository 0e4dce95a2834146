"""Runs examples/serve/decode.py under torch.profiler (CPU + CUDA activity, shapes recorded) and
writes a Chrome trace, for `gpuscope analyze` on the same decode loop that `gpuscope run` traces.

  python3 examples/serve/profile_decode.py TRACE.json.gz [decode.py options...]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: profile_decode.py TRACE.json.gz [decode.py options...]")
    out = sys.argv[1]
    sys.argv = [sys.argv[0]] + sys.argv[2:]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        decode.main()
        torch.cuda.synchronize()
    p.export_chrome_trace(out)


if __name__ == "__main__":
    main()
