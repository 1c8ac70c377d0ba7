"""engine/api.py is the contract every engine implements: Brushfire's sessions and the
baselines' are `SessionAPI`s (their stores `StoreInfo`s), and `protocol.handle` answers
them alike, parameters included. On the rich dashboard, captured without Spark."""

from __future__ import annotations

import pytest

from brushfire import protocol
from brushfire.engine.api import LineageAPI, SessionAPI


def test_brushfire_sessions_are_lineage_sessions(rich_local):
    s = rich_local.session()
    assert isinstance(s, SessionAPI) and isinstance(s, LineageAPI)


def test_baseline_sessions_implement_the_session_api(rich_local):
    pytest.importorskip("duckdb")
    from brushfire.baselines import with_engine
    from brushfire.baselines.base import BaselineStore

    served = with_engine(rich_local, "duckdb")
    s = served.session()
    assert isinstance(s, SessionAPI) and not isinstance(s, LineageAPI)
    assert isinstance(s.store, BaselineStore) and s.store.n_rows == rich_local.store.n_rows
    assert s.store.parameter_domain("pdest") == rich_local.store.parameter_domain("pdest")
    own = rich_local.session()
    for m in [{"type": "parameter", "name": "pdest", "value": "BBB"},
              {"type": "parameter", "name": "pm", "value": 100},
              {"type": "filters", "filters": {"pt": {"parameter": "2021-02-01"}, "hx": {"interval": [0, 50]}}},
              {"type": "parameter", "name": "pdest", "value": "bbb"}]:
        got, want = protocol.handle(s, m), protocol.handle(own, m)
        assert got["type"] == want["type"], (m, got)
        assert got.get("filters") == want.get("filters") and got.get("selected") == want.get("selected")
        assert got.get("message") == want.get("message")
