"""Tests that decode.py's --graph step (StaticDecode) decodes what the eager step decodes.

Needs PyTorch (a CPU build is enough) and skips without it; not part of ctest, since CI has no
torch. Run it with

  python3 examples/serve/decode_test.py

The model is shrunk (2 layers, 4 heads, width 64, 64 positions, vocabulary 256) and runs in
fp32 on the CPU, where the static step runs eagerly: the same code the CUDA graph captures.
"""

import argparse
import contextlib
import io
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    import decode

VOCAB = 256


def args(**kw):
    base = dict(scheduler="continuous", batch=4, rate=1e9, vocab=VOCAB, requests=10, prompt=5,
                new_tokens=9, seed=3, device="cpu", graph=False, overlap=False, compile=False)
    base.update(kw)
    return argparse.Namespace(**base)


@unittest.skipIf(torch is None, "needs PyTorch (pip install torch)")
class StaticDecodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.size = (decode.LAYERS, decode.HEADS, decode.DMODEL, decode.MAX_POS)
        decode.set_model_size(2, 4, 64, 64)
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        decode.set_model_size(*cls.size)

    def serve_tokens(self, **kw):
        out = {}
        result = decode.serve(args(**kw), tokens_out=out)
        return result, out

    def check_same_tokens(self, overlap=False, **kw):
        eager, eager_tokens = self.serve_tokens(graph=False, **kw)
        static, static_tokens = self.serve_tokens(graph=True, overlap=overlap, **kw)
        self.assertEqual(static["overlap"], overlap)
        self.assertEqual((eager["graph"], static["graph"]), (False, True))
        self.assertFalse(static["cuda_graph"])  # CPU: the static step runs eagerly.
        a = args(**kw)
        self.assertEqual(static["tokens"], a.requests * a.new_tokens)
        self.assertEqual(sorted(static_tokens), list(range(a.requests)))
        for rid, tokens in eager_tokens.items():
            self.assertEqual(len(tokens), 1 + a.new_tokens)
            self.assertEqual(static_tokens[rid], tokens, f"request {rid}")
        # Not a degenerate comparison: the requests decode different tokens.
        self.assertGreater(len({t for ts in eager_tokens.values() for t in ts}), 10)

    def test_same_greedy_tokens_when_all_arrive_at_once(self):
        # 10 requests, 4 slots: three waves, slots retired and reused.
        self.check_same_tokens()

    def test_same_greedy_tokens_with_staggered_arrivals(self):
        # Arrivals during decoding: slots at different positions in one iteration.
        self.check_same_tokens(rate=400.0, requests=12, batch=3, new_tokens=12, seed=5)

    def test_overlapped_readback_gives_the_same_tokens(self):
        # --overlap queues each iteration before reading the previous one: a finished request
        # runs once more in its slot and that token is dropped, so the tokens are the same.
        self.check_same_tokens(overlap=True)
        self.check_same_tokens(overlap=True, rate=400.0, requests=12, batch=3, new_tokens=12, seed=5)

    def test_overlap_needs_graph(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit_:
            decode.main(["--overlap", "--device", "cpu", "--prompt", "8", "--new-tokens", "8"])
        self.assertEqual(exit_.exception.code, 2)
        self.assertIn("--overlap needs --graph", err.getvalue())

    def test_compile_needs_graph(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit_:
            decode.main(["--compile", "--device", "cpu", "--prompt", "8", "--new-tokens", "8"])
        self.assertEqual(exit_.exception.code, 2)
        self.assertIn("--compile needs --graph", err.getvalue())

    def test_static_step_logits_match_eager_forward_per_slot(self):
        torch.manual_seed(0)
        model = decode.GPT(VOCAB).eval()
        slots, span = 5, 20
        shape = (slots, decode.HEADS, decode.MAX_POS, decode.HEAD_DIM)
        caches = [(torch.zeros(shape), torch.zeros(shape)) for _ in range(decode.LAYERS)]
        with torch.inference_mode():
            step = decode.StaticDecode(model, caches, slots, span, torch.device("cpu"), capture=False)
            # Slots 4, 1 and 2 hold requests with prompts of 3, 7 and 11 tokens; 0 and 3 are free,
            # 3 with a position at the end of the span (a retired slot) that must stay in range.
            active = {4: 3, 1: 7, 2: 11}
            for slot, n in active.items():
                prompt = torch.randint(0, VOCAB, (1, n))
                first = model(prompt, caches, [slot], [0]).argmax(-1)
                step.admit(torch.tensor([slot]), first, n)
            step.pos[3] = span - 1
            eager_caches = [(k.clone(), v.clone()) for k, v in caches]
            order = sorted(active)
            last = step.tokens[order, 0].clone()
            pos = [active[s] for s in order]
            for _ in range(6):
                want = model(last.view(-1, 1), eager_caches, order, pos)
                got = step()
                torch.testing.assert_close(step.logits[order], want, atol=1e-5, rtol=1e-5)
                self.assertEqual(got[order].tolist(), want.argmax(-1).tolist())
                self.assertEqual(step.pos[3].item(), span - 1)
                last, pos = want.argmax(-1), [p + 1 for p in pos]
            self.assertEqual(step.pos[order].tolist(), pos)

    def test_capture_warms_up_on_a_side_stream_then_replays(self):
        # The capture's control flow, with torch.cuda's graph API faked on the CPU (a real
        # capture needs a GPU: decode.py --graph there). The fake capture runs the step once.
        calls = []

        class FakeGraph:
            def replay(self):
                calls.append("replay")
                step._step()

        @contextlib.contextmanager
        def recorded(name, *_):
            calls.append(name)
            yield

        real_step = decode.StaticDecode._step

        def counted_step(self):
            calls.append("step")
            real_step(self)

        torch.manual_seed(0)
        model = decode.GPT(VOCAB).eval()
        shape = (3, decode.HEADS, decode.MAX_POS, decode.HEAD_DIM)
        caches = [(torch.zeros(shape), torch.zeros(shape)) for _ in range(decode.LAYERS)]
        fakes = dict(Stream=mock.MagicMock(), current_stream=mock.MagicMock(), CUDAGraph=FakeGraph,
                     stream=lambda s: recorded("side"), graph=lambda g, **kw: recorded("capture"))
        with torch.inference_mode(), mock.patch.multiple(torch.cuda, **fakes), \
                mock.patch.object(decode.StaticDecode, "_step", counted_step):
            step = decode.StaticDecode(model, caches, 3, 16, torch.device("cpu"), capture=True)
            self.assertEqual(calls, ["side", "step", "step", "step", "capture", "step"])
            self.assertEqual(step.pos.tolist(), [0, 0, 0])
            step.admit(torch.tensor([1]), torch.tensor([7]), 4)
            del calls[:]
            got = step()
            self.assertEqual(calls, ["replay", "step"])
        self.assertEqual(step.pos.tolist(), [1, 5, 1])
        self.assertEqual(got.tolist(), step.logits.argmax(-1).tolist())

    def test_graph_is_refused_for_other_schedulers(self):
        for scheduler in ("one", "static"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit_:
                decode.main(["--scheduler", scheduler, "--graph", "--device", "cpu",
                             "--prompt", "8", "--new-tokens", "8"])
            self.assertEqual(exit_.exception.code, 2)
            self.assertIn("--graph needs --scheduler continuous", err.getvalue())


if __name__ == "__main__":
    unittest.main()
