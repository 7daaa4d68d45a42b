"""`oma run -p litellm` through the real command line, against the fake Chat Completions API."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_chat_completions import FakeChatCompletions

from oma_core.cli import cli
from oma_core.testing.conformance import MEDIA_SAMPLES


@pytest.mark.parametrize("streaming", [True, False])
def test_oma_run_reaches_the_openai_route(server: FakeChatCompletions, streaming: bool) -> None:
    server.reply_text("Hello through the bridge.")
    args = ["run", "-p", "litellm", "-m", "openai/gpt-fake", "--base-url", server.base_url]
    args += ["--api-key", "test-key", "hi there"]
    if not streaming:
        args.insert(1, "--no-stream")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Hello through the bridge." in result.output
    [request] = server.requests
    assert request.json["model"] == "gpt-fake"
    assert request.json["messages"] == [{"role": "user", "content": "hi there"}]


def test_oma_run_refuses_a_video_and_sends_nothing(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(MEDIA_SAMPLES["video/mp4"])
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-p",
            "litellm",
            "-m",
            "openai/gpt-fake",
            "--base-url",
            server.base_url,
            "--api-key",
            "test-key",
            "--video",
            str(clip),
            "what is this?",
        ],
    )
    assert result.exit_code == 2  # refused before any request: a usage error
    assert 'LiteLLM bridge cannot represent the "video" content block' in result.output
    assert server.requests == []
