"""Capture quality without a key, at the pure-function level (no database, no server).

    python bench/capture.py [--show fp|fn|task|mc-fp|mc-fn|real-fp|real-fn|real-fn-active|real-task]
                            [--json FILE] [--limit N]

Runs the fallback classifier and extractor (`memory.maths.learning.extract`, the same function
the capture task calls on a prompt or a transcript's user entry) over:

- the coding-prompts dev split (`../shared/eval-data/coding-prompts/dev.jsonl`, real prompts to
  coding agents, labelled by hand): rule recall (rule prompts with a draft, any tier; and with an
  active draft), precision of active drafts (tier A/B: they become active engrams with source
  `user`) and of all drafts, one-off tasks stored as active (task prompts with an active draft,
  share of task prompts);
- MemoryCode split into halves by a deterministic hash of the dialogue number (`dev` and
  `held-out`; rules may be written from what `--show mc-fp|mc-fn` prints, which is the dev half
  only; the held-out half is only ever scored, never printed): recall of stated instructions,
  precision of drafts (`bench/learning_eval.states`);
- the typed prompts of the real Claude Code transcripts (`$ENGRAM_TRANSCRIPTS/labels.jsonl`,
  labelled rule/task/question/feedback/other), split by repository: `dev` (`REAL_DEV_REPOS`;
  rules may be written from what `--show real-fp|real-fn|real-fn-active|real-task` prints, which
  is this part only, and the later dev corpora), `held_out` (every other repository: only ever scored, never
  printed), `dev_2`, `dev_3` and `dev_4` (`$ENGRAM_TRANSCRIPTS2`..`4`, default
  `/work/data/transcripts2`..`4`: later corpora of other repositories, labelled the same way;
  held out until round 6 (the second) and round 9 (the third and fourth), printed with the dev
  part since), `dev_6` (`$ENGRAM_TRANSCRIPTS6`, default `/work/data/transcripts6`: held out in
  rounds 9 to 12, dev since round 13; `dev_all` sums every dev part), `held_out_5`,
  `held_out_7` and `held_out_8` (`$ENGRAM_TRANSCRIPTS5`, `7`, `8`, default
  `/work/data/transcripts5` …: only scored); `held_out_all` sums every held-out part, and the
  `whole` the first corpus; the same figures as for the coding prompts;
- a transcript replay: MemoryCode held-out sessions as Claude Code JSONL (mentee turns as
  assistant entries) and, when `$ENGRAM_TRANSCRIPTS` (default `/work/data/transcripts`) holds
  `*.jsonl` files, the real transcripts there: drafts whose quote is not in a user entry
  (assistant or meta text stored as the user's);
- `dev-pairs.jsonl`: compatible pairs that `is_variant` would supersede (wrongly) and update
  pairs it catches. The service also supersedes on cosine ≥ 0.8 (`is_update`), which needs the
  embedder: not measured here;
- the classifier's cost per prompt (CPU time, best of 3 runs, p50/p95 over every prompt above).

Figures are per prompt or per draft, not per engram: recurrence promotion, merging and
supersession in the store are not replayed here (bench/learning.py does that through the hooks).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.learning_eval import dialogue_paths, sessions_of, states, transcript_lines
from memory.maths import learning
from memory.maths.learning.variants import plain_words

ROOT = Path(__file__).resolve().parent.parent
EVAL = (
    Path(os.environ["ENGRAM_EVAL_DATA"])
    if os.environ.get("ENGRAM_EVAL_DATA")
    else ROOT.parent / "shared" / "eval-data"
)
PROMPTS = EVAL / "coding-prompts" / "dev.jsonl"
PAIRS = EVAL / "coding-prompts" / "dev-pairs.jsonl"
TRANSCRIPTS = Path(os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"))
# A second real corpus, collected later from other repositories: held out as a whole.
TRANSCRIPTS2 = Path(os.environ.get("ENGRAM_TRANSCRIPTS2", "/work/data/transcripts2"))
TRANSCRIPTS3 = Path(os.environ.get("ENGRAM_TRANSCRIPTS3", "/work/data/transcripts3"))
TRANSCRIPTS4 = Path(os.environ.get("ENGRAM_TRANSCRIPTS4", "/work/data/transcripts4"))
TRANSCRIPTS5 = Path(os.environ.get("ENGRAM_TRANSCRIPTS5", "/work/data/transcripts5"))
TRANSCRIPTS6 = Path(os.environ.get("ENGRAM_TRANSCRIPTS6", "/work/data/transcripts6"))
TRANSCRIPTS7 = Path(os.environ.get("ENGRAM_TRANSCRIPTS7", "/work/data/transcripts7"))
TRANSCRIPTS8 = Path(os.environ.get("ENGRAM_TRANSCRIPTS8", "/work/data/transcripts8"))
# The real transcripts' dev part (its rows may be read); every other repository is held out.
REAL_DEV_REPOS = frozenset({"entireio/cli"})
ACTIVE = {learning.TIER_EXPLICIT, learning.TIER_CORRECTION}
# A draft states a labelled rule when it carries a third of the rule's plain words (the labels
# are rewritten as short imperatives, the drafts keep the user's words).
RULE_WORDS = 0.34
_WORDS = re.compile(r"[\w']+")


def memorycode_half(dialogue: int) -> str:
    """ "dev" or "held-out": the first byte of sha256 of the dialogue number, even or odd."""
    return "dev" if hashlib.sha256(str(dialogue).encode()).digest()[0] % 2 == 0 else "held-out"


def _timed_extract(text: str, costs: list[float]) -> list[learning.LessonDraft]:
    """The drafts of `text`; its classifier cost (CPU ms, the best of 3 runs: the machine is
    shared, and the best run is the one other processes disturbed least) goes to `costs`."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        learning.classify(text)
        best = min(best, time.process_time() - start)
    costs.append(best * 1000)
    return learning.extract(text)


