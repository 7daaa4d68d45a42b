"""`oma run -p bedrock` through the real command line, against the fake Converse server."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from botocore_model import MODEL, assert_botocore_takes
from click.testing import CliRunner
from fake_bedrock import FakeBedrock

from oma_core.cli import cli
from oma_core.testing.conformance import MEDIA_SAMPLES

CLIP = MEDIA_SAMPLES["video/mp4"] + bytes(range(256)) * 40  # a few KB with every byte value


@pytest.mark.parametrize("streaming", [True, False])
def test_oma_run_with_a_video_reaches_converse_as_a_video_block_with_its_bytes(
    server: FakeBedrock, tmp_path: Path, streaming: bool
) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(CLIP)
    server.reply_text("A short clip of nothing much.")
    args = ["run", "-p", "bedrock", "-m", "amazon.nova-lite-v1:0", "--video", str(clip)]
    args += ["--base-url", server.url, "What happens in this clip?"]
    if not streaming:
        args.insert(1, "--no-stream")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "A short clip of nothing much." in result.output
    [request] = server.requests
    action = "converse-stream" if streaming else "converse"
    assert request.path == f"/model/amazon.nova-lite-v1%3A0/{action}"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    content = request.json["messages"][0]["content"]
    [video] = [block["video"] for block in content if "video" in block]
    assert video["format"] == "mp4"
    assert base64.b64decode(video["source"]["bytes"]) == CLIP
    assert {"text": "What happens in this clip?"} in content


@pytest.mark.parametrize(
    ("option", "url", "kind"),
    [
        ("--video", "https://example.com/clip.mp4", "video"),
        ("-a", "https://example.com/report.pdf", "document"),
        ("-a", "https://example.com/voice.mp3", "audio"),
    ],
)
def test_oma_run_refuses_a_media_url_and_sends_nothing(
    server: FakeBedrock, option: str, url: str, kind: str
) -> None:
    """Converse reads media inline or from S3, never from an https URL."""
    args = ["run", "-p", "bedrock", "--base-url", server.url, option, url, "what is this?"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2  # refused before any request: a usage error
    assert f'Amazon Bedrock cannot represent the "{kind}" content block' in result.output
    assert server.requests == []


def test_oma_render_is_the_converse_body(tmp_path: Path) -> None:
    clip = tmp_path / "clip.webm"
    # An EBML header whose DocType is "webm": the content must say what the name says.
    clip.write_bytes(bytes.fromhex("1a45dfa39f4286810142f7810142f2810442f381084282") + b"\x84webm")
    result = CliRunner().invoke(
        cli, ["render", "--full", "-p", "bedrock", "--video", str(clip), "x"]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    [video] = [b["video"] for b in body["messages"][0]["content"] if "video" in b]
    assert video["format"] == "webm"
    assert base64.b64decode(video["source"]["bytes"]) == clip.read_bytes()


@pytest.mark.parametrize("streaming", [True, False])
def test_oma_run_attach_report_pdf_reaches_converse_as_a_document_block(
    server: FakeBedrock, streaming: bool
) -> None:
    report = Path(__file__).resolve().parents[3] / "examples" / "report.pdf"
    args = ["run", "-p", "bedrock", "-m", MODEL, "-a", str(report)]
    args += ["--base-url", server.url, "Summarise the report."]
    if not streaming:
        args.insert(1, "--no-stream")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    [request] = server.requests
    assert_botocore_takes(request.json, "ConverseStream" if streaming else "Converse")
    [message] = request.json["messages"]
    assert message["content"] == [
        {"text": "Summarise the report."},
        {
            "document": {
                "format": "pdf",
                "name": "report",
                "source": {"bytes": base64.b64encode(report.read_bytes()).decode()},
            }
        },
    ]
