from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange import crypto
from exchange.canonical import canonicalize
from exchange.packet import (
    FORMAT,
    GATES,
    MAX_ABSTRACTS,
    PacketError,
    SchemaError,
    build_packet,
    check_clock,
    new_packet_id,
    packet_digest,
    parse_created_at,
    parse_packet,
    serialize_packet,
    signing_bytes,
    validate_schema,
    verify_signature,
)

NOW = datetime(2026, 1, 15, 10, 30, 45, 123456, tzinfo=UTC)
PRIVATE_RAW, PUBLIC_RAW = crypto.generate_keypair()

Path = tuple[str | int, ...]


def make_abstract(**overrides: object) -> dict[str, object]:
    abstract: dict[str, object] = {
        "id": "ABS-2026-0110-001",
        "statement": "Run the migration check before merging schema changes.",
        "structure": "When <change> touches <schema>, verify <migration> first.",
        "applies_when": "a change edits models",
        "instances": [
            {"domain": "django", "derivation_count": 3},
            {"domain": "rails", "derivation_count": 1},
        ],
        "exchange_metadata": {
            "fitness_score": 0.62,
            "environmental_diversity": 2,
            "total_derivations": 4,
            "adoption_count": 5,
            "contradiction_rate": 0.1,
        },
        "provenance": {"origin": "alice-laptop", "chain": ["alice-laptop", "bob-server"]},
        "license": "CC-BY-4.0",
    }
    abstract.update(overrides)
    return abstract


def make_packet(**abstract_overrides: object) -> dict[str, object]:
    return build_packet(
        sender_name="alice",
        private_raw=PRIVATE_RAW,
        public_raw=PUBLIC_RAW,
        abstracts=[
            make_abstract(**abstract_overrides),
            make_abstract(
                id="ABS-2026-0111-002",
                statement="Prefer explicit field lists in API schemas.",
                exchange_metadata={
                    "fitness_score": 1,
                    "environmental_diversity": 0.5,
                    "total_derivations": 0,
                    "adoption_count": 0,
                    "contradiction_rate": 0,
                },
            ),
        ],
        now=NOW,
    )


def to_bytes(packet: object) -> bytes:
    return json.dumps(packet, ensure_ascii=False, indent=2).encode()


def get_at(value: object, path: Path) -> object:
    for part in path:
        value = value[part]  # type: ignore[index]
    return value


def set_at(packet: dict[str, object], path: Path, new: object) -> dict[str, object]:
    mutated = copy.deepcopy(packet)
    parent = get_at(mutated, path[:-1])
    parent[path[-1]] = new  # type: ignore[index]
    return mutated


