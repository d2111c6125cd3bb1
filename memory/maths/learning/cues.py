"""Cues of a standing rule in a prompt to a coding agent, one named group per thing recognised.

Pure Python (no Django). `classify` finds rule-like sentences; these groups decide which of them
are unmistakably meant to last (tier A, or B for a correction that names the right way: active at
once) and which are only candidates (tier C, promoted when the user says them again). Rules
said indirectly (in passing, as a question) and retractions are in `indirect`.

Each group is written for the genre (prompts to coding agents), never from an evaluation
sentence; each has a table of accepted and rejected prompts in tests/memory/test_learning_cues.py.
"""

from __future__ import annotations

import re

from memory.maths.learning.indirect import PREFERENCE_IN_PASSING
from memory.maths.learning.text import TIER_CORRECTION, TIER_EXPLICIT, TIER_INFERRED

# --- what makes a rule last -------------------------------------------------------------------

# "Whenever" as a standing time, not the hedge "whenever possible / needed / you can".
WHENEVER = (
    r"whenever(?!\s+(?:possible|needed|necessary|appropriate|applicable|feasible|"
    r"you\s+(?:can|need|want|like|feel|have\s+(?:a|any|the)))\b)"
)
# "In the future" as a standing time, not "in future releases / in a future session" (about the
# product or the conversation).
IN_FUTURE = (
    r"in\s+(?:the\s+)?future\b(?!\s+(?:[\w-]+\s+)?(?:sessions?|meetings?|conversations?|"
    r"discussions?|releases?|versions?|iterations?|sprints?|projects?|roles?|updates?|work|"
    r"states?|designs?|architectures?|models?|plans?|phases?|milestones?)\b)"
    # "… in the future may support X": what the product will do, not how to work
    r"(?!,?\s+(?:it\s+|this\s+|they\s+|we\s+)?(?:will|may|might|could|would|can)\b)"
)
# A time or frequency that reaches past this task: "from now on", "next time", "ever again".
STANDING_TIME = re.compile(
    r"(?<!will\s)(?<!would\s)(?<!could\s)(?<!may\s)(?<!might\s)\b" + IN_FUTURE + r"|"
    r"\b(?:don'?t|do\s+not|not|never)\b[^.?!]{0,60}\bever\b"
    r"|\b(?:from\s+now\s+on|going\s+forward(?!\s+with\b)|from\s+here\s+on(?:\s+out)?|"
    # not "the next time I run it, I get a 403" (what happens to the speaker), but "next time I
    # ask you to …" is the agent's
    r"(?<!until\s)(?<!the\s)next\s+time|"
    r"(?<=the\s)next\s+time(?!\s+(?:i|we)\s+(?!ask|tell|want|say|need|request)\w)|"
    r"every\s+time|each\s+time|any\s*time\s+you|" + WHENEVER + r"|in\s+all\s+cases|"
    r"(?:ever|never)\s+again|for\s+all\s+future|for\s+future\s+(?:[\w-]+\s+)?(?:tests|"
    r"test\s+creation|work|changes|prs|commits|tasks|code|features|reference)\b|"
    # not "we're moving forward with rust" (going ahead with a choice)
    r"moving\s+forward(?!\s+with\b)|in\s+every\s+(?:session|task|"
    r"project|repo))\b",
    re.I,
)
# "always"/"never" addressed to the agent: at the start of the clause (after "please", "and",
# "so", "but"), after "you"/"we" (with a modal), after "make sure (you|to)", or "don't ever".
ALWAYS_NEVER = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|so|but|please|then|as\s+always|as\s+usual),?\s+)(?:please\s+)?"
    r"(?:always|never)\s+[\w`'\"]"
    r"|\b(?:you|we)\s+(?:should\s+|must\s+|will\s+|need\s+to\s+|have\s+to\s+)?(?:always|never)\s+[\w`'\"]"
    r"|\b(?:make|be)\s+sure\s+(?:that\s+)?(?:to|you|we)\s+(?:\w+\s+)?(?:always|never)\b"
    r"|\b(?:don'?t|do\s+not)\s+ever\b|(?<!\bas\s)\b(?:always|never)\s*[.!]?\s*$"
    r"|\b(?:should|must|shall)\s+(?:always|never)\s+[\w`'\"]",
    re.I,
)
# A convention of this project or team: "in this repo we …", "we always/never/only use …",
# "we don't use …", "as a rule, …", "our convention is …".
PROJECT_CONVENTION = re.compile(
    r"\b(?:in|for)\s+this\s+(?:repo(?:sitory)?|project|codebase|code\s*base|team|monorepo)\b"
    # … followed by a habit ("we use", "you always", "don't"), not a wish for now ("we want to
    # commit X", "you should create Y")
    # ("all"/"every" right after it: "in this repo, all tests …", not "… you will copy all of")
    r"(?:,?\s+(?:all|every)\b|[^.?!]{0,40}?(?:\b(?:always|never|don'?t|do\s+not)\b|"
    r"\b(?:we|you)\s+(?:(?:usually|"
    r"only|generally|normally|typically|mostly)\s+)?(?:use|prefer|keep|write|follow|put|name|"
    r"avoid|stick|run|deploy|release|import|format|test|commit|work|rely)\b|[,:]\s*(?:please\s+)?"
    r"(?:use|prefer|keep|write|follow|put|name|avoid|stick|run)\b))"
    r"|\b(?:here\s+)?we\s+(?:always|never|only|don'?t\s+ever|do\s+not\s+ever)\s+"
    r"(?!(?!(?:need|embed|proceed|exceed|succeed|feed|seed|speed)\b)\w{2,}ed\b)\w"  # not "we only added"
    r"|\bwe\s+(?:don'?t|do\s+not)\s+(?:use|allow|commit|write|add|import|mix|rely|do)\b"
    r"|\bas\s+a\s+(?:general\s+)?rule\b"
    # the scope after what must hold in it: "there should be one way to read the config in
    # this codebase"
    r"|\b(?:should|must|shall)\b(?!\s+(?:we|you|i)\b)[^.?!\n]{3,80}?\b(?:in|across|throughout)\s+this\s+"
    r"(?:repo(?:sitory)?|project|codebase|code\s*base|monorepo)\s*[.!]?\s*$"
    r"|\b(?:our|the\s+project'?s?|the\s+team'?s?)\s+(?:convention|rule|standard|policy|"
    r"house\s+style|style\s+guide)\s+is\b",
    re.I,
)
# "Remember that we …", "keep in mind that we …", "don't forget that we …": a convention of the
# team. "Remember to …" and "don't forget to …" alone are reminders, often about this task only
# (candidates).
REMEMBER = re.compile(
    r"\b(?:remember|keep\s+in\s+mind|never\s+forget)\s+(?:that\s+)?"
    r"(?:we|this\s+(?:repo|project)|in\s+this)\b"
    r"|\b(?:don'?t|do\s+not)\s+forget\s+that\s+(?:we|in\s+this|this\s+(?:repo|project))\b",
    re.I,
)
# A file of rules for a coding agent, and the verbs that record or change one (shared with the
# extractor's `rule_inside`).
RULES_FILE = r"(?:\.mdc|CLAUDE\.md|AGENTS\.md|copilot-instructions(?:\.md)?|\.cursorrules)"
RECORD_VERB = (
    r"(?:make|create|write|draft|add|set\s+up|record|save|update|amend|change|edit|extend|modify)"
)
# A request to record a rule: "make a rule that …", "add to your rules that …", "update the
# rule to say …", "put this in CLAUDE.md".
# "add guidance / a note / a section to CLAUDE.md …": a request to write into the rules file.
_ADD_NOTE_TO_RULES = (
    r"\badd\s+(?:some\s+|a\s+|an\s+)?(?:guidance|note|section|rule|rules|instructions?|line|"
    r"paragraph|something)\s+(?:to|into|in)\s+(?:the\s+|your\s+|our\s+)?@?(?:CLAUDE\.md|"
    r"AGENTS\.md|rules|memory)\b"
)
# "make that standard (in your workflow)", "make it a habit" (not "make it the default", which
# is about the product's settings).
MAKE_IT_STANDING = (
    r"\bmake\s+(?:this|that|it)\s+(?:a\s+|your\s+|our\s+)?(?:standard|habit|"
    r"rule|convention|norm|routine)\b(?!\s+(?:for|of|in)\s+(?:this|the)\s+(?:file|function|"
    r"page|test|class|component|module)\b)"
    r"|\bmake\s+(?:this|that|it)\s+(?:a\s+)?(?:standard\s+|regular\s+)?part\s+of\s+(?:your|our|the)\s+"
    r"(?:workflow|process|routine)\b"
)
RULE_REQUEST = re.compile(
    r"\b(?:make|create|write|draft)\s+(?:a|an|another)\s+(?:new\s+)?(?:(?:cursor|claude|copilot|"
    r"project|coding|team|naming|style|global|general|standing|agent|repo)\s+)?"
    r"(?:rule|guideline)\b"
    r"|\b(?:update|edit|amend|change|extend|add\s+to)\s+(?:the\s+|your\s+|our\s+)?@?[\w./-]*"
    + RULES_FILE
    + r"\b"
    r"[^.?!]{0,40}?(?:\bto\s+(?:specify|say|mention|include|note|state|require|cover|explain)\b"
    # "update CLAUDE.md but make sure that claude asks before …": what the file must say
    r"|\b(?:but|and|to)\s+(?:make\s+sure|ensure)\s+(?:that|it\s+says)\b"
    # "extend CLAUDE.md and add remarks that …": what to add, after the file
    r"|\band\s+(?:add|write|note|mention|state)\s+(?:(?:a|an|some|the)\s+)?(?:[\w-]+\s+)?"
    r"(?:that|saying)\s+(?!(?:this|that|it|them|these|those)\b)\w)"
    r"|\b(?:the|that|this|your)\s+rules?\s+(?:should\s+)?(?:says?|mentions?|states?|specif(?:y|ies)|"
    r"requires?|includes?)\b"
    r"|\b(?:make|create|add|write|set\s+up|draft|update|amend|change|extend|improve|revise|"
    r"adjust|tweak|expand|modify)\s+"
    r"(?:a\s+|an\s+|the\s+|this\s+|that\s+|your\s+|our\s+|new\s+|one\s+)*(?:[\w@.-]+\s+){0,2}?"
    r"(?:rule|rules|guideline|guidelines|instructions?|conventions?)\b"
    r"(?:\s+(?:file|doc))?\s*(?:that|to\s+(?!(?:the|a|an|this|that|my|our|your|each|every)\b)|"
    r"so|which|saying|stating|:|,\s*(?:that|to))"
    r"|\badd\s+(?:this|that|it)\s+(?:to|as)\s+(?:a\s+|the\s+|your\s+|our\s+)?(?:rules?|memory|"
    r"guidelines?|CLAUDE\.md|AGENTS\.md)\b"
    r"|\b(?:put|write|record|note|save)\s+(?:this|that|it)\s+in\s+(?:the\s+|your\s+)?"
    r"(?:rules?|memory|CLAUDE\.md|AGENTS\.md)\b"
    # "Request a Copilot review. Make that standard in your workflow.": the sentence before
    r"|"
    + MAKE_IT_STANDING
    # "add guidance into CLAUDE.md for future test creation": a note that names its topic
    + r"|"
    + _ADD_NOTE_TO_RULES
    + r"(?:[^.?!]{0,20}?\b(?:for|on|about|that|saying)\s+"
    r"(?!(?:this|that|it|them|these|those)\b)\w"
    # "add a line to CLAUDE.md: run the formatter before committing"
    r"|\s*:\s*(?!(?:this|that|it|them|these|those)\b)\w)",
    re.I,
)
# A correction of the agent's last action: a leading "no", "wrong", "that's not right", "stop"…
CORRECTION_LEAD = re.compile(
    r"^(?:no+|nope|wrong|not\s+quite|stop|actually|wait|that(?:'s|s|\s+is|\s+was)\s+(?:wrong|not\s+(?:right|"
    r"correct|what\s+i)|incorrect)|you\s+(?:shouldn'?t|should\s+not)\s+have)\b"
    r"(?!\s+(?:worries|problem|thanks|need|idea|rush|doubt|more\s+than|for\s+a\b))",
    re.I,
)
# … that names the right way next to the wrong one: "use X, not Y", "X instead of Y", "not X
# but Y".
RIGHT_WAY = re.compile(
    # "X, not Y" — not the negation of a statement ("that was not caught", "it does not run")
    r"\b(?!(?:is|was|are|were|be|been|do|does|did|has|have|had|can|could|will|would|should|"
    r"must|may|might|shall|it|that|this|there)\b)\w+[`'\"]?,?\s+not\s+(?!only\b|just\b|sure\b|yet\b|right\b|correct\b|what\b|working\b|"
    r"true\b|quite\b|really\b|it\b)(?:the\s+|a\s+)?[`'\"@\w]"
    r"|\binstead\s+of\b|\brather\s+than\b|\bnot\s+\S+(?:\s+\S+){0,4}?,?\s+but\s+\w",
    re.I,
)
# … or names only the right one, written as code: "that's wrong, just use `uv run pytest`".
RIGHT_COMMAND = re.compile(
    r"\b(?:use|run|call|import|install)\s+(?:the\s+|it\s+with\s+)?`[^`\n]{1,80}`", re.I
)

