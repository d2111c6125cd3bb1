"""`engram doctor [--project PATH]`: every reason Claude Code could be talking to no memory, one
line each with ok or FAIL and what to do. Exit code 0 only when every check passes.

Checks: the server answers at ENGRAM_URL; the token is valid; Engram's hooks are in the
project's (or the user's) Claude Code settings, or the plugin is enabled, and point at this
server; `engram-hook` is on PATH; the worker answers and the queue drains; the project's last
hook / lesson captured / injection (and whether its hooks still arrive); the embedder; the
transcript folders; the LLM key and today's spend.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from memory.cli.client import Server, ServerError
from memory.integrations import claude_settings as cs
from memory.integrations.hookclient import project_root

OK = "ok"
FAIL = "FAIL"
SKIP = "skip"
SETUP_HINT = "engram setup claude-code --project {project} --command, or install the plugin"


@dataclass(frozen=True)
class Result:
    name: str
    state: str  # ok | FAIL | skip (not checked because an earlier check failed)
    detail: str
    fix: str = ""

    @property
    def passed(self) -> bool:
        return self.state == OK

    def line(self) -> str:
        text = f"{self.state:<5} {self.name:<12} {self.detail}"
        return f"{text} → {self.fix}" if self.fix and not self.passed else text


def _when(value: Any) -> str:
    if not value:
        return "never"
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


@dataclass
class Context:
    server: Server
    project: Path
    home: Path
    env: Mapping[str, str]
    health: dict[str, Any] | None = None
    status: dict[str, Any] | None = None
    uses_commands: bool = True


def check_server(ctx: Context) -> Result:
    try:
        code, body = ctx.server.request("GET", "/healthz", auth=False)
    except ServerError as exc:
        return Result("server", FAIL, str(exc), "start it with `engram run`, or set ENGRAM_URL")
    checks = body.get("checks") if isinstance(body, dict) else None
    if not isinstance(checks, dict):
        return Result(
            "server",
            FAIL,
            f"{ctx.server.url} answered HTTP {code}, but it is not an Engram server",
            "set ENGRAM_URL to Engram's address",
        )
    ctx.health = checks
    down = [name for name, c in checks.items() if isinstance(c, dict) and not c.get("ok")]
    required_down = [name for name in down if name != "llm"]
    if code != 200 or required_down:
        return Result(
            "server",
            FAIL,
            f"{ctx.server.url} answers, but not ready: {', '.join(required_down) or code}",
            "see `GET /healthz` and the server's log",
        )
    return Result("server", OK, f"Engram answers at {ctx.server.url}")


def check_token(ctx: Context) -> Result:
    if not ctx.server.token:
        return Result(
            "token",
            FAIL,
            "ENGRAM_TOKEN is not set",
            "export ENGRAM_TOKEN=… (printed by the first `engram run`, or create one on the "
            "dashboard's Tokens page or with `engram setup claude-code`)",
        )
    query = {"cwd": str(ctx.project)}
    root = project_root(str(ctx.project))
    if root:
        query["root"] = root  # as engram-hook sends it
    try:
        code, body = ctx.server.request("GET", "/api/v1/status", query=query)
    except ServerError as exc:
        return Result("token", FAIL, str(exc), "start the server with `engram run`")
    if code == 401:
        return Result(
            "token",
            FAIL,
            "the server refused ENGRAM_TOKEN (unknown, mistyped or revoked)",
            "create a token on the dashboard's Tokens page or with `engram setup claude-code` "
            "and export ENGRAM_TOKEN",
        )
    if code != 200 or not isinstance(body, dict):
        return Result("token", FAIL, f"GET /api/v1/status answered HTTP {code}", "see its log")
    ctx.status = body
    token = body.get("token") or {}
    return Result(
        "token", OK, f"valid: “{token.get('name', '?')}” ({', '.join(token.get('scopes') or [])})"
    )


def settings_files(project: Path, home: Path) -> list[Path]:
    """Claude Code's settings files that apply to `project`, most specific first."""
    return [
        project / ".claude" / "settings.local.json",
        project / ".claude" / "settings.json",
        home / ".claude" / "settings.json",
    ]


