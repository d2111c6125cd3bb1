"""REST API v1 for the learning exchange, mounted at /api/v1/exchange/; thin calls to services.

Every endpoint needs a token that may use the `global` scope (abstracts and imports live there).
Trusting, rejecting and revoking keys are a person's decisions and exist only in the dashboard,
so an agent (or text injected into one) can never let a packet past the trusted-key gate.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import Router, Status

from exchange import packet as packet_format
from exchange.models import Packet, Peer
from exchange.schemas import (
    AbstractIn,
    AbstractOut,
    ExportIn,
    IdentityOut,
    ImportResultOut,
    PacketOut,
    PeerOut,
)
from exchange.selectors import abstracts_for_owner, incoming_packets
from exchange.services import outgoing
from exchange.services.identity import identity_get
from exchange.services.incoming import ImportResult, packet_import
from memory.access import actor_of, require_scope
from memory.api.auth import TokenAuth, token_of
from memory.api.errors import ApiError
from memory.api.schemas import ErrorOut
from memory.errors import InvalidInput
from memory.models import ApiToken, Engram
from memory.services.review import abstract_create

router = Router(auth=TokenAuth(), tags=["exchange"])

EXCHANGE_SCOPE = "global"
# HTTP status of a rejected import by the gate that refused it; other gates answer 422.
REJECTED_STATUS = {"size": HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "replay": HTTPStatus.CONFLICT}


def errors(*codes: int) -> dict[int, type[ErrorOut]]:
    return dict.fromkeys((401, 403, 413, 429, *codes), ErrorOut)


def _token(request: HttpRequest) -> ApiToken:
    token = token_of(request)
    require_scope(token, EXCHANGE_SCOPE)
    return token


def abstract_dict(row: outgoing.AbstractRow) -> dict[str, Any]:
    engram = row.engram
    return {
        "id": engram.engram_id,
        "status": engram.status,
        "visibility": engram.visibility,
        "statement": engram.statement,
        "structure": engram.structure,
        "applies_when": engram.applies_when,
        "derived_from": [d for d in engram.derived_from or [] if isinstance(d, str)],
        "exchange_metadata": row.metadata,
        "instances": row.instances,
        "eligible": row.eligible,
        "blockers": row.blockers,
    }


def import_response(result: ImportResult) -> tuple[int, dict[str, Any]]:
    """HTTP status and body of an import: 200 accepted, 202 quarantined, 409/413/422 rejected."""
    body = result.as_dict()
    if result.status == "accepted":
        return HTTPStatus.OK, body
    if result.status == "quarantined":
        return HTTPStatus.ACCEPTED, body
    first = result.reasons[0] if result.reasons else {"gate": "", "message": "rejected"}
    body["code"] = "packet_rejected"
    body["message"] = f"{first['gate']}: {first['message']}"
    return REJECTED_STATUS.get(str(first["gate"]), HTTPStatus.UNPROCESSABLE_ENTITY), body


@router.get("/identity", response={200: IdentityOut, **errors()}, summary="This owner's key")
def identity(request: HttpRequest) -> dict[str, Any]:
    token = _token(request)
    me = identity_get(owner=token.owner)
    return {
        "name": me.name,
        "key_id": me.key_id,
        "fingerprint": me.fingerprint,
        "public_key": me.public_key,
    }


@router.get("/peers", response={200: list[PeerOut], **errors()}, summary="Known keys")
def peer_list(request: HttpRequest) -> list[dict[str, Any]]:
    token = _token(request)
    return [
        {
            "key_id": peer.key_id,
            "name": peer.name,
            "state": peer.state,
            "fingerprint": peer.fingerprint,
            "first_seen_at": peer.first_seen_at,
            "decided_at": peer.decided_at,
        }
        for peer in Peer.objects.for_dashboard(token.owner)
    ]


@router.get(
    "/abstracts",
    response={200: list[AbstractOut], **errors()},
    summary="Abstract engrams with exchange metadata, fitness and export eligibility",
)
def abstract_list(request: HttpRequest) -> list[dict[str, Any]]:
    token = _token(request)
    rows = outgoing.abstracts_overview(token.owner, abstracts_for_owner(token.owner))
    return [abstract_dict(row) for row in rows]


@router.post(
    "/abstracts",
    response={201: AbstractOut, **errors(422)},
    summary="Write the abstract (ABS-) sibling of one or more concrete engrams",
)
def abstract_new(request: HttpRequest, payload: AbstractIn) -> Status[dict[str, Any]]:
    token = _token(request)
    wanted = list(dict.fromkeys(payload.sources))
    sources = list(
        Engram.objects.visible_to(token.owner, token.scopes)
        .live()
        .filter(kind=Engram.Kind.CONCRETE, engram_id__in=wanted)
    )
    missing = sorted(set(wanted) - {s.engram_id for s in sources})
    if missing:
        raise InvalidInput("sources", "no such concrete engram: " + ", ".join(missing))
    abstract = abstract_create(
        owner=token.owner,
        sources=sorted(sources, key=lambda s: wanted.index(s.engram_id)),
        statement=payload.statement,
        structure=payload.structure,
        applies_when=payload.applies_when,
        visibility=payload.visibility,
        actor=actor_of(token),
    )
    row = outgoing.abstracts_overview(token.owner, [abstract])[0]
    return Status(HTTPStatus.CREATED, abstract_dict(row))


@router.post(
    "/export",
    response={200: None, **errors(409, 422)},
    summary="A signed engram-exchange/1 packet of eligible abstracts (JSON)",
    openapi_extra={
        "responses": {
            200: {
                "description": "The signed packet, RFC 8785 canonical JSON",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        }
    },
)
def export(request: HttpRequest, payload: ExportIn) -> HttpResponse:
    token = _token(request)
    result = outgoing.packet_export(owner=token.owner, ids=payload.ids)
    response = HttpResponse(result.raw, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{result.filename}"'
    return response


@router.post(
    "/packets",
    response={
        **errors(),
        200: ImportResultOut,
        202: ImportResultOut,
        409: ImportResultOut,
        413: ImportResultOut,
        422: ImportResultOut,
    },
    summary="Import a packet (the raw JSON packet is the request body)",
    description=(
        "Runs every gate in order: size (1 MiB), schema, signature, trusted key, replay, clock, "
        "then per item scan, fitness, source cap and convergent duplicates. 200 accepted, "
        "202 quarantined (unknown key: a person must trust or reject it in the dashboard), "
        "409 replay, 413 size, 422 any other rejection; each reason names its gate."
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
)
def packet_receive(request: HttpRequest) -> Status[dict[str, Any]]:
    token = _token(request)
    try:
        raw = request.body
    except RequestDataTooBig:
        limit = packet_format.MAX_PACKET_BYTES
        raise ApiError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "payload_too_large",
            f"size: the packet is over the {limit}-byte limit",
            {"gate": "size", "max_bytes": limit},
        ) from None
    result = packet_import(owner=token.owner, raw=raw, actor=actor_of(token))
    status, body = import_response(result)
    return Status(status, body)


@router.get("/packets", response={200: list[PacketOut], **errors()}, summary="Incoming packets")
def packet_list(request: HttpRequest) -> list[dict[str, Any]]:
    token = _token(request)
    return [_packet_dict(packet) for packet in incoming_packets(token.owner)]


def _packet_dict(packet: Packet) -> dict[str, Any]:
    return {
        "packet": packet.packet_id,
        "status": packet.status,
        "gate": packet.gate,
        "key_id": packet.key_id,
        "sender": packet.sender_name,
        "created_at": packet.created_at,
        "received_at": packet.received_at,
        "item_count": packet.item_count,
        "reasons": packet.reasons,
    }
