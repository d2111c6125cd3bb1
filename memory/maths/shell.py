"""What a shell command does, as a practice: its programs with their subcommands and salient
flags, paths and values as placeholders (`uv run pytest tests/*.py -x --tb=<v>`), so two runs of
the same practice on different files read alike.

Pure Python (no Django). The command is parsed by tree-sitter's Bash grammar (MIT, maintained,
error-tolerant: a cut-off or malformed command still yields its words), so lists (`&&`, `||`,
`;`), pipelines, subshells, command substitutions, heredocs, control structures and comments
are told apart as a shell would; `cd x && …` is the place, not the practice.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# A command longer than this is cut before parsing: its practice is in its first words.
MAX_PARSED = 20_000
MAX_TEXT = 200
MAX_ARGS = 8  # placeholders and flags kept per command
MAX_COMMANDS = 6

# Programs that run another program named after them (their flags first): the practice is the
# inner program, said with its wrapper (`sudo apt`, `time pytest`, `xargs grep`).
WRAPPERS = frozenset(
    {"sudo", "time", "nohup", "env", "exec", "command", "nice", "timeout", "xargs", "stdbuf"}
)
# `<program> <sub>` that runs the next word as a program (`uv run pytest`, `npx eslint`).
RUNNERS = frozenset(
    {
        ("uv", "run"),
        ("uvx", ""),
        ("poetry", "run"),
        ("pipenv", "run"),
        ("pdm", "run"),
        ("hatch", "run"),
        ("rye", "run"),
        ("pipx", "run"),
        ("bundle", "exec"),
        ("npm", "exec"),
        ("pnpm", "exec"),
        ("pnpm", "dlx"),
        ("yarn", "dlx"),
        ("npx", ""),
        ("bunx", ""),
    }
)
# A runner's flags that take a value (`uv run --python 3.12 pytest`), and among them those that
# add the package the program comes from (`uvx --from ruff-lsp ruff`, `npx -p typescript tsc`).
RUNNER_VALUE_FLAGS = frozenset(
    {
        "--with", "--with-editable", "--with-requirements", "--from", "--package", "-p",
        "--python", "--directory", "--project", "--env-file", "--extra", "--group",
        "--only-group", "--index", "--filter", "-C", "--cwd",
    }
)  # fmt: skip
RUNNER_PACKAGE_FLAGS = frozenset({"--with", "--from", "--package"})
RUNNER_PLACE_FLAGS = frozenset({"--project", "--directory", "-C", "--cwd"})
# Package managers that also run a project's own program or script by its name (`pnpm tsc`,
# `yarn lint`, `bun run test`): with RUNNERS, the ways a machine reaches a project's tool.
PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
# Programs whose arguments are data (text, patterns, files), never a subcommand.
DATA_PROGRAMS = frozenset(
    {
        "echo", "printf", "cat", "head", "tail", "less", "more", "ls", "cd", "pwd", "mkdir",
        "rmdir", "rm", "cp", "mv", "ln", "touch", "chmod", "chown", "find", "grep", "egrep",
        "fgrep", "rg", "ag", "ack", "sed", "awk", "sort", "uniq", "wc", "cut", "tr", "diff",
        "kill", "pkill", "killall", "sleep", "which", "type", "file", "stat", "du", "df",
        "tee", "open", "source", ".", "export", "unset", "test", "[", "basename", "dirname",
        "realpath", "readlink", "jq", "yq", "curl", "wget", "tree", "ps", "lsof", "date",
    }
)  # fmt: skip
# Programs that only feed the next one in a pipe its input (`echo y | app sync`).
FEEDERS = frozenset({"echo", "printf", "yes"})
# Programs whose first subcommand may be a group with subcommands of its own (`gh pr create`,
# `docker compose up`, `npm run build`): only these groups take a second level.
GROUPS: dict[str, frozenset[str]] = {
    "docker": frozenset({"compose", "container", "image", "network", "volume", "buildx", "system"}),
    "podman": frozenset({"compose", "container", "image", "network", "volume", "system"}),
    "gh": frozenset({"pr", "issue", "run", "repo", "release", "workflow", "auth", "label"}),
    "kubectl": frozenset({"config", "rollout"}),
    "npm": frozenset({"run", "exec"}),
    "pnpm": frozenset({"run", "exec"}),
    "yarn": frozenset({"run", "workspace"}),
    "bun": frozenset({"run", "x"}),
    "mise": frozenset({"run", "exec"}),
    "uv": frozenset({"pip", "tool", "python"}),
    "go": frozenset({"mod", "tool", "work"}),
    "cargo": frozenset({"run"}),
    "poetry": frozenset({"env", "self"}),
    "pip": frozenset({"cache"}),
    "brew": frozenset({"services"}),
    "gcloud": frozenset({"compute", "run", "auth", "config"}),
    "aws": frozenset({"s3", "ecr", "ecs", "lambda", "sts"}),
    "terraform": frozenset({"workspace", "state"}),
    "git": frozenset({"stash", "remote", "worktree", "submodule", "bisect", "lfs"}),
}
# Steps that set the scene for the command after them; the practice is that command.
SETUP = frozenset({"cd", "pushd", "popd", "export", "set", "unset", "pwd", "clear", "true"})
# File extensions (a word ending so is a file, not a subcommand): common source, data and
# config files.
EXTENSIONS = frozenset(
    {
        "py", "pyi", "ipynb", "js", "mjs", "cjs", "ts", "tsx", "jsx", "vue", "svelte", "json",
        "jsonl", "yaml", "yml", "toml", "ini", "cfg", "conf", "env", "lock", "md", "mdx", "rst",
        "txt", "csv", "tsv", "log", "html", "htm", "css", "scss", "sql", "sh", "bash", "zsh",
        "go", "rs", "rb", "ex", "exs", "heex", "eex", "erl", "java", "kt", "kts", "scala",
        "swift", "c", "h", "cc", "cpp", "hpp", "cs", "php", "lua", "r", "dart", "xml", "svg",
        "png", "jpg", "gif", "pdf", "zip", "gz", "tar", "db", "sqlite", "wasm", "proto", "tf",
    }
)  # fmt: skip

_SUBCOMMAND = re.compile(r"^[A-Za-z][\w.:+-]*$")
_GO_BUILDS = frozenset({"build", "run", "install"})
_GO_PACKAGE = re.compile(r"^\./(?!.*\.go$)[\w.-]+(?:/[\w.-]+){0,3}/?$")  # ./cmd/server/, not x.go
_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?[smhdkKMG%]?$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_QUOTES = "\"'"


@dataclass(frozen=True)
class Command:
    """One simple command: `head` the program with its subcommand (`git add`, `uv run pytest`),
    `shape` with its flags and placeholders (`git add <path>`, `git add -A`)."""

    head: str
    shape: str


@dataclass(frozen=True)
class CommandShape:
    """A shell line as a practice: its commands in order (scene-setting `cd` dropped) and the
    whole line with its operators (`source .venv/bin/activate && pytest specs/ -v | tail`)."""

    commands: tuple[Command, ...]
    text: str

    @property
    def main(self) -> Command | None:
        """The command the line is for: the first that is not scene-setting or `echo`."""
        for command in self.commands:
            if command.head not in SETUP and command.head not in ("source", ".", *FEEDERS):
                return command
        return self.commands[0] if self.commands else None

    @property
    def heads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.head for c in self.commands))


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def _unquote(node: Any) -> tuple[str, bool]:
    """A word's value and whether it was quoted."""
    raw = _text(node)
    if node.type in ("string", "raw_string", "ansi_c_string") and len(raw) >= 2:
        return raw[1:-1] if raw[0] in _QUOTES else raw[2:-1], True
    return raw, False


