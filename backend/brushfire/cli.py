"""The `brushfire` command: parse arguments, call the library, print what it returns."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import threading
import time

from brushfire.cachedir import default_cache_dir
from brushfire.errors import BrushfireError, NotCapturedError
from brushfire.progress import ProgressLine

DESCRIPTION = """\
Linked-brushing dashboards over large data. A dashboard is a YAML spec (docs/spec.md): its
data, its views and the interactions users may perform. Brushfire captures the lineage
those interactions need on Spark, once, into a cache; then it answers every brush,
selection and details request from that lineage, in milliseconds.

A first run: `brushfire validate SPEC`, then `brushfire serve SPEC` and open the URL it
prints (the page shows the capture's progress on the first start)."""

SPEC_HELP = "the dashboard's YAML spec (docs/spec.md), e.g. dashboards/flights.yaml"
MASTER_HELP = "Spark master URL for capture (default: $BRUSHFIRE_SPARK_MASTER, else local[*])"
BUDGET_HELP = ("e.g. 16GB: above it, keep only cubes computed on Spark (default: "
               "$BRUSHFIRE_MEMORY_BUDGET, else no limit)")


def _cache_help(what: str = "lineage cache") -> str:
    return (f"{what} (default: $BRUSHFIRE_CACHE, else the user's cache directory; here "
            f"{default_cache_dir()})")


def _environment() -> str:
    user_cache = default_cache_dir({k: v for k, v in os.environ.items() if k != "BRUSHFIRE_CACHE"})
    rows = [("BRUSHFIRE_CACHE", f"the lineage cache (default {user_cache})"),
            ("BRUSHFIRE_SPARK_MASTER", "the Spark master capture runs on (default local[*])"),
            ("BRUSHFIRE_SPARK_CONF", "more Spark settings: 'spark.key=value spark.key=value'"),
            ("BRUSHFIRE_DRIVER_MEMORY", "the Spark driver's memory (default 8g)"),
            ("BRUSHFIRE_MEMORY_BUDGET", "keep only cubes for per-row lineage over it, e.g. 16GB"),
            ("BRUSHFIRE_COPY_MEMORY", "key copies built in memory (captures that stored none) at most"),
            ("BRUSHFIRE_CUBE_MEMORY", "all sessions' conditional cubes at most (default 1/16 of memory, <= 1 GiB)"),
            ("BRUSHFIRE_TOKEN", "serve: the access token clients must give"),
            ("BRUSHFIRE_FRONTEND", "serve: the built web page (default frontend/dist)"),
            ("BRUSHFIRE_TRUSTED_EXPRESSIONS", "1: any Spark SQL in specs' derived columns, filters")]
    return "environment:\n" + "\n".join(f"  {k:<30} {v}" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="brushfire", description=DESCRIPTION, epilog=_environment(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from brushfire import __version__

    parser.add_argument("--version", action="version", version=f"brushfire {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    def command(name: str, text: str, more: str = "") -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + "."
                              + (f" {more}" if more else ""))

    p = command("validate", "check dashboard specs (keys, values, and columns against the source's: "
                "Parquet or ORC footers, a Delta log, a CSV file's first line); no Spark needed",
                "Prints 'SPEC: ok', or each problem with its file, line and key.")
    p.add_argument("specs", nargs="+", metavar="spec", help="dashboard YAML specs")
    p.add_argument("--spark", action="store_true",
                   help="also let a local Spark analyse derived columns, filters and joins (their "
                        "exact types; no job runs, but a small one per join checks that its key is "
                        "unique). Capture always does.")
    p.add_argument("--spark-master", default=None, type=spark_master,
                   help="with --spark: the Spark master (default local[1])")

    p = command("plan", "print the capture plan: what lineage each view needs and why",
                "No Spark runs; the columns are checked against a local source's Parquet, ORC or "
                "Delta footers or CSV header, as capture checks them first; bins fitted to the data "
                "(maxbins, a step alone) are known once captured.")
    p.add_argument("spec", help=SPEC_HELP)
    p.add_argument("--cache-dir", default=None, type=directory,
                   help=_cache_help("lineage cache whose capture of this spec, if any, says which "
                                    "bins it fitted to the data"))

    p = command("capture", "capture a dashboard's lineage on Spark into the lineage cache",
                "Then print what was kept, what was reused of earlier captures and rebuilt, the "
                "timings and the sizes. serve, demo and the notebook widget load it from the "
                "cache while the spec, the source's files and the memory budget are unchanged; "
                "after a change, a capture reads only what changed.")
    p.add_argument("spec", help=SPEC_HELP)
    p.add_argument("--spark-master", default=None, type=spark_master, help=MASTER_HELP)
    p.add_argument("--cache-dir", default=None, type=directory, help=_cache_help())
    p.add_argument("--memory-budget", default=None, metavar="SIZE", type=memory_size, help=BUDGET_HELP)
    p.add_argument("--no-baseline", action="store_true",
                   help="skip timing the plain base queries and the one aggregation job for "
                        "comparison")
    p.add_argument("--recapture", action="store_true",
                   help="capture from scratch, reusing nothing of earlier captures")
    p.add_argument("--history", action="store_true",
                   help="list the earlier captures of the dashboard (spec hash, source "
                        "fingerprint, Brushfire version) instead")

    p = command("serve", "serve dashboards as a web page and over HTTP and WebSockets",
                "Each dashboard is loaded from the lineage cache, or captured on Spark first "
                "(its page shows the progress). Ctrl-C stops.")
    p.add_argument("specs", nargs="+", metavar="spec", help="dashboard YAML specs")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port to bind (default 8000)")
    p.add_argument("--spark-master", default=None, type=spark_master, help=MASTER_HELP)
    p.add_argument("--cache-dir", default=None, type=directory, help=_cache_help())
    p.add_argument("--memory-budget", default=None, metavar="SIZE", type=memory_size, help=BUDGET_HELP)
    p.add_argument("--watch", type=_positive_seconds, nargs="?", const=5.0, default=None,
                   metavar="SECONDS",
                   help="every SECONDS (default 5), check whether a source's files changed "
                        "(appended, rewritten, removed); then capture again, reading only what "
                        "changed, and serve the new capture: open pages redraw, their filters "
                        "kept (docs/spec.md, Growing data)")
    p.add_argument("--workers", type=_positive, default=1, metavar="N",
                   help="answer in N server processes on the port (default 1): each holds its "
                        "sessions and 1/N of the cores, memory budgets and session limits; "
                        "many sessions at once are answered faster with up to one per core. "
                        "The dashboards are captured first, then the workers start (not with "
                        "--watch; docs/deploy.md)")
    access = p.add_argument_group("access (docs/deploy.md, Security)")
    token = access.add_mutually_exclusive_group()
    token.add_argument("--token", nargs="?", const="", default=None, type=_token_text,
                       help="require this access token (without a value: a random one); default: "
                            "$BRUSHFIRE_TOKEN, else a random one unless --host is loopback")
    token.add_argument("--no-token", action="store_true",
                       help="require no token, even when --host is not loopback")
    access.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        type=_origin_text,
                        help="also accept browser requests from this origin, e.g. a Jupyter server's "
                             "http://localhost:8888 (repeatable; * for any); default: same origin only")
    access.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        type=_host_text,
                        help="also answer requests for this host name (repeatable; .example.com for "
                             "a domain, * for any); default: loopback names and the --host address")
    access.add_argument("--max-sessions", type=_positive, default=256, metavar="N",
                        help="WebSocket sessions open at once (default 256)")
    access.add_argument("--max-sessions-per-client", type=_positive, default=128, metavar="N",
                        help="sessions open at once per client address (default 128)")

    p = command("demo", "open a dashboard (from the cache, or capture it) and print a scripted "
                "session in the terminal", "Brushes and selections fitting the spec, each with "
                "the views as text bar charts and its time.")
    p.add_argument("spec", help=SPEC_HELP)
    p.add_argument("--spark-master", default=None, type=spark_master, help=MASTER_HELP)
    p.add_argument("--cache-dir", default=None, type=directory, help=_cache_help())
    p.add_argument("--memory-budget", default=None, metavar="SIZE", type=memory_size, help=BUDGET_HELP)

    p = command("profile", "check the spec's functional dependencies on Spark and list their "
                "violations", "The spec declares them in profile: fd (docs/spec.md), or --fd gives them.")
    p.add_argument("spec", help=SPEC_HELP)
    p.add_argument("--fd", action="append", default=[], metavar="'LHS -> RHS'", type=fd_text,
                   help="also check this dependency, e.g. 'origin -> origin_state' or "
                        "'origin, destination -> distance' (repeatable)")
    p.add_argument("--limit", type=_positive, default=10, metavar="N",
                   help="left-hand values listed per dependency, most rows first (default 10)")
    p.add_argument("--spark-master", default=None, type=spark_master, help=MASTER_HELP)

    p = command("schema", "print the JSON Schema of dashboard specs, for editors",
                "A '# yaml-language-server: $schema=...' line in a spec makes an editor check and "
                "complete it.")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write it to FILE instead (the repository keeps schema/dashboard.schema.json)")

    p = command("bench", "replay interaction traces over WebSockets and time the replies; compare "
                "engines", "Traces and workloads: docs/trace.md; results: perf/README.md.")
    from brushfire.bench.harness import add_arguments

    add_arguments(p)

    args = parser.parse_args(argv)
    if getattr(args, "memory_budget", "unset") is None:  # the option's default: the environment
        args.memory_budget = _budget_from_environment(parser)
    if args.command in ("serve", "demo", "bench"):  # (read by the sessions these open)
        _engine_budgets_from_environment(parser)
    if args.command in ("capture", "serve", "demo", "profile"):  # (they may start Spark)
        _spark_from_environment(parser, args)
    try:
        return {"validate": _validate, "plan": _plan, "schema": _schema, "profile": _profile, "capture": _capture,
                "demo": _demo, "serve": _serve, "bench": _bench}[
            args.command](args)
    except BrushfireError as e:
        print(f"brushfire: {e}", file=sys.stderr)
        return 1


# --- option types: a bad value is a usage error naming the option ------------------------


def memory_size(text: str) -> str:
    """--memory-budget: '16GB', '512MB', '2G', bytes (kept as text; parsed where used)."""
    from brushfire.sizes import parse_size

    try:
        if parse_size(text) <= 0:
            msg = "must be more than 0 bytes"
            raise ValueError(msg)
    except ValueError as e:
        msg = f"{e} (e.g. 16GB, 512MB)"
        raise argparse.ArgumentTypeError(msg) from None
    return text


_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn"
                     r"|(spark|mesos)://[^\s/]+(,[^\s/]+)*/?|k8s://\S+")


