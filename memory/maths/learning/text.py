"""Prose and sentences of a prompt: fenced blocks, pasted blocks (review findings, what follows
"here is / it says / I get:"), indented, log-like and code-dense lines removed.

Pure Python (no Django); shared by the classifier and the extractor.
"""

from __future__ import annotations

import re

INSTRUCTION = "instruction"
PREFERENCE = "preference"
CORRECTION = "correction"
TIER_EXPLICIT = "A"
TIER_CORRECTION = "B"
TIER_INFERRED = "C"

MAX_DRAFTS_PER_PROMPT = 3
MAX_DRAFTS_PER_SESSION = 20
# Only the first part of a very long prompt is classified (pasted material sits at the end).
MAX_CLASSIFIED_CHARS = 20_000
MIN_CLAUSE_WORDS = 3
# A prompt of this many sentences or more is a discussion (a design, a plan, a bug report): a
# rule-like line inside it is active at once only with an explicit marker (`cues.marked`).
LONG_PROMPT_SENTENCES = 4
# A prompt this long is mostly a document pasted in (a spec, a plan, an article, a review): its
# "always" and "never" are the document's content, not a rule given to the agent now. A line of
# it is active at once only when it asks for a rule to be recorded (`cues.RULE_REQUEST`).
PASTED_DOCUMENT_CHARS = 3000
# A prompt with a markdown heading outside code blocks and at least this many lines is a
# document too, however short (a rules file, a spec or a template pasted to be edited): people
# do not write headings into what they type to an agent.
HEADED_DOCUMENT_LINES = 5
MAX_CLAUSE_CHARS = 300
MAX_QUOTE_CHARS = 500

