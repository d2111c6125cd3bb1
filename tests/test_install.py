"""Engram installed like a product: a wheel of this checkout in a fresh virtualenv outside the
repository, `engram run` on the embedded default (SQLite, no Redis, the per-user data folder),
then the dashboard with its CSS, the API and /healthz — and `engram doctor` against it: 0 when
everything is in place, non-zero naming the check with a wrong token, hooks missing, a dead
worker, a stopped server.

The wheel is built once per test session; the virtualenv reuses this one's installed
dependencies through a .pth line (the packages themselves come only from the wheel).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration
START_SECONDS = 240


@dataclass
class Installed:
    venv: Path
    home: Path
    url: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def env(self, **extra: str) -> dict[str, str]:
        base = {
            "PATH": str(self.venv / "bin") + os.pathsep + "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        return {**base, **extra}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str, token: str = "") -> tuple[int, bytes, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=20) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [built] = out.glob("engram-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    place = tmp_path_factory.mktemp("installed")
    venv, home = place / "venv", place / "home"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    # Dependencies from this environment (a path line: its own .pth files, such as the
    # editable install of this checkout, are not read), the packages from the wheel only.
    (site / "engram-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--ignore-installed",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = place / "run.log"
    base = Installed(venv, home, url, "", None, log)  # type: ignore[arg-type]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [base.bin("engram"), "run", "--bind", f"127.0.0.1:{port}"],
            cwd=place,
            env=base.env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail("engram run exited:\n" + log.read_text(errors="replace")[-4000:])
        try:
            if get(url + "/healthz")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(1)
    else:
        os.killpg(process.pid, signal.SIGTERM)
        pytest.fail("engram run did not answer:\n" + log.read_text(errors="replace")[-4000:])
    found = re.search(r"API token: (eng_\S+)", log.read_text(errors="replace"))
    assert found, log.read_text(errors="replace")
    server = Installed(venv, home, url, found.group(1), process, log)
    try:
        yield server
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def doctor(server: Installed, project: Path, token: str | None = None) -> tuple[int, str]:
    env = server.env(ENGRAM_URL=server.url, ENGRAM_TOKEN=server.token if token is None else token)
    result = subprocess.run(
        [server.bin("engram"), "doctor", "--project", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, result.stdout + result.stderr


def failed(output: str) -> list[str]:
    return [line.split()[1] for line in output.splitlines() if line.startswith("FAIL")]


@pytest.fixture(scope="module")
def project(installed: Installed) -> Path:
    """A project whose .claude/settings.json `engram setup claude-code` wrote."""
    folder = installed.home / "code" / "shop"
    folder.mkdir(parents=True)
    subprocess.run(
        [
            installed.bin("engram"),
            "setup",
            "claude-code",
            "--project",
            str(folder),
            "--command",
            "--url",
            installed.url,
        ],
        env=installed.env(),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return folder


def worker_pid(parent: int) -> int:
    """The Celery worker that `engram run` started (its child whose command says worker)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and " worker " in cmdline and "celery" in cmdline:
            return int(entry.name)
    raise AssertionError("no Celery worker under engram run")


def test_the_installed_package_serves_the_dashboard_with_css_the_api_and_healthz(
    installed: Installed,
) -> None:
    status, body, _ = get(installed.url + "/healthz")
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, body, _ = get(installed.url + "/login/")
    assert status == 200 and b"/static/css/engram.css" in body
    status, css, kind = get(installed.url + "/static/css/engram.css")
    assert status == 200 and kind.startswith("text/css") and b".row-bad" in css
    status, _, _ = get(installed.url + "/static/vendor/htmx-2.0.11.min.js")
    assert status == 200
    status, body, _ = get(installed.url + "/api/v1/whoami", installed.token)
    assert status == 200 and json.loads(body)["owner"] == "owner"
    # Data went to the per-user folder, code came from the wheel, not from this checkout.
    assert (installed.home / ".local" / "share" / "engram" / "engram.sqlite3").exists()
    where = subprocess.run(
        [installed.bin("python"), "-c", "import engramsite, memory; print(memory.__file__)"],
        env=installed.env(),
        cwd=installed.home,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(installed.venv)) and str(ROOT) not in where
    # The embedded broker needs no host, and the user's terminal is not told it lacks one.
    assert "No hostname was supplied" not in installed.log.read_text(errors="replace")


def test_doctor_passes_against_the_installed_server(installed: Installed, project: Path) -> None:
    code, output = doctor(installed, project)
    assert code == 0, output
    assert "Everything Engram needs is in place." in output


def test_doctor_names_the_token_when_it_is_wrong(installed: Installed, project: Path) -> None:
    code, output = doctor(installed, project, token="eng_this-is-not-a-real-token-at-all")
    assert code != 0
    assert failed(output) == ["token"]


def test_doctor_names_the_hooks_when_the_settings_have_none(installed: Installed) -> None:
    bare = installed.home / "code" / "bare"
    bare.mkdir(parents=True, exist_ok=True)
    code, output = doctor(installed, bare)
    assert code != 0
    assert failed(output) == ["hooks"]


def test_doctor_names_the_worker_when_it_is_dead(installed: Installed, project: Path) -> None:
    pid = worker_pid(installed.process.pid)
    os.kill(pid, signal.SIGSTOP)  # alive to the OS, answers nothing: a hung worker
    try:
        code, output = doctor(installed, project)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert code != 0
    assert failed(output) == ["worker"]


def test_doctor_names_the_server_when_it_is_stopped(installed: Installed, project: Path) -> None:
    os.killpg(installed.process.pid, signal.SIGTERM)
    installed.process.wait(timeout=60)
    code, output = doctor(installed, project)
    assert code != 0
    assert failed(output) == ["server"]
