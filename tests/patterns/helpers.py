"""Small helpers for success-pattern tests."""

from __future__ import annotations

from typing import Any

from patterns.models import SuccessPattern
from patterns.services.store import pattern_learn

HONEST_CODE = '''
def slugify(text):
    """Lower-case words joined by hyphens."""
    return "-".join(text.lower().split())


def test_slugify():
    assert slugify("Hello World") == "hello-world"
'''


def make_pattern(
    owner: Any, task: str = "Slugify a title for a URL", **fields: Any
) -> SuccessPattern:
    fields.setdefault("eval_score", 8.0)
    fields.setdefault("design", "split on whitespace, lower-case, join with hyphens")
    fields.setdefault("on_duplicate", "keep_both")
    return pattern_learn(owner=owner, task=task, **fields).pattern
