"""The `engram-exchange/1` packet: building, signing, strict schema and the stateless import gates."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import math
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from exchange import crypto
from exchange.canonical import MAX_SAFE_INTEGER, canonicalize

FORMAT = "engram-exchange/1"
MAX_PACKET_BYTES = 1_048_576

# Import gates in the order they run. The first three are stateless and live here; the rest need
# the database and run in the exchange services.
GATES = (
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

MAX_ABSTRACTS = 500
MAX_INSTANCES = 100
MAX_CHAIN = 50
MAX_ABSTRACT_CHARS = 2_000
MAX_STRUCTURE_CHARS = 4_000
MAX_APPLIES_WHEN_CHARS = 2_000
MAX_NAME_CHARS = 200
MAX_LICENSE_CHARS = 100
# environmental_diversity is a count of distinct environments (PLUR / Engram spec), not a rate;
# the cap only stops absurd values from dominating fitness.
MAX_DIVERSITY = 1_000_000

PACKET_ID_RANDOM_BYTES = 10  # 16 base32 characters
PACKET_ID_RE = re.compile(r"^LEP-\d{4}-\d{4}-[a-z0-9]{6,32}$")
# Any ABS- id of safe characters, so peers with other id schemes (ABS-YYYY-MMDD-NNN, ABS-<uuid>)
# interoperate; nothing here can break out of a URL path, HTML attribute or file name.
ABSTRACT_ID_RE = re.compile(r"^ABS-[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")
CREATED_AT_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")
CREATED_AT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

DEFAULT_MAX_SKEW = timedelta(minutes=10)
DEFAULT_MAX_AGE = timedelta(days=30)

PACKET_KEYS = frozenset({"format", "id", "created_at", "sender", "abstracts", "signature"})
SENDER_KEYS = frozenset({"name", "key_id", "public_key"})
ABSTRACT_KEYS = frozenset(
    {
        "id",
        "statement",
        "structure",
        "applies_when",
        "instances",
        "exchange_metadata",
        "provenance",
        "license",
    }
)
INSTANCE_KEYS = frozenset({"domain", "derivation_count"})
METADATA_KEYS = frozenset(
    {
        "fitness_score",
        "environmental_diversity",
        "total_derivations",
        "adoption_count",
        "contradiction_rate",
    }
)
PROVENANCE_KEYS = frozenset({"origin", "chain"})


@dataclass(frozen=True)
class SchemaError:
    """One schema violation: a dotted/indexed path (`""` is the root) and a message."""

    path: str
    message: str


class PacketError(Exception):
    """A packet refused at one import gate, with a human message and JSON-safe details."""

    def __init__(self, gate: str, message: str, details: Mapping[str, object] | None = None):
        super().__init__(f"{gate}: {message}")
        self.gate = gate
        self.message = message
        self.details: dict[str, object] = dict(details or {})


class _DuplicateKeyError(ValueError):
    """A JSON object that repeats a key."""


class _NonFiniteError(ValueError):
    """A JSON NaN / Infinity / -Infinity literal."""


def new_packet_id(now: datetime) -> str:
    """Return `LEP-YYYY-MMDD-<16 lowercase base32 chars>` for now's UTC date."""
    day = _as_utc(now)
    token = base64.b32encode(secrets.token_bytes(PACKET_ID_RANDOM_BYTES)).decode("ascii").lower()
    return f"LEP-{day:%Y}-{day:%m%d}-{token}"


def format_created_at(now: datetime) -> str:
    """Return now as RFC 3339 UTC with a `Z` suffix and whole seconds."""
    return _as_utc(now).strftime(CREATED_AT_FORMAT)


def parse_created_at(value: str) -> datetime:
    """Return the aware UTC datetime of an RFC 3339 `...Z` timestamp; raise ValueError otherwise."""
    if not isinstance(value, str) or not CREATED_AT_RE.match(value):
        raise ValueError("created_at must be RFC 3339 UTC like 2026-01-15T10:00:00Z")
    return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)


