"""Episodes: append-only capture and the timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from memory import validation
from memory.errors import InvalidInput
from memory.models import AgentSession, Episode, Event, IdSequence
from memory.services.events import event_record
from memory.validation import check_text

MAX_TIMELINE = 200


def episode_capture(
    *,
    owner: Any,
    summary: str,
    agent: str = "",
    channel: str = "",
    session: AgentSession | None = None,
    timestamp: datetime | None = None,
) -> Episode:
    """Append one episode; a secret in the summary rejects it (nothing stored)."""
    summary = validation.text("summary", summary, limit=validation.MAX_TEXT_CHARS, required=True)
    agent = validation.text("agent", agent, limit=100)
    channel = validation.text("channel", channel, limit=100)
    check_text(summary, injections=False)
    when = timestamp or timezone.now()
    episode = Episode.objects.create(
        owner=owner,
        episode_id=IdSequence.next_id(owner=owner, prefix="EP", when=when),
        timestamp=when,
        summary=summary,
        agent=agent,
        channel=channel,
        session=session,
    )
    event_record(
        owner=owner, event=Event.EPISODE_CAPTURED, actor=agent, data={"episode": episode.episode_id}
    )
    return episode


def episode_timeline(
    *,
    owner: Any,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    channel: str | None = None,
    q: str | None = None,
) -> QuerySet[Episode]:
    """Episodes newest first, filtered by time range, agent, channel and free text."""
    if since and until and until < since:
        raise InvalidInput("until", "must not be before since")
    qs = Episode.objects.filter(owner=owner)
    if since:
        qs = qs.filter(timestamp__gte=since)
    if until:
        qs = qs.filter(timestamp__lte=until)
    if agent:
        qs = qs.filter(agent=agent)
    if channel:
        qs = qs.filter(channel=channel)
    if q:
        for word in q.split()[:8]:
            qs = qs.filter(Q(summary__icontains=word))
    return qs.order_by("-timestamp", "-id")
