"""The store: learn with duplicates, recall ranking, reuse, refine, aging."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from memory.errors import Conflict, InvalidInput, NotFound
from patterns.models import EvalRecord, SuccessPattern
from patterns.services.store import (
    pattern_learn,
    pattern_mark_reused,
    pattern_recall,
    pattern_refine,
    patterns_age,
)
from tests.patterns.helpers import make_pattern

# Recall and the duplicate check read vectors differently per database.
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

TASK = "Parse a CSV export of invoices and load it into PostgreSQL"
SAME_TASK = "Parse a CSV export of invoices and load it into Postgres"


def test_learn_stores_a_pattern_with_its_score_and_anchor(owner: Any) -> None:
    result = pattern_learn(owner=owner, task=TASK, eval_score=7.5, design="COPY FROM STDIN")
    assert result.outcome == "created"
    pattern = SuccessPattern.objects.get(key=result.pattern.key)
    assert pattern.key.startswith("pat_")
    assert pattern.success_score == pattern.score == 7.5
    assert pattern.embedding is not None
    assert pattern.reuse_count == 0


def test_a_near_duplicate_replaces_a_worse_one_by_default(owner: Any) -> None:
    first = pattern_learn(owner=owner, task=TASK, eval_score=5.0, design="row by row INSERT")
    pattern_refine(owner=owner, key=first.pattern.key, eval_score=2.0)
    second = pattern_learn(owner=owner, task=SAME_TASK, eval_score=9.0, design="COPY FROM STDIN")
    assert second.outcome == "replaced"
    assert second.pattern.key == first.pattern.key
    assert second.similarity is not None and second.similarity >= 0.92
    pattern = SuccessPattern.objects.get(key=first.pattern.key)
    assert pattern.design == "COPY FROM STDIN"
    assert pattern.success_score == 9.0
    assert SuccessPattern.objects.count() == 1
    # The old evaluations judged other code: only the new score ranks the key.
    assert list(EvalRecord.objects.filter(pattern=pattern).values_list("score", flat=True)) == [9.0]


def test_a_near_duplicate_that_is_not_better_is_not_stored(owner: Any) -> None:
    first = pattern_learn(owner=owner, task=TASK, eval_score=8.0, design="COPY")
    second = pattern_learn(owner=owner, task=SAME_TASK, eval_score=6.0, design="INSERT")
    assert second.outcome == "kept_existing"
    assert SuccessPattern.objects.get().design == "COPY"
    assert second.pattern.key == first.pattern.key


def test_keep_both_and_skip(owner: Any) -> None:
    first = pattern_learn(owner=owner, task=TASK, eval_score=8.0)
    both = pattern_learn(owner=owner, task=SAME_TASK, eval_score=9.0, on_duplicate="keep_both")
    assert both.outcome == "created"
    assert both.duplicate_of == first.pattern.key
    skipped = pattern_learn(owner=owner, task=SAME_TASK, eval_score=10.0, on_duplicate="skip")
    assert skipped.outcome == "skipped"
    assert SuccessPattern.objects.count() == 2


def test_a_different_task_is_not_a_duplicate(owner: Any) -> None:
    pattern_learn(owner=owner, task=TASK, eval_score=8.0)
    other = pattern_learn(owner=owner, task="Render a bar chart of monthly sales", eval_score=3.0)
    assert other.outcome == "created"
    assert other.duplicate_of == ""


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"task": "   ", "eval_score": 5}, "task"),
        ({"task": TASK, "eval_score": 10.5}, "eval_score"),
        ({"task": TASK, "eval_score": -1}, "eval_score"),
        ({"task": TASK, "eval_score": True}, "eval_score"),
        ({"task": TASK, "eval_score": 5, "on_duplicate": "merge"}, "on_duplicate"),
        ({"task": TASK, "eval_score": 5, "scope": "nowhere"}, "scope"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_stored(
    owner: Any, fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        pattern_learn(owner=owner, **fields)
    assert caught.value.field == field
    assert not SuccessPattern.objects.exists()


def test_eval_weighted_recall_ranks_by_quality(owner: Any) -> None:
    weak = make_pattern(owner, "Retry an HTTP request with exponential backoff")
    strong = make_pattern(owner, "Retry HTTP requests with exponential backoff and jitter")
    for _ in range(3):
        pattern_refine(owner=owner, key=weak.key, eval_score=1.0)
        pattern_refine(owner=owner, key=strong.key, eval_score=10.0)
    found = pattern_recall(owner=owner, task="Retry an HTTP request with exponential backoff")
    assert [r.pattern.key for r in found][:2] == [strong.key, weak.key]
    top = found[0]
    assert top.quality_multiplier == 1.0
    assert top.score == pytest.approx(top.similarity * 1.0)
    assert found[1].quality_multiplier == pytest.approx(0.55)
    plain = pattern_recall(
        owner=owner, task="Retry an HTTP request with exponential backoff", eval_weighted=False
    )
    assert plain[0].pattern.key == weak.key  # the exact wording wins on similarity alone
    assert plain[0].score == pytest.approx(plain[0].similarity)


def test_recall_without_evaluations_uses_075(owner: Any) -> None:
    pattern = make_pattern(owner)
    EvalRecord.objects.filter(pattern=pattern).delete()
    found = pattern_recall(owner=owner, task="Slugify a title for a URL")
    assert found[0].quality_multiplier == 0.75
    assert found[0].score == pytest.approx(found[0].similarity * 0.75)


def test_recency_breaks_a_tie(owner: Any) -> None:
    now = timezone.now()
    old = make_pattern(owner, "Slugify a title for a URL")
    new = make_pattern(owner, "Slugify a title for a URL")
    SuccessPattern.objects.filter(pk=old.pk).update(updated_at=now - dt.timedelta(days=60))
    found = pattern_recall(owner=owner, task="Slugify a title for a URL", recency_weight=1.0)
    assert [r.pattern.key for r in found] == [new.key, old.key]
    assert found[1].recency == pytest.approx(0.25, abs=1e-3)


def test_recall_is_read_only_unless_told_it_was_used(owner: Any) -> None:
    pattern = make_pattern(owner)
    pattern_recall(owner=owner, task="Slugify a title for a URL")
    assert SuccessPattern.objects.get(pk=pattern.pk).reuse_count == 0
    pattern_recall(owner=owner, task="Slugify a title for a URL", mark_used=True)
    assert SuccessPattern.objects.get(pk=pattern.pk).reuse_count == 1


def test_recall_sees_only_the_owners_patterns(owner: Any, other_owner: Any) -> None:
    make_pattern(other_owner)
    assert pattern_recall(owner=owner, task="Slugify a title for a URL") == []


def test_reuse_adds_01_capped_at_10_and_never_changes_ranking(owner: Any) -> None:
    pattern = make_pattern(owner, eval_score=9.95)
    before = pattern_recall(owner=owner, task="Slugify a title for a URL")[0]
    reused = pattern_mark_reused(owner=owner, key=pattern.key)
    assert reused.success_score == 10.0
    assert reused.reuse_count == 1
    assert pattern_mark_reused(owner=owner, key=pattern.key).success_score == 10.0
    after = pattern_recall(owner=owner, task="Slugify a title for a URL")[0]
    assert after.score == pytest.approx(before.score)
    assert after.quality_multiplier == before.quality_multiplier


def test_refine_changes_ranking_and_never_survival(owner: Any) -> None:
    pattern = make_pattern(owner, eval_score=6.0)
    pattern_refine(owner=owner, key=pattern.key, eval_score=2.0)
    refreshed = SuccessPattern.objects.get(pk=pattern.pk)
    assert refreshed.success_score == 6.0
    found = pattern_recall(owner=owner, task="Slugify a title for a URL")[0]
    assert found.quality_multiplier == pytest.approx(0.7)  # median of 6 and 2


def test_a_key_of_another_owner_is_not_found_and_nothing_changes(
    owner: Any, other_owner: Any
) -> None:
    theirs = make_pattern(other_owner)
    with pytest.raises(NotFound):
        pattern_refine(owner=owner, key=theirs.key, eval_score=5)
    with pytest.raises(NotFound):
        pattern_mark_reused(owner=owner, key=theirs.key)
    assert EvalRecord.objects.count() == 1  # only the score theirs was learned with
    assert SuccessPattern.objects.get(pk=theirs.pk).reuse_count == 0


def test_aging_from_the_anchor_retires_below_01(owner: Any) -> None:
    now = timezone.now()
    stale = make_pattern(owner, "Convert a date to ISO 8601", eval_score=1.0)
    fresh = make_pattern(owner, "Slugify a title for a URL", eval_score=8.0)
    SuccessPattern.objects.filter(pk=stale.pk).update(score_anchor=now - dt.timedelta(weeks=114))
    SuccessPattern.objects.filter(pk=fresh.pk).update(score_anchor=now - dt.timedelta(weeks=10))
    result = patterns_age(now=now)
    assert (result.aged, result.retired) == (1, 1)
    assert SuccessPattern.objects.get(pk=stale.pk).status == "retired"
    aged = SuccessPattern.objects.get(pk=fresh.pk)
    assert aged.score == pytest.approx(8 * 0.98**10)
    assert aged.success_score == 8.0  # the anchor's score stays: aging never compounds
    assert [r.pattern.key for r in pattern_recall(owner=owner, task="ISO date")] == [fresh.key]
    with pytest.raises(Conflict):
        pattern_mark_reused(owner=owner, key=stale.key)


def test_thirty_aging_runs_leave_what_one_leaves(owner: Any) -> None:
    now = timezone.now()
    pattern = make_pattern(owner, eval_score=8.0)
    SuccessPattern.objects.filter(pk=pattern.pk).update(score_anchor=now - dt.timedelta(weeks=5))
    patterns_age(now=now)
    once = SuccessPattern.objects.get(pk=pattern.pk).score
    for _ in range(29):
        assert patterns_age(now=now).aged == 0
    assert SuccessPattern.objects.get(pk=pattern.pk).score == once == pytest.approx(8 * 0.98**5)


def test_reuse_reanchors_the_aged_score(owner: Any) -> None:
    now = timezone.now()
    pattern = make_pattern(owner, eval_score=8.0)
    SuccessPattern.objects.filter(pk=pattern.pk).update(score_anchor=now - dt.timedelta(weeks=5))
    reused = pattern_mark_reused(owner=owner, key=pattern.key, now=now)
    assert reused.success_score == pytest.approx(8 * 0.98**5 + 0.1)
    assert reused.score_anchor == now


def test_the_score_a_pattern_was_learned_with_ranks_it(owner: Any) -> None:
    """Two patterns of one task, learned at 9.0 and at 3.0: equal similarity, and the 9.0 one
    ranks first by its eval-store multiplier (seed 002)."""
    low = make_pattern(owner, "Parse ISO dates in the billing export", eval_score=3.0)
    high = make_pattern(owner, "Parse ISO dates in the billing export", eval_score=9.0)
    for _ in range(3):
        found = pattern_recall(owner=owner, task="Parse ISO dates in the billing export")
        assert [r.pattern.key for r in found] == [high.key, low.key]
    assert found[0].similarity == pytest.approx(found[1].similarity)
    assert found[0].quality_multiplier == pytest.approx(0.95)
    assert found[1].quality_multiplier == pytest.approx(0.65)
    assert found[0].eval_scores == [9.0] and found[1].eval_scores == [3.0]


def test_a_rubric_score_moves_the_multiplier_a_quarter_as_far_as_a_judge(owner: Any) -> None:
    from patterns import maths

    assert maths.quality_multiplier([10.0], ["rubric"]) == pytest.approx(0.8125)
    assert maths.quality_multiplier([10.0], ["llm"]) == pytest.approx(1.0)
    assert maths.quality_multiplier([0.0], ["rubric"]) == pytest.approx(0.6875)
    assert maths.quality_multiplier([], []) == 0.75
    for score in (0.0, 2.5, 7.0, 10.0):
        rubric = maths.quality_multiplier([score], ["rubric"]) - 0.75
        judge = maths.quality_multiplier([score], ["llm"]) - 0.75
        assert abs(rubric) == pytest.approx(abs(judge) / 4)
