"""Each owner's exchange identity: an Ed25519 key pair created on first use, encrypted at rest.

Identity is per owner: every owner is one user of this installation and signs with their own
key, so two people sharing a server never speak for each other. The private key lives in the
database only as an AES-256-GCM token under a scrypt key from ENGRAM_EXCHANGE_KEY (or, when that
is empty, from SECRET_KEY); a database dump alone cannot sign packets.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from exchange import crypto
from exchange.models import Identity
from memory.errors import Conflict, InvalidInput
from memory.validation import check_text

# Purpose label, so the passphrase derived from SECRET_KEY is not SECRET_KEY itself.
SECRET_LABEL = "engram-exchange-identity:"
MAX_NAME_CHARS = 200


class IdentityLocked(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "The exchange private key cannot be decrypted: ENGRAM_EXCHANGE_KEY (or SECRET_KEY, "
            "when that is unset) changed since the identity was created. Restore the old value.",
            code="identity_locked",
        )


def key_secret() -> str:
    """The passphrase that encrypts private keys: ENGRAM_EXCHANGE_KEY, else one from SECRET_KEY."""
    explicit = str(getattr(settings, "ENGRAM_EXCHANGE_KEY", "") or "")
    return explicit or SECRET_LABEL + settings.SECRET_KEY


def identity_get(*, owner: Any) -> Identity:
    """Return the owner's identity, generating and storing the key pair on first use."""
    identity = Identity.objects.filter(owner=owner).first()
    if identity is not None:
        return identity
    private_raw, public_raw = crypto.generate_keypair()
    token = crypto.encrypt_private_key(private_raw, key_secret())
    try:
        with transaction.atomic():
            return Identity.objects.create(
                owner=owner,
                name=owner.get_username()[:MAX_NAME_CHARS],
                key_id=crypto.key_id(public_raw),
                public_key=crypto.b64encode(public_raw),
                private_key=token,
            )
    except IntegrityError:
        # A concurrent first use created it; theirs wins and this key pair is dropped.
        return Identity.objects.get(owner=owner)


def identity_private_key(identity: Identity) -> bytes:
    """Return the raw private key; raise IdentityLocked when it cannot be opened or mismatches."""
    try:
        private_raw = crypto.decrypt_private_key(identity.private_key, key_secret())
    except crypto.KeyDecryptionError as exc:
        raise IdentityLocked() from exc
    if crypto.public_key_from_private(private_raw) != identity.public_raw:
        raise IdentityLocked()
    return private_raw


def identity_rename(*, owner: Any, name: str) -> Identity:
    """Set the sender name put in the owner's packets (1 to 200 characters, no secrets)."""
    clean = (name or "").replace("\x00", "").strip()
    if not clean:
        raise InvalidInput("name", "must not be empty")
    if len(clean) > MAX_NAME_CHARS:
        raise InvalidInput("name", f"at most {MAX_NAME_CHARS} characters")
    check_text(clean)
    identity = identity_get(owner=owner)
    if identity.name != clean:
        identity.name = clean
        identity.save(update_fields=["name"])
    return identity
