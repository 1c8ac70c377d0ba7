"""The Docker deployment, checked structurally (no Docker engine needed): the compose file
wires the server to its Spark master, executors can read the data at the path the
driver resolves, and the image installs what `make demo` installs."""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath

import pytest
import yaml

from brushfire.capture.spark import parse_spark_conf
from brushfire.cli import main

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
SERVER = SERVICES["brushfire"]
DEPLOY_DOC = (ROOT / "docs" / "deploy.md").read_text()


def expand(value: str) -> str:
    """Compose interpolation with nothing set in the environment: ${VAR:-default} -> default."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines()]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines
            if ln and not ln.startswith("#")]


def instruction(name: str) -> list[str]:
    return [args for inst, args in dockerfile() if inst == name]


def dockerfile_arg(name: str) -> str:
    return next(a.split("=", 1)[1] for a in instruction("ARG") if a.startswith(f"{name}="))


def services_running(main_class: str) -> dict[str, list[str]]:
    """{service: command} for the services whose command starts `main_class`."""
    return {name: s["command"] for name, s in SERVICES.items()
            if main_class in s.get("command", [])}


def option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def master_url() -> str:
    """spark://<service>:<port> of the one service running the standalone master."""
    masters = services_running("org.apache.spark.deploy.master.Master")
    assert len(masters) == 1, masters
    (name, command), = masters.items()
    assert option(command, "--host") == name  # workers and drivers must use the same name
    return f"spark://{name}:{option(command, '--port')}"


def mounts(service: dict) -> dict[str, tuple[str, str]]:
    """{container path: (source, mode)} of a service's short-syntax volumes."""
    out = {}
    for v in service.get("volumes", []):
        source, target, *mode = v.split(":")
        out[target] = (source, mode[0] if mode else "rw")
    return out


def test_the_services():
    assert set(SERVICES) == {"spark-master", "spark-worker-1", "spark-worker-2", "brushfire"}
    assert SERVER["build"]["context"] == "."


def test_the_cluster_runs_the_spark_version_of_the_driver():
    """A driver and a standalone master of different Spark versions do not talk: every
    node runs the brushfire image, whose pyspark is the tested one."""
    import pyspark

    for name, s in SERVICES.items():
        assert s["build"]["context"] == ".", name
        assert expand(s["build"]["args"]["SPARK_VERSION"]) == pyspark.__version__, name
    assert dockerfile_arg("SPARK_VERSION") == pyspark.__version__
    assert any('"pyspark==${SPARK_VERSION}"' in r for r in instruction("RUN"))


def test_the_server_captures_on_the_compose_master():
    assert SERVER["environment"]["BRUSHFIRE_SPARK_MASTER"] == master_url()
    assert "spark-master" in SERVER["depends_on"]


def test_every_worker_registers_with_the_master():
    workers = services_running("org.apache.spark.deploy.worker.Worker")
    assert set(workers) == {"spark-worker-1", "spark-worker-2"}
    for name, command in workers.items():
        i = command.index("org.apache.spark.deploy.worker.Worker")
        assert command[i + 1] == master_url(), name
        assert option(command, "--host") == name
        assert "spark-master" in SERVICES[name]["depends_on"]


def test_executors_reach_the_driver_by_its_service_name():
    conf = parse_spark_conf(SERVER["environment"]["BRUSHFIRE_SPARK_CONF"])
    assert conf["spark.driver.host"] == "brushfire"
    worker_memory = {option(c, "--memory") for c in
                     services_running("org.apache.spark.deploy.worker.Worker").values()}
    assert all(_mib(conf["spark.executor.memory"]) <= _mib(m) for m in worker_memory)


def _mib(size: str) -> int:
    return int(size[:-1]) * {"m": 1, "g": 1024}[size[-1].lower()]


def test_data_is_read_only_at_one_path_on_the_server_and_every_worker():
    """The driver resolves the spec's source path in its container; executors open that
    same path in theirs."""
    spec = PurePosixPath(SERVER["command"][-1])
    source = yaml.safe_load((ROOT / spec).read_text())["source"]["path"]
    relative = PurePosixPath(os.path.normpath(spec.parent / source))  # from the repo root
    in_container = PurePosixPath(instruction("WORKDIR")[-1]) / relative
    targets = {t: src for t, (src, _) in mounts(SERVER).items() if src.startswith("./")}
    (target, host_dir), = targets.items()
    assert relative.is_relative_to(os.path.normpath(host_dir)), (relative, host_dir)
    assert in_container.is_relative_to(target), (in_container, target)
    for name in ("spark-worker-1", "spark-worker-2", "brushfire"):
        assert mounts(SERVICES[name]).get(target) == (host_dir, "ro"), name