# A choice between two named ways: "test the domain module, not the CLI", "run it with X
# instead of Y", "we want X rather than Y" (a candidate: it may be meant for this task only).
CONTRAST_CHOICE = re.compile(
    r"\b(?:use|using|run|running|test|testing|keep|put|mark|call|write|import|install|"
    r"we\s+want\s+to|i\s+want\s+to|should\s+be|must\s+be)\b[^.?!]{1,60}?"
    r"(?:,?\s+not\s+(?!only\b|just\b|sure\b|yet\b)[`'\"@\w]|\s+instead\s+of\s+\S|\s+rather\s+than\s+\S)",
    re.I,
)
# --- working habits stated without a classic marker (candidates unless a marker makes them A) ---

# The agent should act instead of handing the work back, or ask before it acts: "do it
# yourself", "don't just tell me what to run", "apply the edits yourself", "go ahead without
# asking", "ask me before you delete anything", "check with me before installing".
DELEGATION = re.compile(
    r"\b(?:don'?t|do\s+not|stop)\s+(?:just\s+)?(?:tell(?:ing)?|show(?:ing)?|explain(?:ing)?|"
    r"instruct(?:ing)?)\s+me\s+(?:what|how|which)\s+(?:to|commands?|steps?)\b"
    r"|\b(?:do|apply|make|run|fix|implement|execute|edit|change|write)\s+(?:it|them|that|this|"
    r"(?:the\s+|these\s+|those\s+)?(?:changes?|edits?|fix(?:es)?|commands?|steps?|updates?))\s+"
    r"yourself\b"
    r"|\bdo\s+(?:the\s+work|everything|it\s+all|that)\s+yourself\b"
    r"|\b(?:without|instead\s+of)\s+asking(?:\s+me)?\b"
    r"|\b(?:ask|check\s+with|confirm\s+with)\s+me\s+(?:first\s+)?before\s+(?:you\s+)?\w+"
    r"|\b(?:don'?t|do\s+not)\s+ask\s+(?:me\s+)?(?:for\s+(?:permission|confirmation)|"
    r"(?:whether|if)\s+(?:you\s+should|to))\b",
    re.I,
)
# The pace or size of the work: "one change at a time", "one file at a time", "small commits".
PACE = re.compile(
    r"\bone\s+(?:[\w-]+\s+)?(?:thing|issue|step|file|change|task|feature|bug|test|problem|"
    r"fix|commit|pr|module|component|function|question|item|scenario|migration)\s+at\s+a\s+time\b"
    r"|\b(?:small|smaller|atomic|incremental|focused)\s+(?:commits|steps|changes|prs|"
    r"pull\s+requests|diffs)\b",
    re.I,
)
# A convention stated about a kind of thing with a modal: "each handler should live in its own
# file", "all fixtures must go in conftest", "every endpoint needs a contract test" (about every
# one of them, so not about the item at hand).
KIND_SHOULD = re.compile(
    r"^(?:(?:and|also|so|but|note)\s*,?\s+)?(?:each|every|all)\s+(?:of\s+(?:the|our|your)\s+)?"
    r"(?:[\w.@/-]+\s+){0,2}?[\w.@/-]+\s+(?:should|must|needs?\s+to|has\s+to|have\s+to|ought\s+to)\s+"
    r"(?:always\s+)?(?:be|have|use|live|go|stay|start|end|follow|include|contain|get|sit|import|"
    r"call|return|run|come|belong)\b",
    re.I,
)
# The tool or version the project should be on, or what it should not be doing: "we should be
# using uv", "we should be on Python 3.12", "we shouldn't be vendoring the SDK".
SHOULD_BE_ON = re.compile(
    r"\bwe\s+[_*]{0,2}(?:should(?:n'?t|\s+not)?|ought\s+(?:not\s+)?to|are\s+(?:not\s+)?supposed\s+to|"
    r"need\s+to)[_*]{0,2}\s+be\s+(?:using|running|on|committing|pushing|importing|installing|"
    r"vendoring|pinning|storing|checking\s+in)\s+"
    r"(?:the\s+)?[`'\"]?[\w.@/+-]+",
    re.I,
)
# A tool or step the agent reached for that the task does not need: "you don't need sudo to
# install into the venv", "you do not need the browser tool to read a local file".
NEEDLESS = re.compile(
    r"\byou\s+(?:don'?t|do\s+not|never)\s+need\s+(?:to\s+(?:use|run|call|install|start|open)\s+)?"
    r"(?!to\b)(?:the\s+|a\s+|an\s+|any\s+)?[\w.@/-]+(?:\s+[\w.@/-]+){0,2}?\s+(?:to|for)\s+"
    r"(?:\w+ing\b|(?!be\b|do\b|worry\b)\w+)",
    re.I,
)

