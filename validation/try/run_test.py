#!/usr/bin/env python3
"""ctest validation_try_runner: the --try runner's table and --resume, with the programs and
`gpuscope` replaced by stand-ins (no GPU, no torch): what it compares and keeps, not what a GPU
measures."""
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
sys.modules["programs"] = types.SimpleNamespace(PROGRAMS={"mlp_fp32": ("tf32", ""), "loader": ("dataloader", "")})
import run  # noqa: E402


class Runner(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="gpuscope-try-test-")
        self.calls = []
        self.trial_step_ms = 10.1  # the as-is trial's step
        run.subprocess.run = self.fake
        run.run_program = lambda cmd, env=None, timeout=900: self.fake(cmd, env=env)

    def fake(self, cmd, **kwargs):
        """Untraced: 10 ms a step as is, 5 ms fixed. --try: the as-is trial 10.1 ms, tf32 x1.9;
        the dataloader trial gives no measurement. The as-is capture's findings: precision-fp32
        x2.3 first."""
        self.calls.append(cmd)
        if cmd[1] == "analyze":
            findings = [{"id": "launch-bound", "est_speedup": 1.2}, {"id": "precision-fp32", "est_speedup": 2.3}]
            return types.SimpleNamespace(returncode=0, stdout=json.dumps({"devices": [{"findings": findings}]}),
                                         stderr="")
        if cmd[1] == "run":
            name = cmd[cmd.index("--") + 3]
            tries = ([{"label": "tf32", "speedup": 1.9, "speedup_interval_95": [1.85, 1.95],
                       "estimated_speedup": 2.1, "error": None, "not_applied": None}] if name == "mlp_fp32" else
                     [{"label": "dataloader", "speedup": None, "error": "the program exited with 1", "not_applied": None}])
            capture = os.path.join(self.work, name + ".gpuscope")
            open(capture, "w").close()
            # What `--try -o` keeps: each run's timed steps. The tf32 runs stall every fourth
            # step on the host (a median leaves that out, a mean does not).
            folder = cmd[cmd.index("-o") + 1]
            os.makedirs(folder, exist_ok=True)
            for label, host, device in (("as-is", [10.1] * 8, [10.1] * 8), ("as-is.2", [10.1] * 8, [10.1] * 8),
                                        ("tf32", [5.0, 5.0, 5.0, 9.0] * 2, [5.0] * 8)):
                with open(os.path.join(folder, label + ".result.json"), "w") as f:
                    json.dump({"host_step_ns": [int(v * 1e6) for v in host],
                               "device_step_ns": [int(v * 1e6) for v in device]}, f)
            doc = {"as_is": {"step_ms_median": self.trial_step_ms, "capture": capture}, "tries": tries}
            return types.SimpleNamespace(returncode=0, stdout=json.dumps(doc), stderr="")
        # The loader, fixed: its workers deliver three batches in 2 ms each, then one in 60 ms.
        # The as-is program's second run is 4% slower than its first (a host whose speed moves).
        fixed = [2.0, 2.0, 2.0, 60.0] * 10 if "loader" in cmd else [5.0] * 40
        result = cmd[cmd.index("--result") + 1]
        as_is = [10.4 if "-1-0." in os.path.basename(result) else 10.0] * 40
        with open(result, "w") as f:
            json.dump({"step_ms": fixed if "--fixed" in cmd else as_is}, f)
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    def table(self, *args):
        sys.argv = ["run.py", "--work", self.work, "--gpuscope", "gpuscope", "--pairs", "2", *args]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            run.main()
        return out.getvalue()

    def test_each_program_is_a_row_with_its_error_and_drift(self):
        out = self.table()
        self.assertIn("| mlp_fp32 | tf32 | x2.04 | x1.90 (x1.85-x1.95) | -6.9% | -1.0% | 3.9% | x2.10 | +3% "
                      "| precision-fp32 x2.30 |", out)
        # dataloader compares mean steps, as its trial does: the stalls make the fix slower
        # (10.2 ms against 17.47 ms after step 10), where medians would say x5.10.
        self.assertIn("| loader | dataloader | x0.58 | no measurement (dataloader: the program exited with 1) |  |  "
                      "| 3.9% |", out)

    def test_a_trial_that_timed_another_step_is_noted(self):
        # The as-is trial's step 0.8 ms against the program's 10.2 ms: it timed a loop inside
        # the step, and the table says so under the row.
        self.assertNotIn("Note:", self.table("--programs", "mlp_fp32"))
        self.trial_step_ms = 0.8
        out = self.table("--programs", "mlp_fp32")
        self.assertIn("Note: mlp_fp32: the trial's as-is step (0.800 ms) is not the program's (10.200 ms "
                      "untraced)", out)

    def test_step_times_as_median_and_mean_on_each_clock(self):
        out = self.table("--programs", "mlp_fp32")
        self.assertIn("| mlp_fp32 | 10.200 / 10.200 | 5.000 / 5.000 | 10.100 / 10.100 | 10.100 / 10.100 | "
                      "5.000 / 6.000 | 5.000 / 5.000 |", out)

    def test_resume_makes_only_what_is_missing(self):
        self.table("--programs", "mlp_fp32")
        before = len(self.calls)
        out = self.table("--resume")
        self.assertIn("| mlp_fp32 | tf32 | x2.04 |", out)
        names = {c[c.index("--") + 3] if c[1] == "run" else c[2] for c in self.calls[before:] if c[1] != "analyze"}
        self.assertEqual(names, {"loader"})


if __name__ == "__main__":
    unittest.main()