def walk(value: object, path: Path = ()) -> Iterator[tuple[Path, object]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from walk(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from walk(child, (*path, index))


def changed_leaf(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        # Stay in [0,1] where possible so the signature gate, not the schema, has to catch it.
        return value - 0.125 if value >= 0.125 else value + 0.125
    assert isinstance(value, str)
    return value + "x"


def tampered_variants(packet: dict[str, object]) -> Iterator[tuple[str, dict[str, object]]]:
    for path, value in walk(packet):
        label = ".".join(map(str, path)) or "(root)"
        if isinstance(value, dict):
            for key in value:
                without = copy.deepcopy(value)
                del without[key]
                yield f"{label} drop {key}", set_at(packet, path, without) if path else without
            extra = {**value, "extra": "x"}
            yield f"{label} add key", set_at(packet, path, extra) if path else extra
        elif isinstance(value, list):
            if value:
                yield f"{label} remove item", set_at(packet, path, value[1:])
                yield f"{label} add item", set_at(packet, path, [*value, copy.deepcopy(value[-1])])
            yield f"{label} add new item", set_at(packet, path, [*value, "new"])
            if len(value) > 1:
                yield f"{label} swap items", set_at(packet, path, value[::-1])
        else:
            yield f"{label} change", set_at(packet, path, changed_leaf(value))


def test_gate_order_is_fixed() -> None:
    assert GATES == (
        "size",
        "schema",
        "signature",
        "trusted_key",
        "replay",
        "clock",
        "scan",
        "fitness",
        "source_cap",
        "duplicate",
    )


def test_it_builds_a_packet_with_the_documented_shape() -> None:
    packet = make_packet()

    assert list(packet) == ["format", "id", "created_at", "sender", "abstracts", "signature"]
    assert packet["format"] == FORMAT
    assert str(packet["id"]).startswith("LEP-2026-0115-")
    assert packet["created_at"] == "2026-01-15T10:30:45Z"
    assert packet["sender"] == {
        "name": "alice",
        "key_id": crypto.key_id(PUBLIC_RAW),
        "public_key": crypto.b64encode(PUBLIC_RAW),
    }
    assert len(crypto.b64decode(packet["signature"])) == 64  # type: ignore[arg-type]
    assert validate_schema(packet) == []


def test_it_signs_the_canonical_packet_without_the_signature() -> None:
    packet = make_packet()
    unsigned = {key: value for key, value in packet.items() if key != "signature"}

    assert signing_bytes(packet) == canonicalize(unsigned)
    assert crypto.verify(
        PUBLIC_RAW,
        canonicalize(unsigned),
        crypto.b64decode(packet["signature"]),  # type: ignore[arg-type]
    )
    assert verify_signature(packet)


def test_it_parses_its_own_packet_in_any_json_layout() -> None:
    packet = make_packet()

    assert parse_packet(to_bytes(packet)) == packet
    assert parse_packet(json.dumps(packet).encode()) == packet
    assert parse_packet(serialize_packet(packet)) == packet


def test_it_does_not_alias_the_callers_abstracts() -> None:
    abstracts = [make_abstract()]
    packet = build_packet(
        sender_name="a",
        private_raw=PRIVATE_RAW,
        public_raw=PUBLIC_RAW,
        abstracts=abstracts,
        now=NOW,
    )

    abstracts[0]["statement"] = "changed later"

    assert verify_signature(packet)


def test_it_refuses_to_build_an_invalid_packet() -> None:
    with pytest.raises(PacketError) as info:
        build_packet(
            sender_name="a",
            private_raw=PRIVATE_RAW,
            public_raw=PUBLIC_RAW,
            abstracts=[make_abstract(statement="")],
            now=NOW,
        )

    assert info.value.gate == "schema"
    assert info.value.details["errors"] == [
        {"path": "abstracts[0].statement", "message": "must not be blank"}
    ]


def test_it_refuses_to_build_with_a_mismatched_public_key() -> None:
    _, other_public = crypto.generate_keypair()

    with pytest.raises(ValueError, match="does not belong"):
        build_packet(
            sender_name="a",
            private_raw=PRIVATE_RAW,
            public_raw=other_public,
            abstracts=[make_abstract()],
            now=NOW,
        )


def test_it_refuses_to_build_with_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        build_packet(
            sender_name="a",
            private_raw=PRIVATE_RAW,
            public_raw=PUBLIC_RAW,
            abstracts=[make_abstract()],
            now=datetime(2026, 1, 15),  # noqa: DTZ001
        )


def test_new_packet_ids_use_the_utc_date_and_are_random() -> None:
    evening_in_new_york = datetime(2026, 3, 4, 23, 0, tzinfo=UTC) - timedelta(hours=0)
    ids = {new_packet_id(evening_in_new_york) for _ in range(50)}

    assert len(ids) == 50
    for packet_id in ids:
        prefix, year, day, token = packet_id.split("-")
        assert (prefix, year, day) == ("LEP", "2026", "0304")
        assert len(token) == 16
        assert token == token.lower()
        assert token.isalnum()


def test_the_tamper_matrix_covers_every_leaf_and_list() -> None:
    packet = make_packet()
    leaves = [path for path, value in walk(packet) if not isinstance(value, dict | list)]
    variants = dict(tampered_variants(packet))

    assert len(leaves) == 41  # 7 envelope leaves + 17 per abstract
    assert len(variants) > 100


@pytest.mark.parametrize(
    ("label", "tampered"), list(tampered_variants(make_packet())), ids=lambda v: str(v)[:60]
)
def test_it_rejects_every_tampered_packet(label: str, tampered: dict[str, object]) -> None:
    with pytest.raises(PacketError) as info:
        parse_packet(to_bytes(tampered))

    assert info.value.gate in {"schema", "signature"}, label


def test_it_rejects_a_different_valid_length_signature() -> None:
    packet = make_packet()
    forged = set_at(packet, ("signature",), crypto.b64encode(bytes(range(64))))

    with pytest.raises(PacketError) as info:
        parse_packet(to_bytes(forged))

    assert info.value.gate == "signature"


def test_it_rejects_a_signature_from_another_key_over_the_same_body() -> None:
    other_private, _ = crypto.generate_keypair()
    packet = make_packet()
    forged = set_at(
        packet, ("signature",), crypto.b64encode(crypto.sign(other_private, signing_bytes(packet)))
    )

    with pytest.raises(PacketError) as info:
        parse_packet(to_bytes(forged))

    assert info.value.gate == "signature"


def test_it_rejects_a_swapped_in_sender_key_at_the_signature_gate() -> None:
    _, other_public = crypto.generate_keypair()
    packet = make_packet()
    forged = set_at(
        packet,
        ("sender",),
        {
            "name": "alice",
            "key_id": crypto.key_id(other_public),
            "public_key": crypto.b64encode(other_public),
        },
    )

    with pytest.raises(PacketError) as info:
        parse_packet(to_bytes(forged))

    assert info.value.gate == "signature"
    assert info.value.details == {"key_id": crypto.key_id(other_public)}


def test_it_rejects_a_key_id_that_does_not_match_the_public_key() -> None:
    packet = make_packet()
    forged = set_at(packet, ("sender", "key_id"), "0123456789abcdef")

    with pytest.raises(PacketError) as info:
        parse_packet(to_bytes(forged))

    assert info.value.gate == "schema"
    assert {"path": "sender.key_id", "message": "does not match the public key"} in (
        info.value.details["errors"]  # type: ignore[operator]
    )


def test_it_rejects_an_oversized_packet_before_parsing() -> None:
    raw = b"{" + b" " * 1_048_576 + b"}"

    with pytest.raises(PacketError) as info:
        parse_packet(raw)

    assert info.value.gate == "size"
    assert info.value.details == {"size": 1_048_578, "max_bytes": 1_048_576}


def test_it_accepts_a_packet_of_exactly_the_size_limit() -> None:
    raw = to_bytes(make_packet())

    assert parse_packet(raw, max_bytes=len(raw))
    with pytest.raises(PacketError, match="size"):
        parse_packet(raw, max_bytes=len(raw) - 1)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"", "not valid JSON"),
        (b"{", "not valid JSON"),
        (b"[]", "must be an object"),
        (b"null", "must be an object"),
        (b"\xff\xfe{}", "UTF-8"),
        (b'\xef\xbb\xbf{"format": 1}', "not valid JSON"),
        (b'{"a": 1, "a": 2}', "duplicate key"),
        (b'{"a": {"b": 1, "b": 1}}', "duplicate key"),
        (b'{"a": NaN}', "NaN"),
        (b'{"a": Infinity}', "Infinity"),
        (b'{"a": -Infinity}', "Infinity"),
        (b'{"a": ' + b"9" * 5000 + b"}", "not acceptable JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not acceptable JSON"),
    ],
)
def test_it_rejects_malformed_json_at_the_schema_gate(raw: bytes, needle: str) -> None:
    with pytest.raises(PacketError, match=needle) as info:
        parse_packet(raw)

    assert info.value.gate == "schema"


