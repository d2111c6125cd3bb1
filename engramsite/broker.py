"""The embedded task transport: kombu's filesystem transport, each message whole or not at all.

kombu's filesystem transport creates a message's file, then locks it and writes it. A worker
polling the queue folder can move and read the file in between (a rename does not wait for the
lock): it reads nothing, fails to decode it, and the worker process dies. A burst of hooks (a
session's tool calls, an import) made that happen within minutes. Here a message is written
under a name the queue does not read and renamed into place when complete, so a reader sees all
of it or nothing; a message that still cannot be decoded (a file written by something else) is
logged and skipped instead of ending the worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

logger = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".part"  # the queue reads `<n>_<uuid>.<queue>.msg` only
MAX_UNREADABLE = 100  # unreadable messages skipped in one look at the queue, at most


class Channel(filesystem.Channel):
    # kombu's stubs name the second parameter `message`, its filesystem transport `payload`.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put `payload` onto `queue`: written under a partial name, renamed when whole."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL_SUFFIX
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        """The next message of `queue`; one that cannot be decoded is logged and skipped."""
        for _ in range(MAX_UNREADABLE):
            try:
                return super()._get(queue)
            except ValueError as exc:  # not JSON: the file is gone from the queue already
                logger.warning("skipped an unreadable message in queue %s: %s", queue, exc)
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
