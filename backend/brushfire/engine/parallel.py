"""Worker threads for the engine's kernels, shared by every session of the process.

The kernels are serial and release the GIL; this pool runs them side by side. Two kinds
of work, so that an optional structure never delays a reply:
- `run(tasks)` — on the reply path: the tasks go before any background work, and the
  calling thread runs tasks itself until all are done (no hand-off latency when the
  workers are busy);
- `background(chunks, done)` — optional structures (conditional cubes, key copies): run
  on background threads of their own, one per core, at the lowest CPU priority (nice 19),
  and only once no reply has been answered for QUIET seconds: the time a reply takes to
  reach its client is the server's and the client's, and a chunk started then delayed
  it (measured: the human workload's replies at 3M, 10,000 events, p99 8.7 ms with
  conditional cube builds sharing the reply workers, 4.9 with this gate). Between a user's frames (16 ms
  apart at 60 Hz) and in pauses the background has every core; a reply arriving during
  a chunk takes the cores from it at once and never waits for it. `cancel()` drops the
  rest of a job; `prune()` forgets the cancelled jobs still queued.
- `replying()` — a context the engine holds while it answers an interaction.
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
from contextlib import contextmanager, suppress
from typing import Any

QUIET = 0.004  # seconds after a reply before background work starts again
BACKOFF = 0.1  # at most this long between looks for a quiet moment
ROOM = 0.1  # seconds a quiet moment counts as room for background work (`has_room`)


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
        # what its chunks and `done` hold (a session's structures) is not kept alive while
        # the job waits in the queue
        self.chunks, self.done = iter(()), _nothing


def _nothing() -> None:
    pass


class Later:
    """A call `Pool.after` will make, unless cancelled first."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn: Callable[[], None] | None = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.fn = None  # what it would call (a session) is not kept alive until its time