def _states_rule(statement: str, rule: str) -> bool:
    words = plain_words(rule)
    return bool(words) and len(words & plain_words(statement)) / len(words) >= RULE_WORDS


def coding_prompts(
    costs: list[float], show: str, rows: list[dict] | None = None
) -> dict[str, object]:
    """Labelled prompts (coding-prompts rows, or real transcripts' labels.jsonl rows)."""
    return _summary(_tally(costs, show, rows))


def _tally(costs: list[float], show: str, rows: list[dict] | None = None) -> Counter[str]:
    """The counts behind `coding_prompts` (they add up over parts: see `real_prompts`)."""
    if rows is None:
        rows = [json.loads(line) for line in PROMPTS.open()]
    n: Counter[str] = Counter()
    for row in rows:
        # What the prompt hook learns from: the text without blocks the person did not type (an
        # editor's note of a file, a mentioned file's content), as `learning.user_words` cuts them.
        row.setdefault("prompt", learning.user_words(str(row.get("text", ""))))
        row.setdefault("kind", row.get("label", ""))
        row.setdefault("id", row.get("uuid", ""))
        drafts = _timed_extract(row["prompt"], costs)
        active = [d for d in drafts if d.tier in ACTIVE]
        is_rule = row["kind"] == "rule"
        n["prompts"] += 1
        n["tasks"] += row["kind"] == "task"
        if is_rule:
            n["rule_prompts"] += 1
            n["any_hit"] += bool(drafts)
            n["active_hit"] += bool(active)
            for rule in row["rules"]:
                n["rules_total"] += 1
                n["rules_found"] += any(_states_rule(d.statement, rule) for d in drafts)
            if show == "fn" and not drafts:
                print("FN", row["id"], repr(row["prompt"][:300]), row["rules"])
            if show == "fn-active" and drafts and not active:
                print("FN-C", row["id"], [d.statement for d in drafts], row["rules"])
        n["all_tp" if is_rule else "all_fp"] += len(drafts)
        n["active_tp" if is_rule else "active_fp"] += len(active)
        n["tasks_active"] += bool(row["kind"] == "task" and active)
        shown = show == "fp" or (show == "task" and row["kind"] == "task" and active)
        if shown and not is_rule:
            for d in drafts:
                print("FP", row["id"], row["kind"], d.tier, repr(d.statement))
    return n


def _summary(n: Counter[str]) -> dict[str, object]:
    active, every = n["active_tp"] + n["active_fp"], n["all_tp"] + n["all_fp"]
    return {
        "prompts": n["prompts"],
        "rule_prompts": n["rule_prompts"],
        "rule_recall_any_tier": round(n["any_hit"] / n["rule_prompts"], 3)
        if n["rule_prompts"]
        else None,
        "rule_recall_active": round(n["active_hit"] / n["rule_prompts"], 3)
        if n["rule_prompts"]
        else None,
        "rule_sentences_stated": f"{n['rules_found']}/{n['rules_total']}",
        "active_drafts": active,
        "precision_active": round(n["active_tp"] / active, 3) if active else None,
        "all_drafts": every,
        "precision_all": round(n["all_tp"] / every, 3) if every else None,
        "tasks_with_active_draft": f"{n['tasks_active']}/{n['tasks']}",
        "tasks_active_share": round(n["tasks_active"] / n["tasks"], 4) if n["tasks"] else None,
    }


