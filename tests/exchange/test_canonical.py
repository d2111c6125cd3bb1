from __future__ import annotations

import json
import struct

import pytest

from exchange.canonical import CanonicalizationError, canonicalize

# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]

# Further ECMAScript Number::toString cases named in the brief (Python literal -> JCS text).
MORE_NUMBERS = [
    (0.0, "0"),
    (-0.0, "0"),
    (1e21, "1e+21"),
    (1e20, "100000000000000000000"),
    (1e-7, "1e-7"),
    (1e-6, "0.000001"),
    (0.000001, "0.000001"),
    (333333333.33333329, "333333333.3333333"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (1e23, "1e+23"),
    (4.50, "4.5"),
    (2e-3, "0.002"),
    (1e30, "1e+30"),
    (1e-27, "1e-27"),
    (1.0, "1"),
    (-1.5, "-1.5"),
    (123e-20, "1.23e-18"),
    (9007199254740991, "9007199254740991"),
    (-9007199254740991, "-9007199254740991"),
    (0, "0"),
    (42, "42"),
]

# RFC 8785 §3.2.3: property sorting by UTF-16 code units.
SORTING_INPUT = """{
  "\\u20ac": "Euro Sign",
  "\\r": "Carriage Return",
  "\\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\\ud83d\\ude00": "Emoji: Grinning Face",
  "\\u0080": "Control",
  "\\u00f6": "Latin Small Letter O With Diaeresis"
}"""
SORTING_VALUES = [
    "Carriage Return",
    "One",
    "Control",
    "Latin Small Letter O With Diaeresis",
    "Euro Sign",
    "Emoji: Grinning Face",
    "Hebrew Letter Dalet With Dagesh",
]
SORTING_OUTPUT = (
    b'{"\\r":"Carriage Return","1":"One","\xc2\x80":"Control",'
    b'"\xc3\xb6":"Latin Small Letter O With Diaeresis","\xe2\x82\xac":"Euro Sign",'
    b'"\xf0\x9f\x98\x80":"Emoji: Grinning Face","\xef\xac\xb3":"Hebrew Letter Dalet With Dagesh"}'
)

# RFC 8785 §3.2.4 (and Appendix A): the sample object and its canonical form.
SAMPLE_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
SAMPLE_OUTPUT = (
    b'{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    b'"string":"\xe2\x82\xac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)
SAMPLE_OUTPUT_HEX = (
    "7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72"
    " 75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a"
    " 5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31"
    " 65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37"
    " 5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30"
    " 30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d"
)


def _double(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


@pytest.mark.parametrize(("bits", "expected"), APPENDIX_B)
def test_it_serialises_every_appendix_b_number(bits: str, expected: str) -> None:
    value = _double(bits)
    assert float(expected) == value  # the vector itself is self-consistent
    assert canonicalize(value) == expected.encode()


@pytest.mark.parametrize(("value", "expected"), MORE_NUMBERS)
def test_it_serialises_numbers_like_ecmascript(value: float, expected: str) -> None:
    assert canonicalize(value) == expected.encode()


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), [1.0, float("nan")], {"a": float("inf")}]
)
def test_it_rejects_nan_and_infinity(value: object) -> None:
    with pytest.raises(CanonicalizationError, match="NaN and Infinity"):
        canonicalize(value)


def test_it_rejects_integers_outside_the_safe_range() -> None:
    with pytest.raises(CanonicalizationError, match="safe range"):
        canonicalize(2**53)


@pytest.mark.parametrize("value", [{"\ud800": 1}, ["\udfff"], b"bytes", {1: "non-string key"}])
def test_it_rejects_values_without_a_canonical_form(value: object) -> None:
    with pytest.raises(CanonicalizationError):
        canonicalize(value)


def test_it_sorts_properties_by_utf16_code_units() -> None:
    parsed = json.loads(SORTING_INPUT)

    output = canonicalize(parsed)

    assert output == SORTING_OUTPUT
    assert list(json.loads(output).values()) == SORTING_VALUES


def test_it_produces_the_rfc_sample_output_exactly() -> None:
    output = canonicalize(json.loads(SAMPLE_INPUT))

    assert output == SAMPLE_OUTPUT
    assert output == bytes.fromhex(SAMPLE_OUTPUT_HEX)


def test_it_is_independent_of_input_member_order_and_whitespace() -> None:
    first = json.loads('{"b": [1, {"y": 2, "x": 1}], "a": "z"}')
    second = json.loads('{"a":"z","b":[1,{"x":1,"y":2}]}')

    assert canonicalize(first) == canonicalize(second) == b'{"a":"z","b":[1,{"x":1,"y":2}]}'


def test_it_escapes_only_what_jcs_requires() -> None:
    text = "\x00\x1f\x7f\u2028/<>&é"

    assert canonicalize(text) == '"\\u0000\\u001f\x7f\u2028/<>&é"'.encode()


def test_it_writes_literals_and_empty_containers() -> None:
    assert canonicalize([None, True, False, [], {}, ""]) == b'[null,true,false,[],{},""]'
