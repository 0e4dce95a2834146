"""The Python stack sampler: a thread that waits for CUDA in this process, then samples the stack
of the thread that issues GPU work (a few frames of the program's own code, innermost first),
for the step loop's search (_gpuscope_loop) and as NVTX marks naming the program's own lines:

  gpuscope.py#<tag>;<file>:<line> <function>|...   <tag> is `data` when a data-loading frame
                                                   (torch.utils.data) is on the stack

Rate: GPUSCOPE_PY_SAMPLE_HZ (default 100, 0 turns the marks off, at most 500); while the step
loop is searched for, in the first 2 s after CUDA started, 400 Hz (marks still at the set rate),
so that the loop of a program with a fraction of a second of steps is found before it ends; not
once an optimizer step has ended, nor in a `--try` trial (search_fast). It reads
`sys._current_frames()` and changes nothing. It also runs the trace window's clock
(_gpuscope_window: a window opened by time, a capped fine loop).
"""
import functools
import os
import sys
import threading
import time

import _gpuscope_marks as marks
import _gpuscope_steps as steps
import _gpuscope_window as win
from _gpuscope_state import cuda_ready, guarded, nvtx_lock, state, stats

_LIBRARY_DIRS = tuple(
    os.path.normcase(os.path.abspath(p)) + os.sep
    for p in {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix), os.path.dirname(os.__file__)}
)
_HERE = os.path.normcase(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SEARCH_HZ = 400.0  # sampling while the step loop is searched for, in its first _SEARCH_FAST_S
_SEARCH_FAST_S = 2.0


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
            tag = marks.DATA_TAG
        if len(frames) < limit and _is_user_file(filename):
            frames.append(f"{os.path.basename(filename)}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return tag + ";" + "|".join(frames)


def search_fast(searching, since_cuda_s, w):
    """Whether the step-loop search samples at _SEARCH_HZ: in the first _SEARCH_FAST_S after
    CUDA started, until an optimizer step ends (optimizer steps are then the program's steps),
    and never in a `--try` trial (its as-is and tried runs are observed alike: a tried run that
    compiles reaches its timed steps after those seconds, the as-is run inside them)."""
    return bool(searching) and since_cuda_s < _SEARCH_FAST_S and not w["opt"] and w.get("trial") is None


def _sample_rate_hz():
    try:
        hz = float(os.environ.get("GPUSCOPE_PY_SAMPLE_HZ", "100"))
    except ValueError:
        return 100.0
    return min(max(hz, 0.0), 500.0)


def _loop_finder():
    if os.environ.get("GPUSCOPE_LOOP", "1") == "0":
        return None
    import _gpuscope_loop

    if not _gpuscope_loop.supported():
        return None
    torch_dir = os.path.dirname(os.path.abspath(state["torch"].__file__)) + os.sep
    finder = _gpuscope_loop.LoopFinder(guarded(steps.loop_iteration), skip_prefix=_HERE, torch_dir=torch_dir)
    return finder if finder.tool is not None else None


def start_sampler(torch=None):
    thread = threading.Thread(target=guarded(_sample_loop), name="gpuscope-py-sampler", daemon=True)
    state["sampler"] = thread
    thread.start()


def _sample_loop():
    """Waits for CUDA in this process (many never start it: compile workers, CPU jobs), then
    samples the stack of the thread that issues GPU work: for the step loop's search, and as
    marks naming the program's own lines (GPUSCOPE_PY_SAMPLE_HZ, 0: no marks)."""
    while not cuda_ready():
        time.sleep(0.02)
        if os.getpid() != state["pid"]:
            return
    hz = _sample_rate_hz()
    period_s = 1.0 / hz if hz > 0 else 0.02
    started = time.perf_counter()
    finder = guarded(_loop_finder)()
    state["finder"] = finder
    mark = state["torch"].cuda.nvtx.mark
    fast = search_fast(finder is not None, 0.0, win.window)
    last_mark = 0.0
    while True:
        time.sleep(min(period_s, 1.0 / _SEARCH_HZ) if fast else period_s)
        w = win.window
        if os.getpid() != state["pid"]:
            return
        if w["state"] == "done":
            if finder is not None:
                finder.stop()
            return
        searching = finder is not None and finder.chosen is None and not finder.stopped
        fast = search_fast(searching, time.perf_counter() - started, w)
        fine_capped = w["max_steps"] and finder is not None and finder.fine_period_s
        if hz <= 0 and not searching and w["state"] == "always" and not fine_capped:
            return
        frame = None
        try:
            now = time.perf_counter()
            frame = sys._current_frames().get(state["target"])
            if searching and frame is not None:
                finder.target = state["target"]
                finder.observe(frame, now)
            if w["state"] == "always" and fine_capped:
                win.cap_fine_loop(finder, now)
            if w["state"] == "waiting":
                win.fall_back(finder, now - started)
            elif w["state"] == "open" and w["close_at"] is not None and now >= w["close_at"]:
                win.close()
            elif hz > 0 and frame is not None and now - last_mark >= 0.9 * period_s and win.active():
                last_mark = now
                text = marks.PY_SAMPLE + describe_stack(frame)
                with nvtx_lock:
                    if win.active():
                        mark(text)
                        stats["samples"] += 1
        except Exception:
            stats["hook_errors"] += 1
        finally:
            del frame

