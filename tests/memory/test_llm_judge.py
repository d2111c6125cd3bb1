"""The outcome judge's request: every part within its own budget so the lessons are never cut, an
output cap that fits one full verdict per engram, batches for very large sessions."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pytest
from django.utils import timezone

from lib.llm import sizing
from memory.maths import learning
from memory.models import AgentSession, Engram, LearningSignal, Observation
from memory.services import judge, llm
from tests.memory.helpers import make_engram, make_session

pytestmark = pytest.mark.django_db


def line(kind: str, content: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}})


def lesson(owner: Any, engram_id: str, statement: str, **fields: Any) -> Engram:
    return make_engram(owner, engram_id=engram_id, statement=statement, embedding=None, **fields)


def observe(session: AgentSession, command: str, *, ok: bool = True, minute: int = 0) -> None:
    Observation.objects.create(
        owner=session.owner,
        session=session,
        tool="Bash",
        tool_input=json.dumps({"command": command}),
        success=ok,
        created_at=timezone.now() - dt.timedelta(minutes=600 - minute),
    )


def delta(session: AgentSession, lines: list[str]) -> None:
    LearningSignal.objects.create(
        owner=session.owner,
        session=session,
        kind=LearningSignal.Kind.TRANSCRIPT,
        text="\n".join(lines),
        state=LearningSignal.State.DONE,
    )


def data_of(request: dict[str, Any]) -> str:
    content = request["messages"][0]["content"]
    assert content.startswith(judge.INSTRUCTIONS + "\n\n<data>\n")
    assert content.endswith("\n</data>")
    return content[len(judge.INSTRUCTIONS) + len("\n\n<data>\n") : -len("\n</data>")]


def test_the_judge_sends_every_part_and_an_output_cap_for_each_verdict(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_MODEL = "claude-sonnet-4-6"
    pnpm = lesson(
        owner,
        "ENG-1",
        "Always use pnpm to install packages.",
        polarity="do",
        extra={"anti_pattern": "npm install"},
    )
    push = lesson(owner, "ENG-2", "Never   push\nto main.", polarity="dont")
    session = make_session(owner, last_assistant_message="Installed with pnpm.")
    observe(session, "pnpm install", minute=1)
    observe(session, "git push", ok=False, minute=2)
    transcript = [line("user", "please add left-pad"), line("assistant", "Done.")]
    delta(session, transcript)
    fake_claude.reply(
        {
            "verdicts": [
                {"id": "ENG-1", "result": "followed", "evidence": "ran pnpm install"},
                {"id": "ENG-2", "result": "irrelevant", "evidence": "no push to main"},
            ]
        }
    )
    verdicts = judge.session_judge(session=session, engrams=[pnpm, push])
    assert {pk: v.result for pk, v in verdicts.items()} == {
        pnpm.pk: "followed",
        push.pk: "irrelevant",
    }
    rendered = learning.render_entries(learning.parse_lines(transcript))
    data = (
        "<lessons>\n"
        "ENG-1 [do]: Always use pnpm to install packages. (avoid: npm install)\n"
        "ENG-2 [dont]: Never push to main.\n"
        "</lessons>\n"
        "<tool_calls>\n"
        'Bash (ok): {"command": "pnpm install"}\n'
        'Bash (FAILED): {"command": "git push"}\n'
        "</tool_calls>\n"
        f"<transcript>\n{rendered}\n</transcript>\n"
        "<last_assistant_message>\nInstalled with pnpm.\n</last_assistant_message>"
    )
    verdict_item = {
        "type": "object",
        "properties": {
            "id": {"enum": ["ENG-1", "ENG-2"]},
            "result": {"enum": ["followed", "contradicted", "ignored", "irrelevant"]},
            "evidence": {"type": "string", "maxLength": 300},
        },
        "required": ["id", "result", "evidence"],
    }
    assert fake_claude.requests == [
        {
            "model": "claude-sonnet-4-6",
            # Two verdicts of 300 + 40 + 12 + 80 characters and 60 of framing, at 3 a token.
            "max_tokens": math.ceil((60 + 2 * 432) / 3),
            "system": llm.SYSTEM_PREAMBLE,
            "tools": [
                {
                    "name": "memory_outcome_judge",
                    "description": "Return the result of the task 'memory.outcome_judge'.",
                    "input_schema": {
                        "type": "object",
                        "properties": {
                            "verdicts": {"type": "array", "items": verdict_item, "maxItems": 2}
                        },
                        "required": ["verdicts"],
                    },
                }
            ],
            "tool_choice": {"type": "tool", "name": "memory_outcome_judge"},
            "messages": [
                {
                    "role": "user",
                    "content": f"{judge.INSTRUCTIONS}\n\n<data>\n{data}\n</data>",
                }
            ],
        }
    ]


def test_a_huge_session_never_cuts_the_lessons_and_keeps_the_newest_of_each_part(
    owner: Any, fake_claude: Any
) -> None:
    engrams = [
        lesson(owner, f"ENG-{i}", f"Lesson {i}: " + "use the project's own tooling " * 20)
        for i in range(3)
    ]
    session = make_session(owner, last_assistant_message="Summary first. " + "x" * 20_000)
    for minute in range(80):
        observe(session, f"step-{minute:02d} " + "y" * 500, minute=minute)
    delta(session, [line("user", f"turn {i} " + "z" * 900) for i in range(120)])
    fake_claude.reply({"verdicts": []})
    judge.session_judge(session=session, engrams=engrams)
    [request] = fake_claude.requests
    data = data_of(request)
    lessons = "\n".join(
        f"{e.engram_id} [do]: {' '.join(e.statement.split())[:400]}" for e in engrams
    )
    assert data.startswith(f"<lessons>\n{lessons}\n</lessons>\n<tool_calls>\n")
    assert len(data) <= judge.MAX_DATA_CHARS
    assert len(data) > judge.MAX_DATA_CHARS - 10  # the budget is used, not wasted
    tools = data.split("<tool_calls>\n")[1].split("\n</tool_calls>")[0]
    assert tools.splitlines()[-1].startswith('Bash (ok): {"command": "step-79 ')
    assert "step-00" not in tools  # the oldest calls gave way
    transcript = data.split("<transcript>\n")[1].split("\n</transcript>")[0]
    assert transcript.endswith("turn 119 " + "z" * 900)
    last = data.split("<last_assistant_message>\n")[1].split("\n</last_assistant_message>")[0]
    assert last.startswith("Summary first. xxx")
    assert len(tools) > 3000 and len(transcript) > 3000 and len(last) > 2000


def test_many_lessons_are_shortened_but_all_sent(owner: Any, fake_claude: Any) -> None:
    engrams = [
        lesson(owner, f"ENG-{i:02d}", f"Lesson {i} " + "w" * 900) for i in range(judge.JUDGE_BATCH)
    ]
    fake_claude.reply({"verdicts": []})
    judge.session_judge(session=make_session(owner), engrams=engrams)
    data = data_of(fake_claude.requests[0])
    block = data.split("<lessons>\n")[1].split("\n</lessons>")[0].splitlines()
    assert [row.split(" ")[0] for row in block] == [e.engram_id for e in engrams]
    line_chars = judge.LESSONS_CHARS // judge.JUDGE_BATCH
    assert all(len(row) <= line_chars + 20 for row in block)


def test_a_full_answer_fits_the_output_cap(owner: Any, fake_claude: Any) -> None:
    """The longest answer the schema allows, one verdict per engram, fits max_tokens."""
    count = judge.JUDGE_BATCH
    longest = {
        "verdicts": [
            {"id": "E" * 40, "result": "contradicted", "evidence": "e" * judge.EVIDENCE_CHARS}
            for _ in range(count)
        ]
    }
    spelled = json.dumps(longest, indent=1)
    assert sizing.estimate_tokens(spelled) <= judge.output_budget(count)
    engrams = [lesson(owner, f"ENG-{i}", f"Lesson number {i} here.") for i in range(count)]
    fake_claude.reply({"verdicts": []})
    judge.session_judge(session=make_session(owner), engrams=engrams)
    assert fake_claude.requests[0]["max_tokens"] == judge.output_budget(count)


def test_more_engrams_than_one_batch_take_one_call_per_batch(owner: Any, fake_claude: Any) -> None:
    count = judge.JUDGE_BATCH + 5
    engrams = [lesson(owner, f"ENG-{i:02d}", f"Lesson number {i} here.") for i in range(count)]

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        ids = body["tools"][0]["input_schema"]["properties"]["verdicts"]["items"]["properties"][
            "id"
        ]["enum"]
        return {"verdicts": [{"id": i, "result": "ignored", "evidence": "-"} for i in ids]}

    fake_claude.on(judge.JUDGE_TASK, answer)
    verdicts = judge.session_judge(session=make_session(owner), engrams=engrams)
    assert len(verdicts) == count
    first, second = fake_claude.requests
    assert first["max_tokens"] == judge.output_budget(judge.JUDGE_BATCH)
    assert second["max_tokens"] == judge.output_budget(5)
    assert "ENG-29 [do]" in data_of(second) and "ENG-29" not in data_of(first)


def test_when_a_later_batch_fails_the_first_batch_keeps_its_verdicts(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_RETRIES = 0
    engrams = [
        lesson(owner, f"ENG-{i:02d}", f"Lesson number {i} here.")
        for i in range(judge.JUDGE_BATCH + 1)
    ]
    fake_claude.reply(
        {"verdicts": [{"id": "ENG-00", "result": "followed", "evidence": "did it"}]}
    ).timeout()
    verdicts = judge.session_judge(session=make_session(owner), engrams=engrams)
    assert {pk: v.result for pk, v in verdicts.items()} == {engrams[0].pk: "followed"}