def spark_master(text: str) -> str:
    """--spark-master: a Spark master URL."""
    if not _MASTER.fullmatch(text.strip()):
        msg = (f"{text!r} is not a Spark master URL; e.g. local[*], local[2], spark://host:7077,"
               " yarn, k8s://https://host:443")
        raise argparse.ArgumentTypeError(msg)
    return text.strip()


def fd_text(text: str):
    """--fd: 'a, b -> c' (a functional dependency: columns on each side of '->')."""
    from brushfire.spec.models import FunctionalDependency

    lhs, arrow, rhs = text.partition("->")
    sides = [[c.strip() for c in side.split(",") if c.strip()] for side in (lhs, rhs)]
    if not arrow or not all(sides):
        msg = f"{text!r} is not a functional dependency: write 'lhs -> rhs', e.g. 'origin -> origin_state'"
        raise argparse.ArgumentTypeError(msg)
    return FunctionalDependency(lhs=sides[0], rhs=sides[1])


def directory(text: str) -> str:
    """--cache-dir: a directory (created when needed), not a file."""
    from pathlib import Path

    if Path(text).exists() and not Path(text).is_dir():
        msg = f"{text!r} is a file, not a directory"
        raise argparse.ArgumentTypeError(msg)
    return text


def _engine_budgets_from_environment(parser: argparse.ArgumentParser) -> None:
    """BRUSHFIRE_CUBE_MEMORY and BRUSHFIRE_COPY_MEMORY, checked before anything starts."""
    from brushfire.engine.copies import COPY_MEMORY_ENV
    from brushfire.engine.memory import CUBE_MEMORY_ENV
    from brushfire.sizes import environ_size

    for name in (CUBE_MEMORY_ENV, COPY_MEMORY_ENV):
        try:
            environ_size(name)
        except BrushfireError as e:
            parser.error(str(e))


