"""The trace window: the one owner of whether, when and why the bootstrap opens, closes or caps
what the injection library records.

Bounded tracing (`gpuscope run --steps N --skip-steps K`, GPUSCOPE_STEPS / GPUSCOPE_SKIP_STEPS):
steps are counted here (`step_ended`, called by _gpuscope_steps), from the first source that has
any: optimizer steps; else iterations of the step loop (inference, serving, programs of plain
tensor functions); else CUDA-graph replays (a whole step captured in one graph). After K steps
this opens the injection library's trace window, after N more it closes it (the library then
records nothing more), and from then on the bootstrap emits nothing. While waiting it times the
steps (the periods between step ends, the first one left out as warm-up); when the window opens
it adds one mark `gpuscope.host#untraced_step_us=S,steps=N`, the median of the last (up to 32)
untraced steps, so the analysis knows the program's own step time beside the traced one, and one
more, `gpuscope.host#optimizer_steps=N`, the optimizer steps before it (training or inference,
where the window's steps replay a CUDA graph and call no optimizer). A host that runs ahead of
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

The caching allocator's state is marked where the trace ends (a window's close, a step cap, the
program's exit): `gpuscope.host#alloc_retries=R,alloc_uncached=U,alloc_expandable=E`, its retries
so far (torch.cuda.memory_stats' num_alloc_retries: each time it ran out of memory, freed its
cache, synchronising, and allocated again), whether PYTORCH_NO_CUDA_MEMORY_CACHING turns it off,
whether expandable segments are on; and as a --steps window opens (by steps or by time),
`alloc_retries_at_open=R`. One read of the allocator's statistics at each, never per step.

Ranges (`start`, `end`) are emitted only while the window is open, or with no window at all.
"""
import os
import time

import _gpuscope_marks as marks
from _gpuscope_state import cuda_ready, detach, env_int, env_seconds, guarded, nvtx_lock, state, stats

# Trace window: "always" (the whole run), or "waiting" -> "open" -> "done" under --steps.
window = {"state": "always", "skip": 0, "steps": 0, "opt": 0, "loop": 0, "graph": 0, "at_open": 0, "kind": "opt",
          "done": 0, "close_at": None, "at_replay": None, "max_steps": 0}
# perf_counter() at the latest step ends of each kind while the window waits (at most 34).
_step_ends = {"opt": [], "loop": [], "graph": []}
# CUDA events recorded at the same step ends (the GPU's timeline), as many.
_step_events = {"opt": [], "loop": [], "graph": []}
_STEP_ENDS_KEPT = 34
# The graphs replayed since the last step a replay ended (ids; a bounded set).
_replayed_since_step = set()
_REPLAYED_KEPT = 4096


def configure():
    steps = env_int("GPUSCOPE_STEPS")
    if steps > 0:
        window.update(state="waiting", steps=steps, skip=env_int("GPUSCOPE_SKIP_STEPS"))
    else:
        window["max_steps"] = env_int("GPUSCOPE_MAX_STEPS")


def trace_control(open_window):
    """Calls gpuscope_trace_control in the injection library the CUDA driver loaded."""
    import ctypes

    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        return False
    # The library the driver already loaded: RTLD_NOLOAD never loads a second copy.
    lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1))
    return bool(lib.gpuscope_trace_control(1 if open_window else 0))


def done():
    return window["state"] == "done"


def active():
    """True in the process that installed the hooks, once it has initialised CUDA, while the
    trace window is open (or there is none)."""
    if os.getpid() != state["pid"] or window["state"] not in ("always", "open"):
        return False
    torch = state["torch"]
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def start(name):
    with nvtx_lock:
        if not active():
            return None
        rid = state["torch"].cuda.nvtx.range_start(name)
    stats["ranges"] += 1
    return rid


def end(rid):
    if rid is None:
        return
    with nvtx_lock:
        if window["state"] != "done":
            state["torch"].cuda.nvtx.range_end(rid)


def _set_done(w):
    """The window is over: from here on the bootstrap makes no NVTX call (see nvtx_lock)."""
    with nvtx_lock:
        w["state"] = "done"


def steps_done(w=window):
    """Steps so far: optimizer steps (else iterations of the step loop), plus CUDA-graph replays
    that are steps by themselves."""
    return (w["opt"] if w["opt"] else w["loop"]) + w["graph"]


