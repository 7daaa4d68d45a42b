"""Base64 sources: raw canonical base64 only, padded, never echoed, checked to the last bit."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import pytest
from _builders import PNG_B64, SETTINGS, b64_source, image, load_video, refused, user, video
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    Base64Source,
    InvalidMessageError,
    _checks,
    dump_messages,
    load_messages,
)
from oma_core._checks import check_base64

RAW = "must contain raw base64 data"
PATH = "messages[0].content[0].source"


BLOCKS = {
    "image": lambda data: image(b64_source(data)),
    "video": lambda data: video(b64_source(data, "video/mp4")),
}


@pytest.mark.parametrize("block", sorted(BLOCKS))
@pytest.mark.parametrize(
    ("data", "kept"),
    [
        ("QUJD", "QUJD"),
        ("QUI=", "QUI="),
        ("QUI", "QUI="),
        ("QQ==", "QQ=="),
        ("QQ", "QQ=="),
        ("QUJDRA", "QUJDRA=="),
        ("AAAA", "AAAA"),
        ("AA==", "AA=="),
        ("AAA=", "AAA="),
        ("AA", "AA=="),
        ("AAA", "AAA="),
        ("+/+/", "+/+/"),
        ("AAAA+/+/", "AAAA+/+/"),
        (PNG_B64, PNG_B64),
        (
            base64.b64encode(bytes(range(256))).decode(),
            base64.b64encode(bytes(range(256))).decode(),
        ),
    ],
)
def test_canonical_base64_is_accepted_and_its_missing_padding_added(
    block: str, data: str, kept: str
) -> None:
    (message,) = load_messages([user(BLOCKS[block](data))])
    assert message.content[0].source.data == kept
    assert dump_messages([message])[0]["content"][0]["source"]["data"] == kept


@pytest.mark.parametrize("block", sorted(BLOCKS))
@pytest.mark.parametrize(
    ("data", "detail"),
    [
        ("QR==", "stray bits"),
        ("QR", "stray bits"),
        ("QUJ=", "stray bits"),
        ("QUJ", "stray bits"),
        ("AB==", "stray bits"),
        ("AAB=", "stray bits"),
        ("AB", "stray bits"),
        ("AAB", "stray bits"),
        ("QUJD====", "only A-Z"),
        ("QUJD=", "padding"),
        ("QUI==", "padding"),
        ("Q", "padding"),
        ("QUJDR", "padding"),
        ("AAAA=", "padding"),
        ("Q===", "only A-Z"),
        ("=QUJ", "only A-Z"),
        ("QU=D", "only A-Z"),
        ("AA=A", "only A-Z"),
        ("AA===", "only A-Z"),
        ("====", "only A-Z"),
        ("AAAA=A", "only A-Z"),
        ("QUJD-_8=", "only A-Z"),
        ("QUJD\nQUJD", "only A-Z"),
        ("iVBORw0K\nGgo=", "only A-Z"),
        ("QUJD QUJD", "only A-Z"),
        ("QUJD\r\n", "only A-Z"),
        ("AAAA\n", "only A-Z"),
        (" QUJD", "only A-Z"),
        ("QUJD\x00", "only A-Z"),
        ("QUJ\u00e9", "only A-Z"),
        ("\u00e9===", "only A-Z"),
        ("QUJ\ud800", "only A-Z"),
        ("data:video/mp4;base64,QUJD", "data: URL"),
        ("DATA:video/mp4;base64,QUJD", "data: URL"),
        ("data:image/png;base64,AAAA", "data: URL"),
        ("", "empty"),
    ],
)
def test_non_canonical_or_decorated_base64_is_refused(block: str, data: str, detail: str) -> None:
    error = refused([user(BLOCKS[block](data))], f"{PATH}.data", RAW)
    assert detail in str(error)


@pytest.mark.parametrize(
    ("data", "shown"), [(None, "None"), (5, "int"), (b"QUJD", "bytes"), (["QUJD"], "list")]
)
def test_base64_that_is_not_a_string_is_refused(data: Any, shown: str) -> None:
    error = refused([user(video(b64_source(data, "video/mp4")))], f"{PATH}.data", RAW)
    assert f"got {shown}" in str(error)


def test_refused_base64_is_never_echoed() -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_video("QUJD" * 1000 + "!")
    assert "QUJDQUJD" not in str(info.value)
    assert len(str(info.value)) < 300
    err = refused([user(image(b64_source("SECRETPAYLOADxyz" * 8 + "!!")))])
    assert "SECRETPAYLOAD" not in str(err)
    err = refused([user(image(b64_source("data:image/png;base64," + "SECRETPAYLOAD" * 4)))])
    assert "SECRETPAYLOAD" not in str(err)


def test_valid_payload_is_not_echoed_by_a_later_error() -> None:
    block = image(b64_source("SECRETPAYLOADAAA", "image/png; x=y"))
    err = refused([user(block)])
    assert "SECRETPAYLOAD" not in str(err)


@pytest.fixture(params=["simd", "portable"])
def large_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Large payloads are checked by pybase64's decoder, or by the portable scan on a platform
    without it; both must give the same answers."""
    if request.param == "portable":
        monkeypatch.setattr(_checks, "_simd_decoder", lambda: None)
    else:
        assert _checks._simd_decoder() is not None  # installed with oma-core
    return str(request.param)