_JVM_MEMORY = re.compile(r"[1-9]\d*[kmgt]?", re.IGNORECASE)  # as the JVM's -Xmx takes it


def _spark_from_environment(parser: argparse.ArgumentParser, args) -> None:
    """BRUSHFIRE_SPARK_MASTER (unless --spark-master) and BRUSHFIRE_DRIVER_MEMORY, checked
    before anything starts: Spark's launcher failed on them with a Java stack trace and
    'is Java 17+ installed?', after the spec was loaded and any other work done."""
    master = os.environ.get("BRUSHFIRE_SPARK_MASTER")
    if master and getattr(args, "spark_master", None) is None:
        try:
            spark_master(master)
        except argparse.ArgumentTypeError as e:
            parser.error(f"BRUSHFIRE_SPARK_MASTER: {e}")
    memory = os.environ.get("BRUSHFIRE_DRIVER_MEMORY")
    if memory is not None and not _JVM_MEMORY.fullmatch(memory):
        parser.error(f"BRUSHFIRE_DRIVER_MEMORY: {memory!r} is not a Java heap size: a whole number "
                     "with k, m, g or t, e.g. 8g or 512m")


def _budget_from_environment(parser: argparse.ArgumentParser) -> str | None:
    text = os.environ.get("BRUSHFIRE_MEMORY_BUDGET")
    if text is None:
        return None
    try:
        return memory_size(text)
    except argparse.ArgumentTypeError as e:
        parser.error(f"BRUSHFIRE_MEMORY_BUDGET: {e}")
    return None


def _validate(args) -> int:
    from brushfire.source import column_ranges, csv_source_names, joined_types, read_types
    from brushfire.spec import load_dashboard
    from brushfire.spec.checks import (
        check_columns,
        check_data_bars,
        check_profile_columns,
        data_bar_fields,
        expression_warnings,
    )
    from brushfire.workload import read_workload

    failed = 0
    spark = None
    for path in args.specs:
        try:
            dash = load_dashboard(path)
            types = read_types(dash.source)
            # a local CSV source: its names from its first line (kinds None: Spark infers them)
            names = csv_source_names(dash.source) if types is None else None
            # with neither (JSON): the derived columns' own, and the joins' whose tables are known
            check_columns(dash, types if names is None else names,
                          joined=joined_types(dash.source) if types is None and names is None else None)
            check_profile_columns(dash, [*(types or {}), *dash.source.columns])
            if types is not None:
                check_data_bars(dash, column_ranges(dash.source, data_bar_fields(dash)))
            read_workload(dash)  # its trace readable (read again when the capture is planned)
            warnings = [w.render() for w in expression_warnings(dash, types)]
            if args.spark and (dash.source.columns or dash.source.filters or dash.source.joins
                               or types is None):
                from brushfire.capture.analyze import analyze_source, check_join_keys
                from brushfire.capture.spark import get_spark

                spark = spark or get_spark(args.spark_master or "local[1]",
                                           app_name="brushfire-validate", driver_memory="1g")
                warnings = []
                df = analyze_source(spark, dash, warn=warnings.append)
                if dash.source.joins:  # (a small job over each dimension table, as capture's)
                    fields = {f.name: f.dataType for f in df.schema.fields}
                    check_join_keys(spark, dash, {j.name: fields.get(j.on) for j in dash.source.joins})
            for w in warnings:
                print(f"warning: {w}", file=sys.stderr)
            unread = [j.name for j in dash.source.joins  # (a JSON table's: only Spark knows them)
                      if not any(c.startswith(f"{j.name}.") for c in types or {})]
            checked = (types is not None and not unread) or args.spark
            print(f"{path}: ok" + ("" if checked else (
                " (the columns' types are checked at capture, or with --spark)" if names is not None
                else " (columns are checked at capture, or with --spark)") if types is None
                else f" (the columns of join {', '.join(unread)} are checked at capture, or with --spark)"))
        except BrushfireError as e:
            print(e, file=sys.stderr)
            failed += 1
    return 1 if failed else 0  # a Spark session started here ends with the process


