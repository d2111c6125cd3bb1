"""A hook request as a replay sends it: answered by the server, waiting out its rate limit.

A replay sends a session's hooks as fast as the machine runs them, far faster than a person
works; on a fast machine that passes the per-token limit (`ENGRAM_RATE_LIMIT_PER_MINUTE`), and
the server answers 429 with the seconds to wait. The replay waits and sends the request again,
as a client should.
"""

from __future__ import annotations

import json
import time
from http import HTTPStatus
from typing import Any

MAX_WAITS = 120  # two minutes of waiting at the most: a limit that never lifts is a failure


def post_hook(client: Any, url: str, body: dict[str, Any]) -> Any:
    """POST `body` as JSON to `url` with a Django test client; the answer that is not a 429."""
    for _ in range(MAX_WAITS):
        answer = client.post(url, json.dumps(body), content_type="application/json")
        if answer.status_code != HTTPStatus.TOO_MANY_REQUESTS:
            return answer
        try:
            wait = float(answer.json()["details"]["retry_after_seconds"])
        except (ValueError, KeyError, TypeError):
            wait = 1.0
        time.sleep(min(max(wait, 0.1), 5.0))
    return answer
