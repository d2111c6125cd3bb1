"""Backup and restore of whole owners: every row of every model with an `owner` foreign key.

The models are found, not listed: any installed app's model with an `owner` foreign key to the
user model is included, in foreign-key dependency order, so a new app's owner-owned rows are
backed up without a change here. A foreign key to a row restored later (a self reference such
as Engram.superseded_by, or a cycle) is written after all rows are in.

The file is JSON lines (gzip when its name ends in .gz): a header line, then the owners, then
one line per row, model by model. The snapshot is consistent: every row is read in one
transaction (REPEATABLE READ on PostgreSQL; on SQLite one transaction is one snapshot).

Restore is all or nothing (one transaction) and never overwrites: an owner that already has
rows in the target is a conflict (refused, with the counts) unless the backup is restored under
another name (`as_owner`). Primary keys are renumbered, foreign keys remapped.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import gzip
import io
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, models, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from memory.errors import Conflict, InvalidInput

FORMAT = "engram-backup"
VERSION = 1
BATCH = 500
USER_FIELDS = (
    "username",
    "password",
    "email",
    "first_name",
    "last_name",
    "is_active",
    "is_staff",
    "is_superuser",
    "date_joined",
    "last_login",
)
# Credentials stay with their owner: restored under another name, an owner's API tokens are not.
CREDENTIAL_MODELS = {"memory.apitoken"}

Progress = Callable[[int, int], None]


def _label(model: type[models.Model]) -> str:
    return model._meta.label_lower


def _is_user_fk(f: models.Field[Any, Any]) -> bool:
    return bool(f.is_relation and (f.many_to_one or f.one_to_one)) and (
        f.related_model is get_user_model()
    )


def owned_models() -> list[type[models.Model]]:
    """Every concrete model with an `owner` foreign key to the user model, parents first."""
    user = get_user_model()
    found = []
    for model in apps.get_models():
        if model._meta.abstract or model._meta.proxy:
            continue
        try:
            owner = model._meta.get_field("owner")
        except Exception:
            continue
        if owner.is_relation and owner.related_model is user:
            found.append(model)
    found.sort(key=_label)
    ordered: list[type[models.Model]] = []
    visiting: set[type[models.Model]] = set()
    owned = set(found)

    def visit(model: type[models.Model]) -> None:
        if model in ordered or model in visiting:
            return  # a cycle: the later edge becomes a deferred foreign key
        visiting.add(model)
        for f in model._meta.concrete_fields:
            target = f.related_model if f.is_relation else None
            if target in owned and target is not model and not f.null:
                visit(target)  # type: ignore[arg-type]
        for f in model._meta.concrete_fields:
            target = f.related_model if f.is_relation else None
            if target in owned and target is not model:
                visit(target)  # type: ignore[arg-type]
        visiting.discard(model)
        ordered.append(model)

    for model in found:
        visit(model)
    return ordered


def _encode(f: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return [float(x) for x in value.astype(np.float32).tolist()]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def _decode(f: models.Field[Any, Any], value: Any) -> Any:
    if value is None:
        return None
    if isinstance(f, models.JSONField):
        return value
    if isinstance(f, models.DurationField):
        return dt.timedelta(seconds=float(value))
    return f.to_python(value)


@dataclass
class BackupSummary:
    owners: list[str]
    counts: dict[str, int]
    path: str = ""


@dataclass
class RestoreSummary:
    owners: dict[str, str]  # username in the file -> username restored as
    counts: dict[str, int]
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _open_write(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "wb"), encoding="utf-8")
    return path.open("w", encoding="utf-8")


def _open_read(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open(encoding="utf-8")


def _applied_migrations(labels: Iterable[str]) -> dict[str, list[str]]:
    wanted = set(labels)
    applied: dict[str, list[str]] = {}
    for app, name in MigrationRecorder(connection).applied_migrations():
        if app in wanted:
            applied.setdefault(app, []).append(name)
    return {app: sorted(names) for app, names in sorted(applied.items())}


def backup_write(
    *, path: Path, usernames: list[str] | None = None, progress: Progress | None = None
) -> BackupSummary:
    """Write a consistent snapshot of the named owners (all owners with data when None)."""
    user_model = get_user_model()
    models_ = owned_models()
    tmp = path.with_name(path.name + ".partial")
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and outermost:
            # One snapshot for every read (inside a caller's transaction, the caller's).
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if usernames:
            users = list(user_model._default_manager.filter(username__in=usernames))
            missing = sorted(set(usernames) - {u.get_username() for u in users})
            if missing:
                raise InvalidInput("user", f"no such owner: {', '.join(missing)}")
        else:
            owner_ids: set[int] = set()
            for model in models_:
                owner_ids.update(model._base_manager.values_list("owner_id", flat=True).distinct())
            users = list(user_model._default_manager.filter(pk__in=owner_ids))
        users.sort(key=lambda u: u.pk)
        owner_pks = [u.pk for u in users]
        counts = {
            _label(m): m._base_manager.filter(owner_id__in=owner_pks).count() for m in models_
        }
        total = sum(counts.values())
        usernames_by_pk = dict(user_model._default_manager.values_list("pk", "username"))
        header = {
            "format": FORMAT,
            "version": VERSION,
            "created_at": timezone.now().isoformat(),
            "database": connection.vendor,
            "migrations": _applied_migrations({m._meta.app_label for m in models_}),
            "models": [{"model": _label(m), "rows": counts[_label(m)]} for m in models_],
            "owners": [u.get_username() for u in users],
            "exchange_key_note": (
                "exchange private keys are encrypted with ENGRAM_EXCHANGE_KEY (or SECRET_KEY "
                "when that is empty) of the installation that made this file"
            ),
        }
        done = 0
        with _open_write(tmp) as out:
            out.write(json.dumps(header, sort_keys=True) + "\n")
            for user in users:
                row = {f: _encode(user._meta.get_field(f), getattr(user, f)) for f in USER_FIELDS}
                out.write(json.dumps({"user": row, "pk": user.pk}, sort_keys=True) + "\n")
            for model in models_:
                fields_ = model._meta.concrete_fields
                query = model._base_manager.filter(owner_id__in=owner_pks).order_by("pk")
                for obj in query.iterator(chunk_size=BATCH):
                    values: dict[str, Any] = {}
                    for f in fields_:
                        raw = getattr(obj, f.attname)
                        if _is_user_fk(f):
                            values[f.name] = usernames_by_pk.get(raw) if raw is not None else None
                        else:
                            values[f.attname] = _encode(f, raw)
                    out.write(
                        json.dumps({"model": _label(model), "fields": values}, sort_keys=True)
                        + "\n"
                    )
                    done += 1
                    if progress:
                        progress(done, total)
        if progress:
            progress(total, total)
    tmp.replace(path)
    return BackupSummary(owners=header["owners"], counts=counts, path=str(path))  # type: ignore[arg-type]


def _lines(stream: IO[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise InvalidInput("file", f"line {number} is not JSON") from None
        if not isinstance(item, dict):
            raise InvalidInput("file", f"line {number} is not a JSON object")
        yield number, item


def backup_read_header(path: Path) -> dict[str, Any]:
    """The header of a backup file, checked: format, version, models this installation knows."""
    try:
        with _open_read(path) as stream:
            first = stream.readline()
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise InvalidInput("file", f"cannot read {path}: {exc}") from None
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InvalidInput("file", f"{path} is not an Engram backup (no {FORMAT} header)")
    if header.get("version") != VERSION:
        raise InvalidInput("file", f"backup version {header.get('version')} is not supported")
    return header


def _check_schema(header: dict[str, Any]) -> None:
    known = {_label(m) for m in owned_models()}
    unknown = [m["model"] for m in header.get("models", []) if m.get("model") not in known]
    if unknown:
        raise InvalidInput(
            "file",
            "this installation has no model for "
            + ", ".join(sorted(unknown))
            + " (was the backup made by a newer Engram, or with another app installed?)",
        )
    here = _applied_migrations(header.get("migrations", {}).keys())
    for app, names in header.get("migrations", {}).items():
        missing = sorted(set(names) - set(here.get(app, [])))
        if missing:
            raise InvalidInput(
                "file",
                f"the backup was made at a newer schema ({app}: {', '.join(missing[:3])}); "
                "upgrade Engram and run `manage.py migrate` first",
            )


def backup_restore(
    *, path: Path, as_owner: str | None = None, progress: Progress | None = None
) -> RestoreSummary:
    """Restore a backup file in one transaction; refuses owners that already have rows."""
    header = backup_read_header(path)
    _check_schema(header)
    owners_in_file: list[str] = list(header.get("owners", []))
    if as_owner is not None and len(owners_in_file) != 1:
        raise InvalidInput("as_owner", "a new owner name needs a backup of exactly one owner")
    models_ = owned_models()
    by_label = {_label(m): m for m in models_}
    user_model = get_user_model()
    total = sum(int(m.get("rows", 0)) for m in header.get("models", []))
    summary = RestoreSummary(owners={}, counts={})
    try:
        with transaction.atomic():
            restored = _restore_rows(path, as_owner, by_label, user_model, summary, total, progress)
    except IntegrityError as exc:
        raise Conflict(
            f"The backup conflicts with rows already in this database ({exc}); nothing was "
            "restored.",
            code="restore_conflict",
        ) from None
    if progress:
        progress(restored, max(total, restored))
    return summary


def _owner_rows(user: Any) -> dict[str, int]:
    counts = {}
    for model in owned_models():
        n = model._base_manager.filter(owner=user).count()
        if n:
            counts[_label(model)] = n
    return counts


def _restore_rows(
    path: Path,
    as_owner: str | None,
    by_label: dict[str, type[models.Model]],
    user_model: Any,
    summary: RestoreSummary,
    total: int,
    progress: Progress | None,
) -> int:
    user_pk: dict[str, int] = {}  # username in the file -> pk here
    pk_map: dict[str, dict[Any, Any]] = {}
    deferred: list[tuple[type[models.Model], Any, str, str, Any]] = []
    pending: list[models.Model] = []
    pending_old: list[Any] = []
    current: type[models.Model] | None = None
    done = 0
    remapped = as_owner is not None

    def flush() -> None:
        nonlocal pending, pending_old
        if current is None or not pending:
            return
        created = current._base_manager.bulk_create(pending, batch_size=BATCH)
        table = pk_map.setdefault(_label(current), {})
        for old, obj in zip(pending_old, created, strict=True):
            if obj.pk is None:
                raise InvalidInput("file", f"{_label(current)}: the database returned no key")
            table[old] = obj.pk
        pending, pending_old = [], []

    with _open_read(path) as stream:
        lines = _lines(stream)
        next(lines)  # the header
        for number, item in lines:
            if "user" in item:
                row = item["user"]
                if not isinstance(row, dict) or not isinstance(row.get("username"), str):
                    raise InvalidInput("file", f"line {number}: an owner without a username")
                name = as_owner or row["username"]
                existing = user_model._default_manager.filter(username=name).first()
                if existing is not None:
                    rows = _owner_rows(existing)
                    if rows:
                        listed = ", ".join(f"{n} {label}" for label, n in sorted(rows.items()))
                        raise Conflict(
                            f"Owner {name!r} already has data in this database ({listed}). "
                            "Nothing was restored: restore into an empty database, delete that "
                            "owner first, or restore under another name (--as NEWNAME).",
                            code="restore_conflict",
                            details={"owner": name, "rows": rows},
                        )
                    user = existing
                else:
                    user_values = {
                        f: _decode(user_model._meta.get_field(f), row.get(f))
                        for f in USER_FIELDS
                        if f in row and row.get(f) is not None
                    }
                    user_values["username"] = name
                    user = user_model._default_manager.create(**user_values)
                user_pk[row["username"]] = user.pk
                summary.owners[row["username"]] = name
                continue
            label = str(item.get("model"))
            model = by_label.get(label)
            values = item.get("fields")
            if model is None or not isinstance(values, dict):
                raise InvalidInput("file", f"line {number}: an unknown or malformed row")
            if model is not current:
                flush()
                current = model
            if remapped and label in CREDENTIAL_MODELS:
                summary.skipped[label] = summary.skipped.get(label, 0) + 1
                continue
            obj = model()
            old_pk = values.get(model._meta.pk.attname)
            for f in model._meta.concrete_fields:
                if f.primary_key:
                    continue
                if _is_user_fk(f):
                    if f.name not in values:
                        continue
                    username = values[f.name]
                    target = user_pk.get(username) if username is not None else None
                    if target is None and username is not None:
                        target = (
                            user_model._default_manager.filter(username=username)
                            .values_list("pk", flat=True)
                            .first()
                        )
                    if f.name == "owner":
                        if target is None:
                            raise InvalidInput("file", f"line {number}: an unknown owner")
                    elif target is None and not f.null:
                        raise InvalidInput("file", f"line {number}: {f.name} names nobody here")
                    setattr(obj, f.attname, target)
                    continue
                if f.attname not in values:
                    continue  # a column this backup predates: its default
                raw = values[f.attname]
                if f.is_relation and f.related_model is not None:
                    target_label = _label(f.related_model)  # type: ignore[arg-type]
                    if target_label in by_label and raw is not None:
                        mapped = pk_map.get(target_label, {}).get(raw)
                        if mapped is None:
                            if not f.null:
                                raise InvalidInput(
                                    "file", f"line {number}: {f.name} points at a missing row"
                                )
                            deferred.append((model, old_pk, f.attname, target_label, raw))
                        setattr(obj, f.attname, mapped)
                        continue
                try:
                    setattr(obj, f.attname, _decode(f, raw))
                except Exception as exc:
                    raise InvalidInput(
                        "file", f"line {number}: {label}.{f.name} is not valid ({exc})"
                    ) from None
            pending.append(obj)
            pending_old.append(old_pk)
            summary.counts[label] = summary.counts.get(label, 0) + 1
            done += 1
            if len(pending) >= BATCH:
                flush()
            if progress:
                progress(done, max(total, done))
        flush()
    for model, old_pk, attname, target_label, raw in deferred:
        new_pk = pk_map.get(_label(model), {}).get(old_pk)
        target = pk_map.get(target_label, {}).get(raw)
        if new_pk is not None:
            model._base_manager.filter(pk=new_pk).update(**{attname: target})
    if remapped and summary.skipped:
        summary.notes.append("API tokens were not restored under the new name; issue new ones.")
    if "exchange.identity" in summary.counts:
        summary.notes.append(
            "The exchange identity's private key opens only with the ENGRAM_EXCHANGE_KEY (or "
            "SECRET_KEY) of the installation that made the backup."
        )
    return done
