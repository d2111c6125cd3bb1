"""Consolidation stages: each produces what DESIGN says and does nothing when run again."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from dialectic import maths
from dialectic.models import Antithesis, Cluster, Synthesis, Thesis, Trace
from dialectic.services import consolidation as stages
from dialectic.services import publish
from dialectic.tasks import consolidate as consolidate_task
from memory.models import Observation, ReviewItem
from tests.dialectic.helpers import breadth_first, depth_first, plant, replay

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def test_observations_are_embedded_in_batches_with_their_session_window(owner: Any) -> None:
    replay(owner, breadth_first())
    assert stages.observations_embed(owner=owner, batch=2) == 5
    assert not Observation.objects.filter(processed_at__isnull=True).exists()
    assert all(o.embedding is not None for o in Observation.objects.all())
    traces = list(Trace.objects.order_by("observation_id"))
    # The 5 calls ending with each one, across batch boundaries.
    assert traces[-1].sequence == ["Glob", "Grep", "Read", "Read", "Read"]
    assert traces[2].sequence == ["Glob", "Grep", "Read"]
    assert traces[2].text == "Read .py file in src/api"
    assert traces[2].paths == ["src/api/views.py"]
    assert stages.observations_embed(owner=owner) == 0  # idempotent


def test_the_window_is_at_most_five_calls(owner: Any) -> None:
    replay(owner, breadth_first() + depth_first())
    stages.observations_embed(owner=owner)
    last = Trace.objects.order_by("-observation_id").first()
    assert last is not None
    assert last.sequence == ["Bash", "Read", "Edit", "Bash", "Read"]
    assert ["error", "Bash failed"] in last.features
    assert ["command", "pytest"] in last.features


def test_clusters_form_incrementally_with_cohesion_the_mean_pairwise_cosine(owner: Any) -> None:
    plant(owner, habit=3, exceptions=0)
    stages.observations_embed(owner=owner)
    assigned, created = stages.clusters_assign(owner=owner)
    assert assigned == 15
    cluster = Trace.objects.filter(tool="Read").first().cluster  # type: ignore[union-attr]
    assert cluster is not None and cluster.size == 9
    vectors = [
        np.asarray(t.observation.embedding) for t in cluster.traces.select_related("observation")
    ]
    assert cluster.cohesion == pytest.approx(maths.cohesion_of(vectors), abs=1e-4)
    assert created == Cluster.objects.count()
    assert stages.clusters_assign(owner=owner) == (0, 0)


def test_a_new_observation_joins_the_nearest_cluster_above_075_or_starts_one(owner: Any) -> None:
    replay(owner, [("Read", {"file_path": "src/api/views.py"}, True)])
    replay(owner, [("Read", {"file_path": "src/api/urls.py"}, True)])
    replay(owner, [("WebFetch", {"url": "https://example.com/changelog"}, True)])
    stages.observations_embed(owner=owner)
    stages.clusters_assign(owner=owner)
    assert sorted(Cluster.objects.values_list("size", flat=True)) == [1, 2]


def test_a_cohesive_cluster_of_3_becomes_a_thesis_with_its_confidence(owner: Any) -> None:
    plant(owner, habit=4, exceptions=0)
    stages.observations_embed(owner=owner)
    stages.clusters_assign(owner=owner)
    assert stages.theses_refresh(owner=owner) > 0
    thesis = Thesis.objects.get(cluster__size=12)
    assert thesis.expected_sequence == ["Glob", "Grep", "Read", "Read", "Read"]
    assert thesis.confidence == pytest.approx(min(1, 12 / 10) * thesis.cohesion)
    assert stages.theses_refresh(owner=owner) == 0


def test_depth_first_debugging_reads_are_antitheses_of_the_breadth_first_habit(
    owner: Any,
) -> None:
    plant(owner, habit=6, exceptions=6)
    stages.observations_embed(owner=owner)
    stages.clusters_assign(owner=owner)
    stages.theses_refresh(owner=owner)
    found = stages.antitheses_find(owner=owner)
    thesis = Thesis.objects.get(expected_sequence=["Glob", "Grep", "Read", "Read", "Read"])
    rows = list(Antithesis.objects.filter(thesis=thesis))
    # Two Reads in each depth-first session, kept as one row per distinct sequence.
    assert sum(r.count for r in rows) == 12
    assert len(rows) == 2
    assert all(r.sequence[0] == "Bash" for r in rows)
    assert all(r.similarity > 0.5 and r.divergence > 0.3 for r in rows)
    assert all(len(r.exemplars) == 5 and r.trace_id == r.exemplars[-1] for r in rows)
    assert found >= 12
    contradicting = Trace.objects.filter(observation_id__in=[e for r in rows for e in r.exemplars])
    assert all(thesis.pk in t.against for t in contradicting)
    # A breadth-first session cut short at its start does not contradict its own habit.
    assert stages.antitheses_find(owner=owner) == 0


def test_antithesis_rows_grow_with_distinct_sequences_not_with_traffic(owner: Any) -> None:
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    thesis = Thesis.objects.get(expected_sequence=["Glob", "Grep", "Read", "Read", "Read"])
    before = Antithesis.objects.filter(thesis=thesis).count()
    plant(owner, habit=30, exceptions=24)  # the habit still dominates its cluster
    stages.consolidate(owner=owner)
    thesis.refresh_from_db()
    assert thesis.expected_sequence == ["Glob", "Grep", "Read", "Read", "Read"]
    rows = list(Antithesis.objects.filter(thesis=thesis))
    assert len(rows) == before
    assert sum(r.count for r in rows) == 12 + 48


def test_past_the_cap_rarer_sequences_share_one_other_row(owner: Any) -> None:
    plant(owner, habit=6, exceptions=2)
    stages.observations_embed(owner=owner)
    stages.clusters_assign(owner=owner)
    stages.theses_refresh(owner=owner)
    thesis = Thesis.objects.get(expected_sequence=["Glob", "Grep", "Read", "Read", "Read"])
    tools = ["Bash", "Write", "WebFetch", "TodoWrite", "Task", "LS", "Glob", "Edit", "Grep", "Ls"]
    for tool in tools:  # ten sessions, each with its own sequence before the same Read
        replay(
            owner,
            [(tool, {"command": "make"}, True)] * 3
            + [("Read", {"file_path": "src/api/views.py"}, True)],
        )
    stages.observations_embed(owner=owner)
    stages.clusters_assign(owner=owner)
    stages.antitheses_find(owner=owner)
    rows = list(Antithesis.objects.filter(thesis=thesis))
    assert len(rows) == maths.ANTITHESIS_MAX_DISTINCT + 1
    other = next(r for r in rows if r.sequence_key == Antithesis.OTHER)
    assert other.sequence == [] and other.count >= 1
    assert sum(r.count for r in rows) == 4 + len(tools)


def test_the_fallback_synthesis_takes_the_antitheses_distinguishing_feature(owner: Any) -> None:
    plant(owner, habit=6, exceptions=6)
    counts = stages.consolidate(owner=owner)
    thesis = Thesis.objects.get(expected_sequence=["Glob", "Grep", "Read", "Read", "Read"])
    synthesis = Synthesis.objects.get(thesis=thesis)
    assert synthesis.producer == "heuristic"
    assert synthesis.features == [["error", "Bash failed"]]
    assert "a Bash call just failed" in synthesis.condition
    assert synthesis.antithesis_weight == pytest.approx(0.4, abs=0.01)
    assert synthesis.q == pytest.approx(synthesis.coverage * synthesis.consistency * 1.0)
    assert synthesis.q > 0.6
    assert synthesis.state == Synthesis.State.REVIEW
    assert synthesis.output_type == "rule"
    assert counts.syntheses >= 1 and counts.reviews >= 1
    item = ReviewItem.objects.get(pk=synthesis.review_item_id)
    assert item.kind == "synthesis"
    ((path, rule),) = item.payload["files"].items()
    assert path.startswith("rules/engram/read-py-files-in-src-api-")
    assert rule.startswith('---\npaths:\n  - "src/api/**/*.py"\n---\n<!-- engram:pattern:')
    assert "**Exception:** a Bash call just failed" in rule


def test_consolidation_is_idempotent_and_so_is_its_task(owner: Any) -> None:
    plant(owner, habit=6, exceptions=6)
    first = consolidate_task.apply().get()
    assert first["embedded"] == 60 and first["syntheses"] >= 1
    rows = (Synthesis.objects.count(), ReviewItem.objects.count(), Antithesis.objects.count())
    second = consolidate_task.apply().get()
    assert all(value == 0 for value in second.values())
    assert (Synthesis.objects.count(), ReviewItem.objects.count(), Antithesis.objects.count()) == (
        rows
    )


def _llm_synthesis(body: dict[str, Any], feature: str = "error") -> dict[str, Any]:
    prompt = body["messages"][0]["content"]
    data = json.loads(prompt[prompt.index("{") : prompt.rindex("}") + 1])
    chosen = [k for k, f in data["candidate_features"].items() if f["kind"] == feature]
    return {
        "statement": "Survey `src/api/*.py` broadly before editing: glob, grep, then read.",
        "condition": "a test run just failed: follow the failure depth-first",
        "features": chosen[:1],
    }


def test_the_llm_words_the_synthesis_when_a_key_is_set(owner: Any, fake_claude: Any) -> None:
    fake_claude.on(stages.SYNTHESIS_TASK, _llm_synthesis)
    fake_claude.on(stages.CLASSIFY_TASK, lambda body: {"imperative": True, "procedural": False})
    fake_claude.on(
        "dialectic_score_steps",
        lambda body: {"steps": [{"tool": "Read", "deterministic": 0.9, "intelligence": 0.1}]},
    )
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.get(condition__startswith="a test run")
    assert synthesis.producer == "llm"
    assert synthesis.statement.startswith("Survey `src/api/*.py` broadly")
    assert synthesis.features == [["error", "Bash failed"]]
    assert synthesis.q > 0.6 and synthesis.state == Synthesis.State.REVIEW
    assert synthesis.characteristics["classified_by"] == "llm"
    assert len(fake_claude.calls(stages.SYNTHESIS_TASK)) == 1


def test_a_synthesis_at_or_below_q_06_is_kept_but_never_reviewed(
    owner: Any, fake_claude: Any
) -> None:
    # The LLM names a condition that fits every observation: consistency collapses.
    def vague(body: dict[str, Any]) -> dict[str, Any]:
        answer = _llm_synthesis(body)
        return {**answer, "features": ["f1", "f2"]}

    fake_claude.on(stages.SYNTHESIS_TASK, vague)
    fake_claude.on(stages.CLASSIFY_TASK, lambda body: {"imperative": True, "procedural": False})
    fake_claude.on("dialectic_score_steps", lambda body: {"steps": []})
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.get(producer="llm")
    assert synthesis.clauses == 2 and synthesis.parsimony == 0.5
    assert synthesis.q <= 0.6
    assert synthesis.state == Synthesis.State.REJECTED_Q
    assert synthesis.review_item_id is None


def test_when_claude_fails_the_synthesis_falls_back_to_the_features(
    owner: Any, fake_claude: Any
) -> None:
    fake_claude.on(stages.SYNTHESIS_TASK, lambda body: {"no": "statement"})
    fake_claude.on(stages.CLASSIFY_TASK, lambda body: {"imperative": True, "procedural": False})
    fake_claude.on("dialectic_score_steps", lambda body: {"steps": []})
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.get(condition__contains="Bash call")
    assert synthesis.producer == "heuristic"
    assert synthesis.state == Synthesis.State.REVIEW


def test_an_unclear_output_type_is_refined_by_the_llm(owner: Any, fake_claude: Any) -> None:
    fake_claude.on(stages.CLASSIFY_TASK, lambda body: {"imperative": False, "procedural": False})
    fake_claude.on(
        stages.REFINE_TASK,
        lambda body: {"output_type": "skill", "confidence": 0.8, "reason": "a procedure"},
    )
    plant(owner, habit=6, exceptions=6)
    thesis_synthesis = _first_synthesis(owner)
    decision = stages.output_decide(synthesis=thesis_synthesis, thesis=thesis_synthesis.thesis)
    assert decision.output_type == "skill"
    thesis_synthesis.refresh_from_db()
    assert thesis_synthesis.characteristics["refined_by"] == "llm"
    assert len(fake_claude.calls(stages.REFINE_TASK)) >= 1


def test_without_the_llm_an_unclear_output_type_stays_a_rule(owner: Any) -> None:
    plant(owner, habit=6, exceptions=6)
    synthesis = _first_synthesis(owner)
    Synthesis.objects.filter(pk=synthesis.pk).update(statement="The agent looks at files.")
    synthesis.refresh_from_db()
    synthesis.condition = ""
    decision = stages.output_decide(synthesis=synthesis, thesis=synthesis.thesis)
    assert (decision.output_type, decision.confidence) == ("rule", 0.6)
    synthesis.refresh_from_db()
    assert synthesis.characteristics["refined_by"] == "heuristic"


def _first_synthesis(owner: Any) -> Synthesis:
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.order_by("pk").first()
    assert synthesis is not None
    return synthesis


def test_engram_consolidate_prints_what_each_stage_produced(owner: Any) -> None:
    import io

    from django.core.management import call_command

    plant(owner, habit=6, exceptions=6)
    out = io.StringIO()
    call_command("engram_consolidate", stdout=out)
    text = out.getvalue()
    assert "observations embedded:   60" in text
    found = next(line for line in text.splitlines() if line.startswith("antitheses found:"))
    assert int(found.split(":")[1]) >= 12
    assert "sent to review)" in text and "Q=" in text
    again = io.StringIO()
    call_command("engram_consolidate", "--user", owner.username, stdout=again)
    assert "observations embedded:   0" in again.getvalue()
    assert "syntheses written:       0" in again.getvalue()


def test_a_synthesis_naming_no_concrete_practice_is_never_written(
    owner: Any, fake_claude: Any
) -> None:
    def vague(body: dict[str, Any]) -> dict[str, Any]:
        return {**_llm_synthesis(body), "statement": "Prefer Read then Read then Read."}

    fake_claude.on(stages.SYNTHESIS_TASK, vague)
    fake_claude.on(stages.CLASSIFY_TASK, lambda body: {"imperative": True, "procedural": False})
    fake_claude.on("dialectic_score_steps", lambda body: {"steps": []})
    plant(owner, habit=6, exceptions=6)
    counts = stages.consolidate(owner=owner)
    assert not Synthesis.objects.filter(producer="llm").exists()
    assert any("names no concrete practice: not proposed" in d for d in counts.details)


def _edits_then(command: str, n: int) -> list[tuple[str, dict[str, Any], bool]]:
    """Work in varying order before a command: reads, greps and edits, then the command."""
    orders = [["Read", "Edit"], ["Grep", "Read", "Edit", "Edit"], ["Edit"], ["Read", "Grep"]]
    calls: list[tuple[str, dict[str, Any], bool]] = []
    for tool in orders[n % len(orders)]:
        if tool == "Grep":
            calls.append(("Grep", {"pattern": "def run", "path": "src"}, True))
        elif tool == "Read":
            calls.append(("Read", {"file_path": f"src/mod{n}.py"}, True))
        else:
            calls.append(("Edit", {"file_path": f"src/mod{n}.py", "old_string": "a"}, True))
    return [*calls, ("Bash", {"command": command}, True)]


def test_a_project_command_run_in_no_fixed_order_is_proposed_with_its_role(owner: Any) -> None:
    for n in range(12):
        replay(owner, _edits_then("mise run test", n))
    counts = stages.consolidate(owner=owner)
    proposed = Synthesis.objects.filter(state=Synthesis.State.REVIEW)
    assert [s.statement for s in proposed] == [
        "Run tests with `mise run test` after editing .py files in src."
    ], counts.details
    item = ReviewItem.objects.get(pk=proposed[0].review_item_id)
    assert item.payload["scope"] == "project:shop"


def test_a_command_with_no_role_or_occasion_is_not_proposed(owner: Any) -> None:
    for n in range(12):
        replay(owner, _edits_then("git stash", n))
    stages.consolidate(owner=owner)
    assert not Synthesis.objects.filter(state=Synthesis.State.REVIEW).exists()


def test_a_project_command_seen_in_3_projects_stays_in_a_project_scope(owner: Any) -> None:
    for n in range(15):
        project = ("shop", "blog", "wiki")[n % 3]
        replay(
            owner,
            [("Bash", {"command": "bun run lint"}, True)] * 3,
            cwd=f"/home/alice/{project}",
            scope=f"project:{project}",
        )
    stages.consolidate(owner=owner)
    (synthesis,) = Synthesis.objects.filter(state=Synthesis.State.REVIEW)
    assert synthesis.statement == "Lint with `bun run lint`."
    item = ReviewItem.objects.get(pk=synthesis.review_item_id)
    assert item.payload["scope"].startswith("project:")


def _rival(synthesis: Synthesis, statement: str, exemplars: int) -> Synthesis:
    """Another thesis's synthesis of the same project (as a second cluster would give)."""
    cluster = synthesis.thesis.cluster
    cluster.pk = None
    cluster.save()
    thesis = synthesis.thesis
    thesis.pk, thesis.cluster = None, cluster
    thesis.save()
    synthesis.pk, synthesis.thesis, synthesis.review_item = None, thesis, None
    synthesis.statement, synthesis.exemplars = statement, exemplars
    synthesis.state = Synthesis.State.HELD
    synthesis.save()
    return synthesis


