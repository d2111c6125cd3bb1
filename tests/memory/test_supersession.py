"""Supersession only where a slot holds one value (issue #24 item 5): the newer user rule retires
the older one through the model's `retire()` only for a naming position, the tool for a named role,
a number or the same practice reversed; rules that can both hold are both kept, and when unsure a
review item asks "does this replace …?"."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from memory.maths import learning as L
from memory.models import AgentSession, Engram, LearningDraft, LearningSignal, ReviewItem
from memory.services import learning, review

ROOT = Path(django_settings.BASE_DIR)
PAIRS = ROOT.parent / "shared" / "eval-data" / "coding-prompts" / "dev-pairs.jsonl"


def state(owner: Any, statement: str, session: str = "s1", tier: str = "A") -> LearningDraft:
    """A user rule captured from a prompt of `session`, through the capture service's write."""
    agent_session, _ = AgentSession.objects.get_or_create(
        owner=owner, session_id=session, defaults={"scope": "project:shop"}
    )
    signal = LearningSignal.objects.create(
        owner=owner,
        session=agent_session,
        kind=LearningSignal.Kind.PROMPT,
        text=statement,
        scope="project:shop",
        state=LearningSignal.State.DONE,
    )
    draft = L.LessonDraft(
        statement=statement,
        polarity=L.polarity_of(statement),
        tier=tier,
        type="procedural",
        anti_pattern="",
        tags=L.tags_of(statement),
        rationale=statement,
    )
    return learning.draft_write(
        signal=signal, draft=draft, producer="heuristic", forced=False, now=timezone.now()
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Always run `make lint` before pushing.", "Always run `make test` before pushing."),
        ("Decorate dashboard views with `@login_required`.",
         "Decorate dashboard views with `@require_POST`."),
    ],
)  # fmt: skip
def test_two_rules_that_can_both_hold_are_both_kept_and_a_person_is_asked(
    owner: Any, old: str, new: str
) -> None:
    first = state(owner, old).engram
    second = state(owner, new, session="s2").engram
    assert first is not None and second is not None
    first.refresh_from_db()
    assert (first.status, first.superseded_by) == ("active", None)
    assert second.status == "active"
    item = ReviewItem.objects.get(kind="superseded")
    assert (item.engram, item.other, item.payload) == (first, second, {"question": True})
    assert item.reason.startswith(f"Does {second.engram_id}")
    assert LearningDraft.objects.get(engram=second).result == "created"


def test_answering_replace_retires_the_old_rule_through_retire(owner: Any) -> None:
    first = state(owner, "Always run `make lint` before pushing.").engram
    second = state(owner, "Always run `make test` before pushing.", session="s2").engram
    assert first is not None and second is not None
    item = ReviewItem.objects.get(kind="superseded")
    review.review_decide(owner=owner, item=item, action="replace", actor="person")
    first.refresh_from_db()
    assert (first.status, first.superseded_by) == ("retired", second)
    assert first.retired_at is not None


def test_answering_keep_keeps_both(owner: Any) -> None:
    state(owner, "Always run `make lint` before pushing.")
    state(owner, "Always run `make test` before pushing.", session="s2")
    item = ReviewItem.objects.get(kind="superseded")
    review.review_decide(owner=owner, item=item, action="keep", actor="person")
    assert set(Engram.objects.values_list("status", flat=True)) == {"active"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Always start attribute names with 'q_'.", "Start attribute names with 'j_' from now on."),
        ("Use pnpm as the package manager.", "Use yarn as the package manager."),
        ("Keep lines under 100 characters.", "Keep lines under 120 characters."),
        ("Always use a VPN when working remotely.", "Never use a VPN when working remotely."),
        ("Always use British spelling in the docs.",
         "From now on we write everything in US English."),
    ],
)  # fmt: skip
def test_a_slot_that_holds_one_value_is_superseded_through_retire(
    owner: Any, old: str, new: str
) -> None:
    first = state(owner, old).engram
    second = state(owner, new, session="s2").engram
    assert first is not None and second is not None
    first.refresh_from_db()
    assert (first.status, first.superseded_by) == ("retired", second)
    assert first.retired_at is not None
    assert second.status == "active"
    item = ReviewItem.objects.get(kind="superseded")
    assert item.payload == {}
    assert LearningDraft.objects.get(engram=second).result == "superseded"


def test_an_inferred_lesson_never_supersedes_a_rule(owner: Any) -> None:
    first = state(owner, "Use pnpm as the package manager.").engram
    state(owner, "Use yarn as the package manager.", session="s2", tier="C")
    assert first is not None
    first.refresh_from_db()
    assert first.status == "active"
    assert not ReviewItem.objects.filter(kind="superseded").exists()


@pytest.mark.parametrize(
    ("new", "old", "kind"),
    [
        ("Always run `make test` before pushing.", "Always run `make lint` before pushing.",
         L.variants.OTHER_VALUE),
        ("Use `@require_POST` on every view.", "Use `@login_required` on every view.",
         L.variants.OTHER_VALUE),
        ("Keep lines under 120 characters.", "Keep lines under 100 characters.", L.variants.NUMBER),
        ("Use tabs for indentation.", "Use spaces for indentation.", L.variants.ROLE),
        ("Never use a VPN when working remotely.", "Always use a VPN when working remotely.",
         L.variants.REVERSED),
        ("Never run `make test` before pushing.", "Always run `make lint` before pushing.",
         L.variants.OTHER_VALUE),
        ("Use pytest for tests.", "Use ruff for linting.", ""),
        ("Write comments in English (UK).", "Use American English spelling.", L.variants.SPELLING),
        ("Write the docs in US English.", "Keep US English in code comments.", ""),
    ],
)  # fmt: skip
def test_the_kind_of_variant_names_what_the_two_rules_share(new: str, old: str, kind: str) -> None:
    assert L.variant_kind(new, old) == kind


def test_only_one_value_slots_replace() -> None:
    def verdict(new: str, old: str, **kw: Any) -> str:
        args = {"cosine": 0.0, "new_polarity": "do", "old_polarity": "do"} | kw
        return L.supersession(new, old, **args)

    assert (
        verdict("Keep lines under 120 characters.", "Keep lines under 100 characters.") == "replace"
    )
    assert verdict("Always run `make test` first.", "Always run `make lint` first.") == "ask"
    assert verdict("Prefer small commits.", "Write docstrings.", same_key=True) == "ask"
    assert verdict("Use pytest for tests.", "Use ruff for linting.") == ""


@pytest.mark.skipif(not PAIRS.exists(), reason=f"{PAIRS} not found (eval-data absent)")
def test_no_compatible_pair_of_real_rules_is_superseded() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.supersession import pair_verdicts

    results = pair_verdicts(PAIRS)
    assert sum(results["compatible"].values()) > 0
    assert results["compatible"]["replace"] == 0


def test_restoring_an_old_rule_the_newer_one_was_edited_back_to_swaps_them(owner: Any) -> None:
    from memory.services.engrams import engram_learn, engram_update
    from memory.services.supersession import supersede

    old = engram_learn(owner=owner, statement="Use uv for installs.", scope="project:shop").engram
    new = engram_learn(owner=owner, statement="Use pip for installs.", scope="project:shop").engram
    supersede(old=old, new=new, now=timezone.now())
    # A person edits the newer rule back to the old wording, then restores the old one.
    engram_update(owner=owner, engram=new, changes={"statement": "Use uv for installs."})
    item = ReviewItem.objects.get(kind="superseded")
    review.review_decide(owner=owner, item=item, action="restore", actor="person")
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, old.superseded_by, new.status) == ("active", None, "retired")
