"""The circuit breaker: after calls in a row that cannot reach Claude, no call for a few minutes
(state in the database, so every worker process sees it), then one probe; the health panel says
when calls resume."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from memory.models import LearningSignal, LlmCall, LlmGate
from memory.services import llm
from memory.services.learning import signal_extract

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
TASK = "test.echo"
BODY = {
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
    "messages": [{"role": "user", "content": "Summarise.\n\n<data>\nsome text\n</data>"}],
}


@pytest.fixture
def claude(fake_claude: Any, settings: Any) -> Any:
    settings.ENGRAM_LLM_RETRIES = 0
    settings.ENGRAM_LLM_MODEL = "claude-sonnet-4-6"
    return fake_claude


def run(owner: Any) -> str:
    try:
        llm.llm_run(
            owner=owner,
            task=TASK,
            schema=SCHEMA,
            instructions="Summarise.",
            data="some text",
            max_tokens=64,
        )
    except llm.LlmUnavailable as exc:
        return exc.reason
    return "ok"


def pause_over() -> None:
    LlmGate.objects.update(open_until=timezone.now() - dt.timedelta(seconds=1))


def test_three_calls_in_a_row_that_cannot_reach_claude_stop_the_calls(
    owner: Any, claude: Any
) -> None:
    claude.unreachable().timeout().fail(401, "invalid x-api-key")
    assert [run(owner) for _ in range(3)] == ["unreachable", "timeout", "auth"]
    assert claude.requests == [BODY, BODY, BODY]
    before = timezone.now()
    assert [run(owner), run(owner)] == ["circuit_open", "circuit_open"]
    assert len(claude.requests) == 3  # nothing sent while open
    gate = LlmGate.objects.get()
    assert (gate.failures, gate.reason, gate.skipped) == (3, "auth", 2)
    assert gate.open_until is not None
    assert before + dt.timedelta(minutes=4) < gate.open_until <= before + llm.BREAKER_PAUSE
    # The calls the breaker held back reserved nothing and recorded no row.
    assert LlmCall.objects.count() == 3
    assert set(LlmCall.objects.values_list("reason", flat=True)) == {
        "unreachable",
        "timeout",
        "auth",
    }


def test_an_answer_from_claude_ends_the_run_of_failures(owner: Any, claude: Any) -> None:
    claude.timeout().timeout().fail(500, "boom").timeout().timeout()
    assert [run(owner) for _ in range(5)] == ["timeout", "timeout", "api_error"] + ["timeout"] * 2
    assert LlmGate.objects.get().failures == 2
    claude.reply({"answer": "ok"})
    assert run(owner) == "ok"  # still closed: two in a row, not three
    gate = LlmGate.objects.get()
    assert (gate.failures, gate.open_until) == (0, None)


def test_after_the_pause_one_probe_goes_through_and_its_success_closes_the_breaker(
    owner: Any, claude: Any
) -> None:
    claude.timeout().timeout().timeout()
    for _ in range(3):
        run(owner)
    pause_over()
    held_back: list[str] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        held_back.append(run(owner))  # another worker, while the probe is in flight
        return {"answer": "ok"}

    claude.on(TASK, answer)
    assert run(owner) == "ok"
    assert held_back == ["circuit_open"]
    assert claude.requests == [BODY] * 4
    gate = LlmGate.objects.get()
    assert (gate.failures, gate.open_until, gate.opened_at, gate.skipped) == (0, None, None, 0)
    claude.on(TASK, lambda body: {"answer": "ok"})
    assert run(owner) == "ok"


def test_a_failed_probe_pauses_the_calls_again(owner: Any, claude: Any) -> None:
    claude.unreachable(times=4)
    for _ in range(3):
        run(owner)
    opened = LlmGate.objects.get().opened_at
    pause_over()
    assert run(owner) == "unreachable"
    assert run(owner) == "circuit_open"
    gate = LlmGate.objects.get()
    assert gate.failures == 4
    assert gate.opened_at == opened
    assert gate.open_until is not None and gate.open_until > timezone.now()


def test_the_breaker_is_shared_by_every_owner(owner: Any, other_owner: Any, claude: Any) -> None:
    claude.timeout().timeout().timeout()
    for _ in range(3):
        run(owner)
    assert run(other_owner) == "circuit_open"


def test_the_fallback_decides_while_the_breaker_is_open(
    api: Client, owner: Any, claude: Any
) -> None:
    claude.timeout().timeout().timeout()
    for _ in range(3):
        run(owner)
    api.post(
        "/api/v1/hooks/claude-code",
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "s1",
            "cwd": "/w/app",
            "prompt": "From now on, always use pnpm in this repo.",
        },
        content_type="application/json",
    )
    signal = LearningSignal.objects.get()
    assert signal_extract(signal_pk=signal.pk) >= 1
    signal.refresh_from_db()
    assert signal.producer == "heuristic"
    assert len(claude.requests) == 3


def test_the_health_panel_says_the_calls_are_paused_and_when_they_resume(
    logged_in: Client, owner: Any, claude: Any
) -> None:
    claude.timeout().timeout().timeout()
    for _ in range(3):
        run(owner)
    run(owner)
    gate = LlmGate.objects.get()
    assert gate.open_until is not None
    resume = timezone.localtime(gate.open_until).strftime("%H:%M")
    page = logged_in.get("/?panel=health").text
    assert (
        "paused after 3 calls in a row could not reach Claude (timeout); "
        f"calls resume at {resume}, 1 call(s) skipped" in page
    )
    assert '<span class="bad">not ready</span>' in page
    pause_over()
    page = logged_in.get("/?panel=health").text
    assert "calls resume at" not in page
