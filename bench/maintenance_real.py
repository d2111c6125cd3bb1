"""Maintenance on real use: real Claude Code transcripts replayed through every hook, then the
daily job, then the proposals a person would be asked to review (issue #26 item 7).

Each folder under --transcripts (default $ENGRAM_TRANSCRIPTS, else /work/data/transcripts;
`<owner>__<repo>/*.jsonl`, kept outside the repository) is a project; each person who worked on
it (the home folder of the sessions' cwd) is one Engram owner, as a local-first install is one
person's (`--per-repository`: the whole folder is one owner, as rounds 4-7 ran it).
Their sessions are replayed oldest first, each as Claude Code would have sent it:
SessionStart with the transcript's cwd, then in transcript order every typed prompt
(UserPromptSubmit) and every tool call (PreToolUse, then PostToolUse or PostToolUseFailure with
its real input and result), then Stop. The transcript file the hooks name grows as the session
does: at each hook it holds the lines written up to that moment (a copy under a temporary
folder that is the server's ENGRAM_TRANSCRIPT_DIRS). Tasks run in-process (eager), no LLM key:
capture, attribution and outcomes are the fallbacks most users get.

Then the daily job (`maintenance.maintain_all`: the 30-day archive, then maintenance) runs
once now and once 31 days later (with `--daily` also after each day's last session, as the
daily job would have while the person worked), and the bench prints, per owner, what was
stored (active rules by source, candidates), what PreToolUse delivered (each lesson, at how
many tool calls and sessions, and the first tool input it matched) and every maintenance
proposal with its engram's
statement, who stated it, its outcomes and the proposal's reason. `--proposals FILE` writes
them as JSON lines for labelling; `--labels FILE` (default bench/labels/maintenance_real.jsonl:
{"owner", "corpus", "text", "change", "label": "useful" | "not", "why"}) reads the hand labels
back and prints, for this run's proposals, how many are labelled and the share a careful user
would accept. The labels cover every proposal of the seven real corpora (run with the default
folder, with a folder linking every repository folder of /work/data/transcripts2 and
/work/data/transcripts3, with /work/data/transcripts4, /work/data/transcripts5,
/work/data/transcripts6 and /work/data/transcripts7; `--review --daily`, per person and
`--per-repository`, in rounds 8 to 10; per person in rounds 11 and 12). A proposal that a
newer one replaced before anyone decided it (decision `withdrawn`) is left out: it is not in the
queue a person sees.

    .venv/bin/python bench/maintenance_real.py [--limit-sessions N] [--proposals FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.hookpost import post_hook  # noqa: E402

TRANSCRIPTS = Path(os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"))
LABELS = ROOT / "bench" / "labels" / "maintenance_real.jsonl"
HOOK = "/api/v1/hooks/claude-code"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bootstrap(database_url: str | None, served: Path) -> None:
    data = tempfile.mkdtemp(prefix="engram-maintenance-real-")
    os.environ.update(
        {
            "DATABASE_URL": database_url or f"sqlite:///{data}/engram.sqlite3",
            "ENGRAM_DATA_DIR": data,
            "REDIS_URL": "",
            "CELERY_TASK_ALWAYS_EAGER": "1",
            "ANTHROPIC_API_KEY": "",
            "LOG_LEVEL": "WARNING",
            "ENGRAM_TRANSCRIPT_DIRS": str(served),
        }
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
    os.environ.setdefault("SECRET_KEY", "engram-maintenance-real-bench-not-secret")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)


def _started(lines: list[bytes]) -> datetime | None:
    for raw in lines:
        try:
            row = json.loads(raw)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("timestamp"):
            try:
                return datetime.fromisoformat(str(row["timestamp"]).replace("Z", "+00:00"))
            except ValueError:
                return None
    return None


def _cwd(lines: list[bytes], folder: str) -> str:
    for raw in lines:
        try:
            row = json.loads(raw)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("cwd"):
            return str(row["cwd"])
    return f"/work/{folder}"


def events(
    lines: list[bytes], replayed: set[str] | None = None
) -> list[tuple[int, str, dict[str, Any]]]:
    """(line number, hook event, fields) in transcript order: typed prompts and tool calls.

    `replayed` holds the entry uuids of the owner's sessions replayed before: a resumed or
    forked session's file starts with a copy of the earlier history (uuids kept), which Claude
    Code never sends to the hooks again, so those entries are skipped (and the new ones added)."""
    from memory.maths import learning

    entries = learning.parse_lines(lines)
    if replayed is not None:
        fresh = [e for e in entries if not (e.uuid and e.uuid in replayed)]
        replayed.update(e.uuid for e in entries if e.uuid)
        entries = fresh
    results = {e.tool_id: e for e in entries if e.kind == "tool_result"}
    out: list[tuple[int, str, dict[str, Any]]] = []
    for entry in entries:
        if entry.kind == "user" and not entry.queued:  # a queued one reaches no prompt hook
            out.append((entry.line, "prompt", {"prompt": entry.text}))
        elif entry.kind == "tool_use":
            try:
                tool_input = json.loads(entry.tool_input)
            except ValueError:
                tool_input = {}
            result = results.get(entry.tool_id)
            out.append(
                (
                    result.line if result else entry.line,
                    "tool",
                    {
                        "tool_name": entry.tool,
                        "tool_input": tool_input if isinstance(tool_input, dict) else {},
                        "output": result.text if result else "",
                        "error": bool(result and result.is_error),
                    },
                )
            )
    return sorted(out, key=lambda item: item[0])


RULE_WORDS = 0.34  # as bench/capture.py: a statement states a labelled rule


def states_a_rule(statement: str, rules: list[str]) -> bool:
    """Whether `statement` says one of a prompt's labelled rules (a third of its plain words)."""
    from memory.maths.learning import plain_words

    said = plain_words(statement)
    return any(
        (words := plain_words(rule)) and len(words & said) / len(words) >= RULE_WORDS
        for rule in rules
    )


