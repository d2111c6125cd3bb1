"""Exchange dashboard: identity and peers, outgoing, incoming. Thin callers of services."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from exchange import selectors
from exchange.forms import AbstractForm, ExportForm, IdentityForm, PacketUploadForm, PeerForm
from exchange.models import Packet, PacketItem, Peer
from exchange.services import incoming, outgoing, peers
from exchange.services.identity import identity_get, identity_rename
from memory.errors import DomainError
from memory.services.review import abstract_create

PEER_DECISIONS = {
    "trust": peers.peer_trust,
    "reject": peers.peer_reject,
    "revoke": peers.peer_revoke,
}
ITEM_DECISIONS = {"release": peers.item_release, "discard": peers.item_discard}
STATUS_OF_IMPORT = {
    "accepted": HTTPStatus.OK,
    "quarantined": HTTPStatus.ACCEPTED,
    "rejected": HTTPStatus.UNPROCESSABLE_ENTITY,
}


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _field_error(form: Any, exc: DomainError) -> None:
    """Put a service's refusal next to the field it names (else above the form)."""
    if exc.field in form.fields:
        form.add_error(exc.field, exc.sentence)
    else:
        form.add_error(None, str(exc))


# --- identity and peers ---------------------------------------------------------------------


def _index_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    me = identity_get(owner=request.user)
    context: dict[str, Any] = {
        "identity": me,
        "peers": selectors.peers_for_owner(request.user),
        "identity_form": IdentityForm(initial={"name": me.name}),
        "peer_form": PeerForm(),
        "nav_section": "exchange",
    }
    context.update(extra)
    return context


@require_GET
@login_required
def index(request: HtmxHttpRequest) -> HttpResponse:
    template = "exchange/index.html"
    if request.htmx:
        template += "#peers"
    return render(request, template, _index_context(request))


@require_POST
@login_required
def identity_update(request: HtmxHttpRequest) -> HttpResponse:
    form = IdentityForm(request.POST)
    if form.is_valid():
        try:
            identity_rename(owner=request.user, name=form.cleaned_data["name"])
        except DomainError as exc:
            _field_error(form, exc)
    if not form.is_valid():
        return render(
            request,
            "exchange/index.html",
            _index_context(request, identity_form=form),
            status=HTTPStatus.UNPROCESSABLE_ENTITY,
        )
    messages.success(request, "Sender name saved.")
    return redirect("exchange:index")


@require_POST
@login_required
def peer_add(request: HtmxHttpRequest) -> HttpResponse:
    form = PeerForm(request.POST)
    if form.is_valid():
        try:
            peer = peers.peer_add(
                owner=request.user,
                public_key=form.cleaned_data["public_key"],
                name=form.cleaned_data["name"],
                actor=f"person:{request.user.get_username()}",
            )
        except DomainError as exc:
            _field_error(form, exc)
    if not form.is_valid():
        return render(
            request,
            "exchange/index.html",
            _index_context(request, peer_form=form),
            status=HTTPStatus.UNPROCESSABLE_ENTITY,
        )
    messages.success(request, f"Key {peer.key_id} is trusted.")
    return redirect("exchange:index")


@require_POST
@login_required
def peer_decide(request: HtmxHttpRequest, pk: int, decision: str) -> HttpResponse:
    peer = get_object_or_404(Peer, pk=pk, owner=request.user)
    action = PEER_DECISIONS.get(decision)
    if action is None:
        return HttpResponse("Unknown decision.", status=HTTPStatus.NOT_FOUND)
    try:
        action(owner=request.user, peer=peer, actor=f"person:{request.user.get_username()}")
    except DomainError as exc:
        if request.htmx:
            context = _index_context(request, peer_error=str(exc))
            return render(request, "exchange/index.html#peers", context, status=HTTPStatus.CONFLICT)
        messages.error(request, str(exc))
    else:
        if request.htmx:
            return render(request, "exchange/index.html#peers", _index_context(request))
        messages.success(request, f"Key {peer.key_id}: {decision} done.")
    # Only our own pages, by name: a free `next` URL would be an open redirect.
    return redirect(
        "exchange:incoming" if request.POST.get("next") == "incoming" else "exchange:index"
    )


# --- outgoing -------------------------------------------------------------------------------


def _outgoing_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    rows = outgoing.abstracts_overview(request.user, selectors.abstracts_for_owner(request.user))
    eligible = [row.engram.engram_id for row in rows if row.eligible]
    context: dict[str, Any] = {
        "rows": rows,
        "form": ExportForm(eligible=eligible),
        "exports": selectors.outgoing_packets(request.user),
        "nav_section": "exchange",
    }
    context.update(extra)
    return context


@require_GET
@login_required
def outgoing_page(request: HtmxHttpRequest) -> HttpResponse:
    template = "exchange/outgoing.html"
    if request.htmx:
        template += "#abstracts"
    return render(request, template, _outgoing_context(request))


def _export_form(request: HttpRequest) -> tuple[ExportForm, dict[str, Any]]:
    context = _outgoing_context(request)
    eligible = [row.engram.engram_id for row in context["rows"] if row.eligible]
    form = ExportForm(request.POST, eligible=eligible)
    context["form"] = form
    return form, context


