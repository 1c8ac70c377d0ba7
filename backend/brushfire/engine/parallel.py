"""Worker threads for the engine's kernels, shared by every session of the process.

The kernels are serial and release the GIL; this pool runs them side by side. Two kinds
of work, so that an optional structure never delays a reply:
- `run(tasks)` — on the reply path: the tasks go before any background work, and the
  calling thread runs tasks itself until all are done (no hand-off latency when the
  workers are busy);
- `background(chunks, done)` — optional structures (conditional cubes): a worker takes
  a chunk only when no reply task is waiting, so a reply waits for at most one chunk
  (a few milliseconds) of background work. `cancel()` drops the rest of a job.
- `after(seconds, fn)` — run fn on the pool's timer thread later, unless cancelled
  (a session waits for the user to pause before preparing structures speculatively).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any


class Job:
    """A background job: an iterator of chunks (callables), then `done` (on a worker)."""

    def __init__(self, chunks: Iterator[Callable[[], None]], done: Callable[[], None]) -> None:
        self.chunks, self.done = chunks, done
        self.cancelled = False
        self.finished = threading.Event()
        self.running = 0  # chunks being run (guarded by the pool's lock)
        self.exhausted = False

    def cancel(self) -> None:
        self.cancelled = True


class Later:
    """A call `Pool.after` will make, unless cancelled first."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Pool:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._cond = threading.Condition()
        self._urgent: deque = deque()
        self._jobs: deque[Job] = deque()
        self._threads: list[threading.Thread] = []
        self._timer_cond = threading.Condition()
        self._timers: list = []  # heap of (when, seq, Later)
        self._seq = itertools.count()
        self._timer: threading.Thread | None = None

    def after(self, seconds: float, fn: Callable[[], None]) -> Later:
        """Call fn in `seconds` on the timer thread (with no workers: never; tests call
        what they need directly)."""
        later = Later(fn)
        if self.workers == 0:
            later.cancel()
            return later
        with self._timer_cond:
            if self._timer is None:
                self._timer = threading.Thread(target=self._tick, name="brushfire-engine-timer",
                                               daemon=True)
                self._timer.start()
            heapq.heappush(self._timers, (time.monotonic() + seconds, next(self._seq), later))
            self._timer_cond.notify()
        return later

    def _tick(self) -> None:
        while True:
            with self._timer_cond:
                while not self._timers or self._timers[0][0] > time.monotonic():
                    wait = self._timers[0][0] - time.monotonic() if self._timers else None
                    self._timer_cond.wait(wait)
                _, _, later = heapq.heappop(self._timers)
            if not later.cancelled:
                try:
                    later.fn()
                except Exception:  # speculative work only: log it, keep the timer
                    logging.getLogger("brushfire").exception("engine timer call failed")

    def _start(self) -> None:
        for i in range(self.workers):
            t = threading.Thread(target=self._work, name=f"brushfire-engine-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def run(self, tasks: list[Callable[[], Any]]) -> list[Any]:
        """Run `tasks` (on the workers and this thread); their results, in order."""
        if len(tasks) <= 1 or self.workers == 0:
            return [t() for t in tasks]
        if not self._threads:
            with self._cond:
                if not self._threads:
                    self._start()
        results: list[Any] = [None] * len(tasks)
        errors: list[BaseException] = []
        left = [len(tasks)]
        all_done = threading.Event()
        lock = threading.Lock()

        def wrap(i: int, task: Callable[[], Any]) -> Callable[[], None]:
            def go() -> None:
                try:
                    results[i] = task()
                except BaseException as e:  # re-raised in the caller
                    errors.append(e)
                finally:
                    with lock:
                        left[0] -= 1
                        if left[0] == 0:
                            all_done.set()
            return go

        mine = [wrap(i, t) for i, t in enumerate(tasks)]
        with self._cond:
            self._urgent.extend(mine)
            self._cond.notify_all()
        while True:  # help: take our own tasks, from the back (workers take the front)
            with self._cond:
                task = None
                for k in range(len(self._urgent) - 1, -1, -1):
                    if self._urgent[k] in mine:
                        task = self._urgent[k]
                        del self._urgent[k]
                        break
            if task is None:
                break
            task()
        all_done.wait()
        if errors:
            raise errors[0]
        return results

    def background(self, job: Job) -> Job:
        if self.workers == 0:  # no workers: run it now (tests, single-core machines)
            self._finish_inline(job)
            return job
        if not self._threads:
            with self._cond:
                if not self._threads:
                    self._start()
        with self._cond:
            self._jobs.append(job)
            self._cond.notify_all()
        return job

    @staticmethod
    def _finish_inline(job: Job) -> None:
        for chunk in job.chunks:
            if job.cancelled:
                break
            chunk()
        if not job.cancelled:
            job.done()
        job.finished.set()

    def _work(self) -> None:
        while True:
            job = None
            with self._cond:
                while not self._urgent and not self._jobs:
                    self._cond.wait()
                if self._urgent:
                    task = self._urgent.popleft()
                else:
                    job = self._jobs[0]
                    chunk = None if job.cancelled else next(job.chunks, None)
                    if chunk is None:
                        self._jobs.popleft()
                        job.exhausted = True
                        finish = job.running == 0
                    else:
                        job.running += 1
                    task = chunk
            if job is None:
                task()
            elif task is not None:
                try:
                    task()
                except Exception:  # an optional structure failed: drop it, keep the worker
                    logging.getLogger("brushfire").exception("background engine work failed")
                    job.cancel()
                finally:
                    with self._cond:
                        job.running -= 1
                        finish = job.exhausted and job.running == 0
                    if finish:
                        self._finish(job)
            elif finish:
                self._finish(job)

    @staticmethod
    def _finish(job: Job) -> None:
        try:
            if not job.cancelled:
                job.done()
        finally:
            job.finished.set()


_POOL: Pool | None = None
_LOCK = threading.Lock()


def pool() -> Pool:
    """The process's engine pool: one worker per core besides the calling thread."""
    global _POOL
    if _POOL is None:
        with _LOCK:
            if _POOL is None:
                cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
                _POOL = Pool(max(1, (cores or 2) - 1))
    return _POOL
