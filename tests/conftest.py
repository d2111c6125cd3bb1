from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from memory.models import ApiToken

# Chromium and onnxruntime write caches under HOME; keep them out of the user's home.
os.environ.setdefault("ENGRAM_TEST_HOME", tempfile.mkdtemp(prefix="engram-home-"))
os.environ["HOME"] = os.environ["ENGRAM_TEST_HOME"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL")
    for item in items:
        if "postgres_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _test_defaults(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fast password hashing (the production hasher costs ~0.3 s per user), a fresh
    in-process dense index, which must not outlive a test's rolled-back rows, and pytest's
    temporary folder standing for the allowed transcript and project folders (the hostile-input
    tests narrow them)."""
    from memory.integrations.claude_code import reminder_cache_clear
    from memory.search import legs as search

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No test reaches Claude: without the `fake_claude` fixture every LLM feature has no key.
    settings.ANTHROPIC_API_KEY = ""
    allowed = [str(tmp_path_factory.getbasetemp())]
    settings.ENGRAM_TRANSCRIPT_DIRS = allowed
    settings.ENGRAM_PROJECT_ROOTS = allowed
    search.dense_index_clear()
    reminder_cache_clear()
    yield
    search.dense_index_clear()
    reminder_cache_clear()


@pytest.fixture
def owner(db: Any) -> Any:
    return get_user_model().objects.create_user(username="alice", password="alice-pass-123")


@pytest.fixture
def other_owner(db: Any) -> Any:
    return get_user_model().objects.create_user(username="bob", password="bob-pass-123")


@pytest.fixture
def logged_in(owner: Any) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def token(owner: Any) -> str:
    _, raw = ApiToken.issue(owner=owner, name="test")
    return raw


@pytest.fixture
def api(token: str) -> Client:
    """A client that sends the owner's bearer token."""
    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def other_api(other_owner: Any) -> Client:
    _, raw = ApiToken.issue(owner=other_owner, name="other")
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def tmp_home(tmp_path: Any) -> str:
    home = tmp_path / "home"
    home.mkdir()
    return str(home)


@pytest.fixture
def fake_claude(settings: Any) -> Iterator[Any]:
    """Claude faked at the HTTP transport with a key set: LLM features take their LLM path."""
    from memory.services import llm
    from tests.fake_claude import FakeClaude

    fake = FakeClaude()
    settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
    settings.ENGRAM_LLM_RETRIES = 2
    llm.use_transport(fake.transport())
    yield fake
    llm.use_transport(None)
