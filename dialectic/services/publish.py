"""Review, then publish: accepted syntheses past the gates become review items showing the files
exactly as they will be written; approval writes versioned artifacts (DESIGN "Dialectic
delivery"). Delivery reads: the artifacts of a scope with every version's file hashes, so a
client can tell its own unedited files from files a person changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from dialectic import maths, practice, render
from dialectic.models import Artifact, ArtifactVersion, Synthesis, Thesis, Trace
from memory.errors import Conflict, InvalidInput, NotFound
from memory.models import ReviewItem
from memory.services.llm import LlmUnavailable, llm_run

USER_SCOPE = "user"
SCORE_TASK = "dialectic_score_steps"
KINDS_OF = {
    "rule": ("rule",),
    "skill": ("skill",),
    "rule_with_skill": ("rule", "skill"),
    "none": (),
}


def publishable(synthesis: Synthesis) -> bool:
    """The publication gates: conf >= 0.7, >= 3 exemplars, an output type other than none, and
    the habit followed in at least half of its evidence."""
    return (
        synthesis.confidence >= maths.PUBLISH_MIN_CONFIDENCE
        and synthesis.exemplars >= maths.PUBLISH_MIN_EXEMPLARS
        and synthesis.support_share >= maths.PUBLISH_MIN_SUPPORT_SHARE
        and synthesis.output_type != Synthesis.OutputType.NONE
        and synthesis.state != Synthesis.State.REJECTED_Q
    )


def target_scope(synthesis: Synthesis) -> str:
    """User scope when the lesson was seen in >= 3 projects, else the synthesis's scope. A
    project's own command (the way it runs tests, lints, builds: a command with a role) stays
    in its project's scope however many projects share it: another project does that job its
    own way."""
    if practice.project_command(synthesis.statement):
        return synthesis.scope
    if len(synthesis.projects or []) >= maths.USER_SCOPE_MIN_PROJECTS:
        return USER_SCOPE
    return synthesis.scope


def _said(statement: str) -> str:
    return " ".join(statement.casefold().split())


def examples_of(traces: list[Trace]) -> dict[str, str]:
    found: dict[str, str] = {}
    for trace in traces:
        for kind, value in trace.features:
            if kind == "command" and "Bash" not in found:
                found["Bash"] = str(value)
        if trace.tool not in found and trace.paths:
            found[trace.tool] = str(trace.paths[0])
        if trace.tool in ("Grep", "Glob") and trace.tool not in found and trace.text:
            found[trace.tool] = trace.text.split(" ", 1)[-1][:80]
    return found


def step_scores(thesis: Thesis, tools: list[str]) -> dict[str, tuple[float, float]]:
    """(D, I) per tool: scored by the LLM when available, else the paper's table."""
    table = {tool: maths.step_scores(tool) for tool in tools}
    try:
        answer = llm_run(
            owner=thesis.owner,
            task=SCORE_TASK,
            schema={
                "type": "object",
                "properties": {
                    "steps": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "tool": {"type": "string"},
                                "deterministic": {"type": "number", "minimum": 0, "maximum": 1},
                                "intelligence": {"type": "number", "minimum": 0, "maximum": 1},
                            },
                            "required": ["tool", "deterministic", "intelligence"],
                        },
                    }
                },
                "required": ["steps"],
            },
            instructions=(
                "Score each step of this procedure: `deterministic` (0-1) how far plain code "
                "can do it, `intelligence` (0-1) how much judgement it needs."
            ),
            data=json.dumps({"procedure": thesis.statement, "tools": tools}),
            max_tokens=400,
        )
    except LlmUnavailable:
        return table
    for step in answer.get("steps", []):
        if isinstance(step, dict) and step.get("tool") in table:
            table[str(step["tool"])] = (float(step["deterministic"]), float(step["intelligence"]))
    return table


