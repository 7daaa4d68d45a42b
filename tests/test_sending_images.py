"""Sending images to agents: order, several images, local files and the sync wrappers."""

from __future__ import annotations

import base64

from _builders import REFERENCE_PNG, builtin_host, png_block, text_block, user_turn, vision_agent

from oma_core import (
    Agent,
    AgentConfig,
    image_base64,
    image_url,
)


async def test_text_and_image_blocks_can_appear_in_any_order() -> None:
    agent, provider = vision_agent(["a", "b"])
    await agent.prompt(
        [image_url("https://example.com/chart.png"), text_block("Summarize this chart.")]
    )
    await agent.prompt([text_block("And now?"), image_base64(REFERENCE_PNG, "image/png")])
    first, second = (r.messages[-1] for r in provider.requests)
    assert [b.type for b in first.content] == ["image", "text"]
    assert [b.type for b in second.content] == ["text", "image"]


async def test_multiple_images_in_a_single_turn() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=builtin_host())  # echo
    result = await agent.prompt(
        [
            text_block("Compare these two images:"),
            image_url("https://example.com/before.jpg"),
            image_url("https://example.com/after.jpg"),
        ]
    )
    assert result.success
    assert "https://example.com/before.jpg" in result.output
    assert "https://example.com/after.jpg" in result.output
    assert result.output.index("before.jpg") < result.output.index("after.jpg")


async def test_a_local_file_is_sent_as_base64_and_echo_reports_its_decoded_size() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=builtin_host())
    result = await agent.prompt(
        [image_base64(REFERENCE_PNG, "image/png"), text_block("What do you see?")]
    )
    assert result.success
    assert f"{len(base64.b64decode(REFERENCE_PNG))} bytes" in result.output
    assert REFERENCE_PNG not in result.output


def test_sync_wrappers_send_images_from_scripts() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=builtin_host())
    result = agent.prompt_sync([image_url("https://example.com/a.png"), text_block("hi")])
    assert result.success and "image/png" in result.output
    assert agent.run_sync([user_turn(png_block())]).success