def _plan(args) -> int:
    from brushfire.plan import explain, plan_capture
    from brushfire.spec import load_dashboard

    dash = load_dashboard(args.spec)
    plan = plan_capture(dash)
    check_plan_columns(plan)
    print(explain(plan, bins=cached_bins(dash, args.cache_dir)))
    return 0


def check_plan_columns(plan) -> None:
    """(`brushfire plan`) What a capture checks before Spark (the columns against a local
    source's footers or CSV header, the trace; SpecError at the file, line and key): a
    field not in the source was planned, exit 0, and refused only by capture. A source
    not there yet is noted, not refused: a plan needs only the spec."""
    from brushfire.capture import check_before_spark
    from brushfire.source import check_path

    try:
        check_path(plan.dashboard.source)
    except BrushfireError as e:
        print(f"note: the columns are not checked against the source: {str(e).splitlines()[0]}",
              file=sys.stderr)
        return
    check_before_spark(plan)


def cached_bins(dash, cache_dir: str | None) -> dict[str, list] | None:
    """The bins the cache's capture of `dash` fitted to the data (maxbins, a step alone):
    {view: [[step, start, stop], ...]}, or None: without a capture of this spec they are
    unknown until capture (they come from the data's min and max; a capture of the source
    as it was)."""
    from brushfire.views import maxbins_fields

    if not maxbins_fields(dash):
        return None
    from dataclasses import asdict

    from brushfire.dashboard import DEFAULT_BUDGET, DEFAULT_CACHE
    from brushfire.errors import BrushfireError
    from brushfire.lineage.layout import CaptureConfig
    from brushfire.lineage.store import entry_dir, read_manifest, spec_hash
    from brushfire.sizes import parse_size

    # the capture `Dashboard.open` would load (the same config: the budget from the environment)
    config = CaptureConfig(memory_budget=parse_size(DEFAULT_BUDGET) if DEFAULT_BUDGET else None)
    try:
        meta = read_manifest(entry_dir(cache_dir or DEFAULT_CACHE, dash))
        if meta is None or meta.get("spec_sha256") != spec_hash(dash) or \
                meta.get("config") != asdict(config):
            return None
        return {v["name"]: v["bins"] for v in meta["layout"]["views"]}
    except (BrushfireError, OSError, KeyError, TypeError):  # no source, or an unsound capture
        return None


def _profile(args) -> int:
    """The spec's functional dependencies (and --fd ones) checked on Spark: each one's
    violations, the worst listed; no capture."""
    from brushfire.capture.analyze import analyze_source
    from brushfire.capture.profiling import fd_report
    from brushfire.capture.spark import get_spark, spark_errors
    from brushfire.spec import load_dashboard

    dash = load_dashboard(args.spec)
    declared = list(dash.profile.fd) if dash.profile else []
    checks = declared + args.fd
    if not checks:
        print(f"{args.spec}: no profile checks: add profile: {{fd: [[lhs columns], [rhs columns]]}} "
              "to the spec (docs/spec.md), or give --fd 'lhs -> rhs'", file=sys.stderr)
        return 1
    from brushfire.source import read_types

    # the columns from Parquet / ORC footers (and of every join): one not there is named before Spark
    types = read_types(dash.source)
    known = types is not None and all(any(c.startswith(f"{j.name}.") for c in types) for j in dash.source.joins)
    if known and (missing := missing_fd_column(checks, [*types, *dash.source.columns])):
        print(missing, file=sys.stderr)
        return 1
    spark = get_spark(args.spark_master, app_name="brushfire-profile")
    df = analyze_source(spark, dash)
    if missing := missing_fd_column(checks, df.columns):
        print(missing, file=sys.stderr)
        return 1
    for fd in checks:
        with spark_errors("checking a functional dependency"):
            report = fd_report(df, fd, args.limit)
        print(render_fd_report(report, fd in declared))
    return 0


def missing_fd_column(checks, columns: list[str]) -> str | None:
    """What `brushfire profile` says of the first dependency naming a column not among
    `columns`, or None."""
    for fd in checks:
        missing = [c for c in fd.lhs + fd.rhs if c not in columns]
        if missing:
            return (f"--fd {', '.join(fd.lhs)} -> {', '.join(fd.rhs)}: no column {missing[0]!r} in the "
                    f"source; columns: {', '.join(columns)}")
    return None


def render_fd_report(r, declared: bool) -> str:
    """A functional dependency's violations as text."""
    fd = r.fd
    name = f"{', '.join(fd.lhs)} -> {', '.join(fd.rhs)}"
    share = r.violating_rows / r.rows if r.rows else 0.0
    lines = [f"fd {name}: " + ("holds" if not r.violating_values else
             f"{r.violating_values:,} of {r.lhs_values:,} left-hand values violate it "
             f"({r.violating_rows:,} of {r.rows:,} rows, {share:.2%})")]
    for v in r.worst:
        key = ", ".join(f"{c}={_show(x)}" for c, x in zip(fd.lhs, v.lhs, strict=True))
        rhs = "; ".join(f"{', '.join(_show(x) for x in value)} ({n:,} rows)" for value, n in v.rhs[:5])
        more = f"; … {len(v.rhs) - 5} more" if len(v.rhs) > 5 else ""
        lines.append(f"  {key}: {len(v.rhs)} values of {', '.join(fd.rhs)}: {rhs}{more}")
    if r.violating_values > len(r.worst):
        lines.append(f"  … {r.violating_values - len(r.worst):,} more left-hand values (--limit)")
    if declared and r.violating_values:
        lines.append(f"  linked view {fd.view_name!r}: select 'violates' to brush these rows in every "
                     "other view (brushfire serve)")
    return "\n".join(lines)


