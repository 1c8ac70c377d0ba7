"""The engine's pool: reply tasks in order, background work only in quiet moments."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from brushfire.engine import parallel
from brushfire.engine.parallel import Job, Pool


def job_of(n: int, log: list) -> Job:
    def chunks():
        for i in range(n):
            yield lambda i=i: log.append((i, time.monotonic(), threading.get_native_id()))
    return Job(chunks(), lambda: log.append(("done", time.monotonic(), threading.get_native_id())))


def test_run_returns_results_in_order_and_raises_a_tasks_error():
    pool = Pool(1)
    assert pool.run([lambda i=i: i * i for i in range(9)]) == [i * i for i in range(9)]

    def bad():
        msg = "boom"
        raise ValueError(msg)
    with pytest.raises(ValueError, match="boom"):
        pool.run([lambda: 1, bad, lambda: 3])


def test_background_work_waits_for_a_quiet_moment():
    pool = Pool(1)
    log: list = []
    with pool.replying():
        job = pool.background(job_of(3, log))
        time.sleep(0.05)
        assert log == []  # never while an interaction is being answered
    ended = time.monotonic()
    assert job.finished.wait(5)
    assert [e[0] for e in log] == [0, 1, 2, "done"]
    assert log[0][1] >= ended + parallel.QUIET * 0.9  # and only QUIET after it


def test_background_work_starts_at_once_when_nothing_is_answered():
    pool = Pool(1)
    pool.run([lambda: 0, lambda: 1])  # threads started
    time.sleep(parallel.QUIET * 2)
    log: list = []
    t0 = time.monotonic()
    assert pool.background(job_of(2, log)).finished.wait(5)
    assert log[0][1] - t0 < 0.5


def test_replies_coming_back_to_back_hold_background_work_back():
    """A replay that answers one interaction after another leaves no quiet moment; the
    background runs once they stop."""
    pool = Pool(1)
    log: list = []
    with pool.replying():
        job = pool.background(job_of(2, log))
    stop = time.monotonic() + 0.3
    while time.monotonic() < stop:
        with pool.replying():
            time.sleep(0.001)
    last = time.monotonic()
    assert job.finished.wait(5)
    assert all(e[1] >= last for e in log)


def test_a_failing_chunk_drops_its_job_and_keeps_the_thread():
    pool = Pool(1)

    def chunks():
        yield lambda: 1 / 0
    bad = pool.background(Job(chunks(), lambda: None))
    assert bad.finished.wait(5) and bad.cancelled
    log: list = []
    assert pool.background(job_of(1, log)).finished.wait(5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_background_threads_run_at_the_lowest_priority():
    pool = Pool(1)
    log: list = []
    assert pool.background(job_of(1, log)).finished.wait(5)
    tid = log[0][2]
    assert tid != threading.get_native_id()
    assert os.getpriority(os.PRIO_PROCESS, tid) == 19


def test_cancelled_timer_calls_are_not_made():
    pool = Pool(1)
    made: list = []
    first = pool.after(0.01, lambda: made.append("first"))
    pool.after(0.02, lambda: made.append("second"))
    first.cancel()
    time.sleep(0.2)
    assert made == ["second"]


def test_jobs_cancelled_while_waiting_are_let_go():
    pool = Pool(1)
    log: list = []
    with pool.replying():
        first = pool.background(job_of(3, log))
        first.cancel()
        second = pool.background(job_of(1, log))
        assert first.finished.is_set() and list(pool._jobs) == [second]
    assert second.finished.wait(5)
    assert [e[0] for e in log] == [0, "done"]


def test_room_for_background_work_only_after_a_quiet_moment():
    """Replies back to back (many sessions' at once) leave none: has_room is False until a
    QUIET gap, and stays True for ROOM after one."""
    pool = Pool(1)
    assert pool.has_room()  # nothing answered yet
    stop = time.monotonic() + 0.3
    while time.monotonic() < stop:
        with pool.replying():
            time.sleep(0.001)
    assert not pool.has_room()  # the last quiet moment is more than ROOM ago
    with pool.replying():
        assert not pool.has_room()
    time.sleep(parallel.QUIET * 2)
    assert pool.has_room()  # a quiet moment now
    with pool.replying():  # an interaction after a quiet moment: room for its structures
        assert pool.has_room()


class Held:
    """Something a task holds (in the server: a session, a replaced capture's arrays)."""


def let_go(ref, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while ref() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    return ref() is None


def test_what_ran_is_not_kept_alive_by_the_waiting_threads():
    """A reply task, a background job's chunks and `done`, and a timer call are let go once
    made: a thread waiting for the next one holds nothing of the last (the server's
    replaced capture stayed alive until the next reply, background job or timer call)."""
    import weakref

    pool = Pool(1)
    held = [Held() for _ in range(5)]
    refs = [weakref.ref(h) for h in held]

    def chunks(h):
        yield lambda: h
    pool.run([lambda h=held[0]: h, lambda h=held[0]: h, lambda h=held[1]: h])
    job = pool.background(Job(chunks(held[2]), lambda h=held[3]: h))
    assert job.finished.wait(5)
    made = threading.Event()
    pool.after(0.01, lambda h=held[4]: made.set() or h)
    assert made.wait(5)
    del held, job
    assert all(let_go(r) for r in refs), [r() is not None for r in refs]