# A step tied to an event of the workflow that recurs: "run prettier on the README before
# committing", "we should rebase before merging", "regenerate the client before you open a PR".
# The main clause (imperative, or "we/you should …") names the step; the event names when.
BEFORE_EVENT = re.compile(
    r"^(?:(?:and|also|so|but|please|then)\W+)*(?:(?:we|you)\s+(?:should|must|need\s+to|have\s+to|"
    r"ought\s+to)\s+)?(?:always\s+)?(?:run|check|format|lint|test|rebase|squash|update|regenerate|"
    r"rebuild|build|bump|verify|review|sign|pull|sync|fetch|add|write|re-?run)\b[^.?!]{0,80}?"
    r"\bbefore\s+(?:you\s+|we\s+)?(?:commit(?:ting)?|push(?:ing)?|merg(?:e|ing)|releas(?:e|ing)|"
    r"deploy(?:ing)?|publish(?:ing)?|tag(?:ging)?|(?:open(?:ing)?|creat(?:e|ing)|submit(?:ting)?)\s+"
    r"(?:a|the|any)\s+(?:pr|pull\s+request))\b",
    re.I,
)

# A practice applied wherever it fits, not to one item: "use US English everywhere", "strong
# types wherever we can", "fix any issues you notice", "throughout the codebase".
EVERYWHERE = re.compile(
    r"\b(?:use|using|keep|write|follow|prefer|stick\s+to|fix|apply|add)\b[^.?!]{1,60}?"
    r"(?:\beverywhere\b|\bwherever\s+(?:possible|we\s+can|you\s+can|it\s+makes\s+sense)\b"
    r"|\b(?:throughout|across)\s+(?:the\s+|our\s+|this\s+)?(?:code\s*base|codebase|repo(?:sitory)?|"
    r"project|code)\b)"
    r"|\b(?:fix|clean\s+up|fix\s+up|flag|report|tidy)\s+(?:up\s+)?(?:any|all|every)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:that\s+)?you\s+(?:notice|see|find|spot|come\s+across|encounter|run\s+into)\b",
    re.I,
)

