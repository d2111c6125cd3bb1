"""The budgeted, redacted, recorded task call and what /healthz and the dashboard say about it."""

from __future__ import annotations

import datetime as dt
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from lib.llm import sizing
from memory.models import LlmCall
from memory.services import llm

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


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


def run(owner: Any, data: str = "some transcript") -> dict[str, Any]:
    return llm.llm_run(
        owner=owner, task="test.echo", schema=SCHEMA, instructions="Summarise.", data=data
    )


@pytest.mark.django_db
def test_without_a_key_it_is_unavailable_and_records_nothing(owner: Any) -> None:
    with pytest.raises(llm.LlmUnavailable) as caught:
        run(owner)
    assert caught.value.reason == "no_key"
    assert not LlmCall.objects.exists()


@pytest.mark.django_db
def test_a_call_is_recorded_with_its_tokens_and_outcome(owner: Any, fake_claude: Any) -> None:
    fake_claude.reply({"answer": "fine"})
    assert run(owner) == {"answer": "fine"}
    call = LlmCall.objects.get()
    assert (call.owner, call.task, call.outcome) == (owner, "test.echo", "ok")
    assert (call.tokens_in, call.tokens_out, call.model) == (120, 40, "claude-fake-1")
    assert call.duration_ms >= 0


@pytest.mark.django_db
def test_secrets_in_the_data_never_leave(owner: Any, fake_claude: Any) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    fake_claude.reply({"answer": "ok"})
    run(owner, data=f"I set GITHUB_TOKEN={secret} and ran the tests")
    prompt = fake_claude.prompt_of(fake_claude.requests[0])
    assert secret not in prompt
    assert "ran the tests" in prompt
    assert "<data>" in prompt and "</data>" in prompt


@pytest.mark.django_db
def test_a_failed_call_is_recorded_and_raised(owner: Any, fake_claude: Any, settings: Any) -> None:
    settings.ENGRAM_LLM_RETRIES = 0
    fake_claude.fail(500, "boom")
    with pytest.raises(llm.LlmUnavailable) as caught:
        run(owner)
    assert caught.value.reason == "api_error"
    call = LlmCall.objects.get()
    assert call.outcome == "failed" and "api_error" in call.error


@pytest.mark.django_db
def test_the_daily_budget_is_per_owner_and_resets_at_midnight_utc(
    owner: Any, other_owner: Any, fake_claude: Any, settings: Any
) -> None:
    fake_claude.on("test.echo", lambda body: {"answer": "ok"})
    run(owner)  # settles at 160 tokens
    settings.ENGRAM_LLM_DAILY_TOKENS = 160 + worst_case(fake_claude.requests[0])
    run(owner)
    with pytest.raises(llm.LlmUnavailable) as caught:
        run(owner)  # 320 spent: no room for another worst case
    assert caught.value.reason == "budget"
    assert len(fake_claude.requests) == 2
    assert LlmCall.objects.filter(owner=owner, outcome="budget").count() == 1
    run(other_owner)  # another owner's budget is untouched
    assert len(fake_claude.requests) == 3
    yesterday = timezone.now() - dt.timedelta(days=1)
    LlmCall.objects.filter(owner=owner).update(created_at=yesterday)
    run(owner)
    assert len(fake_claude.requests) == 4
    assert llm.tokens_today(owner) == 160


@pytest.mark.django_db
def test_healthz_tells_the_truth_about_the_llm_and_nothing_more(
    client: Client, logged_in: Client, settings: Any, owner: Any
) -> None:
    assert client.get("/healthz").json()["checks"]["llm"] == {"ok": True}
    settings.ANTHROPIC_API_KEY = "sk-ant-x"
    LlmCall.objects.create(owner=owner, task="t", outcome="failed", error="timeout: slow")
    response = client.get("/healthz")
    assert response.status_code == HTTPStatus.OK  # the LLM is optional
    assert response.json()["checks"]["llm"] == {"ok": False}
    assert "timeout: slow" not in response.content.decode()
    assert settings.ENGRAM_LLM_MODEL not in response.content.decode()
    LlmCall.objects.create(owner=owner, task="t", outcome="ok", tokens_in=1000, tokens_out=234)
    response = client.get("/healthz")
    assert response.json()["checks"]["llm"] == {"ok": True}
    assert "1,234" not in response.content.decode()
    # The detail is on the logged-in health panel.
    page = logged_in.get("/?panel=health").content.decode()
    assert "1,234 of" in page


@pytest.mark.django_db
def test_the_dashboard_panel_shows_the_owners_usage(
    logged_in: Client, owner: Any, other_owner: Any, settings: Any
) -> None:
    settings.ANTHROPIC_API_KEY = "sk-ant-x"
    settings.ENGRAM_LLM_DAILY_TOKENS = 10_000
    LlmCall.objects.create(owner=owner, task="t", outcome="ok", tokens_in=700, tokens_out=300)
    LlmCall.objects.create(owner=other_owner, task="t", outcome="ok", tokens_in=5000)
    page = logged_in.get("/?panel=health").content.decode()
    assert "1,000 of 10,000 tokens used today" in page
    settings.ANTHROPIC_API_KEY = ""
    page = logged_in.get("/?panel=health").content.decode()
    assert "no key: deterministic fallbacks in use" in page and "optional" in page


@pytest.mark.django_db
def test_the_panel_says_when_a_call_did_not_fit_the_budget(
    logged_in: Client, owner: Any, settings: Any
) -> None:
    settings.ANTHROPIC_API_KEY = "sk-ant-x"
    LlmCall.objects.create(
        owner=owner,
        task="t",
        outcome="budget",
        error="daily budget of 500 tokens has no room for a call of up to 900 tokens",
    )
    page = logged_in.get("/?panel=health").text
    assert (
        "(daily budget of 500 tokens has no room for a call of up to 900 tokens); calls that "
        "do not fit the rest of the budget use the fallbacks until 00:00 UTC" in page
    )
