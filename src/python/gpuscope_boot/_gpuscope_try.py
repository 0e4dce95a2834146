"""Fixes that `gpuscope run --try FIX` applies to a program without changing its code.

Loaded by the bootstrap only when GPUSCOPE_TRY names fixes (comma-separated); in every other
run nothing here is imported and nothing is patched. Each fix is applied once, when the program
imports torch, before it builds its model, optimizer or DataLoader; each returns an undo
function (tests undo them; a traced program never does). A fix that cannot be applied to this
program raises NotApplicable with the reason, and the program runs as it is.

  tf32               TF32 matmuls and convolutions (torch.set_float32_matmul_precision("high"),
                     cuDNN allow_tf32). Changes numerics.
  bf16               autocast to bfloat16 around each outermost module call (the model's forward,
                     a loss module), from the second step on: backward and the optimizer run
                     outside it, as in code that wraps its forward in torch.autocast. Changes
                     numerics.
  compile            torch.compile (default mode) of each outermost module with parameters called
                     after the first step (the model; a loss module runs as it is), unless the
                     program compiles it itself; a module whose compilation fails runs as it
                     is. Fused arithmetic can differ in the last bits.
  reduce-overhead    the same with mode="reduce-overhead": the compiled forward and backward
                     replay as CUDA graphs (cut launch overhead); a program that keeps a model
                     output across steps fails this trial (CUDA graphs reuse their outputs).
  fused-optimizer    Adam, AdamW, SGD and Adagrad built with fused=True (one kernel for all
                     parameters), unless the program chose fused or foreach itself.
  dataloader         DataLoaders without workers get GPUSCOPE_TRY_WORKERS workers (default: one
                     per CPU beside the main process, at most 8), pin_memory=True and
                     persistent_workers=True; an iterable dataset keeps its loader as it is (each
                     worker would yield the whole dataset). Each worker's thread pools outside
                     torch (numpy's BLAS, OpenMP) are limited to one thread, as torch limits its
                     own, where threadpoolctl is installed (the program's worker_init_fn still
                     runs, after): unlimited, workers can oversubscribe the CPUs.
  non-blocking       copies of pinned host tensors to the GPU asked for without non_blocking
                     (`.to(device)`, `.cuda()`) made asynchronous: the host goes on queueing work
                     instead of waiting for each copy. Pageable sources, copies from the GPU and
                     code that torch.compile traces are left as they are. Changes results only
                     where the program rewrites the pinned source in place right after copying
                     it (the trial compares the losses).

The environment fixes (caching-allocator, expandable-segments) are made by `gpuscope run` in the
environment it gives the program; they need nothing here.

What each fix did is reported through `report(fix, applied, detail)`; the bootstrap writes it
with the measured steps into GPUSCOPE_TRY_RESULT (write_result).
"""
import functools
import json
import os
import threading
import time
import weakref

NUMERICS = {"tf32", "bf16"}


class NotApplicable(Exception):
    """The fix cannot be applied to this program; the message says why."""


def _tf32(torch, report):
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    if before[0] != "highest" and before[1]:
        raise NotApplicable("the program already allows TF32 (float32 matmul precision '%s')" % before[0])
    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.allow_tf32 = True

    def undo():
        torch.set_float32_matmul_precision(before[0])
        torch.backends.cudnn.allow_tf32 = before[1]
    return undo


# bf16 and compile act on each outermost module call (the model's forward, a loss module): one
# wrapper of nn.Module.__call__ serves both. Each is pending from torch import and active from
# the end of the first step: at import CUDA is not initialised yet (torch.autocast's check of
# bfloat16 support would initialise it on device 0, before a launcher's set_device), and the
# first step runs as it is.
_outer = {"torch": None, "pending": set(), "active": set(), "autocast_own": False, "undo": None}
_outermost = threading.local()  # Set while an outermost module call runs on this thread.
_compiled = weakref.WeakKeyDictionary()  # module -> its torch.compile form, or None: left as it is


def _autocast_on(torch):
    try:
        return bool(torch.is_autocast_enabled("cuda"))
    except TypeError:  # torch before 2.4 takes no device type (and means CUDA)
        return bool(torch.is_autocast_enabled())


def _kind(module):
    """The module's class name; the compiled module's for torch.compile's wrapper."""
    return type(getattr(module, "_orig_mod", module)).__name__


