"""Consolidation stage 5: "T, except when C" for theses whose antitheses weigh enough (or "T" as
it stands when it is confident), with Q; accepted ones go on to the output type and review."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from dialectic import maths, practice
from dialectic.models import Antithesis, Synthesis, Thesis, Trace
from dialectic.services import antitheses
from dialectic.services.theses import practice_members
from memory.services.llm import PRODUCER_HEURISTIC, PRODUCER_LLM, LlmUnavailable, llm_run

SYNTHESIS_TASK = "dialectic_synthesis"


@dataclass
class StageCounts:
    """What one consolidation run made, stage by stage (the synthesis stage adds its details)."""

    embedded: int = 0
    skipped: int = 0  # observations processed without a vector (the reasons are in details)
    clustered: int = 0
    clusters_created: int = 0
    theses: int = 0
    antitheses: int = 0
    syntheses: int = 0
    accepted: int = 0
    reviews: int = 0
    details: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in self.__dict__.items() if isinstance(v, int)}


# --- syntheses ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SynthesisText:
    statement: str
    condition: str
    features: tuple[tuple[str, str], ...]
    producer: str


FEATURE_WORDS = {
    "tool": "the recent calls include {value}",
    "path": "the work is in {value}",
    "command": "`{value}` was run",
    "error": "{value}",
}


def feature_phrase(kind: str, value: str) -> str:
    if kind == "error":
        return f"a {value.replace(' failed', '')} call just failed"
    return FEATURE_WORDS.get(kind, "{value}").format(value=value)


def _matches(features: frozenset[tuple[str, str]], condition: Sequence[tuple[str, str]]) -> bool:
    return bool(condition) and all(f in features for f in condition)


def _quality(
    condition: Sequence[tuple[str, str]],
    against: Sequence[frozenset[tuple[str, str]]],
    support: Sequence[frozenset[tuple[str, str]]],
) -> maths.Quality:
    if not condition:
        total = len(against) + len(support)
        return maths.Quality(
            coverage=len(support) / total if total else 0.0, consistency=1.0, parsimony=1.0
        )
    return maths.quality(
        antitheses_matched=sum(_matches(f, condition) for f in against),
        antitheses=len(against),
        supporting_matched=sum(_matches(f, condition) for f in support),
        supporting=len(support),
        conditions=len(condition) - 1,
    )


def _habit_sentence(thesis: Thesis, label: str, found: practice.Practice | None = None) -> str:
    """The habit as an instruction naming its practice: the command (with what comes before
    it), the steps with the command they run, or the files a survey reads; never a list of
    one repeated tool."""
    sequence = list(thesis.expected_sequence)
    tools = list(dict.fromkeys(sequence))
    command = found.command if found is not None else ""
    if _is_survey(sequence):
        return (
            f"Prefer a broad survey before going deep on {label}: search and read several "
            "related files before editing any of them."
        )
    if found is not None and command and maths.is_one_tool(sequence):
        return found.sentence()

    def step(tool: str) -> str:
        return f"{tool} (`{command}`)" if tool == "Bash" and command else tool

    if len(tools) >= 3:
        steps = "; ".join(f"{n}. {step(tool)}" for n, tool in enumerate(tools, 1))
        return f"Workflow for {label}: {steps}. Follow these steps in order."
    order = practice.steps_text([step(tool) for tool in sequence], " then ")
    return f"Prefer the usual order of work for {label}: {order}."


def _sessions(thesis: Thesis) -> set[Any]:
    return set(
        Trace.objects.filter(cluster_id=thesis.cluster_id, observation__session__isnull=False)
        .values_list("observation__session_id", flat=True)
        .distinct()
    )


def _subsumed(thesis: Thesis, others: Sequence[Thesis]) -> bool:
    """A habit that is part of a longer habit seen in the same sessions (Read → Edit inside
    Read → Edit → make docs) says nothing the longer one does not."""
    mine = list(thesis.expected_sequence)
    sessions: set[int] | None = None
    for other in others:
        theirs = list(other.expected_sequence)
        if other.pk == thesis.pk or other.scope != thesis.scope or len(theirs) <= len(mine):
            continue
        if not any(theirs[i : i + len(mine)] == mine for i in range(len(theirs) - len(mine) + 1)):
            continue
        sessions = _sessions(thesis) if sessions is None else sessions
        if sessions and len(sessions & _sessions(other)) * 2 >= len(sessions):
            return True
    return False


def synthesis_fallback(
    thesis: Thesis,
    against: Sequence[frozenset[tuple[str, str]]],
    support: Sequence[frozenset[tuple[str, str]]],
    against_rows: Sequence[Antithesis] | None = None,
    found: practice.Practice | None = None,
) -> SynthesisText:
    """ "T, except when C" from the antitheses' distinguishing features: the feature (or pair)
    with the best Q; no exception when no feature separates them."""
    label = thesis.cluster.label or "this kind of work"
    habit = _habit_sentence(thesis, label, found)
    candidates = maths.distinguishing_features(against, support, limit=4)
    options: list[tuple[tuple[str, str], ...]] = [((f.kind, f.value),) for f in candidates]
    options += [
        ((a.kind, a.value), (b.kind, b.value))
        for i, a in enumerate(candidates)
        for b in candidates[i + 1 :]
    ]
    if not options:
        return SynthesisText(habit, "", (), PRODUCER_HEURISTIC)
    best = max(options, key=lambda c: (_quality(c, against, support).q, -len(c)))
    condition = " and ".join(feature_phrase(k, v) for k, v in best)
    alternative = _alternative(against_rows or [])
    if alternative:
        condition = f"{condition}: {alternative}"
    return SynthesisText(habit, condition, best, PRODUCER_HEURISTIC)


def _alternative(against: Sequence[Antithesis]) -> str:
    sequences = Counter({tuple(r.sequence): r.count for r in against if r.sequence})
    if not sequences:
        return ""
    common = sequences.most_common(1)[0][0]
    return "go straight at the problem instead (those sessions went " + ", ".join(common) + ")"


SYNTHESIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statement": {"type": "string", "maxLength": 600},
        "condition": {"type": "string", "maxLength": 400},
        "features": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": 3,
            "description": "ids of the candidate features the condition uses (e.g. f1)",
        },
    },
    "required": ["statement", "condition", "features"],
}


def synthesis_llm(
    thesis: Thesis,
    against: Sequence[frozenset[tuple[str, str]]],
    support: Sequence[frozenset[tuple[str, str]]],
) -> SynthesisText:
    """The synthesis worded by Claude, choosing its condition among the measured candidate
    features (so Q is measured on the data, not taken on trust). Raises LlmUnavailable."""
    candidates = maths.distinguishing_features(against, support, limit=8)
    table = {f"f{n}": (f.kind, f.value) for n, f in enumerate(candidates, 1)}
    data = json.dumps(
        {
            "thesis": thesis.statement,
            "expected_sequence": thesis.expected_sequence,
            "antitheses": len(against),
            "supporting": len(support),
            "candidate_features": {
                key: {
                    "kind": f.kind,
                    "value": f.value,
                    "share_of_antitheses": round(f.in_antitheses, 2),
                    "share_of_supporting": round(f.in_supporting, 2),
                }
                for key, f in zip(table, candidates, strict=True)
            },
        }
    )
    answer = llm_run(
        owner=thesis.owner,
        task=SYNTHESIS_TASK,
        schema=SYNTHESIS_SCHEMA,
        instructions=(
            "An agent's observed habit (the thesis) has exceptions (antitheses). Write the "
            "synthesis as an instruction for a coding agent: `statement` the habit in imperative "
            "form, `condition` when it does not apply (empty if none) and `features` the ids of "
            "the candidate features your condition names."
        ),
        data=data,
    )
    chosen = tuple(table[f] for f in answer.get("features", []) if f in table)
    statement = str(answer.get("statement", "")).strip()
    if not statement:
        raise LlmUnavailable("invalid", "the synthesis has no statement")
    condition = str(answer.get("condition", "")).strip() if chosen else ""
    return SynthesisText(statement, condition, chosen, PRODUCER_LLM)


def _is_survey(sequence: Sequence[str]) -> bool:
    """A habit of reading and searching before going deep (the breadth-first survey)."""
    reading = sum(1 for t in sequence if t in ("Read", "Grep", "Glob", "LS"))
    return reading >= max(3, len(sequence) - 1)


def _no_practice(thesis: Thesis, draft: SynthesisText, found: practice.Practice) -> str:
    """Why a synthesis would not be worth proposing ("" when it is): its statement names no
    concrete practice; its command plays no role and shows no occasion (or its placeholders
    swallowed what it does); or, with no command, its habit is an order of tool names in a
    place rather than a practice (a survey before editing is one)."""
    text = draft.statement + (f" Except when {draft.condition}." if draft.condition else "")
    if not practice.names_practice(text):
        return "names no concrete practice"
    sequence = list(thesis.expected_sequence)
    if found.command:
        if maths.is_one_tool(sequence) and not found.publishable:
            return f"`{found.command}` has no role or occasion, or only looks: no practice"
        if not found.workflow_ok:
            return f"`{found.command}` has no role or occasion: no practice to follow"
        return ""
    if not _is_survey(sequence):
        return "an order of tool names in a place, no practice"
    return ""


def _evidence_key(
    family: Sequence[Thesis], anti_counts: Sequence[tuple[int, int]], triggered: bool
) -> str:
    """What a synthesis was written from: the theses, the habit and (when the antitheses
    triggered it) each antithesis row with its count; a second run with nothing new finds it."""
    counts = [list(c) for c in anti_counts] if triggered else []
    raw = json.dumps([sorted(t.pk for t in family), list(family[0].expected_sequence), counts])
    return hashlib.sha256(raw.encode()).hexdigest()


def _families(theses: Sequence[Thesis]) -> dict[int, list[Thesis]]:
    """Theses of one owner with the same habit in 3 or more scopes (projects), centroids close
    (cosine > 0.75): one lesson seen across projects, whose evidence counts together and whose
    synthesis is proposed for the user scope."""
    groups: dict[tuple[int, tuple[str, ...], str], list[Thesis]] = defaultdict(list)
    for thesis in theses:
        # One practice: the same habit, and the same command when it names one (`bun run
        # lint` and `mise run lint` are two projects' ways, not one lesson).
        command = practice.command_in(thesis.statement)
        groups[(thesis.owner_id, tuple(thesis.expected_sequence), command)].append(thesis)
    families: dict[int, list[Thesis]] = {}
    for members in groups.values():
        if len({t.scope for t in members}) < maths.USER_SCOPE_MIN_PROJECTS:
            continue
        for thesis in members:
            close = [
                other
                for other in members
                if other.pk == thesis.pk
                or maths.cosine(thesis.cluster.centroid, other.cluster.centroid)
                > maths.CLUSTER_COSINE
            ]
            if len({t.scope for t in close}) >= maths.USER_SCOPE_MIN_PROJECTS:
                families[thesis.pk] = sorted(close, key=lambda t: t.pk)
    return families


def syntheses_make(
    *, owner: Any | None = None, now: datetime | None = None, counts: StageCounts | None = None
) -> int:
    """Write a synthesis for each thesis whose recency-weighted antithesis weight reaches
    0.4·conf(T) ("T, except when C"), and for each confident thesis with nothing against it
    ("T" as it stands, once). The evidence key (thesis, habit, antitheses) makes a second run
    a no-op. Accepted ones (Q > 0.6) get an output type and, past the gates, a review item."""
    from dialectic.services.output import output_decide
    from dialectic.services.publish import synthesis_propose

    now = now or timezone.now()
    made = 0
    theses = Thesis.objects.filter(status=Thesis.Status.ACTIVE).select_related("cluster", "owner")
    if owner is not None:
        theses = theses.filter(owner=owner)
    # The largest habits first: of two proposals of one practice, the better-evidenced stays.
    active = sorted(theses, key=lambda t: (-t.size, t.pk))
    families = _families(active)
    proposed = _proposed_practices(owner)
    for thesis in active:
        if len(thesis.expected_sequence) < 2:
            continue  # one call is not a habit of working in some order
        family = families.get(thesis.pk, [thesis])
        if min(t.pk for t in family) != thesis.pk:
            continue  # the family's first thesis speaks for all of it
        tool = thesis.expected_sequence[-1]
        family_ids = {t.pk for t in family}
        anti_rows = list(Antithesis.objects.filter(thesis__in=family).order_by("created_at", "id"))
        support_rows = [
            row
            for row in Trace.objects.filter(
                cluster_id__in=[t.cluster_id for t in family], tool=tool
            )
            .order_by("observation_id")
            .values_list("observation_id", "observed_at", "features", "project", "against")
            if not family_ids.intersection(row[4] or [])
        ]
        found = practice.practice_of(
            practice_members(list(Trace.objects.filter(cluster_id=thesis.cluster_id)))
        )
        # A project's command run again and again in no fixed order of work (`mise run test`
        # after edits, reads or greps): the habit is the command, not the order. Its evidence
        # is the cluster's runs of that command; other commands in the cluster are against it.
        against_count = sum(r.count for r in anti_rows)
        command_habit = (
            bool(found.role)
            and found.publishable
            and (
                maths.is_one_tool(thesis.expected_sequence)
                or len(support_rows)
                < maths.PUBLISH_MIN_SUPPORT_SHARE * (len(support_rows) + against_count)
            )
        )
        against_f: list[frozenset[tuple[str, str]]] = []
        if command_habit:
            support_rows, against_f = _command_runs(family, found.command)
            anti_rows = []
        if len(family) > 1:
            confidence = maths.thesis_confidence(
                sum(t.size for t in family), min(t.cohesion for t in family)
            )
        else:
            confidence = thesis.confidence
        weight = maths.weight_share(
            sum(maths.decayed_value(r.weight, r.weight_at, now) for r in anti_rows),
            sum(maths.recency_weight(row[1], now) for row in support_rows),
        )
        triggered = maths.synthesis_triggered(weight, confidence)
        if not triggered and (
            confidence < maths.PUBLISH_MIN_CONFIDENCE
            or (not command_habit and _subsumed(thesis, active))
        ):
            continue
        key = _evidence_key(family, [(r.pk, r.count) for r in anti_rows], triggered)
        if Synthesis.objects.filter(thesis=thesis, evidence_key=key).exists():
            continue
        if not command_habit:
            against_f = antitheses.variants_of(anti_rows)
        support_f = [frozenset((str(k), str(v)) for k, v in row[2]) for row in support_rows]
        if triggered:
            try:
                draft = synthesis_llm(thesis, against_f, support_f)
            except LlmUnavailable:
                draft = synthesis_fallback(thesis, against_f, support_f, anti_rows, found)
        else:
            draft = SynthesisText(
                found.sentence()
                if command_habit
                else _habit_sentence(thesis, thesis.cluster.label or "this kind of work", found),
                "",
                (),
                PRODUCER_HEURISTIC,
            )
        reason = "" if command_habit else _no_practice(thesis, draft, found)
        if reason:
            if counts is not None:
                counts.details.append(f"thesis {thesis.pk}: {reason}: not proposed")
            continue
        quality = _quality(draft.features, against_f, support_f)
        # A project's own command seen in several projects' scopes is proposed for the one
        # where most of it was seen, never for every project (publish.target_scope).
        scope = thesis.scope
        if len(family) > 1 and practice.project_command(draft.statement):
            scope = max(family, key=lambda t: (t.size, -t.pk)).scope
        projects = sorted(
            {row[3] for row in support_rows if row[3]} | {p for r in anti_rows for p in r.projects}
        )
        with transaction.atomic():
            synthesis, created = Synthesis.objects.get_or_create(
                thesis=thesis,
                evidence_key=key,
                defaults={
                    "owner_id": thesis.owner_id,
                    "scope": scope,
                    "statement": draft.statement,
                    "condition": draft.condition,
                    "features": [list(f) for f in draft.features],
                    "clauses": len(draft.features),
                    "coverage": quality.coverage,
                    "consistency": quality.consistency,
                    "parsimony": quality.parsimony,
                    "q": quality.q,
                    "antithesis_weight": weight,
                    "confidence": confidence,
                    "exemplars": len(support_rows),
                    "support_share": len(support_rows) / max(1, len(support_rows) + len(against_f)),
                    "projects": projects,
                    "producer": draft.producer,
                    "state": Synthesis.State.HELD
                    if quality.accepted
                    else Synthesis.State.REJECTED_Q,
                    "created_at": now,
                },
            )
        if not created:
            continue
        made += 1
        if counts is not None:
            counts.details.append(
                f"synthesis {synthesis.pk} (thesis {thesis.pk}): Q={quality.q:.2f} "
                f"[{quality.coverage:.2f}·{quality.consistency:.2f}·{quality.parsimony:.2f}] "
                f"{'accepted' if quality.accepted else 'rejected'} — {draft.statement}"
                + (f" Except when {draft.condition}." if draft.condition else "")
            )
        if not quality.accepted:
            continue
        if counts is not None:
            counts.accepted += 1
        output_decide(synthesis=synthesis, thesis=thesis)
        sessions = set().union(*(_sessions(t) for t in family))
        if len(sessions) < maths.PUBLISH_MIN_SESSIONS:
            if counts is not None:
                counts.details.append(
                    f"synthesis {synthesis.pk}: seen in {len(sessions)} sessions (fewer than "
                    f"{maths.PUBLISH_MIN_SESSIONS}): a one-off, held"
                )
            continue
        same = (synthesis.scope, practice.main_program(found.command)) if found.command else None
        if same is not None and same in proposed:
            if counts is not None:
                counts.details.append(
                    f"synthesis {synthesis.pk}: same practice as synthesis {proposed[same]} "
                    f"(`{same[1]}` in {same[0]}): held, not proposed twice"
                )
            continue
        if synthesis_propose(synthesis=synthesis, now=now):
            if same is not None:
                proposed[same] = synthesis.pk
            if counts is not None:
                counts.reviews += 1
    return made


def _command_runs(
    family: Sequence[Thesis], command: str
) -> tuple[list[tuple[Any, ...]], list[frozenset[tuple[str, str]]]]:
    """The family's shell runs of a command practice (rows as the support rows) and the
    feature sets of its other shell runs (against it)."""
    program = practice.main_program(command)
    runs: list[tuple[Any, ...]] = []
    others: list[frozenset[tuple[str, str]]] = []
    rows = (
        Trace.objects.filter(cluster_id__in=[t.cluster_id for t in family], tool="Bash")
        .order_by("observation_id")
        .values_list("observation_id", "observed_at", "features", "project", "against", "text")
    )
    for row in rows:
        if practice.main_program(practice.command_in(row[5])) == program:
            runs.append(row[:5])
        else:
            others.append(frozenset((str(k), str(v)) for k, v in row[2]))
    return runs, others


def _proposed_practices(owner: Any | None) -> dict[tuple[str, str], int]:
    """(scope, main program) of the command practices waiting in review or published."""
    rows = Synthesis.objects.filter(state__in=(Synthesis.State.REVIEW, Synthesis.State.APPROVED))
    if owner is not None:
        rows = rows.filter(owner=owner)
    found: dict[tuple[str, str], int] = {}
    for pk, scope, statement in rows.values_list("pk", "scope", "statement"):
        program = practice.main_program(practice.command_in(statement))
        if program:
            found.setdefault((scope, program), pk)
    return found
