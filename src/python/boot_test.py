#!/usr/bin/env python3
"""Tests of gpuscope's Python bootstrap (src/python/gpuscope_boot) against a stub `torch`.

PyTorch is not installed on the development and CI machines, so each test writes a small
package named `torch` with just the API the bootstrap touches (global optimizer hooks,
DataLoader iterators, CUDA graphs, cuda.is_initialized, cuda.nvtx; module hooks and
autograd.backward too, to show they are left alone) whose NVTX functions append to a log file,
runs a program under `python3` with the bootstrap first on PYTHONPATH, and reads the log back.
The step loop's search needs sys.monitoring (Python 3.12+): its tests run under the newest
Python 3.12+ found (GPUSCOPE_TEST_PYTHON312, PATH, pyenv) and are skipped, saying so, without
one. usage: boot_test.py [unittest args]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpuscope_boot")


def find_python312():
    """An interpreter with sys.monitoring, or None."""
    import glob
    import shutil

    candidates = [os.environ.get("GPUSCOPE_TEST_PYTHON312", ""), sys.executable]
    candidates += [shutil.which(f"python3.{minor}") or "" for minor in range(20, 11, -1)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")), reverse=True)
    for exe in candidates:
        if exe and os.path.exists(exe):
            probe = subprocess.run([exe, "-c", "import sys; print(hasattr(sys, 'monitoring'))"],
                                   capture_output=True, text=True)
            if probe.stdout.strip() == "True":
                return exe
    return None


PYTHON312 = find_python312()

STUB = {
    "torch/__init__.py": """
        import os
        from . import cuda, optim, nn, autograd, compiler, utils, distributed
        os.environ.setdefault("STUB_TORCH_IMPORTED", "1")
        _threads = [4]
        def get_num_threads():
            return _threads[0]
        def set_num_threads(n):
            _threads[0] = n
        open(os.environ["STUB_LOG"], "a").write('{"import": "torch"}\\n')
    """,
    "torch/distributed.py": """
        import os
        # STUB_DIST: the default process group's backend config ("cpu:gloo,cuda:gloo"), unset: none.
        def is_available():
            return True
        def is_initialized():
            return bool(os.environ.get("STUB_DIST"))
        def get_backend_config():
            return os.environ["STUB_DIST"]
        def get_world_size():
            return 2
    """,
    "torch/compiler.py": """
        import os
        def is_compiling():  # STUB_COMPILING=1: as if dynamo were tracing every call
            return os.environ.get("STUB_COMPILING") == "1"
    """,
    "torch/cuda/__init__.py": """
        import os, time
        from . import nvtx
        _init = False
        _device_clock = [0.0]
        class Event:
            # A timing event on a stub GPU that runs each step in STUB_DEVICE_STEP_MS (0: as
            # fast as the host), queued behind the previous step as a real stream would be.
            def __init__(self, enable_timing=False):
                self.t = None
            def record(self):
                with open(os.environ["STUB_LOG"], "a") as f:
                    f.write('{"event_record": 1}\\n')
                step = float(os.environ.get("STUB_DEVICE_STEP_MS", "0")) / 1e3
                _device_clock[0] = max(time.perf_counter(), _device_clock[0] + step)
                self.t = _device_clock[0]
            def query(self):
                return self.t is not None
            def elapsed_time(self, end):
                return (end.t - self.t) * 1e3
        class CUDAGraph:
            def replay(self):
                pass
        _capturing = [False]
        def is_current_stream_capturing():
            return _capturing[0]
        def init():
            global _init
            _init = True
        def is_initialized():
            return _init
        _stats_reads = [0]
        def memory_stats():
            # The caching allocator's retries: STUB_RETRIES_PER_READ more at each read.
            _stats_reads[0] += 1
            return {"num_alloc_retries": _stats_reads[0] * int(os.environ.get("STUB_RETRIES_PER_READ", "0")),
                    "num_ooms": 0}
    """,
    "torch/cuda/nvtx.py": """
        import json, os, threading, time
        _next = [0]
        def _log(kind, name):
            if os.environ.get("STUB_NVTX_RAISE") == "1":
                raise RuntimeError("nvtx broke")
            with open(os.environ["STUB_LOG"], "a") as f:
                f.write(json.dumps({"kind": kind, "name": name, "pid": os.getpid(),
                                    "thread": threading.current_thread().name}) + "\\n")
        def range_start(msg):
            _next[0] += 1
            _log("start", msg)
            return _next[0]
        def range_end(rid):
            _log("end", rid)
        def mark(msg):
            _log("mark", msg)
    """,
    "torch/optim/__init__.py": """
        from .optimizer import Optimizer
    """,
    "torch/optim/optimizer.py": """
        import itertools
        from torch._handle import Handle
        _pre, _post = {}, {}
        def register_optimizer_step_pre_hook(h):
            return Handle(_pre, h)
        def register_optimizer_step_post_hook(h):
            return Handle(_post, h)
        class Optimizer:
            def step(self):
                # As torch does: live views of the hook dicts (removing one inside a hook raises).
                for h in itertools.chain(_pre.values()):
                    h(self, (), {})
                self.work()
                for h in itertools.chain(_post.values()):
                    h(self, (), {})
            def work(self):
                pass
        class AdamW(Optimizer):
            pass
    """,
    "torch/_handle.py": """
        import itertools
        _ids = itertools.count()
        class Handle:
            def __init__(self, hooks, h):
                self.hooks, self.id = hooks, next(_ids)
                hooks[self.id] = h
            def remove(self):
                self.hooks.pop(self.id, None)
    """,
    "torch/nn/__init__.py": """
        from .modules.module import Module
    """,
    "torch/nn/modules/__init__.py": "",
    "torch/nn/modules/module.py": """
        from torch._handle import Handle
        _pre, _post = {}, {}
        def register_module_forward_pre_hook(h):
            return Handle(_pre, h)
        def register_module_forward_hook(h, always_call=False):
            return Handle(_post, h)
        class Module:
            def register_forward_pre_hook(self, h):
                return Handle(self.__dict__.setdefault("_pre_here", {}), h)
            def register_forward_hook(self, h, always_call=False):
                return Handle(self.__dict__.setdefault("_post_here", {}), h)
            def __call__(self, *args):
                # As torch does: copies of the global and the module's own hook dicts.
                for h in (*_pre.values(), *self.__dict__.get("_pre_here", {}).values()):
                    h(self, args)
                out = self.forward(*args)
                for h in (*_post.values(), *self.__dict__.get("_post_here", {}).values()):
                    h(self, args, out)
                return out
    """,
    "torch/autograd/__init__.py": """
        def backward(tensors, *args, **kwargs):
            return "grads"
    """,
    "torch/utils/__init__.py": """
        from . import data
    """,
    "torch/utils/data/__init__.py": """
        from . import dataloader
        from .dataloader import DataLoader
    """,
    "torch/utils/data/dataloader.py": """
        class _BaseDataLoaderIter:
            def __init__(self, loader):
                items = self._dataset = loader.items
                # Map-style (0) for a sized sequence, iterable (1) for a generator, as torch's
                # _DatasetKind; pin_memory as the loader was asked; one item a batch.
                self._dataset_kind = 0 if hasattr(items, "__len__") else 1
                self._pin_memory = True
                self._auto_collation = False
                self._collate_fn = loader.collate_fn
                self._num_workers = loader.num_workers
                if self._dataset_kind == 0:
                    self._sampler_iter = iter(loader.sampler if loader.sampler is not None else range(len(items)))
                else:
                    self._items = iter(items)
            def __iter__(self):
                return self
            def __next__(self):
                if self._dataset_kind == 1:
                    return next(self._items)
                return self._dataset[next(self._sampler_iter)]
        class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
            pass
        class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
            pass  # its "workers" build in this process, one after another
        class DataLoader:
            def __init__(self, items, num_workers=0, sampler=None, batch_size=1, collate_fn=None,
                         multiprocessing_context=None, prefetch_factor=None):
                self.items, self.num_workers, self.sampler = items, num_workers, sampler
                self.collate_fn, self.multiprocessing_context = collate_fn, multiprocessing_context
            def __iter__(self):
                if self.num_workers:
                    return _MultiProcessingDataLoaderIter(self)
                return _SingleProcessDataLoaderIter(self)
    """,
}

# Replaces the bootstrap's trace control (the injection library's) by a log line.
CONTROL = """
import _gpuscope_window