def test_it_rejects_duplicate_keys_inside_an_otherwise_valid_packet() -> None:
    text = to_bytes(make_packet()).decode()
    duplicated = text.replace('"format": ', '"format": "engram-exchange/1", "format": ', 1)

    with pytest.raises(PacketError, match="duplicate key 'format'") as info:
        parse_packet(duplicated.encode())

    assert info.value.gate == "schema"


def test_it_rejects_an_overflowing_float_literal() -> None:
    text = (
        to_bytes(make_packet()).decode().replace('"fitness_score": 0.62', '"fitness_score": 1e400')
    )

    with pytest.raises(PacketError) as info:
        parse_packet(text.encode())

    assert info.value.gate == "schema"
    assert {
        "path": "abstracts[0].exchange_metadata.fitness_score",
        "message": "must be finite",
    } in (
        info.value.details["errors"]  # type: ignore[operator]
    )


def path_label(path: Path) -> str:
    label = ""
    for part in path:
        label += f"[{part}]" if isinstance(part, int) else f".{part}" if label else part
    return label


def paths_of(errors: list[SchemaError]) -> dict[str, str]:
    return {error.path: error.message for error in errors}


def test_schema_reports_missing_and_unknown_keys_with_paths() -> None:
    packet = make_packet()
    del packet["abstracts"][1]["license"]  # type: ignore[index]
    packet["abstracts"][0]["instances"][1]["colour"] = "red"  # type: ignore[index]
    packet["hello"] = 1

    assert paths_of(validate_schema(packet)) == {
        "abstracts[1].license": "missing key",
        "abstracts[0].instances[1].colour": "unknown key",
        "hello": "unknown key",
    }


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("abstracts", 0, "instances", 0, "derivation_count"), True, "must be an integer"),
        (("abstracts", 0, "instances", 0, "derivation_count"), 1.0, "must be an integer"),
        (("abstracts", 0, "instances", 0, "derivation_count"), -1, "must be between"),
        (("abstracts", 0, "instances", 0, "derivation_count"), 2**53, "must be between"),
        (("abstracts", 0, "instances", 0, "domain"), " ", "must not be blank"),
        (("abstracts", 0, "instances", 0), "django", "must be an object"),
        (("abstracts", 0, "instances"), {}, "must be a list"),
        (("abstracts", 0, "exchange_metadata", "fitness_score"), 1.5, "must be between 0 and 1"),
        (("abstracts", 0, "exchange_metadata", "fitness_score"), -0.01, "must be between"),
        (("abstracts", 0, "exchange_metadata", "fitness_score"), "0.5", "must be a number"),
        (("abstracts", 0, "exchange_metadata", "fitness_score"), False, "must be a number"),
        (("abstracts", 0, "exchange_metadata", "contradiction_rate"), 2, "must be between"),
        (("abstracts", 0, "exchange_metadata", "environmental_diversity"), -1, "must be between"),
        (("abstracts", 0, "exchange_metadata", "adoption_count"), 0.5, "must be an integer"),
        (("abstracts", 0, "exchange_metadata", "total_derivations"), -3, "must be between"),
        (("abstracts", 0, "statement"), "x" * 2001, "at most 2000 characters"),
        (("abstracts", 0, "statement"), "", "must not be blank"),
        (("abstracts", 0, "statement"), "a\x00b", "NUL"),
        (("abstracts", 0, "statement"), "a\ud800b", "lone surrogates"),
        (("abstracts", 0, "statement"), ["a"], "must be a string"),
        (("abstracts", 0, "structure"), None, "must be a string"),
        (("abstracts", 0, "id"), "ENG-2026-0110-001", "must look like ABS-"),
        (("abstracts", 0, "id"), "ABS-../../etc", "must look like ABS-"),
        (("abstracts", 0, "id"), "ABS-", "must look like ABS-"),
        (("abstracts", 0, "provenance", "chain"), "alice", "must be a list"),
        (("abstracts", 0, "provenance", "chain", 0), 7, "must be a string"),
        (("abstracts", 0, "provenance", "origin"), "", "must not be blank"),
        (("abstracts", 0, "license"), 1, "must be a string"),
        (("abstracts",), [], "must hold 1 to 500 items"),
        (("abstracts",), {}, "must be a list"),
        (("id",), "LEP-2026-0115-ABCDEF", "must look like LEP-"),
        (("id",), "LEP-2026-0115-abc", "must look like LEP-"),
        (("id",), "LEP-2026-115-abcdefgh", "must look like LEP-"),
        (("format",), "engram-exchange/2", "must be 'engram-exchange/1'"),
        (("created_at",), "2026-01-15T10:30:45+00:00", "RFC 3339 UTC"),
        (("created_at",), "2026-01-15 10:30:45Z", "RFC 3339 UTC"),
        (("created_at",), "2026-02-30T10:30:45Z", "day is out of range"),
        (("sender", "key_id"), "21FE31DFA154A261", "16 lowercase hex"),
        (("sender", "public_key"), crypto.b64encode(bytes(31)), "exactly 32 bytes"),
        (("sender", "public_key"), "not base64!", "base64"),
        (("sender", "name"), "", "must not be blank"),
        (("signature",), crypto.b64encode(bytes(63)), "exactly 64 bytes"),
        (("signature",), crypto.b64encode(bytes(64)).rstrip("="), "base64"),
    ],
)
def test_schema_rejects_bad_values_with_their_path(path: Path, value: object, message: str) -> None:
    errors = paths_of(validate_schema(set_at(make_packet(), path, value)))

    assert message in errors[path_label(path)], errors


