"""The NVTX names the bootstrap writes, and its field marks. The protocol is written once, in
src/core/run_protocol.h (kNvtxNames, kFieldMarks); src/python/protocol_test.py checks these
prefixes and every key passed to `host` and `python_stats` against it.

  Optimizer.step#<Class>.step             each optimizer step (PyTorch's profiler's name too)
  enumerate(DataLoader)#<Iter>.__next__   each batch fetched from a DataLoader (the same)
  gpuscope.iter#<file>:<line>             each iteration of the program's step loop
  gpuscope.py#<tag>;<frames>              a stack sample; <tag> is `data` in data loading
  gpuscope.host#<key>=<int>,...           a fact about the process (loader, process group, window)
  gpuscope.python#ranges=R,...            at exit: what was emitted, the hooks' swallowed errors

torch's NVTX binding has no domains, so gpuscope's ranges are told from the program's own by
these names.
"""
from _gpuscope_state import state

OPTIMIZER_STEP = "Optimizer.step#"
DATALOADER = "enumerate(DataLoader)#"
STEP_LOOP = "gpuscope.iter#"
PY_SAMPLE = "gpuscope.py#"
HOST = "gpuscope.host#"
STATS = "gpuscope.python#"
DATA_TAG = "data"


def _fields(values):
    return ",".join(f"{key}={value}" for key, value in values.items())


def mark(name):
    state["torch"].cuda.nvtx.mark(name)


def host(**values):
    """`gpuscope.host#k1=v1,k2=v2`, the keys in the order given (integer values)."""
    mark(HOST + _fields(values))


def python_stats(**values):
    mark(STATS + _fields(values))