def control(open_window):
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(json.dumps({"control": int(open_window)}) + "\\n")
    return True

_gpuscope_window.trace_control = control
"""

# A model of two inner modules: only Model is outermost.
MODEL = """
import torch.nn as nn

class Inner(nn.Module):
    def forward(self, x):
        return x + 1

class Model(nn.Module):
    def __init__(self):
        self.a, self.b = Inner(), Inner()
    def forward(self, x):
        return self.b(self.a(x))
"""

PROGRAM = MODEL + """
import os, sys, time
import torch
from torch.optim.optimizer import AdamW
from torch.utils.data import DataLoader

def load_batches():
    return list(DataLoader([1, 2, 3]))

torch.cuda.init()
model, opt = Model(), AdamW()
for x in load_batches():
    y = model(x)
    torch.autograd.backward([y])
    opt.step()
    time.sleep(0.03)
"""


class Harness(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="gpuscope-boot-test-")
        self.root = self.dir.name
        for rel, text in STUB.items():
            path = os.path.join(self.root, "stub", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))
        self.log = os.path.join(self.root, "log.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def run_program(self, program, extra_path=(), env=None, python=None):
        path = os.path.join(self.root, "prog.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(program))
        e = dict(os.environ)
        e.pop("PYTHONPATH", None)
        e.update({"STUB_LOG": self.log, "GPUSCOPE_PY_SAMPLE_HZ": "200",
                  "PYTHONPATH": os.pathsep.join([BOOT, *extra_path, os.path.join(self.root, "stub")])})
        e.update(env or {})
        proc = subprocess.run([python or sys.executable, path], env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

    def records(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]



class BootTest(Harness):
    def test_ranges_name_steps_and_input_and_touch_no_module(self):
        proc = self.run_program(PROGRAM + textwrap.dedent("""
            import torch.nn.modules.module as m
            print(len(m._pre) + len(m._post), torch.autograd.backward.__module__)
        """))
        # No module hook (dynamo guards on them) and no wrapped backward.
        self.assertEqual(proc.stdout.split(), ["0", "torch.autograd"])
        starts = [r["name"] for r in self.records() if r.get("kind") == "start"]
        self.assertEqual(starts.count("Optimizer.step#AdamW.step"), 3)
        self.assertFalse([n for n in starts if "forward" in n or "backward" in n], starts)
        # DataLoader batches are fetched before the loop, three plus the StopIteration call.
        self.assertEqual(starts.count("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), 4)
        ends = [r for r in self.records() if r.get("kind") == "end"]
        self.assertEqual(len(ends), len(starts))
        # One mark of the loader's threads, at the first batch built in the main process.
        hosts = [r["name"] for r in self.records() if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#cpus=")]
        self.assertEqual(len(hosts), 1)
        self.assertRegex(hosts[0], r"^gpuscope\.host#cpus=[1-9][0-9]*,torch_threads=4$")

    def test_cpus_are_shared_among_a_launchers_processes(self):
        # torchrun with four processes on the node, none pinned: each has a quarter of the CPUs
        # for its loader workers (at least one).
        self.run_program(PROGRAM, env={"LOCAL_WORLD_SIZE": "4"})
        hosts = [r["name"] for r in self.records() if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#cpus=")]
        mine = len(os.sched_getaffinity(0))
        share = max(1, mine // 4) if mine == os.cpu_count() else mine
        self.assertEqual(hosts, [f"gpuscope.host#cpus={share},torch_threads=4"])

    LOADER_PROGRAM = """
import os, time
import torch
from torch.utils.data import DataLoader, dataloader
import _gpuscope_state

def batches():
    end = time.process_time() + 0.03
    while time.process_time() < end:  # 30 ms of CPU
        pass
    yield 1
    time.sleep(0.05)  # 50 ms of wall time, almost no CPU
    yield 2
    yield 3

torch.cuda.init()
for _ in DataLoader(list(range(4)), num_workers=2):
    pass
for _ in DataLoader(batches()):
    pass
_gpuscope_state.detach()
print(hasattr(dataloader._BaseDataLoaderIter.__next__, "_gpuscope"))
for _ in DataLoader([7, 8]):
    pass
"""

    def loader_costs(self, records):
        """(cpu_us, wall_us) of each loader-cost mark, in order."""
        out = []
        for r in records:
            if r.get("kind") != "mark":
                continue
            m = re.fullmatch(r"gpuscope\.host#loader_cpu_us=(\d+),loader_wall_us=(\d+)", r["name"])
            if m:
                out.append((int(m.group(1)), int(m.group(2))))
        return out

    def test_loader_cost_marks_each_batch_built_here(self):
        proc = self.run_program(self.LOADER_PROGRAM, env={"GPUSCOPE_PY_SAMPLE_HZ": "0"})
        # The wrapper is gone after detach, and the batches after it are not marked.
        self.assertEqual(proc.stdout.strip(), "False")
        records = self.records()
        costs = self.loader_costs(records)
        # One per batch of the worker-less loader (three; not its StopIteration call), none for
        # the loader with workers (four batches) or after detach (two).
        self.assertEqual(len(costs), 3, costs)
        loader_marks = [r for r in records if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#loader")]
        self.assertEqual(len(loader_marks), 3, loader_marks)
        (cpu1, wall1), (cpu2, wall2), _ = costs
        # 30 ms of CPU in the first batch; the second slept 50 ms.
        self.assertGreaterEqual(cpu1, 25_000)
        self.assertGreaterEqual(wall1, 25_000)
        self.assertGreaterEqual(wall2, 50_000)
        self.assertLess(cpu2, 25_000)
        # Each mark is emitted inside its batch's range (here the last batch's).
        names = [str(r.get("name")) for r in records]
        mark = max(i for i, n in enumerate(names) if n.startswith("gpuscope.host#loader"))
        self.assertEqual(names[mark - 1], "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
        self.assertEqual(records[mark + 1].get("kind"), "end")
        # The one-off threads mark comes from the worker-less loader only; the loader with
        # workers gets its own one-off mark with their count (once for its four batches).
        hosts = [r["name"] for r in records if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#cpus=")]
        self.assertEqual(len(hosts), 2, hosts)
        self.assertEqual(len([h for h in hosts if "torch_threads=" in h]), 1, hosts)
        self.assertEqual(len([h for h in hosts if h.endswith(",loader_workers=2")]), 1, hosts)

    def test_loader_cost_needs_cuda_in_this_process(self):
        self.run_program(self.LOADER_PROGRAM.replace("torch.cuda.init()", ""))
        self.assertEqual(self.loader_costs(self.records()), [])

    PROBE_PROGRAM = """
import os, sys, time
import torch
from torch.optim.optimizer import AdamW
from torch.utils.data import DataLoader

class Items:
    # Map-style: each item takes 40 ms on one thread and 5 ms on the program's four, and says
    # so on stdout (which a forked copy must not repeat).
    def __len__(self):
        return 8
    def __getitem__(self, i):
        if i >= 8:
            raise IndexError(i)
        time.sleep(0.04 if torch.get_num_threads() == 1 else 0.005)
        print("item", i, flush=True)
        if os.environ.get("FAIL_IN_COPY") and i >= 3 and torch.get_num_threads() == 1:
            raise ValueError(i)  # what the copy's workers build fails
        if os.environ.get("BIG_ITEMS"):
            return Big(i)
        return [Cuda(i)] if os.environ.get("CUDA_ITEMS") else i

