from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_file_validates() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    env = {**os.environ, "SECRET_KEY": "validate-only"}
    result = subprocess.run(
        [*command, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_compose_runs_web_worker_beat_on_healthy_postgres_and_redis() -> None:
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = spec["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    assert "pgvector" in services["postgres"]["image"]
    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
    assert "healthcheck" in services["postgres"] and "healthcheck" in services["redis"]