def test_schema_rejects_duplicate_abstract_ids() -> None:
    packet = set_at(make_packet(), ("abstracts", 0, "id"), "ABS-2026-0111-002")

    assert paths_of(validate_schema(packet)) == {
        "abstracts[1].id": "duplicate abstract id in packet"
    }


def test_schema_rejects_more_than_the_maximum_abstracts() -> None:
    packet = make_packet()
    packet["abstracts"] = [make_abstract(id=f"ABS-2026-0110-{n:03}") for n in range(501)]

    assert paths_of(validate_schema(packet)) == {"abstracts": "must hold 1 to 500 items"}


def test_schema_accepts_the_maximum_number_of_abstracts() -> None:
    packet = make_packet()
    packet["abstracts"] = [make_abstract(id=f"ABS-2026-0110-{n:03}") for n in range(MAX_ABSTRACTS)]

    assert validate_schema(packet) == []


@pytest.mark.parametrize("value", [None, [], "packet", 3])
def test_schema_rejects_a_non_object_packet(value: object) -> None:
    assert validate_schema(value) == [SchemaError("", "must be an object")]


def test_schema_accepts_fractional_seconds_and_other_abstract_id_forms() -> None:
    packet = make_packet(id="ABS-7f3c9a1e-uuid.v4_x")
    packet["created_at"] = "2026-01-15T10:30:45.5Z"

    assert validate_schema(packet) == []
    assert parse_created_at("2026-01-15T10:30:45.5Z") == datetime(
        2026, 1, 15, 10, 30, 45, 500000, tzinfo=UTC
    )


