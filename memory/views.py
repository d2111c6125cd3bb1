"""Dashboard views: thin callers of services and selectors.

One view serves a page and its htmx fragment (`template += "#partial"`). Writes are POST forms
that work without JavaScript (redirect after success); htmx enhances them in place.
"""

from __future__ import annotations

import dataclasses
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from memory import charts, selectors
from memory.errors import DomainError, NotFound
from memory.forms import (
    EngramEditForm,
    EngramFilterForm,
    EpisodeFilterForm,
    ReviewDecisionForm,
    SettingsForm,
    TokenForm,
)
from memory.health import Check, run_checks
from memory.maths import activation
from memory.models import AgentSession, ApiToken, Engram, OwnerSettings, ReviewItem
from memory.services import embeddings, learning, listing, llm, recovery, review
from memory.services import engrams as engram_services
from memory.services import review_queue as queue
from memory.services.episodes import episode_timeline
from memory.status import projects_status
from memory.strength import effective_strength

# url name -> the navigation entry it belongs to
SECTIONS = {
    "home": "overview",
    "events": "overview",
    "engram_list": "engrams",
    "engram_detail": "engrams",
    "engram_edit": "engrams",
    "engram_action": "engrams",
    "review": "review",
    "review_decide": "review",
    "review_all": "review",
    "review_archived": "review",
    "review_restore": "review",
    "effectiveness": "effectiveness",
    "sessions": "sessions",
    "session_detail": "sessions",
    "episodes": "episodes",
    "tokens": "tokens",
    "token_create": "tokens",
    "settings": "settings",
}
ENGRAM_ACTIONS = ("reinforce", "retire", "consolidate")
QUADRANT_PAGE = 20


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _render(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    status: int = HTTPStatus.OK,
) -> HttpResponse:
    """Render a page or a fragment; full pages also get the navigation's review badge."""
    if "#" not in template and request.user.is_authenticated:
        match = request.resolver_match
        context.setdefault("nav_section", SECTIONS.get(match.url_name or "", "") if match else "")
        context.setdefault("nav_review_open", review.open_count(owner=request.user))
    return render(request, template, context, status=status)


def _actor(request: HttpRequest) -> str:
    return f"person:{request.user.get_username()}"


def _error_fields(exc: DomainError) -> tuple[str | None, str]:
    """(field name or None, message) of a service's refusal, for the form that shows it."""
    return exc.field, exc.sentence


# --- health and overview ----------------------------------------------------------------------


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Readiness without a login: ok or not per part and nothing more (no paths, error text,
    model or token figures: those stay on the logged-in health panel)."""
    checks = run_checks()
    required = ("database", "broker", "embedder")
    ok = all(checks[name].ok for name in required)
    body = {
        "status": "ok" if ok else "unavailable",
        "checks": {name: {"ok": check.ok} for name, check in checks.items()},
    }
    return JsonResponse(body, status=HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE)


def _health(owner: Any) -> dict[str, Check]:
    checks = run_checks()
    ok, detail = selectors.worker_check()
    if checks["database"].ok:
        # Here, not in /healthz (probed every few seconds): counting reads the owner's rows.
        stale = embeddings.stale(owner).count()
        if stale:
            checks["embedder"] = dataclasses.replace(
                checks["embedder"],
                detail=f"{checks['embedder'].detail}; {stale} engram(s) hold vectors from "
                "another model (re-embedded hourly, or now with manage.py engram_reembed)",
            )
    if checks["database"].ok:
        status = llm.llm_status(owner)
        checks["llm"] = Check(ok=not status.last_failed, detail=status.summary, ms=0.0)
    ordered = {"database": checks.pop("database")}
    ordered["worker"] = Check(ok=ok, detail=detail, ms=0.0)
    if ordered["database"].ok and (stuck := recovery.given_up()):
        ordered["sweep"] = Check(
            ok=False,
            detail=f"{stuck} background item(s) failed {recovery.SWEEP_MAX_ATTEMPTS} times and "
            "are no longer retried (see the worker's log)",
            ms=0.0,
        )
    ordered.update(checks)
    return ordered


@require_GET
@login_required
def home(request: HtmxHttpRequest) -> HttpResponse:
    """Overview; the health panel (it pings the worker) loads after the page, or with ?panel."""
    wants_health = request.GET.get("panel") == "health"
    if request.htmx and wants_health:
        return render(request, "memory/home.html#health", {"checks": _health(request.user)})
    data = selectors.overview(request.user)
    batch_size = review.batch_size_for(
        request.user,
        now=timezone.now(),
        configured=OwnerSettings.objects.filter(owner_id=request.user.pk)
        .values_list("review_batch_size", flat=True)
        .first(),
    )
    open_items = review.open_count(owner=request.user)
    return _render(
        request,
        "memory/home.html",
        {
            "data": data,
            "has_tokens": ApiToken.objects.for_owner(request.user).active().exists(),
            "site_url": settings.SITE_URL,
            "checks": _health(request.user) if wants_health else None,
            "quadrants": [
                (key, name, data.quadrants.get(key, 0)) for key, name, _ in selectors.QUADRANTS
            ],
            "review_open": open_items,
            "nav_review_open": open_items,
            "batch_size": batch_size,
            "captured_today": learning.captured_today(owner=request.user),
            **_projects_context(request.user),
        },
    )


def _projects_context(owner: Any) -> dict[str, Any]:
    """The overview's projects panel (memory/partials/_projects.html)."""
    now = timezone.now()
    projects = projects_status(owner=owner, now=now)
    return {
        "projects": projects,
        "stopped_count": sum(1 for p in projects if p.health.red),
        "now": now,
    }


