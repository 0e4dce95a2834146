"""Finds the loop that runs a program's steps and reports each of its iterations, without a hook
that dynamo, autograd or CUDA graphs can see.

Every program that does GPU work in steps runs a loop; it need not have an nn.Module, an
optimizer or a DataLoader. The bootstrap's sampler hands each stack sample of the thread that
issues GPU work to `LoopFinder.observe`. A frame that stays on that stack (the same frame
object, sample after sample) with its sampled positions inside a loop of its code is a
candidate; the loops of its code object then get sys.monitoring JUMP events (Python 3.12+),
local to that one code object, so no other code pays anything and nothing changes in code that
dynamo compiles (a loop's frame is the long-lived caller of the model, never a compiled frame).
A backward jump to a loop's head is one iteration.

Which loop is the step loop: the loops around the current work are those of each long-lived
frame that hold almost every position sampled in it (a loop run before or after, such as a
warm-up, holds none), outermost frame first and, within a frame, outermost loop first. The
first of them that repeats (3 iterations) is chosen, so a loop over layers inside the step
loses to the step loop around it; an outer loop that has not repeated in `patience_s` seconds
(an epoch loop) gives way to the next one inward. Once chosen, every other jump is disabled
where it fires (sys.monitoring.DISABLE); a loop that turns faster than `min_period_s` is too
fine to mark each iteration (the marking would cost more than the iteration): the finder stops
and records its period. A stopped finder's jumps are disabled the same way, each where it
next fires.

Events are only ever added from the sampler thread, never removed or unregistered from it: the
program's thread may be inside a JUMP callback at that moment, and CPython reads the code
object's instrumentation again when the callback returns. (With the events removed from the
sampler thread, one of three traced `--steps` runs of a step-loop program aborted with a
corrupted heap.) DISABLE, returned by the callback on the program's own thread, is the way
CPython provides to remove an event where it fires; the tool id stays claimed until the
process ends.

Code that runs inside an nn.Module's call (a frame of torch/nn/modules/module.py further out on
the stack: its forward and what that calls) is never a candidate: a loop there is over layers
or heads, within one step, and it is the code dynamo compiles. Without this, a model called
once before the step loop (a warm-up or sizing step, whose first call is long: kernels load,
cuBLAS starts) had its loop over layers chosen while the step loop's frame was still outside
its loop, and each layer became a step.

Samples taken while torch.compile is at work (a dynamo, inductor, FX or Triton frame on the
stack) are ignored, and torch's own frames are never candidates: a compiler's loops turn fast
and often while the step loop waits for it. The finder never calls into torch; the bootstrap receives each iteration through `on_iteration`
(called on the program's thread, inside the loop) with a label `<file>:<line>` of the loop head.
"""
import dis
import os
import sys
import threading
import time

# A loop must hold all but one of a frame's last _RECENT sampled positions to be its loop: few
# enough that positions sampled before the loop began (setup in the same function) are gone
# soon after it begins, one spare for a position sampled outside it by chance.
_CONTAIN_SHARE = 0.93
_RECENT = 16  # positions kept per frame
_MIN_SAMPLES = 8  # samples of a frame before it is a candidate
_MIN_ITERATIONS = 3  # iterations of a loop before it is chosen
_MAX_CODES = 8  # code objects instrumented at once while searching
_MAX_LOOPS_KEPT = 256  # code objects whose loops are kept (read once: dis costs ~1 ms a code object)
_TIMED = 8  # periods of the chosen loop timed before its iterations are reported
# Frames of a compiler at work (dynamo, inductor, FX, AOT autograd, Triton): a sample with one on
# its stack is not looked at. Compiling a model takes seconds, in loops over nodes and kernels
# that turn a thousand times while the program's step loop waits for the compiled code.
_COMPILING = ("_dynamo", "_inductor", "fx", "_functorch")  # under torch's folder
_TRITON = os.sep + "triton" + os.sep


def supported():
    return hasattr(sys, "monitoring")


def loops_of(code):
    """The loops of a code object, as (head, end) byte offsets: a backward jump at `end` to
    `head` (several jumps to one head, `continue` for one, give one loop), innermost last among
    nested ones."""
    ends = {}
    for ins in dis.get_instructions(code):
        if ins.opname == "JUMP_BACKWARD" and isinstance(ins.argval, int):
            ends[ins.argval] = max(ends.get(ins.argval, -1), ins.offset)
    return sorted(ends.items())


def enclosing_loops(loops, positions):
    """The loops holding at least _CONTAIN_SHARE of `positions`, outermost first (nested loops
    around where the frame spends its time; a sibling loop, run before or after, holds none)."""
    if not positions:
        return []
    need = _CONTAIN_SHARE * len(positions)
    held = [(head, end) for head, end in loops if sum(1 for p in positions if head <= p <= end) >= need]
    return sorted(held, key=lambda loop: loop[0] - loop[1])


class _Frame:
    """A frame seen in consecutive samples: its code, how often seen, its recent positions."""
    __slots__ = ("code", "samples", "positions")

    def __init__(self, code):
        self.code, self.samples, self.positions = code, 0, []