def is_path_like(word: str) -> bool:
    """A file or folder (`src/x.py`, `./run`, `~/.bashrc`, `README.md`), not a subcommand."""
    if _URL.match(word):
        return False
    if "/" in word or word.startswith(("~", ".")):
        return True
    stem, dot, ext = word.rpartition(".")
    return bool(dot and stem and ext.lower() in EXTENSIONS)


def path_placeholder(path: str, cwd: str = "") -> str:
    """A path as its place and kind: `specs/x_spec.py` → `specs/*.py`, `tests/` → `tests/`,
    `./cmd/app/...` → `./cmd/...`, `./cmd/app/` → `./cmd/` (a leading `./` is kept: to Go,
    `cmd/app` is another package),
    a file in the root → `*.py`; absolute paths inside `cwd` are made relative first, others
    become `<path>`; `~/…` stays home-relative."""
    if path in (".", "..", "-", "./...", "/dev/null"):
        return path
    if cwd and path.startswith("/"):
        root = cwd.rstrip("/")
        if path == root:
            return "."
        if path.startswith(root + "/"):
            path = path[len(root) + 1 :]
    home = path.startswith("~")
    here = "./" if path.startswith("./") else ""  # for Go, `./cmd/app` and `cmd/app` differ
    if path.startswith("/") and not path.startswith("/tmp/"):
        glob = _ext_glob(path)
        return f"<path>/{glob}" if glob else "<path>"
    trailing = path.endswith("/")
    parts = [p for p in path.split("/") if p and p != "."]
    if not parts:
        return path
    if len(parts) == 1:
        glob = _ext_glob(parts[0])
        if home:
            return "~/"
        return here + ((parts[0] + "/") if trailing else (glob or parts[0]))
    first = parts[0] if not home else "~"
    if path.startswith("/tmp/"):
        first = "/tmp"
    if parts[-1] == "...":  # Go's "every package under": `./cmd/app/...` → `./cmd/...`
        # (without the "./", `cmd/...` would name the standard library's cmd packages)
        return f"{'./' if path.startswith('./') else ''}{first}/..."
    return f"{here}{first}/" + (_ext_glob(parts[-1]) if not trailing else "").lstrip("/")


