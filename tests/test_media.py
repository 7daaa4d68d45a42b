"""Media helpers: validated image and video blocks, the extension table, sizes, descriptions."""

from __future__ import annotations

import base64
import io
import mimetypes
from typing import Any

import pytest
from _builders import IMG_URL, PNG_B64, REFERENCE_MP4, REFERENCE_PNG, VID_URL, png_block, user_turn

from oma_core import (
    IMAGE_MEDIA_TYPES,
    Base64Source,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    UrlSource,
    VideoBlock,
    dump_messages,
    image_base64,
    image_url,
    load_messages,
    video_base64,
    video_url,
)
from oma_core.media import decoded_size, describe_source, guess_media_type


def test_image_media_types_are_the_four_common_ones() -> None:
    assert frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"}) == IMAGE_MEDIA_TYPES

    for media_type in ("image/jpeg", "image/png", "image/gif", "image/webp"):
        assert media_type in IMAGE_MEDIA_TYPES
    assert all(m.startswith("image/") for m in IMAGE_MEDIA_TYPES)

    four = {"image/jpeg", "image/png", "image/gif", "image/webp"}
    assert four == IMAGE_MEDIA_TYPES


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("https://example.com/a.jpg", "image/jpeg"),
        ("https://example.com/a.JPEG", "image/jpeg"),
        ("https://example.com/dir.v2/a.png?size=large#top", "image/png"),
        ("https://example.com/a.gif", "image/gif"),
        ("https://example.com/a.webp", "image/webp"),
        ("https://example.com/a.bmp", "image/bmp"),
        ("https://example.com/a.tiff", "image/tiff"),
        ("https://example.com/a.svg", "image/svg+xml"),
        ("https://example.com/a.heic", "image/heic"),
        ("https://example.com/a.avif", "image/avif"),
        ("https://example.com/a.png", "image/png"),
        ("https://example.com/a.jpeg", "image/jpeg"),
        ("https://example.com/dir/a.PNG", "image/png"),
        ("https://example.com/a.png?size=large#top", "image/png"),
        ("https://example.com/a.png?size=large", "image/png"),
        ("https://example.com/a.gif#frame", "image/gif"),
    ],
)
def test_image_url_infers_the_media_type_from_the_extension(url: str, media_type: str) -> None:
    block = image_url(url)
    assert block == ImageBlock(UrlSource(media_type, url))
    block = image_url(url)
    assert isinstance(block, ImageBlock)
    assert block.source == UrlSource(media_type=media_type, url=url)
    assert block.detail is None
    assert image_url(url).source.media_type == media_type


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("https://example.com/clip.mp4", "video/mp4"),
        ("https://example.com/clip.m4v", "video/x-m4v"),
        ("https://example.com/clip.MOV", "video/quicktime"),
        ("https://example.com/clip.webm", "video/webm"),
        ("https://example.com/clip.mkv", "video/x-matroska"),
        ("https://example.com/clip.avi", "video/x-msvideo"),
        ("https://example.com/clip.mpeg", "video/mpeg"),
        ("https://example.com/clip.mpg", "video/mpeg"),
        ("https://example.com/clip.3gp", "video/3gpp"),
        ("https://example.com/clip.mov", "video/quicktime"),
    ],
)
def test_video_url_infers_the_media_type_from_the_extension(url: str, media_type: str) -> None:
    assert video_url(url).source.media_type == media_type
    block = video_url(url)
    assert isinstance(block, VideoBlock)
    assert block.source == UrlSource(media_type=media_type, url=url)


