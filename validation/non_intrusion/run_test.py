#!/usr/bin/env python3
"""ctest validation_non_intrusion_runner: the non-intrusion runner's pairs, table and --resume,
with the programs and `gpuscope` replaced by stand-ins (no GPU, no torch): what it compares and
keeps, not what a GPU measures."""
import contextlib
import io
import json
import os
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.modules["programs"] = types.SimpleNamespace(ROWS=["eager", "compile", "noisy", "crash"])
import run  # noqa: E402


class Runner(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="gpuscope-ni-test-")
        self.calls = []
        run.subprocess.run = self.fake
        run.run_program = lambda cmd, env=None, timeout=900: self.fake(cmd, env=env)
        run.RUN_ARGS.clear()
        run.TRACED_ENV.clear()
        self.envs = []

    def fake(self, cmd, **kwargs):
        """A program whose steps take 2.0 ms untraced and 2.1 ms traced; analyze finds 30 steps.
        `noisy` gives other losses in every run, traced or not; `crash` dies traced."""
        self.calls.append(cmd)
        self.envs.append(kwargs.get("env"))
        if cmd[1] == "analyze":
            doc = {"devices": [{"window_us": 1, "steps": {"source": "optimizer", "count": 30, "mean_ms": 2.2,
                                                          "list": [{"duration_ms": 2.1}] * 30, "skipped_warmup": 0},
                                "findings": [{"id": "launch-bound", "est_speedup": 1.5}]}]}
            return types.SimpleNamespace(returncode=0, stdout=json.dumps(doc), stderr="")
        traced = cmd[1] == "run"
        if traced:
            with open(cmd[cmd.index("-o") + 1], "w") as f:
                f.write("capture")
        if traced and "crash" in cmd:
            return types.SimpleNamespace(returncode=1, stdout="", stderr="the cause\n" + "noise\n" * 5)
        losses = [1.0 + (len(self.calls) if "noisy" in cmd else 0)] * 20
        env = kwargs.get("env") or {}
        # Under --split: sync records cost 0.3 ms a step, tracing turned off nothing.
        step = 2.0 if not traced or env.get("GPUSCOPE_DISABLE") == "1" else 2.4 if env.get("GPUSCOPE_KINDS_ON") else 2.1
        with open(cmd[cmd.index("--result") + 1], "w") as f:
            json.dump({"step_ms": [step] * 30, "losses": losses,
                       "dynamo": {"unique_graphs": 1, "graph_breaks": 0, "recompiles": 0}}, f)
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    def table(self, *args):
        sys.argv = ["run.py", "--work", self.work, "--gpuscope", "gpuscope", *args]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            run.main()
        return out.getvalue()

    def test_traced_env_reaches_the_traced_runs_only(self):
        out = self.table("--pairs", "1", "--rows", "eager", "--no-warm", "--traced-env", "GPUSCOPE_PY_SAMPLE_HZ=0")
        self.assertIn("traced runs with GPUSCOPE_PY_SAMPLE_HZ=0", out)
        runs = [(cmd[1] == "run", env) for cmd, env in zip(self.calls, self.envs) if cmd[1] != "analyze"]
        self.assertEqual(sorted(traced for traced, _ in runs), [False, True])
        for traced, env in runs:
            if traced:
                self.assertEqual(env["GPUSCOPE_PY_SAMPLE_HZ"], "0")
            else:
                self.assertIsNone(env)
        with self.assertRaises(SystemExit):
            with contextlib.redirect_stderr(io.StringIO()):
                self.table("--traced-env", "NOVALUE")

    def test_pairs_are_interleaved_and_the_table_compares_them(self):
        out = self.table("--pairs", "2")
        self.assertIn("2 interleaved pairs per row", out)
        self.assertIn("| eager | 2.00 | 2.10 | +5.0% | 1/0/0 -> 1/0/0 | yes | "
                      "optimizer 30 x 2.10 ms; top: launch-bound x1.50 (30 x 2.10 ms) |", out)
        # Losses that differ between untraced runs are no evidence against tracing.
        self.assertIn("| not deterministic (untraced runs differ) |", out)
        # A failed run keeps its whole output.
        self.assertIn("| crash | failed:", out)
        with open(os.path.join(self.work, "crash-t0.failed.log")) as f:
            self.assertIn("the cause", f.read())
        programs = [c for c in self.calls if c[1] != "analyze"]
        # One untimed warm run per row, then per pair untraced/traced, the order swapped each pair.
        self.assertEqual([("run" if c[1] == "run" else "u") for c in programs if "eager" in c],
                         ["u", "u", "run", "run", "u"])
        # Traced runs are calibrated: the findings leave the tracer's own cost out.
        self.assertFalse([c for c in programs if c[1] == "run" and "--no-calibrate" in c])
        # The captures are analysed at once and not kept, but for a failed run's.
        self.assertEqual([f for f in os.listdir(self.work) if f.endswith(".gpuscope")], ["crash-t0.gpuscope"])
        # The table of the pairs so far is kept after every pair: a sitting cut short keeps it.
        with open(os.path.join(self.work, "table.md")) as f:
            self.assertEqual(f.read(), out)

    def test_split_runs_each_condition_in_rounds_of_alternating_order(self):
        out = self.table("--split", "eager", "--pairs", "2", "--steps", "30")
        programs = [(c, e) for c, e in zip(self.calls, self.envs) if c[1] != "analyze"]
        # One warm run, then two rounds of every condition; no capture is analysed.
        self.assertEqual(len(programs), 1 + 2 * len(run.SPLIT))
        self.assertFalse([c for c in self.calls if c[1] == "analyze"])
        first = [e for _, e in programs[1:1 + len(run.SPLIT)]]
        second = [e for _, e in programs[1 + len(run.SPLIT):]]
        self.assertEqual(first, second[::-1])
        for (cmd, env), (_, _, want) in zip(programs[1:], run.SPLIT):
            profiler = (want or {}).get(run.PROFILER_KEY)
            if profiler:
                # The peer's conditions: the program inside torch.profiler, no gpuscope at all.
                self.assertEqual(cmd[1:4], [run.PROFILER, profiler, run.PROGRAMS])
                self.assertIsNone(env)
                continue
            self.assertEqual(cmd[1] == "run", want is not None)
            if want:
                self.assertEqual({k: env[k] for k in want}, want)
            if cmd[1] == "run":
                self.assertIn("--no-calibrate", cmd)
        self.assertIn("| untraced | 2.000, 2.000 | 2.000 |  |", out)
        self.assertIn("| no bootstrap, + SYNCHRONIZATION records | 2.400, 2.400 | 2.400 | +20.0% |", out)
        self.assertIn("| CUPTI off: bootstrap and cuBLAS interposer only | 2.000, 2.000 | 2.000 | +0.0% |", out)
        with self.assertRaises(SystemExit):
            with contextlib.redirect_stderr(io.StringIO()):
                self.table("--split", "nosuchrow")

    def test_split_conditions_keeps_untraced_and_the_named_ones(self):
        before = len(self.calls)
        out = self.table("--split", "eager", "--pairs", "1", "--steps", "30", "--conditions", "traced,kernels")
        programs = [c for c in self.calls[before:] if c[1] != "analyze"]
        self.assertEqual(len(programs), 1 + 3)  # the warm run, then untraced, traced, kernels
        self.assertIn("| untraced |", out)
        self.assertIn("| no bootstrap, kernel records only |", out)
        self.assertNotIn("stack sampler off", out)
        with self.assertRaises(SystemExit):
            with contextlib.redirect_stderr(io.StringIO()):
                self.table("--split", "eager", "--conditions", "traced,nosuch")

    def test_resume_reuses_the_kept_runs_and_adds_pairs(self):
        self.table("--pairs", "1")
        before = len(self.calls)
        out = self.table("--pairs", "2", "--resume")
        self.assertIn("2 interleaved pairs per row", out)
        new = [c for c in self.calls[before:] if c[1] != "analyze"]
        # The second pair of each row only, no warm run, no first pair; the crashed row tries its
        # failed run again (it kept no result) and goes no further.
        self.assertEqual(len(new), 7)
        self.assertTrue(all(c[c.index("--result") + 1].endswith(("u1.json", "t1.json")) for c in new if "crash" not in c))


