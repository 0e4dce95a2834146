"""How the validation runners run a program: its output in files, not pipes.

A program can leave processes behind that inherited its stdout and stderr (torch.compile's
worker pool, DataLoader workers): with pipes, `subprocess.run(capture_output=True)` waits until
every holder closes them, so the runner waits on them, not on the program. Files let it return
when the program itself has exited.
"""
import subprocess
import tempfile
import types


def run_program(cmd, env=None, timeout=900):
    """subprocess.run(CMD) with text output captured through temporary files; returns an object
    with returncode, stdout and stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.run(cmd, env=env, stdout=out, stderr=err, text=True, timeout=timeout)
        out.seek(0)
        err.seek(0)
        return types.SimpleNamespace(returncode=proc.returncode, stdout=out.read(), stderr=err.read())
