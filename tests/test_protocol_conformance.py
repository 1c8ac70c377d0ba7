"""One protocol, three transports: the same scripted interactions played through
`protocol.handle`, the WebSocket server and the Jupyter widget's comm must get equal
replies (the engine's time, `ms`, aside). On the rich dashboard, captured without Spark."""

from __future__ import annotations

import json

import comm
from comm.base_comm import BaseComm
from websockets.sync.client import connect

from brushfire import protocol
from brushfire.server import create_app
from brushfire.widget import DashboardWidget
from live_server import live_server

SCRIPT = [
    {"type": "state"},
    {"type": "brush", "view": "hx", "interval": [20, 60]},
    {"type": "brush", "view": "heat", "interval": [0, 50], "y": [None, 60]},
    {"type": "select", "view": "cat", "values": ["c01", "(other)"]},
    {"type": "parameter", "name": "pdest", "value": "AAA"},
    {"type": "parameter", "name": "pt", "value": "2021-02-01"},
    {"type": "highlight", "source": "cat", "bars": [0, 1]},
    {"type": "details", "page": 0},
    {"type": "details", "view": "hx", "bars": [3], "page": 1, "page_size": 3, "columns": ["x"]},
    {"type": "clear", "view": "heat"},
    {"type": "filters", "filters": {"week": {"interval": ["2021-01-15", "2021-03-01T12:00:00Z"]},
                                    "hk": {"interval": [None, 40]}, "pm": {"parameter": 100}}},
    {"type": "state"},
    {"type": "filters", "filters": {"hk": {"interval": [0, 1]}, "cat": {"values": ["zzz"]}}},  # refused
    {"type": "brush", "view": "hx", "interval": ["a", 1]},  # refused
    {"type": "zoom"},  # refused
    {"type": "select", "view": "cat", "values": []},
    {"type": "clear"},
    {"type": "filters", "filters": {"heat": {"rect": {"x": [10, 90], "y": [0, 100]}}}},
    {"type": "details", "page": 2, "page_size": 4},
]


def normal(reply: dict) -> dict:
    """A reply as JSON carries it, without the engine's time."""
    return {k: v for k, v in json.loads(json.dumps(reply, default=str)).items() if k != "ms"}


def by_handle(dash) -> list[dict]:
    session = dash.session()
    return [normal(protocol.handle(session, {**m, "id": i})) for i, m in enumerate(SCRIPT)]


def by_websocket(dash) -> list[dict]:
    with live_server(create_app([dash])) as addr, connect(f"ws://{addr}/ws/{dash.name}") as ws:
        out = []
        for i, m in enumerate(SCRIPT):
            ws.send(json.dumps({**m, "id": i}))
            out.append(normal(json.loads(ws.recv(timeout=30))))
        return out


class Frontend(BaseComm):
    """The widget's comm as a kernel holds it; the test is the front end."""

    def __init__(self, **kwargs) -> None:
        self.sent: list[dict] = []
        super().__init__(**kwargs)

    def publish_msg(self, msg_type: str, data=None, metadata=None, buffers=None, **keys) -> None:
        if msg_type == "comm_msg" and data["method"] == "custom":
            self.sent.append(data["content"])

    def receive(self, content: dict) -> dict:
        self.handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})
        return self.sent[-1]


def by_widget(dash, monkeypatch) -> list[dict]:
    monkeypatch.setattr(comm, "create_comm", Frontend)
    w = DashboardWidget(dash)
    return [normal(w.comm.receive({**m, "id": i})) for i, m in enumerate(SCRIPT)]


def test_handle_websocket_and_widget_give_equal_replies(rich_local, monkeypatch):
    # `methods` say whether the store's key copies were there yet (built in the background,
    # in a quiet moment): all three meet them built, as the server and the widget do
    assert rich_local.engine_session().wait_for_copies(timeout=60)
    direct = by_handle(rich_local)
    assert [r["type"] for r in direct] == [
        "state", "update", "update", "update", "update", "update", "highlight", "details", "details",
        "update", "update", "state", "error", "error", "error", "update", "update", "update", "details"]
    assert direct[11]["filters"] == {"week": {"interval": ["2021-01-15", "2021-03-01T12:00:00Z"]},
                                     "hk": {"interval": [None, 40]}, "pm": {"parameter": 100}}
    assert direct[12]["message"].startswith("filters.cat.values[0]: 'zzz' is not one of the values")
    assert direct[17]["filters"] == {"heat": {"rect": {"x": [10, 90], "y": [0, 100]}}}
    assert by_websocket(rich_local) == direct
    assert by_widget(rich_local, monkeypatch) == direct
