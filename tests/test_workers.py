"""A real Celery worker runs a task end to end, over Redis and over the embedded transport."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration


def start_worker(env: dict[str, str]) -> subprocess.Popen[str]:
    full = {**os.environ, "DEBUG": "1", **env}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "engramsite",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


@pytest.fixture
def redis_url() -> Iterator[str]:
    import redis

    url = "redis://127.0.0.1:6379/15"
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail("Redis must be running on 127.0.0.1:6379 for this test")
    client.flushdb()
    yield url
    client.flushdb()


def roundtrip(app: Celery, proc: subprocess.Popen[str], value: str) -> Any:
    result = app.send_task("engram.ping", args=[value])
    try:
        return result.get(timeout=60)
    except Exception:
        pytest.fail("worker did not run the task:\n" + stop(proc))


def test_a_worker_on_redis_runs_a_task(redis_url: str, tmp_path: Path) -> None:
    proc = start_worker({"REDIS_URL": redis_url, "ENGRAM_DATA_DIR": str(tmp_path)})
    try:
        app = Celery(broker=redis_url, backend=redis_url)
        assert roundtrip(app, proc, "over-redis") == "over-redis"
    finally:
        stop(proc)


def embedded_env(data: Path) -> dict[str, str]:
    return {
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "",
        "CELERY_RESULT_BACKEND": "",
        "ENGRAM_DATA_DIR": str(data),
        "DATABASE_URL": f"sqlite:///{data}/engram.sqlite3",
    }


def embedded_app(data: Path) -> Celery:
    """A client of the embedded transport of the data folder `data`, once the worker made it."""
    broker = data / "broker"
    for _ in range(100):
        if (broker / "queue").is_dir() and (broker / "results").is_dir():
            break
        time.sleep(0.1)
    return Celery(
        broker="filesystem://",
        backend="file://" + str(broker / "results"),
        broker_transport="engramsite.broker:Transport",
        broker_transport_options={
            "data_folder_in": str(broker / "queue"),
            "data_folder_out": str(broker / "queue"),
            "processed_folder": str(broker / "processed"),
            "store_processed": False,
        },
    )


def test_the_embedded_transport_runs_a_task_without_redis(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = start_worker(embedded_env(data))
    try:
        assert roundtrip(embedded_app(data), proc, "embedded") == "embedded"
    finally:
        out = stop(proc)
    assert "redis" not in out.lower().split("transport:", 1)[-1].split("\n", 1)[0]


def test_the_embedded_worker_survives_a_message_it_cannot_read(tmp_path: Path) -> None:
    """kombu's filesystem transport creates a message's file before writing it, and a polling
    worker could read it empty and die. Messages now appear whole (written under a partial name,
    renamed); a file the worker still cannot decode is skipped, and the worker runs on."""
    from engramsite.broker import PARTIAL_SUFFIX

    data = tmp_path / "data"
    queue = data / "broker" / "queue"
    queue.mkdir(parents=True)
    (queue / "1_unreadable.celery.msg").write_bytes(b"")  # what the old race left to read
    half = queue / f"2_half.celery.msg{PARTIAL_SUFFIX}"  # a message still being written
    half.write_bytes(b'{"body": "eyJ')
    proc = start_worker(embedded_env(data))
    try:
        app = embedded_app(data)
        assert roundtrip(app, proc, "after-a-bad-one") == "after-a-bad-one"
        assert proc.poll() is None  # still running
        assert half.exists()  # never taken for a message
        assert not [p for p in queue.iterdir() if p.name.endswith(".msg")]
    finally:
        out = stop(proc)
    assert "skipped an unreadable message" in out
