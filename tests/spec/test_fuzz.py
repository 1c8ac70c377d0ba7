"""A mutation fuzzer over the repository's dashboards (dashboards/*.yaml, the gallery) on
small generated data: a few hundred seeded mutations, of the parsed document (a key
deleted, renamed with a typo or added; a value of another type, nested wrongly, a list for
a map; huge, zero and negative numbers; empty lists; names of views, columns and joins
that do not exist; unicode names; join cycles) and of the text (duplicate keys, tabs, a
byte-order mark, bytes that are not UTF-8, anchors and aliases, lone surrogates, `~user`
paths, cut files). Each one `brushfire validate` refuses with `file:line: ...` (exit 1, no
traceback), or takes, and then it plans, captures (in this process, without Spark, where
the source needs none) and answers a session's messages without an internal error.

BRUSHFIRE_SPEC_FUZZ (default 300) sets how many; BRUSHFIRE_SPEC_FUZZ_SEED the seed."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import traceback
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import yaml

from brushfire import Dashboard, cli, protocol, wire
from brushfire.capture.local import capture_table
from brushfire.describe import describe_dashboard
from brushfire.plan import plan_capture
from brushfire.spec import load_dashboard
from gallery import SPECS as GALLERY_SPECS
from gallery import table_of, write_sample

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "dashboards").glob("*.yaml")) + GALLERY_SPECS
MUTATIONS = int(os.environ.get("BRUSHFIRE_SPEC_FUZZ", "300"))
SEED = int(os.environ.get("BRUSHFIRE_SPEC_FUZZ_SEED", "20261207"))

WEIRD = [None, True, False, 0, -1, -10, 1.5, 10**30, 1e308, -1e308, 1e-300, float("nan"), float("inf"),
         "", "x", "nope", "délai", "名前", "a b", "a\u202eb", "🔥", [], [1, 2], ["x"], {}, {"a": 1},
         "2012-02-30", "${NOPE}", "~no-such-user-brushfire/x", "0", "true", "010", "1:30"]
NAMES = ["nope", "origin_airport.nope", "nope.x", "délai", "名前", "🔥", "a.b.c", "x" * 300, "rid"]


def write_data(folder: Path) -> None:
    """The files the seed dashboards read, small: data/flights-3m.parquet (its schema),
    data/airports.csv and the gallery's samples."""
    (folder / "gallery").mkdir(parents=True)
    rng = np.random.default_rng(1)
    n = 1500
    codes = np.array(["ORD", "ATL", "DFW", "LAX", "SFO", "DEN", "PHX", "LAS"])
    pq.write_table(pa.table({
        "date": pa.array([datetime(2001, 1, 1) + timedelta(minutes=int(m)) for m in rng.integers(0, 260_000, n)],
                         pa.timestamp("us")),
        "delay": rng.integers(-60, 300, n), "distance": rng.integers(30, 3000, n),
        "origin": pa.array(rng.choice(codes, n), pa.large_string()),
        "destination": pa.array(rng.choice(codes, n), pa.large_string())}), folder / "flights-3m.parquet")
    rows = [f"{c},Airport {c},City {c},S{i % 3},USA,{30 + i},{-90 - i}" for i, c in enumerate(codes)]
    (folder / "airports.csv").write_text("\n".join(["iata,name,city,state,country,latitude,longitude", *rows]) + "\n")
    for spec in GALLERY_SPECS:
        write_sample(table_of(spec), folder / "gallery", n=400)


def _paths(x, prefix=()):
    yield prefix, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _paths(v, (*prefix, i))


def _at(x, path):
    for k in path:
        x = x[k]
    return x


def _set(doc, path, value) -> None:
    _at(doc, path[:-1])[path[-1]] = value


def _typo(key, rng: random.Random) -> str:
    if not isinstance(key, str) or len(key) < 2:
        return f"{key}x"
    i = rng.randrange(len(key) - 1)
    return rng.choice([key[:i] + key[i + 1] + key[i] + key[i + 2:], key[:i] + key[i + 1:], key + "s", key.upper()])