@pytest.mark.parametrize(
    ("build", "path"),
    [
        (lambda: image_url("https://example.com/a"), "media_type"),
        (lambda: image_url("https://example.com/a.txt"), "media_type"),
        (lambda: image_url("https://example.com/a.mp4"), "media_type"),
        (lambda: image_url("https://a.png/"), "media_type"),
        (lambda: image_url("https://example.com/?f=a.png"), "media_type"),
        (lambda: video_url("https://example.com/a.png"), "media_type"),
    ],
)
def test_an_unknown_extension_without_a_media_type_is_refused(build: Any, path: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        build()
    assert info.value.path == path
    assert "could not be inferred" in str(info.value)


def test_the_table_does_not_consult_the_system_mimetypes(monkeypatch: pytest.MonkeyPatch) -> None:
    import mimetypes

    monkeypatch.setattr(mimetypes, "guess_type", lambda *a, **k: ("image/png", None))
    assert guess_media_type("https://example.com/a.xyz", "image") is None


def test_an_explicit_media_type_wins_over_the_extension() -> None:
    assert image_url("https://example.com/a", "image/png").source.media_type == "image/png"
    assert image_url("https://example.com/a.png", "image/webp").source.media_type == "image/webp"


@pytest.mark.parametrize(
    ("build", "path", "phrase"),
    [
        (lambda: image_url("file:///etc/passwd"), "url", "must use HTTP or HTTPS"),
        (lambda: image_url("//evil.com/a.png"), "url", "must be an absolute HTTP(S) URL"),
        (lambda: image_url("https://a.b/a.png", "video/mp4"), "media_type", "image MIME type"),
        (lambda: image_url("https://a.b/a.png", "image/png;q=1"), "media_type", "without param"),
        (lambda: image_url("https://a.b/a.png", detail="max"), "detail", '"low", "high"'),
        (lambda: video_url("s3://b/k.mp4"), "url", "must use HTTP or HTTPS"),
        (lambda: video_url("https://a.b/a.mp4", "image/png"), "media_type", "video MIME type"),
        (lambda: image_base64("data:image/png;base64,QUJD", "image/png"), "data", "raw base64"),
        (lambda: image_base64(b"QUJD", "image/png"), "data", "got bytes"),
        (lambda: image_base64("QUJD", "video/mp4"), "media_type", "image MIME type"),
        (lambda: image_base64("QR==", "image/png"), "data", "stray bits"),
        (lambda: video_base64("QUJD", "image/png"), "media_type", "video MIME type"),
        (lambda: video_base64("QUJD\n", "video/mp4"), "data", "raw base64"),
    ],
)
def test_helpers_refuse_bad_arguments_by_name(build: Any, path: str, phrase: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        build()
    assert info.value.path == path
    assert phrase in str(info.value)


def test_data_prefix_error_says_to_pass_raw_base64() -> None:
    with pytest.raises(InvalidMessageError, match="pass only the base64 text after the comma"):
        image_base64("data:image/png;base64,QUJD", "image/png")


def test_base64_helpers_build_validated_blocks(png_base64: str) -> None:
    image = image_base64(png_base64, "image/png", detail="high")
    assert image == ImageBlock(Base64Source("image/png", png_base64), "high")
    assert image.source.data is png_base64
    video = video_base64("AAAA", "video/mp4")
    assert video == VideoBlock(Base64Source("video/mp4", "AAAA"))

    img = image_base64(PNG_B64, "image/png", detail="low")
    assert img == ImageBlock(
        source=Base64Source(media_type="image/png", data=PNG_B64), detail="low"
    )
    vid = video_base64("AAAA", "video/mp4")
    assert vid == VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA"))
    assert image_base64("AAA", "image/gif").source.data == "AAA="


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 100, 1001])
def test_decoded_size_matches_the_decoded_bytes(size: int) -> None:
    raw = bytes(range(256)) * 4
    data = base64.b64encode(raw[: size or 1]).decode()
    assert decoded_size(Base64Source("image/png", data)) == len(raw[: size or 1])
    assert decoded_size(Base64Source("image/png", data.rstrip("="))) == len(raw[: size or 1])


def test_describe_source_names_type_kind_and_size_or_url(png_base64: str) -> None:
    assert describe_source(Base64Source("image/png", png_base64)) == "image/png, base64, 435 bytes"
    assert (
        describe_source(UrlSource("video/mp4", "https://example.com/c.mp4"))
        == "video/mp4, url, https://example.com/c.mp4"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/photo",
        "https://example.com/photo.xyzzy",
        "https://example.com/",
        "https://example.com/a.png/",
    ],
)
def test_unknown_extension_without_media_type_is_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError):
        image_url(url)
    with pytest.raises(InvalidMessageError):
        video_url(url)


