"""PyTorch context for `gpuscope run`, with no change to the traced program: the entry point
that sitecustomize arms. Once the program imports torch, `install` sets up each concern, a
module of its own:

  _gpuscope_steps     the step sources: global optimizer-step hooks, CUDA-graph replays, step-loop
                      iterations (ranges `Optimizer.step#...`, `gpuscope.iter#...`)
  _gpuscope_loader    the DataLoader iterator's wrapper, its marks and the forked-copy probe
  _gpuscope_sampler   the stack sampler thread (`gpuscope.py#` marks) and the window's clock
  _gpuscope_loop      the step loop's search (sys.monitoring, Python 3.12+)
  _gpuscope_window    the trace window: opened, closed or capped by steps or time
  _gpuscope_marks     the NVTX names and field marks (the protocol: src/core/run_protocol.h)
  _gpuscope_state     what they share: the process, its counters, the undo list

Nothing here is visible to dynamo, autograd or CUDA-graph capture: no module hooks (global
module hooks put every module call on torch's slow path and make dynamo guard on them and
recompile when they change), no wrapped forward or backward; the hooks sit at boundaries
compiled code never traces.

Contract: nothing here may change what the program does. Every hook swallows its own
exceptions (counted in `_gpuscope_state.stats`); nothing is emitted before CUDA is initialised
in this process or in a forked child (DataLoader workers write nothing); a process that never
imports torch never imports it because of this module.
"""
import os
import sys
import threading

from _gpuscope_state import state, stats

class _TorchWatcher:
    """A sys.meta_path finder that lets the real finders load torch, then installs the hooks."""

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._busy or state["installed"]:
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


def install(torch):
    """Installs the hooks on an imported torch module (idempotent). The concerns' modules are
    imported here, not before: a program that never imports torch loads none of them."""
    if state["installed"]:
        return
    import _gpuscope_loader
    import _gpuscope_sampler
    import _gpuscope_steps
    import _gpuscope_window

    state.update(installed=True, pid=os.getpid(), torch=torch, target=threading.main_thread().ident)
    _gpuscope_window.configure()
    if os.environ.get("GPUSCOPE_TRY_RESULT"):
        # A trial of `gpuscope run --try` (the only run that changes the program): its fixes are
        # applied now, before the program builds its model, optimizer and DataLoaders.
        try:
            import _gpuscope_try

            _gpuscope_try.begin(torch)
            _gpuscope_window.window["trial"] = _gpuscope_try
        except Exception:
            stats["hook_errors"] += 1
    for step in (_gpuscope_steps.install_optimizer_hooks, _gpuscope_loader.install_dataloader_hook,
                 _gpuscope_steps.install_graph_hook, _gpuscope_sampler.start_sampler):
        try:
            step(torch)
        except Exception:
            stats["hook_errors"] += 1
    import atexit

    atexit.register(_at_exit)


def _at_exit():
    trial = sys.modules.get("_gpuscope_try")
    if trial is not None:
        try:
            trial.finish()  # The program ended before its trial did: what was timed.
        except Exception:
            pass
    try:
        import _gpuscope_marks
        import _gpuscope_window

        if _gpuscope_window.active():
            _gpuscope_window.guarded(_gpuscope_window.mark_allocator)()
            if stats["ranges"] or stats["hook_errors"]:
                _gpuscope_marks.python_stats(ranges=stats["ranges"], samples=stats["samples"],
                                             hook_errors=stats["hook_errors"])
    except Exception:
        pass
