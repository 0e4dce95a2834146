#!/usr/bin/env python3
"""Tests of `gpuscope run --try`'s fixes (gpuscope_boot/_gpuscope_try.py) against a stub of the
torch API they touch: what each fix changes, that it is undone, that a fix that cannot apply
says why and leaves the program as it was. A stub proves the mechanism only; real PyTorch on a
GPU proves the behaviour."""
import json
import os
import pickle
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpuscope_boot"))
import _gpuscope_try as tr  # noqa: E402


def stub_torch():
    torch = types.SimpleNamespace()
    torch.bfloat16 = "bfloat16"
    precision = {"v": "highest"}
    torch.get_float32_matmul_precision = lambda: precision["v"]
    torch.set_float32_matmul_precision = lambda v: precision.__setitem__("v", v)
    torch.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(allow_tf32=False))
    torch.autocast_log = []

    autocast_on = {"v": False}

    class Autocast:
        def __init__(self, device_type, dtype):
            self.args = (device_type, dtype)

        def __enter__(self):
            torch.autocast_log.append(("enter",) + self.args)
            self.prev, autocast_on["v"] = autocast_on["v"], True

        def __exit__(self, *a):
            torch.autocast_log.append(("exit",) + self.args)
            autocast_on["v"] = self.prev
    torch.autocast = Autocast
    torch.is_autocast_enabled = lambda device_type: autocast_on["v"]

    class Module:
        def __call__(self, *args):
            return self.forward(*args)

        def parameters(self):
            for child in getattr(self, "layers", ()):
                yield from child.parameters()
            yield from getattr(self, "weights", ())

    class Sequential(Module):
        def __init__(self, *layers):
            self.layers = layers

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class Probe(Module):
        """Records whether autocast was on when its forward ran."""
        def __init__(self):
            self.seen = []
            self.weights = ["w"]

        def forward(self, x):
            self.seen.append(autocast_on["v"])
            return x

    class Loss(Probe):
        """A Probe without parameters, as a loss module."""
        def __init__(self):
            super().__init__()
            self.weights = []
    torch.nn = types.SimpleNamespace(Module=Module, Sequential=Sequential, Probe=Probe, Loss=Loss)
    torch.compiled_calls = []

    class OptimizedModule(Module):
        """torch.compile's wrapper: records each call, then runs the module (or fails to
        compile a module named in torch.uncompilable at its first call)."""
        def __init__(self, mod, mode=None):
            self._orig_mod, self.mode = mod, mode

        def parameters(self):
            return self._orig_mod.parameters()

        def forward(self, *args):
            if type(self._orig_mod).__name__ in torch.uncompilable:
                raise RuntimeError("dynamo: cannot compile this\nmore")
            torch.compiled_calls.append((type(self._orig_mod).__name__, autocast_on["v"]) +
                                        ((self.mode,) if self.mode else ()))
            return self._orig_mod(*args)
    torch.uncompilable = set()
    torch.compile = OptimizedModule
    torch._dynamo = types.SimpleNamespace(eval_frame=types.SimpleNamespace(OptimizedModule=OptimizedModule))

    class Optimizer:
        def __init__(self, params, lr=0.1, fused=None, foreach=None):
            self.params = list(params)
            if fused and any(p != "cuda" for p in self.params):
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors on CUDA\nmore")
            self.fused, self.foreach = fused, foreach

        def step(self):
            pass

    class Adam(Optimizer):
        pass

    class AdamW(Adam):  # As in torch: AdamW's __init__ goes through Adam's.
        def __init__(self, params, lr=0.1, fused=None, foreach=None):
            super().__init__(params, lr=lr, fused=fused, foreach=foreach)

    class SGD(Optimizer):
        pass
    torch.optim = types.SimpleNamespace(Adam=Adam, AdamW=AdamW, SGD=SGD, Optimizer=Optimizer)

    class Dataset:
        pass

    class IterableDataset(Dataset):
        pass

    class DataLoader:
        def __init__(self, dataset, batch_size=1, num_workers=0, pin_memory=False, persistent_workers=False,
                     worker_init_fn=None):
            self.num_workers, self.pin_memory, self.persistent_workers = num_workers, pin_memory, persistent_workers
            self.worker_init_fn = worker_init_fn
    torch.utils = types.SimpleNamespace(data=types.SimpleNamespace(
        DataLoader=DataLoader, Dataset=Dataset, IterableDataset=IterableDataset))

    class Device:
        def __init__(self, spec):
            if isinstance(spec, Device):
                spec = spec.type
            spec = "cuda" if isinstance(spec, int) else spec
            if spec not in ("cpu", "cuda") and not spec.startswith("cuda:"):
                raise RuntimeError("Expected one of cpu, cuda device type at start of device string: " + spec)
            self.type = spec.split(":")[0]
    torch.device = Device
    torch.compiler = types.SimpleNamespace(is_compiling=lambda: torch.compiling)
    torch.compiling = False

    class Tensor:
        def __init__(self, v, n=1, device="cpu", pinned=False):
            self.v, self.n, self.backwards = v, n, 0
            self.device, self.pinned, self.copied = Device(device), pinned, []

        def is_pinned(self):
            return self.pinned

        def to(self, *args, **kwargs):
            self.copied.append((args, kwargs))
            return self

        def cuda(self, device=None, non_blocking=False):
            self.copied.append(("cuda", non_blocking))
            return self

        def numel(self):
            return self.n

        def detach(self):
            return Tensor(self.v, self.n)

        def __float__(self):
            return float(self.v)

        def backward(self):
            self.backwards += 1
    torch.Tensor = Tensor

    class Event:
        clock = [0]  # The stub GPU's time in ms, advanced by the test.

        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = Event.clock[0]

        def elapsed_time(self, end):
            return end.at - self.at
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, is_current_stream_capturing=lambda: False,
                                       Event=Event, synchronize=lambda: None)
    return torch


