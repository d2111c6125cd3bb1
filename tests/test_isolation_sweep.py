"""Isolation sweep over every route, found rather than listed: every operation of the OpenAPI
schema (all mounted API routers: memory, review, learning, exchange and whatever app mounts one
next) and every dashboard URL of the URL resolver, called as another owner and as a
scope-limited token of the same owner, with the first owner's identifiers in every path
parameter and every id-like body field.

Across the line nothing is read (no response carries a word of the other side's text) and
nothing is written (every row of every owner-owned model, found through the app registry, is
unchanged). tests/memory/test_api_isolation.py checks the memory routes' exact answers.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from engramsite.api import api as ninja_api
from exchange.services.identity import identity_get
from memory.models import AgentSession, ApiToken, Engram, ReviewItem
from memory.services.backup import owned_models
from memory.services.sessions import outcomes_attribute

pytestmark = pytest.mark.django_db
HOOK = "/api/v1/hooks/claude-code"
# Words only the protected side's rows contain; any of them in an answer is a leak.
SECRET = "zebracorn"
HIDDEN = "quokkafish"  # in the owner's own out-of-scope project
# What the sweep sends as text: words of the protected rows, never the markers themselves.
PROBE = "deploy runs on Mondays; restart the cache; billing key vault"
SLUGS = ["retire", "restore", "delete", "pin", "approve", "reject", "escalate", "undo", "edit"]
SKIP_PREFIXES = ("/admin/", "/static/", "/logout/")


def _learn(client: Client, statement: str, scope: str) -> str:
    response = client.post(
        "/api/v1/engrams",
        {"statement": statement, "scope": scope, "source": "user"},
        content_type="application/json",
    )
    assert response.status_code == HTTPStatus.CREATED, response.content
    return str(response.json()["engram"]["id"])


def _session(client: Client, sid: str, cwd: str, prompt: str) -> None:
    for event, fields in [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": prompt}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": f"echo {prompt}"}}),
        ("Stop", {}),
    ]:
        body = {"hook_event_name": event, "session_id": sid, "cwd": cwd, **fields}
        assert client.post(HOOK, body, content_type="application/json").status_code == 200


@pytest.fixture
def alice_data(api: Client, owner: Any) -> dict[str, list[str]]:
    """Alice's rows in two projects; her identifiers, to be tried by everyone else."""
    ids = [
        _learn(api, f"The {SECRET} deploy runs on Mondays at noon.", "project:app"),
        _learn(api, f"Never restart the {SECRET} cache by hand.", "global"),
        _learn(api, f"The {HIDDEN} billing key lives in the vault.", "project:hidden"),
    ]
    _session(api, "S-alice-app", "/w/app", f"deploy the {SECRET} service")
    _session(api, "S-alice-hidden", "/w/hidden", f"rotate the {HIDDEN} billing key")
    for session in AgentSession.objects.filter(owner=owner):
        outcomes_attribute(session_pk=session.pk)
    engram, other = Engram.objects.filter(owner=owner).order_by("pk")[:2]
    ReviewItem.objects.create(
        owner=owner, kind="merge", engram=engram, other=other, reason=f"{SECRET} twins"
    )
    identity_get(owner=owner)
    candidates = set(ids)
    candidates.update(AgentSession.objects.filter(owner=owner).values_list("session_id", flat=True))
    for model in owned_models():
        for pk in model._base_manager.filter(owner=owner).values_list("pk", flat=True)[:3]:
            candidates.add(str(pk))
    return {"ids": sorted(candidates), "engram_ids": ids}


