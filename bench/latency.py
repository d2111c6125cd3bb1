"""Inject and recall latency at 1k, 10k and 100k engrams, and learn throughput.

The corpus is the cursor-rules bullets from ../shared/eval-data/cursorrules, replicated with
variation (a project context per copy) up to the largest size; half the engrams are global, the
rest spread over ten projects, and prompts (the rule files' "when this applies" descriptions)
inject into one project, so each query sees its project plus global. Timings are server-side
(the service call in-process, no HTTP), with the query embedding shown separately.

    DEBUG=1 .venv/bin/python bench/latency.py --sizes 1000,10000,100000

The store is bulk-loaded (rows built as the learn service would, embeddings computed in batches
and cached under --cache-dir); learn throughput is measured separately through
`engram_learn_batch`. The database comes from --database-url (default ENGRAM_BENCH_DATABASE_URL,
else postgres://engram@127.0.0.1:5432/engram_bench); the bench owner's data is replaced.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.retrieval import EVAL_DATA, bootstrap, fresh_owner, log, read_jsonl  # noqa: E402

BENCH_USER = "bench-latency"
SIZES = (1000, 10_000, 100_000)
PROJECTS = [f"project:p{i}" for i in range(10)]
GLOBAL_SHARE = 0.5
CONTEXTS = (
    "",
    "In the billing service: ",
    "For the mobile app: ",
    "In the data pipeline: ",
    "For the admin dashboard: ",
    "In the public API: ",
    "For the CLI tools: ",
    "In the payments worker: ",
    "For the marketing site: ",
    "In the search service: ",
    "For the auth gateway: ",
    "In the analytics jobs: ",
    "For the desktop client: ",
    "In the infrastructure repo: ",
    "For the ML training code: ",
    "In the notification service: ",
)
QUERIES = 200
WARMUP = 20
LEARN_ITEMS = 400
LEARN_BATCH = 100
INSERT_BATCH = 1000
SEED = 11


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 and mean of millisecond samples (nearest-rank percentiles)."""
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[min(len(ordered), max(1, math.ceil(p / 100 * len(ordered)))) - 1]

    return {
        "p50": rank(50),
        "p95": rank(95),
        "p99": rank(99),
        "mean": statistics.fmean(ordered),
    }


def corpus_texts(total: int) -> list[str]:
    """`total` rule texts: every bullet once, then again under each project context."""
    bullets = [row["text"] for row in read_jsonl(EVAL_DATA / "cursorrules" / "rules_bullets.jsonl")]
    texts: list[str] = []
    for context in CONTEXTS:
        for text in bullets:
            if len(texts) >= total:
                return texts
            texts.append(context + text if context else text)
    raise SystemExit(f"only {len(texts)} variants available; lower --sizes")


def embeddings(texts: list[str], cache_dir: Path) -> Any:
    """Embeddings of `texts`, cached on disk by a digest of the texts and the model id."""
    import numpy as np

    from lib.embedder import MODEL_ID, get_embedder

    digest = hashlib.sha256(("\n".join(texts) + MODEL_ID).encode()).hexdigest()[:16]
    path = cache_dir / f"latency-{len(texts)}-{digest}.npy"
    if path.exists():
        log(f"embeddings: cached {path}")
        return np.load(path)
    embedder = get_embedder()
    out = np.zeros((len(texts), 384), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(texts), 4096):
        out[start : start + 4096] = embedder.embed(texts[start : start + 4096])
        done = min(len(texts), start + 4096)
        rate = done / (time.perf_counter() - started)
        log(f"embeddings: {done}/{len(texts)} ({rate:.0f}/s)")
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def load_rows(owner: Any, texts: list[str], vectors: Any, start: int, stop: int) -> None:
    """Bulk-insert engrams [start, stop) as active rules, as the learn service would build them."""
    from django.utils import timezone

    from lib.embedder import MODEL_ID
    from memory.maths import textnorm
    from memory.models import Engram
    from memory.services.engrams import search_text_of

    rng = random.Random(SEED + start)
    now = timezone.now()
    started = time.perf_counter()
    batch: list[Engram] = []
    # A text that normalises like an earlier one in its scope is what learn counts as a
    # recurrence: it is loaded retired (one live engram per statement and scope).
    seen = set(Engram.objects.filter(owner=owner).live().values_list("scope", "content_hash"))
    for i in range(start, stop):
        scope = "global" if rng.random() < GLOBAL_SHARE else PROJECTS[i % len(PROJECTS)]
        key = (scope, textnorm.content_hash(texts[i]))
        repeat = key in seen
        seen.add(key)
        engram = Engram(
            owner=owner,
            engram_id=f"ENG-BENCH-{i:06d}",
            status=Engram.Status.RETIRED if repeat else Engram.Status.ACTIVE,
            scope=scope,
            statement=texts[i],
            polarity=Engram.Polarity.DONT
            if texts[i].lower().startswith(("never", "avoid", "don't", "do not"))
            else None,
            content_hash=textnorm.content_hash(texts[i]),
            embedding=vectors[i],
            embedding_model=MODEL_ID,
            learned_at=now,
            rs_anchor_at=now,
            created_at=now,
            updated_at=now,
            source="user",
        )
        engram.search_text = search_text_of(engram)
        batch.append(engram)
        if len(batch) >= INSERT_BATCH:
            Engram.objects.bulk_create(batch)
            batch.clear()
            if (i + 1) % 10_000 == 0:
                rate = (i + 1 - start) / (time.perf_counter() - started)
                log(f"load: {i + 1}/{stop} rows ({rate:.0f} rows/s)")
    if batch:
        Engram.objects.bulk_create(batch)