def _ext_glob(name: str) -> str:
    base = posixpath.basename(name.rstrip("/"))
    stem, dot, ext = base.rpartition(".")
    if dot and stem and ext and len(ext) <= 6 and ext.isalnum():
        return f"*.{ext.lower()}"
    return ""


def _program(word: str, cwd: str) -> str:
    if "/" not in word:
        return word
    if word.startswith("/") or word.startswith("~"):
        if cwd and word.startswith(cwd.rstrip("/") + "/"):
            return "./" + word[len(cwd.rstrip("/")) + 1 :][:60]
        return posixpath.basename(word) or word
    return word[:60]


def _argument(word: str, quoted: bool, kind: str, cwd: str, after_flag: bool) -> str:
    if kind in ("simple_expansion", "expansion", "command_substitution", "process_substitution"):
        return "<v>"
    if _URL.match(word):
        return "<url>"
    globbing = any(c in word for c in "*?[") and " " not in word
    if globbing and len(word) <= 40 and word[0] not in "/~":
        return word  # a file pattern is the practice (`-name *.py`, `git add '*.md'`)
    if quoted and (" " in word or "\n" in word or not word):
        return "<text>"
    if _NUMBER.match(word):
        return "<n>"
    if is_path_like(word):
        return path_placeholder(word, cwd)
    if "=" in word and not word.startswith("-"):
        name = word.split("=", 1)[0]
        return f"{name}=<v>" if _NAME.match(name) else "<v>"
    return "<v>" if after_flag else "<arg>"


def _flag(word: str) -> str:
    if re.match(r"^-\d+$", word):
        return "-<n>"
    if word.startswith("--") and "=" in word:
        return word.split("=", 1)[0] + "=<v>"
    return word[:40]


