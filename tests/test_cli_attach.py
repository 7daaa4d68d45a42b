"""``oma run -a``: files, URLs and stdin attached, typed by their content; piped text."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import attrs
import pytest
from _builders import oma
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import Capabilities, ProviderSpec, hookimpl
from oma_core.plugins import PluginHost

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(84)  # 100 bytes
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(88)  # 100 bytes
MP4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(6)  # 30 bytes


pytestmark = pytest.mark.usefixtures("cli_home")


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_attach_a_file_typed_by_its_content(tmp_path: Path) -> None:
    result = oma("run", "look", "-a", write(tmp_path, "cat.png", PNG))
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "look"; image image/png base64 100 bytes\n'


def test_a_file_without_an_extension_is_typed_by_its_content(tmp_path: Path) -> None:
    result = oma("run", "-a", write(tmp_path, "clip", MP4))
    assert result.exit_code == 0, result.output
    assert "video video/mp4 base64 30 bytes" in result.stdout


def test_a_jpeg_named_png_is_sent_as_jpeg_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "photo.png", JPEG)
    result = oma("run", "look", "-a", path)
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "look"; image image/jpeg base64 100 bytes\n'
    assert result.stderr == (
        f"warning: -a {path}: its content is image/jpeg, but its extension says image/png; "
        "sent as image/jpeg\n"
    )


def test_a_png_named_txt_is_sent_as_png_with_the_same_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "photo.txt", PNG)
    result = oma("run", "look", "-a", path)
    assert result.exit_code == 0, result.output
    assert "image image/png base64 100 bytes" in result.stdout
    assert result.stderr == (  # .txt names a text document: the content contradicts it
        f"warning: -a {path}: its content is image/png, but its extension says text/plain; "
        "sent as image/png\n"
    )
    named_jpg = write(tmp_path, "cat.jpg", PNG)
    warned = oma("run", "look", "-a", named_jpg)
    assert "image image/png base64 100 bytes" in warned.stdout
    assert warned.stderr.startswith(f"warning: -a {named_jpg}: its content is image/png")


def test_attach_type_states_the_type_and_attaches(tmp_path: Path) -> None:
    path = write(tmp_path, "photo.png", JPEG)
    result = oma("run", "--attach-type", path, "image/jpeg")
    assert result.exit_code == 0, result.output
    assert "image image/jpeg base64 100 bytes" in result.stdout
    both = oma("run", "-a", path, "--at", path, "image/jpeg")  # given twice, attached once
    assert both.stdout.count("image/jpeg") == 1


def test_a_stated_type_that_the_content_contradicts_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "photo.png", JPEG)
    result = oma("run", "--attach-type", path, "image/gif")
    assert result.exit_code == 2
    assert "its content is image/jpeg, but the stated type is image/gif" in result.stderr


def test_a_text_file_named_png_is_refused_as_text(tmp_path: Path) -> None:
    result = oma("run", "-a", write(tmp_path, "fake.png", b"sixteen bytes!!\n"))
    assert result.exit_code == 2
    assert (
        "it holds text, not an image, a video, a document or audio (its extension says image/png)"
        in result.stderr
    )
    assert "pipe it" in result.stderr


def test_a_binary_non_media_file_is_one_line(tmp_path: Path) -> None:
    result = oma("run", "-a", write(tmp_path, "blob.bin", bytes(range(256))))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "no media type oma recognises" in result.stderr
    assert "Traceback" not in result.output


def test_a_directory_and_a_missing_file_are_one_line_each(tmp_path: Path) -> None:
    folder = oma("run", "-a", str(tmp_path))
    assert folder.exit_code == 2
    assert folder.stderr == (
        f"error: -a {tmp_path}: {tmp_path} is a directory, not a regular file\n"
    )
    missing = oma("run", "--image", str(tmp_path / "nope.png"))
    assert missing.exit_code == 2
    assert "no such file" in missing.stderr


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    import os

    path = tmp_path / "secret.png"
    path.write_bytes(PNG)
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything: a symlink loop cannot be read
        path.unlink()
        path.symlink_to(path)
    result = oma("run", "-a", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: -a {path}: cannot read {path}")
    assert result.stderr.count("\n") == 1


def test_image_and_video_check_the_family(tmp_path: Path) -> None:
    result = oma("run", "--image", write(tmp_path, "clip.mp4", MP4))
    assert result.exit_code == 2
    assert "its content is video/mp4, not an image" in result.stderr
    assert oma("run", "--video", write(tmp_path, "x.mp4", MP4)).exit_code == 0


def test_attach_stdin_bytes_with_a_dash() -> None:
    result = oma("run", "what is it?", "-a", "-", input=PNG)
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "what is it?"; image image/png base64 100 bytes\n'


def test_stdin_that_is_no_media_is_refused() -> None:
    result = oma("run", "-a", "-", input=b"just words")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: -a -: it holds text")


def test_stdin_can_be_attached_once() -> None:
    result = oma("run", "-a", "-", "-a", "-", input=PNG)
    assert result.exit_code == 2
    assert "stdin can be attached once" in result.stderr


def test_a_url_with_an_extension_stays_a_url() -> None:
    result = oma("run", "-a", "https://example.com/a.jpg", "-a", "https://example.com/b.webm")
    assert result.exit_code == 0, result.output
    assert "image image/jpeg url https://example.com/a.jpg" in result.stdout
    assert "video video/webm url https://example.com/b.webm" in result.stdout


def test_a_document_or_audio_url_is_typed_by_its_extension() -> None:
    result = oma(
        "run", "-a", "https://x/report.pdf", "-a", "https://x/memo.md", "-a", "https://x/voice.mp3"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "user: document application/pdf url https://x/report.pdf; "
        "document text/markdown url https://x/memo.md; audio audio/mpeg url https://x/voice.mp3\n"
    )


def test_a_url_without_an_extension_needs_attach_type() -> None:
    url = "https://example.com/render?id=7"
    result = oma("run", "-a", url)
    assert result.exit_code == 2
    assert result.stderr == (  # one type of each of the four families
        f"error: cannot tell the media type of {url} from its name; state it: "
        f"--attach-type {url} image/png (or video/mp4, application/pdf, audio/mpeg, ...)\n"
    )
    assert "media_type=" not in result.stderr  # a CLI hint, not Python advice
    stated = oma("run", "--attach-type", url, "image/png")
    assert stated.exit_code == 0, stated.output
    assert f"image image/png url {url}" in stated.stdout


def test_attach_type_makes_a_url_a_document_or_audio() -> None:
    url = "https://example.com/render?id=7"
    result = oma("run", "--at", url, "application/pdf", "--at", url + "&v", "audio/wav")
    assert result.exit_code == 0, result.output
    assert f"document application/pdf url {url}" in result.stdout
    assert f"audio audio/wav url {url}&v" in result.stdout


def test_a_stated_url_type_of_no_family_is_refused() -> None:
    result = oma("run", "--at", "https://x/a.zip", "application/zip")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: -a https://x/a.zip: application/zip is none of the four families: an "
        "image/..., video/..., document (application/pdf, text/..., an office type) or "
        "audio/... type\n"
    )


def test_image_or_video_with_a_url_of_another_family_names_its_type() -> None:
    result = oma("run", "--image", "https://x/report.pdf")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --image https://x/report.pdf: its extension says application/pdf, not an image\n"
    )


class DocumentsByValuePlugin:
    """A provider that takes documents and audio inline only, as Bedrock's Converse does."""

    def __init__(self) -> None:
        from oma_core.testing import ScriptedProvider

        everything = Capabilities.everything()
        by_value = frozenset({"base64"})
        blocks = tuple(
            attrs.evolve(b, sources=by_value) if b.block_type in ("document", "audio") else b
            for b in everything.blocks
        )
        self.provider = ScriptedProvider(
            ["ok"], name="byvalue", capabilities=attrs.evolve(everything, blocks=blocks)
        )

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        spec = ProviderSpec(
            "byvalue", "ByValue", lambda s: self.provider, self.provider.capabilities
        )
        return [spec]


