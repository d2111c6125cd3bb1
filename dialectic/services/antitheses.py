"""Consolidation stage 4: observations close to a thesis that were done another way, kept per
thesis and distinct tool sequence (DESIGN v3 "Dialectic and maintenance")."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from dialectic import maths
from dialectic.models import Antithesis, Thesis, Trace

Features = tuple[tuple[str, str], ...]


@dataclass
class Found:
    """What one batch found against one thesis for one distinct sequence."""

    sequence: list[str]
    similarity: float = 0.0
    divergence: float = 0.0
    observed_at: datetime | None = None
    trace_id: int | None = None
    members: list[tuple[int, datetime]] = field(default_factory=list)
    variants: Counter[Features] = field(default_factory=Counter)
    projects: set[str] = field(default_factory=set)


def variants_of(rows: Iterable[Antithesis]) -> list[frozenset[tuple[str, str]]]:
    """Every antithesis observation's feature set (a multiset, from the rows' variant counts)."""
    found: list[frozenset[tuple[str, str]]] = []
    for row in rows:
        for features, count in row.variants:
            found += [frozenset((str(k), str(v)) for k, v in features)] * int(count)
    return found


def _merge(row: Antithesis, found: Found, now: datetime) -> None:
    for pk, when in found.members:
        row.weight, row.weight_at = maths.decayed_add(row.weight, row.weight_at, when)
        row.count += 1
        row.exemplars = [*row.exemplars, pk][-maths.ANTITHESIS_EXEMPLARS :]
    variants = Counter(
        {tuple((str(k), str(v)) for k, v in fs): int(n) for fs, n in row.variants or []}
    )
    variants.update(found.variants)
    row.variants = [[[list(f) for f in fs], n] for fs, n in sorted(variants.items())]
    row.projects = sorted(set(row.projects or []) | found.projects)
    if found.observed_at is not None and (
        row.trace_id is None or found.observed_at >= row.observed_at
    ):
        row.trace_id = found.trace_id
        row.similarity, row.divergence = found.similarity, found.divergence
        row.observed_at = found.observed_at
    row.updated_at = now


def _new_row(thesis: Thesis, key: str, found: Found, now: datetime) -> Antithesis:
    first = found.members[0][1]
    row = Antithesis(
        thesis=thesis,
        sequence=[] if key == Antithesis.OTHER else found.sequence,
        sequence_key=key,
        count=0,
        weight=0.0,
        weight_at=first,
        variants=[],
        exemplars=[],
        projects=[],
        similarity=found.similarity,
        divergence=found.divergence,
        observed_at=first,
        created_at=now,
    )
    _merge(row, found, now)
    return row


def _store(thesis: Thesis, found: dict[str, Found], now: datetime) -> None:
    """Merge one batch's findings into the thesis's rows: a known sequence adds to its row, a
    new one gets a row while the thesis has fewer than the cap, else it joins "other"."""
    rows = {r.sequence_key: r for r in Antithesis.objects.filter(thesis=thesis)}
    distinct = sum(1 for key in rows if key != Antithesis.OTHER)
    changed: list[Antithesis] = []
    created: dict[str, Antithesis] = {}
    for key, item in found.items():
        target = key
        if key not in rows and key not in created:
            if distinct >= maths.ANTITHESIS_MAX_DISTINCT:
                target = Antithesis.OTHER
            else:
                distinct += 1
        row = rows.get(target) or created.get(target)
        if row is None:
            created[target] = _new_row(thesis, target, item, now)
        else:
            _merge(row, item, now)
            if row.pk is not None:
                changed.append(row)
    for row in dict.fromkeys(changed):
        row.save()
    Antithesis.objects.bulk_create(list(created.values()))


def _mark_against(marks: dict[int, set[int]], current: dict[int, list[int]]) -> None:
    """Remember on each trace which theses it contradicts (one UPDATE per distinct list)."""
    by_value: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for trace_id, theses in marks.items():
        value = tuple(sorted(set(current.get(trace_id) or []) | theses))
        by_value[value].append(trace_id)
    for value, ids in by_value.items():
        Trace.objects.filter(pk__in=ids).update(against=list(value))


def antitheses_find(*, owner: Any | None = None, batch: int = 5000) -> int:
    """Record every trace of the thesis's owner and scope with cosine > 0.5 to its centroid
    whose tool sequence diverges (D > 0.3), counted into the thesis's row for that sequence;
    returns how many observations were found. A contradiction is the same kind of action done
    another way, so candidates are calls of the tool the habit ends with (an Edit is not a
    different way of doing a Read). A habit of one repeated tool (Bash, Bash, Bash) is no
    order of work, so nothing diverges from it. Only traces newer than each thesis's watermark
    are read, once per (owner, scope, tool) for all its theses; the watermark moves in the
    same transaction as the counts, under the theses' row locks, so a second run adds
    nothing."""
    found_total = 0
    theses = Thesis.objects.filter(status=Thesis.Status.ACTIVE).select_related("cluster")
    if owner is not None:
        theses = theses.filter(owner=owner)
    groups: dict[tuple[int, str, str], list[Thesis]] = defaultdict(list)
    for thesis in theses:
        if thesis.expected_sequence and not maths.is_one_tool(thesis.expected_sequence):
            groups[(thesis.owner_id, thesis.scope, thesis.expected_sequence[-1])].append(thesis)
    for (owner_id, scope, tool), members in groups.items():
        found_total += _find_group(owner_id, scope, tool, members, batch)
    return found_total


def _find_group(owner_id: int, scope: str, tool: str, members: list[Thesis], batch: int) -> int:
    low = min(t.checked_upto for t in members)
    centroids = np.array([t.cluster.centroid for t in members], dtype=np.float32)
    total = 0
    while True:
        rows = list(
            Trace.objects.filter(owner_id=owner_id, scope=scope, tool=tool, observation_id__gt=low)
            .order_by("observation_id")
            .values_list(
                "observation_id",
                "sequence",
                "observed_at",
                "observation__embedding",
                "features",
                "project",
                "against",
            )[:batch]
        )
        if not rows:
            break
        vectors = np.array(
            [r[3] if r[3] is not None else np.zeros(centroids.shape[1]) for r in rows],
            dtype=np.float32,
        )
        sims = vectors @ centroids.T  # rows x theses
        now = timezone.now()
        high = rows[-1][0]
        with transaction.atomic():
            locked = {
                t.pk: t.checked_upto
                for t in Thesis.objects.select_for_update().filter(pk__in=[t.pk for t in members])
            }
            marks: dict[int, set[int]] = defaultdict(set)
            for column, thesis in enumerate(members):
                found = _contradicting(thesis, rows, sims[:, column], locked.get(thesis.pk, high))
                for item in found.values():
                    for pk, _ in item.members:
                        marks[pk].add(thesis.pk)
                    total += len(item.members)
                if found:
                    _store(thesis, found, now)
            _mark_against(marks, {r[0]: r[6] for r in rows if r[0] in marks})
            Thesis.objects.filter(pk__in=[t.pk for t in members]).update(checked_upto=high)
        for thesis in members:
            thesis.checked_upto = high
        low = high
    return total


def _contradicting(
    thesis: Thesis, rows: Sequence[tuple[Any, ...]], sims: np.ndarray, checked_upto: int
) -> dict[str, Found]:
    expected = list(thesis.expected_sequence)
    found: dict[str, Found] = {}
    for index in np.nonzero(sims > maths.ANTITHESIS_COSINE)[0]:
        trace_id, sequence, observed_at, _, features, project, _ = rows[int(index)]
        if trace_id <= checked_upto:
            continue
        d = maths.aligned_divergence(sequence, expected)
        similarity = float(sims[int(index)])
        if not maths.contradicts(similarity, d):
            continue
        key = maths.sequence_key(sequence)
        item = found.setdefault(key, Found(sequence=list(sequence)))
        item.members.append((trace_id, observed_at))
        item.variants[tuple(sorted((str(k), str(v)) for k, v in features))] += 1
        if project:
            item.projects.add(project)
        if item.observed_at is None or observed_at >= item.observed_at:
            item.observed_at, item.trace_id = observed_at, trace_id
            item.similarity, item.divergence = similarity, d
    return found
