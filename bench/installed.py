"""What a user who installed Engram gets: real sessions replayed through the installed
`engram-hook` command against a running server, the way Claude Code calls it.

Everything is out of process, as on a user's machine: each hook event starts the command
`engram-hook` (the one `engram setup claude-code --command` writes into settings.json) with
the event's JSON on stdin, and it talks HTTP to `engram run`. A session's transcript is written
under `~/.claude/projects/<project folder>/<session>.jsonl` line by line as the replay goes, so
the Stop hook attaches the lines a live session would have. Per session, in transcript order:
SessionStart; for each prompt the person typed, UserPromptSubmit (a Stop before it when an
earlier turn ran); for each tool call, PreToolUse, then PostToolUse or PostToolUseFailure when
its result arrives; at the end Stop and SessionEnd. The replay does not wait between events
(a person is far slower), so the worker's capture runs behind it.

Prints, per event, the hook command's wall time (process start included, p50/p95), the
characters each event put into the agent's context (`additionalContext`), the share of prompts
and tool calls that got any, and at the end the project's engrams by status and source (REST).

    ENGRAM_URL=http://127.0.0.1:8000 ENGRAM_TOKEN=eng_… HOME=<the user's home> \\
        .venv/bin/python bench/installed.py /work/data/transcripts/obsessiondb__chkit \\
        --hook ~/.local/bin/engram-hook --cwd ~/code/chkit --sessions 20

Point HOME at the home the server reads transcripts under (its ENGRAM_TRANSCRIPT_DIRS default
is `~/.claude/projects`). The sessions are taken in file-time order of their first entry.
`--compare OTHER_HOOK` instead times PreToolUse through `--hook` and another hook command (an
older install) in turns and stops.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.maths import learning  # noqa: E402


def _first_time(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("timestamp"), str):
                return str(row["timestamp"])
    return ""


class Replay:
    def __init__(self, hook: str, cwd: str, home: Path, timeout: float) -> None:
        self.hook, self.cwd, self.timeout = hook, cwd, timeout
        self.folder = home / ".claude" / "projects" / cwd.replace("/", "-")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.times: dict[str, list[float]] = defaultdict(list)
        self.context: dict[str, list[int]] = defaultdict(list)
        self.failures: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = defaultdict(list)

    def call(self, event: str, body: dict[str, Any]) -> None:
        payload = {"hook_event_name": event, "cwd": self.cwd, **body}
        started = time.monotonic()
        try:
            done = subprocess.run(
                [self.hook],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            self.failures[f"{event}: timed out"] += 1
            return
        self.times[event].append((time.monotonic() - started) * 1000)
        if done.returncode != 0:
            self.failures[f"{event}: exit {done.returncode}"] += 1
        text = ""
        if done.stdout.strip():
            try:
                answer = json.loads(done.stdout)
            except ValueError:
                self.failures[f"{event}: stdout is not JSON"] += 1
                answer = {}
            specific = answer.get("hookSpecificOutput") or {}
            text = str(specific.get("additionalContext") or "")
        self.context[event].append(len(text))
        if text and len(self.examples[event]) < 3:
            self.examples[event].append(text[:400])

    def session(self, path: Path) -> None:
        lines = path.read_bytes().split(b"\n")
        sid = path.stem
        out = self.folder / f"{sid}.jsonl"
        out.write_bytes(b"")
        common = {"session_id": sid, "transcript_path": str(out)}
        self.call("SessionStart", {**common, "source": "startup"})
        tools: dict[str, tuple[str, Any]] = {}
        turns = 0
        with out.open("ab") as handle:
            for number, raw in enumerate(lines, start=1):
                if not raw.strip():
                    continue
                entries = learning.parse_line(raw, number=number)
                prompts = [e for e in entries if e.kind == "user" and not e.queued]
                if prompts:
                    if turns:
                        self.call("Stop", {**common, "stop_hook_active": False})
                    turns += 1
                    self.call("UserPromptSubmit", {**common, "prompt": prompts[0].text})
                handle.write(raw + b"\n")
                handle.flush()
                for entry in entries:
                    if entry.kind == "tool_use":
                        tool_input = _json(entry.tool_input)
                        tools[entry.tool_id] = (entry.tool, tool_input)
                        self.call(
                            "PreToolUse",
                            {
                                **common,
                                "tool_name": entry.tool,
                                "tool_input": tool_input,
                                "tool_use_id": entry.tool_id,
                            },
                        )
                    elif entry.kind == "tool_result" and entry.tool_id in tools:
                        name, tool_input = tools.pop(entry.tool_id)
                        event = "PostToolUseFailure" if entry.is_error else "PostToolUse"
                        result = (
                            {"error": entry.text}
                            if entry.is_error
                            else {"tool_response": entry.text[:4000]}
                        )
                        self.call(
                            event,
                            {
                                **common,
                                "tool_name": name,
                                "tool_input": tool_input,
                                "tool_use_id": entry.tool_id,
                                **result,
                            },
                        )
        self.call("Stop", {**common, "stop_hook_active": False})
        self.call("SessionEnd", {**common, "reason": "exit"})


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _p(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def compare(hooks: list[str], cwd: str, calls: int) -> None:
    """Wall time of a PreToolUse through each hook command, taking turns (load falls on all)."""
    times: dict[str, list[float]] = {hook: [] for hook in hooks}
    for index in range(calls):
        payload = {
            "hook_event_name": "PreToolUse",
            "session_id": f"bench-latency-{index}",
            "cwd": cwd,
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": f"toolu_{index}",
        }
        for hook in hooks:
            started = time.monotonic()
            subprocess.run(
                [hook], input=json.dumps(payload).encode(), capture_output=True, check=False
            )
            times[hook].append((time.monotonic() - started) * 1000)
    print(f"| hook command ({calls} PreToolUse calls each, in turn) | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    for hook, values in times.items():
        print(f"| {hook} | {_p(values, 0.5):.0f} | {_p(values, 0.95):.0f} |")


def engrams(url: str, token: str, scope: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = ""
    while True:
        query = {"scope": scope, "limit": "200", **({"cursor": cursor} if cursor else {})}
        request = urllib.request.Request(
            f"{url.rstrip('/')}/api/v1/engrams?{urllib.parse.urlencode(query)}",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            page = json.load(response)
        found += page["items"]
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder of <session>.jsonl transcripts")
    parser.add_argument("--hook", default="engram-hook", help="the installed engram-hook")
    parser.add_argument("--cwd", required=True, help="the project folder the sessions ran in")
    parser.add_argument("--sessions", type=int, default=0, help="at most this many (0: all)")
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=60.0, help="seconds to let capture end")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="HOOK",
        help="time PreToolUse through --hook and this other hook command (e.g. an older "
        "install), taking turns, then stop",
    )
    parser.add_argument("--calls", type=int, default=60, help="PreToolUse calls for --compare")
    args = parser.parse_args()
    url, token = os.environ.get("ENGRAM_URL", ""), os.environ.get("ENGRAM_TOKEN", "")
    if not (url and token):
        parser.error("set ENGRAM_URL and ENGRAM_TOKEN (what `engram run` printed)")
    if args.compare:
        compare([args.hook, *args.compare], args.cwd, args.calls)
        return
    files = sorted(args.folder.glob("*.jsonl"), key=_first_time)
    files = files[: args.sessions] if args.sessions else files
    replay = Replay(args.hook, args.cwd, Path.home(), args.timeout)
    started = time.monotonic()
    for index, path in enumerate(files, start=1):
        replay.session(path)
        print(f"[{index}/{len(files)}] {path.name}", file=sys.stderr)
    wall = time.monotonic() - started
    time.sleep(args.settle)
    print(f"{len(files)} sessions replayed in {wall:.0f} s through {args.hook}")
    print("| event | calls | p50 ms | p95 ms | with context | context chars (mean) |")
    print("|---|---:|---:|---:|---:|---:|")
    for event, times in sorted(replay.times.items()):
        sizes = replay.context[event]
        given = sum(1 for n in sizes if n)
        share = f"{given} ({given / len(sizes):.1%})" if sizes else "0"
        mean = statistics.fmean(sizes) if sizes else 0.0
        print(
            f"| {event} | {len(times)} | {_p(times, 0.5):.0f} | {_p(times, 0.95):.0f} | "
            f"{share} | {mean:.1f} |"
        )
    if replay.failures:
        print("failures:", dict(replay.failures))
    from memory.maths.projects import project_name

    scope = f"project:{project_name(args.cwd)}"
    kept = engrams(url, token, scope)
    print(f"{scope}: {len(kept)} engrams")
    print(json.dumps(Counter(f"{e['status']}/{e['source']}" for e in kept), sort_keys=True))
    for e in kept:
        print(f"  [{e['status']}, {e['source']}] {e['statement'][:160]}")
    for event, texts in replay.examples.items():
        for text in texts:
            print(f"--- {event}:\n{text}")


if __name__ == "__main__":
    main()
