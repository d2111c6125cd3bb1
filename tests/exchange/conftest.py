from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memory import search


@pytest.fixture(autouse=True)
def _fast(settings: Any) -> Iterator[None]:
    # The owner fixtures hash passwords; the default hasher costs ~0.3 s per user. The SQLite
    # dense index is cached per process and must not outlive a test's rolled-back rows.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    search.dense_index_clear()
    yield
    search.dense_index_clear()
