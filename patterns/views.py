"""The success-pattern dashboard: one page (patterns, recall, clusters, compose), thin callers of
the services. Evaluate and compose answer here as they do over REST: the rubric and the nearest
patterns at once, or a pending record when an LLM task was queued."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from memory.errors import DomainError, NotFound
from memory.services import llm
from memory.services.jobs import job_enqueue
from patterns import maths
from patterns.forms import ComposeForm, LearnForm, RecallForm, RefineForm
from patterns.models import EvalRecord, FeedbackCluster, SuccessPattern
from patterns.services import compose as compose_services
from patterns.services import evaluation, feedback, promotion, store
from patterns.services import settings as pattern_settings

PER_PAGE = 25
SPARK_W, SPARK_H = 80, 20
SPARK_POINTS = 10  # evaluations a sparkline shows, oldest first
ACTIONS = ("evaluate", "reused", "refine", "promote", "retire")
PROPOSE_TASK = "patterns.evolve_prompt"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@dataclass(frozen=True)
class Row:
    pattern: SuccessPattern
    success_score: float
    multiplier: float
    evals: list[float]
    spark: str  # SVG polyline points, "" without evaluations


def sparkline(scores: list[float]) -> str:
    """Points of a 80x20 polyline for 0-10 scores, oldest left; one score is a flat line."""
    if not scores:
        return ""
    values = scores[-SPARK_POINTS:]
    if len(values) == 1:
        values = values * 2
    step = SPARK_W / (len(values) - 1)
    return " ".join(
        f"{i * step:.1f},{SPARK_H - (v / maths.SCORE_MAX) * SPARK_H:.1f}"
        for i, v in enumerate(values)
    )


def _rows(patterns: list[SuccessPattern]) -> list[Row]:
    now = timezone.now()
    found = store.evaluations_of(p.pk for p in patterns)
    rows = []
    for pattern in patterns:
        evals = found.get(pattern.pk, store.Evals())
        rows.append(
            Row(
                pattern=pattern,
                success_score=pattern.current_score(now),
                multiplier=evals.multiplier,
                evals=evals.scores[-maths.MULTIPLIER_WINDOW :],
                spark=sparkline(evals.scores),
            )
        )
    return rows


def _context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    owner: Any = request.user
    now = timezone.now()
    status = request.GET.get("status", "active")
    rows = SuccessPattern.objects.for_dashboard(owner)
    if status in ("active", "retired"):
        rows = rows.filter(status=status)
    page = Paginator(rows, PER_PAGE).get_page(request.GET.get("page"))
    clusters = list(FeedbackCluster.objects.filter(owner=owner).order_by("-last_seen")[:50])
    cluster_rows = sorted(
        ({"cluster": c, "weight": c.weight(now), "surfaces": c.surfaces(now)} for c in clusters),
        key=lambda r: (not r["surfaces"], -float(r["weight"])),  # type: ignore[arg-type]
    )
    context: dict[str, Any] = {
        "nav_section": "patterns",
        "status": status,
        "page": page,
        "rows": _rows(list(page.object_list)),
        "clusters": cluster_rows,
        "pending": EvalRecord.objects.filter(owner=owner, state=EvalRecord.State.PENDING).count(),
        "recent_evals": list(
            EvalRecord.objects.filter(owner=owner)
            .select_related("pattern")
            .order_by("-created_at")[:8]
        ),
        "learn_form": LearnForm(),
        "recall_form": RecallForm(request.GET if "task" in request.GET else None),
        "compose_form": ComposeForm(),
        "refine_form": RefineForm(),
        "settings": pattern_settings.settings_get(owner),
        "llm_on": llm.configured(),
        "maths": maths,
        "results": None,
    }
    recall_form = context["recall_form"]
    if recall_form.is_bound and recall_form.is_valid():
        try:
            task = recall_form.cleaned_data["task"]
            vector = store.embed(task)
            context["results"] = store.pattern_recall(
                owner=owner,
                task=task,
                limit=10,
                eval_weighted=bool(recall_form.cleaned_data["eval_weighted"]),
                recency_weight=recall_form.cleaned_data["recency_weight"] or 0.0,
                vector=vector,
            )
            context["issues"] = feedback.feedback_top(owner=owner, task=task, vector=vector)
        except DomainError as exc:
            recall_form.add_error("task", exc.sentence)
    context.update(extra)
    return context


@require_GET
@login_required
def index(request: HtmxHttpRequest) -> HttpResponse:
    template = "patterns/index.html"
    if request.htmx and request.htmx.target in ("patterns", "recall"):
        template += "#" + request.htmx.target
    return render(request, template, _context(request))


@require_POST
@login_required
def learn(request: HtmxHttpRequest) -> HttpResponse:
    form = LearnForm(request.POST)
    if form.is_valid():
        try:
            result = store.pattern_learn(owner=request.user, **form.cleaned_data)
        except DomainError as exc:
            target = exc.field if exc.field in form.fields else None
            form.add_error(target, exc.sentence)
        else:
            messages.success(request, f"{result.pattern.key}: {result.outcome.replace('_', ' ')}.")
            return redirect("patterns:index")
    return render(request, "patterns/index.html", _context(request, learn_form=form), status=422)


@require_POST
@login_required
def act(request: HtmxHttpRequest, key: str, action: str) -> HttpResponse:
    """evaluate, reused, refine, promote or retire one of the owner's patterns."""
    if action not in ACTIONS:
        raise NotFound("Action")
    owner = request.user
    try:
        if action == "evaluate":
            record = evaluation.evaluation_request(owner=owner, pattern_key=key, code=None)
            if record.state == EvalRecord.State.PENDING:
                messages.info(request, f"{key}: evaluation {record.key} queued for the judges.")
            else:
                messages.success(
                    request, f"{key}: rubric score {record.score:.1f} ({record.feedback})."
                )
        elif action == "reused":
            pattern = store.pattern_mark_reused(owner=owner, key=key)
            messages.success(request, f"{key}: reused ({pattern.reuse_count}x).")
        elif action == "refine":
            form = RefineForm(request.POST)
            if not form.is_valid():
                messages.error(request, "Score: a number from 0 to 10.")
                return redirect("patterns:index")
            store.pattern_refine(owner=owner, key=key, eval_score=form.cleaned_data["eval_score"])
            messages.success(request, f"{key}: score {form.cleaned_data['eval_score']} added.")
        elif action == "promote":
            pattern = promotion.pattern_promote(owner=owner, key=key, actor="person")
            messages.success(request, f"{key}: promoted to {pattern.engram_id} (see Review).")
        elif action == "retire":
            pattern = store.pattern_get(owner=owner, key=key)
            pattern.retire(now=timezone.now())
            messages.success(request, f"{key}: retired.")
    except NotFound:
        return render(
            request,
            "patterns/index.html",
            _context(request, error=f"Pattern {key} was not found."),
            status=404,
        )
    except DomainError as exc:
        messages.error(request, f"{key}: {exc}")
    return redirect("patterns:index")


