"""Maintenance proposals by kind on a realistic seeded store (issue #26 item 4).

Seeds one owner with 240 engrams in a throwaway database: rules the user stated, lessons Engram
inferred, and the junk a real replay stores (assistant text, questions, one-off tasks), each with
an effectiveness profile (working, leech, hidden gem, noise, mostly irrelevant, too few
outcomes). Half the engrams have all their outcomes from sessions they were delivered in
(Outcome rows); the other half carry counters merged or imported from elsewhere with only a
couple of delivered outcomes. Then runs the daily maintenance once and prints the proposals by
kind, and by who stated the engram. Deterministic (seeded); no embedder, no LLM.

Run it on two commits to compare (the script only uses models both have):

    DATABASE_URL=... python bench/maintenance.py [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.test.utils import (  # noqa: E402
    setup_databases,
    setup_test_environment,
    teardown_databases,
    teardown_test_environment,
)
from django.utils import timezone  # noqa: E402

from memory.maths import textnorm  # noqa: E402
from memory.models import AgentSession, Engram, Injection, Outcome, ReviewItem  # noqa: E402

# Written for this bench (not from any evaluation set).
LESSONS = [
    "use relative paths in scripts",
    "Stage files by name before git commit",
    "Activate the virtualenv before running pytest",
    "Prefer rg over grep -r for searching the repo",
    "Run the linter before every push",
    "Pin dependency versions in requirements files",
    "Never commit secrets to the repository",
    "Write migrations by hand for data changes",
    "Keep functions under fifty lines",
    "Restart the dev server after changing settings",
    "Name test files after the module they cover",
    "Use UTC timestamps in every log line",
]
JUNK = [
    "Let me run the test suite again to check the fix.",
    "I'll update the config file and restart the worker.",
    "Now let me look at the failing migration.",
    "Can you check why the build is red?",
    "What does the retry decorator do here?",
    "Fix the login bug in auth.py",
    "Explore the data first",
    "Summarize the changes in the pull request",
]
# (surfaced, followed, contradicted, ignored, irrelevant) per profile
PROFILES = {
    "working": (30, 20, 2, 3, 0),
    "leech": (30, 1, 5, 6, 0),
    "hidden_gem": (1, 6, 0, 1, 0),
    "noise": (1, 0, 1, 6, 0),
    "irrelevant": (20, 1, 0, 1, 8),
    "insufficient": (3, 1, 0, 1, 0),
}


def seed(owner: Any, rng: random.Random, count: int) -> None:
    now = timezone.now()
    stale = now - timezone.timedelta(days=120)
    session_n = 0
    for n in range(count):
        roll = rng.random()
        junk = roll < 0.15
        if junk:
            statement, source = rng.choice(JUNK), rng.choice(["user", "agent"])
        else:
            statement = rng.choice(LESSONS)
            source = "user" if roll < 0.55 else "agent"
        statement = f"{statement} ({n})" if statement[-1] != "." else statement
        profile = rng.choice(list(PROFILES))
        surfaced, followed, contradicted, ignored, irrelevant = PROFILES[profile]
        engram = Engram.objects.create(
            owner=owner,
            domain="junk" if junk else "",
            engram_id=f"ENG-BENCH-{n:05d}",
            statement=statement,
            source=source,
            status=Engram.Status.ACTIVE,
            content_hash=textnorm.content_hash(statement),
            surfaced=surfaced,
            followed=followed,
            contradicted=contradicted,
            ignored=ignored,
            irrelevant=irrelevant,
            updated_at=stale if profile == "working" else now,
        )
        results = (
            ["followed"] * followed
            + ["contradicted"] * contradicted
            + ["ignored"] * ignored
            + ["irrelevant"] * irrelevant
        )
        if rng.random() < 0.5:
            results = results[:2]  # counters merged or imported: few delivered outcomes
        for result in results:
            session_n += 1
            session = AgentSession.objects.create(owner=owner, session_id=f"bench-{session_n}")
            injection = Injection.objects.create(
                owner=owner, session=session, engram=engram, bucket="directive"
            )
            Outcome.objects.create(
                owner=owner,
                injection=injection,
                engram=engram,
                result=result,
                source="auto-heuristic",
                evidence=f"{result} in bench session {session_n}",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--engrams", type=int, default=240)
    args = parser.parse_args()
    setup_test_environment()
    config = setup_databases(verbosity=0, interactive=False)
    try:
        from memory.services import maintenance

        owner = get_user_model().objects.create_user("bench", password="bench-pass-123")
        seed(owner, random.Random(args.seed), args.engrams)
        made = maintenance.maintain(owner=owner)
        kinds = Counter(str(item.payload.get("change", "")) for item in made)
        on_junk = Counter(
            str(item.payload.get("change", ""))
            for item in ReviewItem.objects.filter(pk__in=[m.pk for m in made]).select_related(
                "engram"
            )
            if item.engram and item.engram.domain == "junk"
        )
        junk_total = Engram.objects.filter(owner=owner, domain="junk").count()
        retire_yours = sum(
            1
            for item in made
            if item.payload.get("change") == "retire"
            and item.engram
            and item.engram.source in ("user", "person")
        )
        print(f"engrams seeded: {args.engrams} (seed {args.seed})")
        print(f"proposals: {len(made)}")
        for kind, n in sorted(kinds.items()):
            print(f"  {kind:18} {n}")
        print(f"junk engrams seeded: {junk_total}")
        print(f"proposals on junk statements: {sum(on_junk.values())} {dict(on_junk)}")
        print(f"retire proposals for rules you stated: {retire_yours}")
    finally:
        teardown_databases(config, verbosity=0)
        teardown_test_environment()


if __name__ == "__main__":
    main()