class Cuda(int):
    # A stand-in for a CUDA tensor: what a forked copy (or a worker) cannot build.
    is_cuda = True

class Big(int):
    # A stand-in for a tensor of 1 PiB: no room for workers' batches in flight.
    nbytes = 1 << 50

if os.environ.get("STEP_FIRST"):
    torch.cuda.init()
    AdamW().step()
if os.environ.get("LOAD_BEFORE_CUDA"):
    seen = [next(iter(DataLoader([0])))]
torch.cuda.init()
opt = AdamW()
seen = []
for x in DataLoader(Items()):
    seen.append(x)
    opt.step()
print("seen", seen, torch.get_num_threads())
"""

    def probe_marks(self):
        return [r["name"] for r in self.records()
                if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#loader_one_thread")]

    def pool_marks(self):
        return [r["name"] for r in self.records()
                if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#loader_pool")]

    def test_loader_probe_times_a_worker_in_a_forked_copy(self):
        proc = self.run_program(self.PROBE_PROGRAM, env={"GPUSCOPE_PY_SAMPLE_HZ": "0"})
        # The program saw every batch in order, printed each item once and kept its threads.
        lines = proc.stdout.split("\n")
        self.assertIn("seen [0, 1, 2, 3, 4, 5, 6, 7] 4", lines)
        self.assertEqual([l for l in lines if l.startswith("item")], [f"item {i}" for i in range(8)])
        marks = self.probe_marks()
        self.assertEqual(len(marks), 1, marks)
        m = re.fullmatch(r"gpuscope\.host#loader_one_thread_us=(\d+),batches=(\d+),loader_one_thread_cpu_us=(\d+)",
                         marks[0])
        self.assertIsNotNone(m, marks)
        # The copy ran on one thread: 40 ms a batch, not the program's 5 ms.
        self.assertGreaterEqual(int(m.group(1)), 38_000)
        self.assertLess(int(m.group(1)), 200_000)
        self.assertEqual(int(m.group(2)), 3)
        # Its CPU time per batch, every thread's: the stub's items sleep.
        self.assertLess(int(m.group(3)), int(m.group(1)) // 2)
        # Then it ran a loader with the advised workers (one per CPU beside this process, at most
        # 8; the stub's build one after another, 40 ms a batch) and timed the batches after the
        # first round: three rounds.
        pool = self.pool_marks()
        self.assertEqual(len(pool), 1, pool)
        m = re.fullmatch(r"gpuscope\.host#loader_pool_us=(\d+),pool_workers=(\d+),batches=(\d+)", pool[0])
        self.assertIsNotNone(m, pool)
        workers = max(1, min(8, len(os.sched_getaffinity(0)) - 1))
        self.assertEqual(int(m.group(2)), workers)
        self.assertEqual(int(m.group(3)), 3 * workers)
        self.assertGreaterEqual(int(m.group(1)), 38_000)
        self.assertLess(int(m.group(1)), 200_000)
        # Marked in the trace once, inside a batch built here.
        records = self.records()
        at = [str(r.get("name")) for r in records].index(marks[0])
        opened = [r["name"] for r in records[:at] if r.get("kind") == "start"]
        self.assertEqual(opened[-1], "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")

    def test_loader_probe_out_of_time_keeps_what_it_measured(self):
        # The copy's workers never deliver (items past the third hang on one thread): the
        # program kills the copy's process group at the deadline (shortened here), keeps the
        # one-thread times, marks no pool and goes on with every batch; nothing is left running.
        program = self.PROBE_PROGRAM.replace(
            "        time.sleep(0.04 if", "        if i >= 3 and torch.get_num_threads() == 1:\n"
            "            time.sleep(600)\n        time.sleep(0.04 if").replace(
            "import torch\n", "import torch\nimport _gpuscope_loader\n_gpuscope_loader._PROBE_TIMEOUT_S = 1.5\n", 1)
        started = time.monotonic()
        proc = self.run_program(program, env={"GPUSCOPE_PY_SAMPLE_HZ": "0"})
        self.assertLess(time.monotonic() - started, 30)
        self.assertIn("seen [0, 1, 2, 3, 4, 5, 6, 7] 4", proc.stdout.split("\n"))
        self.assertEqual(len(self.probe_marks()), 1)
        self.assertEqual(self.pool_marks(), [])
        left = subprocess.run(["pgrep", "-f", os.path.join(self.root, "prog.py")],
                              capture_output=True, text=True).stdout.split()
        self.assertEqual(left, [])

    def test_loader_probe_pool_skipped_without_room_or_when_it_fails(self):
        # Batches too large for the memory free (24 + 1 in flight), or a batch the workers fail
        # to build: no pool mark, the one-thread times stand, the program sees every batch.
        for env in ({"BIG_ITEMS": "1"}, {"FAIL_IN_COPY": "1"}):
            started = time.monotonic()
            proc = self.run_program(self.PROBE_PROGRAM, env={"GPUSCOPE_PY_SAMPLE_HZ": "0", **env})
            self.assertLess(time.monotonic() - started, 15, env)
            self.assertIn("seen [0, 1, 2, 3, 4, 5, 6, 7] 4", proc.stdout.split("\n"), env)
            self.assertEqual(len(self.probe_marks()), 1, env)
            self.assertEqual(self.pool_marks(), [], env)
            os.remove(self.log)

    def test_loader_probe_with_too_few_workers_times_the_advised_ones(self):
        # A loader with 2 workers where 8 would be advised (9 CPUs): the copy times 8 workers
        # together; nothing is built on one thread (the program's iterator and its workers'
        # queues are not touched in the copy). With 8 workers already, no probe.
        program = self.PROBE_PROGRAM.replace("DataLoader(Items())", "DataLoader(Items(), num_workers=WORKERS)").replace(
            "import torch\n", "import torch\nimport _gpuscope_loader\n_gpuscope_loader._cpus = lambda: 9\n"
            "WORKERS = int(os.environ['WORKERS'])\n", 1)
        proc = self.run_program(program, env={"GPUSCOPE_PY_SAMPLE_HZ": "0", "WORKERS": "2"})
        self.assertIn("seen [0, 1, 2, 3, 4, 5, 6, 7] 4", proc.stdout.split("\n"))
        self.assertEqual(self.probe_marks(), [])
        pool = self.pool_marks()
        self.assertEqual(len(pool), 1, pool)
        m = re.fullmatch(r"gpuscope\.host#loader_pool_us=(\d+),pool_workers=8,batches=24", pool[0])
        self.assertIsNotNone(m, pool)
        self.assertGreaterEqual(int(m.group(1)), 38_000)  # the stub's workers: 40 ms each in turn
        os.remove(self.log)
        self.run_program(program, env={"GPUSCOPE_PY_SAMPLE_HZ": "0", "WORKERS": "8"})
        self.assertEqual(self.pool_marks(), [])

    def test_loader_probe_off_switch_iterable_and_after_a_step(self):
        self.run_program(self.PROBE_PROGRAM, env={"GPUSCOPE_LOADER_PROBE": "0"})
        self.assertEqual(self.probe_marks(), [])
        os.remove(self.log)
        # A step before the first batch: a stall would fall inside what is analysed.
        self.run_program(self.PROBE_PROGRAM, env={"STEP_FIRST": "1"})
        self.assertEqual(self.probe_marks(), [])
        os.remove(self.log)
        # A first batch before CUDA is initialised is not probed; the next loader's is.
        self.run_program(self.PROBE_PROGRAM, env={"LOAD_BEFORE_CUDA": "1"})
        self.assertEqual(len(self.probe_marks()), 1)
        os.remove(self.log)
        # Batches of CUDA tensors: the copy measures nothing (no worker could build them).
        proc = self.run_program(self.PROBE_PROGRAM, env={"CUDA_ITEMS": "1"})
        self.assertEqual(self.probe_marks(), [])
        self.assertEqual(len([l for l in proc.stdout.split("\n") if l.startswith("item")]), 8)
        os.remove(self.log)
        # An iterable dataset (a generator here) is never probed.
        self.run_program(self.PROBE_PROGRAM.replace("DataLoader(Items())", "DataLoader(iter(range(3)))"))
        self.assertEqual(self.probe_marks(), [])

    def dist_marks(self):
        return [r["name"] for r in self.records()
                if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#dist_")]

    def test_distributed_backend_marked_once(self):
        self.run_program(PROGRAM, env={"STUB_DIST": "cpu:gloo,cuda:gloo"})
        self.assertEqual(self.dist_marks(), ["gpuscope.host#dist_world_size=2,dist_gloo=1"])
        os.remove(self.log)
        self.run_program(PROGRAM, env={"STUB_DIST": "cpu:gloo,cuda:nccl"})
        self.assertEqual(self.dist_marks(), ["gpuscope.host#dist_world_size=2,dist_gloo=0"])
        os.remove(self.log)
        self.run_program(PROGRAM)
        self.assertEqual(self.dist_marks(), [])

    def test_sampler_marks_user_frames(self):
        self.run_program(PROGRAM)
        marks = [r for r in self.records() if r.get("kind") == "mark" and r["name"].startswith("gpuscope.py#")]
        self.assertGreater(len(marks), 3)
        self.assertTrue(all(m["thread"] == "gpuscope-py-sampler" for m in marks))
        self.assertTrue(any("prog.py:" in m["name"] and "<module>" in m["name"] for m in marks), marks[:3])
        # Library frames (the stub torch lives outside site-packages, so only the data tag is
        # checked) never name the user's code.
        self.assertFalse(any("_gpuscope_" in m["name"] for m in marks))

    def test_nothing_before_cuda_is_initialised(self):
        self.run_program(PROGRAM.replace("torch.cuda.init()", ""))
        self.assertEqual([r for r in self.records() if "kind" in r], [])

    def test_no_torch_no_import(self):
        proc = self.run_program("import sys\nprint('torch' in sys.modules, 'torch' in str(sys.meta_path))\n")
        self.assertEqual(proc.stdout.strip(), "False False")
        self.assertEqual(self.records(), [])

    def test_off_switch(self):
        self.run_program(PROGRAM, env={"GPUSCOPE_PYTHON": "0"})
        self.assertEqual([r for r in self.records() if "kind" in r], [])

    def test_hook_errors_are_swallowed(self):
        proc = self.run_program(PROGRAM + "\nimport _gpuscope_state\nprint(_gpuscope_state.stats['hook_errors'] > 0)\n",
                                env={"STUB_NVTX_RAISE": "1"})
        self.assertEqual(proc.stdout.strip(), "True")

    def test_chains_to_existing_sitecustomize(self):
        other = os.path.join(self.root, "other")
        os.makedirs(other)
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("import os\nos.environ['THEIRS_RAN'] = '1'\n")
        proc = self.run_program("import os\nprint(os.environ.get('THEIRS_RAN'))\n", extra_path=[other])
        self.assertEqual(proc.stdout.strip(), "1")

    def test_forked_child_writes_nothing(self):
        program = PROGRAM + textwrap.dedent("""
            pid = os.fork()
            if pid == 0:
                model(1); opt.step(); time.sleep(0.05)
                os._exit(0)
            os.waitpid(pid, 0)
        """)
        self.run_program(program)
        pids = {r["pid"] for r in self.records() if "pid" in r}
        self.assertEqual(len(pids), 1)

    def test_program_sees_its_own_exceptions(self):
        # An exception raised inside a hooked forward reaches the program unchanged.
        program = PROGRAM + "\ntry:\n    model(None)\nexcept TypeError:\n    print('ok')\n"
        proc = self.run_program(program)
        self.assertEqual(proc.stdout.strip(), "ok")

    WINDOW_PROGRAM = """