def test_one_job_run_through_two_package_runners_is_proposed_once(owner: Any) -> None:
    """`pnpm tsc --noEmit` and `npx tsc --noEmit` in one project are one practice: the review
    queue holds the one the person ran more, never both."""
    for _ in range(6):
        replay(owner, [("Bash", {"command": "pnpm tsc --noEmit"}, True)] * 3)
    stages.consolidate(owner=owner)
    (first,) = Synthesis.objects.filter(state=Synthesis.State.REVIEW)
    assert first.statement == "Type-check with `pnpm tsc --noEmit`."
    assert first.exemplars >= 3
    same = first.exemplars  # no more than the one waiting
    fewer = _rival(Synthesis.objects.get(pk=first.pk), "Type-check with `npx tsc --noEmit`.", same)
    assert not publish.synthesis_propose(synthesis=fewer)
    other_job = _rival(Synthesis.objects.get(pk=first.pk), "Lint with `npx eslint .`.", same)
    assert publish.synthesis_propose(synthesis=other_job)
    more = _rival(
        Synthesis.objects.get(pk=first.pk), "Type-check with `npx tsc --noEmit`.", same + 1
    )
    assert publish.synthesis_propose(synthesis=more)
    waiting = Synthesis.objects.filter(state=Synthesis.State.REVIEW).order_by("pk")
    assert [s.statement for s in waiting] == [
        "Lint with `npx eslint .`.",
        "Type-check with `npx tsc --noEmit`.",
    ]
    first.refresh_from_db()
    assert first.state == Synthesis.State.SUPERSEDED
    assert ReviewItem.objects.get(pk=first.review_item_id).decision == "superseded"