# A property of everything written: spelling, register, casing, indentation ("use British
# spelling", "write in plain English", "stick to single quotes").
WRITING_STYLE = re.compile(
    r"\b(?:use|using|write\s+in|writing\s+in|stick\s+to|follow|switch\s+to)\s+(?:the\s+)?"
    r"(?:(?:[\w-]+\s+)?spelling|(?:british|american|us|uk|plain|simple)\s+english|"
    r"(?:[\w-]+\s+)?(?:tone|register|casing|indentation)|(?:single|double)\s+quotes|"
    r"(?:tabs|spaces)\s+(?:for|not|instead|rather)|[\w-]+[_-]case)\b",
    re.I,
)

# Where the team's working material lives: "keep our design notes in Notion", "track the todos
# in GitHub issues", "put all ADRs under docs/adr".
WHERE_IT_LIVES = re.compile(
    r"\b(?:keep|put|store|track|write|record|file|log)\s+(?:our|all|your|the\s+team'?s)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:documentation|docs|notes|plans|tickets|issues|todos|decisions|specs|"
    r"adrs|tasks|designs|changelogs?|runbooks)\s+(?:in|on|under|at|into)\s+\S",
    re.I,
)


def working_habit(sentence: str) -> bool:
    """True when a sentence states a working habit without a classic marker (delegation, pace,
    a convention about a kind of thing, the tool to be on, a needless tool)."""
    low = sentence.casefold()
    return any(
        any(word in low for word in words) and pattern.search(sentence)
        for pattern, words in _HABITS
    )


