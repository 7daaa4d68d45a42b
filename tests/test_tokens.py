"""estimate_tokens: characters / 4, a flat price per image, a quarter of each video's length."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import pytest
from _builders import (
    PNG_B64,
    REFERENCE_MP4,
    REFERENCE_PNG,
    assistant,
    assistant_text,
    b64_source,
    image,
    png_block,
    text,
    tool_result,
    tool_use,
    url_source,
    user,
    user_turn,
    video,
    video_block,
    vision_agent,
)

from oma_core import (
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    TextBlock,
    ToolResultBlock,
    estimate_tokens,
    image_base64,
    image_url,
    load_messages,
)


def test_text_costs_a_quarter_of_its_characters_rounded_up() -> None:
    assert estimate_tokens([user({"type": "text", "text": "abcde"})]) == 2
    assert estimate_tokens([user({"type": "text", "text": "abcd"})]) == 1
    assert estimate_tokens([user({"type": "text", "text": ""})]) == 0


def test_characters_are_summed_before_rounding() -> None:
    blocks = [{"type": "text", "text": "a"}] * 4
    assert estimate_tokens([user(*blocks)]) == 1


def test_reasoning_tool_inputs_and_tool_results_count_as_text() -> None:
    tool_input = {"city": "Paris", "days": [1, 2]}
    compact = json.dumps(tool_input, separators=(",", ":"))
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "x" * 8, "signature": "s" * 400},
                {"type": "tool_use", "id": "t", "name": "weather", "input": tool_input},
            ],
        },
        user(
            {"type": "tool_result", "tool_use_id": "t", "content": "y" * 4},
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{"type": "text", "text": "zz"}],
            },
        ),
    ]
    assert estimate_tokens(messages) == -(-(8 + len(compact) + 4 + 2) // 4)


def test_each_image_costs_a_flat_amount_tool_result_images_too() -> None:
    image = {
        "type": "image",
        "source": {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"},
    }
    result = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "image", "source": image["source"]}],
    }
    assert estimate_tokens([user(image, result)]) == 2000
    assert estimate_tokens([user(image, result)], image_tokens=85) == 170


def test_a_video_costs_a_quarter_of_its_payload_or_url() -> None:
    url = "https://example.com/clip.mp4"
    by_url = {"type": "video", "source": {"type": "url", "media_type": "video/mp4", "url": url}}
    inline = {
        "type": "video",
        "source": {"type": "base64", "media_type": "video/mp4", "data": "QUJD" * 25},
    }
    assert estimate_tokens([user(by_url)]) == -(-len(url) // 4)
    assert estimate_tokens([user(inline)]) == 25
    assert estimate_tokens([user(by_url, inline)]) == -(-len(url) // 4) + 25

    url = "https://example.com/clip.mp4"
    assert estimate_tokens([user_turn(video_block("url"))]) == math.ceil(len(url) / 4)
    assert estimate_tokens([user_turn(video_block("base64"))]) == math.ceil(len(REFERENCE_MP4) / 4)

    url = "https://example.com/clip.mp4"  # 28 characters
    assert estimate_tokens([user(video(url_source(url, "video/mp4")))]) == 7
    assert estimate_tokens([user(video(b64_source("AAAA" * 10, "video/mp4")))]) == 10
    assert estimate_tokens([user(video(b64_source("AAAAAA==", "video/mp4")))]) == 2


def test_objects_and_empty_input_are_accepted() -> None:
    from oma_core import LLMMessage, TextBlock

    assert estimate_tokens([LLMMessage("user", [TextBlock("abcdefgh")])]) == 2
    assert estimate_tokens([]) == 0


def test_invalid_input_is_refused() -> None:
    with pytest.raises(InvalidMessageError):
        estimate_tokens([user({"type": "text", "text": 1})])


def test_estimate_of_nothing_is_zero() -> None:
    assert estimate_tokens([]) == 0


@pytest.mark.parametrize(("chars", "tokens"), [(0, 0), (1, 1), (4, 1), (5, 2), (8, 2), (9, 3)])
def test_text_costs_ceil_of_a_quarter_of_its_characters(chars: int, tokens: int) -> None:
    assert estimate_tokens([user(text("x" * chars))]) == tokens


def test_characters_not_bytes_are_counted() -> None:
    assert estimate_tokens([user(text("é" * 8))]) == 2


def test_each_image_costs_image_tokens() -> None:
    messages = [user(image(), image(b64_source(PNG_B64)))]
    assert estimate_tokens(messages) == 2000
    assert estimate_tokens(messages, image_tokens=85) == 170
    assert estimate_tokens(messages, image_tokens=0) == 0


def test_reasoning_text_counts() -> None:
    assert estimate_tokens([assistant({"type": "reasoning", "text": "x" * 12})]) == 3


def test_tool_input_counts_as_json() -> None:
    value = {"q": "x"}  # '{"q": "x"}' is 10 characters; '{"q":"x"}' 9: both 3 tokens
    assert estimate_tokens([assistant(tool_use(value))]) == 3


def test_tool_result_text_counts() -> None:
    assert estimate_tokens([user(tool_result("x" * 8))]) == 2
    assert estimate_tokens([user(tool_result([text("x" * 4), text("y" * 4)]))]) == 2


def test_a_whole_conversation_adds_up() -> None:
    data = [
        user(text("x" * 8), image(), video(url_source("https://e.co/v.mp4", "video/mp4"))),
        assistant({"type": "reasoning", "text": "y" * 4}, tool_use({"q": "x"})),
        user(tool_result("z" * 4)),
    ]
    # text 2 + image 1000 + video ceil(18/4)=5 + reasoning 1 + input 3 + result 1
    assert estimate_tokens(data) == 2 + 1000 + 5 + 1 + 3 + 1
    assert estimate_tokens(load_messages(data)) == estimate_tokens(data)


def test_estimate_refuses_invalid_input() -> None:
    with pytest.raises(InvalidMessageError):
        estimate_tokens([user(text(5))])


def test_an_image_costs_a_flat_thousand_tokens_regardless_of_size() -> None:
    small = image_base64(REFERENCE_PNG, "image/png")
    large = image_base64(base64.b64encode(bytes(200_000)).decode("ascii"), "image/png")
    remote = image_url("https://example.com/a-very-long-name-for-a-large-image.png")
    for block in (small, large, remote):
        assert estimate_tokens([LLMMessage("user", (block,))]) == 1000


def test_the_image_estimate_adds_to_the_text_estimate() -> None:
    text = "x" * 10  # ceil(10 / 4) == 3
    messages = [user_turn(text, png_block(), png_block("url"))]
    assert estimate_tokens(messages) == 3 + 2 * 1000
    assert estimate_tokens(messages, image_tokens=85) == 3 + 2 * 85


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
def test_detail_does_not_change_the_flat_image_estimate(detail: str) -> None:
    block = {**png_block(), "detail": detail}
    assert estimate_tokens([user_turn(block)]) == 1000


def test_images_inside_tool_results_count_too() -> None:
    block = ToolResultBlock("t1", (TextBlock("abcd"), image_url("https://example.com/a.png")))
    assert estimate_tokens([LLMMessage("user", (block,))]) == 1 + 1000


async def test_the_flat_image_estimate_drives_max_history_tokens() -> None:
    # each old turn holds one image (1000 tokens); a 2,500-token window keeps at most two
    history: list[dict[str, Any]] = []
    for index in range(4):
        history += [user_turn(f"turn {index}", png_block("url")), assistant_text(f"reply {index}")]
    agent, provider = vision_agent(["ok"], history=history, max_history_tokens=2500)
    await agent.prompt("now")
    sent = provider.requests[0].messages
    assert estimate_tokens(sent) <= 2500
    assert sent[0].role == "user"
    images = sum(isinstance(b, ImageBlock) for m in sent for b in m.content)
    assert images == 2
    assert sent[-1].content == (TextBlock("now"),)
