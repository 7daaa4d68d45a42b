"""`oma run -p gemini --video clip.mp4`, `-a report.pdf` and `oma render` against the fake
Gemini API, through the real command line (a subprocess running ``oma``)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_gemini import API_KEY, FakeGemini, Reply
from genai_types import assert_google_genai_takes

from oma_core.testing.conformance import MEDIA_SAMPLES

CLIP = MEDIA_SAMPLES["video/mp4"] + bytes(range(256)) * 40


def _oma(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from oma_core.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60
    )


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mp4"
    path.write_bytes(CLIP)
    return path


@pytest.mark.parametrize("streaming", [True, False])
def test_oma_run_sends_a_video_file_as_inline_data(
    server: FakeGemini, clip: Path, streaming: bool
) -> None:
    server.reply(Reply(text="A cat walks by."))
    args = ["run", "-p", "gemini", "-m", "gemini-test", "--video", str(clip)]
    args += ["--base-url", server.base_url, "--api-key", API_KEY, "What happens?"]
    if not streaming:
        args.insert(1, "--no-stream")
    result = _oma(*args)
    assert result.returncode == 0, result.stderr
    assert "A cat walks by." in result.stdout
    [request] = server.requests
    method = "streamGenerateContent" if streaming else "generateContent"
    assert request.path == f"/v1beta/models/gemini-test:{method}"
    parts = request.json["contents"][0]["parts"]
    video = [p["inlineData"] for p in parts if "inlineData" in p]
    assert [v["mimeType"] for v in video] == ["video/mp4"]
    assert base64.b64decode(video[0]["data"]) == CLIP  # byte for byte
    assert {"text": "What happens?"} in parts


def test_oma_run_reads_the_key_from_gemini_api_key(server: FakeGemini) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_API_KEY")}
    result = _oma(
        "run",
        "-p",
        "gemini",
        "--base-url",
        server.url,
        "hi",
        env={**env, "GEMINI_API_KEY": API_KEY},
    )
    assert result.returncode == 0, result.stderr
    assert server.requests[0].headers["x-goog-api-key"] == API_KEY


def test_oma_run_refuses_a_video_over_the_inline_limit_sending_nothing(
    server: FakeGemini, tmp_path: Path
) -> None:
    big = tmp_path / "big.mp4"
    # the default limit is 100 MB; -o inline_limit sets a smaller one, as provider_options do
    big.write_bytes(MEDIA_SAMPLES["video/mp4"] + bytes(200_000))
    result = _oma(
        "run",
        "-p",
        "gemini",
        "--video",
        str(big),
        "-o",
        "inline_limit",
        "100000",
        "--base-url",
        server.base_url,
        "--api-key",
        API_KEY,
        "What happens?",
    )
    assert result.returncode != 0
    assert "inline limit of 100000 bytes" in result.stdout + result.stderr
    assert server.requests == []


def test_oma_render_full_is_the_body_received_byte_for_byte(server: FakeGemini, clip: Path) -> None:
    args = ["-p", "gemini", "-m", "gemini-test", "--system", "Be brief ✓", "--video", str(clip)]
    args += ["--base-url", server.base_url, "--api-key", API_KEY, "décris \u2603"]
    rendered = _oma("render", "--full", *args)
    assert rendered.returncode == 0, rendered.stderr
    assert server.requests == []
    ran = _oma("run", "--no-stream", *args)
    assert ran.returncode == 0, ran.stderr
    body = json.loads(rendered.stdout)
    wire = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    assert server.requests[0].body == wire


@pytest.mark.parametrize("streaming", [True, False])
def test_oma_run_attach_report_pdf_reaches_gemini_as_inline_data(
    server: FakeGemini, streaming: bool
) -> None:
    report = Path(__file__).resolve().parents[3] / "examples" / "report.pdf"
    args = ["run", "-p", "gemini", "-m", "gemini-test", "-a", str(report)]
    args += ["--base-url", server.base_url, "--api-key", API_KEY, "Summarise the report."]
    if not streaming:
        args.insert(1, "--no-stream")
    result = _oma(*args)
    assert result.returncode == 0, result.stderr
    [request] = server.requests
    assert_google_genai_takes(request.json)  # what google-genai's own types accept
    [content] = request.json["contents"]
    assert content["parts"] == [
        {"text": "Summarise the report."},
        {
            "inlineData": {
                "mimeType": "application/pdf",
                "data": base64.b64encode(report.read_bytes()).decode(),
            }
        },
    ]