_HABITS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (DELEGATION, ("yourself", "asking", "tell", "show", "explain", "instruct", "with me", "ask")),
    (PACE, ("at a time", "small", "atomic", "incremental", "focused")),
    (KIND_SHOULD, ("each", "every", "all")),
    (SHOULD_BE_ON, (" be ",)),
    (NEEDLESS, ("need",)),
    (BEFORE_EVENT, ("before",)),
    (
        WRITING_STYLE,
        (
            "spelling",
            "english",
            "tone",
            "register",
            "casing",
            "indentation",
            "quotes",
            "tabs",
            "spaces",
            "case",
        ),
    ),
    (
        WHERE_IT_LIVES,
        (
            "docs",
            "documentation",
            "notes",
            "plans",
            "tickets",
            "issues",
            "todos",
            "decisions",
            "specs",
            "adrs",
            "tasks",
            "designs",
            "changelog",
            "runbooks",
        ),
    ),
    (
        EVERYWHERE,
        (
            "everywhere",
            "wherever",
            "throughout",
            "across",
            "you notice",
            "you see",
            "you find",
            "you spot",
            "you come",
            "you encounter",
            "you run",
        ),
    ),
)

# A hedge: "probably", "maybe", "I think" — not an unmistakable rule.
HEDGE = re.compile(
    r"\b(?:probably|maybe|perhaps|might|i\s+(?:think|guess|suppose|wonder)|not\s+sure|possibly|"
    # "I don't discard the possibility of … in the future": an option kept open
    r"(?:the|a)\s+possibility|"
    # a possibility, a scenario, a current interest: "we could add", "let's say", "I'm most
    # interested in"
    r"(?:we|you|i)\s+could|let'?s\s+say|i(?:'m|\s+am)\s+(?:\w+\s+)?interested\s+in|"
    # a thought experiment: "… always use the parent colour, theoretically"
    r"theoretically|in\s+theory|hypothetically|"
    # the state one would like to reach, not yet a rule: "ideally, we only point to agent.md"
    r"ideally)\b",
    re.I,
)
# What the product must let someone do, a requirement of the design: "whenever something has a
# Transform, we should be able to attach a Gizmo to it". Not a way of working for the agent.
CAPABILITY = re.compile(
    r"\b(?:should|must|shall|needs?\s+to|has\s+to|have\s+to|will)\s+(?:always\s+)?be\s+able\s+to\b",
    re.I,
)
# The rule is about the thing at hand: "do this", "don't clean it up", "fix that".
DEICTIC = re.compile(
    r"\b(?:do|did|don'?t|do\s+not|use|undo|fix|clean|remove|revert|keep|change|move|touch|"
    r"modify|delete)\s+(?:it|this|that|them|these|those)\b(?!\s+(?:way|format|again))",
    re.I,
)
# What only the conversation can resolve: "do so", "as you mentioned", "discussed above", "option
# 2". A rule stored alone must name what it asks for; one that leans on earlier turns says nothing
# to an agent in a later session (it waits for review, and maintenance calls it no lesson).
LEANS_ON_CONVERSATION = re.compile(
    r"(?i:\b(?:do|did|does|doing)\s+so\b"
    r"|\b(?:as|like)\s+(?:you|i|we)(?:'ve|\s+have)?\s+(?:just\s+)?(?:mentioned|said|suggested|"
    r"described|discussed|explained|proposed|outlined|noted)\b"
    r"|\b(?:mentioned|discussed|described|said|suggested|outlined|listed|proposed)\s+"
    r"(?:above|earlier|before|previously)\b"
    # the case the conversation just raised: "in that case, I would only render it in …"
    r"|\bin\s+(?:that|which)\s+case\b"
    # the answer to a question asked before: "if so, …", "if not, it should", "if yes, we …"
    # (at the start, or after a question; `classify` joins it to a rule said just before)
    r"|(?:^|\?\s*)if\s+(?:so|yes)\b(?!\s+(?:many|much|far|long|often|few|little)\b)"
    r"|(?:^|\?\s*)if\s+(?:not|no)\s*(?:[,:;]|$))"
    # a choice offered in the conversation: "option 2", "approach B", "version B"
    r"|\b(?i:option|approach|variant|alternative|proposal)\s+(?:[A-Z]|\d)\b(?![\w.])"
    r"|\b(?i:version|plan)\s+[A-Z]\b(?![\w.])",
)
# A request to write into a document that is not a rules file ("Note in the README that the
# app asks once, going forward"): its words, a time included, are the document's content.
DOC_REQUEST = re.compile(
    r"^(?:please\s+)?(?:also\s+)?(?:note|mention|document|explain|describe|write|add|say|state)"
    r"\b[^.!?]{0,40}?\b(?:in|to|into)\s+(?:the\s+|our\s+)?@?(?![\w./-]*" + RULES_FILE + r")"
    r"[\w./-]*\.(?:md|txt|rst|adoc)\b",
    re.I,
)
# A whole rule whose only object is a pronoun: "We don't commit it.", "We always squash them."
# Stored alone it names nothing; the thing it is about was in the conversation.
PRONOUN_ONLY = re.compile(
    r"^\W*(?:(?:we|you|i)\s+)?(?:(?:always|never|don'?t|do\s+not|should(?:\s+not|n'?t)?|"
    r"must(?:\s+not)?|will\s+not|won'?t|just|also|only|usually)\s+)*[a-z]+\s+"
    r"(?:it|this|that|them|these|those)(?:\s+(?:please|at\s+all|anymore|any\s+more|either))?"
    r"\s*[.!]*\s*$",
    re.I,
)
# A request about one work item ("create a task to …", "open an issue for …"): a task.
ABOUT_A_WORK_ITEM = re.compile(
    r"^(?:please\s+)?(?:create|open|file|write|add|make|draft)\s+(?:a|an|the|new|another)\s+"
    r"(?:new\s+)?(?:task|ticket|issue|todo|pr|pull\s+request|spec|plan)\b",
    re.I,
)
# A prohibition of a kind of action, with why it is bad in general: "don't amend commits - it
# messes with the workflows", "don't run the integration tests, too slow". The reason is a
# property of the action, so the prohibition lasts; one about the thing at hand ("don't commit
# this, it's broken"), one with no object ("don't commit, it's not ready") or one for now is not.
REASONED_PROHIBITION = re.compile(
    r"^(?:(?:oh|ok|okay|hey|and|also|but|so|hm+)\W+)?(?:please\s+)?(?:don'?t|do\s+not|dont)\s+"
    r"(?!(?:worry|bother|forget|mind|hesitate|wait|need)\b)[a-z][\w-]*"
    r"(?:\s+(?!(?:the|this|that|these|those|it|them|my|yet|now|again|for|until|before)\b)"
    r"[\w`'./@:-]+){1,6}?"
    r"(?:\s*(?:[,;:]|\s-+|\s?[\u2013\u2014])\s*"
    r"(?:(?:it|they|that|which)(?:'s|'re|\s+(?:is|are|\w+s|\w+\s+\w+s))\b|too\s+\w+)"
    r"|,?\s+(?:because|since|as\s+(?:it|they|that))\b)",
    re.I,
)