# --- prose, code and logs -------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]{0,200}`")
# "# Title" / "## Section" (a capital or a digit after the marks, which a shell comment rarely has)
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+[A-Z0-9]", re.M)
_LOG_LINE = re.compile(
    r"""^\s*(?:
        \d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}          # timestamps
      | \[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL|CRITICAL)\b
      | Traceback\b | File\ " | [\w.]*(?:Error|Exception|Failure):\s
      | at\ [\w$.<>]+\( | \$\ | >>>\ | \.\.\.\ | [#>]\ ?\w+@
      | npm\ (?:ERR|WARN) | error(?:\[\w+\])?: | warning: | E\s+ | \d+\s*\|
      | [-+]{3}\ | @@\ | diff\ --git
      | .*\u23bf                                  # Claude Code's tool-output marker
      | [\u25cf\u23fa\u2713\u2717\u2714\u2718]\s     # its bullets, check marks
      | (?:author|commit|merge|date):\s.*(?:<\S+@\S+>|\d{2}:\d{2})   # git log headers
      | commit\ [0-9a-f]{7,40}\b | create\ mode\ \d+ | ={3,}\ \w
      | [\w.-]+:\ (?:cannot|can'?t|could\ not|failed|unable|no\ such|not\ found|fatal|
          permission\ denied|command\ not\ found)\b
    )""",
    re.X | re.I,
)
_CODE_CHARS = set("{}()[];=<>$\\|&*#")
# Not after "e.g." / "i.e." / "vs." / "cf.": an example or a comparison goes on the sentence.
_SENTENCE_END = re.compile(
    r"(?<=[.!?;])(?<!(?i:\be\.g\.))(?<!(?i:\bi\.e\.))(?<!(?i:\bvs\.))(?<!(?i:\bcf\.))"
    r"\s+(?=\S)|\n+"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_CONTINUED = re.compile(r"[ \t]*\\\r?\n[ \t]*")


def _is_code_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if line.startswith(("    ", "\t")) or _LOG_LINE.match(line):
        return True
    symbols = sum(1 for ch in stripped if ch in _CODE_CHARS)
    words = len(_WORD.findall(stripped))
    # Code and stack traces: many symbols per word, or a line ending like a statement.
    if symbols >= 3 and symbols * 3 > words:
        return True
    return stripped.endswith(("{", "};", ");", "*/")) or stripped.startswith(("//", "/*", "#!"))


# Typographic apostrophes and dashes read as their ASCII forms.
_TYPOGRAPHY = str.maketrans({"\u2019": "'", "\u2018": "'", "\u2013": "-", "\u2014": "-"})


# Text that arrives as a user entry but was not typed by the person: a compaction summary, a
# plan hand-off, slash-command wrappers and their output, background-task notifications,
# interrupt markers, shell-mode I/O (Claude Code writes all of these as `type: "user"`).
_MACHINE_TEXT = re.compile(
    r"^\s*(?:this\s+session\s+is\s+being\s+continued\s+from\s+a\s+previous\s+conversation"
    r"|implement\s+the\s+following\s+plan:"
    r"|<(?:command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    r"local-command-caveat|task-notification|bash-input|bash-stdout|bash-stderr|system-reminder|"
    r"user-prompt-submit-hook)>"
    r"|caveat:\s+the\s+messages\s+below"
    r"|\[request\s+interrupted\s+by\s+user)",
    re.I,
)
# Blocks the client or a hook wraps around (or into) what the person typed.
_WRAPPERS = re.compile(
    r"<(system[-_]reminder|system[-_]instruction|user-prompt-submit-hook)>.*?(?:</\1>|\Z)",
    re.S | re.I,
)


def is_document(prompt: str) -> bool:
    """True when a prompt is mostly a document pasted in: PASTED_DOCUMENT_CHARS or longer, or
    HEADED_DOCUMENT_LINES lines or more with a markdown heading outside its code blocks. Its
    rule-like lines are the document's content, not rules given to the agent now."""
    if len(prompt) >= PASTED_DOCUMENT_CHARS:
        return True
    if "#" not in prompt or prompt.count("\n") + 1 < HEADED_DOCUMENT_LINES:
        return False
    text = _FENCE.sub("", prompt)
    lines = sum(1 for line in text.splitlines() if line.strip())
    return lines >= HEADED_DOCUMENT_LINES and bool(_HEADING.search(text))


def is_machine_text(text: str) -> bool:
    """True for a user entry that the person did not type (see `_MACHINE_TEXT`)."""
    return bool(_MACHINE_TEXT.match(text[:400]))


# --- pasted material: review findings, tool output introduced by the person --------------------

# A finding of a code review or a linter, pasted: a file:line reference, "line 485", a severity.
_FINDING = re.compile(
    # (from where a path starts: a search that began inside it would retry every suffix)
    r"(?<![\w/.-])[\w/.-]+\.[A-Za-z]{1,5}:\d+|\b(?:at|on|in)\s+lines?\s+\d+|\blines?\s+\d+\s*-\s*\d+"
    r"|^\s*(?:(?:high|medium|low|critical|major|minor)\s+(?:severity|priority)|severity:|"
    r"priority:|nit(?:pick)?:|suggestion:|suggested\s+change)\s*$",
    re.I | re.M,
)
_FINDING_NEEDS = (":", "line", "severity", "priority", "suggested")


def _finding(text: str) -> bool:
    """`_FINDING` in `text`, searched only when a word it needs is there (most prompts have
    none, and this runs on the UserPromptSubmit path)."""
    low = text.lower()
    return any(word in low for word in _FINDING_NEEDS) and bool(_FINDING.search(text))


# A line that introduces pasted material: "here is the output:", "the reviewer says:", "I get:".
_PASTE_INTRO = re.compile(
    r"(?:\bhere\s+(?:is|are)\b|\b(?:says?|said|says\s+that|wrote|output|outputs|prints?|"
    r"printed|returns?|returned|shows?|showed|logs?|errors?|get|got|getting|see|seeing|"
    r"review|comments?|feedback|findings?|issues|suggestions?|reported|following|details|"
    r"message|response|result|results|trace|stack\s*trace)\b)[^:\n]{0,60}:\s*$",
    re.I,
)
# Words quoted inline from what the agent (or a file, a diff) says: "it has: # Note: we don't
# commit it", "you wrote: always retry". The quote is theirs, not the person's rule.
_INLINE_QUOTE = re.compile(
    r"(\b(?:it|you|this|that|the\s+(?:code|file|comment|diff|commit|change|output|message|docs?|"
    r"readme|script|test|function))\s+(?:now\s+)?(?:has|have|had|wrote|added|says|said|reads|"
    r"shows|contains|put|left)\s*:)[ \t]*\S[^\n]*?(?:[.!?](?=[ \t]+[A-Z])|$)",
    re.I | re.M,
)
_RULE_INTRO = re.compile(
    r"\b(?:rules?|guidelines?|conventions?|always|never|from\s+now\s+on)\b", re.I
)
_END_PUNCT = re.compile(r"[.!?:;,)\]]\s*$")


def _unwrapped(lines: list[str]) -> list[str]:
    """Hard-wrapped lines joined: a long (or indented) line with no closing punctuation followed
    by one that starts in lower case (pasted review comments are wrapped at a fixed width)."""
    out: list[str] = []
    for line in lines:
        head = line.lstrip()
        if (
            out
            and (head[:1].islower() or head[:1] in "$~`'\"(")
            # wrapped text is indented, or wider than anyone types a line by hand
            and (len(out[-1].strip()) >= 100 or (out[-1][:1].isspace() and line[:1].isspace()))
            and not _END_PUNCT.search(out[-1])
            and not _is_code_line(out[-1])
        ):
            out[-1] = out[-1].rstrip() + " " + head
        else:
            out.append(line)
    return out


def _without_pasted(text: str) -> str:
    """The text without pasted blocks: a paragraph holding a review finding, and the lines
    after a line that introduces pasted material (up to the next blank line)."""
    blocks = re.split(r"\n\s*\n", text)
    kept: list[str] = []
    for block in blocks:
        if _finding(block):
            continue
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if (
                i + 1 < len(lines)
                and line.rstrip().endswith(":")  # what _PASTE_INTRO needs, checked first
                and _PASTE_INTRO.search(line)
                and not _RULE_INTRO.search(line)
            ):
                lines = lines[: i + 1]
                break
        kept.append("\n".join(lines))
    return "\n\n".join(kept)


def prose(text: str) -> str:
    """The text with fenced blocks, pasted blocks (`_without_pasted`), indented or log-like
    lines and code-dense lines removed; hard-wrapped lines joined."""
    text = text[:MAX_CLASSIFIED_CHARS]
    if is_machine_text(text):
        return ""
    text = _FENCE.sub("\n", _WRAPPERS.sub("\n", text).translate(_TYPOGRAPHY))
    # A backslash before a line break is a terminal's line continuation (Claude Code's
    # "\⏎" for a new line in the prompt): the line goes on.
    text = _CONTINUED.sub(" ", text)
    if ":" in text:
        text = _INLINE_QUOTE.sub("", text)
    if "\n" not in text:  # one line: nothing pasted under an introduction, nothing wrapped
        return "" if _is_code_line(text) or _finding(text) else text
    text = _without_pasted(text)
    return "\n".join(line for line in _unwrapped(text.splitlines()) if not _is_code_line(line))


def sentences(text: str) -> list[str]:
    """Sentences (and lines) of the prose of `text`, in order, stripped."""
    out = []
    for part in _SENTENCE_END.split(prose(text)):
        # (a backslash at a line's end is the terminal's line continuation, not a word)
        part = part.strip(" \t-*•>\\")
        if part:
            out.append(part)
    return out


# Lead-ins and preambles before a rule's main clause (the classifier and the extractor).
_LEAD_INS = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|also|oh|well|now|then|but|plus|hey|right|alright|great|"
    r"first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|additionally|moreover|furthermore|"
    r"one\s+more\s+thing|another\s+thing|on\s+(?:a|another)\s+note|by\s+the\s+way|btw|"
    r"as\s+(?:a|for)\s+\w+|in\s+addition|moving\s+on|next(?!\s+time\b)|importantly|to\s+be\s+clear|"
    r"actually|wait|hmm|sorry|yes|yeah|please|just|(?!(?:always|never)\b)[A-Z][a-z]+(?=,))"
    r"[\s,:;.!-]+"
    # "No, use pnpm" loses its "No,"; "No print calls in library code" keeps its "No".
    r"|(?:no|nope)\s*[,:;.!-][\s,:;.!-]*)+",
    re.I,
)