def test_a_bad_character_deep_in_a_50_mb_payload_is_caught(large_path: str) -> None:
    payload = "QUJD" * 12_500_000
    bad = payload[:37_000_000] + "*" + payload[37_000_001:]
    with pytest.raises(InvalidMessageError, match="only A-Z"):
        load_video(bad)


def test_padding_inside_a_large_payload_is_refused_even_at_a_slice_end(large_path: str) -> None:
    # The SIMD decoder reads 1 MiB slices and takes "==" as a slice's final padding.
    at_slice_end = "QUJD" * (2**18 - 1) + "QQ==" + "QUJD" * 100
    for bad in (at_slice_end, "QUJD" * 20_000 + "QQ==" + "QUJD", "QUJD" * 20_000 + "QQ===="):
        with pytest.raises(InvalidMessageError, match="only A-Z"):
            check_base64(bad, "data")


def test_stray_bits_at_the_end_of_a_50_mb_payload_are_caught() -> None:
    payload = "QUJD" * 12_500_000 + "QR=="
    with pytest.raises(InvalidMessageError, match="stray bits"):
        load_video(payload)
    assert load_video(payload[:-3] + "Q==")[0].content[0].source.data.endswith("QQ==")


def test_python_decoder_leniency_is_not_inherited() -> None:
    for lenient in ("QR==", "QUJD===="):
        base64.b64decode(lenient)  # Python accepts both
        with pytest.raises(InvalidMessageError):
            Base64Source("image/png", lenient)


@SETTINGS
@given(st.binary(max_size=64))
def test_every_standard_encoding_is_accepted(raw: bytes) -> None:
    encoded = base64.b64encode(raw).decode()
    if raw:
        assert check_base64(encoded, "data") is encoded
        assert check_base64(encoded.rstrip("="), "data") == encoded


_LARGE_PREFIX = "QUJD" * 16_384  # 64 KiB of whole groups: the SIMD path's size


@SETTINGS
@given(st.text(alphabet="ABCQRSabcz019+/=-_ \n\u00e9", min_size=1, max_size=12))
def test_a_large_payload_is_judged_as_its_small_tail_is(text: str) -> None:
    """Whole valid groups in front change nothing: the SIMD path (64 KiB and more) accepts
    and refuses exactly what the small path does, with the same message."""

    def verdict(prefix: str) -> str:
        try:
            return "accepted " + check_base64(prefix + text, "data").removeprefix(prefix)
        except InvalidMessageError as error:
            return str(error)

    assert verdict(_LARGE_PREFIX) == verdict("QUJD")


@SETTINGS
@given(st.text(alphabet="ABCQRSabcz019+/=-_ \n", max_size=12))
def test_accepted_base64_is_exactly_what_the_encoder_produces(text: str) -> None:
    try:
        padded = check_base64(text, "data")
    except InvalidMessageError:
        return
    decoded = binascii.a2b_base64(padded, strict_mode=True)
    assert base64.b64encode(decoded).decode() == padded