def _show(x) -> str:
    return "null" if x is None else str(x)


def _schema(args) -> int:
    from brushfire.spec.schema import schema_text

    text = schema_text()
    if args.output is None:
        sys.stdout.write(text)
        return 0
    from pathlib import Path

    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as e:  # (a missing folder, a directory, no permission: not a traceback)
        msg = f"brushfire schema: cannot write {args.output}: {e.strerror or e}"
        print(msg, file=sys.stderr)
        return 1
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _capture(args) -> int:
    from brushfire.capture import cache_problem, capture_dashboard
    from brushfire.dashboard import DEFAULT_BUDGET, DEFAULT_CACHE, warm_kernels
    from brushfire.lineage.lattice import step_text
    from brushfire.lineage.layout import CaptureConfig
    from brushfire.plan import explain, plan_capture
    from brushfire.sizes import parse_size
    from brushfire.spec import load_dashboard

    dash = load_dashboard(args.spec)
    if args.history:
        print(render_history(dash, args.cache_dir or DEFAULT_CACHE))
        return 0
    plan = plan_capture(dash)
    cache = args.cache_dir or DEFAULT_CACHE
    if (why := cache_problem(cache)) is not None:  # before Spark: the cache is what capture makes
        # (serve and demo capture into a temporary directory then; here the lineage went
        # there, removed at exit, and "lineage cached in" named it)
        print(f"brushfire capture: cannot write the lineage cache {cache}: {why}\n"
              "    hint: give --cache-dir a directory this user can write (or set $BRUSHFIRE_CACHE)",
              file=sys.stderr)
        return 1
    budget = args.memory_budget or DEFAULT_BUDGET
    config = CaptureConfig(memory_budget=None if budget is None else parse_size(budget))
    progress = ProgressLine()
    try:
        store = capture_dashboard(plan, master=args.spark_master, progress=progress,
                                  baseline=not args.no_baseline,
                                  cache_dir=cache, config=config,
                                  fresh=args.recapture)
        # numba compiles the engine's kernels for this store's array types on their first
        # call (about a minute on two cores, then cached on disk): here, so that the first
        # `serve` of the capture is ready in seconds
        progress("compiling the engine's kernels (once per install and store types)", None)
        warm_kernels(store)
    finally:
        progress.close()
    kept, dims = store.layout.row_dims, len(store.layout.dims)
    mode = ("per-row lineage" if kept == dims else "cubes only" if kept == 0
            else f"per-row lineage for {kept} of {dims} dims, cubes for the rest")
    print(f"mode: {mode}")
    for note in store.layout.notes:
        print(f"  {note}")
    copied = {store.layout.dims[d].name: got for d, got, _ in copy_choices(store)}
    print(explain(plan, store.n_rows, layout=store.layout, copies=copied))
    print("\nwhat this capture reused and rebuilt:")
    for change in store.info.changes:
        print(f"  {change}")
    print(f"\ntimings on {store.info.spark_master} ({store.n_rows:,} rows):")
    for stage, seconds in store.info.seconds.items():
        print(f"  {stage:<24} {seconds:8.2f} s")
    sec = store.info.seconds
    if "base queries" in sec:
        ratio = sec["capture"] / sec["base queries"]
        print(f"  capture / base queries   {ratio:8.2f} x  (base queries: each view's plain "
              "Spark group-by, run after capture on the same session)")
    if "one aggregation job" in sec:
        ratio = sec["capture"] / sec["one aggregation job"]
        print(f"  capture / one job        {ratio:8.2f} x  (every view's aggregate in one Spark "
              "job, GROUPING SETS: the best a Spark user could write without lineage; a median, "
              "quantile, min, max or distinct view in a job of its own)")
    nbytes = store.nbytes()
    lineage = sum(v for k, v in nbytes.items() if not k.startswith("_"))
    print(f"\nlineage store: {store.info.shards} shards of at most {len(store.layout.views)} views' "
          f"keys; {lineage / max(1, store.n_rows):.1f} bytes per row "
          f"({lineage / max(1, store.n_rows) / len(store.layout.views):.2f} per row per view), "
          "memory-mapped")
    for name, size in nbytes.items():
        print(f"  {name:<32} {size / 1e6:10.2f} MB")
    for name, (shards, steps, exceptions) in store.raw_coding().items():
        how = ", ".join(f"{kind} in {n:,}" for kind, n in shards.items())
        lattice = (f"; {', '.join(step_text(j) for j in steps)} ({exceptions:,} rows kept aside)"
                   if steps else "")
        print(f"  raw values of {name}: {how} of {sum(shards.values())} shards{lattice}")
    print(copies_text(store, nbytes))
    for caveat in store.info.caveats:
        print(f"  caveat: {caveat}")
    print(f"\nlineage cached in {store.directory}")
    return 0


