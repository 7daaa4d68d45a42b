"""Base64 sources and media types: raw canonical base64, parameterless lowercase MIME types."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

from oma_core import Base64Source, InvalidMessageError, load_messages

RAW = "must contain raw base64 data"
PATH = "messages[0].content[0].source"


def load_video(data: Any, media_type: Any = "video/mp4") -> Any:
    source = {"type": "base64", "media_type": media_type, "data": data}
    return load_messages([{"role": "user", "content": [{"type": "video", "source": source}]}])


@pytest.mark.parametrize(
    ("data", "kept"),
    [
        ("QUJD", "QUJD"),
        ("QUI=", "QUI="),
        ("QUI", "QUI="),
        ("QQ==", "QQ=="),
        ("QQ", "QQ=="),
        ("AAAA+/+/", "AAAA+/+/"),
        (
            base64.b64encode(bytes(range(256))).decode(),
            base64.b64encode(bytes(range(256))).decode(),
        ),
    ],
)
def test_canonical_base64_is_accepted_and_padded(data: str, kept: str) -> None:
    assert load_video(data)[0].content[0].source.data == kept


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        ("QR==", "stray bits"),
        ("QR", "stray bits"),
        ("QUJ=", "stray bits"),
        ("QUJ", "stray bits"),
        ("QUJD====", "only A-Z"),
        ("QUJD=", "padding"),
        ("QUI==", "padding"),
        ("Q", "padding"),
        ("QUJDR", "padding"),
        ("Q===", "only A-Z"),
        ("=QUJ", "only A-Z"),
        ("QU=D", "only A-Z"),
        ("QUJD-_8=", "only A-Z"),
        ("QUJD\nQUJD", "only A-Z"),
        ("QUJD QUJD", "only A-Z"),
        ("QUJD\r\n", "only A-Z"),
        (" QUJD", "only A-Z"),
        ("QUJD\x00", "only A-Z"),
        ("QUJ\u00e9", "only A-Z"),
        ("QUJ\ud800", "only A-Z"),
        ("data:video/mp4;base64,QUJD", "data: URL"),
        ("DATA:video/mp4;base64,QUJD", "data: URL"),
        ("", "empty"),
    ],
)
def test_non_canonical_or_decorated_base64_is_refused(data: str, detail: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_video(data)
    assert info.value.path == f"{PATH}.data"
    assert RAW in str(info.value)
    assert detail in str(info.value)


@pytest.mark.parametrize("data", [None, 5, b"QUJD", ["QUJD"]])
def test_base64_that_is_not_a_string_is_refused(data: Any) -> None:
    with pytest.raises(InvalidMessageError, match=RAW):
        load_video(data)


def test_error_messages_never_carry_the_payload() -> None:
    payload = "QUJD" * 1000 + "!"
    with pytest.raises(InvalidMessageError) as info:
        load_video(payload)
    assert "QUJDQUJD" not in str(info.value)
    assert len(str(info.value)) < 300


def test_a_bad_character_deep_in_a_50_mb_payload_is_caught() -> None:
    payload = "QUJD" * 12_500_000
    bad = payload[:37_000_000] + "*" + payload[37_000_001:]
    started = time.perf_counter()
    with pytest.raises(InvalidMessageError, match="only A-Z"):
        load_video(bad)
    assert time.perf_counter() - started < 5


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


# --- media types --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "media_type",
    ["video/mp4", "video/x-matroska", "video/vnd.avi", "video/3gpp2", "video/mp4+x.y_z"],
)
def test_lowercase_media_types_are_accepted(media_type: str) -> None:
    assert load_video("QUJD", media_type)[0].content[0].source.media_type == media_type


@pytest.mark.parametrize(
    "media_type",
    [
        "video/mp4;codecs=x",
        "video/mp4; codecs=avc1",
        "video/mp4,evil",
        "video/*",
        "*/*",
        "VIDEO/MP4",
        "video/MP4",
        " video/mp4",
        "video/mp4 ",
        "video / mp4",
        "video",
        "video/",
        "/mp4",
        "video/mp4/x",
        "",
        "video/mp4\n",
        "vid\u00e9o/mp4",
    ],
)
def test_media_types_with_parameters_wildcards_or_odd_characters_are_refused(
    media_type: str,
) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_video("QUJD", media_type)
    assert info.value.path == f"{PATH}.media_type"
    assert "MIME type without parameters" in str(info.value)


@pytest.mark.parametrize("media_type", [None, 5, ["video/mp4"]])
def test_a_media_type_that_is_not_a_string_is_refused(media_type: Any) -> None:
    with pytest.raises(InvalidMessageError, match="MIME type without parameters"):
        load_video("QUJD", media_type)