def _repo(row: dict) -> str:
    """A label row's repository as `owner/name` (collections write it `owner__name` too)."""
    return str(row["repo"]).replace("__", "/", 1)


def real_prompts(costs: list[float], show: str) -> dict[str, object] | str:
    """The typed prompts of the real transcripts (`labels.jsonl`), split by repository: the
    dev part is `REAL_DEV_REPOS` (rules may be written from what `--show real-fp|real-fn`
    prints, which is this part only); the held-out part, every other repository, is only ever
    scored, never printed. The whole is the sum of both."""
    labels = TRANSCRIPTS / "labels.jsonl"
    if not labels.exists():
        return "absent"
    rows = [json.loads(line) for line in labels.open()]
    dev = _tally(costs, show, [r for r in rows if _repo(r) in REAL_DEV_REPOS])
    held_out = _tally(costs, "", [r for r in rows if _repo(r) not in REAL_DEV_REPOS])
    out: dict[str, object] = {
        "dev": _summary(dev),
        "held_out": _summary(held_out),
        "whole": _summary(dev + held_out),
    }
    every_held_out, every_dev = Counter(held_out), Counter(dev)
    # Later corpora: the second held out until round 6, the third and fourth until round 9 and
    # the sixth until round 12, dev since (printed with the dev part); the fifth, seventh and
    # eighth only ever scored.
    for name, folder, is_dev in (
        ("dev_2", TRANSCRIPTS2, True),
        ("dev_3", TRANSCRIPTS3, True),
        ("dev_4", TRANSCRIPTS4, True),
        ("held_out_5", TRANSCRIPTS5, False),
        ("dev_6", TRANSCRIPTS6, True),
        ("held_out_7", TRANSCRIPTS7, False),
        ("held_out_8", TRANSCRIPTS8, False),
    ):
        later = folder / "labels.jsonl"
        if not later.exists():
            continue
        more = _tally(costs, show if is_dev else "", [json.loads(line) for line in later.open()])
        out[name] = _summary(more)
        if is_dev:
            every_dev += more
        else:
            every_held_out += more
    if every_dev["prompts"] > dev["prompts"]:
        out["dev_all"] = _summary(every_dev)
    if every_held_out["prompts"] > held_out["prompts"]:
        out["held_out_all"] = _summary(every_held_out)
    return out


