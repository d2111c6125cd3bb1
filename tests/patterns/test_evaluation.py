"""Evaluate: N judges through the faked Claude (concurrent in a worker), the rubric fallback."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest
from django.db import connection

from memory.models import LlmCall
from patterns.models import EvalRecord, FeedbackCluster
from patterns.services.evaluation import JUDGE_TASK, evaluation_request, evaluation_run
from patterns.tasks import evaluate as evaluate_task
from tests.patterns.helpers import HONEST_CODE, make_pattern

JUDGE = re.compile(r"judge (\d) of (\d)")


def judge_index(body: dict[str, Any]) -> int:
    content = body["messages"][0]["content"]
    text = content if isinstance(content, str) else json.dumps(content)
    found = JUDGE.search(text)
    assert found is not None
    return int(found.group(1))


@pytest.mark.django_db
def test_three_judges_median_spread_and_the_worst_feedback(owner: Any, fake_claude: Any) -> None:
    answers = {
        1: {"score": 8, "feedback": "Fine.", "hardcoded": False},
        2: {"score": 6, "feedback": "No error handling for a timeout.", "hardcoded": False},
        3: {"score": 9, "feedback": "Clear.", "hardcoded": False},
    }
    fake_claude.on(JUDGE_TASK, lambda body: answers[judge_index(body)])
    pattern = make_pattern(owner, code=HONEST_CODE)
    record = evaluation_request(owner=owner, pattern_key=pattern.key, code=None, n=3)
    # With a key the request path only queues: no call to Claude was made.
    assert record.state == "pending"
    assert fake_claude.calls() == []
    assert evaluation_run(record.pk) == "llm"
    record.refresh_from_db()
    assert record.state == "done"
    assert record.source == "llm"
    assert record.judge_scores == [8.0, 6.0, 9.0]
    assert record.score == 8.0
    assert record.spread == 3.0
    assert record.flagged
    assert record.feedback == "No error handling for a timeout."
    assert len(fake_claude.calls(JUDGE_TASK)) == 3
    assert LlmCall.objects.filter(task=JUDGE_TASK).count() == 3
    assert FeedbackCluster.objects.get().text == "No error handling for a timeout."
    # Idempotent: a second run finds it done and calls nobody.
    assert evaluation_run(record.pk) == "skipped"
    assert evaluate_task(record.pk) == "skipped"
    assert len(fake_claude.calls()) == 3


@pytest.mark.django_db
def test_judges_that_agree_are_not_flagged_and_a_judge_sees_hard_coding(
    owner: Any, fake_claude: Any
) -> None:
    fake_claude.on(
        JUDGE_TASK,
        lambda body: {"score": 7 + judge_index(body) / 2, "feedback": "ok", "hardcoded": True},
    )
    record = evaluation_request(owner=owner, task="square numbers", code="print(9)", n=2)
    evaluation_run(record.pk)
    record.refresh_from_db()
    assert record.judge_scores == [7.5, 8.0]
    assert not record.flagged
    assert record.hardcoding == ["2 of 2 judges saw hard-coded outputs"]


@pytest.mark.django_db
def test_when_every_judge_fails_the_rubric_answers_and_says_so(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_RETRIES = 0
    for _ in range(2):
        fake_claude.fail(500)
    record = evaluation_request(owner=owner, task="slugify", code=HONEST_CODE, n=2)
    assert evaluation_run(record.pk) == "rubric"
    record.refresh_from_db()
    assert record.source == "rubric"
    assert record.score == 10.0
    assert record.note.startswith("LLM unavailable")


@pytest.mark.django_db
def test_without_a_key_the_rubric_runs_nothing_and_marks_itself(owner: Any) -> None:
    record = evaluation_request(owner=owner, task="slugify", code=HONEST_CODE)
    assert record.state == "done"
    assert record.source == "rubric"
    assert record.note == "no LLM key: deterministic rubric"
    assert not LlmCall.objects.exists()


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_the_judges_run_concurrently_in_the_worker(owner: Any, fake_claude: Any) -> None:
    # Each judge waits until all three are in flight: only concurrent judges get past it.
    barrier = threading.Barrier(3, timeout=10)
    threads: set[str] = set()

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        threads.add(threading.current_thread().name)
        barrier.wait()
        return {"score": 5 + judge_index(body), "feedback": "Add tests.", "hardcoded": False}

    fake_claude.on(JUDGE_TASK, answer)
    record = evaluation_request(owner=owner, task="slugify a title", code=HONEST_CODE, n=3)
    assert not connection.in_atomic_block
    assert evaluation_run(record.pk) == "llm"
    record.refresh_from_db()
    assert record.judge_scores == [6.0, 7.0, 8.0]
    assert record.score == 7.0
    assert len(threads) == 3
    assert LlmCall.objects.filter(task=JUDGE_TASK).count() == 3
    assert EvalRecord.objects.get().state == "done"