def signing_bytes(packet: Mapping[str, object]) -> bytes:
    """Return the RFC 8785 canonical bytes of packet without its `signature` member."""
    return canonicalize({key: value for key, value in packet.items() if key != "signature"})


def serialize_packet(packet: Mapping[str, object]) -> bytes:
    """Return the canonical bytes of the full packet, the form to send over the wire."""
    return canonicalize(dict(packet))


def build_packet(
    *,
    sender_name: str,
    private_raw: bytes,
    public_raw: bytes,
    abstracts: list[dict[str, object]],
    now: datetime,
) -> dict[str, object]:
    """Return a signed packet; raise ValueError on a key mismatch, PacketError if it is invalid."""
    if crypto.public_key_from_private(private_raw) != public_raw:
        raise ValueError("public key does not belong to the private key")
    packet: dict[str, object] = {
        "format": FORMAT,
        "id": new_packet_id(now),
        "created_at": format_created_at(now),
        "sender": {
            "name": sender_name,
            "key_id": crypto.key_id(public_raw),
            "public_key": crypto.b64encode(public_raw),
        },
        "abstracts": copy.deepcopy(abstracts),
    }
    # A zero signature of the right length lets the full schema run before signing, so an
    # exporter bug fails here rather than at every peer; signing_bytes ignores it anyway.
    packet["signature"] = crypto.b64encode(bytes(crypto.SIGNATURE_BYTES))
    errors = validate_schema(packet)
    if errors:
        first = errors[0]
        raise PacketError(
            "schema",
            f"built packet is invalid: {first.path or '(root)'}: {first.message}",
            {"errors": _errors_json(errors)},
        )
    packet["signature"] = crypto.b64encode(crypto.sign(private_raw, signing_bytes(packet)))
    return packet


def verify_signature(packet: Mapping[str, object]) -> bool:
    """Return whether the packet's signature verifies under its own sender public key."""
    try:
        sender = packet["sender"]
        if not isinstance(sender, Mapping):
            return False
        public_raw = crypto.b64decode(sender["public_key"])
        signature = crypto.b64decode(packet["signature"])  # type: ignore[arg-type]
        message = signing_bytes(packet)
    except (KeyError, TypeError, ValueError):
        return False
    return crypto.verify(public_raw, message, signature)


def parse_packet(raw: bytes, *, max_bytes: int = MAX_PACKET_BYTES) -> dict[str, object]:
    """Run the size, schema and signature gates on raw bytes; return the packet or raise."""
    if len(raw) > max_bytes:
        raise PacketError(
            "size",
            f"packet is {len(raw)} bytes, over the {max_bytes}-byte limit",
            {"size": len(raw), "max_bytes": max_bytes},
        )
    packet = _loads(raw)
    errors = validate_schema(packet)
    if errors:
        raise PacketError(
            "schema",
            f"packet does not match {FORMAT}: {errors[0].path or '(root)'}: {errors[0].message}",
            {"errors": _errors_json(errors)},
        )
    assert isinstance(packet, dict)  # validate_schema guarantees it
    if not verify_signature(packet):
        raise PacketError(
            "signature",
            "signature does not verify under the sender's public key",
            {"key_id": packet["sender"]["key_id"]},
        )
    return packet


def packet_digest(raw_or_packet: bytes | Mapping[str, object]) -> str:
    """Return SHA-256 hex of the canonical bytes of the full packet, signature included."""
    packet = _loads(raw_or_packet) if isinstance(raw_or_packet, bytes) else dict(raw_or_packet)
    return hashlib.sha256(canonicalize(packet)).hexdigest()


def check_clock(
    created_at: datetime,
    now: datetime,
    *,
    max_skew: timedelta = DEFAULT_MAX_SKEW,
    max_age: timedelta = DEFAULT_MAX_AGE,
) -> str | None:
    """Return why created_at is implausible against now (future beyond skew, older than age), or None."""
    if created_at.tzinfo is None or now.tzinfo is None:
        raise ValueError("check_clock needs timezone-aware datetimes")
    if created_at > now + max_skew:
        return f"created_at is {created_at - now} in the future (allowed skew {max_skew})"
    if created_at < now - max_age:
        return f"created_at is {now - created_at} old (maximum age {max_age})"
    return None


