"""The files a synthesis becomes, exactly as they are written into `.claude/` (pure, no Django).

A rule: `rules/engram/<slug>.md` with `paths:` frontmatter (globs of the observed file paths)
and the metadata comment `<!-- engram:pattern:{id}:synthesis:{id}:v{n}:{date}:confidence:{c} -->`.
A skill: `skills/<name>/SKILL.md` (name and description frontmatter, then instructions) and
`scripts/` with a standard-library hybrid script and `engram_runtime.py`.

The content hash covers the files with the version and date left out of the metadata, so the
same lesson rendered again hashes the same and only a real change bumps the version.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import pprint
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from dialectic import maths
from memory.integrations.artifact_sync import RULES_DIR, SKILLS_DIR

METADATA_RE = re.compile(
    r"engram:pattern:(?P<pattern>\d+):synthesis:(?P<synthesis>\d+):v(?P<version>\d+):"
    r"(?P<date>[\d-]+):confidence:(?P<confidence>[\d.]+)"
)
MAX_PATH_GLOBS = 5
_SLUG_RE = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Step:
    tool: str
    example: str  # a typical argument (path, pattern or command)
    deterministic: bool


@dataclass(frozen=True)
class Lesson:
    """What a synthesis says, in the terms the files need."""

    pattern_id: int
    synthesis_id: int
    title: str
    statement: str
    condition: str
    confidence: float
    paths: tuple[str, ...]
    steps: tuple[Step, ...] = ()
    evidence: str = ""
    extras: dict[str, str] = field(default_factory=dict)


def slugify(text: str, limit: int = 60) -> str:
    slug = _SLUG_RE.sub("-", text.lower()).strip("-")[:limit].strip("-")
    return slug or "pattern"


def metadata(lesson: Lesson, version: int | None, day: str | None) -> str:
    v = "v{n}" if version is None else f"v{version}"
    d = "{date}" if day is None else day
    c = f"{maths.rounded(lesson.confidence):.2f}"
    return (
        f"engram:pattern:{lesson.pattern_id}:synthesis:{lesson.synthesis_id}:{v}:{d}:confidence:{c}"
    )


def path_globs(paths: Sequence[str], limit: int = MAX_PATH_GLOBS) -> list[str]:
    """Globs for the observed file paths: `<dir>/**/*<ext>` for the most frequent directory
    and extension pairs (relative paths as the agent saw them, leading `./` and `/` dropped)."""
    counts: Counter[str] = Counter()
    for raw in paths:
        path = raw.strip().replace("\\", "/")
        if not path:
            continue
        path = path.lstrip("./") if path.startswith("./") else path
        path = path.lstrip("/")
        folder, name = posixpath.split(path)
        ext = posixpath.splitext(name)[1]
        pattern = f"*{ext}" if ext else "*"
        counts[f"{folder}/**/{pattern}" if folder else f"**/{pattern}"] += 1
    return [glob for glob, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def rule_files(
    lesson: Lesson, slug: str, *, version: int | None = None, day: str | None = None
) -> dict[str, str]:
    lines: list[str] = []
    if lesson.paths:
        lines += ["---", "paths:"]
        lines += [f"  - {_yaml_str(p)}" for p in lesson.paths]
        lines += ["---"]
    lines.append(f"<!-- {metadata(lesson, version, day)} -->")
    lines += [f"# {lesson.title}", "", lesson.statement.strip()]
    if lesson.condition:
        lines += ["", f"**Exception:** {lesson.condition.strip()}"]
    if lesson.evidence:
        lines += ["", f"_Learned by Engram from observed tool use: {lesson.evidence}_"]
    return {f"{RULES_DIR}/{slug}.md": "\n".join(lines) + "\n"}


def skill_name(slug: str) -> str:
    return slug[:64].strip("-") or "pattern"


def script_name(name: str) -> str:
    return name.replace("-", "_")[:40] + ".py"


def skill_files(
    lesson: Lesson, name: str, *, version: int | None = None, day: str | None = None
) -> dict[str, str]:
    base = f"{SKILLS_DIR}/{name}"
    script = script_name(name)
    description = lesson.statement.strip().splitlines()[0][:300] if lesson.statement else name
    if lesson.condition:
        description = f"{description} (except when {lesson.condition.strip()})"[:1000]
    lines = [
        "---",
        f"name: {name}",
        f"description: {_yaml_str(description)}",
        "---",
        f"<!-- {metadata(lesson, version, day)} -->",
        f"# {lesson.title}",
        "",
        "## When to use",
        "",
        lesson.statement.strip(),
    ]
    if lesson.condition:
        lines += ["", f"Not when {lesson.condition.strip()}."]
    lines += ["", "## Instructions", ""]
    for number, step in enumerate(lesson.steps, 1):
        how = "run as written" if step.deterministic else "needs judgement"
        example = f" (e.g. `{step.example}`)" if step.example else ""
        lines.append(f"{number}. {step.tool}{example}: {how}.")
    lines += [
        "",
        "## Script",
        "",
        f"`python3 .claude/{base}/scripts/{script} [PATH ...]` runs the deterministic steps and "
        "asks for judgement at the others through `engram_runtime.py` (the `claude` CLI, else "
        "the Engram server). When neither can answer it prints the question for you and exits "
        "with status 3: answer it yourself and carry on.",
    ]
    if lesson.evidence:
        lines += ["", f"_Learned by Engram from observed tool use: {lesson.evidence}_"]
    tag = metadata(lesson, version, day)
    return {
        f"{base}/SKILL.md": "\n".join(lines) + "\n",
        f"{base}/scripts/{script}": hybrid_script(lesson, tag),
        f"{base}/scripts/engram_runtime.py": fill(RUNTIME, {"tag": tag}),
    }


def content_hash(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()


def file_hash(content: str | bytes) -> str:
    data = content.encode() if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


def hybrid_script(lesson: Lesson, tag: str) -> str:
    steps = [
        {"tool": s.tool, "example": s.example, "deterministic": s.deterministic}
        for s in lesson.steps
    ]
    return fill(
        SCRIPT,
        {
            "tag": tag,
            "title": lesson.title.replace('"', "'"),
            "steps": pprint.pformat(steps, indent=4, sort_dicts=False),
            "statement": repr(lesson.statement),
        },
    )


def fill(template: str, values: dict[str, str]) -> str:
    """The template with each `{name}` of `values` replaced, in one pass: text inserted for one
    placeholder (an observed command containing `{statement}`) is never substituted again."""
    pattern = re.compile("|".join(re.escape("{" + name + "}") for name in values))
    return pattern.sub(lambda match: values[match.group(0)[1:-1]], template)


SCRIPT = '''#!/usr/bin/env python3
# {tag}
"""{title}: the steps Engram observed, run as a hybrid script (standard library only).