@require_POST
@login_required
def outgoing_preview(request: HtmxHttpRequest) -> HttpResponse:
    form, context = _export_form(request)
    status = HTTPStatus.OK
    if form.is_valid():
        try:
            result = outgoing.packet_export(
                owner=request.user, ids=form.cleaned_data["ids"], record=False
            )
        except DomainError as exc:
            _field_error(form, exc)
        else:
            context["preview"] = outgoing.packet_yaml(result.packet)
            context["preview_bytes"] = len(result.raw)
    if not form.is_valid():
        status = HTTPStatus.UNPROCESSABLE_ENTITY
    template = "exchange/outgoing.html"
    if request.htmx:
        template += "#export"
    return render(request, template, context, status=status)


@require_POST
@login_required
def outgoing_download(request: HtmxHttpRequest) -> HttpResponse:
    form, context = _export_form(request)
    if form.is_valid():
        try:
            result = outgoing.packet_export(owner=request.user, ids=form.cleaned_data["ids"])
        except DomainError as exc:
            _field_error(form, exc)
        else:
            response = HttpResponse(result.raw, content_type="application/json")
            response["Content-Disposition"] = f'attachment; filename="{result.filename}"'
            return response
    return render(
        request, "exchange/outgoing.html", context, status=HTTPStatus.UNPROCESSABLE_ENTITY
    )


# --- abstracts ------------------------------------------------------------------------------


def _abstract_context(
    request: HttpRequest, form: AbstractForm | None, selected: list[str]
) -> dict[str, Any]:
    sources = selectors.abstraction_sources(request.user, selected)
    if form is None:
        form = AbstractForm(sources=sources, initial={"sources": selected})
    return {"form": form, "sources": sources, "selected": selected, "nav_section": "exchange"}


@require_GET
@login_required
def abstract_new(request: HtmxHttpRequest) -> HttpResponse:
    selected = [s for s in request.GET.getlist("sources") if s][:50]
    return render(request, "exchange/abstract_new.html", _abstract_context(request, None, selected))


@require_POST
@login_required
def abstract_create_view(request: HtmxHttpRequest) -> HttpResponse:
    selected = request.POST.getlist("sources")[:50]
    sources = selectors.abstraction_sources(request.user, selected)
    form = AbstractForm(request.POST, sources=sources)
    if form.is_valid():
        chosen = form.cleaned_data["sources"]
        by_id = {engram.engram_id: engram for engram in sources}
        try:
            abstract = abstract_create(
                owner=request.user,
                sources=[by_id[engram_id] for engram_id in chosen],
                statement=form.cleaned_data["statement"],
                structure=form.cleaned_data["structure"],
                applies_when=form.cleaned_data["applies_when"],
                visibility=form.cleaned_data["visibility"],
                actor=f"person:{request.user.get_username()}",
            )
        except DomainError as exc:
            _field_error(form, exc)
        else:
            messages.success(request, f"Abstract {abstract.engram_id} written.")
            return redirect("exchange:outgoing")
    return render(
        request,
        "exchange/abstract_new.html",
        _abstract_context(request, form, selected),
        status=HTTPStatus.UNPROCESSABLE_ENTITY,
    )


# --- incoming -------------------------------------------------------------------------------


def _incoming_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    context: dict[str, Any] = {
        "form": PacketUploadForm(),
        "pending_peers": selectors.pending_peers(request.user),
        "packets": selectors.incoming_packets(request.user),
        "on_trial": selectors.items_on_trial(request.user),
        "quarantined": selectors.quarantined_items(request.user),
        "nav_section": "exchange",
    }
    context.update(extra)
    return context


@require_GET
@login_required
def incoming_page(request: HtmxHttpRequest) -> HttpResponse:
    template = "exchange/incoming.html"
    if request.htmx:
        template += "#packets"
    return render(request, template, _incoming_context(request))


@require_POST
@login_required
def incoming_upload(request: HtmxHttpRequest) -> HttpResponse:
    form = PacketUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(
            request,
            "exchange/incoming.html",
            _incoming_context(request, form=form),
            status=HTTPStatus.UNPROCESSABLE_ENTITY,
        )
    result = incoming.packet_import(
        owner=request.user,
        raw=form.cleaned_data["packet"],
        actor=f"person:{request.user.get_username()}",
    )
    template = "exchange/incoming.html"
    if request.htmx:
        template += "#upload"
    return render(
        request,
        template,
        _incoming_context(request, result=result),
        status=STATUS_OF_IMPORT[result.status],
    )


@require_GET
@login_required
def packet_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    packet = get_object_or_404(Packet.objects.select_related("peer"), pk=pk, owner=request.user)
    preview = ""
    if packet.raw:
        preview = outgoing.packet_yaml(json.loads(packet.raw))
    return render(
        request,
        "exchange/packet_detail.html",
        {
            "packet": packet,
            "items": selectors.packet_items(packet),
            "preview": preview,
            "tab": "outgoing" if packet.direction == Packet.Direction.OUT else "incoming",
            "nav_section": "exchange",
        },
    )


@require_POST
@login_required
def item_decide(request: HtmxHttpRequest, pk: int, decision: str) -> HttpResponse:
    item = get_object_or_404(PacketItem, pk=pk, owner=request.user)
    action = ITEM_DECISIONS.get(decision)
    if action is None:
        return HttpResponse("Unknown decision.", status=HTTPStatus.NOT_FOUND)
    try:
        action(owner=request.user, item=item, actor=f"person:{request.user.get_username()}")
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{item.abstract_id}: {decision} done.")
    return redirect("exchange:incoming")
