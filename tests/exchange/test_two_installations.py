"""A packet exported by one installation imports into another.

The other installation is real: a separate process with its own SQLite database, data directory
and SECRET_KEY (so its own identity, encrypted under its own secret). It migrates, learns two
lessons, writes their abstract and exports it with `manage.py exchange_export`; this test's
database then imports the bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from exchange.models import Packet, Peer
from exchange.packet import parse_packet
from exchange.services.incoming import packet_import
from exchange.services.peers import peer_trust
from memory.models import Engram

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]

OTHER_INSTALLATION = """
import sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from exchange.services.identity import identity_get
from memory.services.engrams import engram_learn
from memory.services.review import abstract_create

call_command("migrate", verbosity=0)
carol = get_user_model().objects.create_user(username="carol", password="carol-pass-123")
sources = [
    engram_learn(owner=carol, statement=text, scope=scope, source="user").engram
    for text, scope in (
        ("Pin the Node version in .nvmrc so CI and laptops build alike.", "project:web"),
        ("Pin the Python version in .python-version for identical builds.", "project:api"),
    )
]
abstract_create(
    owner=carol,
    sources=sources,
    statement="Pin the language runtime version in the repository.",
    structure="Runtime version file checked in -> every machine builds with it.",
    applies_when="A project is built on more than one machine.",
    visibility="public",
    actor="test",
)
call_command("exchange_export", "--user", "carol", "--out", sys.argv[1])
print(identity_get(owner=carol).key_id)
"""


def test_a_packet_from_another_installation_imports_here(owner: Any, tmp_path: Path) -> None:
    packet_file = tmp_path / "packet.json"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "engramsite.settings",
        "DEBUG": "1",
        "SECRET_KEY": "the-other-installation-has-its-own-secret",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'other.sqlite3'}",
        "ENGRAM_DATA_DIR": str(tmp_path / "other-data"),
        "ENGRAM_EXCHANGE_KEY": "",
        "CELERY_TASK_ALWAYS_EAGER": "1",
    }
    env.pop("CELERY_BROKER_URL", None)
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", OTHER_INSTALLATION, str(packet_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    their_key = done.stdout.strip().splitlines()[-1]
    raw = packet_file.read_bytes()
    assert parse_packet(raw)["sender"]["key_id"] == their_key  # type: ignore[index]

    first = packet_import(owner=owner, raw=raw)
    assert (first.status, first.gate) == ("quarantined", "trusted_key")
    peer = Peer.objects.get(owner=owner, key_id=their_key)
    assert peer.name == "carol"

    [result] = peer_trust(owner=owner, peer=peer)
    assert result.status == "accepted", result.reasons
    engram = Engram.objects.get(engram_id=result.items[0].engram)
    assert engram.statement == "Pin the language runtime version in the repository."
    assert engram.applies_when == "A project is built on more than one machine."
    assert (engram.kind, engram.status) == ("ABS", "candidate")
    assert engram.provenance["exchange"]["origin"] == their_key
    assert engram.provenance["exchange"]["chain"] == [their_key]
    assert Packet.objects.get(owner=owner).status == "accepted"
    assert packet_import(owner=owner, raw=raw).gate == "replay"
