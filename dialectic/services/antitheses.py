"""Consolidation stage 4: observations close to a thesis that were done another way."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from django.db import transaction

from dialectic import maths
from dialectic.models import Antithesis, Thesis, Trace

# --- antitheses -----------------------------------------------------------------------------


def antitheses_find(*, owner: Any | None = None, batch: int = 5000) -> int:
    """Record every trace of the thesis's owner and scope with cosine > 0.5 to its centroid
    whose tool sequence diverges (D > 0.3). A contradiction is the same kind of action done
    another way, so candidates are calls of the tool the habit ends with (an Edit is not a
    different way of doing a Read). Only traces newer than each thesis's watermark are read,
    once per (owner, scope, tool) for all its theses, and the (thesis, trace) pair is unique,
    so a second run adds nothing."""
    found = 0
    theses = Thesis.objects.filter(status=Thesis.Status.ACTIVE).select_related("cluster")
    if owner is not None:
        theses = theses.filter(owner=owner)
    groups: dict[tuple[int, str, str], list[Thesis]] = defaultdict(list)
    for thesis in theses:
        if thesis.expected_sequence:
            groups[(thesis.owner_id, thesis.scope, thesis.expected_sequence[-1])].append(thesis)
    for (owner_id, scope, tool), members in groups.items():
        low = min(t.checked_upto for t in members)
        centroids = np.array([t.cluster.centroid for t in members], dtype=np.float32)
        while True:
            rows = list(
                Trace.objects.filter(
                    owner_id=owner_id, scope=scope, tool=tool, observation_id__gt=low
                )
                .order_by("observation_id")
                .values_list("observation_id", "sequence", "observed_at", "observation__embedding")[
                    :batch
                ]
            )
            if not rows:
                break
            vectors = np.array(
                [r[3] if r[3] is not None else np.zeros(centroids.shape[1]) for r in rows],
                dtype=np.float32,
            )
            sims = vectors @ centroids.T  # rows x theses
            new = []
            for column, thesis in enumerate(members):
                expected = list(thesis.expected_sequence)
                for index in np.nonzero(sims[:, column] > maths.ANTITHESIS_COSINE)[0]:
                    trace_id, sequence, observed_at, _ = rows[index]
                    if trace_id <= thesis.checked_upto:
                        continue
                    d = maths.aligned_divergence(sequence, expected)
                    similarity = float(sims[index, column])
                    if maths.contradicts(similarity, d):
                        new.append(
                            Antithesis(
                                thesis=thesis,
                                trace_id=trace_id,
                                similarity=similarity,
                                divergence=d,
                                observed_at=observed_at,
                            )
                        )
            low = rows[-1][0]
            with transaction.atomic():
                Antithesis.objects.bulk_create(new, ignore_conflicts=True)
                Thesis.objects.filter(pk__in=[t.pk for t in members]).update(checked_upto=low)
            for thesis in members:
                thesis.checked_upto = low
            found += len(new)
    return found