def lesson_of(
    synthesis: Synthesis, *, scores: Mapping[str, tuple[float, float]] | None = None
) -> render.Lesson:
    thesis = synthesis.thesis
    traces = list(
        Trace.objects.filter(cluster_id=thesis.cluster_id)
        .select_related("observation")
        .defer("observation__embedding", "observation__tool_output")
        .order_by("observation_id")
    )
    examples = examples_of(traces)
    tools = list(dict.fromkeys(thesis.expected_sequence))
    scores = scores or {tool: maths.step_scores(tool) for tool in tools}
    steps = tuple(
        render.Step(
            tool=tool,
            example=examples.get(tool, ""),
            deterministic=maths.is_deterministic_step(*scores.get(tool, maths.step_scores(tool))),
        )
        for tool in tools
    )
    title = thesis.cluster.label or f"Pattern {thesis.cluster_id}"
    sessions = len({t.observation.session_id for t in traces if t.observation.session_id})
    evidence = (
        f"{synthesis.exemplars} observations supporting it"
        + (f" across {sessions} sessions" if sessions else "")
        + (f", {len(synthesis.projects)} projects" if len(synthesis.projects) > 1 else "")
        + f"; Q {synthesis.q:.2f}"
    )
    return render.Lesson(
        pattern_id=thesis.cluster_id,
        synthesis_id=synthesis.pk,
        title=f"{title[:1].upper()}{title[1:]}",
        statement=synthesis.statement,
        condition=synthesis.condition,
        confidence=synthesis.confidence,
        paths=tuple(render.path_globs([p for t in traces for p in t.paths])),
        steps=steps,
        evidence=evidence,
    )


def _slug(thesis: Thesis, kind: str) -> str:
    existing = (
        Artifact.objects.filter(thesis=thesis, kind=kind).values_list("slug", flat=True).first()
    )
    if existing:
        return str(existing)
    return f"{render.slugify(thesis.cluster.label, 50)}-{thesis.cluster_id}"


def files_for(
    lesson: render.Lesson, kind: str, slug: str, *, version: int | None, day: str | None
) -> dict[str, str]:
    if kind == Artifact.Kind.RULE:
        return render.rule_files(lesson, slug, version=version, day=day)
    return render.skill_files(lesson, render.skill_name(slug), version=version, day=day)


def planned_files(
    synthesis: Synthesis, scope: str, *, day: str, lesson: render.Lesson | None = None
) -> dict[str, dict[str, Any]]:
    """Per kind: the slug, the version it would get, and the files exactly as they would be
    written (a new version only when the content hash changes)."""
    lesson = lesson or lesson_of(synthesis)
    planned: dict[str, dict[str, Any]] = {}
    for kind in KINDS_OF.get(synthesis.output_type, ()):
        slug = _slug(synthesis.thesis, kind)
        digest = render.content_hash(files_for(lesson, kind, slug, version=None, day=None))
        current = Artifact.objects.filter(
            owner_id=synthesis.owner_id, kind=kind, slug=slug, scope=scope
        ).first()
        if current is not None and current.content_hash == digest:
            version = current.version
        else:
            version = (current.version + 1) if current is not None else 1
        planned[kind] = {
            "slug": slug,
            "version": version,
            "content_hash": digest,
            "files": files_for(lesson, kind, slug, version=version, day=day),
        }
    return planned


