"""The daily budget is reserved before each request, one reservation at a time, and settled with
the real usage afterwards: two calls cannot both pass the last tokens."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from lib.llm import sizing
from memory.models import LlmCall, LlmGate
from memory.services import llm

pytestmark = pytest.mark.sqlite  # the lock differs: select_for_update, or SQLite's one writer

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
TASK = "test.echo"


def worst_case(request: dict[str, Any]) -> int:
    """What a request may cost at most, from the body the SDK sent."""
    return (
        sizing.input_tokens(
            system=request["system"],
            prompt=request["messages"][0]["content"],
            tool=request["tools"][0],
        )
        + request["max_tokens"]
    )


def run(owner: Any, data: str = "a transcript") -> dict[str, Any]:
    return llm.llm_run(
        owner=owner,
        task=TASK,
        schema=SCHEMA,
        instructions="Summarise.",
        data=data,
        max_tokens=64,
    )


def expected_body(data: str = "a transcript") -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": llm.SYSTEM_PREAMBLE,
        "tools": [
            {
                "name": "test_echo",
                "description": "Return the result of the task 'test.echo'.",
                "input_schema": SCHEMA,
            }
        ],
        "tool_choice": {"type": "tool", "name": "test_echo"},
        "messages": [{"role": "user", "content": f"Summarise.\n\n<data>\n{data}\n</data>"}],
    }


@pytest.mark.django_db
def test_a_call_holds_its_worst_case_while_in_flight_and_settles_with_the_real_usage(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_MODEL = "claude-sonnet-4-6"
    seen: list[tuple[str, int, int]] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        row = LlmCall.objects.get()
        seen.append((row.outcome, row.reserved, llm.tokens_committed(owner)))
        return {"answer": "ok"}

    fake_claude.on(TASK, answer)
    assert run(owner) == {"answer": "ok"}
    [request] = fake_claude.requests
    assert request == expected_body()
    need = worst_case(request)
    assert seen == [("pending", need, need)]
    row = LlmCall.objects.get()
    assert (row.outcome, row.reserved, row.tokens_in, row.tokens_out) == ("ok", 0, 120, 40)
    assert llm.tokens_committed(owner) == llm.tokens_today(owner) == 160


@pytest.mark.django_db
def test_a_call_in_flight_keeps_a_second_one_from_passing_the_last_tokens(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    fake_claude.on(TASK, lambda body: {"answer": "probe"})
    run(owner)
    need = worst_case(fake_claude.requests[0])
    LlmCall.objects.all().delete()
    # Room for one call in flight and a half: check-then-spend would let both through.
    settings.ENGRAM_LLM_DAILY_TOKENS = need + need // 2
    refused: list[str] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        try:
            run(owner)
        except llm.LlmUnavailable as exc:
            refused.append(exc.reason)
        return {"answer": "ok"}

    fake_claude.on(TASK, answer)
    run(owner)
    assert refused == ["budget"]
    assert len(fake_claude.requests) == 2  # the probe above and the first call only
    budget_row = LlmCall.objects.get(outcome="budget")
    assert budget_row.error == (
        f"daily budget of {need + need // 2} tokens has no room for a call of up to {need} tokens"
    )
    # Settled at 160 tokens, the first call leaves room for another worst case.
    fake_claude.on(TASK, lambda body: {"answer": "again"})
    assert run(owner) == {"answer": "again"}


@pytest.mark.django_db
def test_a_repair_turn_the_budget_has_no_room_for_is_not_sent(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    fake_claude.on(TASK, lambda body: {"answer": "probe"})
    run(owner)
    need = worst_case(fake_claude.requests[0])
    LlmCall.objects.all().delete()
    settings.ENGRAM_LLM_DAILY_TOKENS = need + 10
    fake_claude.reply({"answer": 3})  # invalid: a repair turn would be needed
    with pytest.raises(llm.LlmUnavailable) as caught:
        run(owner)
    assert caught.value.reason == "invalid_output"
    assert len(fake_claude.requests) == 2  # the probe and the first try; no repair request
    row = LlmCall.objects.get()
    assert (row.outcome, row.reason, row.reserved, row.tokens_in, row.tokens_out) == (
        "failed",
        "invalid_output",
        0,
        120,
        40,
    )


@pytest.mark.django_db
def test_a_repair_turn_extends_the_reservation_and_both_requests_are_settled(
    owner: Any, fake_claude: Any
) -> None:
    reserved: list[int] = []

    def second(body: dict[str, Any]) -> dict[str, Any]:
        reserved.append(LlmCall.objects.get().reserved)
        return {"answer": "fixed"}

    fake_claude.reply({"answer": 3}).on(TASK, second)
    assert run(owner) == {"answer": "fixed"}
    first, repair = fake_claude.requests
    feedback = repair["messages"][2]["content"][0]["content"]
    assert reserved == [worst_case(first) + 120 + 40 + sizing.estimate_tokens(feedback) + 64]
    row = LlmCall.objects.get()
    assert (row.outcome, row.reserved, row.tokens_in, row.tokens_out) == ("repaired", 0, 240, 80)


@pytest.mark.django_db
def test_a_reservation_left_by_a_dead_worker_is_marked_abandoned_and_still_counted(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_DAILY_TOKENS = 100_000
    LlmCall.objects.create(
        owner=owner,
        task=TASK,
        outcome="pending",
        reserved=5000,
        created_at=timezone.now() - dt.timedelta(minutes=20),
    )
    fake_claude.reply({"answer": "ok"})
    run(owner)
    dead = LlmCall.objects.get(reserved=5000)
    assert (dead.outcome, dead.reason) == ("failed", "abandoned")
    # counted from the day it was reserved (in the first 20 minutes after 00:00 UTC that is
    # yesterday, and "today" alone would not hold it)
    assert llm.tokens_committed(owner, now=dead.created_at) == 5160
    assert llm.tokens_today(owner) == 160


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_reservations_take_turns_under_the_gate_lock(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_DAILY_TOKENS = 5000
    fake_claude.on(TASK, lambda body: {"answer": "ok"})
    outcome: list[str] = []

    def other_worker() -> None:
        try:
            run(owner)
            outcome.append("sent")
        except llm.LlmUnavailable as exc:
            outcome.append(exc.reason)
        finally:
            connection.close()

    LlmGate.objects.create(key=llm.GATE_KEY)
    with transaction.atomic():
        # This worker holds the lock and has reserved almost everything, not yet committed.
        LlmGate.objects.select_for_update().get(key=llm.GATE_KEY)
        LlmCall.objects.create(owner=owner, task=TASK, outcome="pending", reserved=4900)
        worker = threading.Thread(target=other_worker)
        worker.start()
        deadline = time.monotonic() + 10
        with connection.cursor() as cursor:
            waiting = 0
            while not waiting and time.monotonic() < deadline:
                cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
                waiting = cursor.fetchone()[0]
                time.sleep(0.01)
        assert waiting, "the other worker never waited for the gate"
    worker.join(10)
    assert outcome == ["budget"]
    assert fake_claude.requests == []


@pytest.mark.django_db
def test_an_unexpected_error_releases_the_reservation_and_leaves_the_breaker_alone(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_RETRIES = 0
    fake_claude.timeout().timeout().reply({"answer": "ok"})
    for _ in range(2):
        with pytest.raises(llm.LlmUnavailable):
            run(owner)
    with pytest.raises(Exception, match="nonsense"):  # a schema jsonschema cannot check
        llm.llm_run(
            owner=owner,
            task=TASK,
            schema={"type": "nonsense"},
            instructions="Summarise.",
            data="x",
            max_tokens=64,
        )
    row = LlmCall.objects.order_by("-pk").first()
    assert row is not None
    assert (row.outcome, row.reason, row.reserved) == ("failed", "internal", 0)
    assert LlmGate.objects.get().failures == 2  # neither an answer nor a failure to reach