def hedged(sentence: str) -> bool:
    """True when a sentence hedges what it says ("probably", "I think", "I'm most interested
    in", "the possibility of"): a weaker statement than a rule."""
    return bool(HEDGE.search(plain_intent(sentence)))


def reasoned_prohibition(sentence: str) -> bool:
    """A prohibition of a kind of action with a reason that holds beyond the task at hand."""
    sentence = plain_intent(sentence)
    return bool(
        REASONED_PROHIBITION.match(sentence)
        and not ONE_OFF.search(sentence)
        and not HEDGE.search(sentence)
        and not LEANS_ON_CONVERSATION.search(sentence)
    )


# An explicit correction anywhere: "that's wrong", "I said …", "I asked you to/not …".
EXPLICIT_CORRECTION = re.compile(
    r"\bthat(?:'s|s|\s+is|\s+was)\s+(?:wrong|not\s+(?:right|correct|what\s+i)|incorrect)\b"
    r"|\bi\s+(?:said|told\s+you|asked\s+(?:you\s+)?(?:to|for|not)|only\s+wanted)\b",
    re.I,
)

# --- what the code or product does, not how to work ---------------------------------------------

# "always"/"never" that describe behaviour: before a verb in the third person ("it never
# executes", "always returns early") or a participle ("never shown", "never asserted", "always
# done"). An instruction to the agent uses the plain form ("never execute", "always return").
_PARTICIPLE = (
    r"(?!(?:need|embed|proceed|exceed|succeed|feed|seed|speed|bleed|shred)\b)\w{2,}ed\b"
    r"|(?:shown|seen|written|given|taken|done|known|thrown|broken|hidden|forgotten|chosen|"
    r"driven|gotten|been)\b"
)
_THIRD_PERSON_VERB = r"(?!\w*(?:ss|us|is|as|ics)\b)[a-z]{2,}(?:s|es)\b"
DESCRIBES_BEHAVIOUR = re.compile(
    r"\b(?i:always|never)(?=\s+(?:(?:really|actually|even|just|properly)\s+)?(?:"
    + _PARTICIPLE
    + "|"
    + _THIRD_PERSON_VERB
    + r"))",
)
# How something comes across: "reads as if …", "looks like …", "it seems …".
_SEEMING = re.compile(
    r"\bas\s+(?:if|though)\b|\b(?:reads?|looks?|sounds?|seems?|feels?)\s+(?:like|as)\b", re.I
)
_ALWAYS_NEVER_WORD = re.compile(r"\b(?:always|never)\b", re.I)
# "in the future" inside a purpose, a condition or a prediction ("add a test so we don't break
# this in the future", "if X might be needed in the future", "it will fail in the future"): about
# the product's future, not a standing time for the agent.
_FUTURE_OF_THE_PRODUCT = re.compile(
    r"(\b(?:so(?:\s+that)?\s+(?:we|it|they|this|that|nobody|no\s+one|users?|people)|"
    r"(?:might|may|could|will|won'?t)\s+(?:\w+\s+)?(?:be|break|need|fail|change|happen|cause)|"
    r"to\s+(?:avoid|prevent))\b"
    r"[^,.;:!?]*?)\bin\s+(?:the\s+)?future\b",
    re.I,
)


def plain_intent(sentence: str) -> str:
    """The sentence with the markers that only seem to address the agent made neutral: a
    descriptive "always/never" ("it never executes", "never shown") reads "still", and "in the
    future" inside a purpose, condition or prediction reads "later". Cues are matched on this."""
    if "lways" in sentence or "ever" in sentence:
        sentence = DESCRIBES_BEHAVIOUR.sub("still", sentence)
        seeming = _SEEMING.search(sentence)
        if seeming:  # "reads as if we start a new branch always": how something comes across
            after = _ALWAYS_NEVER_WORD.sub("still", sentence[seeming.end() :])
            sentence = sentence[: seeming.end()] + after
    if "future" in sentence:
        sentence = _FUTURE_OF_THE_PRODUCT.sub(r"\1later", sentence)
    return sentence