def _compiled_for(torch, module, fix):
    """The module's compiled form (made at its first outermost call) for the fix `compile`
    (default mode) or `reduce-overhead` (mode="reduce-overhead": CUDA graphs), or None where the
    program compiles it itself, it has no parameters, or torch.compile refuses it."""
    if module in _compiled:
        return _compiled[module]
    optimized = getattr(getattr(getattr(torch, "_dynamo", None), "eval_frame", None), "OptimizedModule", ())
    kind = _kind(module)
    if (optimized and isinstance(module, optimized)) or getattr(module, "_compiled_call_impl", None) is not None:
        _compiled[module] = None
        report(fix, False, "the program compiles %s itself" % kind)
        return None
    parameters = getattr(module, "parameters", None)
    if parameters is not None and next(iter(parameters()), None) is None:
        # A module without parameters called on its own (a loss, an activation) is glue around
        # the model: torch.compile(model), the advice, leaves it out, and compiling it alone
        # would add a compiled call's overhead to every step for nothing to fuse across.
        _compiled[module] = None
        return None
    try:
        _compiled[module] = torch.compile(module, **_COMPILE_OPTIONS[fix])
    except Exception as e:  # noqa: BLE001 - a fix must never break the program
        _compiled[module] = None
        report(fix, False, "%s: %s" % (kind, _first_line(e)))
    return _compiled[module]


# The compiling fixes: torch.compile's options and how the report names them. One trial
# applies one of them (a module is compiled once).
_COMPILE_OPTIONS = {"compile": {}, "reduce-overhead": {"mode": "reduce-overhead"}}
_COMPILE_MODE_TEXT = {"compile": "default mode", "reduce-overhead": 'mode="reduce-overhead" (CUDA graphs)'}


def _outer_call(torch, original, module, args, kwargs):
    """One outermost call with the active fixes around it."""
    active = _outer["active"]
    callee = None
    fix = "reduce-overhead" if "reduce-overhead" in active else "compile" if "compile" in active else None
    if fix is not None:
        callee = _compiled_for(torch, module, fix)
    ctx = None
    if "bf16" in active:
        try:
            if _autocast_on(torch):
                if not _outer["autocast_own"]:
                    _outer["autocast_own"] = True
                    report("bf16", False, "the program autocasts this call itself")
            else:
                ctx = torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        except Exception as e:  # noqa: BLE001
            active.discard("bf16")
            report("bf16", False, "failed: " + _first_line(e))
    _outermost.on = True
    try:
        if ctx is not None:
            ctx.__enter__()
        try:
            if callee is None:
                return original(module, *args, **kwargs)
            first = not getattr(callee, "_gpuscope_ran", False)
            try:
                out = callee(*args, **kwargs)  # Compiles at its first call.
            except Exception as e:  # noqa: BLE001
                if not first:
                    raise
                # Compilation failed: the module runs as it is (a real error of the program
                # raises again there).
                _compiled[module] = None
                report(fix, False, "%s: %s" % (_kind(module), _first_line(e)))
                return original(module, *args, **kwargs)
            if first:
                callee._gpuscope_ran = True
                report(fix, True, "torch.compile(%s), %s, at its first call after the first step"
                       % (_kind(module), _COMPILE_MODE_TEXT[fix]))
            return out
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    finally:
        _outermost.on = False


def _outermost_fix(name):
    def apply_fix(torch, _report):  # Reports through report(), as the outermost calls do.
        if name in _COMPILE_OPTIONS and not hasattr(torch, "compile"):
            raise NotApplicable("this torch has no torch.compile")
        if _outer["undo"] is None:
            module = torch.nn.Module
            original = module.__call__
            compiler = getattr(torch, "compiler", None)
            compiling = getattr(compiler, "is_compiling", None) or (lambda: False)

            def patched(self, *args, **kwargs):
                # While dynamo traces a compiled module, is_compiling() is a constant True: the
                # submodule calls it traces go straight to Module.__call__, with no guard on the
                # state here.
                if compiling() or not _outer["active"] or getattr(_outermost, "on", False):
                    return original(self, *args, **kwargs)
                return _outer_call(torch, original, self, args, kwargs)
            module.__call__ = patched

            def restore():
                module.__call__ = original
            _outer["undo"] = restore
            _outer.update(torch=torch, pending=set(), active=set(), autocast_own=False)
        _outer["pending"].add(name)

        def undo():
            _outer["pending"].discard(name)
            _outer["active"].discard(name)
            if not _outer["pending"] and _outer["undo"] is not None:
                _outer["undo"]()
                _outer.update(torch=None, undo=None)
                _compiled.clear()
        return undo
    return apply_fix


