"""The consolidation stages, each idempotent and committed in batches (DESIGN "Dialectic
consolidation"): observations in → clusters → theses → antitheses → syntheses (with the Q gate
and the output type) → review. `consolidate` runs every stage once and says what each made.

LLM steps (synthesis wording, imperative/procedural classification, the second-level output
refinement) go through `llm_run` and fall back to deterministic code that is good on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from dialectic import maths
from dialectic.models import Antithesis, Cluster, Synthesis, Thesis, Trace, vector_bytes, vector_of
from memory.models import Observation, ReviewItem
from memory.services.engrams import embed_texts
from memory.services.llm import PRODUCER_HEURISTIC, PRODUCER_LLM, LlmUnavailable, llm_run

EMBED_BATCH = 500
MAX_TEXT = 300
ERROR_RE = re.compile(r"\b(error|exception|traceback|failed|failure|fatal)\b", re.IGNORECASE)
TEST_COMMAND_RE = re.compile(
    r"\b(pytest|unittest|tox|nox|jest|vitest|mocha|go test|cargo test|"
    r"npm (?:run )?test|make test|rspec|phpunit)\b"
)

SYNTHESIS_TASK = "dialectic_synthesis"
CLASSIFY_TASK = "dialectic_classify"
REFINE_TASK = "dialectic_refine_output"


# --- observations in ------------------------------------------------------------------------


def _input_of(observation: Observation) -> dict[str, Any]:
    try:
        value = json.loads(observation.tool_input) if observation.tool_input else {}
    except ValueError:
        return {"text": observation.tool_input}
    return value if isinstance(value, dict) else {"text": str(value)}


def _paths_of(data: dict[str, Any]) -> list[str]:
    found = []
    for key in ("file_path", "notebook_path", "path"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            found.append(value.strip()[:300])
    return found


def _command_of(data: dict[str, Any]) -> str:
    value = data.get("command")
    return value.strip()[:300] if isinstance(value, str) else ""


def command_head(command: str) -> str:
    """The program a shell command runs (`pytest`, `npm test`, `git status`), for conditions."""
    match = TEST_COMMAND_RE.search(command)
    if match:
        return match.group(1)
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [w for w in words if "=" not in w[:1] and not w.startswith("-")]
    if not words:
        return ""
    head = os.path.basename(words[0])
    if head in ("python", "python3", "uv", "poetry", "npx", "git", "npm", "make", "cargo", "go"):
        return " ".join([head, *words[1:2]])
    return head


def relative_path(path: str, project: str) -> str:
    if project and path.startswith(project.rstrip("/") + "/"):
        return path[len(project.rstrip("/")) + 1 :]
    return path


def _where(rel: str) -> str:
    folder, ext = posixpath.dirname(rel), posixpath.splitext(rel)[1]
    kind = f"{ext} file" if ext else "file"
    return f"{kind} in {folder}" if folder else f"{kind} in the project root"


def observation_text(observation: Observation, data: dict[str, Any], project: str) -> str:
    """What is embedded: the kind of action, not its particulars. The tool with the kind and
    place of the file (`Read .py file in src/api`, not the file's name), the program a command
    runs, or the search pattern: a habit repeats the kind, rarely the exact file."""
    parts = [observation.tool]
    for path in _paths_of(data)[:1]:
        parts.append(_where(relative_path(path, project)))
    command = _command_of(data)
    if command:
        parts.append(f"run {command_head(command) or command[:60]}")
    pattern = data.get("pattern")
    if isinstance(pattern, str) and pattern.strip() and len(parts) == 1:
        parts.append(f"search {pattern.strip()[:80]}")
    for key in ("query", "url", "description"):
        value = data.get(key)
        if isinstance(value, str) and value.strip() and len(parts) == 1:
            parts.append(value.strip()[:120])
    if len(parts) == 1 and data.get("text"):
        parts.append(str(data["text"])[:120])
    return " ".join(parts)[:MAX_TEXT]


def observation_features(
    observation: Observation, data: dict[str, Any], project: str
) -> set[tuple[str, str]]:
    """The observation's own features: its tool, folders and extensions of its paths, the
    program of its command, and whether it failed."""
    found: set[tuple[str, str]] = {("tool", observation.tool)}
    for path in _paths_of(data):
        rel = relative_path(path, project)
        folder, ext = posixpath.dirname(rel), posixpath.splitext(rel)[1]
        if folder:
            found.add(("path", folder.split("/")[0] + "/"))
        if ext:
            found.add(("path", f"*{ext}"))
    command = _command_of(data)
    if command:
        head = command_head(command)
        if head:
            found.add(("command", head))
    if not observation.success or ERROR_RE.search(observation.tool_output[:2000]):
        found.add(("error", f"{observation.tool} failed"))
    return found


@dataclass
class StageCounts:
    embedded: int = 0
    clustered: int = 0
    clusters_created: int = 0
    theses: int = 0
    antitheses: int = 0
    syntheses: int = 0
    accepted: int = 0
    reviews: int = 0
    details: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in self.__dict__.items() if isinstance(v, int)}


def observations_embed(
    *, owner: Any | None = None, batch: int = EMBED_BATCH, limit: int | None = None
) -> int:
    """Embed unprocessed observations in batches and record each one's trace (its session
    window's tool sequence and features); returns how many. Claim and result commit together:
    a batch re-checks `processed_at IS NULL` under a row lock, so two workers never double up."""
    done = 0
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        with transaction.atomic():
            rows = Observation.objects.filter(processed_at__isnull=True).order_by("id")
            if owner is not None:
                rows = rows.filter(owner=owner)
            claimed = list(
                rows.select_related("session")
                .select_for_update(skip_locked=True, of=("self",))
                .defer("embedding")[:size]
            )
            if not claimed:
                break
            _traces_build(claimed)
        done += len(claimed)
    return done


def _window_of(observation: Observation, recent: dict[Any, list[Observation]]) -> list[Any]:
    return recent.get(observation.session_id or ("solo", observation.pk), [])


def _traces_build(claimed: list[Observation]) -> None:
    now = timezone.now()
    # The session window: the calls of the same session ending with this one (earlier ones may
    # be in an earlier batch, so they are read back).
    sessions = {o.session_id for o in claimed if o.session_id}
    first_id = claimed[0].pk
    earlier: dict[Any, list[Observation]] = defaultdict(list)
    if sessions:
        # The last 4 calls of each session before this batch, in one query.
        position = Window(RowNumber(), partition_by=[F("session_id")], order_by=F("id").desc())
        before = (
            Observation.objects.filter(session_id__in=sessions, id__lt=first_id)
            .annotate(position=position)
            .filter(position__lt=maths.SESSION_WINDOW)
            .order_by("id")
            .only("id", "session_id", "tool", "tool_input", "tool_output", "success")
        )
        for found in before:
            earlier[found.session_id].append(found)
    texts, traces = [], []
    per_session_feats: dict[Any, list[set[tuple[str, str]]]] = defaultdict(list)
    for session_id, rows in earlier.items():
        for row in rows:
            per_session_feats[session_id].append(observation_features(row, _input_of(row), ""))
    for observation in claimed:
        session = observation.session
        project = (session.cwd if session else "") or ""
        scope = session.scope if session else "global"
        data = _input_of(observation)
        key = observation.session_id or ("solo", observation.pk)
        earlier[key].append(observation)
        window = earlier[key][-maths.SESSION_WINDOW :]
        own = observation_features(observation, data, project)
        per_session_feats[key].append(own)
        feats: set[tuple[str, str]] = set()
        for part in per_session_feats[key][-maths.SESSION_WINDOW :]:
            feats |= part
        text = observation_text(observation, data, project)
        texts.append(text)
        traces.append(
            Trace(
                observation=observation,
                owner_id=observation.owner_id,
                scope=scope,
                project=project[:500],
                tool=observation.tool,
                text=text,
                sequence=[o.tool for o in window],
                features=sorted([list(f) for f in feats]),
                paths=[relative_path(p, project) for p in _paths_of(data)],
                observed_at=observation.created_at,
            )
        )
    # Texts name the kind of action, so a batch repeats many: each distinct one is embedded once.
    distinct = list(dict.fromkeys(texts))
    embedded = dict(zip(distinct, embed_texts(distinct), strict=True))
    # One UPDATE per distinct text (observations with the same text share their vector).
    ids_by_text: dict[str, list[int]] = defaultdict(list)
    for observation, text in zip(claimed, texts, strict=True):
        ids_by_text[text].append(observation.pk)
        observation.embedding = embedded[text]
    for text, ids in ids_by_text.items():
        Observation.objects.filter(pk__in=ids).update(embedding=embedded[text], processed_at=now)
    Trace.objects.bulk_create(traces, ignore_conflicts=True)


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
            best, similarity = -1, -1.0
            if len(clusters):
                sims = centroids @ vector
                best = int(np.argmax(sims))
                similarity = float(sims[best])
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


# --- theses ---------------------------------------------------------------------------------


def _label(traces: Sequence[Trace]) -> str:
    """What the cluster is about, from its members: the main tool and where it works."""
    tools = Counter(t.tool for t in traces)
    tool = tools.most_common(1)[0][0] if tools else "tool use"
    folders = Counter(
        (posixpath.dirname(p) or ".") for t in traces for p in t.paths if isinstance(p, str)
    )
    exts = Counter(posixpath.splitext(p)[1] for t in traces for p in t.paths if "." in p)
    commands = Counter(
        c for t in traces for k, c in (tuple(f) for f in t.features) if k == "command"
    )
    where = ""
    failing = sum(1 for t in traces if any(k == "error" for k, _ in t.features))
    if commands and tool == "Bash":
        command = commands.most_common(1)[0][0]
        if failing * 2 >= len(traces):
            return f"a failing `{command}`"
        return f"running `{command}`"
    if folders:
        folder = folders.most_common(1)[0][0]
        ext = exts.most_common(1)[0][0] if exts else ""
        where = f" {ext} files in {folder}/" if ext else f" files in {folder}/"
    elif commands:
        where = f" `{commands.most_common(1)[0][0]}`"
    return f"{tool}{where}".strip()


def thesis_statement(label: str, sequence: Sequence[str]) -> str:
    steps = " → ".join(sequence)
    return f"For {label}, the observed habit is the sequence {steps}."


def theses_refresh(*, owner: Any | None = None, now: datetime | None = None) -> int:
    """Make or update the thesis of every cluster with >= 3 observations and cohesion >= 0.7;
    returns how many theses were created or changed (0 on a second run)."""
    now = now or timezone.now()
    changed = 0
    clusters = Cluster.objects.filter(size__gte=maths.THESIS_MIN_OBSERVATIONS)
    if owner is not None:
        clusters = clusters.filter(owner=owner)
    theses = {t.cluster_id: t for t in Thesis.objects.filter(cluster__in=clusters)}
    for cluster in clusters.iterator():
        thesis = theses.get(cluster.pk)
        qualifies = maths.is_thesis(cluster.size, cluster.cohesion)
        if not qualifies:
            if thesis is not None and thesis.status == Thesis.Status.ACTIVE:
                Thesis.objects.filter(pk=thesis.pk).update(status=Thesis.Status.DORMANT)
                changed += 1
            continue
        if thesis is not None and thesis.size == cluster.size and thesis.status == "active":
            continue
        members = list(Trace.objects.filter(cluster=cluster).order_by("observation_id"))
        sequence = list(maths.expected_sequence([t.sequence for t in members]))
        label = _label(members)
        confidence = maths.thesis_confidence(cluster.size, cluster.cohesion)
        with transaction.atomic():
            if cluster.label != label:
                Cluster.objects.filter(pk=cluster.pk).update(label=label)
            if thesis is None:
                Thesis.objects.create(
                    owner_id=cluster.owner_id,
                    cluster=cluster,
                    scope=cluster.scope,
                    statement=thesis_statement(label, sequence),
                    expected_sequence=sequence,
                    size=cluster.size,
                    cohesion=cluster.cohesion,
                    confidence=confidence,
                    created_at=now,
                    updated_at=now,
                )
            else:
                fields: dict[str, Any] = {
                    "size": cluster.size,
                    "cohesion": cluster.cohesion,
                    "confidence": confidence,
                    "status": Thesis.Status.ACTIVE,
                    "statement": thesis_statement(label, sequence),
                    "updated_at": now,
                }
                if sequence != thesis.expected_sequence:
                    # Antitheses were measured against the old habit: measure them again.
                    fields.update(expected_sequence=sequence, checked_upto=0)
                    Antithesis.objects.filter(thesis=thesis).delete()
                Thesis.objects.filter(pk=thesis.pk).update(**fields)
        changed += 1
    return changed


# --- antitheses -----------------------------------------------------------------------------


def antitheses_find(*, owner: Any | None = None, batch: int = 5000) -> int:
    """Record every trace of the thesis's owner and scope with cosine > 0.5 to its centroid
    whose tool sequence diverges (D > 0.3). A contradiction is the same kind of action done
    another way, so candidates are calls of the tool the habit ends with (an Edit is not a
    different way of doing a Read). Only traces newer than each thesis's watermark are read,
    once per (owner, scope, tool) for all its theses, and the (thesis, trace) pair is unique,
    so a second run adds nothing."""
    found = 0
    theses = Thesis.objects.filter(status=Thesis.Status.ACTIVE).select_related("cluster")
    if owner is not None:
        theses = theses.filter(owner=owner)
    groups: dict[tuple[int, str, str], list[Thesis]] = defaultdict(list)
    for thesis in theses:
        if thesis.expected_sequence:
            groups[(thesis.owner_id, thesis.scope, thesis.expected_sequence[-1])].append(thesis)
    for (owner_id, scope, tool), members in groups.items():
        low = min(t.checked_upto for t in members)
        centroids = np.array([t.cluster.centroid for t in members], dtype=np.float32)
        while True:
            rows = list(
                Trace.objects.filter(
                    owner_id=owner_id, scope=scope, tool=tool, observation_id__gt=low
                )
                .order_by("observation_id")
                .values_list("observation_id", "sequence", "observed_at", "observation__embedding")[
                    :batch
                ]
            )
            if not rows:
                break
            vectors = np.array(
                [r[3] if r[3] is not None else np.zeros(centroids.shape[1]) for r in rows],
                dtype=np.float32,
            )
            sims = vectors @ centroids.T  # rows x theses
            new = []
            for column, thesis in enumerate(members):
                expected = list(thesis.expected_sequence)
                for index in np.nonzero(sims[:, column] > maths.ANTITHESIS_COSINE)[0]:
                    trace_id, sequence, observed_at, _ = rows[index]
                    if trace_id <= thesis.checked_upto:
                        continue
                    d = maths.aligned_divergence(sequence, expected)
                    similarity = float(sims[index, column])
                    if maths.contradicts(similarity, d):
                        new.append(
                            Antithesis(
                                thesis=thesis,
                                trace_id=trace_id,
                                similarity=similarity,
                                divergence=d,
                                observed_at=observed_at,
                            )
                        )
            low = rows[-1][0]
            with transaction.atomic():
                Antithesis.objects.bulk_create(new, ignore_conflicts=True)
                Thesis.objects.filter(pk__in=[t.pk for t in members]).update(checked_upto=low)
            for thesis in members:
                thesis.checked_upto = low
            found += len(new)
    return found


# --- syntheses ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draft:
    statement: str
    condition: str
    features: tuple[tuple[str, str], ...]
    producer: str


FEATURE_WORDS = {
    "tool": "the recent calls include {value}",
    "path": "the work is in {value}",
    "command": "`{value}` was run",
    "error": "{value}",
}


def feature_phrase(kind: str, value: str) -> str:
    if kind == "error":
        return f"a {value.replace(' failed', '')} call just failed"
    return FEATURE_WORDS.get(kind, "{value}").format(value=value)


def _matches(features: frozenset[tuple[str, str]], condition: Sequence[tuple[str, str]]) -> bool:
    return bool(condition) and all(f in features for f in condition)


def _quality(
    condition: Sequence[tuple[str, str]],
    against: Sequence[frozenset[tuple[str, str]]],
    support: Sequence[frozenset[tuple[str, str]]],
) -> maths.Quality:
    if not condition:
        total = len(against) + len(support)
        return maths.Quality(
            coverage=len(support) / total if total else 0.0, consistency=1.0, parsimony=1.0
        )
    return maths.quality(
        antitheses_matched=sum(_matches(f, condition) for f in against),
        antitheses=len(against),
        supporting_matched=sum(_matches(f, condition) for f in support),
        supporting=len(support),
        conditions=len(condition) - 1,
    )


def _habit_sentence(thesis: Thesis, label: str) -> str:
    sequence = list(thesis.expected_sequence)
    tools = list(dict.fromkeys(sequence))
    reading = sum(1 for t in sequence if t in ("Read", "Grep", "Glob", "LS"))
    if reading >= max(3, len(sequence) - 1):
        return (
            f"Prefer a broad survey before going deep on {label}: search and read several "
            "related files before editing any of them."
        )
    if len(tools) >= 3:
        steps = "; ".join(f"{n}. {tool}" for n, tool in enumerate(tools, 1))
        return f"Workflow for {label}: {steps}. Follow these steps in order."
    return f"Prefer the usual order of work for {label}: {' then '.join(sequence)}."


def _sessions(thesis: Thesis) -> set[Any]:
    return set(
        Trace.objects.filter(cluster_id=thesis.cluster_id, observation__session__isnull=False)
        .values_list("observation__session_id", flat=True)
        .distinct()
    )


def _subsumed(thesis: Thesis, others: Sequence[Thesis]) -> bool:
    """A habit that is part of a longer habit seen in the same sessions (Read → Edit inside
    Read → Edit → make docs) says nothing the longer one does not."""
    mine = list(thesis.expected_sequence)
    sessions: set[int] | None = None
    for other in others:
        theirs = list(other.expected_sequence)
        if other.pk == thesis.pk or other.scope != thesis.scope or len(theirs) <= len(mine):
            continue
        if not any(theirs[i : i + len(mine)] == mine for i in range(len(theirs) - len(mine) + 1)):
            continue
        sessions = _sessions(thesis) if sessions is None else sessions
        if sessions and len(sessions & _sessions(other)) * 2 >= len(sessions):
            return True
    return False


def draft_fallback(
    thesis: Thesis,
    against: Sequence[frozenset[tuple[str, str]]],
    support: Sequence[frozenset[tuple[str, str]]],
    against_traces: Sequence[Trace] | None = None,
) -> Draft:
    """ "T, except when C" from the antitheses' distinguishing features: the feature (or pair)
    with the best Q; no exception when no feature separates them."""
    label = thesis.cluster.label or "this kind of work"
    habit = _habit_sentence(thesis, label)
    candidates = maths.distinguishing_features(against, support, limit=4)
    options: list[tuple[tuple[str, str], ...]] = [((f.kind, f.value),) for f in candidates]
    options += [
        ((a.kind, a.value), (b.kind, b.value))
        for i, a in enumerate(candidates)
        for b in candidates[i + 1 :]
    ]
    if not options:
        return Draft(habit, "", (), PRODUCER_HEURISTIC)
    best = max(options, key=lambda c: (_quality(c, against, support).q, -len(c)))
    condition = " and ".join(feature_phrase(k, v) for k, v in best)
    alternative = _alternative(against_traces or [])
    if alternative:
        condition = f"{condition}: {alternative}"
    return Draft(habit, condition, best, PRODUCER_HEURISTIC)


def _alternative(against: Sequence[Trace]) -> str:
    sequences = Counter(tuple(t.sequence) for t in against)
    if not sequences:
        return ""
    common = sequences.most_common(1)[0][0]
    return "go straight at the problem instead (those sessions went " + ", ".join(common) + ")"


SYNTHESIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statement": {"type": "string", "maxLength": 600},
        "condition": {"type": "string", "maxLength": 400},
        "features": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": 3,
            "description": "ids of the candidate features the condition uses (e.g. f1)",
        },
    },
    "required": ["statement", "condition", "features"],
}


def draft_llm(
    thesis: Thesis,
    against: Sequence[frozenset[tuple[str, str]]],
    support: Sequence[frozenset[tuple[str, str]]],
) -> Draft:
    """The synthesis worded by Claude, choosing its condition among the measured candidate
    features (so Q is measured on the data, not taken on trust). Raises LlmUnavailable."""
    candidates = maths.distinguishing_features(against, support, limit=8)
    table = {f"f{n}": (f.kind, f.value) for n, f in enumerate(candidates, 1)}
    data = json.dumps(
        {
            "thesis": thesis.statement,
            "expected_sequence": thesis.expected_sequence,
            "antitheses": len(against),
            "supporting": len(support),
            "candidate_features": {
                key: {
                    "kind": f.kind,
                    "value": f.value,
                    "share_of_antitheses": round(f.in_antitheses, 2),
                    "share_of_supporting": round(f.in_supporting, 2),
                }
                for key, f in zip(table, candidates, strict=True)
            },
        }
    )
    answer = llm_run(
        owner=thesis.owner,
        task=SYNTHESIS_TASK,
        schema=SYNTHESIS_SCHEMA,
        instructions=(
            "An agent's observed habit (the thesis) has exceptions (antitheses). Write the "
            "synthesis as an instruction for a coding agent: `statement` the habit in imperative "
            "form, `condition` when it does not apply (empty if none) and `features` the ids of "
            "the candidate features your condition names."
        ),
        data=data,
    )
    chosen = tuple(table[f] for f in answer.get("features", []) if f in table)
    statement = str(answer.get("statement", "")).strip()
    if not statement:
        raise LlmUnavailable("invalid", "the synthesis has no statement")
    condition = str(answer.get("condition", "")).strip() if chosen else ""
    return Draft(statement, condition, chosen, PRODUCER_LLM)


def _evidence_key(family: Sequence[Thesis], anti_ids: Sequence[int], triggered: bool) -> str:
    ids = list(anti_ids) if triggered else []
    raw = json.dumps([sorted(t.pk for t in family), list(family[0].expected_sequence), ids])
    return hashlib.sha256(raw.encode()).hexdigest()


def _families(theses: Sequence[Thesis]) -> dict[int, list[Thesis]]:
    """Theses of one owner with the same habit in 3 or more scopes (projects), centroids close
    (cosine > 0.75): one lesson seen across projects, whose evidence counts together and whose
    synthesis is proposed for the user scope."""
    groups: dict[tuple[int, tuple[str, ...]], list[Thesis]] = defaultdict(list)
    for thesis in theses:
        groups[(thesis.owner_id, tuple(thesis.expected_sequence))].append(thesis)
    families: dict[int, list[Thesis]] = {}
    for members in groups.values():
        if len({t.scope for t in members}) < maths.USER_SCOPE_MIN_PROJECTS:
            continue
        for thesis in members:
            close = [
                other
                for other in members
                if other.pk == thesis.pk
                or maths.cosine(thesis.cluster.centroid, other.cluster.centroid)
                > maths.CLUSTER_COSINE
            ]
            if len({t.scope for t in close}) >= maths.USER_SCOPE_MIN_PROJECTS:
                families[thesis.pk] = sorted(close, key=lambda t: t.pk)
    return families


def syntheses_make(
    *, owner: Any | None = None, now: datetime | None = None, counts: StageCounts | None = None
) -> int:
    """Write a synthesis for each thesis whose recency-weighted antithesis weight reaches
    0.4·conf(T) ("T, except when C"), and for each confident thesis with nothing against it
    ("T" as it stands, once). The evidence key (thesis, habit, antitheses) makes a second run
    a no-op. Accepted ones (Q > 0.6) get an output type and, past the gates, a review item."""
    from dialectic.services.publish import synthesis_propose

    now = now or timezone.now()
    made = 0
    theses = Thesis.objects.filter(status=Thesis.Status.ACTIVE).select_related("cluster", "owner")
    if owner is not None:
        theses = theses.filter(owner=owner)
    active = list(theses)
    families = _families(active)
    for thesis in active:
        if len(thesis.expected_sequence) < 2:
            continue  # one call is not a habit of working in some order
        family = families.get(thesis.pk, [thesis])
        if min(t.pk for t in family) != thesis.pk:
            continue  # the family's first thesis speaks for all of it
        tool = thesis.expected_sequence[-1]
        anti_rows = list(
            Antithesis.objects.filter(thesis__in=family)
            .order_by("trace_id")
            .values_list("trace_id", "observed_at")
        )
        anti_ids = {a for a, _ in anti_rows}
        support_rows = [
            (pk, when)
            for pk, when in Trace.objects.filter(
                cluster_id__in=[t.cluster_id for t in family], tool=tool
            ).values_list("observation_id", "observed_at")
            if pk not in anti_ids
        ]
        if len(family) > 1:
            confidence = maths.thesis_confidence(
                sum(t.size for t in family), min(t.cohesion for t in family)
            )
        else:
            confidence = thesis.confidence
        weight = maths.antithesis_weight(
            [when for _, when in anti_rows], [when for _, when in support_rows], now
        )
        triggered = maths.synthesis_triggered(weight, confidence)
        if not triggered and (
            confidence < maths.PUBLISH_MIN_CONFIDENCE or _subsumed(thesis, active)
        ):
            continue
        key = _evidence_key(family, sorted(anti_ids), triggered)
        if Synthesis.objects.filter(thesis=thesis, evidence_key=key).exists():
            continue
        support = list(
            Trace.objects.filter(observation_id__in=[pk for pk, _ in support_rows]).order_by(
                "observation_id"
            )
        )
        against = list(Trace.objects.filter(observation_id__in=anti_ids).order_by("observation_id"))
        against_f = [t.feature_set for t in against]
        support_f = [t.feature_set for t in support]
        if triggered:
            try:
                draft = draft_llm(thesis, against_f, support_f)
            except LlmUnavailable:
                draft = draft_fallback(thesis, against_f, support_f, against)
        else:
            draft = Draft(
                _habit_sentence(thesis, thesis.cluster.label or "this kind of work"),
                "",
                (),
                PRODUCER_HEURISTIC,
            )
        quality = _quality(draft.features, against_f, support_f)
        projects = sorted({t.project for t in [*support, *against] if t.project})
        with transaction.atomic():
            synthesis, created = Synthesis.objects.get_or_create(
                thesis=thesis,
                evidence_key=key,
                defaults={
                    "owner_id": thesis.owner_id,
                    "scope": thesis.scope,
                    "statement": draft.statement,
                    "condition": draft.condition,
                    "features": [list(f) for f in draft.features],
                    "clauses": len(draft.features),
                    "coverage": quality.coverage,
                    "consistency": quality.consistency,
                    "parsimony": quality.parsimony,
                    "q": quality.q,
                    "antithesis_weight": weight,
                    "confidence": confidence,
                    "exemplars": len(support),
                    "support_share": len(support) / max(1, len(support) + len(against)),
                    "projects": projects,
                    "producer": draft.producer,
                    "state": Synthesis.State.HELD
                    if quality.accepted
                    else Synthesis.State.REJECTED_Q,
                    "created_at": now,
                },
            )
        if not created:
            continue
        made += 1
        if counts is not None:
            counts.details.append(
                f"synthesis {synthesis.pk} (thesis {thesis.pk}): Q={quality.q:.2f} "
                f"[{quality.coverage:.2f}·{quality.consistency:.2f}·{quality.parsimony:.2f}] "
                f"{'accepted' if quality.accepted else 'rejected'} — {draft.statement}"
                + (f" Except when {draft.condition}." if draft.condition else "")
            )
        if not quality.accepted:
            continue
        if counts is not None:
            counts.accepted += 1
        output_decide(synthesis=synthesis, thesis=thesis, support=support, against=against)
        if synthesis_propose(synthesis=synthesis, now=now) and counts is not None:
            counts.reviews += 1
    return made


# --- output type ----------------------------------------------------------------------------

CLASSIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"imperative": {"type": "boolean"}, "procedural": {"type": "boolean"}},
    "required": ["imperative", "procedural"],
}
REFINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "output_type": {"type": "string", "enum": list(maths.OUTPUT_TYPES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["output_type", "confidence"],
}


def instruction_text(synthesis: Synthesis, thesis: Thesis) -> str:
    """The instruction as an artifact would carry it: the statement, its exception and the
    steps with a typical argument each (what K's length measures)."""
    from dialectic.services.publish import examples_of

    text = synthesis.statement
    if synthesis.condition:
        text += f" Except when {synthesis.condition}."
    examples = examples_of(list(Trace.objects.filter(cluster_id=thesis.cluster_id)[:200]))
    steps = [
        f"{n}. {tool}" + (f" (e.g. `{examples[tool]}`)" if examples.get(tool) else "")
        for n, tool in enumerate(dict.fromkeys(thesis.expected_sequence), 1)
    ]
    return text + (" Steps: " + " ".join(steps) if steps else "")


def output_decide(
    *, synthesis: Synthesis, thesis: Thesis, support: Sequence[Trace], against: Sequence[Trace]
) -> maths.OutputDecision:
    """none / rule / skill / rule_with_skill from the characteristics (the LLM classifies, the
    regexes otherwise), tool diversity and K; refined by the LLM when its confidence is < 0.7."""
    if (
        synthesis.confidence < maths.OUTPUT_MIN_CONFIDENCE
        or synthesis.exemplars < maths.OUTPUT_MIN_EXEMPLARS
    ):
        # Nothing to classify: DESIGN's first rule decides, whatever the text says.
        decision = maths.output_type(
            confidence=synthesis.confidence,
            exemplars=synthesis.exemplars,
            imperative=False,
            procedural=False,
            diversity=0,
            k=0.0,
        )
        Synthesis.objects.filter(pk=synthesis.pk).update(
            output_type=decision.output_type,
            decision_confidence=decision.confidence,
            decision_reason=decision.reason,
        )
        synthesis.refresh_from_db()
        return decision
    full = instruction_text(synthesis, thesis)
    text = synthesis.statement + (
        f" Except when {synthesis.condition}." if synthesis.condition else ""
    )
    producer = PRODUCER_HEURISTIC
    try:
        answer = llm_run(
            owner=thesis.owner,
            task=CLASSIFY_TASK,
            schema=CLASSIFY_SCHEMA,
            instructions=(
                "Classify this instruction for a coding agent: `imperative` when it tells the "
                "agent what it must or should do; `procedural` when it is a sequence of steps."
            ),
            data=text,
            max_tokens=200,
        )
        imperative, procedural = bool(answer["imperative"]), bool(answer["procedural"])
        producer = PRODUCER_LLM
    except (LlmUnavailable, KeyError):
        imperative, procedural = maths.is_imperative(text), maths.is_procedural(text)
    tools = set(thesis.expected_sequence)
    diversity = len(tools)
    conditional = bool(synthesis.condition) or maths.is_conditional(text)
    k = maths.complexity(
        length=maths.length_score(len(full)),
        tools=maths.tools_score(diversity),
        conditional=conditional,
        procedural=procedural,
    )
    decision = maths.output_type(
        confidence=synthesis.confidence,
        exemplars=synthesis.exemplars,
        imperative=imperative,
        procedural=procedural,
        diversity=diversity,
        k=k,
    )
    refined_by = ""
    if decision.needs_refinement:
        try:
            answer = llm_run(
                owner=thesis.owner,
                task=REFINE_TASK,
                schema=REFINE_SCHEMA,
                instructions=(
                    "Decide how this learned instruction should reach a coding agent: `rule` (a "
                    "short always-loaded instruction), `skill` (a procedure with a script), "
                    "`rule_with_skill` (both) or `none`."
                ),
                data=json.dumps(
                    {
                        "instruction": full,
                        "tools": sorted(tools),
                        "imperative": imperative,
                        "procedural": procedural,
                        "complexity": round(k, 2),
                        "heuristic": decision.output_type,
                    }
                ),
                max_tokens=300,
            )
            if answer.get("output_type") in maths.OUTPUT_TYPES:
                decision = maths.OutputDecision(
                    str(answer["output_type"]),
                    float(answer.get("confidence", 0.7)),
                    str(answer.get("reason", "refined by the LLM"))[:300],
                )
                refined_by = PRODUCER_LLM
        except LlmUnavailable:
            refined_by = PRODUCER_HEURISTIC
    Synthesis.objects.filter(pk=synthesis.pk).update(
        output_type=decision.output_type,
        decision_confidence=decision.confidence,
        decision_reason=decision.reason,
        characteristics={
            "imperative": imperative,
            "procedural": procedural,
            "conditional": conditional,
            "tool_diversity": diversity,
            "complexity": round(k, 4),
            "classified_by": producer,
            "refined_by": refined_by,
        },
    )
    synthesis.refresh_from_db()
    return decision


# --- everything -----------------------------------------------------------------------------


def consolidate(*, owner: Any | None = None, now: datetime | None = None) -> StageCounts:
    """Run every stage once, in order; each is idempotent, so this is too."""
    counts = StageCounts()
    counts.embedded = observations_embed(owner=owner)
    counts.clustered, counts.clusters_created = clusters_assign(owner=owner)
    counts.theses = theses_refresh(owner=owner, now=now)
    counts.antitheses = antitheses_find(owner=owner)
    counts.syntheses = syntheses_make(owner=owner, now=now, counts=counts)
    return counts


def review_open(owner: Any) -> int:
    return ReviewItem.objects.filter(
        owner=owner, kind=ReviewItem.Kind.SYNTHESIS, state=ReviewItem.State.PENDING
    ).count()
