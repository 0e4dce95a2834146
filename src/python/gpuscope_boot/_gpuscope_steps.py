"""The step sources, each at a boundary compiled code never traces: optimizer steps (PyTorch's
public global optimizer-step hooks), CUDA-graph replays (a wrapper of CUDAGraph.replay) and
iterations of the step loop (reported by _gpuscope_loop's finder). Each ends a step for
_gpuscope_window, which opens, closes or caps the trace window by them.

  Optimizer.step#<Class>.step   a range around each optimizer step (`...step#<n>` for the
                                nth optimizer the program steps, from the second on)
  gpuscope.iter#<file>:<line>   a range per iteration of the step loop

A step ends at the first optimizer step, and again wherever an optimizer steps that already
stepped since the last step ended: a program that steps two optimizers an iteration (a GAN)
has one step per iteration. Once the optimizers' order repeats (the rule of src/core/steps.cpp:
9 of 10 optimizer steps the same as one cycle earlier, at least 3 cycles of up to 16), a step
ends once per cycle instead: a critic stepped five times per generator step is one step, not
five, from its third cycle on. While dynamo traces an optimizer step (a compiled function that
calls `opt.step()`), the hooks return before anything it could trace: that step is not marked,
and no graph breaks on them.

The optimizer hooks, once installed, stay until the process ends (a dict that dynamo may guard
on never changes); after a bounded window they return at once. A process with an initialised
process group marks its backend for CUDA tensors once, at the first optimizer step:
`gpuscope.host#dist_world_size=W,dist_gloo=G`.
"""
import collections
import functools
import os
import threading

import _gpuscope_marks as marks
import _gpuscope_window as win
from _gpuscope_state import guarded, replace_attr, state

_local = threading.local()
# Whether the process group was looked at, and the step loop's open range.
_steps = {"dist_marked": False, "iter_rid": None}


def _open_ranges():
    if not hasattr(_local, "ranges"):
        _local.ranges = {}
    return _local.ranges


def install_optimizer_hooks(torch):
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
    ordinals = {}  # id(optimizer): 1 for the first the program steps, 2 for the next, ...
    since = set()  # the optimizers (ordinals) that stepped since the last step ended
    cycle = OptimizerCycle()

    @guarded
    def mark_pre(optimizer):
        if win.done():
            return
        state["target"] = threading.get_ident()
        n = ordinals.setdefault(id(optimizer), len(ordinals) + 1)
        name = f"{marks.OPTIMIZER_STEP}{type(optimizer).__name__}.step" + (f"#{n}" if n > 1 else "")
        _open_ranges()[("opt", id(optimizer))] = win.start(name)

    @guarded
    def mark_post(optimizer):
        if win.done():
            return
        win.end(_open_ranges().pop(("opt", id(optimizer)), None))
        if not _steps["dist_marked"] and win.active():
            guarded(_mark_distributed)()
        n = ordinals.get(id(optimizer), 0)
        ends = cycle.ends_step(n)
        if ends is None:  # no cycle (yet): the re-step rule
            ends = not since or n in since
        if ends:
            since.clear()
        since.add(n)
        if ends:
            win.step_ended("opt")

    # The hooks torch calls: while dynamo traces, is_compiling() is a constant True and the
    # hooks end there, with nothing traced.
    def pre(optimizer, args, kwargs):
        if not compiling():
            mark_pre(optimizer)

    def post(optimizer, args, kwargs):
        if not compiling():
            mark_post(optimizer)

    register_optimizer_step_pre_hook(pre)
    register_optimizer_step_post_hook(post)


class OptimizerCycle:
    """The period of the optimizers' order, found as the steps come (src/core/steps.cpp's
    `optimizer_step_ends` finds it in the whole sequence): the shortest period p of up to 16
    such that 9 of 10 optimizer steps are the same optimizer as p steps earlier, over at least 3
    cycles. Constant work per optimizer step: a count of matches per period and the last 16
    ordinals."""

    MAX_PERIOD = 16

    def __init__(self):
        self.count = 0  # optimizer steps seen
        self.tail = collections.deque(maxlen=self.MAX_PERIOD)  # the last ordinals
        self.same = [0] * (self.MAX_PERIOD + 1)  # same[p]: steps equal to the one p earlier

    def ends_step(self, n):
        """Whether the optimizer step just ended (ordinal n) ends a step by the cycle (the first
        step of each cycle, counting cycles from the first optimizer step), or None while no
        cycle is found."""
        tail = self.tail
        for p in range(1, len(tail) + 1):
            if tail[-p] == n:
                self.same[p] += 1
        tail.append(n)
        i = self.count
        self.count += 1
        for p in range(1, self.MAX_PERIOD + 1):
            if 3 * p > self.count:
                break
            if self.same[p] * 10 >= (self.count - p) * 9:
                return i % p == 0
        return None


def _mark_distributed():
    """Once, at the first optimizer step in the trace: where the default process group sends CUDA
    tensors' collectives, `gpuscope.host#dist_world_size=2,dist_gloo=1` (gloo copies them to host
    memory and reduces them on the CPU while the GPU waits: the analysis then names those waits),
    `dist_gloo=0` otherwise. Nothing without an initialised process group."""
    _steps["dist_marked"] = True
    dist = getattr(state["torch"], "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    config = dist.get_backend_config() if hasattr(dist, "get_backend_config") else dist.get_backend()
    config = str(config).lower()
    gloo = "cuda:gloo" in config or config == "gloo"
    marks.host(dist_world_size=int(dist.get_world_size()), dist_gloo=int(gloo))


def install_graph_hook(torch):
    """CUDA-graph replays count as steps where they are the program's steps (a whole training or
    decode step captured in one graph calls no optimizer; a loop of replays may turn too fast to
    mark): see _gpuscope_window.graph_replayed."""
    graph_class = getattr(torch.cuda, "CUDAGraph", None)
    original = getattr(graph_class, "replay", None)
    if original is None or getattr(original, "_gpuscope", False):
        return

    @functools.wraps(original)
    def replay(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        win.graph_replayed(id(self))
        return result

    replace_attr(graph_class, "replay", original, replay)


def loop_iteration(label):
    """One iteration of the step loop (on the program's thread, inside its loop): the previous
    iteration's range ends, the step is counted (which may open or close the window), the next
    range starts."""
    if win.done() or os.getpid() != state["pid"]:
        return
    rid = _steps["iter_rid"]
    if rid is not None:
        win.end(rid)
    win.step_ended("loop")
    _steps["iter_rid"] = win.start(f"{marks.STEP_LOOP}{label}")
