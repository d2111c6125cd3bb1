"""RFC 8785 JSON Canonicalization Scheme (JCS), the byte form that packet signatures cover."""

from __future__ import annotations

import rfc8785

# I-JSON (RFC 7493) integers: beyond ±(2**53 - 1) a peer parsing into IEEE 754 doubles would
# see a different number than we signed, so such integers are refused rather than rounded.
MAX_SAFE_INTEGER = 2**53 - 1


class CanonicalizationError(ValueError):
    """A value that has no RFC 8785 canonical form (NaN, Infinity, huge int, bad key or type)."""


def canonicalize(obj: object) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON-compatible value."""
    try:
        return rfc8785.dumps(obj)  # type: ignore[arg-type]
    except rfc8785.FloatDomainError as exc:
        raise CanonicalizationError(
            "NaN and Infinity are not valid JSON numbers and cannot be canonicalized"
        ) from exc
    except rfc8785.IntegerDomainError as exc:
        raise CanonicalizationError(
            f"integers must lie within ±{MAX_SAFE_INTEGER} (I-JSON safe range)"
        ) from exc
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalizationError(str(exc)) from exc
    except UnicodeEncodeError as exc:
        # rfc8785 sorts keys by their UTF-16 encoding, which fails on a lone surrogate.
        raise CanonicalizationError("strings must not contain lone surrogates") from exc
    except RecursionError as exc:
        raise CanonicalizationError("value is nested too deeply") from exc