@pytest.mark.parametrize(
    ("url", "kind"), [("https://x/r.pdf", "document"), ("https://x/v.mp3", "audio")]
)
def test_a_url_the_provider_cannot_fetch_is_refused_before_any_request(
    cli_home: Path, url: str, kind: str
) -> None:
    plugin = DocumentsByValuePlugin()
    PluginHost.default().register(plugin, name="byvalue-plugin")
    result = oma("run", "-p", "byvalue", "read it", "-a", url)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f'error: ByValue cannot represent the "{kind}" content block: url sources are not '
        "supported in a user message\n"
    )
    assert plugin.provider.requests == []


def test_a_non_http_url_is_a_usage_error() -> None:
    result = oma("run", "-a", "file:///etc/passwd.png")
    assert result.exit_code == 2
    assert "must use HTTP or HTTPS" in result.stderr


def test_a_data_url_is_checked_against_its_content() -> None:
    good = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert "image image/png base64 100 bytes" in oma("run", "-a", good).stdout
    lying = "data:image/png;base64," + base64.b64encode(JPEG).decode()
    result = oma("run", "-a", lying)
    assert result.exit_code == 2
    assert "its content is image/jpeg, but the stated type is image/png" in result.stderr


def test_a_data_url_refused_is_named_without_its_payload() -> None:
    payload = base64.b64encode(JPEG + bytes(5000)).decode()
    lying = "data:image/png;base64," + payload
    result = oma("run", "-a", lying)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: -a data:image/png;base64,... ({len(lying)} characters): its content is "
        "image/jpeg, but the stated type is image/png\n"
    )
    broken = oma("run", "-a", "data:image/png;base64," + payload[:-3] + "!!!")
    assert broken.exit_code == 2
    assert payload[:24] not in broken.stderr
    assert len(result.stderr) < 200 and len(broken.stderr) < 200