def copy_choices(store) -> list[tuple[int, bool, str]]:
    """(dim, whether it got a clustered key copy, why) of each dim, as the capture chose
    (the spec's workload, its trace and budget: its manifest), else as engine/copies.py
    `choices` would."""
    from brushfire.engine.copies import choices

    record = (store.manifest or {}).get("copies") or {}
    why = record.get("why")
    return [(int(d), int(d) in record.get("dims", []), w) for d, w in why.items()] if why \
        else choices(store.layout)


def copies_text(store, nbytes: dict[str, int]) -> str:
    """What `brushfire capture` says of the clustered key copies: what each dim got and
    why (engine/copies.py `choices`), and their bytes."""
    chosen = copy_choices(store)
    n = max(1, store.n_rows)
    total = sum(v for k, v in nbytes.items() if k.startswith("_copy "))
    lines = [f"\nclustered key copies (stored with the lineage, memory-mapped; a filter's change "
             f"reads its dim's rows from its copy, in key order): {total / n:.1f} bytes per row"]
    for d, got, reason in chosen:
        name = store.layout.dims[d].name
        size = nbytes.get(f"_copy {name}")
        if got and size is None:  # (its files failed their checks: store.copy_notes)
            what = "none usable (read through the store's order)"
        elif got:
            what = f"a copy, {size / n:.1f} bytes per row"
        else:
            what = "none"
        lines.append(f"  {name}: {what} — {reason}")
    return "\n".join(lines)


def render_history(dash, cache_dir) -> str:
    """`brushfire capture --history`: the dashboard's captures, newest first, and which of
    them matches the spec and source as they are now."""
    from brushfire import versions
    from brushfire.lineage.store import files_fingerprint, spec_hash
    from brushfire.source import local_files

    entries = versions.history(cache_dir, dash.name)
    files = local_files(dash.source)
    now = (spec_hash(dash), files_fingerprint(files) if files else None)
    lines = [f"captures of dashboard '{dash.name}' in {cache_dir} (newest first; the history keeps "
             f"the last {versions.HISTORY_KEEP}, the cache the lineage of the newest one per "
             "source: a newer capture replaces it, reusing what did not change)"]
    if not entries:
        lines.append("  none yet: brushfire capture SPEC captures it")
        return "\n".join(lines)
    lines.append(f"  {'created (UTC)':<20} {'spec':<9} {'source':<9} {'brushfire':<10} "
                 f"{'rows':>12}  {'mode':<5} lineage")
    for e in entries:
        current = (e.get("spec_sha256"), e.get("source_fingerprint")) == now
        created = (e.get("created") or "?").replace("T", " ").rstrip("Z")[:19]
        rows = f"{e['rows']:,}" if isinstance(e.get("rows"), int) else "?"
        lines.append(f"  {created:<20} {(e.get('spec_sha256') or '?')[:8]:<9} "
                     f"{(e.get('source_fingerprint') or '?')[:8]:<9} "
                     f"{e.get('brushfire_version') or '?':<10} {rows:>12}  {e.get('mode') or '?':<5} "
                     f"{'cached' if e['cached'] else 'replaced'}"
                     + ("  <- the spec and source as they are now" if current else ""))
    return "\n".join(lines)


def _demo(args) -> int:
    """Open the dashboard and play a scripted session, printing views and latencies."""
    from brushfire.dashboard import DEFAULT_BUDGET, DEFAULT_CACHE, Dashboard

    t0 = time.perf_counter()
    progress = ProgressLine()
    try:
        dash = Dashboard.open(args.spec, cache_dir=args.cache_dir or DEFAULT_CACHE,
                              spark_master=args.spark_master, progress=progress,
                              memory_budget=args.memory_budget or DEFAULT_BUDGET)
    finally:
        progress.close()
    how = "loaded from the lineage cache" if dash.from_cache else "captured on Spark"
    print(f"dashboard '{dash.name}': {dash.store.n_rows:,} rows, {how} in "
          f"{time.perf_counter() - t0:.2f} s\n")
    session = dash.engine_session()  # (refused, not answered on Spark: the demo starts no JVM)
    for v in session.views().values():
        print(render_view(v))
    for text, call in demo_script(dash):
        try:
            update = call(session)
        except NotCapturedError as e:  # memory-budget mode: only single filters
            print(f"\n> {text}: not available: {e}")
            continue
        methods = ", ".join(sorted(set(update.methods.values())))
        print(f"\n> {text}   [{update.seconds * 1e3:.2f} ms; {methods}]")
        for v in update.views.values():
            print(render_view(v, width=40, max_bars=8))
    if dash.spec.interactions.details and dash.mode == "rows":  # else maybe not captured
        t = time.perf_counter()
        page = session.details()
        print(f"\n> details on demand: first {page.num_rows} of {session.count_selected():,} "
              f"selected rows [{(time.perf_counter() - t) * 1e3:.2f} ms]")
        print(page.slice(0, 5).to_pandas().to_string(index=False))
    return 0