def _command(node: Any, cwd: str) -> Command | None:
    assignments: list[str] = []
    words: list[tuple[str, bool, str]] = []
    for child in node.children:
        if child.type == "variable_assignment":
            name = _text(child).split("=", 1)[0]
            if _NAME.match(name):
                assignments.append(f"{name}=<v>")
        elif child.type == "command_name":
            value, quoted = _unquote(child.children[0] if child.children else child)
            words.append((value, quoted, "word"))
        elif child.is_named and child.type not in ("file_redirect", "heredoc_redirect",
                                                   "herestring_redirect", "comment"):  # fmt: skip
            value, quoted = _unquote(child)
            words.append((value, quoted, child.type))
    if not words:
        return None
    return _shape(words, assignments, cwd)


def _shape(words: list[tuple[str, bool, str]], assignments: list[str], cwd: str) -> Command:
    head: list[str] = []
    # A runner's flags, said in the shape where they stood but not part of the head: with
    # other flags it runs the same program (`uv run --project <path> app` is `uv run app`).
    runner_flags: list[tuple[int, list[str]]] = []
    position = 0
    # Wrappers and runners: keep them, then read the program they run.
    while position < len(words):
        program = _program(words[position][0], cwd)
        head.append(program)
        position += 1
        if program in WRAPPERS:
            while position < len(words):
                word = words[position][0]
                if word.startswith("-") or "=" in word or _NUMBER.match(word):
                    position += 1
                    if program == "xargs" and word in ("-I", "-n", "-P", "-L", "-d"):
                        position += 1
                    continue
                break
            continue
        runner = (program, "") in RUNNERS
        if not runner and position < len(words) and (program, words[position][0]) in RUNNERS:
            head.append(words[position][0])
            position += 1
            runner = True
        if runner:
            position, flags = _runner_flags(words, position, cwd)
            runner_flags.append((len(head), flags))
            continue
        break
    program = head[-1] if head else ""
    base = program.rstrip("0123456789.")
    args = words[position:]
    tail: list[str] = []
    if base in ("python", "pypy") and args and args[0][0] in ("-m", "-c"):
        flag = args[0][0]
        value = args[1][0] if len(args) > 1 else ""
        head += [flag, value if flag == "-m" else "<code>"]
        args = args[2:]
    elif program in ("source", ".") and args and not args[0][0].startswith("/"):
        tail.append(args[0][0][:60])
        args = args[1:]
    elif program not in DATA_PROGRAMS and args and _is_subcommand(args[0]):
        head.append(args[0][0])
        args = args[1:]
        if head[-1] in GROUPS.get(base, ()) and args and _is_subcommand(args[0]):
            head.append(args[0][0])
            args = args[1:]
    after_flag = False
    dropped_flag = False
    # What `go build` / `go run` / `go install` builds is a package of the project, named by
    # its folder: the folder is the target, not a place that varies (`./cmd/server/` stays).
    builds = base == "go" and len(head) > 1 and head[-1] in _GO_BUILDS
    for word, quoted, kind in args:
        if word.startswith("-") and not quoted and len(word) > 1:
            value_of_flag = False
            token, after_flag = _flag(word), "=" not in word
        elif builds and not after_flag and _GO_PACKAGE.match(word):
            value_of_flag, token = False, word
        else:
            value_of_flag = after_flag
            token, after_flag = _argument(word, quoted, kind, cwd, after_flag), False
        if value_of_flag:
            # A flag's value goes with its flag: `-project <v> -scheme <v>` keeps both values
            # (a repeated placeholder would leave `-scheme` without one), and a repeated flag
            # is dropped with its value (`-H <text> -H <text>` is one `-H <text>`).
            if dropped_flag:
                continue
        elif token in tail or (tail and tail[-1] == token):
            dropped_flag = token.startswith("-")
            continue
        dropped_flag = False
        tail.append(token)
        if len(tail) >= MAX_ARGS:
            break
    said = list(head)
    for at, flags in reversed(runner_flags):
        said[at:at] = flags
    head_text = " ".join(h for h in head if h)
    shape = " ".join([*assignments, *(w for w in said if w), *tail])
    return Command(head=head_text, shape=shape)


