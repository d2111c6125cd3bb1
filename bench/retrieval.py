"""Retrieval quality on the shared eval data: lexical-only, dense-only and hybrid recall.

Each group (a LoCoMo conversation, a MemoryCode dialogue) is learned into its own scope through
the service layer (`engram_learn`, time replayed from the data so the decay clock ticks), then its
queries run through `recall` in the three modes. Prints R@1/5/10, MRR and nDCG@10 per category,
and MemoryCode's stale-above-current rate.

    DEBUG=1 .venv/bin/python bench/retrieval.py --dataset locomo --limit-groups 2

The database comes from --database-url (default: ENGRAM_BENCH_DATABASE_URL, else
postgres://engram@127.0.0.1:5432/engram_bench); it is migrated, and the bench owner's data in it
is replaced. Never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL_DATA = ROOT.parent / "shared" / "eval-data"
DEFAULT_DB = "postgres://engram@127.0.0.1:5432/engram_bench"
BENCH_USER = "bench-retrieval"
MODES = ("lexical", "dense", "hybrid")
KS = (1, 5, 10)
TOP = 10
EMBED_BATCH = 256
MEMORYCODE_EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)  # session s happens s days later


def bootstrap(database_url: str | None) -> str:
    """Point Django at the bench database, set it up and migrate; returns the URL used."""
    url = database_url or os.environ.get("ENGRAM_BENCH_DATABASE_URL") or DEFAULT_DB
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # DEBUG=1 only supplies development settings; query logging would distort timings.
    from django.conf import settings

    settings.DEBUG = False
    return url


def fresh_owner(username: str) -> Any:
    """Delete and recreate the bench user, so each run starts from an empty store."""
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    user_model.objects.filter(username=username).delete()
    return user_model.objects.create_user(username=username, password=None)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- metrics --------------------------------------------------------------------------------


@dataclass
class Scores:
    """Sums of per-query metrics for one split; `row()` gives the means."""

    n: int = 0
    recall: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    mrr: float = 0.0
    ndcg: float = 0.0

    def add(self, ranked: Sequence[set[str]], relevant: set[str]) -> None:
        self.n += 1
        if not relevant:
            return
        for k in KS:
            found = set().union(*ranked[:k]) & relevant if ranked[:k] else set()
            self.recall[k] += len(found) / len(relevant)
        first = next((i for i, ids in enumerate(ranked, start=1) if ids & relevant), None)
        self.mrr += 1 / first if first else 0.0
        seen: set[str] = set()
        dcg = 0.0
        for i, ids in enumerate(ranked[:TOP], start=1):
            new = (ids & relevant) - seen
            if new:
                dcg += 1 / math.log2(i + 1)
                seen |= new
        ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(relevant), TOP) + 1))
        self.ndcg += dcg / ideal

    def row(self) -> dict[str, float]:
        n = max(self.n, 1)
        out = {f"R@{k}": self.recall[k] / n for k in KS}
        out.update({"MRR": self.mrr / n, "nDCG@10": self.ndcg / n})
        return out


def print_table(title: str, results: dict[str, dict[str, Scores]], splits: Sequence[str]) -> None:
    print(f"\n### {title}\n")
    print("| split | n | mode | R@1 | R@5 | R@10 | MRR | nDCG@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for split in splits:
        for mode in MODES:
            scores = results[mode].get(split)
            if scores is None or scores.n == 0:
                continue
            row = scores.row()
            cells = " | ".join(f"{row[m]:.3f}" for m in ("R@1", "R@5", "R@10", "MRR", "nDCG@10"))
            print(f"| {split} | {scores.n} | {mode} | {cells} |")


def as_json(results: dict[str, dict[str, Scores]]) -> dict[str, Any]:
    return {
        mode: {split: {"n": s.n, **s.row()} for split, s in splits.items()}
        for mode, splits in results.items()
    }


# --- ingestion ------------------------------------------------------------------------------


@dataclass
class Ingested:
    """Dataset ids of a group mapped to engram pks (a recurrence maps two ids to one pk)."""

    pk_of: dict[str, int] = field(default_factory=dict)
    ids_of: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    rejected: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: float = 0.0


def learn_items(
    owner: Any,
    scope: str,
    items: Sequence[tuple[str, str, datetime, dict[str, Any]]],
    into: Ingested,
) -> None:
    """Learn (id, statement, when, extra fields) items in order; one embedding batch per call."""
    from memory.errors import DomainError
    from memory.services.engrams import embed_texts, engram_learn

    if not items:
        return
    started = time.perf_counter()
    vectors = embed_texts([statement for _, statement, _, _ in items])
    for (item_id, statement, when, extra), vector in zip(items, vectors, strict=True):
        try:
            result = engram_learn(
                owner=owner,
                statement=statement,
                scope=scope,
                source="user",
                actor="bench",
                now=when,
                vector=vector,
                **extra,
            )
        except DomainError:
            into.rejected += 1
            continue
        into.pk_of[item_id] = result.engram.pk
        into.ids_of[result.engram.pk].add(item_id)
        into.outcomes[result.outcome] += 1
    into.seconds += time.perf_counter() - started


def run_query(
    owner: Any, scope: str, query: str, now: datetime, ingested: Ingested, mode: str
) -> list[set[str]]:
    from memory.services.retrieval import recall

    results = recall(owner=owner, query=query, scopes=[scope], limit=TOP, mode=mode, now=now)
    return [set(ingested.ids_of.get(r.engram.pk, ())) for r in results]


# --- LoCoMo ---------------------------------------------------------------------------------

LOCOMO_CATEGORY_ORDER = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")


def _locomo_time(row: dict[str, Any]) -> datetime:
    when = datetime.fromisoformat(row["session_datetime"])
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _turn_order(row: dict[str, Any]) -> tuple[int, int]:
    # Ids are D<session>:<turn> or O<session>:<k>.
    session, _, turn = row["id"][1:].partition(":")
    return int(session), int(turn)


def bench_locomo(
    owner: Any, *, observations: bool, limit_groups: int | None, sample: int | None
) -> dict[str, Any]:
    folder = EVAL_DATA / "locomo"
    corpus = read_jsonl(folder / ("observations.jsonl" if observations else "corpus.jsonl"))
    queries = read_jsonl(folder / ("retrieval_obs.jsonl" if observations else "retrieval.jsonl"))
    label = "LoCoMo observations" if observations else "LoCoMo turns"
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in corpus:
        by_conv[row["conv_id"]].append(row)
    groups = sorted(by_conv)[:limit_groups] if limit_groups else sorted(by_conv)
    results: dict[str, dict[str, Scores]] = {mode: defaultdict(Scores) for mode in MODES}
    query_seconds = 0.0
    total = Ingested()
    for number, conv in enumerate(groups, start=1):
        rows = sorted(by_conv[conv], key=lambda r: (_locomo_time(r), _turn_order(r)))
        scope = f"project:locomo-{'obs-' if observations else ''}{conv}"
        items = []
        for row in rows:
            text = row["text"]
            if row.get("speaker") and not observations:
                # A turn is stored self-contained, with who said it; observations already are.
                text = f"{row['speaker']}: {text}"
            if row.get("blip_caption"):
                text = f"{text} [image: {row['blip_caption']}]"
            when = _locomo_time(row) + timedelta(seconds=_turn_order(row)[1])
            items.append((row["id"], text, when, {}))
        ingested = Ingested()
        learn_items(owner, scope, items, ingested)
        now = max(when for _, _, when, _ in items) + timedelta(hours=1)
        conv_queries = [q for q in queries if q["conv_id"] == conv]
        if sample:
            conv_queries = conv_queries[:sample]
        started = time.perf_counter()
        for q in conv_queries:
            relevant = set(q["relevant"])
            splits = ["all", q["category_name"]]
            if q["category"] != 5:
                splits.append("no adversarial")
            for mode in MODES:
                ranked = run_query(owner, scope, q["query"], now, ingested, mode)
                for split in splits:
                    results[mode][split].add(ranked, relevant)
        query_seconds += time.perf_counter() - started
        total.rejected += ingested.rejected
        total.seconds += ingested.seconds
        for key, value in ingested.outcomes.items():
            total.outcomes[key] += value
        log(
            f"[{label}] {number}/{len(groups)} {conv}: {len(items)} items in "
            f"{ingested.seconds:.1f}s ({ingested.rejected} rejected), "
            f"{len(conv_queries)} queries x {len(MODES)} modes"
        )
    splits = ["all", "no adversarial", *LOCOMO_CATEGORY_ORDER]
    print_table(f"{label} ({len(groups)} conversations)", results, splits)
    print(
        f"\ningest: {sum(total.outcomes.values())} learned in {total.seconds:.1f}s "
        f"(outcomes {dict(total.outcomes)}, rejected {total.rejected}); "
        f"queries: {query_seconds:.1f}s"
    )
    return {"label": label, "groups": len(groups), "results": as_json(results)}


# --- MemoryCode -----------------------------------------------------------------------------


def bench_memorycode(owner: Any, *, limit_groups: int | None, sample: int | None) -> dict[str, Any]:
    folder = EVAL_DATA / "memorycode"
    rules = read_jsonl(folder / "engrams.jsonl")
    queries = read_jsonl(folder / "queries.jsonl")
    by_dialogue: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rules:
        by_dialogue[row["dialogue_id"]].append(row)
    queries_by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        queries_by[q["dialogue_id"]].append(q)
    dialogues = sorted(by_dialogue)
    if limit_groups and limit_groups < len(dialogues):
        # An even sample across the whole id range (later dialogues are longer and harder), not
        # the first N.
        last = len(dialogues) - 1
        picks = sorted({round(i * last / max(1, limit_groups - 1)) for i in range(limit_groups)})
        dialogues = [dialogues[i] for i in picks]
    results: dict[str, dict[str, Scores]] = {mode: defaultdict(Scores) for mode in MODES}
    stale = {mode: {"queries": 0, "stale_above": 0} for mode in MODES}
    total = Ingested()
    started_all = time.perf_counter()
    for number, dialogue in enumerate(dialogues, start=1):
        scope = f"project:memorycode-d{dialogue}"
        ingested = Ingested()
        dialogue_queries = queries_by[dialogue]
        if sample:
            dialogue_queries = dialogue_queries[:sample]
        sessions = sorted({r["session"] for r in by_dialogue[dialogue]})
        sessions = sorted(set(sessions) | {q["session"] for q in dialogue_queries})
        for session in sessions:
            day = MEMORYCODE_EPOCH + timedelta(days=session)
            # Only rules stated up to this session exist when its queries are asked.
            items = [
                (r["id"], r["text"], day + timedelta(minutes=i), {})
                for i, r in enumerate(
                    sorted(
                        (r for r in by_dialogue[dialogue] if r["session"] == session),
                        key=lambda r: r["id"],
                    )
                )
            ]
            learn_items(owner, scope, items, ingested)
            now = day + timedelta(hours=12)
            for q in (q for q in dialogue_queries if q["session"] == session):
                relevant = set(q["relevant"])
                stale_ids = set(q.get("stale") or ())
                for mode in MODES:
                    ranked = run_query(owner, scope, q["query"], now, ingested, mode)
                    for split in ("all", f"{q['scope']} scope"):
                        results[mode][split].add(ranked, relevant)
                    if stale_ids:
                        stale[mode]["queries"] += 1
                        stale[mode]["stale_above"] += int(_stale_first(ranked, relevant, stale_ids))
        total.rejected += ingested.rejected
        total.seconds += ingested.seconds
        for key, value in ingested.outcomes.items():
            total.outcomes[key] += value
        log(
            f"[MemoryCode] {number}/{len(dialogues)} dialogue {dialogue}: "
            f"{sum(ingested.outcomes.values())} rules, {len(dialogue_queries)} queries"
        )
    print_table(
        f"MemoryCode ({len(dialogues)} of {len(by_dialogue)} dialogues)",
        results,
        ["all", "session scope", "history scope"],
    )
    print("\n| mode | queries with a stale version | stale ranked above current |")
    print("|---|---|---|")
    for mode in MODES:
        n = stale[mode]["queries"]
        rate = stale[mode]["stale_above"] / n if n else 0.0
        print(f"| {mode} | {n} | {rate:.1%} |")
    print(
        f"\ningest: {sum(total.outcomes.values())} learned in {total.seconds:.1f}s "
        f"(outcomes {dict(total.outcomes)}, rejected {total.rejected}); "
        f"total {time.perf_counter() - started_all:.1f}s"
    )
    return {
        "label": "MemoryCode",
        "groups": len(dialogues),
        "results": as_json(results),
        "stale": stale,
    }


def _stale_first(ranked: Sequence[set[str]], current: set[str], stale: set[str]) -> bool:
    """True when a stale version appears in the top results above every current version."""
    for ids in ranked:
        if ids & current:
            return False
        if ids & stale:
            return True
    return False


# --- main -----------------------------------------------------------------------------------


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset",
        choices=("locomo", "locomo-obs", "memorycode", "all"),
        default="all",
    )
    parser.add_argument("--limit-groups", type=int, help="conversations / dialogues to run")
    parser.add_argument("--sample-queries", type=int, help="at most this many queries per group")
    parser.add_argument("--database-url", help=f"bench database (default {DEFAULT_DB})")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(list(argv) if argv is not None else None)

    if not EVAL_DATA.is_dir():
        print(f"eval data not found at {EVAL_DATA}; nothing to benchmark (skipped).")
        return 0
    url = bootstrap(args.database_url)
    from django.db import connection

    from lib.embedder import MODEL_ID

    log(f"database: {connection.vendor} {connection.settings_dict['NAME']} ({url.split('@')[-1]})")
    print(f"embedder {MODEL_ID}; database {connection.vendor}; top {TOP}; pools 3x/2x limit")
    out: dict[str, Any] = {"database": connection.vendor, "runs": []}
    wanted = ["locomo", "locomo-obs", "memorycode"] if args.dataset == "all" else [args.dataset]
    for name in wanted:
        owner = fresh_owner(BENCH_USER)
        if name in ("locomo", "locomo-obs"):
            run = bench_locomo(
                owner,
                observations=name == "locomo-obs",
                limit_groups=args.limit_groups,
                sample=args.sample_queries,
            )
        else:
            run = bench_memorycode(
                owner, limit_groups=args.limit_groups, sample=args.sample_queries
            )
        out["runs"].append(run)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
