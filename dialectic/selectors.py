"""Reads for delivery and the dashboard."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from dialectic import render
from dialectic.models import Artifact, ArtifactVersion

USER_SCOPE = "user"


def artifacts_for(owner: Any, scope: str | None = None) -> QuerySet[Artifact]:
    """An owner's artifacts, of one scope and the user scope when `scope` is given."""
    rows = Artifact.objects.filter(owner=owner).order_by("kind", "slug", "scope")
    if scope:
        rows = rows.filter(scope__in=[scope, USER_SCOPE])
    return rows


def delivery_list(owner: Any, scope: str | None = None) -> list[dict[str, Any]]:
    """What a client syncs: per artifact its current files (path relative to `.claude/`,
    content, hash) and every hash any version wrote at each path, so a file whose hash matches
    none of them is known to be the user's edit."""
    artifacts = list(artifacts_for(owner, scope))
    versions: dict[int, list[ArtifactVersion]] = {}
    for version in ArtifactVersion.objects.filter(artifact__in=artifacts).order_by("version"):
        versions.setdefault(version.artifact_id, []).append(version)
    listing = []
    for artifact in artifacts:
        history = versions.get(artifact.pk, [])
        current = history[-1] if history else None
        known: dict[str, list[str]] = {}
        for version in history:
            for path, content in version.files.items():
                digest = render.file_hash(content)
                if digest not in known.setdefault(path, []):
                    known[path].append(digest)
        files = [
            {
                "path": path,
                "content": content,
                "hash": render.file_hash(content),
                "known_hashes": known.get(path, []),
            }
            for path, content in sorted((current.files if current else {}).items())
        ]
        retired_paths = sorted(set(known) - {f["path"] for f in files})
        listing.append(
            {
                "id": artifact.pk,
                "kind": artifact.kind,
                "slug": artifact.slug,
                "scope": artifact.scope,
                "target": "user" if artifact.scope == USER_SCOPE else "project",
                "status": artifact.status,
                "version": artifact.version,
                "content_hash": artifact.content_hash,
                "files": files,
                "stale_files": [
                    {"path": path, "known_hashes": known[path]} for path in retired_paths
                ],
            }
        )
    return listing


# --- listings (REST, MCP and the dashboard share them) -------------------------------------

MAX_PAGE = 200


def cluster_dict(cluster: Any) -> dict[str, Any]:
    return {
        "id": cluster.pk,
        "scope": cluster.scope,
        "label": cluster.label,
        "size": cluster.size,
        "cohesion": round(cluster.cohesion, 4),
        "thesis_id": getattr(getattr(cluster, "thesis", None), "pk", None),
        "updated_at": cluster.updated_at.isoformat(),
    }


def thesis_dict(thesis: Any, *, antitheses: int | None = None) -> dict[str, Any]:
    return {
        "id": thesis.pk,
        "cluster_id": thesis.cluster_id,
        "scope": thesis.scope,
        "statement": thesis.statement,
        "expected_sequence": list(thesis.expected_sequence),
        "size": thesis.size,
        "cohesion": round(thesis.cohesion, 4),
        "confidence": round(thesis.confidence, 4),
        "status": thesis.status,
        "antitheses": antitheses if antitheses is not None else antitheses_count(thesis),
        "updated_at": thesis.updated_at.isoformat(),
    }


def antitheses_count(thesis: Any) -> int:
    """How many observations contradict the thesis (its rows hold them per sequence)."""
    from django.db.models import Sum

    return int(thesis.antitheses.aggregate(n=Sum("count"))["n"] or 0)


def antithesis_dict(row: Any) -> dict[str, Any]:
    """One antithesis row as REST and MCP show it: the sequence with its count, and the latest
    exemplar's call."""
    trace = row.trace
    exemplars = [int(e) for e in row.exemplars]
    return {
        "observation_id": trace.observation_id if trace else (exemplars[-1] if exemplars else 0),
        "tool": trace.tool if trace else "",
        "text": trace.text if trace else "",
        "sequence": list(row.sequence),
        "observed_at": row.observed_at.isoformat(),
        "similarity": row.similarity,
        "divergence": row.divergence,
        "count": row.count,
        "exemplars": exemplars,
    }


def synthesis_dict(synthesis: Any) -> dict[str, Any]:
    return {
        "id": synthesis.pk,
        "thesis_id": synthesis.thesis_id,
        "scope": synthesis.scope,
        "statement": synthesis.statement,
        "condition": synthesis.condition,
        "features": [list(f) for f in synthesis.features],
        "q": round(synthesis.q, 4),
        "coverage": round(synthesis.coverage, 4),
        "consistency": round(synthesis.consistency, 4),
        "parsimony": round(synthesis.parsimony, 4),
        "accepted": synthesis.accepted,
        "antithesis_weight": round(synthesis.antithesis_weight, 4),
        "confidence": round(synthesis.confidence, 4),
        "exemplars": synthesis.exemplars,
        "support_share": round(synthesis.support_share, 4),
        "projects": list(synthesis.projects),
        "output_type": synthesis.output_type,
        "decision_confidence": round(synthesis.decision_confidence, 4),
        "decision_reason": synthesis.decision_reason,
        "characteristics": dict(synthesis.characteristics),
        "producer": synthesis.producer,
        "state": synthesis.state,
        "review_item_id": synthesis.review_item_id,
        "created_at": synthesis.created_at.isoformat(),
    }


def artifact_dict(artifact: Any) -> dict[str, Any]:
    return {
        "id": artifact.pk,
        "kind": artifact.kind,
        "slug": artifact.slug,
        "scope": artifact.scope,
        "status": artifact.status,
        "version": artifact.version,
        "content_hash": artifact.content_hash,
        "thesis_id": artifact.thesis_id,
        "synthesis_id": artifact.synthesis_id,
        "updated_at": artifact.updated_at.isoformat(),
    }


def clusters_page(
    owner: Any, *, scope: str | None, limit: int, offset: int
) -> tuple[list[Any], int]:
    from dialectic.models import Cluster

    rows = Cluster.objects.filter(owner=owner).select_related("thesis").order_by("-size", "id")
    if scope:
        rows = rows.filter(scope=scope)
    return list(rows[offset : offset + limit]), rows.count()


def theses_page(owner: Any, *, scope: str | None, limit: int, offset: int) -> tuple[list[Any], int]:
    from django.db.models import Sum
    from django.db.models.functions import Coalesce

    from dialectic.models import Thesis

    rows = (
        Thesis.objects.filter(owner=owner)
        .annotate(antithesis_count=Coalesce(Sum("antitheses__count"), 0))
        .order_by("-confidence", "id")
    )
    if scope:
        rows = rows.filter(scope=scope)
    return list(rows[offset : offset + limit]), rows.count()


def syntheses_page(
    owner: Any, *, scope: str | None, limit: int, offset: int
) -> tuple[list[Any], int]:
    from dialectic.models import Synthesis

    rows = Synthesis.objects.filter(owner=owner).order_by("-created_at", "-id")
    if scope:
        rows = rows.filter(scope=scope)
    return list(rows[offset : offset + limit]), rows.count()