import json, os
import torch
import torch.nn as nn
from torch.optim.optimizer import AdamW
""" + CONTROL + """
class Model(nn.Module):
    def forward(self, x):
        return x + 1

torch.cuda.init()
model = Model()
for x in range(STEPS_FWD):
    model(x)
opt = AdamW()
for x in range(STEPS_OPT):
    torch.autograd.backward([model(x)])
    opt.step()
import torch.nn.modules.module as m, torch.optim.optimizer as o
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({"hooks_left": len(m._pre) + len(m._post) + len(o._pre) + len(o._post),
                        "backward_wrapped": hasattr(torch.autograd.backward, "_gpuscope")}) + "\\n")
"""

    def window_program(self, opt, then):
        """WINDOW_PROGRAM with `opt` optimizer steps and no module call, then the code `then`."""
        return self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", str(opt)).replace(
            "import torch.nn.modules.module as m", then + "\nimport torch.nn.modules.module as m")

    @staticmethod
    def replay_events(records):
        """The program's logged replays and the window's controls (1 open, 0 close), in order."""
        return [("replay" if "replay" in r else r["control"]) for r in records if "replay" in r or "control" in r]

    def window_records(self, fwd, opt, steps, skip):
        program = self.WINDOW_PROGRAM.replace("STEPS_FWD", str(fwd)).replace("STEPS_OPT", str(opt))
        self.run_program(program, env={"GPUSCOPE_STEPS": str(steps), "GPUSCOPE_SKIP_STEPS": str(skip),
                                       "GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_LOOP": "0"})
        return self.records()

    def test_window_counts_optimizer_steps(self):
        # Training: the window opens after 2 optimizer steps and closes after 3 more; only the
        # steps inside it emit ranges.
        records = self.window_records(fwd=0, opt=8, steps=3, skip=2)
        controls = [(i, r["control"]) for i, r in enumerate(records) if "control" in r]
        self.assertEqual([c for _, c in controls], [1, 0])
        starts = [r["name"] for r in records if r.get("kind") == "start"]
        self.assertEqual(starts.count("Optimizer.step#AdamW.step"), 3)
        # Nothing is emitted after the window closed. The two optimizer hooks stay, inert (a
        # dict that dynamo may guard on never changes); no module hook, no wrapped backward.
        after = records[controls[1][0] + 1:]
        self.assertFalse([r for r in after if r.get("kind") == "start"])
        left = [r for r in records if "hooks_left" in r][0]
        self.assertEqual(left, {"hooks_left": 2, "backward_wrapped": False})

    def gan_window(self, iteration, steps, skip):
        """A discriminator `d` and a generator `g` (two AdamW) stepped by `iteration` 8 times,
        under a window of `steps` after `skip`: the window opened and closed once; the ranges
        started in it, (d's, g's)."""
        loop = "d, g = AdamW(), AdamW()\nfor x in range(8):\n" + "".join(f"    {line}\n" for line in iteration)
        self.run_program(self.window_program(0, loop), env={"GPUSCOPE_STEPS": str(steps), "GPUSCOPE_SKIP_STEPS": str(skip),
                                                            "GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_LOOP": "0"})
        records = self.records()
        self.assertEqual([r["control"] for r in records if "control" in r], [1, 0])
        starts = [r["name"] for r in records if r.get("kind") == "start"]
        return starts.count("Optimizer.step#AdamW.step"), starts.count("Optimizer.step#AdamW.step#2")

    def test_two_optimizers_an_iteration_are_one_step(self):
        # A GAN steps its discriminator, then its generator, every iteration: one step per
        # iteration. The window opens after 2 iterations and holds 3 (6 optimizer steps); the
        # second optimizer's ranges carry its ordinal, so the analysis can tell them apart.
        self.assertEqual(self.gan_window(["d.step()", "g.step()"], steps=3, skip=2), (3, 3))

    def test_a_cycle_of_optimizer_steps_is_one_step(self):
        # A critic stepped five times per generator step (a WGAN): one step per cycle once the
        # order has repeated three times (18 optimizer steps, 15 steps by the re-step rule), so
        # the 16th step ends at the fourth cycle's first critic step and the window holds the
        # next two cycles whole: 10 critic ranges and 2 generator ranges, not 2 critic ones.
        iteration = ["for _ in range(5):", "    d.step()", "g.step()"]
        self.assertEqual(self.gan_window(iteration, steps=2, skip=16), (10, 2))

    def test_optimizer_steps_dynamo_traces_are_left_alone(self):
        # While dynamo traces (is_compiling() True), the hooks return before anything it could
        # trace: no range, no step counted, so the window never opens on them.
        program = self.window_program(5, "")
        self.run_program(program, env={"GPUSCOPE_STEPS": "1", "GPUSCOPE_SKIP_STEPS": "1", "STUB_COMPILING": "1",
                                       "GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_LOOP": "0"})
        records = self.records()
        self.assertFalse([r for r in records if r.get("kind") == "start"])
        self.assertFalse([r for r in records if "control" in r])

    def test_whole_run_stops_after_max_steps(self):
        program = self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", "8")
        self.run_program(program, env={"GPUSCOPE_MAX_STEPS": "5", "GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_LOOP": "0"})
        records = self.records()
        controls = [(i, r["control"]) for i, r in enumerate(records) if "control" in r]
        self.assertEqual([c for _, c in controls], [0])
        marks = [(i, r["name"]) for i, r in enumerate(records) if r.get("kind") == "mark" and "capped_after" in r["name"]]
        self.assertEqual([m for _, m in marks], ["gpuscope.host#capped_after_steps=5"])
        self.assertLess(marks[0][0], controls[0][0])
        starts = [r["name"] for r in records if r.get("kind") == "start"]
        self.assertEqual(starts.count("Optimizer.step#AdamW.step"), 5)

    def allocator_marks(self):
        """(index in the log, fields) of each allocator mark, and the indices of the controls."""
        records = self.records()
        marks = [(i, dict(kv.split("=") for kv in r["name"].split("#", 1)[1].split(",")))
                 for i, r in enumerate(records) if r.get("kind") == "mark" and "#alloc_" in r["name"]]
        return marks, [(i, r["control"]) for i, r in enumerate(records) if "control" in r]

    def test_a_window_marks_the_allocator_retries_as_it_opens_and_closes(self):
        # Three retries more at each read: 3 as the window opens, 6 as it closes (3 while traced),
        # with expandable segments on; nothing read per step.
        self.run_program(self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", "10"),
                         env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "4", "GPUSCOPE_PY_SAMPLE_HZ": "0",
                              "GPUSCOPE_LOOP": "0", "STUB_RETRIES_PER_READ": "3",
                              "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64, expandable_segments:True"})
        marks, controls = self.allocator_marks()
        self.assertEqual([c for _, c in controls], [1, 0])
        self.assertEqual([m for _, m in marks], [
            {"alloc_retries_at_open": "3"},
            {"alloc_retries": "6", "alloc_uncached": "0", "alloc_expandable": "1"}])
        self.assertGreater(marks[0][0], controls[0][0])
        self.assertLess(marks[1][0], controls[1][0])

    def test_a_whole_run_marks_the_allocator_where_its_trace_ends(self):
        # Capped after 5 steps: one mark before the trace stops. Not capped: one at exit, with the
        # cache turned off by PYTORCH_NO_CUDA_MEMORY_CACHING ("0" leaves it on).
        for cap, no_caching, uncached in (("5", "0", "0"), ("0", "1", "1")):
            open(self.log, "w").close()
            self.run_program(self.window_program(8, ""),
                             env={"GPUSCOPE_MAX_STEPS": cap, "GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_LOOP": "0",
                                  "STUB_RETRIES_PER_READ": "2", "PYTORCH_NO_CUDA_MEMORY_CACHING": no_caching})
            marks, controls = self.allocator_marks()
            self.assertEqual([m for _, m in marks],
                             [{"alloc_retries": "2", "alloc_uncached": uncached, "alloc_expandable": "0"}], cap)
            if cap != "0":
                self.assertLess(marks[0][0], controls[0][0])

    def test_window_marks_the_untraced_step_time(self):
        # Each training step sleeps 20 ms; the window opens after 6: 5 periods, the first left out
        # as warm-up, so the median of 4, once, in the window (after the open).
        program = self.WINDOW_PROGRAM.replace("return x + 1", "time.sleep(0.02)\n        return x + 1")
        program = program.replace("import json, os", "import json, os, time")
        program = program.replace("STEPS_FWD", "0").replace("STEPS_OPT", "10")
        self.run_program(program, env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "6",
                                       "GPUSCOPE_PY_SAMPLE_HZ": "0"})
        records = self.records()
        marks = [(i, r["name"]) for i, r in enumerate(records)
                 if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#untraced_step_us=")]
        self.assertEqual(len(marks), 1, records)
        opened = [i for i, r in enumerate(records) if r.get("control") == 1][0]
        self.assertGreater(marks[0][0], opened)
        fields = dict(kv.split("=") for kv in marks[0][1].split("#", 1)[1].split(","))
        self.assertEqual(fields["steps"], "4")
        self.assertGreaterEqual(int(fields["untraced_step_us"]), 19_000)
        self.assertLess(int(fields["untraced_step_us"]), 200_000)

    def test_window_marks_the_untraced_step_on_the_gpu_timeline(self):
        # A host that runs ahead: its steps end every ~0 ms, the GPU's every 40 ms. The host mark
        # says what the host saw as the window opened; the device mark, as it closes, the GPU's.
        self.run_program(self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", "12"),
                         env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "8", "GPUSCOPE_PY_SAMPLE_HZ": "0",
                              "STUB_DEVICE_STEP_MS": "40"})
        records = self.records()
        marks = {r["name"].split("#", 1)[1].split("=", 1)[0]: (i, r["name"]) for i, r in enumerate(records)
                 if r.get("kind") == "mark" and r["name"].startswith("gpuscope.host#untraced")}
        self.assertEqual(set(marks), {"untraced_step_us", "untraced_device_step_us"}, records)
        host = dict(kv.split("=") for kv in marks["untraced_step_us"][1].split("#", 1)[1].split(","))
        device = dict(kv.split("=") for kv in marks["untraced_device_step_us"][1].split("#", 1)[1].split(","))
        self.assertLess(int(host["untraced_step_us"]), 20_000)
        self.assertAlmostEqual(int(device["untraced_device_step_us"]), 40_000, delta=5)
        self.assertEqual(device["steps"], "6")
        closed = [i for i, r in enumerate(records) if r.get("control") == 0][0]
        self.assertLess(marks["untraced_device_step_us"][0], closed)

    def test_a_trial_times_its_steps_then_ends_the_program_after_its_window(self):
        # `run --try`: 3 warm-up steps, steps 3..8 timed (5 periods; the GPU runs each in 40 ms),
        # the window traces steps 9 and 10, then the trial ends the program with exit code 0:
        # the program's own code after its loop never runs.
        result = os.path.join(self.root, "trial.json")
        self.run_program(self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", "12"),
                         env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "8", "GPUSCOPE_PY_SAMPLE_HZ": "0",
                              "GPUSCOPE_LOOP": "0", "STUB_DEVICE_STEP_MS": "40", "GPUSCOPE_TRY": "",
                              "GPUSCOPE_TRY_WARMUP": "3", "GPUSCOPE_TRY_RESULT": result})
        records = self.records()
        self.assertEqual([r["control"] for r in records if "control" in r], [1, 0])
        self.assertFalse([r for r in records if "hooks_left" in r])
        with open(result) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["host_step_ns"]), 5)
        self.assertEqual(len(doc["device_step_ns"]), 5)
        for period in doc["device_step_ns"]:
            self.assertAlmostEqual(period, 40_000_000, delta=5_000_000)
        self.assertEqual(doc["fixes"], {})

    def test_a_trial_whose_window_cannot_open_still_ends_after_its_steps(self):
        result = os.path.join(self.root, "trial.json")
        program = self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", "12")
        program = program.replace("    return True\n", "    return False\n", 1)  # No injection library.
        self.run_program(program, env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "8", "GPUSCOPE_PY_SAMPLE_HZ": "0",
                                       "GPUSCOPE_LOOP": "0", "GPUSCOPE_TRY": "", "GPUSCOPE_TRY_WARMUP": "3",
                                       "GPUSCOPE_TRY_RESULT": result})
        records = self.records()
        self.assertNotIn(0, [r["control"] for r in records if "control" in r])  # Never opened, never closed.
        self.assertFalse([r for r in records if "hooks_left" in r])
        with open(result) as f:
            self.assertEqual(len(json.load(f)["host_step_ns"]), 5)

    def test_without_a_trial_nothing_is_tried(self):
        self.run_program(self.WINDOW_PROGRAM.replace("STEPS_FWD", "0").replace("STEPS_OPT", "4"),
                         env={"GPUSCOPE_PY_SAMPLE_HZ": "0", "GPUSCOPE_TRY": "tf32"})
        self.assertTrue([r for r in self.records() if "hooks_left" in r])
        import_check = self.run_program("import sys, torch\nprint('_gpuscope_try' in sys.modules)\n",
                                        env={"GPUSCOPE_TRY": "tf32"})
        self.assertEqual(import_check.stdout.strip(), "False")

    def test_window_counts_cuda_graph_replays_that_are_whole_steps(self):
        # A training step captured in one CUDA graph: 4 optimizer steps (warm-up and capture),
        # then replays that call neither the optimizer nor a module. From the second replay on,
        # each is a step: the window opens within the fourth replay (4 + 3 = 7 steps; the
        # program logs each replay after it returns) and closes within the sixth.
        program = self.window_program(4, """graph = torch.cuda.CUDAGraph()