def _runner_flags(
    words: list[tuple[str, bool, str]], position: int, cwd: str
) -> tuple[int, list[str]]:
    """Skip a runner's flags before the program it runs (`uv run --quiet`), with the value of
    one that takes a value (`--python 3.12`); the packages it adds are kept, as they are what
    makes the program run (`uv run --with jsonschema python3`), and so is the project it runs
    in (`uv run --project <path> app`: run from elsewhere, the program is not found). The
    position of the program, and the flags kept."""
    kept: list[str] = []
    while position < len(words) and words[position][0].startswith("-"):
        flag, _, value = words[position][0].partition("=")
        position += 1
        if flag not in RUNNER_VALUE_FLAGS:
            continue
        if not value and position < len(words):
            value = words[position][0]
            position += 1
        if flag in RUNNER_PACKAGE_FLAGS and value and not is_path_like(value):
            kept += [flag, value[:60]]
        elif flag in RUNNER_PLACE_FLAGS:
            kept += [flag, path_placeholder(value, cwd) if is_path_like(value) else "<v>"]
    return position, kept


def _is_subcommand(word: tuple[str, bool, str]) -> bool:
    value, quoted, kind = word
    return (
        not quoted
        and kind == "word"
        and bool(_SUBCOMMAND.match(value))
        and not is_path_like(value)
        and not _NUMBER.match(value)
    )


def _render(node: Any, cwd: str, found: list[Command]) -> str:
    kind = node.type
    if kind in ("comment", "heredoc_body", "heredoc_start", "heredoc_end"):
        return ""
    if kind == "command":
        # A command substituted into an argument is a value of this one (`-m "$(cat …)"`).
        command = _command(node, cwd)
        if command is None:
            return ""
        found.append(command)
        return command.shape if command.head not in SETUP else ""
    if kind == "pipeline":
        pieces = [_render(child, cwd, found) for child in node.named_children]
        shown = [p for p in pieces if p]
        if not shown:
            return ""
        # After a pipe only the program counts (`| tail`, `| grep`): it shapes the output. What
        # feeds a program its input (`echo y | app sync`) is the input, not the practice.
        main = next((i for i, p in enumerate(shown) if p.split(" ")[0] not in FEEDERS), 0)
        return " | ".join(p if i == main else p.split(" ")[0] for i, p in enumerate(shown))
    if kind == "list":
        operator = next((c.type for c in node.children if c.type in ("&&", "||", ";")), "&&")
        pieces = [_render(child, cwd, found) for child in node.named_children]
        return f" {operator} ".join(p for p in pieces if p)
    if kind == "redirected_statement":
        body = node.child_by_field_name("body") or (node.named_children or [None])[0]
        return _render(body, cwd, found) if body is not None else ""
    pieces = [_render(child, cwd, found) for child in node.named_children]
    return " ; ".join(p for p in pieces if p)


def command_shape(command: str, *, cwd: str = "") -> CommandShape:
    """The practice a shell command line carries (see the module docstring); an empty or
    unparsable line has no commands."""
    if not isinstance(command, str) or not command.strip():
        return CommandShape((), "")
    source = command[:MAX_PARSED].encode("utf-8", "replace")
    found: list[Command] = []
    text = _render(_parser().parse(source).root_node, cwd, found)
    commands = tuple(c for c in found if c.head not in SETUP or c.head == "export")
    text = re.sub(r"\s+", " ", text).strip(" ;")
    return CommandShape(commands[:MAX_COMMANDS], text[:MAX_TEXT])
