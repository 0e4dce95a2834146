"""PyTorch context for `gpuscope run`, with no change to the traced program.

Once the program imports torch, this installs PyTorch's public global optimizer-step hooks and
two wrappers at boundaries that compiled code never traces (DataLoader iterators, CUDA-graph
replays), and emits NVTX ranges that gpuscope's injection library records with the CUDA
activity:

  Optimizer.step#<Class>.step             each optimizer step (global optimizer step hooks);
                                          also what marks step boundaries
  enumerate(DataLoader)#<Iter>.__next__   each batch fetched from a DataLoader
  gpuscope.iter#<file>:<line>             each iteration of the program's step loop, found by
                                          _gpuscope_loop (Python 3.12+), whatever the program's
                                          shape (no nn.Module, no optimizer needed)

The first two carry the names PyTorch's own profiler gives the same work, so one set of rules
in the analysis serves profiler traces and captures. torch's NVTX binding has no domains, so
gpuscope's ranges are told from the program's own by these names.

Nothing here is visible to dynamo, autograd or CUDA-graph capture: no module hooks (global
module hooks put every module call on torch's slow path and make dynamo guard on them and
recompile when they change), no wrapped forward or backward. The optimizer hooks, once
installed, stay until the process ends (a dict that dynamo may guard on never changes); after a
bounded window they return at once.

A sampler thread records the Python stack of the thread that issues GPU work (a few frames of
the program's own code, innermost first) as NVTX marks named `gpuscope.py#<tag>;<frames>`,
where <tag> is `data` when a data-loading frame (torch.utils.data) is on the stack. The
analysis names each idle interval's host code with them. The first batch built in the main
process (num_workers=0) adds one mark `gpuscope.host#cpus=N,torch_threads=T` (a loader with
workers one mark `gpuscope.host#cpus=N,loader_workers=W`), and each batch
built there one mark `gpuscope.host#loader_cpu_us=C,loader_wall_us=W` (the process's CPU time
and the wall time spent building it). Rate: GPUSCOPE_PY_SAMPLE_HZ (default 100, 0 turns it off,
at most 500). What a DataLoader worker would need per batch is measured once, before the first
step, in a forked copy that builds the next batches on one thread, as a worker does (map-style
datasets; GPUSCOPE_LOADER_PROBE=0 turns it off): `gpuscope.host#loader_one_thread_us=U,batches=N`;
the same copy then runs the fix, a DataLoader with the advised workers over the same data, and
times what they deliver together: `gpuscope.host#loader_pool_us=I,pool_workers=W,batches=N`.
A process with an initialised process group marks its backend for CUDA tensors once, at the
first optimizer step: `gpuscope.host#dist_world_size=W,dist_gloo=G`.

Bounded tracing (`gpuscope run --steps N --skip-steps K`, GPUSCOPE_STEPS / GPUSCOPE_SKIP_STEPS):
steps are counted here, from the first source that has any: optimizer steps; else iterations
of the step loop (inference, serving, programs of plain tensor functions); else CUDA-graph
replays (a whole step captured in one graph). After K steps this opens the injection
library's trace window, after N more it closes it (the library then detaches CUPTI), and from
then on nothing more is emitted. While waiting it times the steps (the periods between step
ends, the first one left out as warm-up); when the window opens it adds one mark
`gpuscope.host#untraced_step_us=S,steps=N`, the median of the last (up to 32) untraced steps, so
the analysis knows the program's own step time beside the traced one, and one more,
`gpuscope.host#optimizer_steps=N`, the optimizer steps before it (training or inference, where
the window's steps replay a CUDA graph and call no optimizer). A host that runs ahead of
the GPU ends its steps faster than the GPU does, so each untraced step end also records a CUDA
event on the current stream (no sync); as the window closes, those events are long complete and
one more mark gives the same median on the GPU's timeline, `untraced_device_step_us=D,steps=N`.

A whole run (no --steps) stops tracing after GPUSCOPE_MAX_STEPS steps (`gpuscope run` sets 300;
0: never), marking `gpuscope.host#capped_after_steps=N` first, so a job of hours pays for its
first steps only; where the step loop turns too fast to mark, GPUSCOPE_FINE_LOOP_S (default 5)
after it was found (`gpuscope.host#capped_after_us=T,loop_period_ns=P`).

When no step source has appeared GPUSCOPE_STEP_WAIT_S seconds (default 20) after CUDA started,
the window opens anyway for a time (the step loop's period x N when one was found too fine to
mark, else GPUSCOPE_FALLBACK_S, default 10 s) and says so:
`gpuscope.host#time_window_us=D,no_steps=1` (or `time_window_us=D,loop_period_ns=P`).

Contract: nothing here may change what the program does. Every hook swallows its own
exceptions (counted in `stats`); nothing is emitted before CUDA is initialised in this process
or in a forked child (DataLoader workers write nothing); a process that never imports torch
never imports it because of this module.
"""
import functools
import os
import sys
import threading
import time