class UnderProfiler(unittest.TestCase):
    """under_profiler.py runs the program whole inside one torch.profiler.profile (a stand-in)."""

    def test_the_program_runs_inside_the_profile_with_its_own_argv(self):
        import under_profiler
        seen = {}

        class Profile:
            def __init__(self, activities):
                seen["activities"] = activities

            def __enter__(self):
                seen["inside"] = True

            def __exit__(self, *exc):
                seen["inside"] = False

        stub = types.SimpleNamespace(profile=Profile, ProfilerActivity=types.SimpleNamespace(CPU="C", CUDA="G"))
        sys.modules["torch"] = types.SimpleNamespace(profiler=stub)
        sys.modules["torch.profiler"] = stub
        work = tempfile.mkdtemp(prefix="gpuscope-ni-test-")
        prog = os.path.join(work, "prog.py")
        with open(prog, "w") as f:
            f.write("import sys, json\n"
                    "import under_profiler_probe\n"
                    "json.dump({'argv': sys.argv}, open(sys.argv[1], 'w'))\n")
        with open(os.path.join(work, "under_profiler_probe.py"), "w") as f:
            f.write("")  # importable only if the program's folder is on sys.path, as for `python3 prog.py`
        out = os.path.join(work, "out.json")
        argv, path0 = sys.argv, sys.path[0]
        try:
            sys.argv = ["under_profiler.py", "cpu,cuda", prog, out]
            self.assertEqual(under_profiler.main(), 0)
        finally:
            sys.argv, sys.path[0] = argv, path0
            for name in ("torch", "torch.profiler", "under_profiler_probe"):
                sys.modules.pop(name, None)
        self.assertEqual(seen, {"activities": ["C", "G"], "inside": False})
        with open(out) as f:
            self.assertEqual(json.load(f)["argv"], [prog, out])
        sys.argv = ["under_profiler.py", "cpu"]
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(under_profiler.main(), 2)
        self.assertIn("usage: under_profiler.py ACTIVITIES PROGRAM", err.getvalue())
        sys.argv = ["under_profiler.py", "cpu,gpu", prog]
        try:
            sys.modules["torch"] = types.SimpleNamespace(profiler=stub)
            sys.modules["torch.profiler"] = stub
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(under_profiler.main(), 2)
            self.assertIn("activity gpu unknown", err.getvalue())
        finally:
            sys.argv = argv
            sys.modules.pop("torch", None)
            sys.modules.pop("torch.profiler", None)


if __name__ == "__main__":
    unittest.main()