# -- reading files safely -----------------------------------------------------------------------


class SmallLimitPlugin:
    """A provider whose images may hold 20 MB each (as OpenAI's) and videos 100 bytes."""

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        from oma_core.testing import ScriptedProvider
        from oma_core.toolkit import MediaLimit

        capabilities = attrs.evolve(
            Capabilities.everything(),
            limits=(MediaLimit(20_000_000, {"image"}), MediaLimit(100, {"video"})),
        )
        return [
            ProviderSpec("small", "Small", lambda s: ScriptedProvider(["ok"] * 9), capabilities)
        ]


@pytest.fixture
def small(cli_home: Path) -> None:
    PluginHost.default().register(SmallLimitPlugin(), name="small-plugin")


def sparse(tmp_path: Path, name: str, head: bytes, size: int) -> str:
    """A file of ``size`` bytes that starts with ``head`` and takes no disk (``truncate``)."""
    path = write(tmp_path, name, head)
    subprocess.run(["truncate", "-s", str(size), path], check=True, timeout=30)
    return path


def peak_memory_of(*args: str) -> tuple[Any, int]:
    """The command's result and the peak of Python memory it allocated, in bytes."""
    oma("run", "warm up", "-a", "-", input=PNG)  # lazy imports are not the command's reading
    tracemalloc.start()
    try:
        result = oma(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.usefixtures("small")
def test_a_3gb_sparse_png_is_refused_against_the_providers_limit_without_reading_it(
    tmp_path: Path,
) -> None:
    path = sparse(tmp_path, "huge.png", PNG, 3 * 1024**3)
    result, peak = peak_memory_of("run", "-p", "small", "look", "-a", path)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: -a {path}: 3221225472 bytes of image/png, past the Small limit of 20000000 "
        "bytes per image; send it by URL or make it smaller\n"
    )
    assert peak < 4 * 1024 * 1024  # the 20 MB limit was not read up to either


@pytest.mark.usefixtures("small")
def test_the_limit_is_the_one_for_the_kind_of_media(tmp_path: Path) -> None:
    assert oma("run", "-p", "small", "-a", write(tmp_path, "a.png", PNG)).exit_code == 0
    video = oma("run", "-p", "small", "-a", write(tmp_path, "clip.mp4", MP4 + bytes(200)))
    assert video.exit_code == 2
    assert "230 bytes of video/mp4, past the Small limit of 100 bytes per video" in video.stderr


def test_a_provider_without_a_limit_gets_omas_own(tmp_path: Path) -> None:
    path = sparse(tmp_path, "huge.png", PNG, 3 * 1024**3)
    result, peak = peak_memory_of("run", "look", "-a", path)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: -a {path}: 3221225472 bytes of image/png, past oma's limit of 104857600 "
        "bytes per attachment (Echo declares none for image)\n"
    )
    assert peak < 4 * 1024 * 1024