def step_ended(kind):
    """Counts a step boundary ("opt", "loop" or "graph") and opens or closes the trace window."""
    w = window
    w[kind] += 1
    if os.getpid() != state["pid"]:
        return
    if w.get("trial") is not None:
        guarded(w["trial"].on_step)(steps_done(w))
    if w["state"] == "always":
        if w["max_steps"] and steps_done(w) >= w["max_steps"]:
            # A whole run's trace ends after GPUSCOPE_MAX_STEPS steps: the rest of a long job
            # runs untraced. The mark says so before the window closes.
            guarded(marks.host)(capped_after_steps=steps_done(w))
            _end_trace(w)
        return
    if w["state"] == "waiting":
        ends = _step_ends[kind]
        ends.append(time.perf_counter())
        if len(ends) > _STEP_ENDS_KEPT:
            del ends[0]
        if cuda_ready() and w.get("trial") is None:  # A trial records its own events.
            guarded(_record_step_event)(kind)
        done_now = steps_done(w)
        if done_now >= w["skip"] and cuda_ready() and _open_window(w):
            # The window's step kind, and how many of those steps ended before it (were all kept,
            # the first of them is warm-up).
            kind = kind if kind == "graph" else "opt" if w["opt"] else "loop"
            w.update(state="open", at_open=done_now, kind=kind, done=w[kind])
            guarded(_mark_untraced_step)(_step_ends[kind], w[kind])
            # Training or inference, for a window whose steps run in a CUDA graph (no optimizer
            # call inside it to tell).
            guarded(marks.host)(optimizer_steps=w["opt"])
            guarded(mark_allocator)(at_open=True)
        elif w.get("trial") is not None and done_now >= w["skip"] + w["steps"]:
            # A trial whose window could not open (no injection library) still ends after its
            # steps: what was timed is its measurement, and it has no capture.
            _set_done(w)
            _end_trial(w)
    elif w["state"] == "open" and w["kind"] != "time" and steps_done(w) - w["at_open"] >= w["steps"]:
        close()


def _switch_on(v):
    """Whether an environment switch's value torch reads as a boolean is on (c10's check_env: 1,
    y, yes, on, true; older torch took any value)."""
    return v is not None and v.strip().lower() not in ("", "0", "n", "no", "off", "false")