stats = {"hook_errors": 0, "ranges": 0, "samples": 0}
_state = {"installed": False, "pid": None, "sampler": None, "target": None, "torch": None, "undo": []}
# Trace window: "always" (the whole run), or "waiting" -> "open" -> "done" under --steps.
_window = {"state": "always", "skip": 0, "steps": 0, "opt": 0, "loop": 0, "graph": 0, "at_open": 0, "kind": "opt",
           "done": 0, "close_at": None, "at_replay": None, "max_steps": 0}
# perf_counter() at the latest step ends of each kind while the window waits (at most 34).
_step_ends = {"opt": [], "loop": [], "graph": []}
# CUDA events recorded at the same step ends (the GPU's timeline), as many.
_step_events = {"opt": [], "loop": [], "graph": []}
_STEP_ENDS_KEPT = 34
_local = threading.local()
_MARK_PREFIX = "gpuscope.py#"
_HOST_MARK_PREFIX = "gpuscope.host#"


class _TorchWatcher:
    """A sys.meta_path finder that lets the real finders load torch, then installs the hooks."""

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._busy or _state["installed"]:
            return None
        self._busy = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        inner = spec.loader

        class _Loader:
            def create_module(self, s):
                return inner.create_module(s)

            def exec_module(self, module):
                module.__loader__ = inner
                if getattr(module, "__spec__", None) is not None:
                    module.__spec__.loader = inner
                inner.exec_module(module)
                try:
                    install(module)
                except Exception:
                    stats["hook_errors"] += 1

        spec.loader = _Loader()
        return spec


def arm():
    """Called from sitecustomize: install now if torch is already imported, else on import."""
    if "torch" in sys.modules:
        install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchWatcher())


def _env_int(name):
    try:
        return max(0, int(os.environ.get(name, "0")))
    except ValueError:
        return 0


def _configure_window():
    steps = _env_int("GPUSCOPE_STEPS")
    if steps > 0:
        _window.update(state="waiting", steps=steps, skip=_env_int("GPUSCOPE_SKIP_STEPS"))
    else:
        _window["max_steps"] = _env_int("GPUSCOPE_MAX_STEPS")


def _trace_control(open_window):
    """Calls gpuscope_trace_control in the injection library the CUDA driver loaded."""
    import ctypes

    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        return False
    # The library the driver already loaded: RTLD_NOLOAD never loads a second copy.
    lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1))
    return bool(lib.gpuscope_trace_control(1 if open_window else 0))


def _steps_done(w):
    """Steps so far: optimizer steps (else iterations of the step loop), plus CUDA-graph replays
    that are steps by themselves."""
    return (w["opt"] if w["opt"] else w["loop"]) + w["graph"]


def _step_ended(kind):
    """Counts a step boundary ("opt", "loop" or "graph") and opens or closes the trace window."""
    w = _window
    w[kind] += 1
    if os.getpid() != _state["pid"]:
        return
    if w["state"] == "always":
        if w["max_steps"] and _steps_done(w) >= w["max_steps"]:
            # A whole run's trace ends after GPUSCOPE_MAX_STEPS steps: the rest of a long job
            # runs untraced. The mark says so before the window closes.
            _guarded(_state["torch"].cuda.nvtx.mark)(
                f"{_HOST_MARK_PREFIX}capped_after_steps={_steps_done(w)}")
            w["state"] = "done"
            _trace_control(False)
            _detach()
        return
    if w["state"] == "waiting":
        ends = _step_ends[kind]
        ends.append(time.perf_counter())
        if len(ends) > _STEP_ENDS_KEPT:
            del ends[0]
        if _cuda_ready():
            _guarded(_record_step_event)(kind)
        done = _steps_done(w)
        if done >= w["skip"] and _cuda_ready() and _trace_control(True):
            # The window's step kind, and how many of those steps ended before it (were all kept,
            # the first of them is warm-up).
            kind = kind if kind == "graph" else "opt" if w["opt"] else "loop"
            w.update(state="open", at_open=done, kind=kind, done=w[kind])
            _guarded(_mark_untraced_step)(_step_ends[kind], w[kind])
            # Training or inference, for a window whose steps run in a CUDA graph (no optimizer
            # call inside it to tell).
            _guarded(_state["torch"].cuda.nvtx.mark)(f"{_HOST_MARK_PREFIX}optimizer_steps={w['opt']}")
    elif w["state"] == "open" and w["kind"] != "time" and _steps_done(w) - w["at_open"] >= w["steps"]:
        _close_window()


