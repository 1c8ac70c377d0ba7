"""The HTTP + WebSocket server (FastAPI). `create_app` is the factory."""

import sys

# jsonschema (imported by altair, which draws the charts) imports rfc3987_syntax when it is
# installed (Jupyter installs jsonschema[format-nongpl]); building its grammar at import
# takes 2-3 s, a third of a server's start (100M rows: 9 s), for an IRI format check that
# nothing in a server runs. Without the module, jsonschema leaves that check out.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

from brushfire.server.app import create_app  # noqa: E402

__all__ = ["create_app"]
