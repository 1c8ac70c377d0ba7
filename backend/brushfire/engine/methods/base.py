"""base: no active filter applies to a view, so it shows its base result (captured with
the store). Free: the coordinator takes it whenever it applies, unplanned."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def answer(session: Session, view: str) -> None:
    """The view's slots of the session's aggregates set to the store's base result."""
    session.agg.set(session._s.base, session._vl(view).all_slots)