def test_verify_signature_is_false_for_garbage_instead_of_raising() -> None:
    assert not verify_signature({})
    assert not verify_signature({"sender": "x", "signature": "y"})
    assert not verify_signature({"sender": {"public_key": 1}, "signature": "AAAA"})
    assert not verify_signature(set_at(make_packet(), ("abstracts", 0, "statement"), "\ud800"))


def test_the_digest_covers_the_signature_and_ignores_layout() -> None:
    packet = make_packet()
    digest = packet_digest(packet)

    assert digest == packet_digest(to_bytes(packet)) == packet_digest(json.dumps(packet).encode())
    assert len(digest) == 64
    other_signature = set_at(packet, ("signature",), crypto.b64encode(bytes(64)))
    assert packet_digest(other_signature) != digest


@pytest.mark.parametrize(
    ("created_at", "reason"),
    [
        (NOW, None),
        (NOW + timedelta(minutes=10), None),
        (NOW + timedelta(minutes=10, seconds=1), "in the future"),
        (NOW - timedelta(days=30), None),
        (NOW - timedelta(days=30, seconds=1), "old"),
    ],
)
def test_check_clock_allows_ten_minutes_skew_and_thirty_days_age(
    created_at: datetime, reason: str | None
) -> None:
    result = check_clock(created_at, NOW)

    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result


def test_check_clock_takes_custom_limits_and_refuses_naive_datetimes() -> None:
    assert check_clock(NOW + timedelta(minutes=2), NOW, max_skew=timedelta(minutes=1))
    assert check_clock(NOW - timedelta(days=2), NOW, max_age=timedelta(days=1))
    with pytest.raises(ValueError, match="timezone-aware"):
        check_clock(datetime(2026, 1, 15), NOW)  # noqa: DTZ001


text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=80,
).filter(lambda s: s.strip() != "")
rate = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
count = st.integers(min_value=0, max_value=2**53 - 1)
abstract_strategy = st.fixed_dictionaries(
    {
        "statement": text,
        "structure": st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
            max_size=80,
        ),
        "applies_when": text,
        "instances": st.lists(
            st.fixed_dictionaries({"domain": text, "derivation_count": count}), max_size=4
        ),
        "exchange_metadata": st.fixed_dictionaries(
            {
                "fitness_score": rate | st.integers(0, 1),
                "environmental_diversity": st.integers(0, 50) | st.floats(0, 50, allow_nan=False),
                "total_derivations": count,
                "adoption_count": count,
                "contradiction_rate": rate,
            }
        ),
        "provenance": st.fixed_dictionaries({"origin": text, "chain": st.lists(text, max_size=4)}),
        "license": text,
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(abstracts=st.lists(abstract_strategy, min_size=1, max_size=4), name=text)
def test_any_built_packet_round_trips_through_parse(
    abstracts: list[dict[str, object]], name: str
) -> None:
    for index, abstract in enumerate(abstracts):
        abstract["id"] = f"ABS-2026-0115-{index:03}"

    packet = build_packet(
        sender_name=name,
        private_raw=PRIVATE_RAW,
        public_raw=PUBLIC_RAW,
        abstracts=abstracts,
        now=NOW,
    )

    assert parse_packet(json.dumps(packet).encode()) == packet
    assert parse_packet(serialize_packet(packet)) == packet