def _load(path: Path) -> tuple[Any, str]:
    try:
        return json.loads(path.read_text(encoding="utf-8") or "{}"), ""
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as exc:
        return None, f"{path} could not be read ({exc})"


def check_hooks(ctx: Context) -> Result:
    hint = SETUP_HINT.format(project=ctx.project)
    found: dict[str, list[dict[str, Any]]] = {}
    plugin_in: Path | None = None
    problems: list[str] = []
    for path in settings_files(ctx.project, ctx.home):
        data, problem = _load(path)
        if problem:
            problems.append(problem)
        if data is None:
            continue
        for event, entries in cs.engram_hooks(data).items():
            found.setdefault(event, []).extend(entries)
        if plugin_in is None and cs.plugin_enabled(data):
            plugin_in = path
    env_url = ctx.env.get(cs.URL_ENV)
    if plugin_in is not None:
        return Result(
            "hooks",
            OK,
            f"the engram plugin is enabled ({plugin_in}); its hooks run engram-hook with ENGRAM_URL={ctx.server.url}",
        )
    if problems:
        return Result("hooks", FAIL, "; ".join(problems), "fix the JSON, then " + hint)
    missing = [e for e in cs.EVENTS if e not in found]
    if len(missing) == len(cs.EVENTS):
        where = ", ".join(str(p) for p in settings_files(ctx.project, ctx.home))
        return Result("hooks", FAIL, f"no Engram hooks in {where}", hint)
    if missing:
        return Result("hooks", FAIL, f"Engram hooks missing for {', '.join(missing)}", hint)
    elsewhere = sorted(
        {
            cs.hook_target(entry, env_url)
            for entries in found.values()
            for entry in entries
            if not cs.same_server(cs.hook_target(entry, env_url), ctx.server.url)
        }
    )
    if elsewhere:
        return Result(
            "hooks",
            FAIL,
            f"hooks post to {', '.join(elsewhere)}, not to {ctx.server.url}",
            f"run `engram setup claude-code --project {ctx.project} --url {ctx.server.url}` "
            "(or --command), or set ENGRAM_URL",
        )
    ctx.uses_commands = any(e.get("type") == "command" for es in found.values() for e in es)
    kind = "command" if ctx.uses_commands else "HTTP"
    return Result(
        "hooks", OK, f"{kind} hooks for all {len(cs.EVENTS)} events point at {ctx.server.url}"
    )


def check_hook_command(ctx: Context) -> Result:
    path = shutil.which(cs.COMMAND_NAME, path=ctx.env.get("PATH"))
    if path:
        return Result("engram-hook", OK, f"on PATH at {path}")
    if not ctx.uses_commands:
        return Result("engram-hook", OK, "not on PATH; not needed by HTTP hooks")
    return Result(
        "engram-hook",
        FAIL,
        "not on PATH, and the hooks run it",
        "install Engram with pipx (`pipx install …`) or add its bin folder to PATH",
    )


def check_worker(ctx: Context) -> Result:
    status = ctx.status or {}
    worker, queue = status.get("worker") or {}, status.get("queue") or {}
    if not worker.get("alive"):
        return Result(
            "worker",
            FAIL,
            f"no worker answers ({worker.get('detail', 'unknown')}); {queue.get('detail', '')}".rstrip(
                "; "
            ),
            "`engram run` starts one; look at its log if it keeps dying",
        )
    if queue.get("stuck"):
        return Result(
            "worker",
            FAIL,
            f"the worker answers but {queue.get('detail')}",
            "look at the worker's log",
        )
    return Result("worker", OK, f"{worker.get('detail')}; {queue.get('detail', 'queue unknown')}")


