"""`engram-hook`: a Claude Code command hook that forwards the payload to Engram.

Standard library only, so it starts fast and runs from any Python >= 3.8 on the machine. Reads
the hook payload from stdin, POSTs it to /api/v1/hooks/claude-code and prints the JSON answer.
When the server is down, slow or answers with an error, it prints nothing and exits 0 within
its timeout: the agent is never blocked by its memory.

Environment: ENGRAM_URL (default http://127.0.0.1:8000), ENGRAM_TOKEN, ENGRAM_HOOK_TIMEOUT
(seconds, default 3), ENGRAM_SCOPE (optional, sent as ?scope=), ENGRAM_HOOK_STATE (folder for
per-session transcript offsets, default ~/.cache/engram-hook).

At Stop, PreCompact and SessionEnd it attaches the transcript lines written since its last
successful post (`engram_transcript`: byte offset and lines), so a server on another machine
learns from them too; the server ignores what it already has.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import signal
import sys
import time
import urllib.parse
from typing import IO

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_SECONDS = 3.0
HOOK_PATH = "/api/v1/hooks/claude-code"
MAX_STDIN_BYTES = 4 * 1024 * 1024
MAX_RESPONSE_BYTES = 1024 * 1024
TRANSCRIPT_EVENTS = frozenset({"Stop", "PreCompact", "SessionEnd"})
TRANSCRIPT_FIELD = "engram_transcript"
MAX_ATTACH_BYTES = 512 * 1024


def _timeout(env: dict[str, str]) -> float:
    try:
        value = float(env.get("ENGRAM_HOOK_TIMEOUT", "") or DEFAULT_TIMEOUT_SECONDS)
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS
    return value if 0 < value <= 600 else DEFAULT_TIMEOUT_SECONDS


def endpoint(env: dict[str, str]) -> str:
    base = (env.get("ENGRAM_URL") or DEFAULT_URL).rstrip("/")
    url = base + HOOK_PATH
    scope = env.get("ENGRAM_SCOPE", "").strip()
    if scope:
        url += "?" + urllib.parse.urlencode({"scope": scope})
    return url


def _state_folder(env: dict[str, str]) -> str:
    return env.get("ENGRAM_HOOK_STATE") or os.path.join(
        os.path.expanduser("~"), ".cache", "engram-hook"
    )


def _state_file(env: dict[str, str], session_id: str) -> str:
    folder = _state_folder(env)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in session_id)[:150]
    return os.path.join(folder, safe + ".offset")


def _read_offset(path: str) -> int:
    try:
        with open(path) as handle:
            return max(0, int(handle.read().strip() or 0))
    except (OSError, ValueError):
        return 0


def attach_transcript(data: dict, env: dict[str, str]) -> tuple[str, int] | None:  # type: ignore[type-arg]
    """Add the transcript lines since the last post to `data`; (state file, new offset) to
    write once the server has them, or None when there is nothing to attach."""
    path, session_id = data.get("transcript_path"), data.get("session_id")
    if data.get("hook_event_name") not in TRANSCRIPT_EVENTS:
        return None
    if not isinstance(path, str) or not isinstance(session_id, str) or not session_id:
        return None
    state = _state_file(env, session_id)
    offset = _read_offset(state)
    try:
        with open(path, "rb") as handle:
            if offset > os.fstat(handle.fileno()).st_size:
                offset = 0  # the file was rewritten shorter: its lines are all new
            handle.seek(offset)
            chunk = handle.read(MAX_ATTACH_BYTES)
    except OSError:
        return None
    end = chunk.rfind(b"\n")
    if end < 0:
        return None
    lines = [line.decode("utf-8", "replace") for line in chunk[:end].split(b"\n")]
    data[TRANSCRIPT_FIELD] = {"offset": offset, "lines": lines}
    return state, offset + end + 1


def _write_offset(state: str, offset: int) -> None:
    try:
        os.makedirs(os.path.dirname(state), exist_ok=True)
        with open(state, "w") as handle:
            handle.write(str(offset))
    except OSError:
        pass


RETRY_MARGIN_S = 0.2  # a retry must leave this much of the timeout for the request itself


def _retry_after(headers: dict[str, str]) -> float | None:
    """Seconds a 429 asks to wait (Retry-After in seconds), or None when absent or unusable."""
    try:
        value = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    return value if 0 <= value <= 600 else None


_PROXY_VARIABLES = (
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
)


def http_request(
    method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float, limit: int
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, at most `limit` bytes of body) of one request.

    A plain http URL goes through http.client alone: urllib's opener builds a TLS context and
    loads the system's CA store on every call (tens of ms, on every tool call of a session).
    With a proxy set in the environment, urllib does it (it honours the proxy settings)."""
    if any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return _urllib_request(method, url, body, headers, timeout, limit)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    https = parts.scheme == "https"
    kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
    # the port always given: a bare IPv6 host ("::1") would otherwise be read as host:port
    connection = kind(parts.hostname, parts.port or (443 if https else 80), timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, target, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read(limit)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        connection.close()


def _urllib_request(
    method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float, limit: int
) -> tuple[int, dict[str, str], bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(limit)
            return response.status, {k.lower(): v for k, v in response.headers.items()}, data
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in (exc.headers or {}).items()}, b""


RULES_FIELD = "engram_rules"
MAX_RULE_FILE_BYTES = 64 * 1024
MAX_RULES = 200


def attach_rules(data: dict[str, object]) -> None:
    """At SessionStart, send the project's own rules (CLAUDE.md, .claude/rules/**/*.md under
    the session's cwd): the server leaves out what they already say. This runs where the files
    are, so a server on another machine gets them too."""
    from memory.maths.textnorm import rule_lines

    cwd = data.get("cwd")
    if data.get("hook_event_name") != "SessionStart" or not isinstance(cwd, str) or not cwd:
        return
    root = os.path.abspath(cwd)
    files = [os.path.join(root, "CLAUDE.md")]
    rules_dir = os.path.join(root, ".claude", "rules")
    for folder, _, names in sorted(os.walk(rules_dir)):
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
    lines: list[str] = []
    for path in files:
        try:
            with open(path, "rb") as handle:
                text = handle.read(MAX_RULE_FILE_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        lines += [line for line in rule_lines(text) if line not in lines]
    if lines:
        data[RULES_FIELD] = lines[:MAX_RULES]


ROOT_FIELD = "engram_project_root"
GIT_SECONDS = 1.0


def project_root(cwd: str) -> str:
    """The main folder of the git checkout `cwd` is in: the parent of git's common directory,
    so every worktree and subfolder of one repository names the same project; "" outside git
    (or without git, or when it is slow)."""
    import subprocess  # here: most hook calls find the root cached and never start git

    try:
        done = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            text=True,
            timeout=GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return ""
    common = done.stdout.strip() if done.returncode == 0 else ""
    if not common or "\n" in common:
        return ""
    if os.path.basename(common.rstrip("/\\")) == ".git":
        return os.path.dirname(common.rstrip("/\\"))
    return common  # a bare repository: its own folder


ROOT_CACHE_SECONDS = 3600.0


def _cached_root(env: dict[str, str], cwd: str) -> str:
    """project_root, remembered per folder for an hour in the state folder: every hook event
    would otherwise start git (a few ms on the tool-call path)."""
    folder = os.path.join(_state_folder(env), "roots")
    path = os.path.join(folder, hashlib.sha1(cwd.encode("utf-8", "replace")).hexdigest())
    try:
        if time.time() - os.path.getmtime(path) < ROOT_CACHE_SECONDS:
            with open(path, encoding="utf-8") as handle:
                return handle.read().strip()
    except (OSError, ValueError):
        pass
    root = project_root(cwd)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(root)
    except OSError:
        pass  # a read-only home: ask git every time
    return root


def attach_root(data: dict[str, object], env: dict[str, str]) -> None:
    """Name the checkout's main folder (project_root) beside cwd, for the project scope."""
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd and ROOT_FIELD not in data:
        root = _cached_root(env, cwd)
        if root:
            data[ROOT_FIELD] = root


ARTIFACTS_PATH = "/api/v1/artifacts"


def sync_artifacts(data: object, env: dict[str, str], seconds: float) -> str:
    """At SessionStart, write the owner's delivered rules and skills into the project's
    `.claude/` (user-scope ones into ~/.claude/); "" or a note naming files the user edited.
    ENGRAM_SYNC_ARTIFACTS=0 turns it off."""
    if not isinstance(data, dict) or data.get("hook_event_name") != "SessionStart":
        return ""
    from memory.integrations.artifact_sync import sync

    project = env.get("CLAUDE_PROJECT_DIR") or data.get("cwd")
    if env.get("ENGRAM_SYNC_ARTIFACTS", "1") == "0" or not isinstance(project, str) or seconds <= 0:
        return ""
    query = {"scope": env["ENGRAM_SCOPE"]} if env.get("ENGRAM_SCOPE") else {"cwd": project}
    if "cwd" in query and isinstance(data.get(ROOT_FIELD), str):
        query["root"] = str(data[ROOT_FIELD])
    base = (env.get("ENGRAM_URL") or DEFAULT_URL).rstrip("/")
    url = f"{base}{ARTIFACTS_PATH}?{urllib.parse.urlencode(query)}"
    headers = {"User-Agent": "engram-hook/1"}
    if env.get("ENGRAM_TOKEN", "").strip():
        headers["Authorization"] = f"Bearer {env['ENGRAM_TOKEN'].strip()}"
    status, _, body = http_request("GET", url, None, headers, seconds, 8 * MAX_RESPONSE_BYTES)
    if status != 200:
        return ""
    listing = json.loads(body)
    report = sync(listing.get("artifacts"), project)
    if not report.edited:
        return ""
    return "Engram left alone rules/skills you edited: " + ", ".join(report.edited)


def forward(payload: bytes, env: dict[str, str]) -> str:
    """The server's answer to print, or "" on any failure or an empty answer."""
    try:
        data = json.loads(payload)
    except ValueError:
        return ""
    pending = None
    if isinstance(data, dict):
        try:
            pending = attach_transcript(data, env)
        except Exception:  # the transcript is a bonus; the hook itself must go through
            pending = None
        try:
            attach_rules(data)
        except Exception:  # the rules are a bonus too
            data.pop(RULES_FIELD, None)
        try:
            attach_root(data, env)
        except Exception:  # so is the checkout's root: cwd alone names the project then
            data.pop(ROOT_FIELD, None)
        if pending is not None or RULES_FIELD in data or ROOT_FIELD in data:
            payload = json.dumps(data, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "engram-hook/1"}
    token = env.get("ENGRAM_TOKEN", "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url = endpoint(env)
    timeout = _timeout(env)
    started = time.monotonic()
    body = None
    for attempt in range(2):
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            return ""
        try:
            status, answered, received = http_request(
                "POST", url, payload, headers, left, MAX_RESPONSE_BYTES + 1
            )
        except (OSError, ValueError, http.client.HTTPException):  # refused, timeouts, bad URLs
            return ""
        if status == 200:
            body = received
            break
        # Refused by the rate limit: wait as told, once, if that still fits the timeout.
        wait = _retry_after(answered) if status == 429 and attempt == 0 else None
        if wait is None or time.monotonic() - started + wait >= timeout - RETRY_MARGIN_S:
            return ""
        time.sleep(wait)
    if body is None:
        return ""
    if pending is not None:
        _write_offset(*pending)
    if len(body) > MAX_RESPONSE_BYTES:
        return ""
    try:
        answer = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(answer, dict):
        return ""
    try:  # delivered rules and skills: a bonus, within what is left of the timeout
        note = sync_artifacts(data, env, timeout - (time.monotonic() - started) - RETRY_MARGIN_S)
    except Exception:
        note = ""
    if note and "systemMessage" not in answer:
        answer["systemMessage"] = note
    if not answer:
        return ""
    return json.dumps(answer, ensure_ascii=False)


def main(
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    env: dict[str, str] | None = None,
) -> int:
    """Console-script entry point; always returns 0."""
    environ = dict(os.environ) if env is None else env
    _deadline(_timeout(environ) + 0.5)
    try:
        source = stdin if stdin is not None else sys.stdin.buffer
        payload = source.read(MAX_STDIN_BYTES)
        answer = forward(payload, environ)
        if answer:
            out = stdout if stdout is not None else sys.stdout
            out.write(answer + "\n")
            out.flush()
    except BaseException:  # never let the memory hook block or fail the agent
        return 0
    finally:
        _deadline(0)
    return 0


def _expired(signum: int, frame: object) -> None:
    raise TimeoutError


def _deadline(seconds: float) -> None:
    """Bound the whole run, not each socket operation (0 cancels); Unix main thread only."""
    if not hasattr(signal, "setitimer"):
        return
    try:
        if seconds > 0:
            signal.signal(signal.SIGALRM, _expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    except ValueError:  # not the main thread
        return


if __name__ == "__main__":
    sys.exit(main())