for _ in range(10):
    graph.replay()
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(json.dumps({"replay": 1}) + "\\n")""")
        self.run_program(program, env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "7", "GPUSCOPE_PY_SAMPLE_HZ": "0"})
        records = self.records()
        events = self.replay_events(records)
        self.assertEqual(events, ["replay"] * 3 + [1] + ["replay"] * 2 + [0] + ["replay"] * 5, events)
        marks = " ".join(r.get("name", "") for r in records if r.get("kind") == "mark")
        self.assertIn("untraced_step_us=", marks)
        self.assertIn("gpuscope.host#optimizer_steps=4", marks)
        # Replays interleaved with optimizer steps (a graphed forward and backward) are not steps
        # by themselves.
        program = self.window_program(0, """graph = torch.cuda.CUDAGraph()
for x in range(10):
    opt.step()
    graph.replay()""")
        os.remove(self.log)
        self.run_program(program, env={"GPUSCOPE_STEPS": "3", "GPUSCOPE_SKIP_STEPS": "4", "GPUSCOPE_PY_SAMPLE_HZ": "0"})
        starts = [r["name"] for r in self.records() if r.get("kind") == "start"]
        self.assertEqual(starts.count("Optimizer.step#AdamW.step"), 3)
        # torch.compile's mode="reduce-overhead" in training: a forward and a backward graph,
        # then an eager optimizer step. Each iteration is one step, so a window of 3 steps holds
        # 3 optimizer steps (counting the backward's replay as well halves them).
        program = self.window_program(0, """forward, backward = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
