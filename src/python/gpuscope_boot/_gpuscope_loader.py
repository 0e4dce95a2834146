"""Data loading, observed at the DataLoader iterator (data loading runs outside compiled code):
a wrapper of `_BaseDataLoaderIter.__next__` calls the original and returns its batch.

  enumerate(DataLoader)#<Iter>.__next__   a range around each batch fetched

The first batch built in the main process (num_workers=0) adds one mark
`gpuscope.host#cpus=N,torch_threads=T` (a loader with workers one mark
`gpuscope.host#cpus=N,loader_workers=W`), and each batch built there one mark
`gpuscope.host#loader_cpu_us=C,loader_wall_us=W` (the process's CPU time and the wall time spent
building it). What a DataLoader worker would need per batch is measured once, before the first
step, in a forked copy that builds the next batches on one thread, as a worker does (map-style
datasets; GPUSCOPE_LOADER_PROBE=0 turns it off):
`gpuscope.host#loader_one_thread_us=U,batches=N,loader_one_thread_cpu_us=C` (C: the copy's CPU
time per batch, every thread);
the same copy then runs the fix, a DataLoader with the advised workers over the same data, and
times what they deliver together: `gpuscope.host#loader_pool_us=I,pool_workers=W,batches=N`.
"""
import os
import time

import _gpuscope_marks as marks
import _gpuscope_window as win
from _gpuscope_state import cuda_ready, guarded, replace_attr, state

# What the loader hooks did once per process: "probe" (absent: not yet tried) and "probe_pool"
# (_probe_loader's results), "probe_marked", "loader_mark", "workers_mark".
_loader = {}


def install_dataloader_hook(torch):
    from torch.utils.data import dataloader

    cls = dataloader._BaseDataLoaderIter
    original = cls.__next__
    if getattr(original, "_gpuscope", False):
        return

    def __next__(self):
        rid = guarded(win.start)(f"{marks.DATALOADER}{type(self).__name__}.__next__")
        # Batches built here, in this process (num_workers=0), are timed; with workers this
        # process only waits for them. rid is None outside the tracing process (no workers).
        started = None
        here = getattr(self, "_num_workers", 1) == 0
        if "probe" not in _loader:
            # Batches built here are timed on one thread too; a loader with fewer workers than
            # the finding would advise gets only the workers' timing (its iterator is never
            # touched in the copy: its batches come through queues the program shares).
            guarded(_probe_loader)(self, original if here else None)
        if rid is not None and (_loader.get("probe") or _loader.get("probe_pool")) and not _loader.get("probe_marked"):
            guarded(_mark_probe)()
        if rid is not None and here:
            if not _loader.get("loader_mark"):
                guarded(_mark_loader_threads)(self)
            started = guarded(_loader_clock)()
        elif rid is not None and not _loader.get("workers_mark"):
            guarded(_mark_loader_threads)(self)
        try:
            batch = original(self)
            if started is not None:
                guarded(_mark_loader_cost)(started)
            return batch
        finally:
            guarded(win.end)(rid)

    replace_attr(cls, "__next__", original, __next__)


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
        if not _loader.get("workers_mark"):
            _loader["workers_mark"] = True
            marks.host(cpus=_cpus(), loader_workers=int(workers))
        return
    _loader["loader_mark"] = True
    torch = state["torch"]
    marks.host(cpus=_cpus(), torch_threads=torch.get_num_threads())


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
    Sets _loader["probe"] to (microseconds per batch on one thread, batches timed) or None, and
    _loader["probe_pool"] to (microseconds between batches, workers, batches received) or None."""
    if win.window["state"] != "waiting" and win.steps_done():
        _loader["probe"] = None  # a step has run: a stall now would be inside what is analysed
        return
    if not cuda_ready():
        return  # not yet: a program that loads its first batch before it touches the GPU
    _loader["probe"] = None
    if (os.environ.get("GPUSCOPE_LOADER_PROBE", "1") == "0" or os.getpid() != state["pid"]
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
            state["torch"].set_num_threads(1)
            if hasattr(it, "_pin_memory"):
                it._pin_memory = False
            times, size = [], 0
            while next_batch is not None and len(times) < 3 and (
                    len(times) < 2 or time.perf_counter() - started < _PROBE_BUDGET_S):
                t0, c0 = time.perf_counter(), time.process_time()
                batch = next_batch(it)
                times.append(time.perf_counter() - t0)
                cpu = time.process_time() - c0  # every thread of the copy: pools outside torch too
                if any(getattr(t, "is_cuda", False) is True for t in _leaves(batch)):
                    break  # CUDA tensors: no worker could build them
                os.write(w, f"t {int(times[-1] * 1e6)} {int(cpu * 1e6)}\n".encode())
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
    times, cpus, pool = [], [], None
    for line in data.decode().split("\n"):
        fields = line.split()
        if len(fields) == 3 and fields[0] == "t":
            times.append(int(fields[1]))
            cpus.append(int(fields[2]))
        elif len(fields) == 4 and fields[0] == "w":
            pool = tuple(int(v) for v in fields[1:])
    if times:
        # The first batch of a fresh worker may warm caches up; the rest are its steady cost.
        steady, steady_cpu = sorted(times[1:] or times), sorted(cpus[1:] or cpus)
        _loader["probe"] = (steady[len(steady) // 2], len(times), steady_cpu[len(steady_cpu) // 2])
    _loader["probe_pool"] = pool


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
    tensor = getattr(state["torch"], "Tensor", None)
    if tensor is None:
        return
    for slot, t in enumerate(t for t in _leaves(batch) if isinstance(t, tensor)):
        buf = buffers.get(slot)
        if buf is None or buf.shape != t.shape or buf.dtype != t.dtype:
            buf = buffers[slot] = state["torch"].empty_like(t)
        buf.copy_(t)


def _mark_probe():
    """`gpuscope.host#loader_one_thread_us=440000,batches=3,loader_one_thread_cpu_us=452000`
    (the median wall and CPU time of its batches: CPU well above wall is a thread pool outside
    torch, which DataLoader workers do not limit), once, in the trace, and where the copy timed
    its workers together `gpuscope.host#loader_pool_us=52000,pool_workers=8,batches=24`."""
    _loader["probe_marked"] = True
    if _loader.get("probe"):
        us, n, cpu_us = _loader["probe"]
        marks.host(loader_one_thread_us=us, batches=n, loader_one_thread_cpu_us=cpu_us)
    if _loader.get("probe_pool"):
        us, workers, n = _loader["probe_pool"]
        marks.host(loader_pool_us=us, pool_workers=workers, batches=n)


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
    marks.host(loader_cpu_us=cpu_us, loader_wall_us=wall_us)