def review_like_the_labels(owner: Any, labels: dict[str, tuple[str, list[str]]]) -> Counter[str]:
    """A careful reviewer who answers each waiting candidate as the hand labels read the words
    it came from: "keep as a rule" (approve) when that prompt is labelled `rule` and the
    candidate says one of its labelled rules, "wrong" when it is another part of such a prompt
    (a fragment that is not the rule), "it was a one-off" otherwise. Candidates from no labelled
    prompt (error → fix pairs, the dialectic) are left waiting: the labels say nothing of them."""
    from memory.models import LearningDraft, ReviewItem
    from memory.services import review

    answered: Counter[str] = Counter()
    waiting = list(
        ReviewItem.objects.filter(
            owner=owner, kind=ReviewItem.Kind.CANDIDATE, state=ReviewItem.State.PENDING
        ).select_related("engram")
    )
    found: dict[int, tuple[str, list[str]]] = {}
    for engram_id, uuid, text in LearningDraft.objects.filter(
        engram__in=[item.engram_id for item in waiting]
    ).values_list("engram_id", "entry_uuid", "signal__text"):
        label = labels.get(uuid) or labels.get(" ".join(text.split()))
        if label:
            found.setdefault(engram_id, label)
    for item in waiting:
        label, rules = found.get(item.engram_id, ("", []))
        if not label:
            continue
        if label != "rule":
            action = "one_off"
        elif not rules or states_a_rule(item.engram.statement if item.engram else "", rules):
            action = "approve"
        else:
            action = "wrong"
        review.review_decide(owner=owner, item=item, action=action, actor="person:bench")
        answered[action] += 1
    return answered