for x in range(10):
    forward.replay()
    backward.replay()
    opt.step()""")
        os.remove(self.log)
        self.run_program(program, env={"GPUSCOPE_STEPS": "3", "GPUSCOPE_SKIP_STEPS": "4", "GPUSCOPE_PY_SAMPLE_HZ": "0"})
        starts = [r["name"] for r in self.records() if r.get("kind") == "start"]
        self.assertEqual(starts.count("Optimizer.step#AdamW.step"), 3)

    def test_a_step_of_two_graphs_counts_once(self):
        # A whole step in two graphs (a graph break), replayed in turn with nothing else: a step
        # ends at each replay of the first graph from the second cycle on. The window opens
        # within the 7th replay (cycle 4: 3 steps) and closes within the 11th (cycle 6).
        program = self.window_program(0, """graphs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()]
for x in range(20):
    graphs[x % 2].replay()
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(json.dumps({"replay": 1}) + "\\n")""")
        self.run_program(program, env={"GPUSCOPE_STEPS": "2", "GPUSCOPE_SKIP_STEPS": "3", "GPUSCOPE_PY_SAMPLE_HZ": "0"})
        records = self.records()
        events = self.replay_events(records)
        self.assertEqual(events, ["replay"] * 6 + [1] + ["replay"] * 4 + [0] + ["replay"] * 10, events)

    def test_the_fast_loop_search_only_where_the_loop_may_be_the_step(self):
        # 400 Hz in the first 2 s after CUDA started, while searching; not once an optimizer step
        # ended (they are the steps then), and not in a --try trial, whose as-is run would be
        # timed inside those seconds and its compiled tried run after them.
        proc = self.run_program("""
import _gpuscope_sampler as s
cases = [(True, 0.5, {"opt": 0}), (True, 2.5, {"opt": 0}), (False, 0.5, {"opt": 0}),
         (True, 0.5, {"opt": 1}), (True, 0.5, {"opt": 0, "trial": object()})]
print(" ".join(str(s.search_fast(*c)) for c in cases))
""")
        self.assertEqual(proc.stdout.split(), ["True", "False", "False", "False", "False"])

    def test_no_timing_event_while_a_graph_is_captured(self):
        # Steps 3-5 end while the stream is being captured (a step captured whole): no event is
        # recorded then, so the program's graph gains no node. Steps 1-2 and 6-8 record one each.
        program = self.window_program(0, """for x in range(10):
    torch.cuda._capturing[0] = 3 <= x + 1 <= 5
    opt.step()""")
        self.run_program(program, env={"GPUSCOPE_STEPS": "1", "GPUSCOPE_SKIP_STEPS": "8", "GPUSCOPE_PY_SAMPLE_HZ": "0"})
        self.assertEqual(len([r for r in self.records() if "event_record" in r]), 5)

    def test_window_without_enough_untraced_steps_marks_nothing(self):
        records = self.window_records(fwd=0, opt=10, steps=4, skip=2)
        self.assertEqual([r for r in records if r.get("kind") == "mark" and "untraced_step_us" in r["name"]], [])

    def test_window_never_opens_before_enough_steps(self):
        records = self.window_records(fwd=0, opt=2, steps=4, skip=5)
        self.assertEqual([r for r in records if "control" in r], [])
        self.assertEqual([r for r in records if r.get("kind") == "start"], [])


# The bootstrap's sampler, as a test program runs it against `finder`: samples the main thread
# every millisecond until `stop` holds something, calling `after_sample()` after each sample.
SAMPLER = """
stop = []
def after_sample():
    pass