Deterministic steps run here; steps that need judgement are intelligence points answered by
engram_runtime (the `claude` CLI, else the Engram server); when neither can answer, the
question is printed for the calling agent and the script exits with status 3.
Usage: python3 THIS_SCRIPT [PATH ...] [--run]   (--run also runs observed shell commands)
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engram_runtime  # noqa: E402

STATEMENT = {statement}
STEPS = {steps}


def _files(paths):
    found = []
    for root in paths or ["."]:
        if os.path.isfile(root):
            found.append(root)
            continue
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
            found += [os.path.join(folder, n) for n in sorted(names)]
            if len(found) > 2000:
                return found
    return found


def run_step(step, paths, context, run):
    tool, example = step["tool"], step["example"]
    if tool == "Glob":
        pattern = os.path.basename(example) or "*"
        hits = [f for f in _files(paths) if fnmatch.fnmatch(os.path.basename(f), pattern)]
        return "files matching %s:\\n%s" % (pattern, "\\n".join(hits[:50]))
    if tool == "Grep":
        needle, hits = example, []
        for name in _files(paths)[:500]:
            try:
                with open(name, encoding="utf-8", errors="replace") as handle:
                    for number, line in enumerate(handle, 1):
                        if needle and needle in line:
                            hits.append("%s:%d: %s" % (name, number, line.rstrip()))
            except OSError:
                continue
        return "lines containing %r:\\n%s" % (needle, "\\n".join(hits[:50]))
    if tool == "Read":
        shown = []
        for name in [p for p in paths if os.path.isfile(p)][:3]:
            with open(name, encoding="utf-8", errors="replace") as handle:
                shown.append("== %s ==\\n%s" % (name, handle.read(4000)))
        return "\\n".join(shown) or "nothing to read: pass a file path"
    if tool == "Bash" and example:
        if not run:
            return "would run: %s (pass --run to run it)" % example
        done = subprocess.run(shlex.split(example), capture_output=True, text=True, timeout=600)
        return "$ %s (exit %d)\\n%s%s" % (example, done.returncode, done.stdout[-3000:],
                                          done.stderr[-2000:])
    return "step %s: %s" % (tool, example)