def test_host_suffix_is_not_an_extension() -> None:
    with pytest.raises(InvalidMessageError):
        image_url("https://example.png")


def test_helper_media_type_table_is_fixed_not_mimetypes(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("mimetypes consulted")

    monkeypatch.setattr(mimetypes, "guess_type", boom)
    monkeypatch.setattr(mimetypes, "init", boom)
    assert image_url("https://example.com/a.webp").source.media_type == "image/webp"
    assert video_url("https://example.com/a.mp4").source.media_type == "video/mp4"


def test_explicit_media_type_and_detail_are_kept() -> None:
    block = image_url("https://example.com/render", media_type="image/png", detail="high")
    assert block.source.media_type == "image/png"
    assert block.detail == "high"
    assert video_url(VID_URL, media_type="video/webm").source.media_type == "video/webm"

    block = image_url("https://example.com/photo", media_type="image/jpeg", detail="high")
    assert block.source.media_type == "image/jpeg"
    assert block.detail == "high"


def test_helpers_check_like_load() -> None:
    with pytest.raises(InvalidMessageError):
        image_url(IMG_URL, detail="medium")
    with pytest.raises(InvalidMessageError):
        image_url("https://example.com/clip.mp4")
    with pytest.raises(InvalidMessageError):
        video_url("https://example.com/a.png")
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS"):
        image_url("file:///tmp/a.png")
    with pytest.raises(InvalidMessageError):
        image_url("data:image/png;base64,AAAA")
    with pytest.raises(InvalidMessageError):
        video_url("mm_file://abc", media_type="video/mp4")
    with pytest.raises(InvalidMessageError):
        image_url(IMG_URL, media_type="image/png; charset=x")


def test_base64_helpers_refuse_data_urls_and_wrong_kinds() -> None:
    with pytest.raises(InvalidMessageError, match="must contain raw base64 data"):
        image_base64("data:image/png;base64,AAAA", "image/png")
    with pytest.raises(InvalidMessageError, match="must contain raw base64 data"):
        video_base64("data:video/mp4;base64,AAAA", "video/mp4")
    with pytest.raises(InvalidMessageError):
        video_base64("AAAA", "image/png")
    with pytest.raises(InvalidMessageError):
        image_base64("AAAA", "video/mp4")
    with pytest.raises(InvalidMessageError):
        image_base64("AAAA", "image/png", detail="medium")


def test_helper_errors_do_not_echo_base64() -> None:
    with pytest.raises(InvalidMessageError) as info:
        image_base64("SECRETPAYLOAD" * 5 + "%", "image/png")
    assert "SECRETPAYLOAD" not in str(info.value)


def test_image_url_references_a_remote_image() -> None:
    block = image_url("https://example.com/photo.jpg")
    assert isinstance(block, ImageBlock)
    assert block.source == UrlSource("image/jpeg", "https://example.com/photo.jpg")
    assert block.detail is None
    assert dump_messages([LLMMessage("user", (block,))])[0]["content"][0] == {
        "type": "image",
        "source": {
            "type": "url",
            "media_type": "image/jpeg",
            "url": "https://example.com/photo.jpg",
        },
    }


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
def test_detail_is_low_high_or_auto(detail: str) -> None:
    assert image_url("https://example.com/a.png", detail=detail).detail == detail  # type: ignore[arg-type]
    (message,) = load_messages([user_turn({**png_block(), "detail": detail})])
    assert message.content[0].detail == detail  # type: ignore[union-attr]


@pytest.mark.parametrize("detail", ["medium", "HIGH", "", 1])
def test_any_other_detail_is_refused(detail: Any) -> None:
    with pytest.raises(InvalidMessageError):
        image_url("https://example.com/a.png", detail=detail)
    with pytest.raises(InvalidMessageError):
        load_messages([user_turn({**png_block(), "detail": detail})])


def test_image_url_without_an_inferable_media_type_is_refused() -> None:
    with pytest.raises(InvalidMessageError, match="media_type"):
        image_url("https://example.com/photo")


def test_image_base64_embeds_raw_base64() -> None:
    block = image_base64(REFERENCE_PNG, "image/png")
    assert block.source == Base64Source("image/png", REFERENCE_PNG)
    assert dump_messages([LLMMessage("user", (block,))])[0]["content"][0] == png_block()


@pytest.mark.parametrize(
    "data",
    [
        "data:image/png;base64," + REFERENCE_PNG,
        REFERENCE_PNG[:16] + " " + REFERENCE_PNG[16:],
        "",
        "not base64!",
    ],
)
def test_image_base64_refuses_anything_but_raw_base64(data: str) -> None:
    with pytest.raises(InvalidMessageError, match="raw base64") as caught:
        image_base64(data, "image/png")
    assert REFERENCE_PNG not in str(caught.value)


def test_image_base64_refuses_bytes() -> None:
    with pytest.raises(InvalidMessageError):
        image_base64(base64.b64decode(REFERENCE_PNG), "image/png")  # type: ignore[arg-type]


def test_an_image_helper_refuses_a_non_image_media_type() -> None:
    with pytest.raises(InvalidMessageError):
        image_base64(REFERENCE_PNG, "video/mp4")
    with pytest.raises(InvalidMessageError):
        video_base64(REFERENCE_MP4, "image/png")


# -- bytes and files: typed by their content ------------------------------------------------------

import os  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from oma_core import image_file, video_file  # noqa: E402
from oma_core.media import (  # noqa: E402
    IMAGE_EXTENSIONS,
    VIDEO_EXTENSIONS,
    MediaFileTooLargeError,
    MediaTypeMismatchError,
    MediaTypeWarning,
    checked_media_type,
    image_bytes,
    media_bytes,
    media_file,
    read_limited,
    sniff_media_type,
    video_bytes,
)

#: The start of a real file of each type (what the signature library reads), and its type.
SIGNATURES: dict[str, bytes] = {
    "image/png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01",
    "image/gif": b"GIF89a\x01\x00\x01\x00",
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "video/mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom",
    "video/quicktime": b"\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  ",
    "video/webm": bytes.fromhex("1a45dfa3")
    + b"\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x84webm",
}
EXTENSION_OF = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "video/webm": "webm",
}


