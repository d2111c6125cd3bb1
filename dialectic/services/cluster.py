"""Consolidation stage 2: every trace joins the nearest cluster of its owner and scope (cosine >
0.75 to the centroid) or starts one, incrementally."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from dialectic import maths
from dialectic.models import Cluster, Trace, vector_bytes, vector_of
from memory.maths import neighbours

# --- clustering -----------------------------------------------------------------------------


def clusters_assign(*, owner: Any | None = None, batch: int = 2000) -> tuple[int, int]:
    """Put every unclustered trace in a cluster of its owner and scope, incrementally: it joins
    the nearest cluster when cosine to its centroid > 0.75, else starts one. Returns (traces
    assigned, clusters created)."""
    assigned = created = 0
    while True:
        with transaction.atomic():
            rows = Trace.objects.filter(
                cluster__isnull=True, observation__embedding__isnull=False
            ).order_by("observation_id")
            if owner is not None:
                rows = rows.filter(owner=owner)
            claimed = list(
                rows.select_for_update(skip_locked=True, of=("self",)).select_related(
                    "observation"
                )[:batch]
            )
            if not claimed:
                break
            a, c = _assign(claimed)
            assigned += a
            created += c
    return assigned, created


def _assign(traces: list[Trace]) -> tuple[int, int]:
    now = timezone.now()
    groups: dict[tuple[int, str], list[Trace]] = defaultdict(list)
    for trace in traces:
        groups[(trace.owner_id, trace.scope)].append(trace)
    created = 0
    for (owner_id, scope), members in groups.items():
        clusters = list(Cluster.objects.select_for_update().filter(owner_id=owner_id, scope=scope))
        sums = [vector_of(c.vector_sum) for c in clusters]
        centroids = np.array([s / (np.linalg.norm(s) or 1.0) for s in sums], dtype=np.float32)
        touched: set[int] = set()
        for trace in members:
            vector = trace.observation.embedding
            if vector is None:
                continue
            vector = np.array(vector, dtype=np.float32)  # a writable copy
            best, similarity = neighbours.nearest_row(centroids, vector)
            if best >= 0 and maths.joins_cluster(similarity):
                cluster = clusters[best]
            else:
                cluster = Cluster(owner_id=owner_id, scope=scope, created_at=now)
                cluster.vector_sum = vector_bytes(np.zeros_like(vector))
                clusters.append(cluster)
                sums.append(np.zeros_like(vector))
                centroids = (
                    np.vstack([centroids, vector[None, :]])
                    if len(centroids)
                    else vector[None, :].copy()
                )
                best, similarity = len(clusters) - 1, 1.0
                created += 1
            sums[best] = sums[best] + vector
            cluster.size += 1
            norm = float(np.linalg.norm(sums[best])) or 1.0
            centroids[best] = sums[best] / norm
            trace.cluster = cluster
            touched.add(best)
        for index in touched:
            cluster = clusters[index]
            cluster.vector_sum = vector_bytes(sums[index])
            cluster.cohesion = maths.cohesion_from_sum(sums[index], cluster.size)
            cluster.updated_at = now
            cluster.save()
        # One UPDATE per cluster (a CASE over thousands of rows is slow).
        by_cluster: dict[int, list[int]] = defaultdict(list)
        for trace in members:
            if trace.cluster is not None:
                by_cluster[trace.cluster.pk].append(trace.pk)
        for cluster_id, ids in by_cluster.items():
            Trace.objects.filter(pk__in=ids).update(cluster_id=cluster_id)
    return len(traces), created