_bf16 = _outermost_fix("bf16")
_compile = _outermost_fix("compile")
_reduce_overhead = _outermost_fix("reduce-overhead")


def on_step_end():
    """Called by the bootstrap at the end of each step, on the thread that ran it: the pending
    outermost-call fixes become active."""
    torch = _outer["torch"]
    if torch is None:
        return
    if _outer["pending"] <= _outer["active"]:
        return  # Every step after the first: nothing to do.
    for name in sorted(_outer["pending"] - _outer["active"]):
        if name == "bf16":
            try:
                torch.autocast(device_type="cuda", dtype=torch.bfloat16)  # Raises where bf16 is not supported.
            except Exception as e:  # noqa: BLE001 - a fix must never break the program
                _outer["pending"].discard(name)
                report("bf16", False, "failed: " + _first_line(e))
                continue
            report("bf16", True, "autocast(bfloat16) around each outermost module call, from the second step")
        _outer["active"].add(name)


_FUSED_CLASSES = ("Adam", "AdamW", "SGD", "Adagrad")
_inside = threading.local()  # Set while the outermost patched __init__ runs (super() calls pass).


def _fused_optimizer(torch, report):
    originals = []
    for name in _FUSED_CLASSES:
        cls = getattr(torch.optim, name, None)
        if cls is None:
            continue
        init = cls.__init__

        @functools.wraps(init)
        def patched(self, params, *args, __init=init, __cls=cls, **kwargs):
            if getattr(_inside, "active", False):
                return __init(self, params, *args, **kwargs)
            _inside.active = True
            try:
                kind = type(self).__name__
                if type(self).step is not __cls.step:
                    # A subclass with a step of its own may never read the flag.
                    report("fused-optimizer", False, "%s has a step of its own" % kind)
                    return __init(self, params, *args, **kwargs)
                if kwargs.get("fused") is not None or kwargs.get("foreach"):
                    report("fused-optimizer", False, "the program chose fused or foreach for %s itself" % kind)
                    return __init(self, params, *args, **kwargs)
                params = list(params)
                try:
                    __init(self, params, *args, **dict(kwargs, fused=True, foreach=None))
                    report("fused-optimizer", True, kind + "(fused=True)")
                except (RuntimeError, ValueError, TypeError) as e:
                    # Fused kernels need floating-point CUDA parameters: keep the program's optimizer.
                    report("fused-optimizer", False, "%s: %s" % (kind, _first_line(e)))
                    __init(self, params, *args, **kwargs)
            finally:
                _inside.active = False
        cls.__init__ = patched
        originals.append((cls, init))

    def undo():
        for cls, init in originals:
            cls.__init__ = init
    return undo