def main(argv):
    run = "--run" in argv
    paths = [a for a in argv if a != "--run"]
    context = []
    for number, step in enumerate(STEPS, 1):
        if step["deterministic"]:
            result = run_step(step, paths, context, run)
        else:
            hint = " (e.g. %s)" % step["example"] if step["example"] else ""
            result = engram_runtime.intelligence(
                "Step %d of: %s\\nDecide what to do for the %s step%s."
                % (number, STATEMENT, step["tool"], hint),
                "\\n\\n".join(context)[-6000:],
            )
        context.append("[%d %s]\\n%s" % (number, step["tool"], result))
        print("[%d/%d] %s" % (number, len(STEPS), step["tool"]))
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

RUNTIME = '''# {tag}
"""engram_runtime: intelligence points for hybrid skill scripts (standard library only).

Order of resort: the `claude` CLI (`claude -p --output-format json`) when it is on PATH; else
POST /api/v1/intelligence on the Engram server (ENGRAM_URL, ENGRAM_TOKEN), which answers 503
`llm_unavailable` without a key; else the question is printed for the calling agent and the
process exits with status 3.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

DEGRADED_EXIT = 3
TIMEOUT = float(os.environ.get("ENGRAM_INTELLIGENCE_TIMEOUT", "120") or 120)


def _claude(prompt):
    if not shutil.which("claude"):
        return None
    try:
        done = subprocess.run(
            ["claude", "-p", "--output-format", "json", prompt],
            capture_output=True, text=True, timeout=TIMEOUT,
        )
        if done.returncode != 0:
            return None
        answer = json.loads(done.stdout)
        result = answer.get("result") if isinstance(answer, dict) else None
        return result if isinstance(result, str) else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def _server(task, context, schema):
    base = (os.environ.get("ENGRAM_URL") or "http://127.0.0.1:8000").rstrip("/")
    body = {"task": task, "context": context}
    if schema is not None:
        body["schema"] = schema
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("ENGRAM_TOKEN", "").strip()
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(
        base + "/api/v1/intelligence", data=json.dumps(body).encode(), headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError):  # 503 llm_unavailable, no server, bad answer
        return None
    return answer.get("result") if isinstance(answer, dict) else None


def _degrade(question):
    print("ENGRAM: no intelligence available (no claude CLI, no Engram LLM). Answer this, then "
          "continue the procedure yourself:")
    print(question)
    sys.exit(DEGRADED_EXIT)


def intelligence(task, context=""):
    """A free-text answer to `task` given `context`."""
    prompt = "%s\\n\\nContext:\\n%s" % (task, context)
    answer = _claude(prompt)
    if answer is None:
        answer = _server(task, context, None)
    if not isinstance(answer, str):
        _degrade(prompt)
    return answer


def intelligence_with_schema(task, schema, context=""):
    """An object matching the JSON schema `schema`."""
    prompt = "%s\\n\\nAnswer with JSON only, matching this schema:\\n%s\\n\\nContext:\\n%s" % (
        task, json.dumps(schema), context)
    text = _claude(prompt)
    if text is not None:
        try:
            value = json.loads(text.strip().removeprefix("```json").strip("`"))
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
    value = _server(task, context, schema)
    if not isinstance(value, dict):
        _degrade(prompt)
    return value


def decide(question, context=""):
    """A yes/no judgement."""
    schema = {"type": "object", "properties": {"answer": {"type": "boolean"}},
              "required": ["answer"]}
    return bool(intelligence_with_schema(question, schema, context).get("answer"))
'''