@require_GET
@login_required
def event_list(request: HtmxHttpRequest) -> HttpResponse:
    page = selectors.events_page(
        request.user, cursor=request.GET.get("cursor"), event=request.GET.get("event", "")[:40]
    )
    template = "memory/events.html"
    if request.htmx:
        template += "#rows"
    return _render(request, template, {"page": page, "event": request.GET.get("event", "")})


# --- engrams ----------------------------------------------------------------------------------


@require_GET
@login_required
def engram_list(request: HtmxHttpRequest) -> HttpResponse:
    form = EngramFilterForm(request.GET or None)
    if form.is_bound:
        form.is_valid()  # errors show next to the fields; the valid filters still apply
    query = form.query() if form.is_bound else selectors.EngramQuery()
    try:
        page_number = max(1, min(int(request.GET.get("page", "1")), 100))
    except ValueError:
        page_number = 1
    page = listing.engram_list(
        owner=request.user, query=query, cursor=request.GET.get("cursor"), page=page_number
    )
    template = "memory/engram_list.html"
    if request.htmx and not request.htmx.boosted:
        template += "#results"
    context = {"form": form, "query": query, "page": page}
    if "#" not in template:
        context["scopes"] = selectors.engram_scopes(request.user)
    return _render(request, template, context)


def _engram(request: HttpRequest, engram_id: str) -> Engram:
    return get_object_or_404(Engram.objects.for_owner(request.user), engram_id=engram_id)


def _detail_context(
    engram: Engram, request: HttpRequest, cursor: str | None = None
) -> dict[str, Any]:
    now = timezone.now()
    rs_eff = effective_strength(engram, now=now)
    groups = selectors.classified(request.user)
    past, future = selectors.strength_series(engram, now=now)
    windows = selectors.effectiveness_windows(engram, since=engram.learned_at, now=now)
    return {
        "effectiveness_chart": charts.line_chart(
            windows, [], now=now, guide_lines=((0.5, "high"), (0.4, "flag"))
        ),
        "effectiveness_windows": windows,
        "escalations": selectors.escalation_steps(engram),
        "engram": engram,
        "rs_eff": rs_eff,
        "band": activation.band(rs_eff),
        "classification": groups.by_pk.get(engram.pk),
        "quadrant_names": selectors.QUADRANT_NAMES,
        "chart": charts.line_chart(past, future, now=now),
        "associations": selectors.associations_of(engram, now=now),
        "injections": selectors.injections_of(engram),
        "history": selectors.events_page(request.user, engram=engram, cursor=cursor),
        **learning.provenance_context(engram),
        "open_items": list(
            ReviewItem.objects.filter(engram=engram, state__in=review.OPEN_STATES).exclude(
                kind=ReviewItem.Kind.CALIBRATION
            )
        ),
    }