def synthesis_propose(*, synthesis: Synthesis, now: datetime | None = None) -> bool:
    """Put an accepted synthesis past the gates in the review queue (once); True when it did.
    A held synthesis of the same thesis waiting for review is superseded by this newer one."""
    now = now or timezone.now()
    synthesis.refresh_from_db()
    if synthesis.state != Synthesis.State.HELD or not publishable(synthesis):
        return False
    scope = target_scope(synthesis)
    scores = step_scores(synthesis.thesis, list(dict.fromkeys(synthesis.thesis.expected_sequence)))
    lesson = lesson_of(synthesis, scores=scores)
    planned = planned_files(synthesis, scope, day=now.date().isoformat(), lesson=lesson)
    files = {path: content for plan in planned.values() for path, content in plan["files"].items()}
    reason = synthesis.statement + (
        f" Except when {synthesis.condition}." if synthesis.condition else ""
    )
    with transaction.atomic():
        locked = Synthesis.objects.select_for_update().get(pk=synthesis.pk)
        if locked.state != Synthesis.State.HELD:
            return False
        # The same job done through another package runner (`npx tsc` and `pnpm tsc`), waiting
        # or published: one practice, so the one the person ran more is the one proposed.
        # Every other proposal of the person's still open or kept, read (and locked) once.
        others = list(
            Synthesis.objects.select_for_update()
            .filter(
                owner_id=synthesis.owner_id,
                state__in=(Synthesis.State.REVIEW, Synthesis.State.APPROVED),
            )
            .exclude(thesis_id=synthesis.thesis_id)
        )
        rivals = [
            other
            for other in others
            if other.scope == synthesis.scope
            and practice.same_job(synthesis.statement, other.statement)
        ]
        if any(
            other.state == Synthesis.State.APPROVED or other.exemplars >= synthesis.exemplars
            for other in rivals
        ):
            return False
        # The same lesson for one project and for you everywhere ("Run `git add <path>` before
        # `git commit`" seen in three projects): everywhere covers the project, so a project's
        # copy is not proposed beside it, and one waiting gives way to it.
        said = _said(synthesis.statement)
        copies = [other for other in others if _said(other.statement) == said]
        if scope != USER_SCOPE and any(target_scope(other) == USER_SCOPE for other in copies):
            return False
        narrower = (
            [other.pk for other in copies if target_scope(other) != USER_SCOPE]
            if scope == USER_SCOPE
            else []
        )
        # A newer synthesis of the same thesis replaces one still waiting: one decision each.
        waiting = Synthesis.objects.select_for_update().filter(
            Q(thesis_id=synthesis.thesis_id) | Q(pk__in=[other.pk for other in rivals] + narrower),
            state=Synthesis.State.REVIEW,
        )
        ReviewItem.objects.filter(
            pk__in=[w.review_item_id for w in waiting if w.review_item_id],
            state__in=(ReviewItem.State.PENDING, ReviewItem.State.DEFERRED),
        ).update(state=ReviewItem.State.DONE, decision="superseded", decided_at=now)
        waiting.update(state=Synthesis.State.SUPERSEDED)
        item = ReviewItem.objects.create(
            owner_id=synthesis.owner_id,
            kind=ReviewItem.Kind.SYNTHESIS,
            reason=reason[:2000],
            payload={
                "synthesis": synthesis.pk,
                "thesis": synthesis.thesis_id,
                "pattern": synthesis.thesis.cluster_id,
                "output_type": synthesis.output_type,
                "scope": scope,
                "user_scope_proposed": scope == USER_SCOPE,
                "projects": synthesis.projects,
                "steps": [{"tool": s.tool, "deterministic": s.deterministic} for s in lesson.steps],
                "files": files,
                "evidence": {
                    "q": round(synthesis.q, 4),
                    "coverage": round(synthesis.coverage, 4),
                    "consistency": round(synthesis.consistency, 4),
                    "parsimony": round(synthesis.parsimony, 4),
                    "confidence": round(synthesis.confidence, 4),
                    "exemplars": synthesis.exemplars,
                    "support_share": round(synthesis.support_share, 4),
                    "antithesis_weight": round(synthesis.antithesis_weight, 4),
                    "producer": synthesis.producer,
                },
            },
            created_at=now,
        )
        Synthesis.objects.filter(pk=synthesis.pk).update(
            state=Synthesis.State.REVIEW, review_item=item
        )
    return True


def artifact_write(
    *,
    owner: Any,
    synthesis: Synthesis,
    kind: str,
    scope: str,
    lesson: render.Lesson,
    now: datetime,
) -> tuple[Artifact, bool]:
    """Create or update one artifact; a new version only when the content hash changed.
    Returns (artifact, whether a version was written)."""
    thesis = synthesis.thesis
    slug = _slug(thesis, kind)
    digest = render.content_hash(files_for(lesson, kind, slug, version=None, day=None))
    artifact = (
        Artifact.objects.select_for_update()
        .filter(owner=owner, kind=kind, slug=slug, scope=scope)
        .first()
    )
    if artifact is not None and artifact.content_hash == digest:
        changed = artifact.status != Artifact.Status.ACTIVE or artifact.synthesis_id != synthesis.pk
        if changed:
            artifact.status = Artifact.Status.ACTIVE
            artifact.synthesis = synthesis
            artifact.updated_at = now
            artifact.save(update_fields=["status", "synthesis", "updated_at"])
        return artifact, False
    if artifact is None:
        artifact = Artifact(
            owner=owner, kind=kind, slug=slug, scope=scope, version=0, created_at=now
        )
    artifact.version += 1
    artifact.content_hash = digest
    artifact.thesis = thesis
    artifact.synthesis = synthesis
    artifact.status = Artifact.Status.ACTIVE
    artifact.updated_at = now
    artifact.save()
    ArtifactVersion.objects.create(
        artifact=artifact,
        version=artifact.version,
        content_hash=digest,
        files=files_for(lesson, kind, slug, version=artifact.version, day=now.date().isoformat()),
        synthesis=synthesis,
        created_at=now,
    )
    return artifact, True