class TryTest(unittest.TestCase):
    def setUp(self):
        tr.outcome.clear()
        tr._losses.clear()
        self.torch = stub_torch()
        self.undo = []

    def tearDown(self):
        for u in reversed(self.undo):
            u()

    def apply(self, *fixes):
        self.undo += tr.apply(self.torch, list(fixes))

    def test_nothing_is_requested_without_gpuscope_try(self):
        os.environ.pop("GPUSCOPE_TRY", None)
        self.assertEqual(tr.requested(), [])
        self.assertEqual(tr.requested("tf32,caching-allocator,dataloader"), ["tf32", "dataloader"])

    def test_tf32_sets_precision_and_is_undone(self):
        t = self.torch
        self.apply("tf32")
        self.assertEqual(t.get_float32_matmul_precision(), "high")
        self.assertTrue(t.backends.cudnn.allow_tf32)
        self.assertTrue(tr.outcome["tf32"]["applied"])
        for u in self.undo:
            u()
        self.undo = []
        self.assertEqual(t.get_float32_matmul_precision(), "highest")
        self.assertFalse(t.backends.cudnn.allow_tf32)

    def test_tf32_already_on_is_not_applicable(self):
        self.torch.set_float32_matmul_precision("high")
        self.torch.backends.cudnn.allow_tf32 = True
        self.apply("tf32")
        self.assertFalse(tr.outcome["tf32"]["applied"])
        self.assertIn("already allows TF32", tr.outcome["tf32"]["details"][0])

    def test_bf16_autocasts_each_outermost_module_call_from_the_second_step(self):
        t = self.torch
        inner = t.nn.Probe()
        model = t.nn.Sequential(t.nn.Probe(), inner)
        self.apply("bf16")
        model(1)  # The first step runs as it is: CUDA may not be initialised yet.
        self.assertEqual(t.autocast_log, [])
        tr.on_step_end()
        self.assertTrue(tr.outcome["bf16"]["applied"])
        model(1)
        model(1)
        # One autocast region per outermost call, entered and left (its cache of cast weights
        # dropped before the optimizer updates them); the inner module runs inside it.
        self.assertEqual(t.autocast_log, [("enter", "cuda", "bfloat16"), ("exit", "cuda", "bfloat16")] * 2)
        self.assertEqual(inner.seen, [False, True, True])
        self.assertFalse(t.is_autocast_enabled("cuda"))  # Backward and the optimizer run outside it.
        for u in self.undo:
            u()
        self.undo = []
        model(1)
        self.assertEqual(len(t.autocast_log), 4)
        self.assertEqual(inner.seen[-1], False)

    def test_bf16_passes_straight_through_while_dynamo_traces(self):
        t = self.torch
        compiling = {"v": False}
        t.compiler = types.SimpleNamespace(is_compiling=lambda: compiling["v"])
        model = t.nn.Probe()
        self.apply("bf16")
        tr.on_step_end()
        compiling["v"] = True
        model(1)
        self.assertEqual(t.autocast_log, [])
        self.assertEqual(model.seen, [False])
        compiling["v"] = False
        model(1)
        self.assertEqual(model.seen, [False, True])

    def test_compile_runs_each_outermost_module_compiled_from_the_second_step(self):
        t = self.torch
        inner = t.nn.Probe()
        model = t.nn.Sequential(t.nn.Probe(), inner)
        loss = t.nn.Loss()
        self.apply("compile")
        model(1)
        self.assertEqual(t.compiled_calls, [])  # The first step runs as it is.
        tr.on_step_end()
        model(1)
        loss(1)
        model(1)
        loss(1)
        # The compiled form runs the model; its submodules are not compiled apart; the loss
        # module, without parameters, runs as it is and is no failure of the fix.
        self.assertEqual(t.compiled_calls, [("Sequential", False)] * 2)
        self.assertEqual(loss.seen, [False, False])
        self.assertEqual(len(inner.seen), 3)
        self.assertEqual(tr.outcome["compile"],
                         {"applied": True, "details": ["torch.compile(Sequential), default mode, at its first call "
                                                       "after the first step"]})
        for u in self.undo:
            u()
        self.undo = []
        model(1)
        self.assertEqual(len(t.compiled_calls), 2)

    def test_reduce_overhead_compiles_with_cuda_graphs(self):
        t = self.torch
        model = t.nn.Sequential(t.nn.Probe())
        self.apply("reduce-overhead")
        model(1)
        tr.on_step_end()
        model(1)
        self.assertEqual(t.compiled_calls, [("Sequential", False, "reduce-overhead")])
        self.assertEqual(tr.outcome["reduce-overhead"],
                         {"applied": True, "details": ['torch.compile(Sequential), mode="reduce-overhead" (CUDA '
                                                       'graphs), at its first call after the first step']})

    def test_compile_leaves_what_the_program_compiles_itself_and_what_fails(self):
        t = self.torch
        own = t.compile(t.nn.Probe())
        failing = t.nn.Probe()
        t.uncompilable.add("Probe")
        self.apply("compile")
        tr.on_step_end()
        self.assertRaises(RuntimeError, own, 1)  # The program's own compiled module, as it is.
        self.assertEqual(failing(5), 5)  # Its compilation failed: it runs as it is.
        self.assertEqual(failing.seen, [False])
        self.assertEqual(failing(6), 6)
        self.assertFalse(tr.outcome["compile"]["applied"])
        self.assertEqual(tr.outcome["compile"]["details"],
                         ["the program compiles Probe itself", "Probe: dynamo: cannot compile this"])

    def test_bf16_and_compile_together_autocast_the_compiled_call(self):
        t = self.torch
        model = t.nn.Sequential(t.nn.Probe())
        self.apply("bf16", "compile")
        tr.on_step_end()
        model(1)
        self.assertEqual(t.compiled_calls, [("Sequential", True)])
        self.assertEqual(t.autocast_log, [("enter", "cuda", "bfloat16"), ("exit", "cuda", "bfloat16")])
        self.assertTrue(tr.outcome["bf16"]["applied"] and tr.outcome["compile"]["applied"])

    def test_bf16_leaves_a_program_that_autocasts_itself_as_it_is(self):
        t = self.torch
        model = t.nn.Probe()
        self.apply("bf16")
        tr.on_step_end()
        with t.autocast("cuda", "float16"):
            model(1)
        self.assertEqual(t.autocast_log, [("enter", "cuda", "float16"), ("exit", "cuda", "float16")])
        self.assertIn("the program autocasts this call itself", tr.outcome["bf16"]["details"])

    def test_bf16_failure_to_autocast_is_reported_and_the_program_runs(self):
        t = self.torch

        def unsupported(device_type, dtype):
            raise RuntimeError("Current CUDA Device does not support bfloat16")
        self.apply("bf16")
        t.autocast = unsupported
        tr.on_step_end()
        self.assertFalse(tr.outcome["bf16"]["applied"])
        self.assertIn("failed: Current CUDA Device does not support bfloat16", tr.outcome["bf16"]["details"])
        self.assertEqual(t.nn.Probe()(7), 7)

    def test_fused_optimizer_for_torch_classes_only(self):
        t = self.torch
        self.apply("fused-optimizer")
        self.assertTrue(t.optim.AdamW(iter(["cuda", "cuda"])).fused)
        self.assertTrue(t.optim.SGD(["cuda"]).fused)
        self.assertEqual(tr.outcome["fused-optimizer"]["details"], ["AdamW(fused=True)", "SGD(fused=True)"])

        class OwnStep(t.optim.Adam):
            def step(self):
                pass
        self.assertIsNone(OwnStep(["cuda"]).fused)
        self.assertIn("OwnStep has a step of its own", tr.outcome["fused-optimizer"]["details"])
        # The program's own choice stands; CPU parameters keep the optimizer as it was.
        self.assertFalse(t.optim.Adam(["cuda"], foreach=True).fused)
        cpu = t.optim.Adam(["cpu"])
        self.assertIsNone(cpu.fused)
        self.assertEqual(cpu.params, ["cpu"])
        self.assertIn("Adam: `fused=True` requires", tr.outcome["fused-optimizer"]["details"][-1])
        for u in self.undo:
            u()
        self.undo = []
        self.assertIsNone(t.optim.AdamW(["cuda"]).fused)

    def test_dataloader_gets_workers_unless_iterable(self):
        t = self.torch
        os.environ["GPUSCOPE_TRY_WORKERS"] = "3"
        try:
            self.apply("dataloader")
        finally:
            del os.environ["GPUSCOPE_TRY_WORKERS"]
        d = t.utils.data.DataLoader(t.utils.data.Dataset(), batch_size=4)
        self.assertEqual((d.num_workers, d.pin_memory, d.persistent_workers), (3, True, True))
        # Each worker limits its thread pools outside torch (threadpoolctl, where installed:
        # a stand-in here), then runs the program's own worker_init_fn.
        limited, seen = [], []
        sys.modules["threadpoolctl"] = types.SimpleNamespace(threadpool_limits=lambda limits: limited.append(limits))
        try:
            d.worker_init_fn(0)
            mine = t.utils.data.DataLoader(t.utils.data.Dataset(), worker_init_fn=seen.append)
            mine.worker_init_fn(1)
        finally:
            del sys.modules["threadpoolctl"]
        self.assertEqual(limited, [1, 1])
        self.assertEqual(seen, [1])
        pickle.dumps(d.worker_init_fn)  # a loader that spawns its workers pickles it
        d.worker_init_fn(2)  # without threadpoolctl the worker runs as it would
        self.assertIn("thread pools outside torch", tr.outcome["dataloader"]["details"][0])
        own = t.utils.data.DataLoader(t.utils.data.Dataset(), num_workers=2)
        self.assertEqual(own.num_workers, 2)
        it = t.utils.data.DataLoader(t.utils.data.IterableDataset())
        self.assertEqual(it.num_workers, 0)
        self.assertTrue(tr.outcome["dataloader"]["applied"])
        self.assertIn("its dataset is iterable: each worker would yield all of it", tr.outcome["dataloader"]["details"])

    def test_non_blocking_only_for_pinned_host_sources_copied_to_the_gpu(self):
        t = self.torch
        to, cuda = t.Tensor.to, t.Tensor.cuda
        self.apply("non-blocking")
        self.assertNotIn("non-blocking", tr.outcome)  # Nothing reported before a copy is changed.
        pinned, pageable, gpu = t.Tensor(1, pinned=True), t.Tensor(1), t.Tensor(1, device="cuda")
        pinned.to("cuda")
        dev = t.device("cuda:0")
        pinned.to(dev, dtype="float32")
        pinned.to(device=0)
        pinned.to(gpu)
        pinned.cuda()
        self.assertEqual(pinned.copied, [(("cuda",), {"non_blocking": True}),
                                         ((dev,), {"dtype": "float32", "non_blocking": True}),
                                         ((), {"device": 0, "non_blocking": True}),
                                         ((gpu,), {"non_blocking": True}),
                                         ("cuda", True)])
        self.assertTrue(tr.outcome["non-blocking"]["applied"])
        # Left as they are: a pageable source, a copy to the host, a dtype change, the
        # program's own choice (by keyword or position), code torch.compile traces.
        pageable.to("cuda")
        gpu.to("cpu")
        pinned.copied.clear()
        pinned.to("float32")
        pinned.to("cuda", non_blocking=False)
        pinned.to("cuda", "float32", False)
        t.compiling = True
        pinned.to("cuda")
        self.assertEqual(pageable.copied, [(("cuda",), {})])
        self.assertEqual(gpu.copied, [(("cpu",), {})])
        self.assertEqual(pinned.copied, [(("float32",), {}), (("cuda",), {"non_blocking": False}),
                                         (("cuda", "float32", False), {}), (("cuda",), {})])
        for u in self.undo:
            u()
        self.undo = []
        self.assertIs(t.Tensor.to, to)
        self.assertIs(t.Tensor.cuda, cuda)

    def test_a_failing_fix_is_reported_and_the_rest_applied(self):
        del self.torch.utils
        self.apply("dataloader", "tf32")
        self.assertFalse(tr.outcome["dataloader"]["applied"])
        self.assertTrue(tr.outcome["dataloader"]["details"][0].startswith("failed: "))
        self.assertTrue(tr.outcome["tf32"]["applied"])

    def test_losses_are_kept_without_reading_them_and_written_with_the_steps(self):
        t = self.torch
        self.undo.append(tr.capture_losses(t))
        loss = t.Tensor(2.5)
        loss.backward()
        t.Tensor(1.0, n=4).backward()  # Not a scalar: not a loss.
        self.assertEqual(loss.backwards, 1)
        self.apply("tf32")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "try.json")
            tr.write_result(path, [10, 11], [9], tr.losses())
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual(os.listdir(d), ["try.json"])
        self.assertEqual(doc["losses"], [2.5])
        self.assertEqual(doc["host_step_ns"], [10, 11])
        self.assertEqual(doc["device_step_ns"], [9])
        self.assertTrue(doc["fixes"]["tf32"]["applied"])


