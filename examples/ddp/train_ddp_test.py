"""Tests of the DDP example's torch-free parts (python3 examples/ddp/train_ddp_test.py)."""

import contextlib
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_ddp as t  # noqa: E402


class ArgsTest(unittest.TestCase):
    def bad(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as e:
            t.parse_args(list(argv))
        self.assertEqual(e.exception.code, 2)
        return err.getvalue()

    def test_defaults_are_the_healthy_gpt2_small_run(self):
        a = t.parse_args([])
        self.assertEqual((a.layers, a.d_model, a.heads, a.seq), (12, 768, 12, 1024))
        self.assertFalse(a.no_overlap)
        self.assertFalse(a.straggler)
        self.assertEqual(a.bucket_cap_mb, 25.0)

    def test_switches(self):
        a = t.parse_args(["--no-overlap", "--straggler", "--straggler-rank", "0", "--straggler-ms", "20"])
        self.assertTrue(a.no_overlap and a.straggler)
        self.assertEqual((a.straggler_rank, a.straggler_ms), (0, 20.0))

    def test_bad_values_are_usage_errors(self):
        self.assertIn("--d-model must be a multiple of --heads", self.bad("--heads", "5"))
        self.assertIn("--warmup", self.bad("--steps", "3", "--warmup", "3"))
        self.assertIn("--bucket-cap-mb", self.bad("--bucket-cap-mb", "0"))
        self.assertIn("--batch", self.bad("--batch", "0"))
        self.assertIn("--straggler-ms", self.bad("--straggler-ms", "-1"))

    def test_only_the_chosen_rank_straggles_and_only_in_a_job(self):
        a = t.parse_args(["--straggler"])
        self.assertEqual([t.straggles(a, r, 4) for r in range(4)], [False, True, False, False])
        self.assertFalse(t.straggles(a, 0, 1))
        self.assertFalse(t.straggles(t.parse_args([]), 1, 4))
        self.assertTrue(t.straggles(t.parse_args(["--straggler", "--straggler-rank", "5"]), 1, 4))

    def test_buckets_follow_backward_order_and_the_cap(self):
        self.assertEqual(t.buckets([10, 10, 10, 10], 20), [[3, 2], [1, 0]])
        self.assertEqual(t.buckets([5, 50, 5], 20), [[2], [1], [0]])  # Too large: alone.
        self.assertEqual(t.buckets([], 20), [])
        flat = sorted(i for b in t.buckets([3, 1, 4, 1, 5, 9, 2, 6], 8) for i in b)
        self.assertEqual(flat, list(range(8)))

    def test_flops_per_token_is_palm(self):
        a = t.parse_args([])
        self.assertEqual(t.flops_per_token(1000, a), 6000 + 12 * 12 * 12 * 64 * 1024)


if __name__ == "__main__":
    unittest.main(verbosity=1)
