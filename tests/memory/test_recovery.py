"""Background work survives a dead broker and a lost task: queueing never fails the request, and
the periodic sweep runs what was never queued, once. Found by bench/load.py and bench/faults.py."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from celery import Celery
from django.db import connection
from django.db.models import F
from django.test import Client
from django.utils import timezone

from engramsite.celery import app as engram_app
from memory.models import AgentSession, Engram, LearningSignal, Outcome
from memory.services.recovery import pending_sweep
from memory.tasks import sweep_pending

URL = "/api/v1/hooks/claude-code"
LESSON = "Always run the database migrations check before pushing a release branch."


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def dead_broker() -> Iterator[Celery]:
    """The current Celery app points at a Redis nobody listens on (a real client, no mock)."""
    port = closed_port()
    dead = Celery("dead-broker", broker=f"redis://127.0.0.1:{port}/0")
    dead.conf.result_backend = f"redis://127.0.0.1:{port}/0"
    dead.conf.task_always_eager = False
    dead.set_current()
    try:
        yield dead
    finally:
        engram_app.set_current()


def hook(client: Client, event: str, **fields: Any) -> Any:
    body = {"hook_event_name": event, "session_id": "S-dead-broker", "cwd": "/w/app", **fields}
    return client.post(URL, body, content_type="application/json")


@pytest.mark.django_db
def test_hooks_answer_when_the_broker_is_down_and_the_sweep_attributes_later(
    api: Client, owner: Any, dead_broker: Celery, django_capture_on_commit_callbacks: Any
) -> None:
    created = api.post(
        "/api/v1/engrams",
        {"statement": LESSON, "scope": "project:app", "source": "user"},
        content_type="application/json",
    )
    assert created.status_code == HTTPStatus.CREATED
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        for event, fields in [
            ("SessionStart", {"source": "startup"}),
            ("UserPromptSubmit", {"prompt": "run the database migrations check before release"}),
            ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "make check"}}),
            ("Stop", {}),
        ]:
            assert hook(api, event, **fields).status_code == HTTPStatus.OK, event
    # Every queued job met the dead broker; each gave up within its short retry policy.
    assert any(getattr(c, "task_name", "") == "engram.attribute_session" for c in callbacks)
    assert time.monotonic() - started < 5.0
    session = AgentSession.objects.get(owner=owner, session_id="S-dead-broker")
    assert session.ended_at is not None and session.attributed_at is None
    assert session.injections.exists()

    # Too recent for the sweep (its own task may still be on the way) ...
    assert pending_sweep()["sessions_found"] == 0
    # ... and once past the grace period, attributed by the sweep, once.
    later = timezone.now() + timedelta(minutes=5)
    assert pending_sweep(now=later)["sessions_attributed"] == 1
    session.refresh_from_db()
    assert session.attributed_at is not None
    outcomes = Outcome.objects.filter(injection__session=session).count()
    assert outcomes == session.injections.values("engram").distinct().count() > 0
    assert pending_sweep(now=later)["sessions_found"] == 0
    assert Outcome.objects.filter(injection__session=session).count() == outcomes


@pytest.mark.django_db
def test_the_sweep_extracts_a_pending_signal_once(api: Client, owner: Any) -> None:
    response = hook(api, "UserPromptSubmit", prompt="Always use pathlib for file paths here.")
    assert response.status_code == HTTPStatus.OK
    signal = LearningSignal.objects.get(owner=owner)
    assert signal.state == LearningSignal.State.PENDING  # its task was never run
    LearningSignal.objects.filter(pk=signal.pk).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )
    first = sweep_pending.apply().get()
    assert first["signals_found"] == first["signals_processed"] == 1
    signal.refresh_from_db()
    assert signal.state == LearningSignal.State.DONE
    again = sweep_pending.apply().get()
    assert again["signals_found"] == 0


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_inject_locks_engram_rows_in_key_order(owner: Any) -> None:
    """Concurrent injects (and attribution) lock engram rows in primary-key order, so they never
    deadlock: while the lowest row is held elsewhere, an inject waiting for it holds no other."""
    import psycopg

    from memory.services.injections import access_record
    from tests.memory.helpers import make_engram

    low, high = make_engram(owner), make_engram(owner)
    assert low.pk < high.pk
    # A new row version of `low`, placed after `high`'s: a scan meets `high` first.
    Engram.objects.filter(pk=low.pk).update(frequency=F("frequency") + 1)
    session = AgentSession.objects.create(owner=owner, session_id="S-lock", scope="global")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    holder = psycopg.connect(**params)
    checker = psycopg.connect(**params, autocommit=True)
    errors: list[BaseException] = []

    def inject() -> None:
        try:
            with connection.cursor() as cursor:
                # The plan bench/load.py's deadlocks came from: a hash join over a table scan,
                # which locks rows in the order the scan meets them.
                cursor.execute(
                    "SET enable_nestloop = off; SET enable_mergejoin = off; "
                    "SET enable_indexscan = off; SET enable_bitmapscan = off"
                )
            access_record(
                owner=owner,
                session=session,
                picks=[(high.pk, "directive", 1, 0.9, 10), (low.pk, "directive", 2, 0.8, 10)],
                rs_eff={high.pk: 0.5, low.pk: 0.5},
                query="q",
                now=timezone.now(),
                injected=True,
            )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            from django.db import connections

            connections.close_all()

    try:
        holder.execute("SELECT 1 FROM memory_engram WHERE id = %s FOR UPDATE", (low.pk,))
        worker = threading.Thread(target=inject)
        worker.start()
        deadline = time.monotonic() + 10
        waiting = 0
        while time.monotonic() < deadline and not waiting:
            row = checker.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE %s",
                ("%memory_engram%",),
            ).fetchone()
            waiting = row[0] if row else 0
            time.sleep(0.02)
        assert waiting, "the inject never waited for the held row"
        # The higher row is free: the waiting inject locks nothing past the one it waits for.
        checker.execute("BEGIN")
        checker.execute("SELECT 1 FROM memory_engram WHERE id = %s FOR UPDATE NOWAIT", (high.pk,))
        checker.execute("ROLLBACK")
        holder.commit()
        worker.join(timeout=10)
        assert not worker.is_alive() and not errors, errors
    finally:
        holder.close()
        checker.close()
    assert session.injections.count() == 2


def _wait_for_lock_waiter(checker: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = checker.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        ).fetchone()
        if row and row[0]:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_sessions_ending_at_once_over_the_same_engrams_both_end(owner: Any) -> None:
    """The co-access edge both ends create: the second waits, then strengthens the first's edge
    instead of failing its whole end (a 500 on Stop under bench/load.py)."""
    import psycopg
    from django.db import connections, transaction

    from memory.models import Association, Injection
    from memory.services.sessions import session_end
    from tests.memory.helpers import make_engram

    first, second = make_engram(owner), make_engram(owner)
    sessions = []
    for sid in ("S-end-1", "S-end-2"):
        session = AgentSession.objects.create(owner=owner, session_id=sid, scope="global")
        for rank, engram in enumerate((first, second), start=1):
            Injection.objects.create(
                owner=owner, session=session, engram=engram, bucket="directive", rank=rank
            )
        sessions.append(session)
    release = threading.Event()
    errors: list[BaseException] = []

    def end(session: AgentSession, hold: bool) -> None:
        try:
            with transaction.atomic():
                session_end(owner=owner, session=session)
                if hold:
                    release.wait(10)  # the edges exist, uncommitted, until released
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    checker = psycopg.connect(**params, autocommit=True)
    try:
        holder = threading.Thread(target=end, args=(sessions[0], True))
        holder.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            row = checker.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'idle in transaction'"
            ).fetchone()
            if row and row[0]:
                break
            time.sleep(0.02)
        racer = threading.Thread(target=end, args=(sessions[1], False))
        racer.start()
        assert _wait_for_lock_waiter(checker), "the second end never waited for the first"
        release.set()
        holder.join(10)
        racer.join(10)
    finally:
        release.set()
        checker.close()
    assert not errors, errors
    assert AgentSession.objects.filter(ended_at__isnull=False).count() == 2
    edges = Association.objects.filter(type=Association.Type.CO_ACCESSED)
    assert edges.count() == 2  # one each way, strengthened by the second end
    assert all(edge.strength > 0.3 for edge in edges)


@pytest.mark.django_db
def test_the_sweep_reads_a_transcript_whose_capture_was_lost(
    api: Client, owner: Any, tmp_path: Any
) -> None:
    import json

    path = tmp_path / "t.jsonl"
    line = {"type": "user", "message": {"role": "user", "content": LESSON}}
    path.write_text(json.dumps(line) + "\n")
    hook(api, "SessionStart")
    # The capture task queued at Stop never runs (as with a dead broker or a killed worker).
    session = AgentSession.objects.get(owner=owner)
    AgentSession.objects.filter(pk=session.pk).update(
        transcript_path=str(path), ended_at=timezone.now() - timedelta(minutes=10)
    )
    assert not LearningSignal.objects.filter(kind="transcript").exists()
    first = pending_sweep()
    assert first["transcripts_read"] == 1
    assert LearningSignal.objects.filter(kind="transcript").count() == 1
    assert Engram.objects.filter(owner=owner, statement__icontains="migrations check").exists()
    again = pending_sweep()
    assert again["transcripts_read"] == 0
    assert LearningSignal.objects.filter(kind="transcript").count() == 1


def test_a_failing_item_is_retried_with_back_off_and_given_up_after_the_limit(
    owner: Any, logged_in: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.models import SweepFailure
    from memory.services import recovery

    signal = LearningSignal.objects.create(
        owner=owner,
        kind=LearningSignal.Kind.PROMPT,
        text="Always use pnpm.",
        digest="d",
        created_at=timezone.now() - timedelta(hours=1),
    )
    calls: list[int] = []

    def broken(*, signal_pk: int) -> int:
        calls.append(signal_pk)
        raise RuntimeError("the extractor broke")

    monkeypatch.setattr(recovery, "signal_extract", broken)
    now = timezone.now()
    assert pending_sweep(now=now)["failed"] == 1
    assert pending_sweep(now=now + timedelta(minutes=1))["failed"] == 0  # backing off
    assert len(calls) == 1
    when = now
    for attempt in range(2, recovery.SWEEP_MAX_ATTEMPTS + 1):
        when += recovery.SWEEP_BACKOFF * 2 ** (attempt - 2) + timedelta(seconds=1)
        pending_sweep(now=when)
        assert len(calls) == attempt
    pending_sweep(now=when + timedelta(days=30))  # past the limit: never again
    assert len(calls) == recovery.SWEEP_MAX_ATTEMPTS
    assert SweepFailure.objects.get(object_id=signal.pk).attempts == recovery.SWEEP_MAX_ATTEMPTS
    page = logged_in.get("/?panel=health").content.decode()
    assert "1 background item(s) failed 5 times" in page