@pytest.mark.parametrize("media_type", sorted(SIGNATURES))
def test_the_content_names_the_type_of_each_common_image_and_video(media_type: str) -> None:
    assert sniff_media_type(SIGNATURES[media_type] + bytes(64)) == media_type


@pytest.mark.parametrize("media_type", sorted(SIGNATURES))
def test_a_file_with_its_own_extension_becomes_a_base64_block_of_that_type(
    media_type: str, tmp_path: Path
) -> None:
    data = SIGNATURES[media_type] + bytes(64)
    path = tmp_path / f"clip.{EXTENSION_OF[media_type]}"
    path.write_bytes(data)
    block = media_file(path)
    assert isinstance(block.source, Base64Source)
    assert block.source.media_type == media_type
    assert base64.b64decode(block.source.data) == data
    family = image_file if media_type.startswith("image/") else video_file
    assert family(path).source == block.source


def test_a_jpeg_named_png_is_sent_as_jpeg_with_a_warning_naming_both_types(
    tmp_path: Path,
) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(SIGNATURES["image/jpeg"] + bytes(64))
    with pytest.warns(MediaTypeWarning) as caught:
        block = image_file(path)
    assert block.source.media_type == "image/jpeg"
    warning = caught[0].message
    assert isinstance(warning, MediaTypeWarning)
    assert (warning.name, warning.content_type, warning.extension_type) == (
        str(path),
        "image/jpeg",
        "image/png",
    )
    assert caught[0].filename == __file__  # points at the caller's line


def test_a_png_named_txt_is_sent_as_png_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "photo.txt"
    path.write_bytes(SIGNATURES["image/png"] + bytes(64))
    with pytest.warns(MediaTypeWarning, match="its extension says text/plain; sent as image/png"):
        block = media_file(path)
    assert isinstance(block, ImageBlock) and block.source.media_type == "image/png"


