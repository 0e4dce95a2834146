"""What the bootstrap's modules share: the process it was installed in, its counters, and the
undo list that puts every wrapper back after a bounded window.

Contract: nothing here raises into the program: `guarded` wraps every hook, its exceptions
counted in `stats`.
"""
import os
import threading

stats = {"hook_errors": 0, "ranges": 0, "samples": 0}
# Held around each NVTX range or sample the bootstrap emits and around the window's turn to
# "done": once the window is done (the injection library then stops recording and, with
# GPUSCOPE_DETACH=1, detaches CUPTI, which NVTX calls run into), no NVTX call of the bootstrap is
# still running, and none starts.
nvtx_lock = threading.Lock()
if hasattr(os, "register_at_fork") and hasattr(nvtx_lock, "_at_fork_reinit"):
    # A child forked while the sampler held it (a DataLoader worker) starts with it free.
    os.register_at_fork(after_in_child=nvtx_lock._at_fork_reinit)
# The process that installed the hooks (a forked child is another pid), its torch module, the
# thread that issues GPU work (the sampler's target; the optimizer's thread once it steps), the
# sampler thread and the step loop's finder, and what detach() undoes.
state = {"installed": False, "pid": None, "sampler": None, "target": None, "torch": None, "undo": [],
         "finder": None}


def guarded(fn):
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:
            stats["hook_errors"] += 1
            return None

    return wrapper


def env_int(name):
    """A count from the environment: 0 when unset or not an integer, never negative."""
    try:
        return max(0, int(os.environ.get(name, "0")))
    except ValueError:
        return 0


def env_seconds(name, default):
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return float(default)


def cuda_ready():
    try:
        return bool(state["torch"].cuda.is_initialized())
    except Exception:
        return False


def undo_on_detach(*handles):
    for h in handles:
        if h is not None and hasattr(h, "remove"):
            state["undo"].append(h.remove)


def replace_attr(owner, name, original, wrapper):
    """Puts `wrapper` (of `original`) in place of owner.<name>, marked as gpuscope's; detaching
    puts the original back unless something else replaced the wrapper since."""
    wrapper._gpuscope = True
    wrapper.__wrapped__ = original
    setattr(owner, name, wrapper)

    def restore():
        if getattr(owner, name) is wrapper:
            setattr(owner, name, original)

    state["undo"].append(restore)


def detach():
    """Removes every wrapper and the loop's events: after a bounded window the program runs as if
    untraced. The optimizer hooks stay (torch iterates them live inside the step that closes the
    window, and dynamo may guard on them); they return at once from now on."""
    undo, state["undo"] = state["undo"], []
    for fn in undo:
        try:
            fn()
        except Exception:
            stats["hook_errors"] += 1

