"""The `gpuscope` command of the pip wheel: runs the gpuscope binary installed in this package.

The wheel holds `cmake --install`'s layout under this folder (bin/gpuscope, and
lib/gpuscope/ with the injection libraries and the Python bootstrap that `gpuscope run` gives
its program), so the binary finds them relative to itself (src/platform/library_dirs.h). The
binary replaces this process (exec): signals, the exit status and /proc/self/exe are its own.
"""
import os
import sys


def binary_path():
    """The bundled binary: bin/gpuscope beside this file."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "gpuscope")


def main():
    path = binary_path()
    try:
        os.execv(path, [path] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"gpuscope: cannot run {path}: {e.strerror}; reinstall the gpuscope wheel\n")
        return 2