def mutate_document(doc, rng: random.Random):
    """One mutation of the parsed spec."""
    every = [p for p, _ in _paths(doc) if p]
    path = rng.choice(every)
    parent, key, value = _at(doc, path[:-1]), path[-1], _at(doc, path)
    of = {kind: [p for p, v in _paths(doc) if p and test(v)] for kind, test in (
        ("number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
        ("list", lambda v: isinstance(v, list)), ("map", lambda v: isinstance(v, dict)),
        ("text", lambda v: isinstance(v, str)))}
    how = rng.randrange(12)
    if how == 0:
        del parent[key]
    elif how == 1:
        parent[key] = rng.choice(WEIRD)
    elif how == 2:  # nested wrongly
        parent[key] = rng.choice([[value], {"value": value}, {str(key): value}])
    elif how == 3 and isinstance(parent, dict):  # a typo in a key
        parent[_typo(key, rng)] = parent.pop(key)
    elif how == 4 and of["number"]:
        p = rng.choice(of["number"])
        _set(doc, p, rng.choice([0, -_at(doc, p), -1, 10**30, 1e308, 1e-12, 0.5, 10**400, 2**63]))
    elif how == 5 and of["list"]:
        _set(doc, rng.choice(of["list"]), [])
    elif how == 6 and of["map"]:  # a list where a map goes
        p = rng.choice(of["map"])
        _set(doc, p, rng.choice([list(_at(doc, p).items()), [_at(doc, p)], list(_at(doc, p))]))
    elif how == 7 and of["text"]:  # a name of nothing
        _set(doc, rng.choice(of["text"]), rng.choice(NAMES))
    elif how == 8 and [p for p in of["list"] if _at(doc, p)]:  # an item twice (a view, a join...)
        items = _at(doc, rng.choice([p for p in of["list"] if _at(doc, p)]))
        items.insert(rng.randrange(len(items) + 1), rng.choice(items))
    elif how == 9:  # an unknown key
        _at(doc, rng.choice([p for p, v in _paths(doc) if isinstance(v, dict)]))[
            rng.choice(["extra", "colour", "Name", "views", "type", "bin", "field", "on", "key", "top"])] = \
            rng.choice(WEIRD)
    elif how == 10:  # two parts swapped
        a, b = rng.choice(every), rng.choice(every)
        with contextlib.suppress(LookupError, TypeError):
            va, vb = _at(doc, a), _at(doc, b)
            _set(doc, a, vb)
            _set(doc, b, va)
    else:  # joins on one another (a cycle, or a join below)
        joins = (doc.get("source") or {}).get("joins") if isinstance(doc.get("source"), dict) else None
        if isinstance(joins, list) and joins and all(isinstance(j, dict) for j in joins):
            rng.choice(joins)["on"] = f"{rng.choice(joins).get('name')}.{rng.choice(['iata', 'state', 'nope'])}"
        else:
            parent[key] = rng.choice(WEIRD)
    return doc


def mutate_text(text: str, rng: random.Random) -> bytes:
    """One mutation of the spec's text."""
    lines = text.split("\n")
    keyed = [i for i, line in enumerate(lines) if re.match(r"\s*-?\s*[\w-]+: \S", line)]
    how = rng.randrange(11)
    i = rng.randrange(len(lines))
    if how == 0 and keyed:  # a duplicate key
        j = rng.choice(keyed)
        lines.insert(j + 1, lines[j])
    elif how == 1:
        lines[i] = "\t" + lines[i].lstrip(" ")
    elif how == 2:
        return b"\xef\xbb\xbf" + text.encode()
    elif how == 3:
        b = text.encode()
        k = rng.randrange(len(b))
        return b[:k] + rng.choice([b"\xff", b"\xe9", b"\xc3", b"\x80\x80", b"\xed\xa0\x80"]) + b[k:]
    elif how == 4 and len(keyed) >= 2:  # an anchor, and its alias elsewhere
        a, b = sorted(rng.sample(keyed, 2))
        ka, va = lines[a].split(":", 1)
        lines[a] = f"{ka}: &anchor {va.strip()}"
        lines[b] = lines[b].split(":", 1)[0] + ": *anchor"
    elif how == 5:
        return text[: rng.randrange(len(text))].encode()
    elif how == 6:
        k = rng.randrange(len(text))
        mark = rng.choice([":", "-", "[", "{", '"', "'", "&", "*", "!", "%", "@", "`", "|", ">", "#", "\x07",
                           "\u2028", "\x00"])
        return (text[:k] + mark + text[k:]).encode()
    elif how == 7:
        del lines[i]
    elif how == 8 and keyed:  # an escaped lone surrogate or pair, or a ~user path
        paths = [j for j in keyed if re.match(r"\s*-?\s*(path|trace):", lines[j])]
        j = rng.choice(paths if paths and rng.random() < 0.5 else keyed)
        lines[j] = lines[j].split(":", 1)[0] + rng.choice([': "a\\ud800"', ': "\\ud83d\\udd25"',
                                                            ": ~no-such-user-brushfire/x.parquet"])
    elif how == 9:
        lines[i] = rng.choice(["  ", " "]) + lines[i] if rng.random() < 0.5 else lines[i].lstrip()
    else:
        lines[i] += rng.choice([" # c", "  ", " ~", " !!str", " &x", " *x", " 010", " 1:30"])
    return "\n".join(lines).encode()


def run(argv: list[str]) -> tuple[object, str]:
    """`brushfire ARGV` in this process: (exit code, or 'traceback'; stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
        except BaseException:  # noqa: BLE001 - what the test looks for
            code = "traceback"
            err.write(traceback.format_exc())
    return code, err.getvalue()


def exercise(path: Path, cache: Path) -> None:
    """A spec validate took: planned, and (a source Spark need not compute) captured in this
    process, opened, and every filter and a details page asked; no reply an internal error."""
    assert run(["plan", str(path)])[0] == 0
    dash = load_dashboard(path)
    if dash.source.columns or dash.source.filters or (dash.profile and dash.profile.fd):
        return  # (Spark SQL: capture/local.py does not compute them)
    plan = plan_capture(dash)
    joins = {j.name: pcsv.read_csv(j.path) for j in dash.source.joins}
    session = Dashboard(dash, plan, capture_table(plan, pq.read_table(dash.source.path), cache,
                                                  joins=joins)).engine_session()
    messages = [{"type": "state"}, {"type": "details"}, {"type": "clear"}]
    for f in plan.filters:
        if f.kind in ("interval", "rect"):
            messages.append({"type": "brush", "view": f.name, "interval": [None, None],
                             **({"y": [None, None]} if f.kind == "rect" else {})})
        elif f.kind == "points" and (labels := session.view(f.name).labels):
            messages.append({"type": "select", "view": f.name, "values": [labels[0]]})
    # the description as the server sends it (FastAPI's JSONResponse: UTF-8, no NaN)
    json.dumps(describe_dashboard(Dashboard(dash, plan, session.store)), ensure_ascii=False,
               allow_nan=False, default=str).encode()
    for m in messages:
        reply = protocol.handle(session, m)
        assert not (reply["type"] == "error" and "internal error" in reply["message"]), (m, reply)
        wire.dumps(reply)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> list[Path]:
    """The seed dashboards, copied where their relative paths find the generated data."""
    root = tmp_path_factory.mktemp("spec-fuzz")
    write_data(root / "data")
    (root / "dashboards" / "gallery").mkdir(parents=True)
    out = []
    for spec in SEEDS:
        out.append(root / "dashboards" / spec.relative_to(ROOT / "dashboards"))
        shutil.copy(spec, out[-1])
    return out


def test_every_seed_dashboard_is_valid_on_the_generated_data(seeds) -> None:
    for path in seeds:
        assert run(["validate", str(path)]) == (0, ""), path


def test_every_mutated_spec_is_refused_at_its_line_or_taken_and_served(seeds) -> None:
    rng = random.Random(SEED)
    taken = refused = 0
    for n in range(MUTATIONS):
        seed = rng.choice(seeds)
        text = seed.read_text()
        if rng.random() < 0.6:
            doc = yaml.safe_load(text)
            for _ in range(rng.choice([1, 1, 2, 3])):
                doc = mutate_document(doc, rng)
            data = yaml.safe_dump(doc, sort_keys=False, allow_unicode=rng.random() < 0.5).encode()
        else:
            data = mutate_text(text, rng)
        path = seed.parent / f"mutant{n}.yaml"
        path.write_bytes(data)
        code, err = run(["validate", str(path)])
        where = f"mutant {n} of {seed.name}: {path}\n{err[-2000:]}"
        if code == 0:
            taken += 1
            exercise(path, seed.parent / f"cache{n}")
        else:
            refused += 1
            assert code == 1, where
            assert re.match(rf"{re.escape(str(path))}:\d+: \S", err), where
            assert "Traceback" not in err, where
        path.unlink()
    assert taken > MUTATIONS // 20 and refused > MUTATIONS // 2, (taken, refused)
