"""brushfire.cachedir: the lineage cache is the user's cache directory by default, the same
whatever the current directory, so serve, capture and a notebook share one capture."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from brushfire.cachedir import default_cache_dir


@pytest.mark.parametrize(("environ", "platform", "expected"), [
    ({}, "linux", "/home/ann/.cache/brushfire"),
    ({"XDG_CACHE_HOME": "/var/cache/ann"}, "linux", "/var/cache/ann/brushfire"),
    ({"XDG_CACHE_HOME": "cache"}, "linux", "/home/ann/.cache/brushfire"),  # relative: ignored (XDG)
    ({"XDG_CACHE_HOME": ""}, "freebsd14", "/home/ann/.cache/brushfire"),
    ({"BRUSHFIRE_CACHE": "/data/lineage", "XDG_CACHE_HOME": "/x"}, "linux", "/data/lineage"),
    ({"BRUSHFIRE_CACHE": ""}, "linux", "/home/ann/.cache/brushfire"),  # set but empty: unset
    ({"XDG_CACHE_HOME": "/x"}, "darwin", "/home/ann/Library/Caches/brushfire"),
    ({"LOCALAPPDATA": "C:\\Users\\ann\\AppData\\Local"}, "win32",
     "C:\\Users\\ann\\AppData\\Local\\brushfire\\Cache"),
])
def test_the_default_cache_directory(environ, platform, expected):
    assert default_cache_dir(environ, platform, home="/home/ann") == expected


def test_serve_capture_and_notebooks_in_different_folders_share_one_cache(tmp_path):
    """Dashboard.open's default (and the CLI's) is one absolute directory: started from two
    folders, a process finds the capture the other made."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("BRUSHFIRE_CACHE", "XDG_CACHE_HOME")}
    seen = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        run = subprocess.run([sys.executable, "-c", "from brushfire.dashboard import DEFAULT_CACHE; "
                              "print(DEFAULT_CACHE)"], cwd=tmp_path / folder, check=True,
                             capture_output=True, text=True, env={**env, "HOME": str(home)})
        seen.append(run.stdout.strip())
    assert seen == [str(home / ".cache" / "brushfire")] * 2


def test_the_tests_capture_into_a_cache_of_their_own():
    """A test run never writes into the user's cache directory (tests/conftest.py)."""
    import tempfile

    from brushfire.dashboard import DEFAULT_CACHE

    assert os.environ["BRUSHFIRE_CACHE"] == DEFAULT_CACHE
    assert os.path.basename(DEFAULT_CACHE).startswith("brushfire-test-cache-")
    assert os.path.dirname(DEFAULT_CACHE) == tempfile.gettempdir()


def test_no_test_imports_conftest():
    """Importing `conftest` by name makes a second module under --import-mode=importlib,
    whose setup points BRUSHFIRE_CACHE at another folder mid-run: shared helpers live in
    modules of their own (tests/rows.py)."""
    from pathlib import Path

    tests = Path(__file__).parent
    imports = ("from conftest import", "import conftest")
    offenders = [str(p.relative_to(tests)) for p in tests.rglob("*.py") if p != Path(__file__)
                 and any(line.lstrip().startswith(imports) for line in p.read_text().splitlines())]
    assert offenders == []


def test_a_capture_without_a_cache_leaves_no_temporary_directory_behind(tmp_path):
    """With no cache directory (or one that cannot be written) a capture goes to a temporary
    directory no later process can find: it is removed when the process exits."""
    script = ("import pyarrow as pa; from brushfire.capture.local import capture_tables; "
              "from brushfire.plan import plan_capture; from brushfire.spec import parse_dashboard; "
              "d = parse_dashboard({'name': 't', 'source': {'path': '/nonexistent/t.parquet'}, "
              "'views': [{'name': 'x', 'type': 'categorical', 'field': 'x'}]}); "
              "s = capture_tables(plan_capture(d), {'f': pa.table({'x': [1, 2, 2]})}, None); "
              "print(s.directory)")
    run = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    made = run.stdout.strip().splitlines()[-1]
    assert made.startswith(str(tmp_path / "brushfire-cache-")), made
    assert not list(tmp_path.glob("brushfire-cache-*")), list(tmp_path.iterdir())