class LoopFinder:
    """Searches while `chosen` is None; see the module's docstring. `observe` runs on the
    sampler thread, `_on_jump` on whichever thread runs an instrumented loop."""

    def __init__(self, on_iteration, skip_prefix="\0", torch_dir="\0", patience_s=5.0, min_period_s=100e-6,
                 clock=time.perf_counter):
        self.on_iteration = on_iteration
        # torch's own frames are never the program's step loop (they run inside it).
        self.torch_dir = torch_dir
        self.compiling = tuple(torch_dir + part + os.sep for part in _COMPILING)
        self.module_call = os.path.join(torch_dir + "nn", "modules", "module.py")
        self.skip_prefix = skip_prefix  # frames of files under it (the bootstrap's own) are not the program's
        self.patience_s = patience_s
        self.min_period_s = min_period_s
        self.clock = clock
        self.target = threading.main_thread().ident
        self.frames = {}  # id(frame) -> _Frame, the frames of the latest sample
        self.codes = {}  # code -> when its loops were instrumented
        self.loops = {}  # code -> its loops, for every code object on the sampled stacks
        self.counts = {}  # (code, head) -> iterations seen while searching
        self.chosen = None  # (code, head, label)
        self.periods = []  # the chosen loop's first periods, in seconds
        self.last = None
        self.fine_period_s = None  # set when the chosen loop turns too fast to mark
        self.stopped = False
        self.tool = None
        if supported():
            self._claim_tool()

    # --- sys.monitoring ---------------------------------------------------------------------

    def _claim_tool(self):
        mon = sys.monitoring
        for tool in (4, 3, 5, 2, 1):
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "gpuscope")
                mon.register_callback(tool, mon.events.JUMP, self._on_jump)
                self.tool = tool
                return

    def _instrument(self, code):
        sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.JUMP)

    def stop(self):
        """Stops the search and the counting (from any thread): each jump still enabled returns
        DISABLE the next time it fires, on the program's own thread."""
        self.stopped = True

    def _on_jump(self, code, src, dst):
        # Runs inside the program's own loop: nothing may escape into it.
        try:
            return self._jumped(code, src, dst)
        except Exception:
            return None

    def _jumped(self, code, src, dst):
        if dst >= src or self.stopped:
            return sys.monitoring.DISABLE
        chosen = self.chosen
        if chosen is not None:
            if code is not chosen[0] or dst != chosen[1]:
                return sys.monitoring.DISABLE
            if threading.get_ident() != self.target:
                return None
            self._iteration(chosen)
            return None
        if threading.get_ident() == self.target:
            key = (code, dst)
            self.counts[key] = self.counts.get(key, 0) + 1
        return None

    def _iteration(self, chosen):
        """The first _TIMED iterations are only timed: a loop faster than min_period_s is too
        fine to mark, and the finder stops; the others are reported from then on."""
        if len(self.periods) < _TIMED:
            now = self.clock()
            if self.last is not None:
                self.periods.append(now - self.last)
            self.last = now
            if len(self.periods) < _TIMED:
                return
            period = sorted(self.periods)[_TIMED // 2]
            if period < self.min_period_s:
                self.fine_period_s = period
                self.stopped = True
            return
        self.on_iteration(chosen[2])

    # --- the search, on the sampler thread --------------------------------------------------

    def observe(self, frame, now=None):
        """One stack sample of the target thread (its innermost frame)."""
        if self.tool is None or self.chosen is not None or self.stopped:
            return
        now = self.clock() if now is None else now
        chain = []
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(self.compiling) or _TRITON in name:
                return  # torch.compile at work: its loops turn, the program's steps do not
            if name == self.module_call:
                chain = []  # inside a module's call: model code, never the step loop
            elif not name.startswith((self.skip_prefix, self.torch_dir)) and not name.endswith("threading.py"):
                chain.append(frame)
            frame = frame.f_back
        chain.reverse()  # outermost first
        frames = {}
        for f in chain:
            info = self.frames.get(id(f))
            if info is None or info.code is not f.f_code:
                info = _Frame(f.f_code)
            info.samples += 1
            info.positions.append(f.f_lasti)
            if len(info.positions) > _RECENT:
                del info.positions[0]
            frames[id(f)] = info
        self.frames = frames
        self._search([frames[id(f)] for f in chain], now)

    def _search(self, chain, now):
        """Walks the loops around the current work, outermost first: the first that has repeated
        is chosen; one that has not, while younger than patience_s, is waited for (an outer
        loop's iteration can be long); an older one (an epoch loop) gives way inward."""
        for info in chain:
            if info.samples < _MIN_SAMPLES:
                return  # frames further in are younger still
            around = enclosing_loops(self._loops(info.code), info.positions)
            if not around:
                continue
            since = self.codes.get(info.code)
            if since is None:
                if len(self.codes) >= _MAX_CODES:
                    return
                self._instrument(info.code)
                since = self.codes[info.code] = now
            for head, _ in around:
                if self.counts.get((info.code, head), 0) >= _MIN_ITERATIONS:
                    self._choose(info.code, head)
                    return
                if now - since < self.patience_s:
                    return

    def _loops(self, code):
        """The loops of `code`, read once: a sample runs while the program waits for the GIL, and
        reading a large function's bytecode at every sample would cost it a millisecond each."""
        loops = self.loops.get(code)
        if loops is None:
            if len(self.loops) >= _MAX_LOOPS_KEPT:
                self.loops.clear()
            loops = self.loops[code] = loops_of(code)
        return loops

    def _choose(self, code, head):
        line = code.co_firstlineno
        for ins in dis.get_instructions(code):
            if ins.offset > head:
                break
            if ins.positions is not None and ins.positions.lineno is not None:
                line = ins.positions.lineno
        label = f"{os.path.basename(code.co_filename)}:{line}"
        self.chosen = (code, head, label)
        # The search's state goes; the other code objects' jumps are disabled where they fire
        # (_jumped), not removed here.
        self.codes = {}
        self.frames = {}
        self.counts = {}
        self.loops = {}