def _state(username: str) -> str:
    """One digest of every row of every owner-owned model of `username`."""
    digest = hashlib.sha256()
    for model in owned_models():
        for row in model._base_manager.filter(owner__username=username).order_by("pk").values():
            row.pop("last_used_at", None)  # the token that made the rows is not used after
            digest.update(json.dumps(row, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _row(model: Any, pk: int) -> str:
    return json.dumps(model.objects.filter(pk=pk).values().get(), sort_keys=True, default=str)


def _resolve(schema: dict[str, Any], ref_root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = ref_root["components"]["schemas"][name]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [_resolve(s, ref_root) for s in schema[key]]
            non_null = [s for s in options if s.get("type") != "null"]
            return non_null[0] if non_null else options[0]
    return schema


def _body(operation: dict[str, Any], openapi: dict[str, Any], target: str) -> Any:
    """A body for the operation whose id-like fields all name `target`."""
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    schema = _resolve(content["application/json"].get("schema", {}), openapi)
    if schema.get("type") != "object":
        return {}
    body: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        prop = _resolve(prop, openapi)
        kind = prop.get("type")
        idish = re.search(r"(^|_)(id|ids|engram|session|peer|packet|item)s?$", name)
        if idish:
            body[name] = [target] if kind == "array" else target
        elif name in schema.get("required", []):
            body[name] = {
                "string": prop.get("enum", [PROBE])[0],
                "integer": 1,
                "number": 0.5,
                "boolean": False,
                "array": [],
                "object": {},
            }.get(kind, PROBE)
    return body


def _api_calls(openapi: dict[str, Any], ids: list[str]) -> Iterator[tuple[str, str, Any]]:
    for template, methods in openapi["paths"].items():
        params = re.findall(r"{(\w+)}", template)
        for method, operation in methods.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            targets = ids if params or operation.get("requestBody") else ids[:1]
            for target in targets:
                path = template
                for name in params:
                    path = path.replace("{" + name + "}", target)
                yield method.upper(), path, _body(operation, openapi, target)


def _dashboard_paths(ids: list[str]) -> Iterator[str]:
    def walk(patterns: list[Any], prefix: str) -> Iterator[str]:
        for entry in patterns:
            route = str(entry.pattern)
            if isinstance(entry, URLResolver):
                if route.startswith(("api/", "admin/")):
                    continue
                yield from walk(entry.url_patterns, prefix + route)
            elif isinstance(entry, URLPattern):
                full = "/" + prefix + route
                names = re.findall(r"<(?:(\w+):)?(\w+)>", full)
                if not names:
                    yield full
                    continue
                for target in ids:
                    path = full
                    for converter, name in names:
                        value = target
                        if converter == "slug":
                            value = "retire"
                        if converter == "int" and not target.isdigit():
                            break
                        path = re.sub(rf"<(?:\w+:)?{name}>", value, path, count=1)
                    else:
                        yield path
                        if any(c == "slug" for c, _ in names):
                            for slug in SLUGS[1:]:
                                yield path.replace("/retire/", f"/{slug}/")

    yield from walk(get_resolver().url_patterns, "")


def _sweep(client: Client, ids: list[str], words: list[str], *, dashboard: bool) -> int:
    openapi = ninja_api.get_openapi_schema()
    calls = 0
    leaks = []
    for method, path, body in _api_calls(openapi, ids):
        response = client.generic(
            method,
            path,
            json.dumps(body) if body is not None else "",
            content_type="application/json",
        )
        calls += 1
        # 503 llm_unavailable is the contract of /intelligence without a key (DESIGN), not a fault.
        unavailable = response.status_code == 503 and b"llm_unavailable" in response.content
        assert response.status_code < 500 or unavailable, (method, path, response.content[:300])
        text = response.content.decode("utf-8", "replace").lower()
        leaks += [(method, path, w) for w in words if w in text]
    if dashboard:
        for path in _dashboard_paths(ids):
            if path.startswith(SKIP_PREFIXES):
                continue
            for method in ("GET", "POST"):
                response = getattr(client, method.lower())(path, {"confirm": "1"})
                calls += 1
                assert response.status_code < 500, (method, path)
                text = response.content.decode("utf-8", "replace").lower()
                leaks += [(method, path, w) for w in words if w in text]
    assert leaks == []
    return calls


def test_another_owner_reads_and_writes_nothing_of_alice_on_any_route(
    alice_data: dict[str, list[str]], other_owner: Any, owner: Any
) -> None:
    before = _state("alice")
    _, raw = ApiToken.issue(owner=other_owner, name="bob-all")
    bob = Client(headers={"Authorization": f"Bearer {raw}"})
    bob.force_login(other_owner)
    calls = _sweep(bob, alice_data["ids"], [SECRET, HIDDEN], dashboard=True)
    assert calls > 300
    assert _state("alice") == before


def _mcp_sweep(token: ApiToken, ids: list[str], words: list[str]) -> int:
    """Every MCP tool of the token's server (other apps' tools included), with the protected
    side's identifiers in every id-like argument."""
    import threading

    import anyio

    from memory.integrations import mcp

    server = mcp.build_server(token)
    found: list[Any] = []
    leaks: list[tuple[str, str, str]] = []

    def run() -> None:
        # An event loop of its own thread: an earlier test may have left one running here.
        try:
            sweep()
        finally:
            from django.db import connections

            connections.close_all()

    def sweep() -> None:
        tools = anyio.run(server.list_tools)
        for tool in tools:
            schema = dict(tool.input_schema or {})
            schema.setdefault("type", "object")
            for target in ids:
                args = (
                    _body(
                        {"requestBody": {"content": {"application/json": {"schema": schema}}}},
                        {"components": {"schemas": schema.get("$defs", {})}},
                        target,
                    )
                    or {}
                )
                try:
                    result = anyio.run(server.call_tool, tool.name, args)
                    text = json.dumps(result.model_dump(), default=str).lower()
                except Exception as exc:  # a refusal (ToolError) is an answer too
                    text = str(exc).lower()
                found.append(tool.name)
                leaks.extend((tool.name, target, w) for w in words if w in text)

    from django.db import connections

    # Tools run in the event loop's worker threads; with no connection reuse, each closes its
    # database connection after the call (as a stdio server's process would at exit).
    previous = connections.settings["default"].get("CONN_MAX_AGE", 0)
    connections.settings["default"]["CONN_MAX_AGE"] = 0
    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(300)
    finally:
        connections.settings["default"]["CONN_MAX_AGE"] = previous
    assert leaks == []
    return len(found)


def test_another_owner_reads_and_writes_nothing_of_alice_over_mcp(
    alice_data: dict[str, list[str]], other_owner: Any
) -> None:
    before = _state("alice")
    bob, _ = ApiToken.issue(owner=other_owner, name="bob-mcp")
    calls = _mcp_sweep(bob, alice_data["ids"], [SECRET, HIDDEN])
    assert calls > 100
    assert _state("alice") == before


def test_a_scope_limited_token_sees_nothing_outside_its_scopes(
    alice_data: dict[str, list[str]], owner: Any
) -> None:
    hidden = Engram.objects.get(owner=owner, statement__contains=HIDDEN)
    hidden_session = AgentSession.objects.get(owner=owner, session_id="S-alice-hidden")
    before = {
        "engram": _row(Engram, hidden.pk),
        "session": _row(AgentSession, hidden_session.pk),
        "signals": hidden_session.signals.count(),
        "injections": hidden_session.injections.count(),
    }
    _, raw = ApiToken.issue(owner=owner, name="app-only", scopes=["project:app"])
    limited = Client(headers={"Authorization": f"Bearer {raw}"})
    ids = [hidden.engram_id, hidden_session.session_id, str(hidden.pk), str(hidden_session.pk)]
    calls = _sweep(limited, ids, [HIDDEN], dashboard=False)
    assert calls > 50
    hidden_session.refresh_from_db()
    after = {
        "engram": _row(Engram, hidden.pk),
        "session": _row(AgentSession, hidden_session.pk),
        "signals": hidden_session.signals.count(),
        "injections": hidden_session.injections.count(),
    }
    assert after == before