def _advised_workers():
    env = os.environ.get("GPUSCOPE_TRY_WORKERS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus - 1))


_pool_limits = []  # in a worker: the threadpoolctl limiter, kept for the worker's life


class _OneThreadPools:
    """A DataLoader worker_init_fn: the worker's thread pools outside torch (numpy's BLAS,
    OpenMP) limited to one thread through threadpoolctl, then the program's own worker_init_fn.
    A class, not a closure, so that a loader that spawns its workers can pickle it."""

    def __init__(self, user):
        self.user = user

    def __call__(self, worker_id):
        try:
            from threadpoolctl import threadpool_limits
            _pool_limits.append(threadpool_limits(limits=1))
        except Exception:
            pass  # not installed, or no pool to limit: the worker runs as it would
        if self.user is not None:
            self.user(worker_id)


def _threadpoolctl_installed():
    import importlib.util
    try:
        return importlib.util.find_spec("threadpoolctl") is not None
    except (ImportError, ValueError):
        return False


def _dataloader(torch, report):
    data = torch.utils.data
    cls = data.DataLoader
    init = cls.__init__
    workers = _advised_workers()
    pools = ("thread pools outside torch limited to one thread in each worker" if _threadpoolctl_installed()
             else "thread pools outside torch not limited (threadpoolctl is not installed)")

    @functools.wraps(init)
    def patched(self, dataset, *args, **kwargs):
        if args or kwargs.get("num_workers", 0) or isinstance(dataset, data.IterableDataset):
            why = ("its dataset is iterable: each worker would yield all of it" if isinstance(dataset, data.IterableDataset)
                   else "it already has workers or passes them positionally")
            report("dataloader", False, why)
            return init(self, dataset, *args, **kwargs)
        kwargs.update(num_workers=workers, persistent_workers=True,
                      worker_init_fn=_OneThreadPools(kwargs.get("worker_init_fn")))
        kwargs.setdefault("pin_memory", True)
        report("dataloader", True, "num_workers=%d, pin_memory=%s, persistent_workers=True, %s"
               % (workers, kwargs["pin_memory"], pools))
        return init(self, dataset, **kwargs)
    cls.__init__ = patched
    return lambda: setattr(cls, "__init__", init)


def _copy_destination_is_cuda(torch, args, kwargs):
    """Whether Tensor.to(*args, **kwargs) names a CUDA device (a device, its string or index, or
    a tensor on one); None when non_blocking is given positionally (the program chose)."""
    if any(isinstance(a, bool) for a in args):
        return None
    dest = kwargs.get("device", args[0] if args else None)
    if isinstance(dest, torch.Tensor):
        dest = dest.device
    if isinstance(dest, int):
        return True
    if isinstance(dest, (str, torch.device)):
        try:
            return torch.device(dest).type == "cuda"
        except Exception:  # noqa: BLE001 - not a device (a dtype given by name)
            return False
    return False


def _non_blocking(torch, report):
    tensor = torch.Tensor
    to, cuda = tensor.to, tensor.cuda
    compiler = getattr(torch, "compiler", None)
    compiling = getattr(compiler, "is_compiling", None) or (lambda: False)
    reported = []

    def make_async(self, args, kwargs, method_is_cuda):
        """Sets non_blocking=True in `kwargs` for a copy of a pinned host tensor to the GPU."""
        try:
            # Cheapest tests first: most .to() calls are on GPU tensors.
            if "non_blocking" in kwargs or self.device.type != "cpu" or compiling():
                return
            to_gpu = len(args) < 2 if method_is_cuda else _copy_destination_is_cuda(torch, args, kwargs)
            if not to_gpu or not self.is_pinned():
                return
        except Exception:  # noqa: BLE001 - a fix must never break the program
            return
        kwargs["non_blocking"] = True
        if not reported:
            reported.append(True)
            report("non-blocking", True, "copies of pinned host tensors to the GPU made non_blocking")

    @functools.wraps(to)
    def patched_to(self, *args, **kwargs):
        make_async(self, args, kwargs, False)
        return to(self, *args, **kwargs)

    @functools.wraps(cuda)
    def patched_cuda(self, *args, **kwargs):
        make_async(self, args, kwargs, True)
        return cuda(self, *args, **kwargs)

    tensor.to, tensor.cuda = patched_to, patched_cuda

    def undo():
        tensor.to, tensor.cuda = to, cuda
    return undo


FIXES = {
    "tf32": _tf32,
    "bf16": _bf16,
    "compile": _compile,
    "reduce-overhead": _reduce_overhead,
    "fused-optimizer": _fused_optimizer,
    "dataloader": _dataloader,
    "non-blocking": _non_blocking,
}


def requested(value=None):
    """The fixes a GPUSCOPE_TRY value names that are applied in Python, in order."""
    value = os.environ.get("GPUSCOPE_TRY") if value is None else value
    return [f for f in (value or "").split(",") if f in FIXES]


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0][:160] if text else type(e).__name__


# What each fix did: fix -> {"applied": bool, "detail": str}. A fix applied to one object and
# not to another (two optimizers, one a subclass) keeps both details; applied wins.
outcome = {}


def report(fix, applied, detail):
    entry = outcome.setdefault(fix, {"applied": False, "details": []})
    entry["applied"] = entry["applied"] or applied
    if detail not in entry["details"] and len(entry["details"]) < 8:
        entry["details"].append(detail)


def apply(torch, fixes, report=report):
    """Applies each fix; returns the undo functions of those applied. Never raises."""
    undo = []
    for name in fixes:
        try:
            undo.append(FIXES[name](torch, report))
            if name == "tf32":
                report(name, True, "float32 matmul precision 'high', cuDNN allow_tf32, at torch import")
        except NotApplicable as e:
            report(name, False, str(e))
        except Exception as e:  # noqa: BLE001 - a fix must never break the program
            report(name, False, "failed: " + _first_line(e))
    return undo


# A trial (GPUSCOPE_TRY_RESULT set): the step ends timed, host clock and CUDA events.
_trial = {"torch": None, "result": None, "warmup": 0, "seen": 0, "ends": [], "events": [], "undo": []}
_MAX_TIMED = 100000


