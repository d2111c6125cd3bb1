"""Ed25519 identity keys, strict base64, and encryption of private keys at rest."""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

PUBLIC_KEY_BYTES = 32
PRIVATE_KEY_BYTES = 32
SIGNATURE_BYTES = 64
KEY_ID_HEX_CHARS = 16
FINGERPRINT_HEX_CHARS = 32
FINGERPRINT_GROUP = 4

# Private keys at rest: scrypt (2**15, 8, 1) ≈ 32 MiB and tens of milliseconds per derivation,
# which is paid once per signing, never per request.
KEY_TOKEN_VERSION = "v1"
KEY_TOKEN_SEPARATOR = "$"
SCRYPT_N = 2**15
SCRYPT_R = 8
SCRYPT_P = 1
SALT_BYTES = 16
NONCE_BYTES = 12
AES_KEY_BYTES = 32
# Binds the ciphertext to its purpose so a token for something else cannot be swapped in.
KEY_TOKEN_AAD = b"engram-exchange/private-key/v1"


class KeyDecryptionError(ValueError):
    """An encrypted private key that cannot be opened: wrong secret, or a corrupt token."""


def generate_keypair() -> tuple[bytes, bytes]:
    """Return a fresh Ed25519 (private_raw, public_raw) pair, 32 bytes each."""
    private = Ed25519PrivateKey.generate()
    return private.private_bytes_raw(), private.public_key().public_bytes_raw()


def public_key_from_private(private_raw: bytes) -> bytes:
    """Return the raw 32-byte public key of a raw 32-byte Ed25519 private key."""
    _require_length(private_raw, PRIVATE_KEY_BYTES, "private key")
    return Ed25519PrivateKey.from_private_bytes(private_raw).public_key().public_bytes_raw()


def key_id(public_raw: bytes) -> str:
    """Return the first 16 lowercase hex chars of SHA-256 over the raw 32-byte public key."""
    _require_length(public_raw, PUBLIC_KEY_BYTES, "public key")
    return hashlib.sha256(public_raw).hexdigest()[:KEY_ID_HEX_CHARS]


def fingerprint(public_raw: bytes) -> str:
    """Return the first 32 hex chars of SHA-256(public key), uppercase, in space-separated fours."""
    _require_length(public_raw, PUBLIC_KEY_BYTES, "public key")
    digest = hashlib.sha256(public_raw).hexdigest()[:FINGERPRINT_HEX_CHARS].upper()
    return " ".join(
        digest[i : i + FINGERPRINT_GROUP] for i in range(0, len(digest), FINGERPRINT_GROUP)
    )


def b64encode(data: bytes) -> str:
    """Return standard padded base64 (RFC 4648 §4) of data."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Decode standard padded base64 strictly; raise ValueError unless text is the canonical form."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError("base64 text must be an ASCII string")
    try:
        data = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"invalid base64: {exc}") from exc
    # Non-zero padding bits decode to the same bytes; refusing them keeps one spelling per value,
    # so a re-encoded signature or key cannot slip past digest-based replay checks.
    if b64encode(data) != text:
        raise ValueError("base64 is not in canonical form")
    return data


def sign(private_raw: bytes, message: bytes) -> bytes:
    """Return the 64-byte Ed25519 signature of message."""
    _require_length(private_raw, PRIVATE_KEY_BYTES, "private key")
    return Ed25519PrivateKey.from_private_bytes(private_raw).sign(message)


def verify(public_raw: bytes, message: bytes, signature: bytes) -> bool:
    """Return whether signature is a valid Ed25519 signature of message; never raises."""
    if not (
        isinstance(public_raw, bytes)
        and isinstance(message, bytes)
        and isinstance(signature, bytes)
        and len(public_raw) == PUBLIC_KEY_BYTES
        and len(signature) == SIGNATURE_BYTES
    ):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(signature, message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def encrypt_private_key(private_raw: bytes, secret: str) -> str:
    """Return `v1$<salt>$<nonce>$<ciphertext>` (base64 parts): AES-256-GCM under scrypt(secret)."""
    _require_length(private_raw, PRIVATE_KEY_BYTES, "private key")
    _require_secret(secret)
    salt = secrets.token_bytes(SALT_BYTES)
    nonce = secrets.token_bytes(NONCE_BYTES)
    ciphertext = AESGCM(_derive_key(secret, salt)).encrypt(nonce, private_raw, KEY_TOKEN_AAD)
    return KEY_TOKEN_SEPARATOR.join(
        [KEY_TOKEN_VERSION, b64encode(salt), b64encode(nonce), b64encode(ciphertext)]
    )


def decrypt_private_key(token: str, secret: str) -> bytes:
    """Return the raw private key inside token; raise KeyDecryptionError on a wrong secret."""
    _require_secret(secret)
    parts = token.split(KEY_TOKEN_SEPARATOR) if isinstance(token, str) else []
    if len(parts) != 4 or parts[0] != KEY_TOKEN_VERSION:
        raise KeyDecryptionError(f"not a {KEY_TOKEN_VERSION} encrypted private key token")
    try:
        salt, nonce, ciphertext = (b64decode(part) for part in parts[1:])
    except ValueError as exc:
        raise KeyDecryptionError(f"corrupt encrypted private key token: {exc}") from exc
    if len(salt) != SALT_BYTES or len(nonce) != NONCE_BYTES:
        raise KeyDecryptionError("corrupt encrypted private key token: bad salt or nonce length")
    try:
        private_raw = AESGCM(_derive_key(secret, salt)).decrypt(nonce, ciphertext, KEY_TOKEN_AAD)
    except InvalidTag as exc:
        raise KeyDecryptionError(
            "cannot decrypt the private key: wrong secret or corrupted token"
        ) from exc
    if len(private_raw) != PRIVATE_KEY_BYTES:
        raise KeyDecryptionError("decrypted private key has the wrong length")
    return private_raw


def _derive_key(secret: str, salt: bytes) -> bytes:
    """Return a 32-byte AES key from secret and salt by scrypt."""
    kdf = Scrypt(salt=salt, length=AES_KEY_BYTES, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return kdf.derive(secret.encode("utf-8"))


def _require_length(value: bytes, length: int, what: str) -> None:
    """Raise ValueError unless value is bytes of exactly length."""
    if not isinstance(value, bytes) or len(value) != length:
        raise ValueError(f"{what} must be exactly {length} raw bytes")


def _require_secret(secret: str) -> None:
    """Raise ValueError unless secret is a non-empty string."""
    if not isinstance(secret, str) or not secret:
        raise ValueError("secret must be a non-empty string")
