"""Evaluate a task's code: N concurrent LLM judges, or the deterministic rubric without a key.

The request path never calls Claude. `evaluation_request` either answers at once with the
rubric (no key: it runs nothing and says `source: rubric`) or writes a pending EvalRecord and
queues `patterns.evaluate`; the task runs the judges on threads and fills the record in. The
record's key is the handle a client polls.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memory import validation
from memory.errors import InvalidInput, NotFound
from memory.services import llm
from memory.services.jobs import job_enqueue
from patterns import maths
from patterns.models import EvalRecord, SuccessPattern
from patterns.services.feedback import feedback_record
from patterns.services.store import MAX_CODE_CHARS, clean_task, new_key, pattern_get

DEFAULT_JUDGES = 3
MAX_JUDGES = 5
MAX_EXPECTED = 20
# A judge below this found a problem worth remembering: its feedback joins the clusters.
FEEDBACK_BELOW = 8.0
JUDGE_TASK = "patterns.judge"
# Each judge reads the same rubric from another angle, so their errors are less alike.
PERSPECTIVES = (
    "correctness: does the code do what the task asks, for every input, not just the examples?",
    "robustness: error handling, edge cases, resource use, security.",
    "maintainability: structure, naming, tests, and whether a reviewer would accept it.",
    "adversarial: does it hard-code expected outputs or special-case the test inputs?",
    "completeness: is anything the task asks for missing?",
)
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 10},
        "feedback": {"type": "string", "maxLength": 600},
        "hardcoded": {"type": "boolean"},
    },
    "required": ["score", "feedback", "hardcoded"],
}
JUDGE_INSTRUCTIONS = (
    "You are judge {index} of {count} evaluating code written for a task. Score it from 0 to "
    "10 with this rubric: 10 correct, tested, clear; 7 correct with minor issues; 4 partly "
    "correct; 0 wrong or empty. Look in particular at {perspective} Set `hardcoded` true when "
    "the code returns expected outputs as literals or special-cases test inputs instead of "
    "computing the answer. `feedback` names the most important problem in one or two sentences "
    "(what is wrong and what to do), or says it is fine."
)


def clean_judges(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_JUDGES:
        raise InvalidInput("n", f"must be a whole number from 1 to {MAX_JUDGES}")
    return value


def evaluation_request(
    *,
    owner: Any,
    code: Any,
    task: Any = None,
    pattern_key: str | None = None,
    n: Any = DEFAULT_JUDGES,
    expected_outputs: Any = None,
    now: datetime | None = None,
) -> EvalRecord:
    """Evaluate `code` for `task` (the pattern's task and code when a key is given).

    With an LLM configured: a pending record, judged by the `patterns.evaluate` task. Without:
    the rubric's finished record, at once.
    """
    pattern: SuccessPattern | None = None
    if pattern_key:
        pattern = pattern_get(owner=owner, key=pattern_key)
    judges = clean_judges(n)
    if pattern is not None:
        task = task or pattern.task
        code = code or pattern.code or pattern.design
    task = clean_task(task)
    code = validation.text("code", code, limit=MAX_CODE_CHARS, required=True)
    expected = validation.str_list("expected_outputs", expected_outputs)[:MAX_EXPECTED]
    validation.check_text(task, code, injections=False)
    now = now or timezone.now()
    with transaction.atomic():
        record = EvalRecord.objects.create(
            owner=owner,
            key=new_key("ev"),
            pattern=pattern,
            task=task,
            code=code,
            expected_outputs=expected,
            judges=judges,
            state=EvalRecord.State.PENDING,
            source=EvalRecord.Source.LLM,
            created_at=now,
        )
        if llm.configured():
            job_enqueue("patterns.evaluate", record.pk)
        else:
            _finish_rubric(record, now=now, note="no LLM key: deterministic rubric")
    return record


def evaluation_get(*, owner: Any, key: str) -> EvalRecord:
    record = EvalRecord.objects.filter(owner=owner, key=str(key or "")[:20]).first()
    if record is None:
        raise NotFound(f"Evaluation {key}")
    return record


@dataclass(frozen=True)
class Judgement:
    score: float
    feedback: str
    hardcoded: bool


def _judge(record: EvalRecord, index: int, count: int, in_thread: bool) -> Judgement | str:
    """One judge's verdict, or the reason it could not give one."""
    try:
        perspective = PERSPECTIVES[index % len(PERSPECTIVES)]
        data = f"Task:\n{record.task}\n\nCode:\n{record.code}"
        if record.expected_outputs:
            data += "\n\nExpected outputs:\n" + "\n".join(record.expected_outputs)
        answer = llm.llm_run(
            owner=record.owner,
            task=JUDGE_TASK,
            schema=JUDGE_SCHEMA,
            instructions=JUDGE_INSTRUCTIONS.format(
                index=index + 1, count=count, perspective=perspective
            ),
            data=data,
            max_tokens=400,
        )
        score = answer.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float):
            return "the judge gave no numeric score"
        return Judgement(
            score=maths.clamp_score(float(score)),
            feedback=str(answer.get("feedback", ""))[:600].strip(),
            hardcoded=bool(answer.get("hardcoded", False)),
        )
    except llm.LlmUnavailable as exc:
        return f"{exc.reason}: {exc.message}"
    finally:
        if in_thread:
            connection.close()