@pytest.mark.usefixtures("small")
def test_stdin_is_read_no_further_than_the_limit() -> None:
    video = oma("run", "-p", "small", "-a", "-", input=MP4 + bytes(20_000))
    assert video.exit_code == 2
    assert video.stderr == (
        "error: -a -: more than 100 bytes of video/mp4, past the Small limit of 100 bytes per "
        "video; send it by URL or make it smaller\n"
    )


def test_a_device_is_refused_at_once_and_never_read() -> None:
    result, peak = peak_memory_of("run", "-a", "/dev/zero")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: -a /dev/zero: /dev/zero is a character device, not a regular file\n"
    )
    assert peak < 1024 * 1024


def test_a_fifo_is_refused_at_once_and_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    done = subprocess.run(  # a hang would end at the timeout, failing the test
        [sys.executable, "-m", "oma_core.cli", "run", "-a", str(fifo)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == f"error: -a {fifo}: {fifo} is a FIFO (named pipe), not a regular file\n"
    assert done.stdout == ""


# -- piped text ---------------------------------------------------------------------------------


def test_piped_text_is_appended_to_the_prompt() -> None:
    result = oma("run", "summarise", input="line one\nline two\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "summarise\\n\\nline one\\nline two\\n"\n'


def test_piped_text_alone_is_the_prompt() -> None:
    assert oma("run", input="just this").stdout == 'user: text "just this"\n'


def test_piped_text_that_is_not_utf8_is_one_line() -> None:
    result = oma("run", "summarise", input=b"\xff\xfe\x00bad")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: stdin is not UTF-8 text; to send an image or video from stdin, use -a -\n"
    )


def test_no_prompt_no_stdin_no_media_is_a_usage_error() -> None:
    result = oma("run")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: give a PROMPT")


def test_messages_from_stdin() -> None:
    conversation = [{"role": "user", "content": [{"type": "text", "text": "from a pipe"}]}]
    result = oma("run", "--messages", "-", input=json.dumps(conversation))
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "from a pipe"\n'
    both = oma("run", "--messages", "-", "-a", "-", input=json.dumps(conversation))
    assert both.exit_code == 2
    assert both.stderr == (
        "error: stdin can be read once: --messages - and -a - cannot both take it\n"
    )


def test_piped_text_is_read_no_further_than_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from oma_core.cli import _inputs

    monkeypatch.setattr(_inputs, "DEFAULT_MAX_JSON_BYTES", 1000)
    result = oma("run", "summarise", input="x" * 5000)
    assert result.exit_code == 2
    assert result.stderr == "error: piped stdin holds more than the limit of 1000 bytes\n"


@settings(max_examples=30, deadline=None)
@given(
    raw=st.binary(min_size=60, max_size=3000),
    declared=st.sampled_from(["image/png", "image/jpeg", "video/mp4", "text/plain"]),
    option=st.sampled_from(["-a", "--image", "--video"]),
)
def test_no_attach_error_carries_the_payload(raw: bytes, declared: str, option: str) -> None:
    payload = base64.b64encode(raw).decode()
    for value in (f"data:{declared};base64,{payload}", f"data:{declared};base64,{payload}!"):
        result = oma("run", option, value)
        for start in range(0, len(payload) - 32, 16):
            assert payload[start : start + 32] not in result.stderr


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["-a", "https://ann:s3cret-pw@host.test/x.png"], "https://ann:***@host.test/x.png"),
        (["-a", "https://s3cret-pw@host.test/x.png"], "https://***@host.test/x.png"),
        (["-a", "https://ann:s3cret-pw@host.test/x"], "https://ann:***@host.test/x"),
        (["--image", "https://ann:s3cret-pw@host.test/x.pdf"], "https://ann:***@host.test/x.pdf"),
        (
            ["--attach-type", "https://ann:s3cret-pw@host.test/x", "image/png"],
            "https://ann:***@host.test/x",
        ),
    ],
)
def test_a_url_with_a_password_is_refused_without_repeating_it(args: list[str], shown: str) -> None:
    result = oma("run", "look", *args)
    assert result.exit_code == 2
    assert "s3cret-pw" not in result.output
    assert result.stderr.startswith("error: ") and shown in result.stderr
    assert result.stderr.count("\n") == 1
    logs = oma("logs", "--json")
    assert "s3cret-pw" not in logs.output
