"""Another app's review kind: registered actions, decided inside the decision's transaction."""

from __future__ import annotations

from typing import Any

import pytest

from memory.errors import InvalidInput
from memory.models import LifecycleEvent, ReviewItem
from memory.services import review


@pytest.fixture
def registered() -> Any:
    seen: list[dict[str, Any]] = []

    def apply(**kwargs: Any) -> dict[str, Any]:
        seen.append(kwargs)
        if kwargs["edits"].get("explode"):
            raise InvalidInput("text", "must not explode")
        return {"artifact": "rules/x.md"}

    saved = review.ACTIONS[ReviewItem.Kind.PROMPT]
    # The patterns app registers this kind from its ready(): put its handler back afterwards.
    saved_handler = review.HANDLERS.get(ReviewItem.Kind.PROMPT)
    review.kind_register(
        ReviewItem.Kind.PROMPT, actions=("defer", "approve", "reject"), apply=apply
    )
    yield seen
    review.HANDLERS.pop(ReviewItem.Kind.PROMPT)
    if saved_handler is not None:
        review.HANDLERS[ReviewItem.Kind.PROMPT] = saved_handler
    review.ACTIONS[ReviewItem.Kind.PROMPT] = saved


@pytest.mark.django_db
def test_a_registered_kind_is_decided_by_its_app(owner: Any, registered: Any) -> None:
    item = ReviewItem.objects.create(owner=owner, kind=ReviewItem.Kind.PROMPT)
    review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    item.refresh_from_db()
    assert (item.state, item.decision) == ("done", "approve")
    assert [call["action"] for call in registered] == ["approve"]
    event = LifecycleEvent.objects.get(event="review_decided")
    assert event.data["artifact"] == "rules/x.md"


@pytest.mark.django_db
def test_a_refusal_inside_the_apps_handler_changes_nothing(owner: Any, registered: Any) -> None:
    item = ReviewItem.objects.create(owner=owner, kind=ReviewItem.Kind.PROMPT)
    with pytest.raises(InvalidInput):
        review.review_decide(
            owner=owner, item=item, action="approve", actor="a", edits={"explode": True}
        )
    item.refresh_from_db()
    assert item.state == "pending"
    assert not LifecycleEvent.objects.exists()


def test_registering_needs_a_known_kind_and_defer_first() -> None:
    with pytest.raises(ValueError, match="defer"):
        review.kind_register("prompt", actions=("approve",), apply=lambda **kw: None)
    with pytest.raises(ValueError, match=r"not a ReviewItem\.Kind"):
        review.kind_register("nonsense", actions=("defer",), apply=lambda **kw: None)
