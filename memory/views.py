"""Dashboard views: thin callers of services and selectors."""

from __future__ import annotations

from http import HTTPStatus

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from memory.forms import TokenForm
from memory.health import run_checks
from memory.models import ApiToken


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    checks = run_checks()
    required = ("database", "broker", "embedder")
    ok = all(checks[name].ok for name in required)
    body = {
        "status": "ok" if ok else "unavailable",
        "checks": {name: check.as_dict() for name, check in checks.items()},
    }
    return JsonResponse(body, status=HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE)


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    has_tokens = ApiToken.objects.for_owner(request.user).active().exists()
    return render(
        request,
        "memory/home.html",
        {"has_tokens": has_tokens, "site_url": settings.SITE_URL, "checks": run_checks()},
    )


@require_GET
@login_required
def token_list(request: HtmxHttpRequest) -> HttpResponse:
    tokens = ApiToken.objects.for_owner(request.user)
    template = "memory/tokens.html"
    if request.htmx:
        template += "#token-rows"
    return render(request, template, {"tokens": tokens, "form": TokenForm()})


@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if not form.is_valid():
        tokens = ApiToken.objects.for_owner(request.user)
        return render(
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
    return render(
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