class TrialTest(unittest.TestCase):
    def setUp(self):
        tr.outcome.clear()
        tr._losses.clear()
        tr._trial.update(seen=0, ends=[], events=[])
        self.torch = stub_torch()

    def tearDown(self):
        for u in reversed(tr._trial["undo"]):
            u()

    def test_a_trial_applies_its_fixes_and_times_the_steps_after_warm_up(self):
        t = self.torch
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            tr.begin(t, fixes="tf32", result=path, warmup="2")
            self.assertEqual(t.get_float32_matmul_precision(), "high")
            t.Tensor(3.0).backward()
            # Steps 1..6 end 4 ms apart on the GPU; step counts repeat when two sources fire.
            for step in (1, 2, 2, 3, 4, 5, 6):
                if step > tr._trial["seen"]:
                    t.cuda.Event.clock[0] += 4
                tr.on_step(step)
            tr.finish(last_timed_step=5)  # Steps 3..5 timed; step 6 was traced.
            tr.finish()  # Once only.
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(len(doc["host_step_ns"]), 3)
        self.assertEqual(doc["device_step_ns"], [4000000, 4000000, 4000000])
        self.assertEqual(doc["losses"], [3.0])
        self.assertTrue(doc["fixes"]["tf32"]["applied"])

    def test_a_helper_process_without_steps_never_replaces_the_result(self):
        t = self.torch
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump({"host_step_ns": [1, 2, 3]}, f)  # The program's own, written first.
            tr.begin(t, fixes="", result=path, warmup="0")
            tr.finish()  # A compile worker exiting later: it saw no step.
            with open(path) as f:
                self.assertEqual(json.load(f)["host_step_ns"], [1, 2, 3])
            os.remove(path)
            tr.begin(t, fixes="", result=path, warmup="0")
            tr.finish()  # The program itself, ended before its first step: says what it can.
            with open(path) as f:
                self.assertEqual(json.load(f)["host_step_ns"], [])

    def test_without_fixes_nothing_but_losses_is_touched(self):
        t = self.torch
        backward = t.Tensor.backward
        tr.begin(t, fixes="", result="/nonexistent/r.json", warmup="0")
        self.assertEqual(t.get_float32_matmul_precision(), "highest")
        self.assertIsNot(t.Tensor.backward, backward)
        self.assertEqual(tr.outcome, {})


if __name__ == "__main__":
    unittest.main()