def judges_run(record: EvalRecord) -> list[Judgement | str]:
    """Run the record's N judges at once on threads (one each), in judge order.

    Inside an open transaction (a test's) other connections could not see the record's owner,
    so the judges then run one after another on this connection instead.
    """
    count = record.judges
    if connection.in_atomic_block or count == 1:
        return [_judge(record, i, count, in_thread=False) for i in range(count)]
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="judge") as pool:
        futures = [pool.submit(_judge, record, i, count, True) for i in range(count)]
        return [f.result() for f in futures]


def _finish_rubric(record: EvalRecord, *, now: datetime, note: str) -> None:
    rubric = maths.rubric_score(record.code, record.expected_outputs)
    record.state = EvalRecord.State.DONE
    record.source = EvalRecord.Source.RUBRIC
    record.score = rubric.score
    record.spread = 0.0
    record.flagged = False
    record.judge_scores = [rubric.score]
    record.feedback = rubric.feedback
    record.hardcoding = list(rubric.hardcoding)
    record.note = note[:300]
    record.finished_at = now
    record.save()
    if rubric.score < maths.SCORE_MAX:
        feedback_record(owner=record.owner, record=record, text=rubric.feedback, now=now)


def _finish_judged(record: EvalRecord, verdicts: Sequence[Judgement], *, now: datetime) -> None:
    verdict = maths.judges_combine([v.score for v in verdicts])
    worst = verdicts[verdict.worst]
    signals = maths.hardcoding_signals(record.code, record.expected_outputs)
    if any(v.hardcoded for v in verdicts):
        judges = sum(v.hardcoded for v in verdicts)
        signals.append(f"{judges} of {len(verdicts)} judges saw hard-coded outputs")
    record.state = EvalRecord.State.DONE
    record.source = EvalRecord.Source.LLM
    record.score = verdict.median
    record.spread = verdict.spread
    record.flagged = verdict.flagged
    record.judge_scores = [v.score for v in verdicts]
    record.feedback = worst.feedback
    record.hardcoding = signals
    record.finished_at = now
    record.save()
    if worst.score < FEEDBACK_BELOW and worst.feedback:
        feedback_record(owner=record.owner, record=record, text=worst.feedback, now=now)


def evaluation_run(record_id: int, *, now: datetime | None = None) -> str:
    """Judge a pending evaluation (the Celery task's body); a finished one is left alone.

    The judges run outside any transaction (minutes of network); the result is written under a
    row lock that re-checks the state, so two workers never both finish one record.
    """
    record = EvalRecord.objects.select_related("owner").filter(pk=record_id).first()
    if record is None or record.state != EvalRecord.State.PENDING:
        return "skipped"
    outcomes = judges_run(record)
    verdicts = [o for o in outcomes if isinstance(o, Judgement)]
    failures = [o for o in outcomes if isinstance(o, str)]
    now = now or timezone.now()
    with transaction.atomic():
        locked = EvalRecord.objects.select_for_update().select_related("owner").get(pk=record_id)
        if locked.state != EvalRecord.State.PENDING:
            return "skipped"
        if verdicts:
            if failures:
                locked.note = f"{len(failures)} of {len(outcomes)} judges failed: {failures[0]}"
            _finish_judged(locked, verdicts, now=now)
            return "llm"
        reason = failures[0] if failures else "no judge ran"
        _finish_rubric(locked, now=now, note=f"LLM unavailable ({reason}): deterministic rubric")
        return "rubric"