class Pool:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)  # reply workers wait on it
        self._background = threading.Condition(self._mutex)  # background threads wait on it
        self._urgent: deque = deque()
        self._jobs: deque[Job] = deque()
        self._threads: list[threading.Thread] = []  # reply workers, then background threads
        self._replying = 0  # interactions being answered (guarded by _cond)
        self._quiet_from = 0.0  # time.monotonic() from which background work may run
        self._quiet_seen = 0.0  # when an interaction last came after a quiet moment (or none yet)
        self._wake: Later | None = None  # the timer's call that wakes the background threads
        self._backoff = QUIET  # ... how long it waits when it found replies still coming
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
            entry = (time.monotonic() + seconds, next(self._seq), later)
            heapq.heappush(self._timers, entry)
            if self._timers[0] is entry:  # else the timer wakes earlier anyway: every wake of a
                self._timer_cond.notify()  # Python thread contends for the GIL with replies
        return later

    def _tick(self) -> None:
        while True:
            with self._timer_cond:
                while True:
                    while self._timers and self._timers[0][2].cancelled:
                        heapq.heappop(self._timers)
                    if self._timers and self._timers[0][0] <= time.monotonic():
                        break
                    wait = self._timers[0][0] - time.monotonic() if self._timers else None
                    self._timer_cond.wait(wait)
                _, _, later = heapq.heappop(self._timers)
            fn = later.fn
            if not later.cancelled and fn is not None:
                try:
                    fn()
                except Exception:  # speculative work only: log it, keep the timer
                    logging.getLogger("brushfire").exception("engine timer call failed")
            # a waiting thread's locals hold nothing of the last call: it may be all that
            # keeps a closed session, or a capture replaced by a newer one, alive
            later = fn = None

    def _start(self) -> None:
        for i in range(self.workers):
            t = threading.Thread(target=self._work, name=f"brushfire-engine-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        for i in range(self.workers + 1):
            t = threading.Thread(target=self._work_background, name=f"brushfire-background-{i}",
                                 daemon=True)
            t.start()
            self._threads.append(t)

    @contextmanager
    def replying(self):
        """Hold background work back while an interaction is answered, and QUIET after."""
        with self._cond:
            if not self._replying and time.monotonic() >= self._quiet_from:
                self._quiet_seen = time.monotonic()  # it came after a quiet moment
            self._replying += 1
        try:
            yield
        finally:
            with self._cond:
                self._replying -= 1
                self._quiet_from = time.monotonic() + QUIET
                if self._jobs and self._wake is None:
                    self._wake = self.after(QUIET, self._wake_background)

    def has_room(self) -> bool:
        """Whether background work gets to run now: a quiet moment (no interaction
        answered for QUIET) now, or within the last ROOM seconds. Not while one reply
        follows another, whichever sessions they are for: then a structure planned for
        later would wait in the queue, its plan and its reservation spent for nothing
        (measured, 25 sessions brushing flat out on flights 3M: planning conditional cubes
        that never ran took 10-17 % of the server's CPU)."""
        now = time.monotonic()
        with self._cond:
            return (not self._replying and now >= self._quiet_from) or now - self._quiet_seen < ROOM

    def _wake_background(self) -> None:
        """(The timer thread.) Wake the background threads once QUIET has passed since the
        last reply. While replies keep coming back to back (a replay, not a person), it
        looks again less and less often, up to BACKOFF: every wake of a Python thread
        contends for the GIL with the replies (measured: 0.5 ms more per reply at 3M when
        it looked every 4 ms)."""
        with self._cond:
            self._wake = None
            if not self._jobs:
                return
            wait = self._quiet_from - time.monotonic()
            if self._replying or wait > 0:
                self._backoff = min(BACKOFF, self._backoff * 2)
                self._wake = self.after(max(wait, self._backoff), self._wake_background)
            else:
                self._backoff = QUIET
                self._background.notify_all()

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
            self._prune()
            self._jobs.append(job)
            self._background.notify_all()
        return job

    def prune(self) -> None:
        """Forget the queued jobs that were cancelled (a session closing): they hold their
        owner's structures until a background thread reaches them, which waits for a
        quiet moment."""
        with self._cond:
            self._prune()

    def _prune(self) -> None:
        for old in [j for j in self._jobs if j.cancelled and not j.running]:
            self._jobs.remove(old)  # cancelled while waiting for a quiet moment (a replay
            old.finished.set()  # back to back leaves none): no need to hold on to them

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
        """A reply worker: reply tasks only."""
        while True:
            with self._cond:
                while not self._urgent:
                    self._cond.wait()
                task = self._urgent.popleft()
            task()
            task = None  # not kept alive while waiting for the next (see _tick)

    def _work_background(self) -> None:
        """A background thread: chunks of background jobs, at the lowest CPU priority."""
        lower_priority()
        while True:
            with self._cond:
                while not self._jobs or self._replying or self._quiet_from > time.monotonic():
                    if self._jobs and self._wake is None:
                        self._wake = self.after(QUIET, self._wake_background)
                    self._background.wait()  # woken by `background` and `_wake_background`
                job = self._jobs[0]
                chunk = None if job.cancelled else next(job.chunks, None)
                if chunk is None:
                    self._jobs.popleft()
                    job.exhausted = True
                    finish = job.running == 0
                else:
                    job.running += 1
            if chunk is None:
                if finish:
                    self._finish(job)
                job = None  # not kept alive while waiting for the next (see _tick)
                continue
            try:
                chunk()
            except Exception:  # an optional structure failed: drop it, keep the thread
                logging.getLogger("brushfire").exception("background engine work failed")
                job.cancel()
            finally:
                with self._cond:
                    job.running -= 1
                    finish = job.exhausted and job.running == 0
                if finish:
                    self._finish(job)
                job = chunk = None

    @staticmethod
    def _finish(job: Job) -> None:
        try:
            if not job.cancelled:
                job.done()
        finally:
            job.chunks, job.done = iter(()), _nothing  # whoever keeps the job keeps not its work
            job.finished.set()


def lower_priority() -> None:
    """Give the calling thread the lowest CPU priority (Linux: a thread's own nice value);
    elsewhere, nothing."""
    with suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


PROCESSES_ENV = "BRUSHFIRE_PROCESSES"  # server processes sharing the machine (`serve --workers`)


def processes() -> int:
    """How many server processes share this machine's cores and memory: $BRUSHFIRE_PROCESSES
    (`brushfire serve --workers N` sets it for its workers), else 1."""
    try:
        return max(1, int(os.environ.get(PROCESSES_ENV, "1")))
    except ValueError:
        return 1


def machine_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2


def cores() -> int:
    """The cores this process may keep busy: the machine's, shared among `processes()`,
    at least one."""
    return max(1, machine_cores() // processes())


_POOL: Pool | None = None
_LOCK = threading.Lock()


def pool() -> Pool:
    """The process's engine pool: one worker per core of its share besides the calling
    thread (at least one: background work never runs on a reply's thread)."""
    global _POOL
    if _POOL is None:
        with _LOCK:
            if _POOL is None:
                _POOL = Pool(max(1, cores() - 1))
    return _POOL