def corpus_labels(folder: Path) -> dict[str, tuple[str, list[str]]]:
    """Hand labels (label, rules) of the corpus holding `folder`, by entry uuid and by the
    prompt's words."""
    path = folder.resolve().parent / "labels.jsonl"
    found: dict[str, tuple[str, list[str]]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            label = (str(row["label"]), [str(r) for r in row.get("rules") or []])
            found[str(row["uuid"])] = label
            found[" ".join(str(row["text"]).split())] = label
    return found


_HOME = re.compile(r"^(?:/Users|/home)/([^/]+)")


def people(folder: Path, per_repository: bool) -> dict[str, list[Path]]:
    """The folder's transcripts by the person whose machine ran them (the home folder of the
    session's cwd: `/Users/<name>`, `/home/<name>`), each an Engram owner named
    `<folder>~<name>`: Engram is local-first, one person's install, so one developer's rules
    never reach a colleague's sessions. `per_repository` makes the whole folder one owner."""
    found: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        home = _HOME.match(_cwd(path.read_bytes()[:200_000].split(b"\n"), folder.name))
        name = folder.name if per_repository or not home else f"{folder.name}~{home[1]}"
        found.setdefault(name[:150], []).append(path)
    return found


def replay_owner(
    folder: Path,
    served: Path,
    limit: int,
    labels: dict[str, tuple[str, list[str]]] | None = None,
    daily: Callable[[Any], None] | None = None,
    name: str = "",
    paths: list[Path] | None = None,
) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from memory.models import ApiToken

    owner = get_user_model().objects.create_user(username=(name or folder.name)[:150])
    _, raw = ApiToken.issue(owner=owner, name="bench")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    files = []
    for path in paths if paths is not None else sorted(folder.glob("*.jsonl")):
        lines = path.read_bytes().split(b"\n")
        files.append((str(_started(lines) or "9999"), path, lines))
    files.sort(key=lambda item: item[0])
    if limit:
        files = files[:limit]
    prompts = calls = 0
    answered: Counter[str] = Counter()
    replayed: set[str] = set()
    from memory.services import delivery

    for number, (_, path, lines) in enumerate(files):
        sid = f"{folder.name}-{number}-{path.stem}"[:200]
        cwd = _cwd(lines, folder.name)
        copy = served / folder.name / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(b"")
        written = [0]  # lines of the transcript in the copy so far

        def post(
            event: str,
            upto: int,
            copy: Path = copy,
            lines: list[bytes] = lines,
            sid: str = sid,
            cwd: str = cwd,
            written: list[int] = written,
            **fields: Any,
        ) -> None:
            if upto > written[0]:
                with copy.open("ab") as handle:
                    handle.write(b"".join(line + b"\n" for line in lines[written[0] : upto]))
                written[0] = upto
            body = {
                "hook_event_name": event,
                "session_id": sid,
                "cwd": cwd,
                "transcript_path": str(copy),
                **fields,
            }
            answer = post_hook(client, HOOK, body)
            if answer.status_code != 200:
                raise SystemExit(f"{event} answered {answer.status_code}: {answer.content[:300]!r}")

        post("SessionStart", 0, source="startup")
        for line, kind, fields in events(lines, replayed):
            if kind == "prompt":
                prompts += 1
                post("UserPromptSubmit", line, prompt=fields["prompt"])
                continue
            calls += 1
            base = {"tool_name": fields["tool_name"], "tool_input": fields["tool_input"]}
            post("PreToolUse", line - 1, **base)
            if fields["error"]:
                post("PostToolUseFailure", line, **base, error=fields["output"][:20_000])
            else:
                post("PostToolUse", line, **base, tool_response=fields["output"][:20_000])
        post("Stop", len(lines), last_assistant_message="Done.")
        # A real next session starts minutes later, past the tool lessons' cache (10 s): a
        # replay that runs sessions back to back must not depend on this machine's speed.
        delivery.cache_clear()
        if labels is not None:
            answered.update(review_like_the_labels(owner, labels))
        day = files[number][0][:10]
        if daily is not None and (number + 1 == len(files) or files[number + 1][0][:10] != day):
            daily(owner)  # the last session of a day: the daily job runs
    out = {"owner": owner, "sessions": len(files), "prompts": prompts, "calls": calls}
    if labels is not None:
        out["reviewed"] = dict(answered)
    return out


def tool_time(owner: Any) -> list[tuple[str, int, int, str]]:
    """What PreToolUse delivered in the replay: per lesson, its statement, how many tool calls
    it was delivered at, in how many sessions, and the first tool input that matched."""
    from memory.models import Injection

    rows = (
        Injection.objects.filter(owner=owner, bucket=Injection.Bucket.REMINDER)
        .order_by("pk")
        .values_list("engram__statement", "session_id", "query")
    )
    by: dict[str, tuple[int, set[Any], str]] = {}
    for statement, session, query in rows:
        times, sessions, first = by.get(statement, (0, set(), query))
        by[statement] = (times + 1, sessions | {session}, first)
    return [(st, n, len(ss), q) for st, (n, ss, q) in by.items()]


def stored(owner: Any) -> dict[str, Any]:
    from memory.models import Engram

    rows = Engram.objects.for_owner(owner)
    return {
        "active": dict(Counter(rows.filter(status="active").values_list("source", flat=True))),
        "candidates": rows.filter(status="candidate").count(),
        "active_statements": list(
            rows.filter(status="active").values_list(
                "source", "statement", "followed", "ignored", "contradicted", "irrelevant"
            )[:40]
        ),
    }


def proposals(owner: Any, made: list[Any]) -> list[dict[str, Any]]:
    out = []
    for item in made:
        engram = item.engram
        out.append(
            {
                "owner": owner.get_username(),
                "action": str(item.payload.get("action", "")),
                "change": str(item.payload.get("change", "")),
                "text": engram.statement if engram else "",
                "source": engram.source if engram else "",
                "outcomes": {
                    "followed": engram.followed,
                    "contradicted": engram.contradicted,
                    "ignored": engram.ignored,
                    "irrelevant": engram.irrelevant,
                }
                if engram
                else {},
                "delivered_outcomes": item.payload.get("evidence", {}).get("delivered_outcomes"),
                "reason": item.reason[:300],
            }
        )
    return out


def labels_summary(path: Path, made: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The hand labels of this run's proposals (matched by owner, change and text): how many
    are labelled, and the share of those a careful user would accept."""
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    # An owner is a repository folder, or one person of it (`<folder>~<name>`): a label given
    # to the same change of the same statement in that folder holds whichever way it was run.
    labels = {(r["owner"], r["change"], r["text"]): r["label"] for r in rows}
    by_folder = {(r["owner"].split("~")[0], r["change"], r["text"]): r["label"] for r in rows}
    found = [
        labels.get((p["owner"], p["change"], p["text"]))
        or by_folder.get((p["owner"].split("~")[0], p["change"], p["text"]))
        for p in made
    ]
    labelled = [label for label in found if label]
    useful = labelled.count("useful")
    return {
        "proposals": len(made),
        "labelled": len(labelled),
        "useful": useful,
        "share": round(useful / len(labelled), 3) if labelled else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--limit-sessions", type=int, default=0, help="per owner (0: all)")
    parser.add_argument("--proposals", type=Path, help="write the proposals here (JSON lines)")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument(
        "--review",
        action="store_true",
        help="after each session, answer the waiting candidates as the corpus's labels.jsonl reads "
        "their prompts (a careful reviewer): keep the candidates that say a labelled rule, call the "
        "rest of a rule prompt wrong and everything else a one-off",
    )
    parser.add_argument(
        "--daily",
        action="store_true",
        help="run the maintenance job after each day's last session (by the transcripts' dates), "
        "as the daily job would, besides once at the end; proposals left open are not made twice",
    )
    parser.add_argument(
        "--per-repository",
        action="store_true",
        help="replay each repository folder as one owner (rounds 4-7), not one owner per person",
    )
    args = parser.parse_args()
    folders = sorted(p for p in args.transcripts.glob("*") if p.is_dir() and any(p.glob("*.jsonl")))
    if not folders:
        print(f"skipped: no transcripts under {args.transcripts} (set --transcripts)")
        return 0
    served = Path(tempfile.mkdtemp(prefix="engram-served-"))
    try:
        bootstrap(args.database_url, served)
        from django.utils import timezone

        from memory.models import ReviewItem
        from memory.services import maintenance

        written: list[dict[str, Any]] = []
        tool_total = [0, 0]  # PreToolUse deliveries, lessons delivered
        owners = [
            (folder, name, paths)
            for folder in folders
            for name, paths in people(folder, args.per_repository).items()
        ]
        for folder, name, paths in owners:
            made: list[Any] = []
            replayed = replay_owner(
                folder,
                served,
                args.limit_sessions,
                corpus_labels(folder) if args.review else None,
                (lambda owner, made=made: made.extend(maintenance.maintain(owner=owner)))
                if args.daily
                else None,
                name=name,
                paths=paths,
            )
            owner = replayed.pop("owner")
            kept = stored(owner)
            made += maintenance.maintain(owner=owner)
            later = timezone.now() + timedelta(days=31)
            maintenance.archive_stale(owner=owner, now=later)
            made += maintenance.maintain(owner=owner, now=later)
            # A proposal a newer one replaced before anyone decided it is not in the queue.
            withdrawn = set(
                ReviewItem.objects.filter(
                    pk__in=[item.pk for item in made], decision=maintenance.WITHDRAWN
                ).values_list("pk", flat=True)
            )
            made = [item for item in made if item.pk not in withdrawn]
            if withdrawn:
                replayed["withdrawn"] = len(withdrawn)
            found = proposals(owner, made)
            written.extend(found)
            print(f"\n== {name}: {json.dumps(replayed)}")
            print(f"   stored: active by source {kept['active']}, candidates {kept['candidates']}")
            for source, statement, *outcomes in kept["active_statements"]:
                counts = "/".join(
                    str(n) for n in outcomes
                )  # followed/ignored/contradicted/irrelevant
                print(f"   [{source}] {statement[:110]}  ({counts})")
            delivered_at_tools = tool_time(owner)
            tool_total[0] += sum(n for _, n, _, _ in delivered_at_tools)
            tool_total[1] += len(delivered_at_tools)
            for statement, times, in_sessions, first in delivered_at_tools:
                print(
                    f"   [at tool time: {times} call(s), {in_sessions} session(s)] "
                    f"{statement[:110]}  <- {first[:80]!r}"
                )
            print(f"   proposals: {len(found)} {dict(Counter(p['change'] for p in found))}")
            for p in found:
                print(f"   - {p['action']}/{p['change']}: {p['text'][:90]!r} ({p['source']})")
                print(f"       {p['reason'][:160]}")
        print(f"\nproposals in all: {len(written)}")
        print(
            f"delivered at tool time (PreToolUse): {tool_total[0]} call(s), {tool_total[1]} lesson(s)"
        )
        if args.proposals:
            args.proposals.write_text("".join(json.dumps(p) + "\n" for p in written))
        summary = labels_summary(args.labels, written)
        if summary:
            print(f"hand labels ({args.labels.name}): {json.dumps(summary)}")
    finally:
        shutil.rmtree(served, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