# --- one-off requests -----------------------------------------------------------------------------

# A request for this task only: "go ahead and …", "for now", "this time", "here" at the end, "in
# this file/function/PR" (a scope of one), "can you …".
ONE_OFF = re.compile(
    r"^(?:ok(?:ay)?,?\s+|so,?\s+|now,?\s+|yes,?\s+|great,?\s+)?(?:go\s+ahead|let'?s|please\s+go|"
    r"proceed|continue|now\s+(?:let'?s|go)|next,?\s+|then,?\s+)\b"
    r"|\b(?:for\s+now|for\s+the\s+time\s+being|this\s+time|right\s+now|at\s+the\s+moment|"
    r"for\s+this\s+(?:task|one|file|function|pr|change|commit|feature|test)|in\s+this\s+"
    r"(?:file|function|method|class|pr|commit|branch|test|component|module))\b",
    re.I,
)


# A sentence about something else ("Every time a change is pushed, the CI system builds it"):
# a third-person subject and nothing addressed to the agent or the team.
THIRD_PERSON = re.compile(
    r"^(?:(?:like|so|and|but|also|then|i\s+mean|because|since)[,\s]+)?(?:(?:every\s+time|whenever|each\s+time)\b[^,]*,\s*)?(?:the|a|an|it|its|this|that|these|"
    r"those|they|there|he|she|his|her|their)\b",
    re.I,
)
# A description of the code or the product: the main clause (after an "if/when/while/to …,"
# clause) has a third-person subject, a name written as code ("AgentPercentage reports …"), or
# none at all before a participle ("Tools passed as a string instead of …").
DESCRIPTION = re.compile(
    r"^(?i:(?:like|so|and|but|also|then|i\s+mean|because|since)[,\s]+)?"
    r"(?i:(?:if|when|whenever|while|once|after|before|because|since|although|though|to)\b[^,]*,\s*)?"
    r"(?:(?i:the|a|an|it|its|this|that|these|those|they|there|their)\b"
    r"|[A-Za-z_]*[a-z][A-Z]\w*\b|[\w.]+\(\)"
    r"|[A-Z]?[a-z]+\s+(?:passed|called|used|returned|set|stored|shown|written|computed|"
    r"ignored|skipped)\b)",
)
TO_THE_AGENT = re.compile(r"\b(?:you|your|we|our|us|let'?s|please|i\s+want|i'?d\s+like)\b", re.I)


# A request to record a rule whose only object is a pronoun: "add this to CLAUDE.md", "put that
# in your rules", "can you make it a rule?".
_CONTENT_FREE_REQUEST = re.compile(
    r"^(?:[\w']+[\s,]+){0,4}?(?:add|put|write|record|note|save|make)\s+(?:this|that|it|them)\s+"
    r"(?:to|in|into|as)\s+(?:a\s+|the\s+|your\s+|our\s+)?@?[\w./-]+(?:\s+(?:file|rules?))?"
    r"(?:\s+(?:somehow|please|too|as\s+well))?\s*[.!?]*$",
    re.I,
)


# "add guidance into CLAUDE.md for future test creation": names the rule's topic, not the rule;
# stored as it stands it tells a later session nothing to do. A candidate, for review.
_TOPIC_ONLY_NOTE = re.compile(
    _ADD_NOTE_TO_RULES
    + r"[^.?!:]{0,20}?\b(?:for|on|about)\s+(?:(?:the|future|all|any|new|every)\s+)*"
    r"[\w-]+(?:\s+[\w-]+)?(?:\s+(?:if|when|unless)\b[^.?!:]*)?\s*[.!?]*$",
    re.I,
)


# The scope named outright: "in this repo …", "for this project …", "as a (general) rule".
_NAMED_SCOPE = re.compile(
    r"\b(?:in|for)\s+this\s+(?:repo(?:sitory)?|project|codebase|code\s*base|team|monorepo)\b"
    r"|\bas\s+a\s+(?:general\s+)?rule\b",
    re.I,
)


def marked(sentence: str) -> bool:
    """True when a rule-like sentence says outright that it lasts: always/never to the agent, a
    standing time ("from now on", "next time"), a request to record a rule, "remember that we",
    or the scope named ("in this repo", "as a rule"). Inside a long discussion prompt a habit
    stated in passing ("we only X", "I don't want Y", "use it everywhere") is often about the
    design at hand; without one of these it waits for recurrence or review (tier C)."""
    sentence = plain_intent(sentence)
    return bool(
        ALWAYS_NEVER.search(sentence)
        or STANDING_TIME.search(sentence)
        or RULE_REQUEST.search(sentence)
        or REMEMBER.search(sentence)
        or _NAMED_SCOPE.search(sentence)
    )


# "in (the) future" alone, which a hedge turns into "some day" ("we might improve this in future").
_VAGUE_FUTURE = re.compile(IN_FUTURE, re.I)


# The verbs of a request that points back at what came before ("… to reflect this").
POINTS_BACK_VERB = r"(?:take|incorporate|include|reflect|cover|capture|account\s+for|match)"
# "update the rules to take these suggestions into account": the rule is in what came before.
_POINTS_BACK = re.compile(
    r"\bto\s+" + POINTS_BACK_VERB + r"\s+"
    r"(?:all\s+)?(?:these|this|that|those|them|it|the\s+above|your|my|our)\b"
    r"(?:\s+(?:suggestions?|changes?|feedback|points?|notes?|comments?|ideas?|findings?|"
    r"learnings?|decisions?))?(?:\s+into\s+account)?\s*[.!?]*$",
    re.I,
)