_PREAMBLES = re.compile(
    r"^(?:(?:i(?:\s+would|'d)\s+like\s+(?:you|us)\s+to|i\s+want\s+(?:you|us)\s+to|"
    r"i\s+need\s+you\s+to|i\s+expect\s+you\s+to|i\s+(?:want\s+to\s+)?encourage\s+you\s+to|"
    r"i(?:'d)?\s+(?:really\s+)?(?:like|want)\s+to\s+"
    r"(?:remind|tell|ask)\s+you\s+(?:to|that)|make\s+sure\s+(?:to|that|you)\b(?!')|be\s+sure\s+to|"
    r"ensure\s+that|remember\s+(?:to|that)|keep\s+in\s+mind\s+(?:to|that)|please\s+note\s+that|"
    r"note\s+that|from\s+now\s+on|going\s+forward|from\s+here\s+on|in\s+(?:the\s+)?future|"
    r"that(?:'s|\s+is|\s+was)\s+(?:wrong|not\s+right|incorrect)|"
    r"one\s+(?:of\s+the\s+things|thing)\s+i\s+(?:insist\s+on|want\s+you\s+to\s+\w+)\s+is|"
    r"it(?:'s|\s+is)\s+(?:important|essential|crucial|vital|imperative|mandatory|required|best)\s+"
    r"(?:that\s+(?:you|we)|to(?!\s+(?:me|us|them|him|her)\b)|if\s+you)|"
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?)"
    r"[\s,:;.!-]*)+",
    re.I,
)