def test_a_lesson_for_you_everywhere_covers_its_copy_for_one_project(owner: Any) -> None:
    """Seen in three projects, "Run `git add <path>` before `git commit`" is proposed for you
    everywhere; the same sentence for one of those projects is not proposed beside it, and
    one already waiting gives way."""
    for _ in range(6):
        replay(owner, [("Bash", {"command": "pnpm tsc --noEmit"}, True)] * 3)
    stages.consolidate(owner=owner)
    (first,) = Synthesis.objects.filter(state=Synthesis.State.REVIEW)
    text = "Run `git add <path>` before `git commit`."
    project = _rival(Synthesis.objects.get(pk=first.pk), text, 5)
    assert publish.target_scope(project) != publish.USER_SCOPE
    assert publish.synthesis_propose(synthesis=project)
    everywhere = _rival(Synthesis.objects.get(pk=first.pk), text, 5)
    everywhere.projects = ["shop", "blog", "wiki"]
    everywhere.save()
    assert publish.target_scope(everywhere) == publish.USER_SCOPE
    assert publish.synthesis_propose(synthesis=everywhere)
    project.refresh_from_db()
    assert project.state == Synthesis.State.SUPERSEDED
    assert ReviewItem.objects.get(pk=project.review_item_id).decision == "superseded"
    another = _rival(Synthesis.objects.get(pk=first.pk), text.upper(), 9)
    assert not publish.synthesis_propose(synthesis=another)
    waiting = Synthesis.objects.filter(state=Synthesis.State.REVIEW).order_by("pk")
    assert [
        (s.statement, ReviewItem.objects.get(pk=s.review_item_id).payload["scope"]) for s in waiting
    ] == [
        ("Type-check with `pnpm tsc --noEmit`.", first.scope),
        (text, publish.USER_SCOPE),
    ]