# "Make it a habit." on its own: what "it" is was said before.
_CONTENT_FREE_STANDING = re.compile(
    r"^(?:[\w']+[\s,]+){0,3}?(?:" + MAKE_IT_STANDING + r")(?:\s+(?:in|for|of)\s+(?:your|our|the)\s+"
    r"(?:workflow|process|work))?(?:\s+(?:from\s+now\s+on|going\s+forward|please))?\s*[.!?]*$",
    re.I,
)


def _content_free(sentence: str) -> bool:
    return bool(
        _CONTENT_FREE_REQUEST.match(sentence)
        or _CONTENT_FREE_STANDING.match(sentence)
        or _TOPIC_ONLY_NOTE.search(sentence)
        or _POINTS_BACK.search(sentence)
    )


def rule_request_without_rule(sentence: str) -> bool:
    """A request to write a rule down that does not say the rule ("Add this to CLAUDE.md",
    "add guidance into CLAUDE.md for future test creation"): the rule is in the conversation."""
    sentence = plain_intent(sentence)
    return bool(RULE_REQUEST.search(sentence)) and _content_free(sentence)


def tier_of(sentence: str, *, first: bool, correction: bool, said: str = "") -> str:
    """Tier of a rule-like sentence: A when it is unmistakably meant to last (a standing time,
    always/never to the agent, a project convention, "remember that we", a rule request, a
    practice applied everywhere or a writing style, which hold beyond any one task), B for
    a correction of the last action that names the right way, or for a reaction that forbids a
    kind of action and says why (`reasoned_prohibition` on `said`, the clause with its reason,
    which `sentence` leaves out), C (candidate) otherwise. A hedge, a request about one work
    item or a one-off marker leave it a candidate."""
    said = said or sentence
    sentence = plain_intent(sentence)
    timed = bool(STANDING_TIME.search(sentence))
    if LEANS_ON_CONVERSATION.search(sentence) or DOC_REQUEST.match(sentence):
        return TIER_INFERRED
    if RULE_REQUEST.search(sentence) and not HEDGE.search(sentence):
        # "Add this to CLAUDE.md": the rule is in what came before, not in the words kept
        return TIER_INFERRED if _content_free(sentence) else TIER_EXPLICIT
    if HEDGE.search(sentence) and not STANDING_TIME.search(_VAGUE_FUTURE.sub(" ", sentence)):
        # "we might want to improve this in future": a maybe-later, not a rule
        return TIER_INFERRED
    if ABOUT_A_WORK_ITEM.match(sentence) and not timed:
        return TIER_INFERRED
    if CAPABILITY.search(sentence):
        return TIER_INFERRED
    standing = bool(
        timed
        or ALWAYS_NEVER.search(sentence)
        or PROJECT_CONVENTION.search(sentence)
        or REMEMBER.search(sentence)
        or EVERYWHERE.search(sentence)
        or WRITING_STYLE.search(sentence)
    )
    about_else = THIRD_PERSON.match(sentence) and not TO_THE_AGENT.search(sentence)
    if standing and (timed or not ONE_OFF.search(sentence)) and not about_else:
        return TIER_EXPLICIT
    corrects = (first and CORRECTION_LEAD.match(sentence)) or (
        correction and EXPLICIT_CORRECTION.search(sentence)
    )
    if (
        corrects
        and (RIGHT_WAY.search(sentence) or RIGHT_COMMAND.search(sentence))
        and not ONE_OFF.search(sentence)
        and not DEICTIC.search(sentence)
    ):
        return TIER_CORRECTION
    if first and reasoned_prohibition(said):
        return TIER_CORRECTION
    return TIER_INFERRED


def is_standing(sentence: str) -> bool:
    """Evidence strong enough to make a sentence rule-like on its own (the classifier's extra
    evidence for the genre): a standing time, always/never to the agent, a project convention,
    a rule request, "remember that we", a preference in passing or a choice between two named
    ways."""
    low = sentence.casefold()
    # Each group runs only when a word it needs is in the sentence: most sentences have none,
    # and this runs on the UserPromptSubmit path (≤ 1 ms per prompt).
    return working_habit(sentence) or any(
        any(word in low for word in words) and pattern.search(sentence) for pattern, words in _GATED
    )


# The words without which a group cannot match (a superset of its alternatives' literals).
_GATED: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (
        STANDING_TIME,
        ("ever", "now on", "forward", "future", "next time", "each time", "any time", "anytime",
         "all cases", "here on"),
    ),
    (
        PROJECT_CONVENTION,
        ("this repo", "this project", "this code", "this team", "this monorepo", "we always",
         "we never", "we only", "we don", "we do not", "rule", "convention", "standard", "policy",
         "style"),
    ),
    (REMEMBER, ("remember", "keep in mind", "forget")),
    (ALWAYS_NEVER, ("always", "never", "ever")),
    (
        RULE_REQUEST,
        ("rule", "guideline", "instruction", "convention", "memory", ".mdc", "claude.md",
         "agents.md", "copilot", "cursorrules", "standard", "habit", "norm",
         "routine", "part of"),
    ),
    (PREFERENCE_IN_PASSING, ("prefer", "rather", "we're", "we are", "is our")),
    (CONTRAST_CHOICE, ("not", "instead", "rather")),
)  # fmt: skip
