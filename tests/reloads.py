"""Two reloads of one dashboard at once, made deterministic (the server's and the widget's
tests): data that change (`Data.version`), captures of them that count themselves and
block until the test releases them, and a lock that says when a caller has to wait for
it. No sleeps: each step waits for the event that says the one before happened."""

from __future__ import annotations

import threading

WAIT = 60.0  # seconds before a test stuck on an event gives up (never reached when it passes)


class Data:
    """A source whose data change, and the captures made of them."""

    def __init__(self) -> None:
        self.version = 1  # the data as they are now (a capture serving 0 is stale)
        self.captures: list[int] = []  # the version each capture read, in order
        self.running = self.most = 0  # captures running now, and the most at once
        self.started = threading.Event()  # the first capture is running
        self.arrived = threading.Event()  # a second reload waits, or (the defect) captures too
        self.release = threading.Event()  # the captures may finish
        self._lock = threading.Lock()

    def capture(self) -> int:
        """One capture of the data as they are now: counted, blocked until `release`;
        returns the version it read."""
        with self._lock:
            version = self.version
            self.captures.append(version)
            self.running += 1
            self.most = max(self.most, self.running)
            (self.arrived if len(self.captures) > 1 else self.started).set()
        try:
            self.release.wait(WAIT)
        finally:
            with self._lock:
                self.running -= 1
        return version


class Contended:
    """A lock (a context manager) that sets `arrived` when a caller finds it taken: the
    test knows the second reload waits for the first before it lets the first finish."""

    def __init__(self, arrived: threading.Event) -> None:
        self._lock = threading.Lock()
        self.arrived = arrived

    def __enter__(self) -> Contended:
        if not self._lock.acquire(blocking=False):
            self.arrived.set()
            self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def race(reload, data: Data, changed_again: bool) -> dict[str, bool]:
    """`reload()` from a thread (the watch's), then, while its capture runs (and the data
    changed again, when `changed_again`), from another (a user's): each one's result."""
    results: dict[str, bool] = {}
    first = threading.Thread(target=lambda: results.__setitem__("watch", reload()))
    first.start()
    assert data.started.wait(WAIT)
    if changed_again:  # (a file appended while the first capture reads)
        data.version = 2
    second = threading.Thread(target=lambda: results.__setitem__("asked", reload()))
    second.start()
    assert data.arrived.wait(WAIT)
    data.release.set()
    first.join(WAIT)
    second.join(WAIT)
    return results