def memorycode(half: str, costs: list[float], limit: int, show: str) -> dict[str, object]:
    paths = [p for p in dialogue_paths() if memorycode_half(int(p.stem.split("_")[-1])) == half]
    if limit and limit < len(paths):  # evenly spread over the id range (lengths grow with it)
        paths = [paths[i * len(paths) // limit] for i in range(limit)]
    total = found = found_active = tp = fp = tp_active = fp_active = 0
    for path in paths:
        stated: list[str] = []
        for session in sessions_of(path):
            drafts: dict[str, learning.LessonDraft] = {}
            for role, text in session.turns:
                if role != "user":
                    continue
                for d in _timed_extract(text, costs):
                    drafts.setdefault(d.statement.casefold(), d)
            topics = [t for _, t in session.topics]
            stated.extend(topics)
            total += len(topics)
            for topic in topics:
                hits = [d for d in drafts.values() if states(d.statement, topic)]
                found += bool(hits)
                found_active += any(d.tier in ACTIVE for d in hits)
            for d in drafts.values():
                ok = any(states(d.statement, t) for t in stated)
                tp, fp = tp + ok, fp + (not ok)
                if d.tier in ACTIVE:
                    tp_active, fp_active = tp_active + ok, fp_active + (not ok)
                if show == "fp" and not ok:
                    print("MC-FP", session.dialogue, d.tier, repr(d.statement))
            if show == "fn":
                for topic in topics:
                    if not any(states(d.statement, topic) for d in drafts.values()):
                        print("MC-FN", session.dialogue, repr(topic))
    return {
        "dialogues": len(paths),
        "instructions": total,
        "recall_any_tier": round(found / total, 3) if total else None,
        "recall_active": round(found_active / total, 3) if total else None,
        "precision_all": round(tp / (tp + fp), 3) if tp + fp else None,
        "precision_active": round(tp_active / (tp_active + fp_active), 3)
        if tp_active + fp_active
        else None,
    }


def _replay(lines: list[str], humans: list[str] | None = None) -> tuple[int, int]:
    """(drafts, drafts whose quote is in no user entry — or, with `humans`, in no typed human
    prompt of the labels) for one transcript, as capture reads it (`parse_lines`, user entries)."""
    entries = learning.parse_lines(lines)
    users = [e.text for e in entries if e.kind == "user"]
    drafts = [d for text in users for d in learning.extract(text)]
    users = users if humans is None else humans
    # The quote's words all in one user entry (the quote is cleaned: typography, joined clauses)
    said = [set(_WORDS.findall(u.replace("\u2019", "'").casefold())) for u in users]
    foreign = sum(
        1
        for d in drafts
        if not any(set(_WORDS.findall(d.rationale.casefold())) <= words for words in said)
    )
    return len(drafts), foreign


def replays(limit: int) -> dict[str, object]:
    out: dict[str, object] = {}
    paths = [p for p in dialogue_paths() if memorycode_half(int(p.stem.split("_")[-1])) != "dev"]
    drafts = foreign = 0
    for path in paths[: limit or None]:
        for session in sessions_of(path):
            lines = transcript_lines(session, f"s{session.dialogue}-{session.number}", "/x")
            d, f = _replay(lines)
            drafts, foreign = drafts + d, foreign + f
    out["memorycode_held_out"] = {"drafts": drafts, "not_from_a_user_entry": foreign}
    files = sorted(TRANSCRIPTS.glob("*/*.jsonl")) if TRANSCRIPTS.is_dir() else []
    if files:
        typed: dict[str, list[str]] = {}
        labels = TRANSCRIPTS / "labels.jsonl"
        for line in labels.open() if labels.exists() else []:
            row = json.loads(line)
            # `file` is "<repo folder>/<session>.jsonl", or "<session>.jsonl" beside `repo`
            file = str(row["file"])
            if "/" not in file and row.get("repo"):
                file = f"{row['repo']}/{file}"
            typed.setdefault(file, []).append(row["text"])
        drafts = foreign = 0
        for file in files:
            humans = typed.get(f"{file.parent.name}/{file.name}") if typed else None
            d, f = _replay(file.read_text(errors="replace").splitlines(), humans)
            drafts, foreign = drafts + d, foreign + f
        out["real_transcripts"] = {
            "files": len(files),
            "drafts": drafts,
            "not_from_a_typed_human_prompt" if typed else "not_from_a_user_entry": foreign,
        }
    else:
        out["real_transcripts"] = f"absent ({TRANSCRIPTS})"
    return out


def pairs() -> dict[str, object]:
    rows = [json.loads(line) for line in PAIRS.open()]
    compatible = [r for r in rows if r["kind"] == "compatible"]
    updates = [r for r in rows if r["kind"] == "update"]
    wrong = [r for r in compatible if learning.is_variant(r["later"]["rule"], r["earlier"]["rule"])]
    caught = [r for r in updates if learning.is_variant(r["later"]["rule"], r["earlier"]["rule"])]
    return {
        "compatible_wrongly_superseded": f"{len(wrong)}/{len(compatible)}",
        "updates_caught_by_is_variant": f"{len(caught)}/{len(updates)}",
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--show",
        choices=[
            "fp",
            "fn",
            "task",
            "mc-fp",
            "mc-fn",
            "real-fp",
            "real-fn",
            "real-fn-active",
            "real-task",
        ],
        default="",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="MemoryCode dialogues per half")
    args = parser.parse_args()
    if not PROMPTS.exists():
        sys.exit(f"coding-prompts data not found at {PROMPTS}")
    costs: list[float] = []
    mc_show = args.show[3:] if args.show.startswith("mc-") else ""
    real_show = args.show[5:] if args.show.startswith("real-") else ""
    report: dict[str, object] = {
        "coding_prompts_dev": coding_prompts(costs, "" if mc_show or real_show else args.show),
        "memorycode_dev": memorycode("dev", costs, args.limit, mc_show),
        "real_transcript_prompts": real_prompts(costs, real_show),
        "memorycode_held_out": memorycode("held-out", costs, args.limit, ""),
        "replay": replays(args.limit),
        "pairs": pairs(),
        "classifier_cpu_ms": {
            "prompts": len(costs),
            "p50": round(_percentile(costs, 0.5), 3),
            "p95": round(_percentile(costs, 0.95), 3),
            "max": round(max(costs), 3),
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