@require_GET
@login_required
def engram_detail(request: HtmxHttpRequest, engram_id: str) -> HttpResponse:
    engram = _engram(request, engram_id)
    cursor = request.GET.get("cursor")
    if request.htmx and cursor:
        history = selectors.events_page(request.user, engram=engram, cursor=cursor)
        return render(
            request, "memory/engram_detail.html#history", {"engram": engram, "history": history}
        )
    context = _detail_context(engram, request, cursor=cursor)
    context["form"] = EngramEditForm.for_engram(engram)
    return _render(request, "memory/engram_detail.html", context)


@require_POST
@login_required
def engram_edit(request: HttpRequest, engram_id: str) -> HttpResponse:
    engram = _engram(request, engram_id)
    form = EngramEditForm(request.POST)
    if form.is_valid():
        try:
            engram_services.engram_update(
                owner=request.user, engram=engram, changes=form.changes(), actor=_actor(request)
            )
        except DomainError as exc:
            name, message = _error_fields(exc)
            form.add_error(name if name in form.fields else None, message)
        else:
            messages.success(request, f"Saved {engram.engram_id} (version {engram.version}).")
            return redirect("memory:engram_detail", engram_id=engram.engram_id)
    engram.refresh_from_db()  # the page shows the stored engram: nothing was changed
    context = _detail_context(engram, request)
    context["form"] = form
    context["edit_open"] = True
    return _render(
        request, "memory/engram_detail.html", context, status=HTTPStatus.UNPROCESSABLE_ENTITY
    )


@require_POST
@login_required
def engram_action(request: HttpRequest, engram_id: str, action: str) -> HttpResponse:
    """Reinforce, retire or mark consolidated; each service records its lifecycle event."""
    if action not in ENGRAM_ACTIONS:
        raise Http404("No such action.")
    engram = _engram(request, engram_id)
    actor = _actor(request)
    if action == "reinforce":
        engram_services.engram_reinforce(owner=request.user, engram=engram, actor=actor)
        messages.success(request, f"Reinforced {engram.engram_id}.")
    elif action == "retire":
        if engram_services.engram_retire(owner=request.user, engram=engram, actor=actor):
            messages.success(request, f"Retired {engram.engram_id}. It will not be injected.")
    else:
        engram_services.engram_consolidate(owner=request.user, engram=engram, actor=actor)
        messages.success(request, f"Marked {engram.engram_id} consolidated.")
    return redirect("memory:engram_detail", engram_id=engram.engram_id)


# --- review -----------------------------------------------------------------------------------


def _review_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    batch = review.review_batch(owner=request.user)
    open_items = review.open_count(owner=request.user)
    context = {
        "batch": batch,
        "approval": review.approval_rate(owner=request.user),
        "actions": review.ACTIONS,
        "errors": {},
        "values": {},
        "origins": queue.origins(batch.items),
        "review_open": open_items,
        "nav_review_open": open_items,
        "archived_count": queue.archived_items(owner=request.user).count(),
    }
    context.update(extra)
    return context


@require_GET
@login_required
def review_queue(request: HtmxHttpRequest) -> HttpResponse:
    template = "memory/review.html"
    if request.htmx:
        template += "#batch"
    return _render(request, template, _review_context(request))