def sampler():
    main = threading.main_thread().ident
    while not stop:
        frame = sys._current_frames().get(main)
        if frame is not None:
            finder.observe(frame)
        del frame
        after_sample()
        time.sleep(0.001)
"""


class LoopChoiceTest(unittest.TestCase):
    """Which loop the search chooses, on any Python: real frames of a program fed to
    LoopFinder.observe, its back-edges reported by hand, sys.monitoring replaced by a stand-in
    that records what would be instrumented (LoopTest below runs the real events on 3.12+)."""

    SCRIPT = """
import os, sys, types
sys.path[:0] = [BOOT, ROOT]
class Monitoring:
    events = types.SimpleNamespace(JUMP=1)
    DISABLE = object()
    def get_tool(self, tool): return None
    def use_tool_id(self, tool, name): pass
    def register_callback(self, tool, event, fn): pass
    def set_local_events(self, tool, code, events): instrumented.append(code.co_name)
instrumented = []
sys.monitoring = Monitoring()
import _gpuscope_loop as L
from torch.nn.modules.module import Module
finder = L.LoopFinder(lambda label: None, torch_dir=os.path.join(ROOT, "torch") + os.sep)

def sample_and_jump():
    # One stack sample of this thread, then the back-edge of the loop of the caller's frame.
    caller = sys._getframe(1)
    finder.observe(caller)
    for head, end in L.loops_of(caller.f_code):
        finder._on_jump(caller.f_code, end, head)

class Model(Module):
    def forward(self, h):
        for layer in range(40):   # over layers, inside the module's call
            sample_and_jump()
        return h

def train(model, steps):
    for step in range(steps):   # the step loop, in a function called once
        sample_and_jump()

def main():
    model = Model()
    model(0)   # one long warm-up call before the step loop
    print("after warm-up:", finder.chosen and finder.chosen[2], instrumented)
    train(model, 40)
    print("after the loop:", finder.chosen and finder.chosen[2], instrumented)

main()
"""

    def test_a_loop_inside_a_modules_call_is_never_chosen(self):
        with tempfile.TemporaryDirectory(prefix="gpuscope-loop-choice-") as root:
            os.makedirs(os.path.join(root, "torch", "nn", "modules"))
            with open(os.path.join(root, "torch", "nn", "modules", "module.py"), "w") as f:
                f.write("class Module:\n    def __call__(self, *args):\n        return self.forward(*args)\n")
            script = os.path.join(root, "prog.py")
            with open(script, "w") as f:
                f.write(f"BOOT, ROOT = {BOOT!r}, {root!r}\n" + self.SCRIPT)
            proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = textwrap.dedent(self.SCRIPT).splitlines()
        step_line = lines.index("    for step in range(steps):   # the step loop, in a function called once") + 2
        # The warm-up call's loop over layers turned 40 times: neither chosen nor instrumented.
        self.assertIn("after warm-up: None []", proc.stdout)
        # The loop of the function called once is the step loop.
        self.assertIn(f"after the loop: prog.py:{step_line} ['train']", proc.stdout)


@unittest.skipIf(PYTHON312 is None, "no Python 3.12+ here (sys.monitoring): the step loop's search is not tested")
class LoopTest(Harness):
    """The step loop, found with no hook: programs of plain functions, layers called one by one,
    generators; under Python 3.12+."""

    # A decode-like loop of plain functions (no nn.Module, no optimizer): each iteration calls
    # `layer` LAYERS times in an inner loop, then reads a statistic (a host sync's stand-in).
    PLAIN = """
import json, os, time
import torch
""" + CONTROL + """
def layer(h):
    time.sleep(0.001)
    return h + 1

def read_stats(h):
    time.sleep(0.002)
    return [h]

def main():
    torch.cuda.init()
    h = 0
    for step in range(int(os.environ.get("ITERS", "60"))):   # the step loop
        for i in range(int(os.environ.get("LAYERS", "4"))):
            h = layer(h)
        read_stats(h)
    print("done")