@require_POST
@login_required
def compose(request: HtmxHttpRequest) -> HttpResponse:
    form = ComposeForm(request.POST)
    composition = None
    status = 200
    if form.is_valid():
        try:
            composition = compose_services.composition_request(
                owner=request.user, task=form.cleaned_data["task"], given=form.given_names()
            )
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.sentence)
            status = 422
    else:
        status = 422
    template = "patterns/index.html"
    if request.htmx:
        template += "#compose"
    context = _context(request, compose_form=form, composition=composition)
    return render(request, template, context, status=status)


@require_POST
@login_required
def propose(request: HtmxHttpRequest) -> HttpResponse:
    """Queue a prompt-evolution proposal for this owner (LLM only: refused without a key)."""
    if not llm.configured():
        messages.error(request, "Prompt proposals need an LLM key; none is configured.")
    else:
        job_enqueue(PROPOSE_TASK, request.user.pk)
        messages.info(request, "A prompt proposal is being written; it will wait in Review.")
    return redirect("patterns:index")


@require_POST
@login_required
def settings_update(request: HtmxHttpRequest) -> HttpResponse:
    on = request.POST.get("feed_inject") == "on"
    pattern_settings.settings_update(owner=request.user, feed_inject=on)
    messages.success(
        request, "Recall now feeds inject." if on else "Recall no longer feeds inject."
    )
    return redirect("patterns:index")
