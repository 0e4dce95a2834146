"""Tests of the decode loop's torch-free scheduling (python3 examples/serve/scheduler_test.py)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scheduler as s  # noqa: E402


class SchedulerTest(unittest.TestCase):
    def reqs(self, n):
        return [s.Request(i, 0.1 * i, 8, 4) for i in range(n)]

    def test_stream_is_seeded_and_poisson(self):
        a, b = s.poisson_stream(2000, 50.0, 7), s.poisson_stream(2000, 50.0, 7)
        self.assertEqual([r.arrival_s for r in a], [r.arrival_s for r in b])
        self.assertNotEqual(a[0].arrival_s, s.poisson_stream(1, 50.0, 8)[0].arrival_s)
        mean_gap = a[-1].arrival_s / len(a)
        self.assertAlmostEqual(mean_gap, 1 / 50.0, delta=0.1 / 50.0)

    def test_one_at_a_time(self):
        w = self.reqs(3)
        self.assertEqual(s.admit("one", 8, w, [], True), w[:1])
        self.assertEqual(s.admit("one", 8, w, w[:1], True), [])

    def test_static_waits_for_a_full_batch_then_flushes_at_the_end(self):
        w = self.reqs(3)
        self.assertEqual(s.admit("static", 4, w, [], True), [])
        self.assertEqual(s.admit("static", 4, w, [], False), w)
        self.assertEqual(s.admit("static", 2, w, [], True), w[:2])
        self.assertEqual(s.admit("static", 2, w, w[:1], True), [])

    def test_continuous_fills_free_slots(self):
        w = self.reqs(5)
        self.assertEqual(s.admit("continuous", 4, w, w[:3], True), w[:1])
        self.assertEqual(s.admit("continuous", 4, w, w[:4], True), [])
        self.assertEqual(s.admit("continuous", 4, w, [], True), w[:4])
        with self.assertRaises(ValueError):
            s.admit("fifo", 4, w, [], True)

    def test_latencies_and_percentiles(self):
        r = s.Request(0, 1.0, 8, 3, 3, [1.5, 1.6, 1.8])
        lat = s.token_latencies_s([r])
        self.assertEqual(len(lat), 3)
        for got, want in zip(lat, [0.5, 0.1, 0.2]):
            self.assertAlmostEqual(got, want)
        self.assertEqual(s.percentile([3, 1, 2], 0.5), 2)
        self.assertEqual(s.percentile([3, 1, 2], 0.99), 3)
        self.assertIsNone(s.percentile([], 0.5))


if __name__ == "__main__":
    unittest.main()
