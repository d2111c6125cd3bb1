"""Behaviour patterns dashboard: clusters, theses with their evidence and antitheses, syntheses
with Q and its factors, artifacts with their versions and a diff. Reads only; syntheses are
decided in the review queue."""

from __future__ import annotations

import difflib
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from dialectic.models import (
    Antithesis,
    Artifact,
    ArtifactVersion,
    Cluster,
    Synthesis,
    Thesis,
    Trace,
)
from dialectic.services.publish import artifact_retire
from memory.services.review import open_count

PAGE = 25


def _owner(request: HttpRequest) -> Any:
    return request.user


def _page(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    if "#" not in template:
        context.setdefault("nav_review_open", open_count(owner=_owner(request)))
    context.setdefault("nav_section", "dialectic")
    return render(request, template, context)


@require_GET
@login_required
def index(request: HttpRequest) -> HttpResponse:
    owner = _owner(request)
    theses = (
        Thesis.objects.filter(owner=owner).select_related("cluster").order_by("-confidence", "id")
    )
    page = Paginator(theses, PAGE).get_page(request.GET.get("page"))
    clusters = Cluster.objects.filter(owner=owner).order_by("-size", "id")
    context: dict[str, Any] = {
        "nav_section": "dialectic",
        "page": page,
        "clusters": clusters[:PAGE],
        "cluster_count": clusters.count(),
        "observations": Trace.objects.filter(owner=owner).count(),
        "syntheses": Synthesis.objects.filter(owner=owner)
        .select_related("thesis__cluster")
        .order_by("-created_at", "-id")[:PAGE],
        "artifacts": Artifact.objects.filter(owner=owner).order_by("status", "kind", "slug"),
    }
    template = "dialectic/index.html"
    if getattr(request, "htmx", False):
        template += "#theses"
    return _page(request, template, context)


@require_GET
@login_required
def thesis_detail(request: HttpRequest, pk: int) -> HttpResponse:
    thesis = get_object_or_404(
        Thesis.objects.select_related("cluster"), pk=pk, owner=_owner(request)
    )
    evidence = Trace.objects.filter(cluster_id=thesis.cluster_id).order_by("-observation_id")
    return _page(
        request,
        "dialectic/thesis.html",
        {
            "nav_section": "dialectic",
            "thesis": thesis,
            "evidence": evidence[:50],
            "evidence_count": evidence.count(),
            "antitheses": Antithesis.objects.filter(thesis=thesis)
            .select_related("trace")
            .order_by("-count", "-observed_at")[:50],
            "syntheses": thesis.syntheses.order_by("-created_at"),
        },
    )


def _diff(older: ArtifactVersion | None, newer: ArtifactVersion) -> list[str]:
    before = older.files if older else {}
    lines: list[str] = []
    for path in sorted(set(before) | set(newer.files)):
        lines += difflib.unified_diff(
            before.get(path, "").splitlines(),
            newer.files.get(path, "").splitlines(),
            fromfile=f"v{older.version}/{path}" if older else "/dev/null",
            tofile=f"v{newer.version}/{path}",
            lineterm="",
        )
    return lines


@require_GET
@login_required
def artifact_detail(request: HttpRequest, pk: int) -> HttpResponse:
    artifact = get_object_or_404(Artifact, pk=pk, owner=_owner(request))
    versions = list(ArtifactVersion.objects.filter(artifact=artifact).order_by("-version"))
    shown = versions[0] if versions else None
    wanted = request.GET.get("v")
    if wanted and wanted.isdigit():
        shown = next((v for v in versions if v.version == int(wanted)), shown)
    older = None
    if shown is not None:
        older = next((v for v in versions if v.version < shown.version), None)
    return _page(
        request,
        "dialectic/artifact.html",
        {
            "nav_section": "dialectic",
            "artifact": artifact,
            "versions": versions,
            "shown": shown,
            "older": older,
            "diff": _diff(older, shown) if shown else [],
        },
    )


@require_POST
@login_required
def artifact_retire_view(request: HttpRequest, pk: int) -> HttpResponse:
    artifact = get_object_or_404(Artifact, pk=pk, owner=_owner(request))
    artifact_retire(owner=request.user, artifact_id=artifact.pk)
    return redirect("dialectic:artifact", pk=artifact.pk)