def analyze() -> None:
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE memory_engram")
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def timed(calls: list[Callable[[], Any]]) -> tuple[list[float], list[Any]]:
    """Milliseconds per call after WARMUP untimed calls, and the calls' results."""
    for call in calls[:WARMUP]:
        call()
    samples: list[float] = []
    results: list[Any] = []
    for call in calls:
        started = time.perf_counter()
        results.append(call())
        samples.append((time.perf_counter() - started) * 1000)
    return samples, results


def measure(owner: Any, prompts: list[str], size: int) -> dict[str, Any]:
    """Inject (with a session, so injections are recorded) and recall over `prompts`."""
    from django.utils import timezone

    from lib.embedder import get_embedder
    from memory.search.legs import dense_plan
    from memory.services.retrieval import inject, recall
    from memory.services.sessions import session_start

    rng = random.Random(SEED + size)
    session = session_start(
        owner=owner, session_id=f"bench-{size}-{time.time_ns()}", scope="project:p1"
    )
    scoped = [(p, rng.choice(PROJECTS)) for p in prompts]
    # A later clock than the load keeps every engram in the active band as in steady state.
    now = timezone.now() + timedelta(minutes=1)

    embed_samples, _ = timed([lambda p=p: get_embedder().embed_one(p) for p, _ in scoped])
    inject_samples, inject_results = timed(
        [
            lambda p=p, s=s: inject(owner=owner, prompt=p, scope=s, session=session, now=now)
            for p, s in scoped
        ]
    )
    recall_samples, _ = timed(
        [
            lambda p=p, s=s: recall(owner=owner, query=p, scope=s, limit=10, now=now)
            for p, s in scoped
        ]
    )
    measured = inject_results[-len(scoped) :]
    plan = dense_plan(
        owner,
        get_embedder().embed_one(scoped[0][0]),
        limit=30,
        scopes=[scoped[0][1], "global"],
        statuses=["active"],
        valid_at=now,
    )
    inner_embed = [r.timings["embed"] for r in measured]
    inner_search = [r.timings["search"] for r in measured]
    inner_rank = [r.timings["rank"] for r in measured]
    inner_record = [r.timings["record"] for r in measured]
    return {
        "size": size,
        "queries": len(scoped),
        "inject": percentiles(inject_samples),
        "inject_embed": percentiles(inner_embed),
        "inject_search": percentiles(inner_search),
        "inject_rank": percentiles(inner_rank),
        "inject_record": percentiles(inner_record),
        "inject_minus_embed": percentiles(
            [t - e for t, e in zip(inject_samples, inner_embed, strict=True)]
        ),
        "recall": percentiles(recall_samples),
        "embed_only": percentiles(embed_samples),
        "items_injected": statistics.fmean(len(r.ids) for r in measured),
        "abstained": sum(r.abstained for r in measured),
        # The plan holds both branches; the one that did not run says "never executed".
        "dense_uses_hnsw": any(
            "engram_embedding_hnsw" in line and "never executed" not in line
            for line in plan.splitlines()
        ),
        "dense_plan": plan,
    }


