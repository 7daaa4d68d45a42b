"""Media sources: the source shape and its media type; which media type fits which block."""

from __future__ import annotations

from typing import Any

import pytest
from _builders import (
    IMG_URL,
    VID_URL,
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
    refused(
        [user(image(url_source(media_type=media_type)))],
        "messages[0].content[0].source.media_type",
        "MIME type without parameters",
    )
    refused(
        [user(image(url_source(media_type=media_type)))],
        "messages[0].content[0].source.media_type",
        "MIME type without parameters",
    )


@pytest.mark.parametrize("media_type", [None, 5, ["video/mp4"]])
def test_a_media_type_that_is_not_a_string_is_refused(media_type: Any) -> None:
    with pytest.raises(InvalidMessageError, match="MIME type without parameters"):
        load_video("QUJD", media_type)


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


def test_media_type_must_be_a_string() -> None:
    err = refused([user(image(url_source(media_type=None)))])  # type: ignore[arg-type]
    assert err.path == "messages[0].content[0].source.media_type"
    assert "got None" in str(err)


def test_image_with_a_video_media_type_is_refused() -> None:
    err = refused([user(image(url_source(media_type="video/mp4")))])
    assert err.path.startswith("messages[0].content[0]")


def test_video_with_an_image_media_type_is_refused() -> None:
    err = refused([user(video(url_source(VID_URL, "image/png")))])
    assert err.path.startswith("messages[0].content[0]")


def test_image_in_a_tool_result_must_be_an_image() -> None:
    part = {"type": "image", "source": url_source(media_type="application/pdf")}
    err = refused([user(tool_result([part]))])
    assert err.path.startswith("messages[0].content[0].content[0]")


@pytest.mark.parametrize(
    "media_type", ["image/svg+xml", "image/vnd.microsoft.icon", "image/x-icon"]
)
def test_structured_and_vendor_image_types_are_accepted(media_type: str) -> None:
    (message,) = load_messages([user(image(url_source(media_type=media_type)))])
    assert message.content[0].source.media_type == media_type