def _close_window():
    w = _window
    w["state"] = "done"
    if w["kind"] in _step_events:
        _guarded(_mark_untraced_device_step)(_step_events[w["kind"]], w["done"])
    _trace_control(False)
    _detach()


def _median_period(periods, done, kept):
    """The median of the periods between step ends, the first one left out when it is among the
    first steps of the run (warm-up: compilation, allocator growth, cuBLAS heuristics); with it
    the count, or None without periods."""
    if done <= kept:
        periods = periods[1:]
    if not periods:
        return None
    periods = sorted(periods)
    n = len(periods)
    return (periods[n // 2] if n % 2 else (periods[n // 2 - 1] + periods[n // 2]) / 2), n


def _mark_untraced_step(ends, done):
    """Once, as the window opens: the median period of the untraced steps before it."""
    got = _median_period([b - a for a, b in zip(ends, ends[1:])], done, len(ends))
    if got:
        _state["torch"].cuda.nvtx.mark(f"{_HOST_MARK_PREFIX}untraced_step_us={int(got[0] * 1e6)},steps={got[1]}")


def _record_step_event(kind):
    """A timing event on the current stream at an untraced step end (recorded, never waited on);
    none while the stream is being captured into a CUDA graph (a step captured whole ends inside
    the capture, and the program's graph must not gain a node)."""
    cuda = _state["torch"].cuda
    capturing = getattr(cuda, "is_current_stream_capturing", None)
    if capturing is None or capturing():
        return
    ev = cuda.Event(enable_timing=True)
    ev.record()
    events = _step_events[kind]
    events.append(ev)
    if len(events) > _STEP_ENDS_KEPT:
        del events[0]


def _mark_untraced_device_step(events, done):
    """Once, as the window closes: the median period of the untraced steps on the GPU's
    timeline, from the events that have completed (query() never waits)."""
    complete = []
    for ev in events:
        if not ev.query():
            break
        complete.append(ev)
    got = _median_period([a.elapsed_time(b) / 1e3 for a, b in zip(complete, complete[1:])], done, len(events))
    if got:
        _state["torch"].cuda.nvtx.mark(
            f"{_HOST_MARK_PREFIX}untraced_device_step_us={int(got[0] * 1e6)},steps={got[1]}")


def _undo_on_detach(*handles):
    for h in handles:
        if h is not None and hasattr(h, "remove"):
            _state["undo"].append(h.remove)


def _detach():
    """Removes every wrapper and the loop's events: after a bounded window the program runs as if
    untraced. The optimizer hooks stay (torch iterates them live inside the step that closes the
    window, and dynamo may guard on them); they return at once from now on."""
    undo, _state["undo"] = _state["undo"], []
    for fn in undo:
        try:
            fn()
        except Exception:
            stats["hook_errors"] += 1


def _cuda_ready():
    try:
        return bool(_state["torch"].cuda.is_initialized())
    except Exception:
        return False


def _active():
    """True in the process that installed the hooks, once it has initialised CUDA, while the
    trace window is open (or there is none)."""
    if os.getpid() != _state["pid"] or _window["state"] not in ("always", "open"):
        return False
    torch = _state["torch"]
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def _start(name):
    if not _active():
        return None
    rid = _state["torch"].cuda.nvtx.range_start(name)
    stats["ranges"] += 1
    return rid


def _end(rid):
    if rid is not None:
        _state["torch"].cuda.nvtx.range_end(rid)


def _guarded(fn):
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:
            stats["hook_errors"] += 1
            return None

    return wrapper


def _open_ranges():
    if not hasattr(_local, "ranges"):
        _local.ranges = {}
    return _local.ranges


def install(torch):
    """Installs the hooks on an imported torch module (idempotent)."""
    if _state["installed"]:
        return
    _state.update(installed=True, pid=os.getpid(), torch=torch, target=threading.main_thread().ident)
    _configure_window()
    for step in (_install_optimizer_hooks, _install_dataloader_hook, _install_graph_hook, _start_sampler):
        try:
            step(torch)
        except Exception:
            stats["hook_errors"] += 1
    import atexit

    atexit.register(_at_exit)


def _replace_attr(owner, name, original, wrapper):
    """Puts `wrapper` (of `original`) in place of owner.<name>, marked as gpuscope's; detaching
    puts the original back unless something else replaced the wrapper since."""
    wrapper._gpuscope = True
    wrapper.__wrapped__ = original
    setattr(owner, name, wrapper)

    def restore():
        if getattr(owner, name) is wrapper:
            setattr(owner, name, original)

    _state["undo"].append(restore)


def _install_optimizer_hooks(torch):
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    @_guarded
    def pre(optimizer, args, kwargs):
        if _window["state"] == "done":
            return
        _state["target"] = threading.get_ident()
        _open_ranges()[("opt", id(optimizer))] = _start(f"Optimizer.step#{type(optimizer).__name__}.step")

    @_guarded
    def post(optimizer, args, kwargs):
        if _window["state"] == "done":
            return
        _end(_open_ranges().pop(("opt", id(optimizer)), None))
        if not _state.get("dist_marked") and _active():
            _guarded(_mark_distributed)()
        _step_ended("opt")

    register_optimizer_step_pre_hook(pre)
    register_optimizer_step_post_hook(post)


def _mark_distributed():
    """Once, at the first optimizer step in the trace: where the default process group sends CUDA
    tensors' collectives, `gpuscope.host#dist_world_size=2,dist_gloo=1` (gloo copies them to host
    memory and reduces them on the CPU while the GPU waits: the analysis then names those waits),
    `dist_gloo=0` otherwise. Nothing without an initialised process group."""
    _state["dist_marked"] = True
    dist = getattr(_state["torch"], "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    config = dist.get_backend_config() if hasattr(dist, "get_backend_config") else dist.get_backend()
    config = str(config).lower()
    gloo = "cuda:gloo" in config or config == "gloo"
    _state["torch"].cuda.nvtx.mark(
        f"{_HOST_MARK_PREFIX}dist_world_size={int(dist.get_world_size())},dist_gloo={int(gloo)}")


def _install_dataloader_hook(torch):
    from torch.utils.data import dataloader

    cls = dataloader._BaseDataLoaderIter
    original = cls.__next__
    if getattr(original, "_gpuscope", False):
        return

    def __next__(self):
        rid = _guarded(_start)(f"enumerate(DataLoader)#{type(self).__name__}.__next__")
        # Batches built here, in this process (num_workers=0), are timed; with workers this
        # process only waits for them. rid is None outside the tracing process (no workers).
        started = None
        here = getattr(self, "_num_workers", 1) == 0
        if "probe" not in _state:
            # Batches built here are timed on one thread too; a loader with fewer workers than
            # the finding would advise gets only the workers' timing (its iterator is never
            # touched in the copy: its batches come through queues the program shares).
            _guarded(_probe_loader)(self, original if here else None)
        if rid is not None and (_state.get("probe") or _state.get("probe_pool")) and not _state.get("probe_marked"):
            _guarded(_mark_probe)()
        if rid is not None and here:
            if not _state.get("loader_mark"):
                _guarded(_mark_loader_threads)(self)
            started = _guarded(_loader_clock)()
        elif rid is not None and not _state.get("workers_mark"):
            _guarded(_mark_loader_threads)(self)
        try:
            batch = original(self)
            if started is not None:
                _guarded(_mark_loader_cost)(started)
            return batch
        finally:
            _guarded(_end)(rid)

    _replace_attr(cls, "__next__", original, __next__)


def _mark_loader_threads(it):
    """Once per process, at the first batch built in this process (num_workers=0): the CPUs this
    process may use and torch's intra-op threads. DataLoader workers run torch ops on one thread
    each, so a batch that took t here may take up to torch_threads x t in a worker; the input
    finding states that bound (`gpuscope.host#cpus=16,torch_threads=16`). A loader with workers
    gets its own one-off mark instead (`gpuscope.host#cpus=16,loader_workers=8`)."""
    workers = getattr(it, "_num_workers", 0)
    if workers != 0:
        # Once: the loader already has worker processes (the input finding then does not advise
        # adding them blindly): `gpuscope.host#cpus=16,loader_workers=8`.
        if not _state.get("workers_mark"):
            _state["workers_mark"] = True
            _state["torch"].cuda.nvtx.mark(f"{_HOST_MARK_PREFIX}cpus={_cpus()},loader_workers={int(workers)}")
        return
    _state["loader_mark"] = True
    torch = _state["torch"]
    torch.cuda.nvtx.mark(f"{_HOST_MARK_PREFIX}cpus={_cpus()},torch_threads={torch.get_num_threads()}")


_PROBE_BUDGET_S = 1.0    # the one-thread batches stop once they have taken this long (at least two)
_PROBE_POOL_S = 12.0     # the copy gives up timing its workers once it has run this long
_PROBE_TIMEOUT_S = 20.0  # and a copy still running then is killed (what it reported before stays)
_PROBE_MAX_WORKERS = 8   # the workers the input finding advises: one per CPU beside this process, at most 8


def _probe_loader(it, next_batch):
    """Once per process, at the first batch built in it from a map-style dataset (num_workers=0),
    after CUDA is initialised: what DataLoader workers would deliver, measured. (A loader that
    already has workers, fewer than advised, gets the second half only: next_batch is None.)
    A forked copy of the process (what a worker is) first sets torch to one intra-op thread (what
    a worker does),
    turns pinning off (no CUDA in a fork) and builds up to three of the batches that come next,
    timed: one worker's cost alone. Then it runs the fix itself: a DataLoader over the same
    dataset, sampler order and collate function with as many workers as the input finding
    advises (forked from the copy), and receives its next batches as this process would, each
    copied once as pinning would copy it; the time between batches once the first round has
    arrived is what the workers deliver together, sharing the CPUs, with each batch's way
    through shared memory. The program waits for the copy (at most _PROBE_TIMEOUT_S, before its
    first step or while a bounded window waits, never inside what is analysed) and then carries
    on untouched: the copy's memory, iterator and random state are its own, its output and its
    workers' go nowhere, and its process group (the copy and its workers) is killed once the
    program has read the result, or at the deadline. Map-style datasets only: an iterable one
    may read a file whose offset parent and copy share. GPUSCOPE_LOADER_PROBE=0 turns it off. A copy that fails
    (a dataset that hands out CUDA tensors cannot run in a fork, nor in a worker) measures
    nothing: no mark, the estimate stays a range.
    Sets _state["probe"] to (microseconds per batch on one thread, batches timed) or None, and
    _state["probe_pool"] to (microseconds between batches, workers, batches received) or None."""
    win = _window
    if win["state"] != "waiting" and _steps_done(win):
        _state["probe"] = None  # a step has run: a stall now would be inside what is analysed
        return
    if not _cuda_ready():
        return  # not yet: a program that loads its first batch before it touches the GPU
    _state["probe"] = None
    if (os.environ.get("GPUSCOPE_LOADER_PROBE", "1") == "0" or os.getpid() != _state["pid"]
            or getattr(it, "_dataset_kind", None) != 0 or not hasattr(os, "fork")):
        return
    if next_batch is None and getattr(it, "_num_workers", 0) >= _advised_workers():
        return  # as many workers as advised already: nothing to predict
    import select
    import signal
    import warnings

    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "use of fork() may lead to deadlocks": the copy is killed if so
        pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)  # its workers join its group, which the program kills if it must
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            started = time.perf_counter()
            _state["torch"].set_num_threads(1)
            if hasattr(it, "_pin_memory"):
                it._pin_memory = False
            times, size = [], 0
            while next_batch is not None and len(times) < 3 and (
                    len(times) < 2 or time.perf_counter() - started < _PROBE_BUDGET_S):
                t0 = time.perf_counter()
                batch = next_batch(it)
                times.append(time.perf_counter() - t0)
                if any(getattr(t, "is_cuda", False) is True for t in _leaves(batch)):
                    break  # CUDA tensors: no worker could build them
                os.write(w, f"t {int(times[-1] * 1e6)}\n".encode())
                size = max(size, _batch_bytes(batch))
            else:
                try:
                    _probe_pool(it, w, started, size)
                except BaseException:
                    pass  # a batch the workers could not build: the one-thread times stand
        finally:
            try:
                # Its workers hold the pipe too: "end" tells the program the copy is done.
                os.write(w, b"end\n")
            finally:
                os._exit(0)
    try:
        os.setpgid(pid, pid)  # as the copy does: whichever runs first
    except OSError:
        pass
    os.close(w)
    data, deadline = b"", time.monotonic() + _PROBE_TIMEOUT_S
    try:
        while not data.endswith(b"end\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                break
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
        try:
            os.killpg(pid, signal.SIGKILL)  # a copy out of time, or a worker of its that lingers
        except OSError:
            pass
        os.waitpid(pid, 0)
    times, pool = [], None
    for line in data.decode().split("\n"):
        fields = line.split()
        if len(fields) == 2 and fields[0] == "t":
            times.append(int(fields[1]))
        elif len(fields) == 4 and fields[0] == "w":
            pool = tuple(int(v) for v in fields[1:])
    if times:
        # The first batch of a fresh worker may warm caches up; the rest are its steady cost.
        steady = sorted(times[1:] or times)
        _state["probe"] = (steady[len(steady) // 2], len(times))
    _state["probe_pool"] = pool


def _probe_pool(it, out, started, batch_bytes):
    """In the probe's copy: the next batches from a DataLoader with workers, as the fix would run
    it. Writes `w <us between batches> <workers> <batches>` to out, or nothing when the dataset's
    sampler is not reachable, the batches in flight would take over a quarter of the free memory
    or shared memory (batch_bytes each), or the workers are too slow to time within
    _PROBE_POOL_S."""
    sampler = getattr(it, "_sampler_iter", None)
    if sampler is None or not hasattr(it, "_dataset") or not hasattr(it, "_collate_fn"):
        return
    workers = _advised_workers()
    # In flight at once: two per worker queued, one being built by each, one being received;
    # together at most a quarter of the memory free.
    most_bytes = _free_memory_bytes() // (4 * (3 * workers + 1))
    if batch_bytes > most_bytes:
        return
    from torch.utils.data import DataLoader

    want = 3 * workers
    indices = []
    for index in sampler:
        indices.append(index)
        if len(indices) == want:
            break
    if not indices:
        return
    indices = (indices * (want // len(indices) + 1))[:want]  # a small dataset: its batches again
    common = {"num_workers": workers, "collate_fn": it._collate_fn, "multiprocessing_context": "fork",
              "prefetch_factor": 2}
    if getattr(it, "_auto_collation", True):
        loader = DataLoader(it._dataset, batch_sampler=indices, **common)
    else:
        loader = DataLoader(it._dataset, sampler=indices, batch_size=None, **common)
    # The workers are not shut down here: the program kills the copy's process group as soon as
    # it has read the result (a graceful shutdown would wait for batches nobody needs).
    buffers, arrivals = {}, []
    for batch in loader:
        if not arrivals and _batch_bytes(batch) > most_bytes:
            return  # (batch_bytes was not known: no batch was built on one thread)
        _copy_as_pinning(batch, buffers)
        arrivals.append(time.perf_counter())
        if time.perf_counter() - started > _PROBE_POOL_S:
            break
    # The first round (one batch per worker) carries the workers' start; after it, batches come
    # at the pace the workers keep up together.
    if len(arrivals) < 2 * workers:
        return
    between = (arrivals[-1] - arrivals[workers - 1]) / (len(arrivals) - workers)
    os.write(out, f"w {int(between * 1e6)} {workers} {len(arrivals)}\n".encode())


def _advised_workers():
    """The loader workers the input finding advises: one per CPU beside this process, at most 8."""
    return max(1, min(_PROBE_MAX_WORKERS, _cpus() - 1))


def _leaves(batch):
    """What a batch holds, through tuples, lists and dicts: its tensors (and other values)."""
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for b in batch:
            yield from _leaves(b)
    else:
        yield batch


def _batch_bytes(batch):
    """The bytes of the tensors (anything with an integer nbytes) in a batch."""
    return sum(n for n in (getattr(t, "nbytes", None) for t in _leaves(batch)) if isinstance(n, int))


def _free_memory_bytes():
    """The smaller of the memory available (MemAvailable) and the free shared memory (/dev/shm,
    where workers put their batches); 0 when neither can be read."""
    free = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        st = os.statvfs("/dev/shm")
        free.append(st.f_bavail * st.f_frsize)
    except OSError:
        pass
    return min(free) if free else 0


def _copy_as_pinning(batch, buffers):
    """Copies each tensor of a batch into a buffer kept for its place in the batch, as pin_memory
    copies a batch into page-locked memory the allocator reuses."""
    tensor = getattr(_state["torch"], "Tensor", None)
    if tensor is None:
        return
    for slot, t in enumerate(t for t in _leaves(batch) if isinstance(t, tensor)):
        buf = buffers.get(slot)
        if buf is None or buf.shape != t.shape or buf.dtype != t.dtype:
            buf = buffers[slot] = _state["torch"].empty_like(t)
        buf.copy_(t)


def _mark_probe():
    """`gpuscope.host#loader_one_thread_us=440000,batches=3`, once, in the trace, and where the
    copy timed its workers together `gpuscope.host#loader_pool_us=52000,pool_workers=8,batches=24`."""
    _state["probe_marked"] = True
    mark = _state["torch"].cuda.nvtx.mark
    if _state.get("probe"):
        us, n = _state["probe"]
        mark(f"{_HOST_MARK_PREFIX}loader_one_thread_us={us},batches={n}")
    if _state.get("probe_pool"):
        us, workers, n = _state["probe_pool"]
        mark(f"{_HOST_MARK_PREFIX}loader_pool_us={us},pool_workers={workers},batches={n}")


def _cpus():
    """The CPUs this process may use: its affinity, capped by its cgroup's CPU quota (a container
    limited to 8 CPUs on a 128-CPU host sees all 128 in its affinity). Where a launcher runs
    several processes on the node (torchrun's LOCAL_WORLD_SIZE) and none is pinned to its own
    CPUs, its share of them: eight ranks on 128 CPUs each have 16 for their loader workers."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except Exception:
        cpus = os.cpu_count() or 0
    for path_quota, path_period in (("/sys/fs/cgroup/cpu.max", None),  # cgroup v2: "quota period"
                                     ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")):
        try:
            with open(path_quota) as f:
                fields = f.read().split()
            if path_period:
                with open(path_period) as f:
                    fields = fields[:1] + f.read().split()[:1]
            quota, period = fields[0], int(fields[1])
            if quota not in ("max", "-1") and period > 0:
                cpus = min(cpus, max(1, int(quota) // period))
            break
        except (OSError, ValueError, IndexError):
            continue
    try:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    except ValueError:
        local = 1
    if local > 1 and cpus == (os.cpu_count() or 0):
        cpus = max(1, cpus // local)
    return cpus


_process_time, _perf_counter = time.process_time, time.perf_counter


def _loader_clock():
    return _process_time(), _perf_counter()


def _mark_loader_cost(started):
    """After each batch built in this process: its CPU time and wall time in microseconds
    (`gpuscope.host#loader_cpu_us=1440000,loader_wall_us=90000`). A DataLoader worker runs
    torch ops on one thread, so it needs at most about this CPU time per batch: the input
    finding states it as the slow end of its range. process_time() is the CPU time of all of
    this process's threads: torch's intra-op threads (the point), but also their spin-waiting
    (3.5x the one-thread time on the H200 pyzoo case) and whatever else ran meanwhile (this
    module's sampler, CUPTI's buffer thread, the program's own threads), so the value is an
    upper bound of the loader's own CPU time."""
    cpu0, wall0 = started
    cpu_us = int((_process_time() - cpu0) * 1e6)
    wall_us = int((_perf_counter() - wall0) * 1e6)
    _state["torch"].cuda.nvtx.mark(f"{_HOST_MARK_PREFIX}loader_cpu_us={cpu_us},loader_wall_us={wall_us}")


def _install_graph_hook(torch):
    """CUDA-graph replays count as steps where they are the program's steps: a replay with no
    optimizer step or step-loop iteration since the previous replay (a whole training or decode
    step captured in one graph calls no optimizer; a loop of replays may turn too fast to mark)."""
    graph_class = getattr(torch.cuda, "CUDAGraph", None)
    original = getattr(graph_class, "replay", None)
    if original is None or getattr(original, "_gpuscope", False):
        return

    @functools.wraps(original)
    def replay(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        w = _window
        if w["state"] != "done":
            if w["at_replay"] == (w["opt"], w["loop"]):
                _guarded(_step_ended)("graph")
            w["at_replay"] = (w["opt"], w["loop"])
        return result

    _replace_attr(graph_class, "replay", original, replay)


# --- Python stack sampler -------------------------------------------------------------------

_LIBRARY_DIRS = tuple(
    os.path.normcase(os.path.abspath(p)) + os.sep
    for p in {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix), os.path.dirname(os.__file__)}
)
_HERE = os.path.normcase(os.path.dirname(os.path.abspath(__file__))) + os.sep


@functools.lru_cache(maxsize=4096)  # the sampler asks about the same few files 100 times a second
def _is_user_file(filename):
    if not filename or filename.startswith("<"):
        return False
    f = os.path.normcase(os.path.abspath(filename))
    if f.startswith(_HERE) or "site-packages" in f or "dist-packages" in f:
        return False
    return not f.startswith(_LIBRARY_DIRS)


def describe_stack(frame, limit=3):
    """`<tag>;<file>:<line> <func>|...`: up to `limit` of the program's own frames, innermost
    first; tag `data` when a torch.utils.data frame is on the stack."""
    frames, tag = [], ""
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not tag and ("torch/utils/data" in filename or "torch\\utils\\data" in filename):
            tag = "data"
        if len(frames) < limit and _is_user_file(filename):
            frames.append(f"{os.path.basename(filename)}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return tag + ";" + "|".join(frames)


def _sample_rate_hz():
    try:
        hz = float(os.environ.get("GPUSCOPE_PY_SAMPLE_HZ", "100"))
    except ValueError:
        return 100.0
    return min(max(hz, 0.0), 500.0)


def _env_seconds(name, default):
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return float(default)


def _loop_iteration(label):
    """One iteration of the step loop (on the program's thread, inside its loop): the previous
    iteration's range ends, the step is counted (which may open or close the window), the next
    range starts."""
    if _window["state"] == "done" or os.getpid() != _state["pid"]:
        return
    rid = _state.get("iter_rid")
    if rid is not None:
        _end(rid)
    _step_ended("loop")
    _state["iter_rid"] = _start(f"gpuscope.iter#{label}")


def _loop_finder():
    if os.environ.get("GPUSCOPE_LOOP", "1") == "0":
        return None
    import _gpuscope_loop

    if not _gpuscope_loop.supported():
        return None
    torch_dir = os.path.dirname(os.path.abspath(_state["torch"].__file__)) + os.sep
    finder = _gpuscope_loop.LoopFinder(_guarded(_loop_iteration), skip_prefix=_HERE, torch_dir=torch_dir)
    return finder if finder.tool is not None else None


def _fall_back(finder, since_cuda_s):
    """While a --steps window waits: with no step source GPUSCOPE_STEP_WAIT_S after CUDA started,
    or a step loop too fast to mark, the window opens for a time instead, and says why."""
    w = _window
    if _steps_done(w):
        return
    fine = finder.fine_period_s if finder is not None else None
    if fine is None and since_cuda_s < _env_seconds("GPUSCOPE_STEP_WAIT_S", 20):
        return
    if fine is not None:
        duration = max(w["steps"] * fine, 0.5)
        reason = f"loop_period_ns={int(fine * 1e9)}"
    else:
        duration = _env_seconds("GPUSCOPE_FALLBACK_S", 10)
        reason = "no_steps=1"
    if not _trace_control(True):
        return
    w.update(state="open", kind="time", close_at=time.perf_counter() + duration)
    _state["torch"].cuda.nvtx.mark(f"{_HOST_MARK_PREFIX}time_window_us={int(duration * 1e6)},{reason}")


def _cap_fine_loop(finder, now):
    """A capped whole run whose step loop turns too fast to mark: each iteration costs the
    tracer about as much as the iteration itself, and no step count will end the trace. It ends
    GPUSCOPE_FINE_LOOP_S (default 5) after the loop was found, marked first."""
    found = _state.setdefault("fine_found_at", now)
    if now - found < _env_seconds("GPUSCOPE_FINE_LOOP_S", 5):
        return
    _state["torch"].cuda.nvtx.mark(
        f"{_HOST_MARK_PREFIX}capped_after_us={int((now - found) * 1e6)},loop_period_ns={int(finder.fine_period_s * 1e9)}")
    _window["state"] = "done"
    _trace_control(False)
    _detach()


def _start_sampler(torch=None):
    thread = threading.Thread(target=_guarded(_sample_loop), name="gpuscope-py-sampler", daemon=True)
    _state["sampler"] = thread
    thread.start()


def _sample_loop():
    """Waits for CUDA in this process (many never start it: compile workers, CPU jobs), then
    samples the stack of the thread that issues GPU work: for the step loop's search, and as
    marks naming the program's own lines (GPUSCOPE_PY_SAMPLE_HZ, 0: no marks)."""
    while not _cuda_ready():
        time.sleep(0.02)
        if os.getpid() != _state["pid"]:
            return
    hz = _sample_rate_hz()
    period_s = 1.0 / hz if hz > 0 else 0.02
    started = time.perf_counter()
    finder = _guarded(_loop_finder)()
    _state["finder"] = finder
    mark = _state["torch"].cuda.nvtx.mark
    while True:
        time.sleep(period_s)
        w = _window
        if os.getpid() != _state["pid"]:
            return
        if w["state"] == "done":
            if finder is not None:
                finder.stop()
            return
        searching = finder is not None and finder.chosen is None and not finder.stopped
        fine_capped = w["max_steps"] and finder is not None and finder.fine_period_s
        if hz <= 0 and not searching and w["state"] == "always" and not fine_capped:
            return
        frame = None
        try:
            now = time.perf_counter()
            frame = sys._current_frames().get(_state["target"])
            if searching and frame is not None:
                finder.target = _state["target"]
                finder.observe(frame, now)
            if w["state"] == "always" and fine_capped:
                _cap_fine_loop(finder, now)
            if w["state"] == "waiting":
                _fall_back(finder, now - started)
            elif w["state"] == "open" and w["close_at"] is not None and now >= w["close_at"]:
                _close_window()
            elif hz > 0 and frame is not None and _active():
                mark(_MARK_PREFIX + describe_stack(frame))
                stats["samples"] += 1
        except Exception:
            stats["hook_errors"] += 1
        finally:
            del frame


def _at_exit():
    try:
        if _active() and (stats["ranges"] or stats["hook_errors"]):
            _state["torch"].cuda.nvtx.mark(
                "gpuscope.python#ranges={ranges},samples={samples},hook_errors={hook_errors}".format(**stats)
            )
    except Exception:
        pass
