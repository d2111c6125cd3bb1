"""Consolidation stage 3: a cohesive cluster (>= 3 observations, cohesion >= 0.7) gets a thesis."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from dialectic import maths, practice
from dialectic.models import Antithesis, Cluster, Thesis, Trace

# --- theses ---------------------------------------------------------------------------------


def _label(traces: Sequence[Trace]) -> str:
    """What the cluster is about, from its members: the main tool and where it works."""
    tools = Counter(t.tool for t in traces)
    tool = tools.most_common(1)[0][0] if tools else "tool use"
    folders = Counter(
        (posixpath.dirname(p) or ".") for t in traces for p in t.paths if isinstance(p, str)
    )
    exts = Counter(posixpath.splitext(p)[1] for t in traces for p in t.paths if "." in p)
    commands = Counter(
        c for t in traces for k, c in (tuple(f) for f in t.features) if k == "command"
    )
    where = ""
    failing = sum(1 for t in traces if any(k == "error" for k, _ in t.features))
    if commands and tool == "Bash":
        command = commands.most_common(1)[0][0]
        if failing * 2 >= len(traces):
            return f"a failing `{command}`"
        return f"running `{command}`"
    if folders:
        folder = folders.most_common(1)[0][0]
        ext = exts.most_common(1)[0][0] if exts else ""
        where = f" {ext} files in {folder}/" if ext else f" files in {folder}/"
    elif commands:
        where = f" `{commands.most_common(1)[0][0]}`"
    return f"{tool}{where}".strip()


def thesis_statement(label: str, sequence: Sequence[str], found: practice.Practice) -> str:
    """The practice when there is one (`Run `uv run pytest -q`.`), with the usual order of work
    when the window holds more than one tool; never a list of one repeated tool."""
    steps = practice.steps_text(sequence)
    if found.command:
        sentence = found.sentence()
        return sentence if maths.is_one_tool(sequence) else f"{sentence} Usual order: {steps}."
    return f"For {label}, the observed habit is the sequence {steps}."


def practice_members(traces: Sequence[Trace]) -> list[practice.Member]:
    return [practice.Member(tool=t.tool, text=t.text, previous=t.previous) for t in traces]


def theses_refresh(*, owner: Any | None = None, now: datetime | None = None) -> int:
    """Make or update the thesis of every cluster with >= 3 observations and cohesion >= 0.7;
    returns how many theses were created or changed (0 on a second run)."""
    now = now or timezone.now()
    changed = 0
    clusters = Cluster.objects.filter(size__gte=maths.THESIS_MIN_OBSERVATIONS)
    if owner is not None:
        clusters = clusters.filter(owner=owner)
    theses = {t.cluster_id: t for t in Thesis.objects.filter(cluster__in=clusters)}
    for cluster in clusters.iterator():
        thesis = theses.get(cluster.pk)
        qualifies = maths.is_thesis(cluster.size, cluster.cohesion)
        members: list[Trace] = []
        unchanged = (
            thesis is not None
            and thesis.size == cluster.size
            and thesis.status == Thesis.Status.ACTIVE
        )
        if unchanged:
            continue
        if qualifies:
            members = list(Trace.objects.filter(cluster=cluster).order_by("observation_id"))
            sequence = list(maths.expected_sequence([t.sequence for t in members]))
            found = practice.practice_of(practice_members(members))
            # One repeated tool (Read, Read, Read) is no habit: only a command practice is.
            qualifies = not maths.is_one_tool(sequence) or bool(found.command)
        if not qualifies:
            if thesis is not None and thesis.status == Thesis.Status.ACTIVE:
                Thesis.objects.filter(pk=thesis.pk).update(status=Thesis.Status.DORMANT)
                changed += 1
            continue
        label = _label(members)
        confidence = maths.thesis_confidence(cluster.size, cluster.cohesion)
        with transaction.atomic():
            if cluster.label != label:
                Cluster.objects.filter(pk=cluster.pk).update(label=label)
            if thesis is None:
                Thesis.objects.create(
                    owner_id=cluster.owner_id,
                    cluster=cluster,
                    scope=cluster.scope,
                    statement=thesis_statement(label, sequence, found),
                    expected_sequence=sequence,
                    size=cluster.size,
                    cohesion=cluster.cohesion,
                    confidence=confidence,
                    created_at=now,
                    updated_at=now,
                )
            else:
                fields: dict[str, Any] = {
                    "size": cluster.size,
                    "cohesion": cluster.cohesion,
                    "confidence": confidence,
                    "status": Thesis.Status.ACTIVE,
                    "statement": thesis_statement(label, sequence, found),
                    "updated_at": now,
                }
                if sequence != thesis.expected_sequence:
                    # Antitheses were measured against the old habit: measure them again.
                    fields.update(expected_sequence=sequence, checked_upto=0)
                    Antithesis.objects.filter(thesis=thesis).delete()
                    _forget_against(thesis)
                Thesis.objects.filter(pk=thesis.pk).update(**fields)
        changed += 1
    return changed


def _forget_against(thesis: Thesis) -> None:
    """Traces that contradicted the thesis's old habit no longer do (measured again)."""
    marked = [
        (pk, against)
        for pk, against in Trace.objects.filter(owner_id=thesis.owner_id, scope=thesis.scope)
        .exclude(against=[])
        .values_list("observation_id", "against")
        if thesis.pk in (against or [])
    ]
    for pk, against in marked:
        Trace.objects.filter(pk=pk).update(against=[t for t in against if t != thesis.pk])