def begin(torch, fixes=None, result=None, warmup=None):
    """At torch import, in a trial: applies the requested fixes and keeps the losses. The
    arguments default to GPUSCOPE_TRY, GPUSCOPE_TRY_RESULT and GPUSCOPE_TRY_WARMUP."""
    result = os.environ.get("GPUSCOPE_TRY_RESULT") if result is None else result
    warmup = os.environ.get("GPUSCOPE_TRY_WARMUP", "0") if warmup is None else warmup
    _trial.update(torch=torch, result=result, warmup=int(warmup) if str(warmup).isdigit() else 0)
    _trial["undo"] = apply(torch, requested(fixes))
    try:
        _trial["undo"].append(capture_losses(torch))
    except Exception:  # noqa: BLE001 - never in the program's way
        pass


def on_step(steps_done):
    """At each step end (steps_done: the window's count, which grows by one per step): enters a
    pending autocast, and from the end of the warm-up step on times each step end."""
    if steps_done <= _trial["seen"]:
        return
    _trial["seen"] = steps_done
    on_step_end()
    if steps_done < _trial["warmup"] or len(_trial["ends"]) >= _MAX_TIMED:
        return
    _trial["ends"].append(time.perf_counter_ns())
    torch = _trial["torch"]
    try:
        cuda = torch.cuda
        capturing = getattr(cuda, "is_current_stream_capturing", None)
        if cuda.is_initialized() and capturing is not None and not capturing():
            ev = cuda.Event(enable_timing=True)
            ev.record()
            _trial["events"].append(ev)
    except Exception:  # noqa: BLE001
        pass


def timed_steps(last_step=None):
    """The periods between the timed step ends up to step `last_step` (all without it), on the
    host clock and on the GPU's (empty when some end had no event)."""
    ends = _trial["ends"]
    events = _trial["events"]
    n = len(ends) if last_step is None else max(0, min(len(ends), last_step - _trial["warmup"] + 1))
    host = [b - a for a, b in zip(ends[:n], ends[1:n])]
    device = []
    if len(events) == len(ends) and n > 1:
        try:
            _trial["torch"].cuda.synchronize()  # The trial ends next: waiting costs nothing.
        except Exception:  # noqa: BLE001
            pass
        try:
            device = [int(a.elapsed_time(b) * 1e6) for a, b in zip(events[:n], events[1:n])]
        except Exception:  # noqa: BLE001
            device = []
    return host, device


def finish(last_timed_step=None):
    """Writes the trial's measurement (once). `last_timed_step`: the step whose end closes the
    timed steps (the rest were traced for the capture)."""
    path = _trial["result"]
    if not path:
        return
    _trial["result"] = None
    if not _trial["seen"] and os.path.exists(path):
        # A process that ran no step (a torch.compile worker, a helper the program started: the
        # environment names the same file) never replaces the result of the one that did.
        return
    host, device = timed_steps(last_timed_step)
    write_result(path, host, device, losses())


_losses = []
_MAX_LOSSES = 4096


def capture_losses(torch):
    """Keeps each scalar a program calls backward() on (detached, not read until the trial
    ends: no sync), so the trial can compare the losses of the fix with those as they were.
    Installed in every run of `--try`, the as-is one included, so both pay the same."""
    tensor = torch.Tensor
    backward = tensor.backward

    @functools.wraps(backward)
    def patched(self, *args, **kwargs):
        try:
            if len(_losses) < _MAX_LOSSES and self.numel() == 1:
                _losses.append(self.detach())
        except Exception:  # noqa: BLE001 - never in the program's way
            pass
        return backward(self, *args, **kwargs)
    tensor.backward = patched
    return lambda: setattr(tensor, "backward", backward)


def losses():
    out = []
    for t in _losses:
        try:
            out.append(float(t))
        except Exception:  # noqa: BLE001
            out.append(None)
    return out


def write_result(path, host_step_ns, device_step_ns, losses):
    """The trial's measurement for `gpuscope run --try`: step periods after warm-up on the host
    clock and (where CUDA events gave them) on the GPU's, the losses seen, and what each fix did.
    Written to a temporary name, then renamed, so a reader never sees half a file."""
    doc = {"fixes": outcome, "host_step_ns": list(host_step_ns), "device_step_ns": list(device_step_ns),
           "losses": list(losses)}
    tmp = path + ".part"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
