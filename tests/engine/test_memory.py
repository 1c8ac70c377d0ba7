"""What sessions leave behind (issue 36, defect 1): a closed session's background work stops
and what it built is freed; all sessions' conditional cubes stay within the process's
budget (engine/memory.py), least recently used dropped first."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from brushfire.engine import memory, parallel
from brushfire.engine import session as S
from brushfire.engine.parallel import Pool
from brushfire.engine.session import Session


def brushes(s: Session, i: int = 0) -> None:
    """Several filters at once, then moves of one: conditional cubes get built (prefer="tile")."""
    s.select("cat", ["c00", "c01"])
    s.brush("hk", (0, 60 + i))
    for lo in (10, 12, 14, 16):
        s.brush("hx", (lo + i, 70))


@pytest.fixture
def budget(monkeypatch):
    """A budget of the process's own for the test (other tests' sessions are not in it)."""
    b = memory.Budget(1 << 30)
    monkeypatch.setattr(memory, "_CUBES", b)
    return b


def tile_jobs(pool: Pool) -> list:
    """The queued jobs building conditional cubes (the store's key copies may be queued too)."""
    return [j for j in pool._jobs if hasattr(j, "tile_key")]


def settled(s: Session) -> bool:
    """Its builds done, speculation's included (it starts IDLE_SECONDS after a reply)."""
    time.sleep(S.IDLE_SECONDS + 0.05)
    return wait_until(lambda: all(j.finished.is_set() for j in list(s._tile_jobs.values())))


def wait_until(test, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_closed_session_stops_its_background_work_and_frees_what_it_built(rich_local, budget):
    pool = Pool(1)
    s = Session(rich_local.store, rich_local.plan, pool=pool, prefer="tile")
    with pool.replying():  # replies back to back: the builds wait in the queue, as in a replay
        brushes(s)
        queued = tile_jobs(pool)
        assert queued and budget.usage()["bytes"] > 0
    s.close()
    assert all(j.cancelled for j in queued) and not tile_jobs(pool)  # none left to run for it
    assert not s._tiles and not s._tile_jobs and budget.usage()["bytes"] == 0
    time.sleep(S.IDLE_SECONDS + parallel.QUIET + 0.2)  # the pause after which it would speculate
    assert not tile_jobs(pool) and not s._tiles and budget.usage()["structures"] == 0
    ref = weakref.ref(s)
    del s
    gc.collect()
    assert ref() is None  # nothing of the pool's (queue, timers) keeps it alive


def test_a_session_closed_while_its_cubes_are_built_keeps_none(rich_local, budget):
    pool = Pool(1)
    s = Session(rich_local.store, rich_local.plan, pool=pool, prefer="tile")
    brushes(s)
    assert settled(s) and s._tiles  # built in the quiet after the replies
    assert budget.usage()["bytes"] == sum(t.nbytes for t in s._tiles.values())
    s.close()
    assert not s._tiles and budget.usage() == {"bytes": 0, "budget": budget.cap, "structures": 0}
    s.brush("hx", (20, 40))  # a closed session still answers, without background work
    time.sleep(S.IDLE_SECONDS + 0.2)
    assert not tile_jobs(pool) and not s._tiles


def test_every_sessions_cubes_stay_within_the_budget_least_recently_used_dropped(rich_local, monkeypatch):
    pool = Pool(1)
    probe = Session(rich_local.store, rich_local.plan, pool=pool, prefer="tile")
    brushes(probe)
    assert settled(probe) and probe._tiles
    one = max(t.nbytes for t in probe._tiles.values())
    probe.close()
    b = memory.Budget(3 * one + one // 2)  # room for about three cubes (and one builder)
    monkeypatch.setattr(memory, "_CUBES", b)
    sessions = []
    for i in range(6):
        s = Session(rich_local.store, rich_local.plan, pool=pool, prefer="tile")
        brushes(s, i)
        assert settled(s)
        assert b.usage()["bytes"] <= b.cap
        sessions.append(s)
    held = [bool(s._tiles) for s in sessions]
    assert held[-1] and not held[0]  # the newest keep theirs; the oldest lost theirs first
    assert b.usage()["bytes"] == sum(t.nbytes for s in sessions for t in s._tiles.values())
    for s in sessions:
        s.close()
    assert b.usage()["bytes"] == 0


def test_a_cube_larger_than_the_whole_budget_is_not_built(rich_local, monkeypatch):
    monkeypatch.setattr(memory, "_CUBES", memory.Budget(1024))
    pool = Pool(1)
    s = Session(rich_local.store, rich_local.plan, pool=pool, prefer="tile")
    brushes(s)
    time.sleep(S.IDLE_SECONDS + 0.2)
    assert not s._tiles and not tile_jobs(pool)
    assert s.brush("hx", (5, 50)).views  # answered without one


def test_budget_reservations():
    class Owner:
        def __init__(self):
            self.dropped = []

        def _drop_reserved(self, key, token):
            self.dropped.append((key, token))

    b = memory.Budget(100)
    a, c = Owner(), Owner()
    t1 = b.reserve(a, "x", 40)
    t2 = b.reserve(c, "y", 40)
    assert b.reserve(a, "huge", 101) is None and a.dropped == []
    b.touch(t1)  # x used last: y goes first
    t3 = b.reserve(a, "z", 40)
    assert c.dropped == [("y", t2)] and not b.holds(t2) and b.holds(t1) and b.holds(t3)
    assert not b.resize(t2, 10) and b.resize(t3, 20)
    assert b.usage() == {"bytes": 60, "budget": 100, "structures": 2}
    assert b.release_owner(a) == 60 and b.usage()["bytes"] == 0
    t4 = b.reserve(c, "w", 10)
    del c
    gc.collect()
    assert b.usage()["bytes"] == 0 and not b.holds(t4)  # an owner gone holds nothing


def test_usage_reports_every_budget():
    got = memory.usage()
    assert set(got) == {"conditional_cubes", "key_copies", "details_orders", "process"}
    assert all({"bytes", "budget"} <= set(v) for k, v in got.items() if k != "process")
    assert got["process"]["rss"] >= got["process"]["anon"] > 0  # Linux: /proc/self/status


def test_a_bad_cube_memory_names_the_variable(monkeypatch):
    """A BRUSHFIRE_CUBE_MEMORY parse_size cannot read failed every session's opening (a
    notebook's too) with a ValueError that named no variable."""
    from brushfire.errors import BrushfireError

    monkeypatch.setenv(memory.CUBE_MEMORY_ENV, "lots")
    with pytest.raises(BrushfireError, match=r"^BRUSHFIRE_CUBE_MEMORY: a memory size is a number"):
        memory.default_cap()
    monkeypatch.setenv(memory.CUBE_MEMORY_ENV, "0")
    assert memory.default_cap() == 0


def test_no_cubes_are_planned_while_other_sessions_keep_the_pool_busy(rich_local, budget):
    """Replies back to back (other sessions brushing flat out) leave background work no
    room: a session pausing between its brushes plans no conditional cube that would only
    wait in the queue (its plan and its budget spent for nothing)."""
    pool = Pool(1)
    s = Session(rich_local.store, rich_local.plan, pool=pool)
    stop = threading.Event()

    def others() -> None:
        while not stop.is_set():
            with pool.replying():
                time.sleep(0.002)

    busy = threading.Thread(target=others)
    busy.start()
    try:
        time.sleep(0.2)
        brushes(s)
        time.sleep(S.IDLE_SECONDS + 0.2)  # the pause after which it would prepare cubes
        assert not tile_jobs(pool) and budget.usage()["structures"] == 0
    finally:
        stop.set()
        busy.join()
    s.brush("hx", (20, 40))
    time.sleep(S.IDLE_SECONDS + 0.2)
    assert tile_jobs(pool) or s._tiles  # quiet again: prepared
    s.close()
