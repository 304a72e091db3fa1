"""``streamlit run app.py`` as users start it: the server stays on the machine.

Python's socket layer is wrapped in the server process (a ``sitecustomize`` module on its path) so that every name
lookup and connection to anything but this machine is refused and recorded; the project's own
``.streamlit/config.toml`` is the only configuration.
"""

from __future__ import annotations

import os
import time
import urllib.request
from pathlib import Path

import pytest

from benchmarks.app_server import REPOSITORY, serving

pytestmark = pytest.mark.server

RECORDER = """
import os, socket

LOG = os.environ["OUTSIDE_REQUESTS_LOG"]
LOCAL = ("127.", "::1", "localhost", "0.0.0.0", "::")


def is_local(host):
    if host is None or host == "":
        return True
    host = host.decode() if isinstance(host, bytes) else str(host)
    return host.startswith(LOCAL)


def refuse(what):
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(what + "\\n")
    raise OSError("the test allows no outside requests: " + what)


lookup = socket.getaddrinfo


def getaddrinfo(host, *args, **kwargs):
    if not is_local(host):
        refuse(f"lookup {host}")
    return lookup(host, *args, **kwargs)


connect, connect_ex = socket.socket.connect, socket.socket.connect_ex


def guarded(original):
    def call(self, address):
        if isinstance(address, tuple) and not is_local(address[0]):
            refuse(f"connect {address}")
        return original(self, address)
    return call


socket.getaddrinfo = getaddrinfo
socket.socket.connect = guarded(connect)
socket.socket.connect_ex = guarded(connect_ex)
"""


def test_server_start_and_first_page_make_no_outside_request(tmp_path: Path, trained_checkpoint: Path):
    (tmp_path / "sitecustomize.py").write_text(RECORDER, encoding="utf-8")
    requests, log = tmp_path / "outside.log", tmp_path / "server.log"
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
        "OUTSIDE_REQUESTS_LOG": str(requests),
    }
    # Everything but the port as .streamlit/config.toml says.
    with serving(str(trained_checkpoint), log, environment=environment, only_config=True) as (origin, _):
        with urllib.request.urlopen(f"{origin}/", timeout=10) as response:
            assert response.status == 200
        time.sleep(2)  # anything the start-up does in the background has had its chance
    printed = log.read_text(encoding="utf-8", errors="replace")
    assert not requests.exists(), requests.read_text(encoding="utf-8")
    assert "External URL" not in printed and "external IP" not in printed, printed
    assert f"{origin.removeprefix('http://')}" in printed  # it says where to open the app


def test_the_server_configuration_is_hardened():
    """Streamlit's security options as .streamlit/config.toml sets them (Streamlit reads the same file)."""
    import tomllib

    config = tomllib.loads((REPOSITORY / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    server = config["server"]
    assert server["address"] == "localhost"  # a classroom network is an explicit --server.address 0.0.0.0
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert "*" not in server["corsAllowedOrigins"]
    assert server["maxUploadSize"] <= 1 and server["maxMessageSize"] <= 50
    assert server["fileWatcherType"] == "none" and server["enableStaticServing"] is False
    assert config["runner"]["postScriptGC"] is False  # a full collection after every run: slow under load
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["showErrorDetails"] == "none"


def test_nothing_loads_a_pickle():
    """Checkpoints are safetensors and JSON: no module imports pickle, and torch.load, if ever used, must not
    unpickle (weights_only=True)."""
    import ast

    offending = []
    for path in [
        *REPOSITORY.glob("transformer/**/*.py"),
        *REPOSITORY.glob("pages/**/*.py"),
        REPOSITORY / "app.py",
        *REPOSITORY.glob("benchmarks/*.py"),
        *REPOSITORY.glob("scripts/*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [alias.name for alias in node.names] + (
                    [node.module] if isinstance(node, ast.ImportFrom) else []
                )
                if any(name and name.split(".")[0] in ("pickle", "cPickle", "dill", "joblib") for name in names):
                    offending.append(f"{path.name}:{node.lineno} imports a pickle module")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load":
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "torch":
                    safe = any(
                        k.arg == "weights_only" and getattr(k.value, "value", None) is True for k in node.keywords
                    )
                    if not safe:
                        offending.append(f"{path.name}:{node.lineno} torch.load without weights_only=True")
    assert not offending, offending


def test_the_audited_lock_satisfies_what_the_project_asks_for():
    """``requirements.lock`` (the versions the dependency audit checked) pins every runtime dependency of
    ``pyproject.toml``, each within its declared range: a dependency added or re-ranged without refreshing the lock
    (``bash scripts/audit.sh --lock``) fails here."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(line) for line in [*project["dependencies"], *project["optional-dependencies"]["app"]]]
    pins = {}
    for line in (REPOSITORY / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    assert len(pins) > len(wanted)  # the transitive dependencies are locked too
    for requirement in wanted:
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{requirement.name} is not in requirements.lock"
        assert requirement.specifier.contains(pins[name]), f"{requirement} but the lock has {pins[name]}"
