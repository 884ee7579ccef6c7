# SPDX-License-Identifier: BSD-2-Clause
"""Progress of a Verilator model build, for the user who waits for it: the first ``--sim``
command of a kind of system builds its model once (minutes: the system elaborated to
Verilog, Verilator, then some twenty C++ files compiled), and says so as it goes.

:func:`reporting` is what a command holds while it may build a model (a session's start, a
``--fresh`` board). The build itself (:func:`pcispy.sim.model.build_system`,
:func:`pcispy.sim.verilate.build_model`) calls :func:`stage` at each step; with no reporter
held those calls do nothing, so tests and benches build silently. The reporter prints a
line at each step and every :data:`EVERY_S` seconds between (on a terminal it rewrites one
line): the step, the C++ files compiled so far, the time so far and an estimate of the time
left, from the last build of the same kind of model on this machine (kept in
``build/sim/build-times.json``) or, for a first build, from :data:`TYPICAL_S`.
"""

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

__all__ = ["reporting", "stage", "EVERY_S", "TYPICAL_S", "TIMES_FILE"]

#: Seconds between two progress lines off a terminal (on one: the line is rewritten).
EVERY_S = 15.0
#: Seconds each step of a build takes on an idle two-core machine, for a first estimate:
#: elaboration to Verilog, Verilator, the C++ compile and link.
TYPICAL_S = {"elaborating": 25.0, "verilating": 25.0, "compiling": 110.0}
#: The file (in the models' folder) that keeps how long each step of each model took.
TIMES_FILE = "build-times.json"
_STEPS = tuple(TYPICAL_S)
_DESCRIBE = {"elaborating": "elaborating the system to Verilog",
             "verilating": "Verilator translating it to C++",
             "compiling": "compiling the C++"}

_current = None


def stage(step, build_dir=None):
    """Tell the reporter (if one is held) that the build of the model in ``build_dir``
    entered ``step`` (one of :data:`TYPICAL_S`)."""
    if _current is not None:
        _current.enter(step, build_dir)


@contextlib.contextmanager
def reporting(label, root, out=None):
    """Report the progress of any model build inside the block (``label`` names the model
    for the user, ``root`` is the models' folder); a block that builds nothing prints
    nothing."""
    global _current
    reporter = _Reporter(label, Path(root), out or sys.stderr)
    previous, _current = _current, reporter
    try:
        yield reporter
        reporter.finish(ok=True)
    except BaseException:
        reporter.finish(ok=False)
        raise
    finally:
        _current = previous


class _Reporter:
    def __init__(self, label, root, out):
        self.label = label
        self.root = root
        self.out = out
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.step = None
        self.build_dir = None
        self.started = None
        self.step_started = None
        self.took = {}
        self.previous = self._load().get(label, {})
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()

    def _load(self):
        try:
            return json.loads((self.root / TIMES_FILE).read_text())
        except (OSError, ValueError):
            return {}

    def enter(self, step, build_dir):
        now = time.monotonic()
        with self._lock:
            if self.started is None:
                self.started = now
            if step == "verilating":
                self._clear()
                self.out.write(f"pcispy: building the simulated system's model {self.label} "
                               f"once (it is kept in {self.root}; later commands start in "
                               "seconds)\n")
            if self.step is not None:
                self.took[self.step] = now - self.step_started
            self.step, self.step_started = step, now
            self.build_dir = Path(build_dir) if build_dir else self.build_dir
        self._line()
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _clear(self):
        if self.tty:
            self.out.write("\r\033[K")

    def _compiled(self):
        """``(objects built, objects to build)`` of the compile step (None: unknown)."""
        if self.build_dir is None:
            return None
        try:
            sources = [p for p in self.build_dir.iterdir() if p.suffix == ".cpp"]
            objects = [p for p in self.build_dir.iterdir() if p.suffix == ".o"]
        except OSError:
            return None
        # Each C++ file of the model and Verilator's main program becomes an object.
        return min(len(objects), len(sources) + 1), len(sources) + 1

    def _after(self, step):
        """Seconds the steps after ``step`` take, by this estimate."""
        return sum(self.previous.get(later, TYPICAL_S[later])
                   for later in _STEPS[_STEPS.index(step) + 1:])

    def _left(self, now):
        """Seconds the build has left, by this estimate."""
        index = _STEPS.index(self.step)
        expected = self.previous.get(self.step, TYPICAL_S[self.step])
        in_step = now - self.step_started
        if self.step == "compiling":
            counts = self._compiled()
            if counts and counts[0]:
                expected = max(expected * (1 - counts[0] / counts[1]),
                               in_step * (counts[1] - counts[0]) / counts[0]) + in_step
        left = max(expected - in_step, 0)
        return left + sum(self.previous.get(step, TYPICAL_S[step])
                          for step in _STEPS[index + 1:])

    def _line(self):
        with self._lock:
            if self.step is None:
                return
            now = time.monotonic()
            what = _DESCRIBE[self.step]
            if self.step == "compiling":
                counts = self._compiled()
                if counts:
                    what += f" ({counts[0]} of {counts[1]} files)"
            left = _minutes(self._left(now))
            text = (f"pcispy: model {self.label}: step {_STEPS.index(self.step) + 1} of "
                    f"{len(_STEPS)}, {what}; {_minutes(now - self.started)} so far, about "
                    + (f"{left} left" if self.step != "elaborating" else
                       f"{_minutes(self._left(now) - self._after('elaborating'))} left, "
                       f"{left} if the model must be built again (pcispy's sources changed "
                       "since it was last prepared)"))
            if self.tty:
                self.out.write("\r\033[K" + text)
            else:
                self.out.write(text + "\n")
            self.out.flush()

    def _tick(self):
        while not self._stop.wait(1.0 if self.tty else EVERY_S):
            self._line()

    def finish(self, ok):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.started is None:
            return
        now = time.monotonic()
        self.took[self.step] = now - self.step_started
        self._clear()
        built = "compiling" in self.took
        if ok:
            self.out.write(f"pcispy: the simulated system {self.label} is ready after "
                           f"{_minutes(now - self.started)}"
                           + ("" if built else " (its model was built before)") + "\n")
            times = self._load()
            times[self.label] = {step: round(self.took[step], 1) if step in self.took
                                 else self.previous.get(step, TYPICAL_S[step])
                                 for step in _STEPS}
            try:
                partial = self.root / f"{TIMES_FILE}.{os.getpid()}"
                partial.write_text(json.dumps(times, indent=1, sort_keys=True))
                partial.replace(self.root / TIMES_FILE)
            except OSError:
                pass                     # an estimate is a courtesy, not worth failing
        self.out.flush()


def _minutes(seconds):
    """``"2 min 10 s"``, ``"45 s"``."""
    seconds = int(round(seconds))
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"
