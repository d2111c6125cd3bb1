"""LLM extraction's requests: a long transcript delta in chunks of whole entries (the heuristic
reads what the LLM did not), prompts already captured never re-sent, and tier A/B only with a
quote of the user's own words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory.maths import learning
from memory.models import AgentSession, Engram, LearningDraft, LearningSignal
from memory.services import extraction, llm
from memory.services.learning import signal_extract
from tests.memory.helpers import make_session

pytestmark = pytest.mark.django_db


def line(kind: str, content: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}})


def prompt_signal(session: AgentSession, text: str) -> LearningSignal:
    return LearningSignal.objects.create(
        owner=session.owner,
        session=session,
        kind=LearningSignal.Kind.PROMPT,
        label="instruction",
        text=text,
        digest=_digest(text),
        scope=session.scope,
    )


def _digest(text: str) -> str:
    from memory.maths.textnorm import content_hash as digest

    return digest(text)


def transcript_signal(session: AgentSession, lines: list[str]) -> LearningSignal:
    return LearningSignal.objects.create(
        owner=session.owner,
        session=session,
        kind=LearningSignal.Kind.TRANSCRIPT,
        text="\n".join(lines),
        scope=session.scope,
    )


def body(data: str, limit: int, model: str = "claude-sonnet-4-6") -> dict[str, Any]:
    """The exact request an extraction call sends."""
    schema = json.loads(json.dumps(extraction.EXTRACT_SCHEMA))
    schema["properties"]["lessons"]["maxItems"] = limit
    return {
        "model": model,
        "max_tokens": extraction.output_budget(limit),
        "system": llm.SYSTEM_PREAMBLE,
        "tools": [
            {
                "name": "memory_learning_extract",
                "description": "Return the result of the task 'memory.learning_extract'.",
                "input_schema": schema,
            }
        ],
        "tool_choice": {"type": "tool", "name": "memory_learning_extract"},
        "messages": [
            {
                "role": "user",
                "content": extraction.EXTRACT_INSTRUCTIONS.format(limit=limit)
                + f"\n\n<data>\n{data}\n</data>",
            }
        ],
    }


@pytest.fixture
def claude(fake_claude: Any, settings: Any) -> Any:
    settings.ENGRAM_LLM_MODEL = "claude-sonnet-4-6"
    settings.ENGRAM_LLM_RETRIES = 0
    return fake_claude


def long_session(turns: int) -> list[str]:
    """`turns` user entries of ~1,100 rendered characters, each answered by a short line."""
    lines = []
    for i in range(turns):
        lines.append(line("user", f"Turn {i:02d}: please look at module {i} " + "q" * 1050))
        lines.append(line("assistant", f"Looked at module {i}."))
    return lines


def rendered(lines: list[str]) -> list[str]:
    return [learning.render_entries([e]) for e in learning.parse_lines(lines)]


def test_a_long_transcript_delta_is_sent_in_chunks_of_whole_entries(
    owner: Any, claude: Any
) -> None:
    session = make_session(owner)
    lines = long_session(30)
    signal = transcript_signal(session, lines)
    claude.on(extraction.EXTRACT_TASK, lambda body: {"lessons": []})
    signal_extract(signal_pk=signal.pk)
    out = rendered(lines)
    # Each user line renders to ~1,100 characters and each answer to ~30: ten turns fit in
    # 12,000 characters, eleven do not.
    chunks = ["\n".join(out[0:20]), "\n".join(out[20:40]), "\n".join(out[40:60])]
    assert all(len(c) <= extraction.EXTRACT_CHUNK_CHARS for c in chunks)
    assert claude.requests == [body(chunk, extraction.MAX_LESSONS_PER_CALL) for chunk in chunks]
    signal.refresh_from_db()
    assert (signal.state, signal.producer) == ("done", "llm")


def test_chunks_past_the_call_limit_are_read_by_the_heuristic(owner: Any, claude: Any) -> None:
    session = make_session(owner)
    lines = long_session(10 * extraction.MAX_EXTRACT_CALLS + 1)  # one turn into a 5th chunk
    lines.append(line("user", "From now on, always run the linter before you commit."))
    signal = transcript_signal(session, lines)
    claude.on(extraction.EXTRACT_TASK, lambda body: {"lessons": []})
    signal_extract(signal_pk=signal.pk)
    assert len(claude.requests) == extraction.MAX_EXTRACT_CALLS
    assert all("always run the linter" not in json.dumps(r) for r in claude.requests)
    draft = LearningDraft.objects.get()
    assert draft.producer == "heuristic"
    assert "linter" in draft.statement


def test_when_a_later_call_fails_the_heuristic_reads_the_rest(owner: Any, claude: Any) -> None:
    session = make_session(owner)
    lines = long_session(11)  # a full chunk, then a turn and the rule in the second
    lines.append(line("user", "From now on, always run the linter before you commit."))
    signal = transcript_signal(session, lines)
    claude.reply(
        {
            "lessons": [
                {
                    "statement": "Look at every module in turn.",
                    "type": "procedural",
                    "polarity": "do",
                    "tier": "C",
                }
            ]
        }
    ).timeout()
    signal_extract(signal_pk=signal.pk)
    assert len(claude.requests) == 2
    assert "always run the linter" in claude.requests[1]["messages"][0]["content"]
    drafts = {d.producer: d for d in LearningDraft.objects.all()}
    assert drafts["llm"].statement == "Look at every module in turn."
    assert "linter" in drafts["heuristic"].statement
    signal.refresh_from_db()
    assert signal.producer == "llm"


def test_when_the_first_call_fails_the_heuristic_decides_alone(owner: Any, claude: Any) -> None:
    session = make_session(owner)
    signal = transcript_signal(
        session, [line("user", "From now on, always run the linter before you commit.")]
    )
    claude.timeout()
    signal_extract(signal_pk=signal.pk)
    signal.refresh_from_db()
    assert signal.producer == "heuristic"
    assert LearningDraft.objects.get().producer == "heuristic"


def test_prompts_already_captured_are_not_sent_again(owner: Any, claude: Any) -> None:
    session = make_session(owner)
    captured = "Always use pnpm in this repo."
    prompt = prompt_signal(session, captured)
    prompt.state = LearningSignal.State.DONE
    prompt.save()
    lines = [
        line("user", captured),
        line("assistant", "Noted."),
        line("user", "Hmm, and we deploy from the release branch only."),
    ]
    signal = transcript_signal(session, lines)
    claude.on(extraction.EXTRACT_TASK, lambda body: {"lessons": []})
    signal_extract(signal_pk=signal.pk)
    kept = rendered(lines)[1:]
    assert claude.requests == [body("\n".join(kept), extraction.MAX_LESSONS_PER_CALL)]


def test_a_delta_of_captured_prompts_and_assistant_text_costs_no_call(
    owner: Any, claude: Any
) -> None:
    session = make_session(owner)
    prompt_signal(session, "Always use pnpm in this repo.").delete()  # a pk for nothing
    prompt_signal(session, "Always use pnpm in this repo.")
    signal = transcript_signal(
        session,
        [line("user", "Always use pnpm in this repo."), line("assistant", "I will use pnpm.")],
    )
    signal_extract(signal_pk=signal.pk)
    assert claude.requests == []
    signal.refresh_from_db()
    assert signal.producer == "heuristic"


def lesson(statement: str, tier: str, **fields: str) -> dict[str, Any]:
    return {"statement": statement, "type": "procedural", "polarity": "do", "tier": tier, **fields}


def test_tier_a_and_b_stand_only_when_their_quote_is_a_users_words(owner: Any, claude: Any) -> None:
    session = make_session(owner, scope="project:shop")
    lines = [
        line("user", "no — use   PNPM here,\nnot npm. Thanks"),
        line("assistant", "You should always run the full test suite before pushing."),
        line("user", "ok, go on"),
    ]
    signal = transcript_signal(session, lines)
    claude.reply(
        {
            "lessons": [
                lesson("Use pnpm, not npm.", "B", quote="Use pnpm here, not npm."),
                lesson(
                    "Run the full test suite before pushing.",
                    "A",
                    quote="always run the full test suite before pushing",
                ),
                lesson("Ask before deleting files.", "A", rationale="The user seems careful."),
            ]
        }
    )
    signal_extract(signal_pk=signal.pk)
    [request] = claude.requests
    assert request == body("\n".join(rendered(lines)), extraction.MAX_LESSONS_PER_CALL)
    drafts = {d.statement: d for d in LearningDraft.objects.all()}
    pnpm = drafts["Use pnpm, not npm."]
    assert (pnpm.tier, pnpm.quote) == ("B", "use   PNPM here,\nnot npm")
    assert pnpm.entry_line == 1  # the user entry it quotes
    assert pnpm.engram is not None
    assert (pnpm.engram.status, pnpm.engram.source) == ("active", "user")
    # Quoted from the assistant, and not quoted at all: inferences, never the user's.
    for statement in ("Run the full test suite before pushing.", "Ask before deleting files."):
        draft = drafts[statement]
        assert draft.tier == "C"
        assert draft.engram is not None
        assert draft.engram.source == "agent"
        assert draft.engram.status == Engram.Status.CANDIDATE
        assert draft.entry_line == 0  # no user entry says it
    assert drafts["Ask before deleting files."].quote == "The user seems careful."


def test_a_prompts_lesson_is_the_users_when_quoted_from_the_prompt(owner: Any, claude: Any) -> None:
    session = make_session(owner)
    text = "From now on, always use ruff format before committing. Then fix the login bug."
    signal = prompt_signal(session, text)
    claude.reply(
        {
            "lessons": [
                lesson(
                    "Run ruff format before committing.",
                    "A",
                    quote="always use ruff format before committing",
                ),
                lesson("Fix bugs quickly.", "A", quote="fix bugs quickly"),
            ]
        }
    )
    signal_extract(signal_pk=signal.pk)
    assert claude.requests == [body(text, learning.MAX_DRAFTS_PER_PROMPT)]
    tiers = dict(LearningDraft.objects.values_list("statement", "tier"))
    assert tiers == {"Run ruff format before committing.": "A", "Fix bugs quickly.": "C"}


def test_the_output_cap_fits_the_longest_answer_the_schema_allows() -> None:
    longest = {
        "lessons": [
            {
                "statement": "s" * 500,
                "type": "architectural",
                "polarity": "dont",
                "tier": "A",
                "quote": "q" * 300,
                "anti_pattern": "a" * 300,
                "tags": ["t" * 50] * 8,
                "rationale": "r" * 500,
                "trigger_context": "c" * 300,
            }
        ]
        * extraction.MAX_LESSONS_PER_CALL
    }
    from lib.llm import sizing

    spelled = json.dumps(longest, indent=1)
    assert sizing.estimate_tokens(spelled) <= extraction.output_budget(
        extraction.MAX_LESSONS_PER_CALL
    )
