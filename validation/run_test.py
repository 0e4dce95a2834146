#!/usr/bin/env python3
"""ctest validation_entry_point: `validation/run --list` names one runner per claim, every runner
it names exists and is executable, every runner folder under validation/ is named, docs/validation.md
cites each claim's command, and an unknown name is a usage error (exit 2, one line on stderr);
the runners' way of running a program (program_run) returns when the program exits, not when
the processes it left behind do; and the PyTorch zoo's residual table gives each check's error
and marks the findings it could not apply."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUN = os.path.join(HERE, "run")


class EntryPoint(unittest.TestCase):
    def setUp(self):
        p = subprocess.run([RUN, "--list"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.claims = dict(re.findall(r"^(\S+)\s+validation/(\S+)", p.stdout, re.M))

    def test_every_named_runner_exists_and_runs(self):
        self.assertGreaterEqual(len(self.claims), 6)
        for name, runner in self.claims.items():
            path = os.path.join(HERE, runner)
            self.assertTrue(os.access(path, os.X_OK), f"{name}: {path} is not an executable file")

    def test_every_runner_folder_is_named(self):
        named = {r.split("/")[0] for r in self.claims.values()}
        folders = {d for d in os.listdir(HERE) if os.path.isdir(os.path.join(HERE, d)) and d != "__pycache__"}
        self.assertEqual(folders, named)

    def test_docs_cite_each_claim(self):
        with open(os.path.join(ROOT, "docs", "validation.md")) as f:
            doc = f.read()
        for name in self.claims:
            self.assertTrue(f"validation/run {name}" in doc, f"docs/validation.md does not cite claim {name}")

    def test_unknown_name_is_a_usage_error(self):
        p = subprocess.run([RUN, "no-such-claim"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no-such-claim", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)


class ProgramRun(unittest.TestCase):
    def test_returns_when_the_program_exits_though_its_child_holds_the_output(self):
        sys.path.insert(0, HERE)
        from program_run import run_program

        # The program starts a child that keeps its stdout and stderr for 60 s (as a compile
        # worker pool can), prints the child's pid and exits.
        prog = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                "print(p.pid); sys.stderr.write('bye')")
        began = time.monotonic()
        proc = run_program([sys.executable, "-c", prog], timeout=50)
        elapsed = time.monotonic() - began
        os.kill(int(proc.stdout.split()[0]), signal.SIGKILL)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stderr, "bye")
        self.assertLess(elapsed, 30)  # With pipes it waits the child's 60 s (or times out).


class PyzooResiduals(unittest.TestCase):
    def test_each_check_has_its_error_and_an_unapplied_finding_says_so(self):
        rows = [{"case": "attention_bidir", "residual": "kernel-fusion", "estimate": 1.29, "applied": "compile",
                 "speedup": 1.20},
                {"case": "numpy_aug", "residual": "launch-bound", "estimate": 2.42, "applied": None, "speedup": None},
                {"case": "lstm", "residual": "launch-bound", "estimate": 1.5, "applied": "graph", "speedup": None}]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
            f.flush()
            out = subprocess.run([sys.executable, os.path.join(HERE, "pyzoo", "table.py"), "--residuals", f.name,
                                  "--markdown"], capture_output=True, text=True, check=True).stdout.splitlines()
        self.assertEqual(out[2], "| attention_bidir | kernel-fusion | x1.29 | compile | x1.20 | +8% |")
        self.assertEqual(out[3], "| numpy_aug | launch-bound | x2.42 | no way here | - | - |")
        self.assertEqual(out[4], "| lstm | launch-bound | x1.50 | graph | failed | - |")


if __name__ == "__main__":
    unittest.main()
