"""The HTTP + WebSocket server (FastAPI). `create_app` is the factory."""

from brushfire.server.app import create_app

__all__ = ["create_app"]