def validate_schema(packet: object) -> list[SchemaError]:
    """Return every way packet departs from `engram-exchange/1` (empty when valid)."""
    errors: list[SchemaError] = []
    if not _check_object(packet, "", PACKET_KEYS, errors):
        return errors
    assert isinstance(packet, dict)
    if "format" in packet and packet["format"] != FORMAT:
        errors.append(SchemaError("format", f"must be {FORMAT!r}"))
    if "id" in packet:
        _check_pattern(packet["id"], "id", PACKET_ID_RE, "LEP-YYYY-MMDD-<6-32 a-z0-9>", errors)
    if "created_at" in packet:
        try:
            parse_created_at(packet["created_at"])
        except ValueError as exc:
            errors.append(SchemaError("created_at", str(exc)))
    if "sender" in packet:
        _check_sender(packet["sender"], errors)
    if "abstracts" in packet:
        _check_abstracts(packet["abstracts"], errors)
    if "signature" in packet:
        _check_base64(packet["signature"], "signature", crypto.SIGNATURE_BYTES, errors)
    return errors


def _check_sender(sender: object, errors: list[SchemaError]) -> None:
    """Validate the sender object, including key_id == key_id(public_key)."""
    if not _check_object(sender, "sender", SENDER_KEYS, errors):
        return
    assert isinstance(sender, dict)
    if "name" in sender:
        _check_text(sender["name"], "sender.name", MAX_NAME_CHARS, errors)
    key_ok = "key_id" in sender and _check_pattern(
        sender["key_id"], "sender.key_id", KEY_ID_RE, "16 lowercase hex characters", errors
    )
    public_raw = None
    if "public_key" in sender:
        public_raw = _check_base64(
            sender["public_key"], "sender.public_key", crypto.PUBLIC_KEY_BYTES, errors
        )
    if key_ok and public_raw is not None and sender["key_id"] != crypto.key_id(public_raw):
        errors.append(SchemaError("sender.key_id", "does not match the public key"))


def _check_abstracts(abstracts: object, errors: list[SchemaError]) -> None:
    """Validate the abstracts list: 1..MAX_ABSTRACTS items with unique ids."""
    if not isinstance(abstracts, list):
        errors.append(SchemaError("abstracts", "must be a list"))
        return
    if not 1 <= len(abstracts) <= MAX_ABSTRACTS:
        errors.append(SchemaError("abstracts", f"must hold 1 to {MAX_ABSTRACTS} items"))
        return
    seen: set[str] = set()
    for index, abstract in enumerate(abstracts):
        path = f"abstracts[{index}]"
        _check_abstract(abstract, path, errors)
        abstract_id = abstract.get("id") if isinstance(abstract, dict) else None
        if isinstance(abstract_id, str):
            if abstract_id in seen:
                errors.append(SchemaError(f"{path}.id", "duplicate abstract id in packet"))
            seen.add(abstract_id)


def _check_abstract(abstract: object, path: str, errors: list[SchemaError]) -> None:
    """Validate one abstract engram."""
    if not _check_object(abstract, path, ABSTRACT_KEYS, errors):
        return
    assert isinstance(abstract, dict)
    if "id" in abstract:
        _check_pattern(abstract["id"], f"{path}.id", ABSTRACT_ID_RE, "ABS-<safe id>", errors)
    if "statement" in abstract:
        _check_text(abstract["statement"], f"{path}.statement", MAX_ABSTRACT_CHARS, errors)
    if "structure" in abstract:
        _check_text(
            abstract["structure"], f"{path}.structure", MAX_STRUCTURE_CHARS, errors, blank=True
        )
    if "applies_when" in abstract:
        _check_text(
            abstract["applies_when"],
            f"{path}.applies_when",
            MAX_APPLIES_WHEN_CHARS,
            errors,
            blank=True,
        )
    if "license" in abstract:
        _check_text(abstract["license"], f"{path}.license", MAX_LICENSE_CHARS, errors)
    if "instances" in abstract:
        _check_instances(abstract["instances"], f"{path}.instances", errors)
    if "exchange_metadata" in abstract:
        _check_metadata(abstract["exchange_metadata"], f"{path}.exchange_metadata", errors)
    if "provenance" in abstract:
        _check_provenance(abstract["provenance"], f"{path}.provenance", errors)


