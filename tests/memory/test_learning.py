"""Session learning end to end: hooks capture, tasks extract, the write path stores, supersession,
undo, caps, the review-all setting, the LLM paths through the faked transport, the judge."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from django.test import Client

from memory.integrations import hookclient
from memory.models import (
    AgentSession,
    Engram,
    LearningDraft,
    LearningSignal,
    LifecycleEvent,
    Outcome,
    ReviewItem,
)
from memory.services import learning, review, sessions
from memory.tasks import learning_capture, learning_extract

URL = "/api/v1/hooks/claude-code"
CWD = "/home/dev/shop"


def hook(api: Client, event: str, session: str = "s1", **fields: Any) -> Any:
    body = {"hook_event_name": event, "session_id": session, "cwd": CWD, **fields}
    response = api.post(URL, body, content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def say(api: Client, prompt: str, session: str = "s1") -> Any:
    return hook(api, "UserPromptSubmit", session, prompt=prompt)


def extract_all() -> None:
    for pk in LearningSignal.objects.filter(state="pending").values_list("pk", flat=True):
        learning.signal_extract(signal_pk=pk)


def line(kind: str, content: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}}) + "\n"


def test_a_rule_stated_in_one_session_is_injected_in_the_next(api: Client) -> None:
    say(api, "No, don't use npm here. Always use pnpm in this repo, remember that.")
    signal = LearningSignal.objects.get()
    assert signal.kind == "prompt"
    assert signal.label == "correction"
    extract_all()
    rule = Engram.objects.get(statement="Always use pnpm in this repo.")
    assert rule.status == "active"
    assert rule.source == "user"
    assert rule.scope == "project:shop"
    assert rule.extra["learning"]["tier"] == "A"
    dont = Engram.objects.get(statement="Don't use npm here.")
    assert dont.polarity == "dont"
    assert dont.extra["anti_pattern"] == "use npm here"
    # The next session's brief carries the project's standing rules (issue #25).
    answer = hook(api, "SessionStart", "s2", source="startup")
    assert "Always use pnpm in this repo." in answer["hookSpecificOutput"]["additionalContext"]


def test_questions_tasks_and_pasted_logs_store_nothing(api: Client) -> None:
    say(api, "How do I always get the latest version?")
    say(api, "Fix the login bug in auth.py")
    say(api, 'Traceback (most recent call last):\n  File "a.py", line 1\nKeyError: never')
    assert not LearningSignal.objects.exists()


def test_signals_are_stored_with_secrets_redacted(api: Client) -> None:
    key = "AKIA" + "IOSFODNN7ABCDEFG"
    say(api, f"Always deploy with the key {key} from now on.")
    signal = LearningSignal.objects.get()
    assert key not in signal.text
    assert "[REDACTED:" in signal.text
    assert signal.redacted
    extract_all()
    assert not Engram.objects.filter(statement__contains=key).exists()


def test_the_extract_task_runs_once(api: Client) -> None:
    say(api, "Always use pnpm in this repo.")
    pk = LearningSignal.objects.get().pk
    assert learning_extract.apply(args=[pk]).get() == 1
    assert learning_extract.apply(args=[pk]).get() == 0
    assert Engram.objects.count() == 1


def test_transcript_deltas_are_read_once_per_offset(api: Client, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        line("user", "From now on, always run ruff before committing.")
        + line("assistant", [{"type": "text", "text": "Will do."}])
    )
    say(api, "Let's start on the cart.")
    session = AgentSession.objects.get()
    hook(api, "Stop", transcript_path=str(transcript))
    assert learning_capture.apply(args=[session.pk]).get() == {"signals": 1, "drafts": 1}
    assert Engram.objects.filter(statement="Always run ruff before committing.").exists()
    session.refresh_from_db()
    assert session.transcript_offset == transcript.stat().st_size
    # A second Stop adds nothing; new lines are read from the offset.
    hook(api, "Stop", transcript_path=str(transcript))
    assert learning_capture.apply(args=[session.pk]).get() == {"signals": 0, "drafts": 0}
    with transcript.open("a") as handle:
        handle.write(line("user", "Never use float for money."))
    hook(api, "PreCompact", transcript_path=str(transcript))
    learning.session_capture(session_pk=session.pk)
    assert LearningSignal.objects.filter(kind="transcript").count() == 2
    assert Engram.objects.filter(statement="Never use float for money.").exists()


def test_a_prompt_in_the_transcript_that_the_hook_saw_is_not_learned_twice(
    api: Client, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(line("user", "Always use pnpm in this repo."))
    say(api, "Always use pnpm in this repo.")
    hook(api, "Stop", transcript_path=str(transcript))
    learning.session_capture(session_pk=AgentSession.objects.get().pk)
    assert LearningDraft.objects.count() == 1


def test_engram_hook_attaches_the_new_lines_and_a_replay_adds_nothing(
    api: Client, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    first = line("user", "Hello there, let's begin.")
    transcript.write_text(first + line("user", "Always write docstrings for public functions."))
    say(api, "Let's start.")
    data = {"hook_event_name": "Stop", "session_id": "s1", "transcript_path": "/elsewhere.jsonl"}
    data["engram_transcript"] = {"offset": 0, "lines": transcript.read_text().splitlines()}
    for _ in range(2):
        assert api.post(URL, data, content_type="application/json").status_code == 200
    signal = LearningSignal.objects.get(kind="transcript")
    assert (signal.offset_start, signal.offset_end) == (0, transcript.stat().st_size)
    # Lines from a later offset continue where the last ones ended.
    data["engram_transcript"] = {
        "offset": len(first),
        "lines": transcript.read_text().splitlines()[1:],
    }
    api.post(URL, data, content_type="application/json")
    assert LearningSignal.objects.filter(kind="transcript").count() == 1
    learning.session_capture(session_pk=AgentSession.objects.get().pk)
    assert Engram.objects.filter(statement="Always write docstrings for public functions.").exists()


def test_the_command_client_attaches_lines_since_its_last_post(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(line("user", "one") + line("user", "two"))
    env = {"ENGRAM_HOOK_STATE": str(tmp_path / "state")}
    data = {"hook_event_name": "Stop", "session_id": "abc", "transcript_path": str(transcript)}
    state, offset = hookclient.attach_transcript(data, env) or ("", 0)
    assert data["engram_transcript"]["offset"] == 0
    assert len(data["engram_transcript"]["lines"]) == 2
    assert offset == transcript.stat().st_size
    hookclient._write_offset(state, offset)
    again = {"hook_event_name": "Stop", "session_id": "abc", "transcript_path": str(transcript)}
    assert hookclient.attach_transcript(again, env) is None
    assert hookclient.attach_transcript({"hook_event_name": "UserPromptSubmit"}, env) is None
    out = io.StringIO()
    assert (
        hookclient.main(
            io.BytesIO(json.dumps(data).encode()), out, {"ENGRAM_URL": "http://127.0.0.1:9"}
        )
        == 0
    )


def test_an_update_supersedes_the_old_version_and_review_can_restore_it(
    api: Client, owner: Any
) -> None:
    say(api, "Always start attribute names with 'q_'.")
    extract_all()
    old = Engram.objects.get()
    say(api, "Actually, start attribute names with 'j_' instead of 'q_'.")
    extract_all()
    new = Engram.objects.exclude(pk=old.pk).get()
    old.refresh_from_db()
    assert new.status == "active"
    assert old.superseded_by == new
    assert old.status == "retired"
    assert LearningDraft.objects.get(engram=new).result == "superseded"
    assert LifecycleEvent.objects.filter(event="engram_superseded", engram=old).exists()
    context = say(api, "what prefix do attribute names get?", session="s2")
    text = context.get("hookSpecificOutput", {}).get("additionalContext", "")
    assert old.engram_id not in text
    item = ReviewItem.objects.get(kind="superseded")
    review.review_decide(owner=owner, item=item, action="restore", actor="person")
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, old.superseded_by, new.status) == ("active", None, "retired")


def test_an_update_in_other_words_supersedes_every_paraphrase_of_the_old_rule(
    api: Client,
) -> None:
    say(api, "When naming function arguments, always start them with 'e_'.")
    say(api, "Remember: every function argument name begins with 'e_'.", session="s2")
    extract_all()
    olds = list(Engram.objects.all())
    assert len(olds) == 2
    say(api, "Oh, and start function argument names with 'g_' from now on.", session="s3")
    extract_all()
    new = Engram.objects.exclude(pk__in=[o.pk for o in olds]).get()
    assert new.status == "active"
    for old in olds:
        old.refresh_from_db()
        assert (old.superseded_by, old.status) == (new, "retired")
    assert ReviewItem.objects.filter(kind="superseded").count() == 2


def test_a_lesson_is_undone_in_one_call_and_its_old_version_returns(api: Client) -> None:
    say(api, "Always start attribute names with 'q_'.")
    extract_all()
    say(api, "No, start attribute names with 'j_' instead of 'q_'.")
    extract_all()
    new = Engram.objects.get(status="active")
    response = api.post(f"/api/v1/learning/lessons/{new.engram_id}/undo")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "retired"
    assert len(body["restored"]) == 1
    assert Engram.objects.get(engram_id=body["restored"][0]).status == "active"
    assert LifecycleEvent.objects.filter(event="lesson_undone").count() == 1


def test_past_twenty_drafts_a_session_sends_the_rest_to_review(api: Client) -> None:
    topics = [
        "billing",
        "invoices",
        "taxes",
        "shipping",
        "refunds",
        "coupons",
        "carts",
        "wishlists",
        "reviews",
        "ratings",
        "search",
        "filters",
        "sorting",
        "paging",
        "caching",
        "logging",
        "metrics",
        "tracing",
        "alerts",
        "backups",
        "exports",
        "imports",
    ]
    for topic in topics:
        say(api, f"Always keep the {topic} code small and documented.")
    extract_all()
    results = list(LearningDraft.objects.order_by("pk").values_list("result", flat=True))
    assert results[:20] == ["created"] * 20
    assert results[20:] == ["review", "review"]
    assert Engram.objects.filter(status="candidate").count() == 2
    assert ReviewItem.objects.filter(kind="candidate").count() == 2


def test_the_owner_can_send_every_lesson_to_review_over_rest(api: Client) -> None:
    response = api.put(
        "/api/v1/learning/settings", {"review_all": True}, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json()["review_all"] is True
    say(api, "Always use pnpm in this repo.")
    extract_all()
    engram = Engram.objects.get()
    assert engram.status == "candidate"
    assert engram.source == "user"
    signals = api.get("/api/v1/learning/signals").json()["items"]
    drafts = api.get("/api/v1/learning/drafts?session_id=s1").json()["items"]
    assert signals[0]["label"] == "instruction"
    assert drafts[0]["result"] == "review"
    assert drafts[0]["quote"] == "Always use pnpm in this repo."
    assert api.get("/api/v1/learning/settings").json()["captured_today"] == 1


def test_error_then_fix_becomes_a_candidate_in_review(api: Client) -> None:
    hook(
        api,
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "npm install left-pad"},
        error="npm: command not found",
    )
    hook(
        api,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "pnpm install left-pad"},
        tool_response={"stdout": "ok"},
    )
    hook(api, "Stop")
    learning.session_capture(session_pk=AgentSession.objects.get().pk)
    learning.session_capture(session_pk=AgentSession.objects.get().pk)
    draft = LearningDraft.objects.get()
    assert draft.tier == "C"
    assert draft.engram is not None
    assert draft.engram.status == "candidate"
    assert draft.engram.source == "agent"
    assert draft.statement == "When `npm` is not found, run `pnpm install <arg>` instead."


def test_the_llm_extracts_with_a_schema_when_a_key_is_set(api: Client, fake_claude: Any) -> None:
    fake_claude.on(
        learning.EXTRACT_TASK,
        lambda body: {
            "lessons": [
                {
                    "statement": "Use pnpm, not npm.",
                    "type": "procedural",
                    "polarity": "do",
                    "tier": "B",
                    "anti_pattern": "npm",
                    "tags": ["pnpm"],
                    "rationale": "No, don't use npm here.",
                }
            ]
        },
    )
    say(api, "No, don't use npm here. Always use pnpm in this repo.")
    extract_all()
    draft = LearningDraft.objects.get()
    assert (draft.producer, draft.tier, draft.anti_pattern) == ("llm", "B", "npm")
    assert draft.engram is not None
    assert draft.engram.status == "active"
    assert LearningSignal.objects.get().producer == "llm"
    assert len(fake_claude.calls(learning.EXTRACT_TASK)) == 1


def test_a_lesson_holding_a_credential_is_never_stored(api: Client, fake_claude: Any) -> None:
    fake_claude.on(
        learning.EXTRACT_TASK,
        lambda body: {
            "lessons": [
                {
                    "statement": "Always export DEPLOY_TOKEN=XXXXXXXXXXXXXXXXXXXXXXXX first.",
                    "type": "procedural",
                    "polarity": "do",
                    "tier": "A",
                    "anti_pattern": "",
                    "tags": ["deploy"],
                    "rationale": "Always export DEPLOY_TOKEN=XXXXXXXXXXXXXXXXXXXXXXXX first.",
                },
                {
                    "statement": "Always run the smoke test after a deploy.",
                    "type": "procedural",
                    "polarity": "do",
                    "tier": "A",
                    "anti_pattern": "",
                    "tags": ["deploy"],
                    "rationale": "Always run the smoke test after a deploy.",
                },
            ]
        },
    )
    say(
        api,
        "Always export DEPLOY_TOKEN=XXXXXXXXXXXXXXXXXXXXXXXX first. "
        "Always run the smoke test after a deploy.",
    )
    extract_all()
    assert [d.statement for d in LearningDraft.objects.all()] == [
        "Always run the smoke test after a deploy."
    ]


def test_without_the_llm_the_heuristic_extracts(api: Client, fake_claude: Any) -> None:
    fake_claude.fail(529)
    say(api, "Always use pnpm in this repo.")
    extract_all()
    assert LearningDraft.objects.get().producer == "heuristic"


def test_the_judge_gives_outcomes_with_evidence_in_one_call(
    api: Client, owner: Any, fake_claude: Any
) -> None:
    result = learning.engram_learn(
        owner=owner,
        statement="Always use pnpm to install packages.",
        scope="project:shop",
        source="user",
    )
    eid = result.engram.engram_id
    fake_claude.on(
        "memory.outcome_judge",
        lambda body: {
            "verdicts": [{"id": eid, "result": "followed", "evidence": "ran pnpm install"}]
        },
    )
    say(api, "install packages with pnpm for the cart")
    session = AgentSession.objects.get()
    assert session.injections.exists()
    hook(api, "Stop", last_assistant_message="Installed with pnpm.")
    sessions.outcomes_attribute(session_pk=session.pk)
    outcome = Outcome.objects.get()
    assert (outcome.result, outcome.source, outcome.evidence) == (
        "followed",
        "auto-llm",
        "ran pnpm install",
    )
    assert len(fake_claude.calls("memory.outcome_judge")) == 1


def test_the_session_page_lists_lessons_with_their_quote_and_undoes_one(
    api: Client, logged_in: Client
) -> None:
    say(api, "Always use pnpm in this repo.")
    extract_all()
    session = AgentSession.objects.get()
    page = logged_in.get(f"/sessions/{session.pk}/")
    assert page.status_code == 200
    assert "Learned from this session" in page.text
    assert "&ldquo;Always use pnpm in this repo.&rdquo;" in page.text
    engram = Engram.objects.get()
    home = logged_in.get("/")
    assert "lessons captured today" in home.text
    response = logged_in.post(
        f"/learning/{engram.engram_id}/undo/", {"next": f"/sessions/{session.pk}/"}
    )
    assert response.status_code == 302
    engram.refresh_from_db()
    assert engram.status == "retired"


def test_the_settings_page_turns_review_all_on(logged_in: Client, owner: Any) -> None:
    assert "Session learning" in logged_in.get("/settings/").text
    logged_in.post("/settings/learning/", {"review_all": "on"})
    assert learning.review_all(owner)
    logged_in.post("/settings/learning/", {})
    assert not learning.review_all(owner)


def test_a_transcript_with_escaped_nul_and_surrogates_is_learned_from_cleanly(
    api: Client, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        line("user", "Always use\\u0000 pnpm in this repo \\ud800.").replace("\\\\u", "\\u")
    )
    hook(api, "SessionStart", "s9")
    hook(api, "Stop", "s9", transcript_path=str(path))
    session = AgentSession.objects.get(session_id="s9")
    learning.session_capture(session_pk=session.pk)
    extract_all()
    assert LearningSignal.objects.filter(kind="transcript").exists()
    assert Engram.objects.filter(statement__contains="pnpm").exists()
    for statement in Engram.objects.values_list("statement", flat=True):
        assert "\x00" not in statement
        statement.encode("utf-8")


def test_a_candidate_the_person_keeps_in_review_is_a_rule_they_stated(
    api: Client, owner: Any
) -> None:
    say(api, "I prefer small commits with one change each.")  # a preference: a candidate
    extract_all()
    mine = Engram.objects.get(statement="I prefer small commits with one change each.")
    assert (mine.status, mine.source) == ("candidate", "agent")
    hook(api, "PostToolUseFailure", tool_name="Bash", tool_input={"command": "npm i x"},
         error="npm: command not found")  # fmt: skip
    hook(api, "PostToolUse", tool_name="Bash", tool_input={"command": "pnpm i x"},
         tool_response={"stdout": "ok"})  # fmt: skip
    hook(api, "Stop")
    learning.session_capture(session_pk=AgentSession.objects.get().pk)
    learned = Engram.objects.get(source="agent", statement__startswith="When `npm`")
    for engram in (mine, learned):
        item = ReviewItem.objects.get(engram=engram, kind="candidate")
        review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    mine.refresh_from_db()
    learned.refresh_from_db()
    assert (mine.status, mine.source) == ("active", "user")
    assert (learned.status, learned.source) == ("active", "agent")  # Engram's, not their words
