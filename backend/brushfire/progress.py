"""Progress of long work (a capture, a reload) on a terminal or in a log: one line
redrawn in place on a terminal, one line per finished phase with its time elsewhere."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressLine:
    """Capture progress on stderr (or `stream`).

    On a terminal: one line redrawn in place with the stage and its share done. To a file
    or a pipe: no carriage returns or escape codes, one line per phase when it ends, with
    the time since the start and the phase's own time. A phase is a run of stages sharing
    the text before the first ': ' ("shard job: starting", "shard job: building lineage");
    a stage reported only without a share done, or at once done, is a step of its own,
    printed when it comes ("starting Spark", "flights ready: ...")."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = _is_terminal(self.stream)
        self.t0 = time.perf_counter()
        self.phase: str | None = None  # the open phase's key (files and pipes)
        self.stage = ""  # its latest stage text
        self.ended: str | None = None  # the phase ended last
        self.t_phase = self.t0
        self.open_line = False  # a terminal line waiting for its newline
        self.finished = ""  # the last stage a terminal line was ended at 100 %

    def __call__(self, stage: str, fraction: float | None) -> None:
        now = time.perf_counter()
        if self.live:
            self._draw(stage, fraction, now)
            return
        key = stage.split(": ", 1)[0]
        if key == self.ended and (fraction is None or fraction >= 1):  # a done phase's jobs
            return
        if key != self.phase:
            self._end(now)
            if fraction is None or fraction >= 1:  # a step: nothing to time
                self._write(f"[{now - self.t0:6.1f}s] {stage}\n")
                self.ended = key
                return
            self.phase, self.t_phase = key, now
        self.stage = stage
        if fraction is not None and fraction >= 1:
            self._end(now)

    def close(self) -> None:
        """End the open phase (or terminal line): the capture or opening is over."""
        if self.live:
            if self.open_line:
                self._write("\n")
                self.open_line = False
        else:
            self._end(time.perf_counter())

    def _end(self, now: float) -> None:
        if self.phase is not None:
            self._write(f"[{now - self.t0:6.1f}s] {self.stage} ({now - self.t_phase:.1f} s)\n")
            self.phase, self.ended = None, self.phase

    def _draw(self, stage: str, fraction: float | None, now: float) -> None:
        done = fraction is None or fraction >= 1
        if done and stage == self.finished:  # a stage of several jobs: 100 % once
            return
        pct = f" {fraction:4.0%}" if fraction is not None else ""
        self._write(f"\r[{now - self.t0:6.1f}s] {stage}{pct}\033[K" + ("\n" if done else ""))
        self.open_line, self.finished = not done, stage if done else ""

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
