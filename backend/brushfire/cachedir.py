"""Where the lineage cache is when no one says: `$BRUSHFIRE_CACHE`, else the user's cache
directory, so that `brushfire serve`, `capture`, `demo` and a notebook started from
different folders share one capture of a dashboard (`--cache-dir` and `cache_dir=` still
name another).

The user's cache directory is the platform's: `$XDG_CACHE_HOME/brushfire` when that is
an absolute path (the XDG Base Directory spec ignores relative ones), else
`~/.cache/brushfire` on Linux and other Unixes; `~/Library/Caches/brushfire` on macOS;
`%LOCALAPPDATA%\\brushfire\\Cache` on Windows.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

APP = "brushfire"


def default_cache_dir(environ: Mapping[str, str] | None = None, platform: str | None = None,
                      home: str | None = None) -> str:
    """The default lineage cache directory (an absolute path) for `environ` (default
    os.environ) on `platform` (default sys.platform) for a user whose home is `home`
    (default: the current user's)."""
    env = os.environ if environ is None else environ
    plat = sys.platform if platform is None else platform
    if env.get("BRUSHFIRE_CACHE"):
        return env["BRUSHFIRE_CACHE"]
    if plat == "win32":
        base = env.get("LOCALAPPDATA") or str(PureWindowsPath(home or _home(), "AppData", "Local"))
        return str(PureWindowsPath(base, APP, "Cache"))
    if plat == "darwin":
        return str(PurePosixPath(home or _home(), "Library", "Caches", APP))
    xdg = env.get("XDG_CACHE_HOME", "")
    base = xdg if xdg.startswith("/") else str(PurePosixPath(home or _home(), ".cache"))
    return str(PurePosixPath(base, APP))


def _home() -> str:
    try:
        return str(Path.home())
    except RuntimeError:  # no $HOME and no password entry: a folder of this user's in /tmp
        user = os.getuid() if hasattr(os, "getuid") else "user"
        return str(Path(tempfile.gettempdir()) / f"{APP}-{user}")