def test_a_file_without_a_known_extension_is_typed_without_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "photo.data"
    path.write_bytes(SIGNATURES["image/png"] + bytes(64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert media_file(path).source.media_type == "image/png"


def test_a_stated_type_replaces_the_extension_but_must_match_the_content(tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(SIGNATURES["image/jpeg"] + bytes(64))
    assert image_file(path, media_type="image/jpeg").source.media_type == "image/jpeg"
    with pytest.raises(MediaTypeMismatchError, match="stated type is image/gif"):
        image_file(path, media_type="image/gif")


def test_a_text_file_named_png_is_refused_as_text(tmp_path: Path) -> None:
    path = tmp_path / "fake.png"
    path.write_bytes(b"this is not a png")
    with pytest.raises(MediaTypeMismatchError, match="holds text, not an image"):
        image_file(path)
    with pytest.raises(MediaTypeMismatchError, match="holds text"):
        image_file(path, media_type="image/png")  # stating a type does not make text an image


def test_a_video_given_as_an_image_is_refused() -> None:
    with pytest.raises(MediaTypeMismatchError, match="is video/mp4, not an image"):
        image_bytes(SIGNATURES["video/mp4"] + bytes(8))


def test_content_of_no_known_type_needs_a_stated_type() -> None:
    unknown = bytes([0x00, 0xFF, 0x13, 0x37]) * 8
    with pytest.raises(MediaTypeMismatchError, match="no media type oma recognises"):
        media_bytes(unknown)
    assert video_bytes(unknown, media_type="video/x-custom").source.media_type == "video/x-custom"


def test_empty_data_is_refused() -> None:
    with pytest.raises(MediaTypeMismatchError, match="empty"):
        image_bytes(b"")


def test_bytes_helpers_refuse_a_str() -> None:
    with pytest.raises(InvalidMessageError, match="data must be bytes, got str"):
        image_bytes("iVBORw0KGgo=")  # type: ignore[arg-type]


def test_a_directory_and_a_missing_file_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidMessageError, match="is a directory"):
        image_file(tmp_path)
    with pytest.raises(InvalidMessageError, match="no such file"):
        video_file(tmp_path / "missing.mp4")


def test_the_signature_library_is_not_loaded_by_importing_oma() -> None:
    import subprocess
    import sys

    code = "import sys, oma_core, oma_core.media; print('filetype' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


_EXTENSIONS = sorted({**IMAGE_EXTENSIONS, **VIDEO_EXTENSIONS}.items())


@given(
    content_type=st.sampled_from(sorted(SIGNATURES)),
    extension=st.sampled_from(_EXTENSIONS),
    tail=st.binary(max_size=64),
)
def test_the_extension_never_changes_the_type_sent_only_agrees_or_warns(
    content_type: str, extension: tuple[str, str], tail: bytes
) -> None:
    """Whatever the extension says, the type sent is the content's; a disagreeing extension
    is a warning naming both."""
    data = SIGNATURES[content_type] + tail
    _name, hinted = extension
    same = {"image/apng": "image/png", "video/x-m4v": "video/mp4"}.get(hinted, hinted)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sent = checked_media_type(data, "f", None, None, hinted)
    assert sent == content_type
    if same == content_type:
        assert caught == []
    else:
        [warning] = [item.message for item in caught]
        assert isinstance(warning, MediaTypeWarning)
        assert (warning.content_type, warning.extension_type) == (content_type, hinted)


@given(data=st.binary(max_size=256))
def test_any_bytes_are_typed_by_their_signature_or_refused(data: bytes) -> None:
    sniffed = sniff_media_type(data)
    try:
        block = media_bytes(data)
    except MediaTypeMismatchError:
        assert sniffed is None or not sniffed.startswith(("image/", "video/"))
    else:
        assert sniffed is not None
        assert block.source.media_type.split("/")[0] == sniffed.split("/")[0]


# -- reading files safely -----------------------------------------------------------------------


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(InvalidMessageError, match=r"is a FIFO \(named pipe\), not a regular file"):
        image_file(fifo)  # opening it for reading would block until a writer came


def test_a_device_is_refused_without_being_read() -> None:
    with pytest.raises(InvalidMessageError, match="is a character device, not a regular file"):
        media_file("/dev/zero")


def test_a_file_past_max_bytes_is_refused_before_its_body_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    path.write_bytes(SIGNATURES["image/png"])
    os.truncate(path, 1 << 40)  # a terabyte, sparse: reading it would never end
    with pytest.raises(MediaFileTooLargeError) as caught:
        image_file(path, max_bytes=1000)
    error = caught.value
    assert (error.media_type, error.size, error.limit, error.grew) == (
        "image/png",
        1 << 40,
        1000,
        False,
    )


def test_max_bytes_may_depend_on_the_media_type(tmp_path: Path) -> None:
    path = tmp_path / "clip"
    path.write_bytes(SIGNATURES["video/mp4"] + bytes(200))
    per_type = {"image/png": 10, "video/mp4": 100}.get
    with pytest.raises(MediaFileTooLargeError, match="past the limit of 100 bytes"):
        media_file(path, max_bytes=per_type)
    assert media_file(path, max_bytes=lambda media_type: None).source.media_type == "video/mp4"


def test_a_file_that_grows_while_read_is_cut_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "growing.png"
    path.write_bytes(SIGNATURES["image/png"] + bytes(100_000))
    real_fstat = os.fstat

    def stale(fd: int) -> os.stat_result:  # the size as it was when the file was opened
        values = list(real_fstat(fd))
        values[6] = 100  # st_size
        return os.stat_result(values)

    monkeypatch.setattr(os, "fstat", stale)
    with pytest.raises(MediaFileTooLargeError) as caught:
        image_file(path, max_bytes=50_000)
    assert caught.value.grew and caught.value.size == 50_001
    assert "grew past the limit of 50000 bytes" in str(caught.value)


def test_a_file_without_a_limit_is_read_whole_past_its_stated_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = SIGNATURES["image/png"] + bytes(3 << 20)
    path = tmp_path / "large.png"
    path.write_bytes(data)
    assert base64.b64decode(image_file(path).source.data) == data


def test_a_stream_is_read_no_further_than_one_byte_past_the_limit() -> None:
    stream = io.BytesIO(SIGNATURES["video/mp4"] + bytes(10_000_000))
    with pytest.raises(MediaFileTooLargeError):
        read_limited(stream, "stdin", max_bytes=20_000)
    assert stream.tell() == 20_001


# -- errors carry no payload ----------------------------------------------------------------------

_payloads = st.binary(min_size=48, max_size=600).map(lambda raw: base64.b64encode(raw).decode())


def _errors_of(payload: str) -> list[InvalidMessageError]:
    """The errors of the helpers given ``payload`` in every wrong place."""
    data_url = f"data:image/png;base64,{payload}"
    calls: list[Any] = [
        lambda: image_base64(data_url, "image/png"),
        lambda: image_base64(payload + "!", "image/png"),
        lambda: image_base64(payload, data_url),
        lambda: image_base64(payload, "video/mp4"),
        lambda: video_base64(payload, payload),
        lambda: image_url(data_url),
        lambda: image_url(payload),
        lambda: image_url("https://example.com/a", payload),
        lambda: video_url(data_url, "video/mp4"),
        lambda: image_bytes(SIGNATURES["image/jpeg"], payload),
        lambda: image_bytes(payload.encode(), payload),
        lambda: media_bytes(bytes(64), payload),
        lambda: media_bytes(SIGNATURES["image/png"], data_url, name=data_url),
        lambda: video_bytes(SIGNATURES["image/png"], payload),
        lambda: load_messages([{"role": "user", "content": [image_base64_dict(data_url)]}]),
    ]
    errors = []
    for call in calls:
        try:
            call()
        except InvalidMessageError as error:
            errors.append(error)
    return errors


def image_base64_dict(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


@given(payload=_payloads)
def test_no_helper_error_carries_a_payload(payload: str) -> None:
    errors = _errors_of(payload)
    assert len(errors) >= 12  # each wrong call was refused
    for error in errors:
        text = f"{error} {error.args}"
        for start in range(0, len(payload) - 40, 20):
            assert payload[start : start + 40] not in text, str(error)
