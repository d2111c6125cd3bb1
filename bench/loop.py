"""The self-improving loop, replayed: scripted Claude Code sessions over simulated weeks.

Everything an agent does goes through the hook endpoint (`POST /api/v1/hooks/claude-code`):
the user states rules in prompts (captured and learned), later prompts get them injected, the
simulated agent's tool calls follow them or not, Stop attributes outcomes. Once a simulated week
the maintenance job runs (as the daily beat would) and a person approves every proposal over
the REST review queue. A clock this script controls stands in for time, so weeks take seconds.

The simulated agent: two rules are followed whenever they surface (and surface in every
session), two are surfaced as often but ignored (leeches) until escalated, after which the agent
follows them; two surface rarely and are followed (hidden gems); two surface rarely and are
ignored (noise).

    DEBUG=1 .venv/bin/python bench/loop.py                 # 6 weeks, 4 sessions a day, SQLite
    # --weeks N --sessions-per-day N --seed N --json FILE

Runs on the embedded default (a fresh SQLite file, tasks run in-process); prints the quadrant
counts per week, proposals made and applied, and the share of injections that got an outcome.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HOOK = "/api/v1/hooks/claude-code"


@dataclass(frozen=True)
class Rule:
    key: str
    said: str  # how the user states it
    prompt: str  # a task it applies to
    follow: str  # the tool command that follows it
    other: str  # the command the agent runs when it does not follow it
    often: bool  # relevant in every session, or rarely
    followed: bool  # does the agent follow it when it surfaces


RULES = (
    Rule("ruff", "Always run ruff check before you commit.", "commit the lint fixes with ruff",
         "ruff check . before commit", "git commit -am lint", True, True),
    Rule("pytest", "Always run pytest with -x in this repo.", "run the pytest suite quickly",
         "pytest -x repo tests", "python -m unittest", True, True),
    Rule("pnpm", "Always use pnpm to install packages.", "install the react packages with pnpm",
         "pnpm install packages react", "yarn add react", True, False),
    Rule("alembic", "Always create alembic migrations with autogenerate.",
         "add an alembic migration for the users table",
         "alembic revision --autogenerate create migrations", "touch users.sql", True, False),
    Rule("semver", "Always tag releases with semver tags.", "tag the mobile release with semver",
         "git tag semver releases v1.4.0", "git push", False, True),
    Rule("tz", "Always store timestamps in UTC timezone.", "store the order timestamps in utc",
         "store timestamps utc timezone orders.py", "sed -i s/x/y/ orders.py", False, True),
    Rule("yaml", "Always use two spaces in YAML files.", "edit the yaml indentation files",
         "cat config.yml", "ls", False, False),
    Rule("docker", "Always pin docker base images by digest.", "pin the docker base image digest",
         "cat Dockerfile", "ls", False, False),
)  # fmt: skip
RARELY = 0.3  # chance a session is in the side project, where the rare rules' tasks come up
SHOP = "/work/shop"
LAB = "/work/lab"


@dataclass
class Report:
    weeks: list[dict[str, Any]] = field(default_factory=list)
    proposals_made: Counter[str] = field(default_factory=Counter)
    proposals_applied: Counter[str] = field(default_factory=Counter)
    escalated: list[str] = field(default_factory=list)
    deescalated: list[str] = field(default_factory=list)
    injections: int = 0
    with_outcome: int = 0
    small_sample_proposals: int = 0

    @property
    def outcome_share(self) -> float:
        return self.with_outcome / self.injections if self.injections else 0.0


@contextlib.contextmanager
def controlled_clock(start: datetime) -> Iterator[Callable[[timedelta], None]]:
    """Replace django.utils.timezone.now (and every model field default that is it) with a
    clock that moves only when told; restored afterwards."""
    from django.apps import apps
    from django.utils import timezone

    real = timezone.now
    current = [start]

    def now() -> datetime:
        return current[0]

    patched = []
    for model in apps.get_models():
        for f in model._meta.concrete_fields:
            if f.default is real:
                f.default = now
                f.__dict__.pop("_get_default", None)
                patched.append(f)
    timezone.now = now  # type: ignore[assignment]

    def advance(delta: timedelta) -> None:
        current[0] = current[0] + delta

    try:
        yield advance
    finally:
        timezone.now = real  # type: ignore[assignment]
        for f in patched:
            f.default = real
            f.__dict__.pop("_get_default", None)


def replay(
    *,
    client: Any,
    owner: Any,
    advance: Callable[[timedelta], None],
    weeks: int,
    sessions_per_day: int,
    seed: int = 7,
    say: Callable[[str], None] = print,
) -> Report:
    """Drive the loop; `client` sends the owner's bearer token."""
    from memory.models import Engram, Injection, ReviewItem
    from memory.selectors import classified
    from memory.services import maintenance

    rng = random.Random(seed)
    report = Report()
    serial = 0

    def hook(
        event: str, session: str, cwd: str = "/work/shop", query: str = "", **fields: Any
    ) -> dict[str, Any]:
        body = {"hook_event_name": event, "session_id": session, "cwd": cwd, **fields}
        response = client.post(HOOK + query, json.dumps(body), content_type="application/json")
        if response.status_code != 200:
            raise RuntimeError(f"{event}: HTTP {response.status_code} {response.content[:200]!r}")
        return dict(response.json())

    # Day 0: the user states every rule once: the often-relevant ones for every project
    # (global), the rare ones in the side project where their tasks come up (project:lab).
    # Each session's SessionStart brief carries the standing rules of its project and global.
    for rule in RULES:
        serial += 1
        cwd, query = (SHOP, "?scope=global") if rule.often else (LAB, "")
        said = f"{rule.said} Remember that."
        hook("UserPromptSubmit", f"teach-{serial}", cwd, query, prompt=said)
        hook("Stop", f"teach-{serial}", cwd, query)
        advance(timedelta(minutes=30))
    for engram in Engram.objects.filter(owner=owner).order_by("pk"):
        say(f"learned {engram.engram_id} ({engram.status}): {engram.statement}")
    learned = {
        rule.key: Engram.objects.filter(owner=owner, statement__icontains=rule.said.rstrip("."))
        .order_by("pk")
        .first()
        for rule in RULES
    }
    missing = [key for key, e in learned.items() if e is None]
    if missing:
        raise RuntimeError(f"rules not learned from the prompts: {missing}")
    advance(timedelta(days=1))

    escalated: set[str] = set()
    for week in range(1, weeks + 1):
        for _day in range(7):
            for _ in range(sessions_per_day):
                serial += 1
                session = f"s-{serial}"
                cwd = LAB if rng.random() < RARELY else SHOP
                relevant = [r for r in RULES if r.often or cwd == LAB]
                brief = hook("SessionStart", session, cwd, source="startup")
                answer = hook(
                    "UserPromptSubmit", session, cwd, prompt="; ".join(r.prompt for r in relevant)
                )
                context = "\n".join(
                    a.get("hookSpecificOutput", {}).get("additionalContext", "")
                    for a in (brief, answer)
                )
                for rule in relevant:
                    engram = learned[rule.key]
                    assert engram is not None
                    surfaced = engram.engram_id in context
                    obeys = rule.followed or rule.key in escalated
                    command = rule.follow if surfaced and obeys else rule.other
                    tool: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": command}}
                    hook("PreToolUse", session, cwd, **tool)
                    hook("PostToolUse", session, cwd, tool_response={"stdout": "ok"}, **tool)
                hook("Stop", session, cwd, last_assistant_message="Done.")
                advance(timedelta(hours=3))
            advance(timedelta(hours=24 - 3 * sessions_per_day))
        groups = classified(owner)
        quadrants = Counter(c.quadrant for c in groups.by_pk.values())
        # The daily beat's job, once a week here, then a person approves every proposal.
        made = maintenance.maintain(owner=owner)
        for item in made:
            report.proposals_made[item.payload["change"]] += 1
            if item.payload["evidence"]["outcomes"] < 5:
                report.small_sample_proposals += 1
        for item in ReviewItem.objects.filter(owner=owner, kind="maintenance", state="pending"):
            change = item.payload["change"]
            response = client.post(
                f"/api/v1/review/{item.pk}/decide",
                json.dumps({"action": "approve"}),
                content_type="application/json",
            )
            if response.status_code == 200:
                report.proposals_applied[change] += 1
                if change == "escalate":
                    keys = [k for k, e in learned.items() if e and e.pk == item.engram_id]
                    escalated.update(keys)
                    report.escalated.append(f"week {week}: {keys or item.engram_id}")
        for key, engram in learned.items():
            if engram is None:
                continue
            before = engram.enforcement
            engram.refresh_from_db()
            if before != "advisory" and engram.enforcement == "advisory":
                report.deescalated.append(f"week {week}: {key}")
        row = {
            "week": week,
            **{q: quadrants.get(q, 0) for q in ("working", "leech", "hidden_gem", "noise")},
            "insufficient": quadrants.get("insufficient", 0),
            "proposals": len(made),
        }
        report.weeks.append(row)
        say(
            f"week {week}: working {row['working']}, leech {row['leech']}, hidden gem "
            f"{row['hidden_gem']}, noise {row['noise']}, insufficient {row['insufficient']}; "
            f"{len(made)} proposals"
        )
    pairs = set(
        Injection.objects.filter(owner=owner)
        .exclude(bucket=Injection.Bucket.RECALL)
        .values_list("session_id", "engram_id")
    )
    judged = set(
        Injection.objects.filter(owner=owner, outcome__isnull=False).values_list(
            "session_id", "engram_id"
        )
    )
    report.injections, report.with_outcome = len(pairs), len(pairs & judged)
    for key, engram in learned.items():
        if engram is not None:
            engram.refresh_from_db()
            say(
                f"{key}: {engram.status}, {engram.enforcement}, surfaced {engram.surfaced}, "
                f"followed {engram.followed}, ignored {engram.ignored}, "
                f"contradicted {engram.contradicted}, tags {engram.tags}"
            )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weeks", type=int, default=6)
    parser.add_argument("--sessions-per-day", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="write the report here as JSON")
    args = parser.parse_args()

    data = tempfile.mkdtemp(prefix="engram-loop-")
    os.environ.update(
        {
            "DATABASE_URL": f"sqlite:///{data}/engram.sqlite3",
            "ENGRAM_DATA_DIR": data,
            "REDIS_URL": "",
            "CELERY_TASK_ALWAYS_EAGER": "1",
            "ANTHROPIC_API_KEY": "",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
    os.environ.setdefault("SECRET_KEY", "engram-loop-bench-not-secret")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from memory.models import ApiToken

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create_user(username="loop")
    _, raw = ApiToken.issue(owner=owner, name="loop")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    with controlled_clock(start) as advance:
        report = replay(
            client=client,
            owner=owner,
            advance=advance,
            weeks=args.weeks,
            sessions_per_day=args.sessions_per_day,
            seed=args.seed,
        )
    print()
    print("| week | working | leech | hidden gem | noise | insufficient | proposals |")
    print("|---|---|---|---|---|---|---|")
    for row in report.weeks:
        print(
            f"| {row['week']} | {row['working']} | {row['leech']} | {row['hidden_gem']} | "
            f"{row['noise']} | {row['insufficient']} | {row['proposals']} |"
        )
    print()
    print(f"proposals made: {dict(report.proposals_made)}")
    print(f"proposals applied: {dict(report.proposals_applied)}")
    print(f"escalated: {report.escalated}; de-escalated: {report.deescalated}")
    print(
        f"injections with an outcome: {report.with_outcome}/{report.injections} "
        f"({report.outcome_share:.1%}); proposals on < 5 outcomes: {report.small_sample_proposals}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report.__dict__, default=dict, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
