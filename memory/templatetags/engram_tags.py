"""Small display filters for the dashboard templates."""

from __future__ import annotations

from typing import Any

from django import template

from memory.models import LifecycleEvent
from memory.selectors import USER_SOURCES

register = template.Library()

ACTION_LABELS = {
    "approve": "Approve",
    "reject": "Reject",
    "edit": "Edit and approve",
    "defer": "Defer",
    "keep_new": "Keep new",
    "keep_old": "Keep old",
    "merge": "Merge",
    "both_valid": "Both valid",
    "keep_both": "Keep both",
    "reinforce": "Reinforce",
    "let_fade": "Let fade",
    "retire": "Retire",
    "write": "Write abstract",
    "dismiss": "Dismiss",
    "one_off": "It was a one-off",
    "wrong": "Wrong",
}
# Shortcut keys per action (see static/js/engram.js and the shortcuts dialog).
ACTION_KEYS = {
    "approve": "a",
    "reject": "r",
    "defer": "d",
    "edit": "e",
    "keep_new": "1",
    "keep_old": "2",
    "merge": "m",
    "both_valid": "b",
    "keep_both": "a",
    "reinforce": "a",
    "let_fade": "l",
    "retire": "r",
    "write": "e",
    "dismiss": "r",
    "one_off": "o",
    "wrong": "w",
}
PAST = {
    "approve": "Approved",
    "reject": "Rejected",
    "edit": "Edited and approved",
    "defer": "Deferred to tomorrow",
    "keep_new": "Kept the new engram",
    "keep_old": "Kept the old engram",
    "merge": "Merged",
    "both_valid": "Kept both, with contraindications",
    "keep_both": "Kept both",
    "reinforce": "Reinforced",
    "let_fade": "Left to fade",
    "retire": "Retired",
    "write": "Wrote the abstract",
    "dismiss": "Dismissed",
    "one_off": "A one-off: retired, and not captured again",
    "wrong": "Wrong: retired, and not captured again",
}


@register.filter
def action_label(action: str) -> str:
    return ACTION_LABELS.get(action, action.replace("_", " ").capitalize())


@register.filter
def said_by(engram: Any) -> str:
    """ "you" for what a person said (selectors.USER_SOURCES), else "learned"."""
    return "you" if getattr(engram, "source", "") in USER_SOURCES else "learned"


@register.filter
def action_key(action: str) -> str:
    return ACTION_KEYS.get(action, "")


@register.filter
def action_past(action: str) -> str:
    return PAST.get(action, action.replace("_", " ").capitalize())


@register.filter
def pct(value: Any) -> str:
    """0.634 -> "63 %"; None -> "—"."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.0f} %"


@register.filter
def fixed(value: Any, digits: int = 2) -> str:
    if value is None or value == "":
        return "—"
    return f"{float(value):.{int(digits)}f}"


@register.filter
def percent_width(value: Any, total: Any) -> str:
    """A CSS width for value / total, at least 1 % when the value is non-zero."""
    try:
        v, t = float(value), float(total)
    except (TypeError, ValueError):
        return "0%"
    if t <= 0 or v <= 0:
        return "0%"
    return f"{max(1.0, min(100.0, v / t * 100)):.1f}%"


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def pair_sides(item: Any) -> list[tuple[str, Any]]:
    """The two engrams of a contradiction or merge item, new first."""
    return [(label, e) for label, e in (("New", item.engram), ("Existing", item.other)) if e]


@register.filter
def event_summary(event: LifecycleEvent) -> str:
    """One readable line from an event's data."""
    data = event.data if isinstance(event.data, dict) else {}
    if "from" in data and "to" in data:
        return f"{data['from']} → {data['to']}"
    if event.event == "review_decided":
        text = f"{data.get('kind', '')}: {action_label(str(data.get('action', '')))}"
        if data.get("auto"):
            text += " (automatic)"
        return text
    if event.event == "feedback_received":
        return f"{data.get('signal', '')} (RS {float(data.get('rs', 0)):.2f})"
    if event.event == "engram_updated" and isinstance(data.get("changes"), dict):
        return "changed " + ", ".join(sorted(data["changes"])) + f" (v{data.get('version', '')})"
    if event.event == "engram_merged":
        return f"absorbed {data.get('merged', '')}"
    parts = []
    for key, value in list(data.items())[:3]:
        if isinstance(value, str | int | float | bool):
            parts.append(f"{key} {value}")
    return ", ".join(parts)