def check_project(ctx: Context) -> Result:
    status = ctx.status or {}
    scope = ctx.env.get(cs.SCOPE_ENV) or status.get("project_scope") or ""
    project = next((p for p in status.get("projects") or [] if p.get("scope") == scope), None)
    if project is None or not project.get("last_hook_at"):
        return Result(
            "project",
            OK,
            f"{scope or ctx.project}: no hook received yet; start a Claude Code session there",
        )
    health = project.get("health") or {}
    detail = (
        f"{scope}: last hook {_when(project.get('last_hook_at'))}, last lesson captured "
        f"{_when(project.get('last_capture_at'))}, last injection "
        f"{_when(project.get('last_injection_at'))}"
    )
    if health.get("state") == "stopped":
        return Result(
            "project",
            FAIL,
            f"{detail}; {health.get('reason', '')}",
            "fix the checks above, then start a session",
        )
    if health.get("state") == "quiet":
        detail += f" ({health.get('reason', '')})"
    return Result("project", OK, detail)


def check_embedder(ctx: Context) -> Result:
    embedder = (ctx.status or {}).get("embedder") or (ctx.health or {}).get("embedder") or {}
    if embedder.get("ok"):
        return Result("embedder", OK, str(embedder.get("detail", "ready")))
    return Result(
        "embedder",
        FAIL,
        str(embedder.get("detail", "not ready")),
        "see the server's log; `engram run` loads the model at start",
    )


def check_transcripts(ctx: Context) -> Result:
    root = ctx.home / ".claude" / "projects"
    if not root.exists():
        return Result(
            "transcripts",
            OK,
            f"{root} does not exist yet (Claude Code makes it on its first session)",
        )
    if not os.access(root, os.R_OK | os.X_OK):
        return Result(
            "transcripts", FAIL, f"{root} cannot be read", f"give your user read access to {root}"
        )
    unreadable = [
        p.name
        for p in sorted(root.iterdir())[:500]
        if p.is_dir() and not os.access(p, os.R_OK | os.X_OK)
    ]
    if unreadable:
        return Result(
            "transcripts",
            FAIL,
            f"cannot read {len(unreadable)} folder(s) in {root}: {', '.join(unreadable[:3])}",
            "fix their permissions",
        )
    return Result("transcripts", OK, f"{root} is readable (engram import-history reads it)")


def check_llm(ctx: Context) -> Result:
    llm = (ctx.status or {}).get("llm") or {}
    detail = str(llm.get("detail", "unknown"))
    if llm.get("key_set") and llm.get("last_failed"):
        return Result(
            "llm", FAIL, detail, "check ANTHROPIC_API_KEY and the network; fallbacks run meanwhile"
        )
    return Result("llm", OK, detail)


# (name, check, the checks it needs to have passed)
CHECKS: list[tuple[str, Callable[[Context], Result], tuple[str, ...]]] = [
    ("server", check_server, ()),
    ("token", check_token, ("server",)),
    ("hooks", check_hooks, ()),
    ("engram-hook", check_hook_command, ()),
    ("worker", check_worker, ("token",)),
    ("project", check_project, ("token",)),
    ("embedder", check_embedder, ("token",)),
    ("transcripts", check_transcripts, ()),
    ("llm", check_llm, ("token",)),
]


def doctor(
    *,
    project: Path,
    out: TextIO,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    url: str | None = None,
) -> int:
    """Run every check, print one line each; 0 only when all pass."""
    environ = os.environ if env is None else env
    ctx = Context(
        server=Server.from_env(environ, url=url),
        project=project.expanduser().absolute(),
        home=home or Path(environ.get("HOME") or Path.home()),
        env=environ,
    )
    results: dict[str, Result] = {}
    for name, check, needs in CHECKS:
        failed = [n for n in needs if not results[n].passed]
        result = Result(name, SKIP, f"not checked: {failed[0]} failed") if failed else check(ctx)
        results[name] = result
        print(result.line(), file=out, flush=True)
    bad = [r.name for r in results.values() if not r.passed]
    if bad:
        print(f"\n{len(bad)} check(s) did not pass: {', '.join(bad)}.", file=out)
        return 1
    print("\nEverything Engram needs is in place.", file=out)
    return 0