def synthesis_apply(
    *,
    owner: Any,
    item: ReviewItem,
    action: str,
    actor: str,
    edits: Mapping[str, Any],
    now: datetime,
) -> Mapping[str, Any] | None:
    """Decide a synthesis review item (inside the review decision's transaction). approve:
    publish its artifacts (scope: the proposal's, or `scope` from the edits: the synthesis's
    own scope or `user`); reject: it is not proposed again for the same evidence."""
    payload = item.payload if isinstance(item.payload, dict) else {}
    synthesis = (
        Synthesis.objects.select_for_update()
        .select_related("thesis__cluster")
        .filter(pk=int(payload.get("synthesis") or 0), owner=owner)
        .first()
    )
    if synthesis is None:
        raise NotFound("Synthesis")
    if synthesis.state != Synthesis.State.REVIEW:
        raise Conflict(f"Synthesis {synthesis.pk} is {synthesis.state}.", code="already_decided")
    if action == "reject":
        synthesis.state = Synthesis.State.REJECTED
        synthesis.decided_at = now
        synthesis.save(update_fields=["state", "decided_at"])
        return {"synthesis": synthesis.pk}
    scope = str(edits.get("scope") or payload.get("scope") or synthesis.scope)
    if scope not in (synthesis.scope, USER_SCOPE):
        raise InvalidInput("scope", f"must be {synthesis.scope} or {USER_SCOPE}")
    written = synthesis_publish(owner=owner, synthesis=synthesis, scope=scope, now=now)
    return {"synthesis": synthesis.pk, "artifacts": written, "scope": scope}


def synthesis_publish(*, owner: Any, synthesis: Synthesis, scope: str, now: datetime) -> list[str]:
    """Write the synthesis's artifacts; a kind the thesis no longer needs is retired."""
    lesson = lesson_of(synthesis)
    kinds = KINDS_OF.get(synthesis.output_type, ())
    written = []
    for kind in kinds:
        artifact, _ = artifact_write(
            owner=owner, synthesis=synthesis, kind=kind, scope=scope, lesson=lesson, now=now
        )
        written.append(f"{artifact.kind} {artifact.slug} v{artifact.version}")
    Artifact.objects.filter(thesis=synthesis.thesis, scope=scope).exclude(kind__in=kinds).update(
        status=Artifact.Status.RETIRED, updated_at=now
    )
    Synthesis.objects.filter(thesis=synthesis.thesis, state=Synthesis.State.APPROVED).exclude(
        pk=synthesis.pk
    ).update(state=Synthesis.State.SUPERSEDED)
    synthesis.state = Synthesis.State.APPROVED
    synthesis.decided_at = now
    synthesis.save(update_fields=["state", "decided_at"])
    return written


def artifact_retire(*, owner: Any, artifact_id: int, now: datetime | None = None) -> Artifact:
    """Retire an artifact: clients remove its unedited files at their next sync."""
    artifact = Artifact.objects.filter(owner=owner, pk=artifact_id).first()
    if artifact is None:
        raise NotFound("Artifact")
    if artifact.status != Artifact.Status.RETIRED:
        artifact.status = Artifact.Status.RETIRED
        artifact.updated_at = now or timezone.now()
        artifact.save(update_fields=["status", "updated_at"])
    return artifact


def review_kinds_register() -> None:
    """From DialecticConfig.ready(): synthesis items are decided here."""
    from memory.services.review import kind_register

    kind_register(
        ReviewItem.Kind.SYNTHESIS, actions=("defer", "approve", "reject"), apply=synthesis_apply
    )