@require_POST
@login_required
def review_decide(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(
        ReviewItem.objects.select_related("engram", "other"), pk=pk, owner=request.user
    )
    form = ReviewDecisionForm(request.POST)
    errors: dict[str, str] = {}
    if not form.is_valid():
        errors = {name: " ".join(str(e) for e in errs) for name, errs in form.errors.items()}
    else:
        action = form.cleaned_data["action"]
        try:
            review.review_decide(
                owner=request.user,
                item=item,
                action=action,
                actor=_actor(request),
                edits=form.edits(action),
            )
        except DomainError as exc:
            name, message = _error_fields(exc)
            errors = {name or "action": message}
            if exc.kind == "conflict":
                messages.info(request, message)
                if not request.htmx:
                    return redirect("memory:review")
                item.refresh_from_db()
                return render(
                    request,
                    "memory/partials/_review_decided.html",
                    _review_context(request, item=item),
                )
    if errors:
        item.refresh_from_db()
        values = {name: request.POST.get(name, "") for name in ReviewDecisionForm.base_fields}
        if request.htmx:
            return render(
                request,
                "memory/partials/_review_item.html",
                {
                    "item": item,
                    "actions": review.ACTIONS,
                    "origins": queue.origins([item]),
                    "item_errors": errors,
                    "item_values": values,
                },
                status=HTTPStatus.UNPROCESSABLE_ENTITY,
            )
        return _render(
            request,
            "memory/review.html",
            _review_context(request, errors={item.pk: errors}, values={item.pk: values}),
            status=HTTPStatus.UNPROCESSABLE_ENTITY,
        )
    if not request.htmx:
        return redirect("memory:review")
    return render(
        request, "memory/partials/_review_decided.html", _review_context(request, item=item)
    )


@require_POST
@login_required
def review_all(request: HtmxHttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    try:
        count = review.review_decide_all(owner=request.user, action=action, actor=_actor(request))
    except DomainError as exc:
        messages.error(request, _error_fields(exc)[1])
    else:
        verb = "Approved" if action == "approve" else "Deferred"
        messages.success(request, f"{verb} {count} item{'s' if count != 1 else ''}.")
    if request.htmx:
        return render(request, "memory/review.html#batch", _review_context(request))
    return redirect("memory:review")


@require_GET
@login_required
def review_archived(request: HtmxHttpRequest) -> HttpResponse:
    """Candidates archived after 30 days without recurrence or a decision; restorable."""
    items = list(queue.archived_items(owner=request.user)[:200])
    return _render(
        request,
        "memory/review_archived.html",
        {"items": items, "origins": queue.origins(items)},
    )


@require_POST
@login_required
def review_restore(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    item = get_object_or_404(ReviewItem, pk=pk, owner=request.user)
    try:
        queue.review_restore(owner=request.user, item=item, actor=_actor(request))
    except DomainError as exc:
        messages.info(request, _error_fields(exc)[1])
    else:
        messages.success(request, "Back in the review queue.")
    return redirect("memory:review_archived")


# --- effectiveness ----------------------------------------------------------------------------


@require_GET
@login_required
def effectiveness(request: HtmxHttpRequest) -> HttpResponse:
    groups = selectors.classified(request.user)
    wanted = request.GET.get("quadrant", "")
    try:
        page_number = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        page_number = 1
    tables: list[dict[str, Any]] = []
    shown: list[int] = []
    for key, name, text in selectors.QUADRANTS:
        if request.htmx and wanted and key != wanted:
            continue
        pks = groups.pks_in(key)
        number = page_number if key == wanted else 1
        start = (number - 1) * QUADRANT_PAGE
        page_pks = pks[start : start + QUADRANT_PAGE]
        shown.extend(page_pks)
        tables.append(
            {
                "key": key,
                "name": name,
                "help": text,
                "total": len(pks),
                "pks": page_pks,
                "page": number,
                "has_next": len(pks) > start + QUADRANT_PAGE,
                "has_prev": number > 1,
            }
        )
    engrams = Engram.objects.defer("embedding", "search_text", "extra").in_bulk(shown)
    for table in tables:
        table["rows"] = [(engrams[pk], groups.by_pk[pk]) for pk in table["pks"] if pk in engrams]
    if request.htmx and wanted:
        if not tables:
            raise Http404("No such quadrant.")
        return render(request, "memory/effectiveness.html#quadrant-table", {"table": tables[0]})
    plot = groups.plot
    # charts.dots_markup escapes every value it writes.
    dots = mark_safe(charts.dots_markup(plot.dots, reverse("memory:engram_list")))
    context = {
        "tables": tables,
        "groups": groups,
        "plot": plot,
        "dots": dots,
        "plotted": groups.plotted,
    }
    return _render(request, "memory/effectiveness.html", context)


# --- sessions and episodes --------------------------------------------------------------------


@require_GET
@login_required
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    page = selectors.session_page(request.user, cursor=request.GET.get("cursor"))
    template = "memory/sessions.html"
    if request.htmx:
        template += "#rows"
    return _render(request, template, {"page": page})


@require_GET
@login_required
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(AgentSession, pk=pk, owner=request.user)
    template = "memory/session_detail.html"
    if request.htmx:
        template += "#injections"
    return _render(
        request,
        template,
        {
            "session": session,
            "injections": selectors.session_injections(session),
            "learned": learning.drafts_for(owner=request.user, session=session, limit=100),
        },
    )


@require_POST
@login_required
def lesson_undo(request: HttpRequest, engram_id: str) -> HttpResponse:
    """Undo a captured lesson in one click: retire it, restore what it superseded."""
    try:
        engram = learning.lesson_undo(
            owner=request.user, engram_id=engram_id, actor=_actor(request)
        )
    except NotFound:
        raise Http404("No such lesson.") from None
    messages.success(request, f"{engram.engram_id} undone.")
    back = request.POST.get("next", "")
    if back.startswith("/") and url_has_allowed_host_and_scheme(back, allowed_hosts=None):
        return redirect(back)
    return redirect("memory:home")


@require_POST
@login_required
def learning_settings(request: HttpRequest) -> HttpResponse:
    """Send every captured lesson to review (or not)."""
    learning.settings_update(owner=request.user, review_all=request.POST.get("review_all") == "on")
    messages.success(request, "Learning settings saved.")
    return redirect("memory:settings")


@require_GET
@login_required
def episode_list(request: HtmxHttpRequest) -> HttpResponse:
    form = EpisodeFilterForm(request.GET or None)
    status = HTTPStatus.OK
    page = selectors.Page[Any](rows=[])
    if form.is_bound and not form.is_valid():
        status = HTTPStatus.UNPROCESSABLE_ENTITY
    else:
        query = form.query() if form.is_bound else selectors.EpisodeQuery()
        qs = episode_timeline(
            owner=request.user,
            since=query.since,
            until=query.until,
            agent=query.agent or None,
            channel=query.channel or None,
            q=query.q or None,
        )
        page = selectors.episode_page(qs, cursor=request.GET.get("cursor"))
    template = "memory/episodes.html"
    if request.htmx:
        template += "#rows"
    context: dict[str, Any] = {"form": form, "page": page}
    if "#" not in template:
        context["agents"], context["channels"] = selectors.episode_facets(request.user)
    return _render(request, template, context, status=status)


# --- settings and tokens ----------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@login_required
def settings_view(request: HttpRequest) -> HttpResponse:
    prefs = OwnerSettings.for_owner(request.user)
    if request.method == "POST":
        form = SettingsForm(request.POST, instance=prefs)
        if form.is_valid():
            form.save()
            messages.success(request, "Settings saved.")
            return redirect("memory:settings")
        return _render(
            request,
            "memory/settings.html",
            {"form": form},
            status=HTTPStatus.UNPROCESSABLE_ENTITY,
        )
    return _render(
        request,
        "memory/settings.html",
        {"form": SettingsForm(instance=prefs)},
    )


@require_GET
@login_required
def token_list(request: HtmxHttpRequest) -> HttpResponse:
    tokens = ApiToken.objects.for_owner(request.user)
    template = "memory/tokens.html"
    if request.htmx:
        template += "#token-rows"
    return _render(request, template, {"tokens": tokens, "form": TokenForm()})


@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if not form.is_valid():
        tokens = ApiToken.objects.for_owner(request.user)
        return _render(
            request,
            "memory/tokens.html",
            {"tokens": tokens, "form": form},
            status=HTTPStatus.UNPROCESSABLE_ENTITY,
        )
    token, raw = ApiToken.issue(
        owner=request.user, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
    )
    tokens = ApiToken.objects.for_owner(request.user)
    # The clear token is shown on this response only; it is never stored.
    return _render(
        request,
        "memory/tokens.html",
        {"tokens": tokens, "form": TokenForm(), "new_token": raw, "new_token_obj": token},
    )


@require_POST
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk, owner=request.user)
    if token.revoke():
        messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("memory:tokens")
