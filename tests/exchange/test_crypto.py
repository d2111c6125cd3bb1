from __future__ import annotations

import pytest

from exchange import crypto

# RFC 8032 §7.1, TEST 1 (empty message).
RFC8032_SECRET = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC8032_SIGNATURE = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)
# SHA-256 of RFC8032_PUBLIC = 21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9
RFC8032_KEY_ID = "21fe31dfa154a261"
RFC8032_FINGERPRINT = "21FE 31DF A154 A261 626B F854 046F D227"
RFC8032_PUBLIC_B64 = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="


def test_it_generates_32_byte_keypairs_that_belong_together() -> None:
    private_raw, public_raw = crypto.generate_keypair()

    assert len(private_raw) == 32
    assert len(public_raw) == 32
    assert crypto.public_key_from_private(private_raw) == public_raw


def test_it_reproduces_the_rfc8032_test_vector() -> None:
    assert crypto.public_key_from_private(RFC8032_SECRET) == RFC8032_PUBLIC
    assert crypto.sign(RFC8032_SECRET, b"") == RFC8032_SIGNATURE
    assert crypto.verify(RFC8032_PUBLIC, b"", RFC8032_SIGNATURE)


def test_it_derives_the_key_id_from_sha256_of_the_raw_public_key() -> None:
    assert crypto.key_id(RFC8032_PUBLIC) == RFC8032_KEY_ID


def test_it_formats_a_human_checkable_fingerprint() -> None:
    assert crypto.fingerprint(RFC8032_PUBLIC) == RFC8032_FINGERPRINT


@pytest.mark.parametrize("bad", [b"", b"\x00" * 31, b"\x00" * 33])
def test_it_refuses_a_key_id_for_a_key_of_the_wrong_length(bad: bytes) -> None:
    with pytest.raises(ValueError, match="32 raw bytes"):
        crypto.key_id(bad)


def test_it_round_trips_a_signature() -> None:
    private_raw, public_raw = crypto.generate_keypair()

    signature = crypto.sign(private_raw, b"message")

    assert len(signature) == 64
    assert crypto.verify(public_raw, b"message", signature)


def test_it_rejects_a_signature_over_another_message() -> None:
    private_raw, public_raw = crypto.generate_keypair()
    signature = crypto.sign(private_raw, b"message")

    assert not crypto.verify(public_raw, b"messagE", signature)


def test_it_rejects_a_signature_under_another_key() -> None:
    private_raw, _ = crypto.generate_keypair()
    _, other_public = crypto.generate_keypair()

    assert not crypto.verify(other_public, b"m", crypto.sign(private_raw, b"m"))


@pytest.mark.parametrize(
    ("public_raw", "message", "signature"),
    [
        (b"\x00" * 31, b"m", b"\x00" * 64),
        (RFC8032_PUBLIC, b"m", b"\x00" * 63),
        (RFC8032_PUBLIC, b"", RFC8032_SIGNATURE[:-1] + b"\x00"),
        ("not bytes", b"m", b"\x00" * 64),
        (RFC8032_PUBLIC, "not bytes", RFC8032_SIGNATURE),
        (RFC8032_PUBLIC, b"", None),
        (b"\xff" * 32, b"", RFC8032_SIGNATURE),
    ],
)
def test_verify_returns_false_and_never_raises_on_bad_input(
    public_raw: object, message: object, signature: object
) -> None:
    assert crypto.verify(public_raw, message, signature) is False  # type: ignore[arg-type]


def test_it_encodes_standard_padded_base64() -> None:
    assert crypto.b64encode(RFC8032_PUBLIC) == RFC8032_PUBLIC_B64
    assert crypto.b64decode(RFC8032_PUBLIC_B64) == RFC8032_PUBLIC


@pytest.mark.parametrize(
    "text",
    [
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo",  # missing padding
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=",  # URL-safe alphabet
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo= ",  # trailing space
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n",  # trailing newline
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURp=",  # non-zero padding bits
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo==",  # excess padding
        "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHÜRo=",  # non-ASCII
    ],
)
def test_it_decodes_base64_strictly(text: str) -> None:
    with pytest.raises(ValueError, match="base64"):
        crypto.b64decode(text)


def test_it_rejects_non_string_base64() -> None:
    with pytest.raises(ValueError, match="base64"):
        crypto.b64decode(b"AAAA")  # type: ignore[arg-type]


def test_it_round_trips_an_encrypted_private_key() -> None:
    private_raw, _ = crypto.generate_keypair()

    token = crypto.encrypt_private_key(private_raw, "correct horse")

    assert token.startswith("v1$")
    assert token.count("$") == 3
    assert private_raw.hex() not in token
    assert crypto.decrypt_private_key(token, "correct horse") == private_raw


def test_it_salts_each_encryption() -> None:
    private_raw, _ = crypto.generate_keypair()

    first = crypto.encrypt_private_key(private_raw, "s")
    second = crypto.encrypt_private_key(private_raw, "s")

    assert first != second
    assert first.split("$")[1] != second.split("$")[1]


def test_it_refuses_to_decrypt_with_the_wrong_secret() -> None:
    token = crypto.encrypt_private_key(crypto.generate_keypair()[0], "right")

    with pytest.raises(crypto.KeyDecryptionError, match="wrong secret"):
        crypto.decrypt_private_key(token, "wrong")


def test_it_refuses_a_tampered_ciphertext() -> None:
    token = crypto.encrypt_private_key(crypto.generate_keypair()[0], "s")
    version, salt, nonce, ciphertext = token.split("$")
    flipped = bytearray(crypto.b64decode(ciphertext))
    flipped[0] ^= 1
    tampered = "$".join([version, salt, nonce, crypto.b64encode(bytes(flipped))])

    with pytest.raises(crypto.KeyDecryptionError):
        crypto.decrypt_private_key(tampered, "s")


@pytest.mark.parametrize(
    "token",
    ["", "v1$a$b", "v2$AAAA$AAAA$AAAA", "v1$!!$AAAA$AAAA", "v1$AAAA$AAAAAAAAAAAAAAAA$AAAA"],
)
def test_it_refuses_a_malformed_token(token: str) -> None:
    with pytest.raises(crypto.KeyDecryptionError):
        crypto.decrypt_private_key(token, "s")


def test_it_refuses_an_empty_secret() -> None:
    with pytest.raises(ValueError, match="secret"):
        crypto.encrypt_private_key(crypto.generate_keypair()[0], "")
