"""REST API v1 for dialectic consolidation and delivery, mounted at /api/v1/.

`GET /artifacts` is what engram-hook and `engram_publish` sync from; `POST /intelligence` is the
intelligence point of hybrid skill scripts (DESIGN "Dialectic delivery"): it calls Claude on the
request path by design and answers 503 `llm_unavailable` without a key or budget. The rest are
reads of clusters, theses, syntheses and artifacts (syntheses are decided in /review).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from dialectic import selectors
from dialectic.models import Antithesis, Artifact, ArtifactVersion, Synthesis, Thesis, Trace
from dialectic.services.publish import artifact_retire
from memory.access import require_scope
from memory.api.auth import TokenAuth, token_of
from memory.api.schemas import ErrorOut, InSchema
from memory.errors import InvalidInput, NotFound, Unavailable
from memory.integrations.claude_code import project_scope
from memory.models import ApiToken
from memory.services.llm import LlmUnavailable, llm_run
from memory.validation import scope as validate_scope

router = Router(auth=TokenAuth(), tags=["dialectic"])

INTELLIGENCE_TASK = "dialectic_intelligence"
# A caller's schema may not point elsewhere (remote retrieval) nor nest without bound.
REFUSED_SCHEMA_KEYS = frozenset({"$ref", "$id", "$dynamicRef", "$recursiveRef", "$anchor"})
MAX_SCHEMA_DEPTH = 32
MAX_CONTEXT_CHARS = 20_000


def errors(*codes: int) -> dict[int, type[ErrorOut]]:
    return dict.fromkeys((401, 403, 413, 429, *codes), ErrorOut)


class PageIn(InSchema):
    scope: str | None = Field(None, max_length=200)
    limit: int = Field(50, ge=1, le=selectors.MAX_PAGE)
    offset: int = Field(0, ge=0)


class ArtifactsIn(InSchema):
    scope: str | None = Field(None, max_length=200, description="A scope, e.g. project:api.")
    cwd: str | None = Field(
        None, max_length=1000, description="A project directory; its scope is project:<name>."
    )
    root: str | None = Field(
        None,
        max_length=1000,
        description="The checkout's main folder (engram-hook sends git's): names the project "
        "instead of cwd, so every worktree of one repository gets the same artifacts.",
    )


class FileOut(Schema):
    path: str = Field(description="Relative to `.claude/` (of the project, or ~ for user scope).")
    content: str
    hash: str
    known_hashes: list[str] = Field(description="Every hash a version wrote at this path.")


class StaleFileOut(Schema):
    path: str
    known_hashes: list[str]


class DeliveredOut(Schema):
    id: int
    kind: str
    slug: str
    scope: str
    target: str = Field(description="project or user (~/.claude/)")
    status: str
    version: int
    content_hash: str
    files: list[FileOut]
    stale_files: list[StaleFileOut]


class DeliveryOut(Schema):
    scope: str | None
    artifacts: list[DeliveredOut]


class IntelligenceIn(InSchema):
    task: str = Field(min_length=1, max_length=4000)
    context: str = Field("", max_length=MAX_CONTEXT_CHARS)
    schema_: dict[str, Any] | None = Field(None, alias="schema")


class IntelligenceOut(Schema):
    result: Any = Field(description="Text, or an object matching the schema sent.")


def _scope_of(
    token: ApiToken, scope: str | None, cwd: str | None, root: str | None = None
) -> str | None:
    chosen = validate_scope(scope) if scope else (project_scope(cwd, root) if cwd or root else None)
    if chosen:
        require_scope(token, chosen)
    return chosen


def _visible(token: ApiToken, scope: str) -> bool:
    return scope == selectors.USER_SCOPE or token.allows_scope(scope)


@router.get("/artifacts", response={200: DeliveryOut, **errors(404, 422)})
def artifacts(request: HttpRequest, filters: Query[ArtifactsIn]) -> dict[str, Any]:
    """The rules and skills to deliver: of `scope` (or of `cwd`'s project) plus the user
    scope, every one with its current files and the hashes of all versions (active and
    retired: a client removes a retired artifact's unedited files)."""
    token = token_of(request)
    scope = _scope_of(token, filters.scope, filters.cwd, filters.root)
    if scope is None:
        _page_scope(token, None)
    listing = [
        a for a in selectors.delivery_list(token.owner, scope) if _visible(token, a["scope"])
    ]
    return {"scope": scope, "artifacts": listing}


class VersionOut(Schema):
    version: int
    content_hash: str
    created_at: str
    synthesis_id: int | None
    files: dict[str, str]


class ArtifactOut(Schema):
    id: int
    kind: str
    slug: str
    scope: str
    status: str
    version: int
    content_hash: str
    thesis_id: int | None
    synthesis_id: int | None
    updated_at: str


class ArtifactDetailOut(ArtifactOut):
    versions: list[VersionOut]


def _artifact(token: ApiToken, artifact_id: int) -> Artifact:
    artifact = Artifact.objects.filter(owner=token.owner, pk=artifact_id).first()
    if artifact is None or not _visible(token, artifact.scope):
        raise NotFound("Artifact")
    return artifact


@router.get("/artifacts/{artifact_id}", response={200: ArtifactDetailOut, **errors(404)})
def artifact_detail(request: HttpRequest, artifact_id: int) -> dict[str, Any]:
    """One artifact with every version's files."""
    artifact = _artifact(token_of(request), artifact_id)
    versions = ArtifactVersion.objects.filter(artifact=artifact).order_by("-version")
    return {
        **selectors.artifact_dict(artifact),
        "versions": [
            {
                "version": v.version,
                "content_hash": v.content_hash,
                "created_at": v.created_at.isoformat(),
                "synthesis_id": v.synthesis_id,
                "files": v.files,
            }
            for v in versions
        ],
    }


@router.post("/artifacts/{artifact_id}/retire", response={200: ArtifactOut, **errors(404)})
def artifact_retire_endpoint(request: HttpRequest, artifact_id: int) -> dict[str, Any]:
    """Retire an artifact: syncing clients remove its files unless the user edited them."""
    token = token_of(request)
    artifact = _artifact(token, artifact_id)
    return selectors.artifact_dict(artifact_retire(owner=token.owner, artifact_id=artifact.pk))


def schema_check(schema: dict[str, Any]) -> None:
    """InvalidInput unless `schema` is a valid JSON schema with no reference anywhere: `$ref`
    and `$id` (and the dynamic forms) could make the validator fetch documents, so a caller's
    schema must be self-contained."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise InvalidInput("schema", f"is nested deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, dict):
            refused = sorted(REFUSED_SCHEMA_KEYS.intersection(node))
            if refused:
                raise InvalidInput(
                    "schema", f"must be self-contained: {refused[0]} is not accepted"
                )
            stack += [(value, depth + 1) for value in node.values()]
        elif isinstance(node, list):
            stack += [(value, depth + 1) for value in node]
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidInput("schema", f"is not a valid JSON schema: {exc.message}") from None


@router.post("/intelligence", response={200: IntelligenceOut, **errors(422, 503)})
def intelligence(request: HttpRequest, body: IntelligenceIn) -> dict[str, Any]:
    """An intelligence point of a hybrid skill script, answered by Claude through the budgeted
    client; 503 `llm_unavailable` without a key (the script then asks its calling agent)."""
    token = token_of(request)
    if body.schema_ is not None:
        schema = body.schema_
        if schema.get("type") != "object" or len(json.dumps(schema)) > 8000:
            raise InvalidInput("schema", "must be a JSON schema of type object, under 8 kB")
        schema_check(schema)
        wrap = False
    else:
        schema = {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        }
        wrap = True
    try:
        answer = llm_run(
            owner=token.owner,
            task=INTELLIGENCE_TASK,
            schema=schema,
            instructions=body.task,
            data=body.context,
        )
    except LlmUnavailable as exc:
        raise Unavailable(
            f"No LLM is available ({exc.reason}); the script should ask its calling agent.",
            code="llm_unavailable",
        ) from None
    return {"result": answer.get("answer", "") if wrap else answer}


# --- reads ----------------------------------------------------------------------------------


class ClusterOut(Schema):
    id: int
    scope: str
    label: str
    size: int
    cohesion: float
    thesis_id: int | None
    updated_at: str


class ThesisOut(Schema):
    id: int
    cluster_id: int
    scope: str
    statement: str
    expected_sequence: list[str]
    size: int
    cohesion: float
    confidence: float
    status: str
    antitheses: int
    updated_at: str


class SynthesisOut(Schema):
    id: int
    thesis_id: int
    scope: str
    statement: str
    condition: str
    features: list[list[str]]
    q: float
    coverage: float
    consistency: float
    parsimony: float
    accepted: bool
    antithesis_weight: float
    confidence: float
    exemplars: int
    support_share: float
    projects: list[str]
    output_type: str
    decision_confidence: float
    decision_reason: str
    characteristics: dict[str, Any]
    producer: str
    state: str
    review_item_id: int | None
    created_at: str


class ClusterPage(Schema):
    items: list[ClusterOut]
    total: int


class ThesisPage(Schema):
    items: list[ThesisOut]
    total: int


class SynthesisPage(Schema):
    items: list[SynthesisOut]
    total: int


class EvidenceOut(Schema):
    observation_id: int
    tool: str
    text: str
    sequence: list[str]
    observed_at: str


class AntithesisOut(EvidenceOut):
    """One distinct way the habit was not followed: its tool sequence, how many observations
    went that way (`count`), the latest one's call (`observation_id`, `text`, `observed_at`)
    and the latest few (`exemplars`, observation ids)."""

    similarity: float
    divergence: float
    count: int
    exemplars: list[int]


class ThesisDetailOut(ThesisOut):
    evidence: list[EvidenceOut]
    antitheses_list: list[AntithesisOut]
    syntheses: list[SynthesisOut]


def _page_scope(token: ApiToken, scope: str | None) -> str | None:
    if scope:
        scope = validate_scope(scope)
        require_scope(token, scope)
    elif token.scopes and "*" not in token.scopes:
        raise InvalidInput("scope", "this token is limited to some scopes: name one")
    return scope


@router.get("/dialectic/clusters", response={200: ClusterPage, **errors(422)})
def clusters(request: HttpRequest, page: Query[PageIn]) -> dict[str, Any]:
    """Clusters of observed tool use, largest first."""
    token = token_of(request)
    rows, total = selectors.clusters_page(
        token.owner, scope=_page_scope(token, page.scope), limit=page.limit, offset=page.offset
    )
    return {"items": [selectors.cluster_dict(c) for c in rows], "total": total}


@router.get("/dialectic/theses", response={200: ThesisPage, **errors(422)})
def theses(request: HttpRequest, page: Query[PageIn]) -> dict[str, Any]:
    """Theses, most confident first."""
    token = token_of(request)
    rows, total = selectors.theses_page(
        token.owner, scope=_page_scope(token, page.scope), limit=page.limit, offset=page.offset
    )
    return {
        "items": [selectors.thesis_dict(t, antitheses=t.antithesis_count) for t in rows],
        "total": total,
    }


def _evidence(trace: Trace) -> dict[str, Any]:
    return {
        "observation_id": trace.observation_id,
        "tool": trace.tool,
        "text": trace.text,
        "sequence": list(trace.sequence),
        "observed_at": trace.observed_at.isoformat(),
    }


@router.get("/dialectic/theses/{thesis_id}", response={200: ThesisDetailOut, **errors(404)})
def thesis_detail(request: HttpRequest, thesis_id: int) -> dict[str, Any]:
    """One thesis with its evidence (latest 50), antitheses and syntheses."""
    token = token_of(request)
    thesis = Thesis.objects.filter(owner=token.owner, pk=thesis_id).first()
    if thesis is None or not token.allows_scope(thesis.scope):
        raise NotFound("Thesis")
    evidence = Trace.objects.filter(cluster_id=thesis.cluster_id).order_by("-observation_id")[:50]
    anti = (
        Antithesis.objects.filter(thesis=thesis)
        .select_related("trace")
        .order_by("-count", "-observed_at")
    )[:50]
    return {
        **selectors.thesis_dict(thesis),
        "evidence": [_evidence(t) for t in evidence],
        "antitheses_list": [selectors.antithesis_dict(a) for a in anti],
        "syntheses": [
            selectors.synthesis_dict(s) for s in thesis.syntheses.order_by("-created_at")
        ],
    }


@router.get("/dialectic/syntheses", response={200: SynthesisPage, **errors(422)})
def syntheses(request: HttpRequest, page: Query[PageIn]) -> dict[str, Any]:
    """Syntheses, newest first, with Q and its factors."""
    token = token_of(request)
    rows, total = selectors.syntheses_page(
        token.owner, scope=_page_scope(token, page.scope), limit=page.limit, offset=page.offset
    )
    return {"items": [selectors.synthesis_dict(s) for s in rows], "total": total}


@router.get("/dialectic/syntheses/{synthesis_id}", response={200: SynthesisOut, **errors(404)})
def synthesis_detail(request: HttpRequest, synthesis_id: int) -> dict[str, Any]:
    token = token_of(request)
    synthesis = Synthesis.objects.filter(owner=token.owner, pk=synthesis_id).first()
    if synthesis is None or not token.allows_scope(synthesis.scope):
        raise NotFound("Synthesis")
    return selectors.synthesis_dict(synthesis)
