"""Media sources: the source shape and its media type; which media type fits which block."""

from __future__ import annotations

from typing import Any

import pytest
from _builders import (
    IMG_URL,
    VID_URL,
    b64_source,
    image,
    load_video,
    refused,
    tool_result,
    url_source,
    user,
    video,
)

from oma_core import (
    InvalidMessageError,
    dump_messages,
    load_messages,
)

PATH = "messages[0].content[0].source"


@pytest.mark.parametrize(
    ("block", "media_type"),
    [
        (video, "video/mp4"),
        (video, "video/x-matroska"),
        (video, "video/vnd.avi"),
        (video, "video/3gpp2"),
        (video, "video/mp4+x.y_z"),
        (image, "image/svg+xml"),
        (image, "image/vnd.microsoft.icon"),
        (image, "image/x-icon"),
    ],
)
def test_lowercase_structured_and_vendor_media_types_are_accepted(
    block: Any, media_type: str
) -> None:
    (message,) = load_messages([user(block(b64_source("QUJD", media_type)))])
    assert message.content[0].source.media_type == media_type
    (message,) = load_messages([user(block(url_source(media_type=media_type)))])
    assert message.content[0].source.media_type == media_type


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
        "image/png; charset=binary",
        "image/png;q=1",
        "image/png ; a=b",
        "image/png ",
        "image/png\n",
        "image/ png",
        "image//png",
        "IMAGE/PNG",
        "Image/png",
        "image",
        "image/",
        "/png",
        " image/png",
        "png",
    ],
)
def test_media_types_with_parameters_wildcards_or_odd_characters_are_refused(
    media_type: str,
) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_video("QUJD", media_type)
    assert info.value.path == f"{PATH}.media_type"
    assert "MIME type without parameters" in str(info.value)
    refused(
        [user(image(url_source(media_type=media_type)))],
        "messages[0].content[0].source.media_type",
        "MIME type without parameters",
    )


@pytest.mark.parametrize(
    ("media_type", "shown"), [(None, "None"), (5, "int"), (["video/mp4"], "list")]
)
def test_a_media_type_that_is_not_a_string_is_refused(media_type: Any, shown: str) -> None:
    with pytest.raises(InvalidMessageError, match="MIME type without parameters") as info:
        load_video("QUJD", media_type)
    assert info.value.path == f"{PATH}.media_type"
    err = refused([user(image(url_source(media_type=media_type)))], f"{PATH}.media_type")
    assert f"got {shown}" in str(err)


def test_file_part_accepts_any_media_type() -> None:
    part = {"type": "file", "filename": "a.csv", "source": url_source("http://x.org/a", "text/csv")}
    (message,) = load_messages([user(tool_result([part]))])
    assert dump_messages([message])[0]["content"][0]["content"] == [part]


@pytest.mark.parametrize("kind", ["file", "URL", "Base64", None, "path", "data"])
def test_source_type_must_be_base64_or_url(kind: Any) -> None:
    source = {"type": kind, "media_type": "image/png", "url": IMG_URL}
    refused(
        [user(image(source))],
        "messages[0].content[0].source.type",
        'messages[0].content[0].source.type must be "base64" or "url"',
    )


def test_source_must_be_a_mapping() -> None:
    err = refused([user({"type": "image", "source": IMG_URL})])
    assert err.path.startswith("messages[0].content[0].source")
    assert "got str" in str(err)


@pytest.mark.parametrize(
    "block",
    [
        image(url_source(media_type="video/mp4")),
        video(url_source(VID_URL, "image/png")),
        image(b64_source("QUJD", "video/mp4")),
        video(b64_source("QUJD", "image/png")),
    ],
)
def test_an_image_with_a_video_media_type_or_the_reverse_is_refused(block: Any) -> None:
    err = refused([user(block)])
    assert err.path.startswith("messages[0].content[0]")


def test_image_in_a_tool_result_must_be_an_image() -> None:
    part = {"type": "image", "source": url_source(media_type="application/pdf")}
    err = refused([user(tool_result([part]))])
    assert err.path.startswith("messages[0].content[0].content[0]")