def learn_throughput(owner: Any, size: int) -> dict[str, Any]:
    """Engrams per second through engram_learn_batch (with embedding), in batches."""
    from memory.services.engrams import engram_learn_batch

    bullets = [row["text"] for row in read_jsonl(EVAL_DATA / "cursorrules" / "rules_bullets.jsonl")]
    rng = random.Random(SEED * size)
    picked = rng.sample(bullets, LEARN_ITEMS)
    scope = f"project:learn-{size}"
    items = [
        {"statement": f"Learned at {size} ({i}): {text}", "scope": scope, "source": "user"}
        for i, text in enumerate(picked)
    ]
    started = time.perf_counter()
    failures = 0
    for start in range(0, len(items), LEARN_BATCH):
        results = engram_learn_batch(owner=owner, items=items[start : start + LEARN_BATCH])
        failures += sum(1 for r in results if not hasattr(r, "engram"))
    seconds = time.perf_counter() - started
    return {
        "size": size,
        "items": len(items),
        "batch": LEARN_BATCH,
        "seconds": seconds,
        "per_second": len(items) / seconds,
        "failed": failures,
    }


def print_tables(results: list[dict[str, Any]], learn: list[dict[str, Any]]) -> None:
    print("\n| engrams | call | p50 ms | p95 ms | p99 ms | mean ms |")
    print("|---|---|---|---|---|---|")
    labels = (
        ("inject", "inject (total, incl. embedding)"),
        ("inject_embed", "  of which query embedding"),
        ("inject_search", "  of which search legs (lexical + dense)"),
        ("inject_rank", "  of which ranking, buckets, spreading, render"),
        ("inject_record", "  of which recording injections and access"),
        ("inject_minus_embed", "inject without embedding"),
        ("recall", "recall (read-only, incl. embedding)"),
    )
    for run in results:
        for key, label in labels:
            p = run[key]
            print(
                f"| {run['size']:,} | {label} | {p['p50']:.1f} | {p['p95']:.1f} | "
                f"{p['p99']:.1f} | {p['mean']:.1f} |"
            )
    print("\n| engrams | prompts | mean engrams injected | abstained | dense leg plan |")
    print("|---|---|---|---|---|")
    for run in results:
        plan = "HNSW (iterative scan)" if run["dense_uses_hnsw"] else "exact (btree + sort)"
        print(
            f"| {run['size']:,} | {run['queries']} | {run['items_injected']:.1f} | "
            f"{run['abstained']} | {plan} |"
        )
    if results and results[-1]["dense_plan"]:
        print(f"\nDense query plan at {results[-1]['size']:,} engrams:\n")
        print("```\n" + results[-1]["dense_plan"] + "\n```")
    if learn:
        print("\n| store size | learned | batch | seconds | engrams/s |")
        print("|---|---|---|---|---|")
        for row in learn:
            print(
                f"| {row['size']:,} | {row['items']} | {row['batch']} | {row['seconds']:.1f} | "
                f"{row['per_second']:.0f} |"
            )


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--database-url")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/engram-bench-cache"))
    parser.add_argument("--no-learn", action="store_true", help="skip the learn throughput runs")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))

    if not (EVAL_DATA / "cursorrules").is_dir():
        print(f"eval data not found at {EVAL_DATA / 'cursorrules'}; skipped.")
        return 0
    bootstrap(args.database_url)
    from django.db import connection

    from lib.embedder import MODEL_ID

    print(f"machine: {machine()}; database {connection.vendor}; embedder {MODEL_ID}")
    owner = fresh_owner(BENCH_USER)
    texts = corpus_texts(sizes[-1])
    vectors = embeddings(texts, args.cache_dir)
    prompts = [q["query"] for q in read_jsonl(EVAL_DATA / "cursorrules" / "queries.jsonl")]
    prompts = (prompts * (args.queries // len(prompts) + 1))[: args.queries]
    results: list[dict[str, Any]] = []
    learn: list[dict[str, Any]] = []
    loaded = 0
    for size in sizes:
        started = time.perf_counter()
        load_rows(owner, texts, vectors, loaded, size)
        loaded = size
        analyze()
        log(f"size {size}: loaded in {time.perf_counter() - started:.1f}s; measuring")
        run = measure(owner, prompts, size)
        results.append(run)
        log(
            f"size {size}: inject p50 {run['inject']['p50']:.1f} p95 {run['inject']['p95']:.1f} "
            f"ms; recall p95 {run['recall']['p95']:.1f} ms"
        )
        if not args.no_learn:
            row = learn_throughput(owner, size)
            learn.append(row)
            log(f"size {size}: learn {row['per_second']:.0f} engrams/s")
    print_tables(results, learn)
    if args.json:
        args.json.write_text(
            json.dumps({"machine": machine(), "runs": results, "learn": learn}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