def _serve(args) -> int:
    """Serve every dashboard at once; each opens (cache or capture) in the background, and
    its clients watch the capture's progress until it is ready."""
    import uvicorn

    from brushfire.dashboard import DEFAULT_BUDGET, DEFAULT_CACHE
    from brushfire.server import create_app
    from brushfire.server.app import Limits, uvicorn_options
    from brushfire.server.hosting import HostedDashboard
    from brushfire.server.security import Security, is_loopback

    if args.workers > 1 and args.watch is not None:
        print("brushfire serve: --watch reloads the dashboards of one process: serve with "
              "--workers 1 to watch the data", file=sys.stderr)
        return 2
    token = serve_token(args.token, args.no_token, args.host)
    security = Security.for_bind(args.host, token=token, allow_origins=args.allow_origin,
                                 allow_hosts=args.allow_host)
    limits = Limits(args.max_sessions, args.max_sessions_per_client)
    models = distinct_dashboards(args.specs)  # a bad spec fails here, before any capture starts
    if (why := cannot_listen(args.host, args.port)) is not None:  # (before any capture, too)
        print(f"brushfire serve: cannot listen on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 1
    models = servable(models, watched=args.watch is not None)
    if not models:
        return 1
    hosts = [HostedDashboard.opening(spec, cache_dir=args.cache_dir or DEFAULT_CACHE,
                                     spark_master=args.spark_master, echo=ProgressLine(),
                                     memory_budget=args.memory_budget or DEFAULT_BUDGET,
                                     warm=args.workers == 1)  # workers warm up their own
             for spec in models]
    if args.watch is not None:
        for h in hosts:
            h.watch(args.watch, echo=ProgressLine())
    if args.workers > 1:
        specs = _captured(hosts)
        if not specs:
            return 1
        hosts = [HostedDashboard(spec) for spec in specs]  # their names below; no store kept here
        import gc

        gc.collect()  # the stores opened here, before the workers are spawned
    names = ", ".join(h.name for h in hosts)
    print(f"serving {names}  (Ctrl-C stops); open:", file=sys.stderr)
    for url in serve_urls(args.host, args.port, token):
        print(f"    {url}", file=sys.stderr)
    if token is None and not is_loopback(args.host):
        print(f"warning: no access token: anyone who can reach port {args.port} can read every "
              "dashboard's data", file=sys.stderr)
    sys.stderr.flush()
    if args.workers > 1:
        from pathlib import Path

        from brushfire.engine.parallel import machine_cores
        from brushfire.server import workers

        app = workers.WorkerApp(tuple(specs), Path(args.cache_dir or DEFAULT_CACHE), args.spark_master,
                                args.memory_budget or DEFAULT_BUDGET, security,
                                workers.share(limits, args.workers))
        print(f"    in {args.workers} worker processes", file=sys.stderr)
        if args.workers > machine_cores():
            print(f"note: {args.workers} workers on {machine_cores()} cores: more workers than "
                  "cores only share them (and split the memory budgets further)", file=sys.stderr)
        try:
            workers.serve(app, host=args.host, port=args.port, workers=args.workers)
        except OSError as e:
            print(f"brushfire serve: cannot listen on {args.host}:{args.port}: {e.strerror or e}",
                  file=sys.stderr)
            return 1
        return 0
    server = uvicorn.Server(uvicorn.Config(create_app(hosts, security=security, limits=limits),
                                           host=args.host, port=args.port, log_level="warning",
                                           **uvicorn_options()))
    if args.watch is None:  # (watched, a failed dashboard opens again when its data change)
        threading.Thread(target=_stop_when_none_opens, args=(hosts, server), daemon=True,
                         name="serve-none-opened").start()
    with contextlib.suppress(KeyboardInterrupt):  # (uvicorn raises Ctrl-C again once shut down)
        server.run()
    if not server.started:  # (as uvicorn.run: it could not bind, and said why)
        return 3
    return 1 if all(h.status == "failed" for h in hosts) and args.watch is None else 0


def distinct_dashboards(paths: list[str]) -> list:
    """The specs at `paths`, loaded; SpecError at the name of one whose dashboard name an
    earlier one has (the server keys dashboards by name: it served the last of them and
    captured both, the same file given twice into one cache entry at once)."""
    from brushfire.spec import load_dashboard
    from brushfire.spec.checks import spec_error

    models, first = [], {}
    for path in paths:
        dash = load_dashboard(path)
        if dash.name in first:
            msg = f"dashboard {dash.name!r} is served already, from {first[dash.name]}"
            raise spec_error(dash, ("name",), msg, "give each dashboard served its own name (or "
                                                   "the spec once)")
        first[dash.name] = path
        models.append(dash)
    return models


def servable(models: list, watched: bool) -> list:
    """The dashboards of `models` that pass what a capture checks before Spark
    (capture.check_before_spark: their columns against the source's footers or CSV
    header, their trace): one that fails is named with why on stderr and left out, unless
    `watched` (serve --watch opens it again once its source's files change); none left is
    said too. A dashboard failing so was served dead: its page showed the error while the
    server ran on and exited 0."""
    from brushfire.capture import check_before_spark
    from brushfire.plan import plan_capture

    kept = []
    for dash in models:
        try:
            check_before_spark(plan_capture(dash))
        except BrushfireError as e:
            more = " (--watch: opened again once its source's files change)" if watched else ""
            print(f"brushfire serve: {dash.name} cannot be served{more}: {e}", file=sys.stderr)
            if not watched:
                continue
        kept.append(dash)
    if not kept:
        print("brushfire serve: no dashboard can be served", file=sys.stderr)
    return kept


def _stop_when_none_opens(hosts, server) -> None:
    """(`serve` without --watch) Stop `server` once every dashboard's opening has ended
    and none is ready (their captures failed on Spark): it would serve only errors."""
    for h in hosts:
        h.wait()
    if all(h.status == "failed" for h in hosts):
        print("brushfire serve: no dashboard could be opened (each one's error is above); stopping",
              file=sys.stderr)
        server.should_exit = True


def cannot_listen(host: str, port: int) -> str | None:
    """Why the server could not listen on `host`:`port` (a host name that does not
    resolve, an address not of this machine, a port in use), or None. uvicorn found out
    only once every dashboard had started opening (captures on Spark), and said
    '[Errno -2] Name or service not known' without naming --host."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as uvicorn binds)
            s.bind(address)
            s.listen()
    except OSError as e:
        return e.strerror or str(e)
    return None


def _captured(hosts) -> list:
    """(`serve --workers`) Wait for every dashboard to be opened (captured, when the cache
    has none), so that the workers open them from the cache; the specs of those ready.
    One that failed is reported and left out; none ready: an error."""
    specs = []
    for h in hosts:
        h.wait()
        if h.status == "ready":
            specs.append(h.spec)
        else:
            print(f"brushfire serve: {h.name} is not served: {h.error}", file=sys.stderr)
    if not specs:
        print("brushfire serve: no dashboard could be opened", file=sys.stderr)
    return specs


def serve_token(given: str | None, no_token: bool, host: str) -> str | None:
    """The access token `brushfire serve` requires: none with --no-token; --token's value
    (a random one without a value); else $BRUSHFIRE_TOKEN; else a random one unless
    bound to loopback."""
    import os
    import secrets

    from brushfire.server.security import is_loopback

    if no_token:
        return None
    if given is None:
        given = os.environ.get("BRUSHFIRE_TOKEN") or None
        if given is None and is_loopback(host):
            return None
    return given or secrets.token_hex(24)


def serve_urls(host: str, port: int, token: str | None) -> list[str]:
    """The URLs to open (tokenized): the bound address, or for every interface the
    machine's name and loopback."""
    import socket

    from brushfire.server.security import WILDCARD_BINDS

    query = f"/?token={token}" if token else "/"
    if host in WILDCARD_BINDS:
        hosts = [socket.gethostname(), "127.0.0.1"]
    else:
        hosts = [f"[{host}]" if ":" in host else host]
    return [f"http://{h}:{port}{query}" for h in hosts]


def _token_text(text: str) -> str:
    from brushfire.server.security import TOKEN_TEXT

    if text and not TOKEN_TEXT.fullmatch(text):
        msg = "a token is 1-256 letters, digits and . _ ~ - (leave the value out for a random one)"
        raise argparse.ArgumentTypeError(msg)
    return text


def _origin_text(text: str) -> str:
    from urllib.parse import urlsplit

    t = text.strip()
    if t in ("*", "null"):
        return t
    parts = urlsplit(t)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        msg = f"{text!r} is not an origin: write scheme://host[:port], e.g. http://localhost:8888, or *"
        raise argparse.ArgumentTypeError(msg)
    return t


def _host_text(text: str) -> str:
    t = text.strip()
    if not t or "/" in t or " " in t:
        msg = f"{text!r} is not a host name: write e.g. dash.example.com, .example.com or *"
        raise argparse.ArgumentTypeError(msg)
    return t


def _positive_seconds(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = 0.0
    if not 0.1 <= x < float("inf"):
        msg = f"{text!r} is not a number of seconds of at least 0.1"
        raise argparse.ArgumentTypeError(msg)
    return x


def _port(text: str) -> int:
    """--port: a TCP port, 1-65535 (asyncio's bind took 99999 as 99999 % 65536, 34463,
    while the URL printed said 99999; 0 binds a port the URL cannot name)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 65535:
        msg = f"{text!r} is not a port number: 1-65535"
        raise argparse.ArgumentTypeError(msg)
    return n


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        msg = f"{text!r} is not a positive whole number"
        raise argparse.ArgumentTypeError(msg)
    return n


def _bench(args) -> int:
    from brushfire.bench.harness import run

    return run(args)


def demo_script(dash):
    """A few interactions fitting the dashboard's declared brushes and parameters."""
    steps = []
    for f in dash.plan.filters:
        view = next((v for v in dash.spec.views if v.name == f.name), None)
        if f.kind == "interval" and view is not None and view.type == "histogram":
            lo, hi = view.bin.extent
            a, b = lo + (hi - lo) * 0.2, lo + (hi - lo) * 0.5
            steps.append((f"brush {f.name} [{a:g}, {b:g}]", lambda s, n=f.name, a=a, b=b: s.brush(n, (a, b))))
            steps.append((f"move the {f.name} brush one pixel", lambda s, n=f.name, a=a, b=b, d=(hi - lo) / 600:
                          s.brush(n, (a + d, b + d))))
        elif f.kind == "points":
            top = dash.store.view(f.name).labels[:2]
            steps.append((f"select {f.name} {top}", lambda s, n=f.name, t=top: s.select(n, t)))
        if len(steps) >= 5:
            break
    steps.append(("clear all filters", lambda s: s.clear()))
    return steps


def render_view(v, width: int = 50, max_bars: int = 40) -> str:
    """A text bar chart of a view's current values."""
    vals = [x or 0.0 for x in v.values]
    top = max((abs(x) for x in vals), default=0) or 1
    lines = [f"  {v.name}"]
    for label, x in list(zip(v.labels, vals, strict=True))[:max_bars]:
        text = f"{label[0]:g}–{label[1]:g}" if isinstance(label, list) and len(label) == 2 \
            and not isinstance(label[0], list) else str(label)[:19]
        lines.append(f"    {text:>20} {'█' * round(width * abs(x) / top):<{width}} {x:,.6g}")
    if len(vals) > max_bars:
        lines.append(f"    … {len(vals) - max_bars} more bars")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