def test_executors_run_brushfire_and_write_into_the_shared_cache():
    """The executors build the lineage shards (Brushfire's Python) straight into the cache
    entry: every worker runs the brushfire image with the cache volume at the server's
    cache path, and Spark's daemons start from the image's pyspark."""
    cache = SERVER["environment"]["BRUSHFIRE_CACHE"]
    script = ROOT / "scripts" / "spark-class.sh"
    assert script.exists() and os.access(script, os.X_OK)
    for name in services_running("org.apache.spark.deploy.worker.Worker"):
        s = SERVICES[name]
        assert mounts(s)[cache] == (mounts(SERVER)[cache][0], "rw"), name
        assert s["entrypoint"] == ["/app/scripts/spark-class.sh"], name
        assert s["environment"]["PYSPARK_PYTHON"] == "python3", name


def test_the_lineage_cache_is_a_named_volume():
    cache = SERVER["environment"]["BRUSHFIRE_CACHE"]
    source, mode = mounts(SERVER)[cache]
    assert mode == "rw" and source in COMPOSE["volumes"]
    assert "BRUSHFIRE_CACHE=/cache" in " ".join(instruction("ENV")).replace(" \\", "")


def test_ports_are_published_on_loopback_only():
    for name, s in SERVICES.items():
        for p in s.get("ports", []):
            assert p.startswith("127.0.0.1:"), (name, p)
    port = SERVER["ports"][0].rsplit(":", 1)[1]
    entry = json.loads(instruction("ENTRYPOINT")[-1])
    assert option(entry, "--port") == port and instruction("EXPOSE") == [port]


def test_the_image_installs_what_make_demo_installs():
    assert instruction("FROM") == ["python:3.11-slim-bookworm"]
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"
    # Java: the package scripts/ensure-java.sh installs for `make setup`
    java_pkg = re.search(r"apt-get install .* (\S+)\s*$", (ROOT / "scripts/ensure-java.sh").read_text(),
                         re.M).group(1)
    installs = [shlex.split(r) for r in instruction("RUN") if "apt-get install" in r]
    packages = {w for cmd in installs for w in cmd if not w.startswith("-")}
    assert {java_pkg, "nodejs", "npm"} <= packages
    # the package itself, and the frontend when the tree has one
    run = " ".join(instruction("RUN"))
    assert re.search(r"pip install [^&;]*\s\.\s", run)
    frontend = next(r for r in instruction("RUN") if "npm ci" in r)
    assert "[ -f frontend/package.json ]" in frontend and "npm run build" in frontend
    assert "COPY . /app" in [f"COPY {a}" for a in instruction("COPY")]
    assert "BRUSHFIRE_FRONTEND=/app/frontend/dist" in " ".join(instruction("ENV"))


def test_the_entrypoint_serves_on_all_interfaces(capsys):
    entry = json.loads(instruction("ENTRYPOINT")[-1])
    assert entry[:2] == ["brushfire", "serve"] and option(entry, "--host") == "0.0.0.0"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["brushfire"] == "brushfire.cli:main"
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "--host" in capsys.readouterr().out
    assert (ROOT / json.loads(instruction("CMD")[-1])[0]).is_file()


def test_the_image_leaves_out_data_and_local_state():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"data", ".venv", ".git", "frontend/node_modules", ".cache"} <= set(ignored)


@pytest.mark.parametrize("name", sorted(SERVER["environment"]))
def test_the_deploy_doc_explains_each_setting(name):
    assert f"`{name}" in DEPLOY_DOC


def test_the_deploy_doc_says_what_the_cluster_runs():
    """Every service builds the one image (no `image:` of Spark's own); the doc says so,
    and names the user the image runs as, whose access the mounted data needs."""
    assert all("image" not in s and s["build"]["context"] == "." for s in SERVICES.values())
    assert "apache/spark" not in DEPLOY_DOC
    assert "all four from the one image built from the `Dockerfile`" in " ".join(DEPLOY_DOC.split())
    (user,) = instruction("USER")
    assert f"run as the image's `{user}` user" in " ".join(DEPLOY_DOC.split())