main()
"""

    def run_loop(self, program=None, env=None):
        e = {"GPUSCOPE_PY_SAMPLE_HZ": "200"}
        e.update(env or {})
        return self.run_program(program or self.PLAIN, env=e, python=PYTHON312)

    def iter_starts(self):
        return [r["name"] for r in self.records() if r.get("kind") == "start" and r["name"].startswith("gpuscope.iter#")]

    def test_iterations_of_the_outer_loop_are_steps(self):
        self.run_loop()
        starts = self.iter_starts()
        # The outer loop (line of `for step`), not the loop over layers inside it; found within
        # a few iterations, then every one of them.
        line = textwrap.dedent(self.PLAIN).splitlines().index("    for step in range(int(os.environ.get(\"ITERS\", \"60\"))):   # the step loop") + 1
        self.assertEqual(set(starts), {f"gpuscope.iter#prog.py:{line}"}, starts[:3])
        self.assertGreaterEqual(len(starts), 30)
        self.assertLessEqual(len(starts), 60)
        ends = [r for r in self.records() if r.get("kind") == "end"]
        self.assertGreaterEqual(len(ends), len(starts) - 1)

    def test_window_counts_loop_iterations(self):
        self.run_loop(env={"GPUSCOPE_STEPS": "5", "GPUSCOPE_SKIP_STEPS": "3"})
        records = self.records()
        self.assertEqual([r["control"] for r in records if "control" in r], [1, 0])
        self.assertEqual(len(self.iter_starts()), 5)
        marks = " ".join(r.get("name", "") for r in records if r.get("kind") == "mark")
        self.assertIn("gpuscope.host#optimizer_steps=0", marks)
        self.assertIn("untraced_step_us=", marks)

    def test_the_loop_of_a_short_program_is_found_before_it_ends(self):
        # 45 iterations of 3 ms: 0.14 s of steps. At the marks' rate (100 Hz) the search would
        # take most of it; it samples faster until the loop is found, and the window opens.
        self.run_loop(env={"GPUSCOPE_PY_SAMPLE_HZ": "100", "ITERS": "45", "LAYERS": "1",
                           "GPUSCOPE_STEPS": "5", "GPUSCOPE_SKIP_STEPS": "3"})
        self.assertEqual([r["control"] for r in self.records() if "control" in r], [1, 0])
        self.assertEqual(len(self.iter_starts()), 5)

    def test_a_stopped_finder_leaves_the_events_to_the_programs_thread(self):
        # Stopping from the sampler thread (the window closed) must not remove events or the
        # callback while the program's thread may be inside that callback: each jump still
        # enabled returns DISABLE where it next fires, on the program's thread.
        program = textwrap.dedent("""
            import sys, threading, time
            import _gpuscope_loop as loop
            mon = sys.monitoring
            calls = []
            finder = loop.LoopFinder(lambda label: calls.append(threading.get_ident()), patience_s=0.0)
            changed = []
            for name in ("set_local_events", "register_callback", "free_tool_id"):
                original = getattr(mon, name)
                def spy(*args, _name=name, _original=original):
                    changed.append((_name, threading.get_ident() == threading.main_thread().ident, args[-1:]))
                    return _original(*args)
                setattr(mon, name, spy)
            """) + SAMPLER + textwrap.dedent("""
            def after_sample():
                if calls and not finder.stopped:
                    finder.stop()
            def train():
                for step in range(400):
                    time.sleep(0.002)
            threading.Thread(target=sampler, daemon=True).start()
            train()
            stop.append(1)
            removed = [c for c in changed if c[0] != "set_local_events" or c[2] == (0,)]
            print(finder.chosen is not None, finder.stopped, len(removed), mon.get_tool(finder.tool))
            """)
        proc = self.run_program(program, python=PYTHON312)
        self.assertEqual(proc.stdout.split(), ["True", "True", "0", "gpuscope"], proc.stdout)

    def test_the_search_reads_each_code_objects_loops_once(self):
        # A sample runs while the program waits for the GIL: the step loop sits in a function
        # called from a long one with no loop around the call (a dispatcher), and reading that
        # function's bytecode at every sample cost the program about a millisecond each.
        program = textwrap.dedent("""
            import sys, threading, time
            import _gpuscope_loop as loop
            reads = []
            original = loop.loops_of
            loop.loops_of = lambda code: reads.append(code.co_name) or original(code)
            finder = loop.LoopFinder(lambda label: None, patience_s=0.0)
            """) + SAMPLER + textwrap.dedent("""
            def train():
                for step in range(150):
                    time.sleep(0.002)
            def dispatch(row):
            """) + "".join(f"    if row == {i}:\n        return {i}\n" for i in range(40)) + textwrap.dedent("""
                return train()
            threading.Thread(target=sampler, daemon=True).start()
            dispatch("train")
            stop.append(1)
            print(len(reads), len(set(reads)), finder.chosen is not None)
            """)
        proc = self.run_program(program, python=PYTHON312)
        reads, codes, chosen = proc.stdout.split()
        self.assertEqual(chosen, "True")
        self.assertEqual(int(reads), int(codes), proc.stdout)

    def test_a_loop_is_found_soon_after_setup_in_the_same_function(self):
        # The step loop's function sets up first (2.3 s at other lines, sampled), then turns 150
        # iterations of 3 ms (0.45 s). Past the fast search's first 2 s, at 100 Hz, the
        # positions sampled in the setup must not keep the loop from being found for most of
        # its iterations (they did while a loop had to hold 97% of the last 64).
        program = self.PLAIN.replace("""    h = 0
    for step in range(int(os.environ.get("ITERS", "60"))):   # the step loop""", """    h = 0
    time.sleep(2.0)
    time.sleep(0.3)  # setup, in the loop's own frame
    for step in range(int(os.environ.get("ITERS", "60"))):   # the step loop""")
        self.run_loop(program, env={"GPUSCOPE_PY_SAMPLE_HZ": "100", "LAYERS": "1", "ITERS": "150"})
        self.assertGreaterEqual(len(self.iter_starts()), 40)

    def test_a_models_loop_over_layers_called_before_the_step_loop_is_not_it(self):
        # A model called once before the step loop, its first call long (a warm-up: kernels load,
        # cuBLAS starts), its forward a loop over layers: that loop turns many times while the
        # step loop's frame is still outside its loop. It runs inside the module's call, so it is
        # never the step loop; the loop that calls the model each step is.
        program = """
import json, os, time
import torch
import torch.nn as nn
""" + CONTROL + """
class Model(nn.Module):
    def forward(self, h):
        for i in range(8):   # over layers
            time.sleep(self.layer_s)
            h = h + 1
        return h

def main():
    torch.cuda.init()
    model = Model()
    model.layer_s = 0.05
    model(0)              # warm-up: 0.4 s in the loop over layers
    model.layer_s = 0.0005
    for step in range(150):   # the step loop
        model(step)

main()
"""
        self.run_loop(program, env={"GPUSCOPE_PY_SAMPLE_HZ": "200"})
        starts = self.iter_starts()
        line = textwrap.dedent(program).splitlines().index("    for step in range(150):   # the step loop") + 1
        self.assertTrue(starts)
        self.assertEqual(set(starts), {f"gpuscope.iter#prog.py:{line}"}, starts[:3])

    def test_a_compilers_loops_are_not_the_step_loop(self):
        # Before its first step the program "compiles" for 0.4 s in a loop of torch/_inductor
        # code that turns every millisecond: the step loop is still the program's own.
        inductor = os.path.join(self.root, "stub", "torch", "_inductor")
        os.makedirs(inductor)
        with open(os.path.join(inductor, "__init__.py"), "w") as f:
            f.write("import time\ndef compile_graph():\n    for i in range(400):\n        time.sleep(0.001)\n")
        program = self.PLAIN.replace("    h = 0\n", "    h = 0\n    import torch._inductor as ind\n    ind.compile_graph()\n", 1)
        self.run_loop(program)
        starts = self.iter_starts()
        self.assertGreaterEqual(len(starts), 30)
        self.assertEqual({s.split(":")[0] for s in starts}, {"gpuscope.iter#prog.py"}, starts[:3])

    def test_generator_loop(self):
        program = self.PLAIN.replace("def main():", """def tokens(n, h):
    for step in range(n):
        for i in range(4):
            h = layer(h)
        yield read_stats(h)

def main():""").replace("""    for step in range(int(os.environ.get("ITERS", "60"))):   # the step loop
        for i in range(int(os.environ.get("LAYERS", "4"))):
            h = layer(h)
        read_stats(h)""", """    for t in tokens(60, h):
        pass""")
        self.run_loop(program)
        starts = self.iter_starts()
        self.assertGreaterEqual(len(starts), 30)
        self.assertEqual(len(set(starts)), 1, starts[:3])

    def fine_loop(self, seconds):
        """PLAIN with its step loop replaced by one that turns in about a microsecond."""
        return self.PLAIN.replace("""    for step in range(int(os.environ.get("ITERS", "60"))):   # the step loop
        for i in range(int(os.environ.get("LAYERS", "4"))):
            h = layer(h)
        read_stats(h)""", f"""    end = time.perf_counter() + {seconds}
    while time.perf_counter() < end:
        h = h + 1""")

    def test_loop_too_fine_to_mark_opens_a_time_window(self):
        program = self.fine_loop(2.5)
        self.run_loop(program, env={"GPUSCOPE_STEPS": "50", "GPUSCOPE_SKIP_STEPS": "5"})
        records = self.records()
        self.assertEqual(self.iter_starts(), [])
        marks = [r["name"] for r in records if r.get("kind") == "mark" and "time_window_us" in r["name"]]
        self.assertEqual(len(marks), 1, marks)
        self.assertRegex(marks[0], r"^gpuscope\.host#time_window_us=500000,loop_period_ns=\d+$")
        self.assertEqual([r["control"] for r in records if "control" in r], [1, 0])

    def test_capped_whole_run_of_a_fine_loop_ends_its_trace(self):
        program = self.fine_loop(1.5)
        self.run_loop(program, env={"GPUSCOPE_MAX_STEPS": "300", "GPUSCOPE_FINE_LOOP_S": "0.3"})
        records = self.records()
        marks = [r["name"] for r in records if r.get("kind") == "mark" and "capped_after_us" in r["name"]]
        self.assertEqual(len(marks), 1, marks)
        self.assertRegex(marks[0], r"^gpuscope\.host#capped_after_us=\d+,loop_period_ns=\d+$")
        self.assertEqual([r["control"] for r in records if "control" in r], [0])

    def test_no_step_source_opens_a_time_window(self):
        program = self.PLAIN.replace("""    for step in range(int(os.environ.get("ITERS", "60"))):   # the step loop
        for i in range(int(os.environ.get("LAYERS", "4"))):
            h = layer(h)
        read_stats(h)""", """    time.sleep(1.0)""")
        self.run_loop(program, env={"GPUSCOPE_STEPS": "50", "GPUSCOPE_STEP_WAIT_S": "0.2",
                                    "GPUSCOPE_FALLBACK_S": "0.3"})
        records = self.records()
        marks = [r["name"] for r in records if r.get("kind") == "mark" and "time_window_us" in r["name"]]
        self.assertEqual(marks, ["gpuscope.host#time_window_us=300000,no_steps=1"])
        self.assertEqual([r["control"] for r in records if "control" in r], [1, 0])

    def test_program_output_and_result_unchanged(self):
        proc = self.run_loop()
        self.assertEqual(proc.stdout, "done\n")


if __name__ == "__main__":
    unittest.main()
