"""`oma run -p anthropic` and `oma render -p anthropic` against the fake Messages API."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_anthropic import FakeAnthropic

from oma_core import load_messages
from oma_core.cli import cli
from oma_core.testing.conformance import MEDIA_SAMPLES

PNG = MEDIA_SAMPLES["image/png"] + bytes(200)  # long enough for render to shorten it


@pytest.mark.parametrize("streaming", [True, False])
def test_oma_run_talks_to_the_fake_server(server: FakeAnthropic, streaming: bool) -> None:
    server.reply_text("Hello from Claude, via oma.")
    args = ["run", "-p", "anthropic", "-m", "claude-test", "--base-url", server.url]
    args += ["--api-key", "test-key", "hi there"]
    if not streaming:
        args.insert(1, "--no-stream")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Hello from Claude, via oma." in result.output
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.json["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi there"}]}
    ]
    assert request.json.get("stream", False) is streaming


def test_oma_run_reads_the_key_from_the_environment(server: FakeAnthropic) -> None:
    result = CliRunner().invoke(
        cli,
        ["run", "-p", "anthropic", "--base-url", server.url + "/v1", "hi"],
        env={"ANTHROPIC_API_KEY": "test-key"},
    )
    assert result.exit_code == 0, result.output
    headers = server.requests[0].headers
    # the documented x-api-key header, or Bearer auth as the 2.x SDK sends it
    assert "test-key" in (headers.get("x-api-key"), headers.get("authorization", "")[7:])
    assert server.requests[0].path == "/v1/messages"


def test_oma_run_reports_a_refused_request_and_fails(server: FakeAnthropic) -> None:
    result = CliRunner().invoke(
        cli, ["run", "-p", "anthropic", "--base-url", server.url, "--api-key", "wrong", "hi"]
    )
    assert result.exit_code == 1
    assert "401" in result.output and "authentication_error" in result.output
    assert "wrong" not in result.output.replace("--api-key", "")


def test_oma_render_full_is_the_body_received_byte_for_byte(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    picture = tmp_path / "pixel.png"
    picture.write_bytes(PNG)
    args = ["-p", "anthropic", "-m", "claude-test", "--system", "Be brief ✓", "--image"]
    args += [str(picture), "--base-url", server.url, "--api-key", "test-key", "describé \u2603"]
    runner = CliRunner()
    rendered = runner.invoke(cli, ["render", "--full", "--no-stream", *args])
    assert rendered.exit_code == 0, rendered.output
    assert server.requests == []  # render sends nothing
    ran = runner.invoke(cli, ["run", "--no-stream", *args])
    assert ran.exit_code == 0, ran.output
    [request] = server.requests
    body = json.loads(rendered.stdout)
    data = body["messages"][0]["content"][1]["source"]["data"]
    assert base64.b64decode(data) == PNG
    wire = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    assert wire == request.body


def test_oma_render_without_full_shortens_the_payload(tmp_path: Path) -> None:
    picture = tmp_path / "pixel.png"
    picture.write_bytes(PNG)
    result = CliRunner().invoke(cli, ["render", "-p", "anthropic", "--image", str(picture), "x"])
    assert result.exit_code == 0, result.output
    whole = base64.b64encode(PNG).decode()
    assert whole not in result.output
    data = json.loads(result.output)["messages"][0]["content"][1]["source"]["data"]
    assert data.startswith(whole[:16]) and f"[{len(whole)} chars]" in data


def test_oma_render_refuses_video_before_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["render", "-p", "anthropic", "--video", "https://example.com/v.mp4", "x"]
    )
    assert result.exit_code == 2  # refused before any request: a usage error
    assert 'Anthropic Messages cannot represent the "video" content block' in result.output


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize("streaming", [False, True])
def test_oma_run_attach_report_pdf_reaches_the_service_as_a_base64_document(
    server: FakeAnthropic, streaming: bool
) -> None:
    report = EXAMPLES / "report.pdf"
    args = ["-p", "anthropic", "-m", "claude-test", "--base-url", server.url]
    args += ["--api-key", "test-key", "-a", str(report), "Summarise the report."]
    no_stream = [] if streaming else ["--no-stream"]
    rendered = CliRunner().invoke(cli, ["render", "--full", *no_stream, *args])
    assert rendered.exit_code == 0, rendered.output
    ran = CliRunner().invoke(cli, ["run", *no_stream, *args])
    assert ran.exit_code == 0, ran.output
    [request] = server.requests
    body = json.loads(rendered.stdout)
    assert body["messages"][0]["content"][1] == {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(report.read_bytes()).decode(),
        },
        "title": "report.pdf",
    }
    if streaming:  # render shows the streaming body, as oma run sends it
        assert request.json == body and body["stream"] is True
    else:  # byte for byte what render showed
        assert request.body == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def test_oma_run_attach_memo_md_reaches_the_service_as_plain_text(server: FakeAnthropic) -> None:
    memo = EXAMPLES / "memo.md"
    args = ["run", "-p", "anthropic", "--base-url", server.url, "--api-key", "test-key"]
    result = CliRunner().invoke(cli, [*args, "-a", str(memo), "What ships on Friday?"])
    assert result.exit_code == 0, result.output
    assert server.requests[0].json["messages"][0]["content"][1] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": memo.read_text("utf-8")},
        "title": "memo.md",
    }


def test_oma_render_refuses_audio_before_anything() -> None:
    voice = EXAMPLES / "voice.wav"
    result = CliRunner().invoke(cli, ["render", "-p", "anthropic", "-a", str(voice), "x"])
    assert result.exit_code == 2
    assert 'Anthropic Messages cannot represent the "audio" content block' in result.output


def test_the_run_log_keeps_who_signed_the_reasoning(server: FakeAnthropic, tmp_path: Path) -> None:
    """The logged answer (dumped messages) keeps a reasoning block's ``provider``; its
    signature is redacted there like any secret-looking value, so ``-c`` (which sends no past
    reasoning) still continues the conversation."""
    signature = "EqQBCgIYAhIM+/=" * 10
    server.reply(
        {"type": "thinking", "thinking": "step", "signature": signature},
        {"type": "text", "text": "first"},
    )
    server.reply_text("second")
    env = {"OMA_HOME": str(tmp_path), "ANTHROPIC_API_KEY": "test-key"}
    common = ["--no-stream", "--base-url", server.url]
    runner = CliRunner()
    first = runner.invoke(cli, ["run", "-p", "anthropic", *common, "one"], env=env)
    assert first.exit_code == 0, first.output
    second = runner.invoke(cli, ["run", "-c", *common, "two"], env=env)
    assert second.exit_code == 0, second.output
    assert second.output == "second\n"
    shown = runner.invoke(cli, ["logs", "-n", "0", "--json"], env=env)
    [reasoning] = [
        block
        for run in json.loads(shown.output)
        for block in run["answer"]["content"]
        if block["type"] == "reasoning"
    ]
    assert reasoning["provider"] == "anthropic"
    assert signature not in shown.output
    assert load_messages([{"role": "assistant", "content": [reasoning]}])