def mark_allocator(at_open=False):
    """The caching allocator's retries so far and its settings (module docstring)."""
    if not cuda_ready():
        return
    torch = state["torch"]
    retries = int(torch.cuda.memory_stats().get("num_alloc_retries", 0))
    if at_open:
        marks.host(alloc_retries_at_open=retries)
        return
    conf = f'{os.environ.get("PYTORCH_CUDA_ALLOC_CONF")},{os.environ.get("PYTORCH_ALLOC_CONF")}'
    expandable = "expandable_segments:true" in conf.replace(" ", "").lower()
    uncached = _switch_on(os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"))
    marks.host(alloc_retries=retries, alloc_uncached=int(uncached), alloc_expandable=int(expandable))


def _open_window(w):
    """trace_control(True); in a trial, a window that cannot open (no injection library) is
    False, so that the trial still ends after its steps."""
    try:
        return trace_control(True)
    except Exception:
        if w.get("trial") is None:
            raise
        return False


def graph_replayed(graph):
    """A CUDA-graph replay returned (`graph`: the graph's id). Replays are steps only where no
    optimizer step or step-loop iteration comes between them (a whole step captured in one
    graph, or in a cycle of graphs): then each replay of a graph already replayed since the last
    step ends one, so a step of several graphs (a forward and a backward, the pieces around a
    graph break) counts once. Graphs replayed between optimizer steps or loop iterations (those
    of torch.compile's mode="reduce-overhead") are parts of those steps, never steps."""
    w = window
    if w["state"] == "done":
        return
    since = _replayed_since_step
    if w["at_replay"] != (w["opt"], w["loop"]) or len(since) > _REPLAYED_KEPT:
        since.clear()
    elif graph in since:
        since.clear()
        guarded(step_ended)("graph")
    since.add(graph)
    w["at_replay"] = (w["opt"], w["loop"])


def _end_trace(w):
    """The trace ends: the allocator's mark, the bootstrap's last NVTX call; the window done; the
    injection library told to record nothing more; the wrappers and the loop's events undone."""
    guarded(mark_allocator)()
    _set_done(w)
    trace_control(False)
    detach()


def close():
    w = window
    if w["kind"] in _step_events:
        guarded(_mark_untraced_device_step)(_step_events[w["kind"]], w["done"])
    _end_trace(w)
    if w.get("trial") is not None:
        _end_trial(w)


def _end_trial(w):
    """A trial of `gpuscope run --try` ends here: its steps were timed before the window and
    traced in it. _exit skips the program's own code after its steps (a checkpoint it would
    save); the injection library flushes the capture from its _exit hook."""
    guarded(w["trial"].finish)(w["skip"])
    os._exit(0)


def median_period(periods, done_before, kept):
    """The median of the periods between step ends, the first one left out when it is among the
    first steps of the run (warm-up: compilation, allocator growth, cuBLAS heuristics); with it
    the count, or None without periods."""
    if done_before <= kept:
        periods = periods[1:]
    if not periods:
        return None
    periods = sorted(periods)
    n = len(periods)
    return (periods[n // 2] if n % 2 else (periods[n // 2 - 1] + periods[n // 2]) / 2), n


def _mark_untraced_step(ends, done_before):
    """Once, as the window opens: the median period of the untraced steps before it."""
    got = median_period([b - a for a, b in zip(ends, ends[1:])], done_before, len(ends))
    if got:
        marks.host(untraced_step_us=int(got[0] * 1e6), steps=got[1])


def _record_step_event(kind):
    """A timing event on the current stream at an untraced step end (recorded, never waited on);
    none while the stream is being captured into a CUDA graph (a step captured whole ends inside
    the capture, and the program's graph must not gain a node)."""
    cuda = state["torch"].cuda
    capturing = getattr(cuda, "is_current_stream_capturing", None)
    if capturing is None or capturing():
        return
    ev = cuda.Event(enable_timing=True)
    ev.record()
    events = _step_events[kind]
    events.append(ev)
    if len(events) > _STEP_ENDS_KEPT:
        del events[0]


def _mark_untraced_device_step(events, done_before):
    """Once, as the window closes: the median period of the untraced steps on the GPU's
    timeline, from the events that have completed (query() never waits)."""
    complete = []
    for ev in events:
        if not ev.query():
            break
        complete.append(ev)
    got = median_period([a.elapsed_time(b) / 1e3 for a, b in zip(complete, complete[1:])], done_before, len(events))
    if got:
        marks.host(untraced_device_step_us=int(got[0] * 1e6), steps=got[1])


def fall_back(finder, since_cuda_s):
    """While a --steps window waits: with no step source GPUSCOPE_STEP_WAIT_S after CUDA started,
    or a step loop too fast to mark, the window opens for a time instead, and says why."""
    w = window
    if steps_done(w):
        return
    fine = finder.fine_period_s if finder is not None else None
    if fine is None and since_cuda_s < env_seconds("GPUSCOPE_STEP_WAIT_S", 20):
        return
    if fine is not None:
        duration = max(w["steps"] * fine, 0.5)
    else:
        duration = env_seconds("GPUSCOPE_FALLBACK_S", 10)
    if not trace_control(True):
        return
    w.update(state="open", kind="time", close_at=time.perf_counter() + duration)
    guarded(mark_allocator)(at_open=True)
    if fine is not None:
        marks.host(time_window_us=int(duration * 1e6), loop_period_ns=int(fine * 1e9))
    else:
        marks.host(time_window_us=int(duration * 1e6), no_steps=1)


def cap_fine_loop(finder, now):
    """A capped whole run whose step loop turns too fast to mark: each iteration costs the
    tracer about as much as the iteration itself, and no step count will end the trace. It ends
    GPUSCOPE_FINE_LOOP_S (default 5) after the loop was found, marked first."""
    found = window.setdefault("fine_found_at", now)
    if now - found < env_seconds("GPUSCOPE_FINE_LOOP_S", 5):
        return
    marks.host(capped_after_us=int((now - found) * 1e6), loop_period_ns=int(finder.fine_period_s * 1e9))
    _end_trace(window)

