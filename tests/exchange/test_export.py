"""Export: only eligible abstracts, signed over RFC 8785; metadata and fitness; the commands."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from exchange import crypto
from exchange.models import Packet, PacketItem
from exchange.packet import parse_packet, signing_bytes
from exchange.services.identity import identity_get
from exchange.services.incoming import packet_import
from exchange.services.outgoing import fitness_refresh, packet_export, packet_yaml
from exchange.tasks import refresh_fitness
from memory.errors import DomainError
from memory.models import Engram
from memory.services.engrams import engram_activate
from tests.exchange.helpers import ALICE, LESSONS, abstract_item, make_abstract, signed, trust, wire
from tests.memory.helpers import make_engram

pytestmark = pytest.mark.django_db


def test_an_export_is_signed_by_the_owners_key_over_the_canonical_form(owner: Any) -> None:
    abstract = make_abstract(owner)
    result = packet_export(owner=owner)
    identity = identity_get(owner=owner)
    packet = parse_packet(result.raw)
    assert packet["sender"] == {
        "name": "alice",
        "key_id": identity.key_id,
        "public_key": identity.public_key,
    }
    signature = crypto.b64decode(packet["signature"])  # type: ignore[arg-type]
    assert crypto.verify(identity.public_raw, signing_bytes(packet), signature)
    [item] = packet["abstracts"]  # type: ignore[misc]
    assert item["id"] == abstract.engram_id
    assert item["statement"] == abstract.statement
    assert item["provenance"] == {"origin": identity.key_id, "chain": [identity.key_id]}
    assert item["instances"] == [{"domain": "general", "derivation_count": 2}]
    assert set(item["exchange_metadata"]) == {
        "fitness_score",
        "environmental_diversity",
        "total_derivations",
        "adoption_count",
        "contradiction_rate",
    }
    saved = Packet.objects.get(direction="out")
    assert (saved.packet_id, saved.status, saved.item_count) == (packet["id"], "exported", 1)
    assert PacketItem.objects.get(packet=saved).engram == abstract


def test_only_public_or_template_active_abstracts_are_exported(owner: Any) -> None:
    public = make_abstract(owner, statement="Public lesson about retries.")
    template = make_abstract(
        owner, statement="Template lesson about timeouts.", visibility="template"
    )
    make_abstract(owner, statement="Private lesson about logging.", visibility="private")
    retired = make_abstract(owner, statement="Retired lesson about caches.")
    Engram.objects.filter(pk=retired.pk).update(status="retired")
    make_engram(owner, statement="A concrete public lesson.", visibility="public")
    packet = packet_export(owner=owner).packet
    ids = {item["id"] for item in packet["abstracts"]}  # type: ignore[attr-defined]
    assert ids == {public.engram_id, template.engram_id}


def test_asking_for_an_ineligible_abstract_names_why_and_writes_nothing(owner: Any) -> None:
    private = make_abstract(owner, visibility="private")
    concrete = make_engram(owner, statement="Concrete", visibility="public")
    with pytest.raises(DomainError) as info:
        packet_export(owner=owner, ids=[private.engram_id])
    assert "visibility is private" in info.value.message
    with pytest.raises(DomainError) as info:
        packet_export(owner=owner, ids=[concrete.engram_id])
    assert "no such abstract" in info.value.message
    with pytest.raises(DomainError) as info:
        packet_export(owner=owner)
    assert "nothing to export" in info.value.message
    assert not Packet.objects.exists()


def test_an_abstract_holding_a_secret_is_not_exported(owner: Any) -> None:
    abstract = make_abstract(owner)
    Engram.objects.filter(pk=abstract.pk).update(
        structure="Connect with postgres://admin:hunter2hunter2@db.example.com/prod"
    )
    with pytest.raises(DomainError) as info:
        packet_export(owner=owner, ids=[abstract.engram_id])
    assert "secret" in info.value.message
    assert "hunter2" not in info.value.message


def test_a_preview_writes_nothing_and_reads_as_yaml(owner: Any) -> None:
    make_abstract(owner)
    result = packet_export(owner=owner, record=False)
    assert not Packet.objects.exists()
    assert yaml.safe_load(packet_yaml(result.packet)) == result.packet


def test_a_re_exported_import_extends_its_provenance_chain(owner: Any) -> None:
    trust(owner)
    result = packet_import(owner=owner, raw=wire(signed([abstract_item(LESSONS[0])])))
    engram = Engram.objects.get(engram_id=result.items[0].engram)
    engram_activate(owner=owner, engram=engram)
    Engram.objects.filter(pk=engram.pk).update(visibility="public")
    packet = packet_export(owner=owner).packet
    [item] = packet["abstracts"]  # type: ignore[misc]
    me = identity_get(owner=owner).key_id
    assert item["provenance"] == {"origin": ALICE.key_id, "chain": [ALICE.key_id, me]}
    assert item["instances"] == [{"domain": "backend", "derivation_count": 3}]
    assert item["license"] == "CC0-1.0"
    # Declared 3 adoptions, plus this installation.
    assert item["exchange_metadata"]["adoption_count"] == 4


def test_fitness_follows_the_design_formula(owner: Any) -> None:
    abstract = make_abstract(owner)
    fitness_refresh(owner=owner, now=abstract.created_at)
    abstract.refresh_from_db()
    metadata = abstract.exchange_metadata
    # adoption 1, diversity 2 (two scopes), RS_avg 0.7, age 0, no contradictions.
    expected = 0.4 * math.log2(1 + 1 * 2) / 6 + 0.3 * 0.7 + 0.2 * 0 + 0.1 * 1
    assert metadata["fitness_score"] == round(expected, 4)
    assert metadata["environmental_diversity"] == 2
    assert metadata["adoption_count"] == 1
    assert metadata["total_derivations"] == 2
    assert metadata["contradiction_rate"] == 0


def test_fitness_refresh_is_idempotent(owner: Any) -> None:
    abstract = make_abstract(owner)
    now = abstract.created_at + timedelta(days=10)
    assert fitness_refresh(owner=owner, now=now) == 1
    assert fitness_refresh(owner=owner, now=now) == 0


def test_the_fitness_task_run_twice_changes_nothing_the_second_time(owner: Any) -> None:
    make_abstract(owner)
    assert refresh_fitness() == 1
    before = list(Engram.objects.values_list("exchange_metadata", flat=True))
    refresh_fitness()
    assert list(Engram.objects.values_list("exchange_metadata", flat=True)) == before


def test_the_commands_export_and_import_a_packet(
    owner: Any, other_owner: Any, tmp_path: Path
) -> None:
    make_abstract(owner)
    path = tmp_path / "out" / "packet.json"
    call_command("exchange_export", "--user", "alice", "--out", str(path), stderr=StringIO())
    out = StringIO()
    call_command("exchange_import", str(path), "--user", "bob", stdout=out)
    assert json.loads(out.getvalue())["status"] == "quarantined"
    with pytest.raises(CommandError, match="replay"):
        call_command("exchange_import", str(path), "--user", "bob", stdout=StringIO())


def test_the_export_command_refuses_with_nothing_to_export(owner: Any) -> None:
    with pytest.raises(CommandError, match="nothing to export"):
        call_command("exchange_export", "--user", "alice", stdout=StringIO())


def test_the_yaml_view_of_the_command_is_not_recorded(owner: Any, tmp_path: Path) -> None:
    make_abstract(owner)
    path = tmp_path / "view.yaml"
    call_command(
        "exchange_export", "--user", "alice", "--yaml", "--out", str(path), stderr=StringIO()
    )
    assert yaml.safe_load(path.read_text())["format"] == "engram-exchange/1"
    assert not Packet.objects.exists()