def _check_instances(instances: object, path: str, errors: list[SchemaError]) -> None:
    """Validate the instances list of {domain, derivation_count}."""
    if not isinstance(instances, list):
        errors.append(SchemaError(path, "must be a list"))
        return
    if len(instances) > MAX_INSTANCES:
        errors.append(SchemaError(path, f"must hold at most {MAX_INSTANCES} items"))
        return
    for index, instance in enumerate(instances):
        item = f"{path}[{index}]"
        if not _check_object(instance, item, INSTANCE_KEYS, errors):
            continue
        assert isinstance(instance, dict)
        if "domain" in instance:
            _check_text(instance["domain"], f"{item}.domain", MAX_NAME_CHARS, errors)
        if "derivation_count" in instance:
            _check_count(instance["derivation_count"], f"{item}.derivation_count", errors)


def _check_metadata(metadata: object, path: str, errors: list[SchemaError]) -> None:
    """Validate exchange_metadata: rates in [0,1], counts non-negative integers."""
    if not _check_object(metadata, path, METADATA_KEYS, errors):
        return
    assert isinstance(metadata, dict)
    for key in ("fitness_score", "contradiction_rate"):
        if key in metadata:
            _check_number(metadata[key], f"{path}.{key}", 0.0, 1.0, errors)
    if "environmental_diversity" in metadata:
        _check_number(
            metadata["environmental_diversity"],
            f"{path}.environmental_diversity",
            0.0,
            MAX_DIVERSITY,
            errors,
        )
    for key in ("total_derivations", "adoption_count"):
        if key in metadata:
            _check_count(metadata[key], f"{path}.{key}", errors)


def _check_provenance(provenance: object, path: str, errors: list[SchemaError]) -> None:
    """Validate provenance: non-empty origin and a chain of non-empty strings."""
    if not _check_object(provenance, path, PROVENANCE_KEYS, errors):
        return
    assert isinstance(provenance, dict)
    if "origin" in provenance:
        _check_text(provenance["origin"], f"{path}.origin", MAX_NAME_CHARS, errors)
    if "chain" in provenance:
        chain = provenance["chain"]
        if not isinstance(chain, list):
            errors.append(SchemaError(f"{path}.chain", "must be a list"))
        elif len(chain) > MAX_CHAIN:
            errors.append(SchemaError(f"{path}.chain", f"must hold at most {MAX_CHAIN} items"))
        else:
            for index, link in enumerate(chain):
                _check_text(link, f"{path}.chain[{index}]", MAX_NAME_CHARS, errors)


def _check_object(
    value: object, path: str, keys: frozenset[str], errors: list[SchemaError]
) -> bool:
    """Record missing and unknown keys; return whether value is an object at all."""
    if not isinstance(value, dict):
        errors.append(SchemaError(path, "must be an object"))
        return False
    for key in sorted(keys - value.keys()):
        errors.append(SchemaError(_join(path, key), "missing key"))
    for key in sorted(map(str, value.keys() - keys)):
        errors.append(SchemaError(_join(path, key), "unknown key"))
    return True


def _check_text(
    value: object, path: str, max_chars: int, errors: list[SchemaError], *, blank: bool = False
) -> bool:
    """Record a non-string, blank (unless allowed), over-long, NUL or lone-surrogate string."""
    if not isinstance(value, str):
        errors.append(SchemaError(path, "must be a string"))
        return False
    if not blank and not value.strip():
        errors.append(SchemaError(path, "must not be blank"))
        return False
    if len(value) > max_chars:
        errors.append(SchemaError(path, f"must be at most {max_chars} characters"))
        return False
    if "\x00" in value:
        # PostgreSQL text columns cannot hold NUL.
        errors.append(SchemaError(path, "must not contain NUL characters"))
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        errors.append(SchemaError(path, "must not contain lone surrogates"))
        return False
    return True


