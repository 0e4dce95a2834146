# gpuscope's Python bootstrap, put first on PYTHONPATH by `gpuscope run` (the sitecustomize
# pattern). It only arms a watcher for `import torch` (see _gpuscope_boot.py) and then hands
# over to the sitecustomize that this one shadows, so a program sees its own site set-up
# unchanged. A program that never imports torch pays one finder on sys.meta_path.
# GPUSCOPE_PYTHON=0 turns all of it off.
import os as _os
import sys as _sys

_here = _os.path.dirname(_os.path.abspath(__file__))


def _chain_next_sitecustomize():
    """Imports the sitecustomize this file shadows (the next one on sys.path), if any."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    _sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if _os.environ.get("GPUSCOPE_PYTHON", "1") != "0":
    try:
        import _gpuscope_boot

        _gpuscope_boot.arm()
    except Exception:  # the bootstrap must never change what the program does
        pass
try:
    _chain_next_sitecustomize()
except ImportError:
    pass