def _check_pattern(
    value: object, path: str, pattern: re.Pattern[str], shape: str, errors: list[SchemaError]
) -> bool:
    """Record a value that is not a string fully matching pattern."""
    if not isinstance(value, str) or not pattern.match(value):
        errors.append(SchemaError(path, f"must look like {shape}"))
        return False
    return True


def _check_base64(value: object, path: str, length: int, errors: list[SchemaError]) -> bytes | None:
    """Return the decoded bytes of strict base64 of exactly length bytes, else record an error."""
    try:
        decoded = crypto.b64decode(value)  # type: ignore[arg-type]
    except ValueError as exc:
        errors.append(SchemaError(path, f"must be standard padded base64: {exc}"))
        return None
    if len(decoded) != length:
        errors.append(SchemaError(path, f"must decode to exactly {length} bytes"))
        return None
    return decoded


def _check_count(value: object, path: str, errors: list[SchemaError]) -> None:
    """Record a value that is not a non-negative integer in the I-JSON safe range."""
    # bool is an int subclass; true/false are not counts.
    if not isinstance(value, int) or isinstance(value, bool):
        errors.append(SchemaError(path, "must be an integer"))
    elif not 0 <= value <= MAX_SAFE_INTEGER:
        errors.append(SchemaError(path, f"must be between 0 and {MAX_SAFE_INTEGER}"))


def _check_number(
    value: object, path: str, low: float, high: float, errors: list[SchemaError]
) -> None:
    """Record a value that is not a finite number within [low, high]."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        errors.append(SchemaError(path, "must be a number"))
    elif isinstance(value, float) and not math.isfinite(value):
        errors.append(SchemaError(path, "must be finite"))
    elif not low <= value <= high:
        errors.append(SchemaError(path, f"must be between {low:g} and {high:g}"))


def _join(path: str, key: object) -> str:
    """Return path extended by an object key."""
    return f"{path}.{key}" if path else str(key)


def _errors_json(errors: list[SchemaError]) -> list[dict[str, str]]:
    """Return schema errors as JSON-safe dicts."""
    return [{"path": error.path, "message": error.message} for error in errors]


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """Build a JSON object, refusing repeated keys (which JCS could not represent)."""
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(f"duplicate key {key!r} in a JSON object")
        result[key] = value
    return result


def _reject_constant(name: str) -> object:
    """Refuse the NaN / Infinity literals that Python's json accepts by default."""
    raise _NonFiniteError(f"{name} is not a valid JSON number")


def _loads(raw: bytes) -> object:
    """Parse strict UTF-8 JSON; raise PacketError('schema') on anything malformed."""
    try:
        text = raw.decode("utf-8")
        return json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except UnicodeDecodeError as exc:
        raise PacketError("schema", "packet is not valid UTF-8", {"error": str(exc)}) from exc
    except (_DuplicateKeyError, _NonFiniteError) as exc:
        raise PacketError("schema", str(exc), {"error": str(exc)}) from exc
    except json.JSONDecodeError as exc:
        raise PacketError(
            "schema", f"packet is not valid JSON: {exc}", {"error": str(exc)}
        ) from exc
    except (ValueError, RecursionError) as exc:
        # Over-long integer literals and pathological nesting.
        raise PacketError(
            "schema", f"packet is not acceptable JSON: {exc}", {"error": str(exc)}
        ) from exc


def _as_utc(moment: datetime) -> datetime:
    """Return an aware datetime in UTC; raise ValueError for a naive one."""
    if moment.tzinfo is None:
        raise ValueError("datetime must be timezone-aware")
    return moment.astimezone(UTC)
