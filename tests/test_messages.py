"""The message classes: valid by construction, immutable, cheap to copy."""

from __future__ import annotations

import copy
import enum
import math
import pickle
from typing import Any

import attrs
import pytest
from _builders import (
    IMG_URL,
    VID_URL,
    assistant,
    b64_source,
    image,
    text,
    tool_result,
    tool_use,
    url_source,
    user,
    video,
)

from oma_core import (
    Base64Source,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    VideoBlock,
    dump_messages,
    load_messages,
)
from oma_core.messages import FilePart

PNG_URL = UrlSource("image/png", "https://example.com/a.png")


def construction_refused(build: Any, path: str, phrase: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        build()
    assert info.value.path == path
    assert str(info.value).startswith(f"{path} ")
    assert phrase in str(info.value)


def test_each_block_reports_its_type() -> None:
    blocks = [
        TextBlock("a"),
        ImageBlock(PNG_URL),
        VideoBlock(UrlSource("video/mp4", "https://example.com/a.mp4")),
        ToolUseBlock("t", "f", {}),
        ToolResultBlock("t", "ok"),
        ReasoningBlock("r"),
        FilePart("a.pdf", Base64Source("application/pdf", "QUJD")),
    ]
    assert [b.type for b in blocks] == [
        "text",
        "image",
        "video",
        "tool_use",
        "tool_result",
        "reasoning",
        "file",
    ]
    assert (PNG_URL.type, Base64Source("image/png", "QUJD").type) == ("url", "base64")


def test_content_given_as_a_list_is_stored_as_a_tuple() -> None:
    message = LLMMessage("user", [TextBlock("a")])
    assert message.content == (TextBlock("a"),)
    result = ToolResultBlock("t", [TextBlock("a")])
    assert isinstance(result.content, tuple)


def test_dict_blocks_are_accepted_and_built() -> None:
    message = LLMMessage(
        "user",
        [
            {"type": "text", "text": "a"},
            {
                "type": "image",
                "source": {
                    "type": "url",
                    "media_type": "image/png",
                    "url": "https://example.com/a.png",
                },
            },
        ],
    )
    assert message == LLMMessage("user", [TextBlock("a"), ImageBlock(PNG_URL)])
    assert ImageBlock(
        {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}
    ) == ImageBlock(PNG_URL)


@pytest.mark.parametrize(
    ("build", "path", "phrase"),
    [
        (lambda: TextBlock(5), "text", "must be a string, got int"),
        (lambda: UrlSource("image/png", "file:///etc/passwd"), "url", "must use HTTP or HTTPS"),
        (lambda: UrlSource("image/PNG", "https://a.b/"), "media_type", "without parameters"),
        (lambda: Base64Source("image/png", "QR=="), "data", "must contain raw base64 data"),
        (
            lambda: ImageBlock(UrlSource("video/mp4", "https://a.b/")),
            "source.media_type",
            "must be an image MIME type",
        ),
        (lambda: ImageBlock(PNG_URL, detail="max"), "detail", '"low", "high" or "auto"'),
        (lambda: ImageBlock("https://a.b/a.png"), "source", "must be a media source"),
        (lambda: VideoBlock(PNG_URL), "source.media_type", "must be a video MIME type"),
        (lambda: ToolUseBlock(1, "f", {}), "id", "got int"),
        (lambda: ToolUseBlock("t", "f", []), "input", "must be a JSON object"),
        (lambda: ToolUseBlock("t", "f", {"x": {1, 2}}), "input.x", "cloneable structured data"),
        (
            lambda: ToolResultBlock("t", [TextBlock("a")], is_error=True),
            "content",
            "must be a string for an error tool result",
        ),
        (lambda: ToolResultBlock("t", "x", is_error=None), "is_error", "got None"),
        (
            lambda: ToolResultBlock("t", [VideoBlock(UrlSource("video/mp4", "https://a.b/"))]),
            "content[0]",
            "must be a tool result part",
        ),
        (
            lambda: ToolResultBlock("t", [ImageBlock(PNG_URL, "low")]),
            "content[0].detail",
            "not allowed",
        ),
        (lambda: ReasoningBlock("r", signature=5), "signature", "got int"),
        (lambda: FilePart(None, PNG_URL), "filename", "got None"),
        (lambda: LLMMessage("system", [TextBlock("a")]), "role", 'must be "user" or "assistant"'),
        (
            lambda: LLMMessage("user", "hello"),
            "content",
            "must be a list of content blocks, got str",
        ),
        (lambda: LLMMessage("user", []), "content", "at least one content block"),
        (
            lambda: LLMMessage("user", [ToolUseBlock("t", "f", {})]),
            "content[0]",
            "only assistant messages",
        ),
        (
            lambda: LLMMessage("assistant", [ToolResultBlock("t", "x")]),
            "content[0]",
            "only user messages",
        ),
        (lambda: LLMMessage("user", [FilePart("a", PNG_URL)]), "content[0]", "file part"),
        (
            lambda: LLMMessage(
                "user",
                [
                    {
                        "type": "image",
                        "source": {
                            "type": "url",
                            "media_type": "image/png",
                            "url": "mm_file://abc",
                        },
                    }
                ],
            ),
            "content[0].source.url",
            "must be an absolute HTTP(S) URL",
        ),
        (lambda: LLMMessage("user", [TextBlock("a")] * 100_001), "content", "exceeds the limit"),
    ],
)
def test_hand_construction_runs_the_checks_with_relative_paths(
    build: Any, path: str, phrase: str
) -> None:
    construction_refused(build, path, phrase)


def test_the_role_is_checked_before_the_content() -> None:
    construction_refused(lambda: LLMMessage("system", "not a list"), "role", "must be")


def test_objects_are_frozen() -> None:
    block = TextBlock("a")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        block.text = "b"  # type: ignore[misc]
    message = LLMMessage("user", [block])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.content = ()  # type: ignore[misc]

    block = TextBlock(text="x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        block.text = "y"  # type: ignore[misc]
    source = UrlSource(media_type="image/png", url=IMG_URL)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        source.url = "file:///x"  # type: ignore[misc]


def test_a_tool_input_is_a_read_only_deep_copy() -> None:
    raw: dict[str, Any] = {"tags": ["a"], "opts": {"k": 1}}
    block = ToolUseBlock("t", "f", raw)
    raw["tags"].append("b")
    raw["opts"]["k"] = 2
    assert block.input == {"tags": ("a",), "opts": {"k": 1}}
    with pytest.raises(TypeError):
        block.input["opts"]["k"] = 3
    plain = block.plain_input()
    plain["tags"].append("c")
    assert plain == {"tags": ["a", "c"], "opts": {"k": 1}}
    assert block.input["tags"] == ("a",)


def test_evolve_checks_the_new_values() -> None:
    block = ImageBlock(PNG_URL)
    assert attrs.evolve(block, detail="high").detail == "high"
    with pytest.raises(InvalidMessageError):
        attrs.evolve(block, detail="huge")


def test_messages_compare_and_hash_by_value() -> None:
    one = LLMMessage("assistant", [TextBlock("a"), ToolUseBlock("t", "f", {"x": [1]})])
    two = LLMMessage(
        "assistant",
        [
            {"type": "text", "text": "a"},
            {"type": "tool_use", "id": "t", "name": "f", "input": {"x": [1]}},
        ],
    )
    assert one == two
    assert hash(one) == hash(two)
    assert one != LLMMessage("assistant", [TextBlock("a"), ToolUseBlock("t", "f", {"x": [2]})])


def test_copying_returns_the_same_immutable_object() -> None:
    message = LLMMessage("user", [ImageBlock(Base64Source("image/png", "QUJD"))])
    assert copy.copy(message) is message
    assert copy.deepcopy(message) is message
    assert copy.deepcopy([message])[0] is message


def test_messages_survive_pickling() -> None:
    message = LLMMessage("assistant", [ToolUseBlock("t", "f", {"a": [1, {"b": None}]})])
    assert pickle.loads(pickle.dumps(message)) == message


def test_repr_never_shows_a_whole_payload() -> None:
    source = Base64Source("video/mp4", "QUJD" * 100_000)
    assert len(repr(source)) < 200
    assert "400000 chars" in repr(source)


def test_block_subclasses_count_as_blocks() -> None:
    @attrs.frozen(init=False)
    class Note(TextBlock):
        pass

    note = Note("n")
    assert load_messages([{"role": "user", "content": [note]}])[0].content[0] is note


def test_string_subclasses_are_stored_as_plain_strings() -> None:
    class Role(enum.StrEnum):
        USER = "user"

    message = LLMMessage(Role.USER, [TextBlock(Role.USER)])  # type: ignore[arg-type]
    assert type(message.role) is str
    assert type(message.content[0].text) is str


def test_a_string_subclass_cannot_lie_its_way_past_the_checks() -> None:
    class Liar(str):
        def isascii(self) -> bool:
            return True

        def isprintable(self) -> bool:
            return True

    with pytest.raises(InvalidMessageError, match="raw base64"):
        Base64Source("image/png", Liar("QUJ\u00e9"))
    with pytest.raises(InvalidMessageError, match="absolute HTTP"):
        UrlSource("image/png", Liar("https://example.com/a\nb"))
    assert type(Base64Source("image/png", Liar("QUJD")).data) is str


def test_hand_built_objects_equal_loaded_ones() -> None:
    built = LLMMessage(
        role="user",
        content=(
            TextBlock(text="hi"),
            ImageBlock(source=UrlSource(media_type="image/png", url=IMG_URL), detail="high"),
            VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA")),
            ToolResultBlock(tool_use_id="t1", content="ok"),
        ),
    )
    loaded = load_messages(
        [
            user(
                text("hi"),
                image(url_source(), detail="high"),
                video(b64_source("AAAA", "video/mp4")),
                tool_result("ok"),
            )
        ]
    )
    assert loaded == (built,)
    assistant_built = LLMMessage(
        role="assistant",
        content=(
            ReasoningBlock(text="r", signature="s"),
            ToolUseBlock(id="t1", name="zoom", input={"q": "x"}),
        ),
    )
    assert dump_messages([assistant_built]) == [
        assistant({"type": "reasoning", "text": "r", "signature": "s"}, tool_use())
    ]


@pytest.mark.parametrize(
    "build",
    [
        lambda: TextBlock(text=123),
        lambda: TextBlock(text=None),
        lambda: TextBlock(text="\ud800"),
        lambda: UrlSource(media_type="image/png", url="file:///etc/passwd"),
        lambda: UrlSource(media_type="image/png", url="mm_file://abc"),
        lambda: UrlSource(media_type="Image/PNG", url=IMG_URL),
        lambda: UrlSource(media_type="image/png; q=1", url=IMG_URL),
        lambda: Base64Source(media_type="image/png", data="data:image/png;base64,AAAA"),
        lambda: Base64Source(media_type="image/png", data="AB=="),
        lambda: Base64Source(media_type="image/png", data=""),
        lambda: ImageBlock(source=UrlSource(media_type="image/png", url=IMG_URL), detail="medium"),
        lambda: ImageBlock(source=UrlSource(media_type="video/mp4", url=VID_URL)),
        lambda: ImageBlock(source="https://example.com/a.png"),
        lambda: VideoBlock(source=UrlSource(media_type="image/png", url=IMG_URL)),
        lambda: ToolUseBlock(id=1, name="x", input={}),
        lambda: ToolUseBlock(id="1", name="x", input=[1]),
        lambda: ToolUseBlock(id="1", name="x", input={"s": {1}}),
        lambda: ToolUseBlock(id="1", name="x", input={"f": math.nan}),
        lambda: ToolResultBlock(tool_use_id="t", content=()),
        lambda: ToolResultBlock(tool_use_id="t", content=(TextBlock(text="x"),), is_error=True),
        lambda: ToolResultBlock(tool_use_id=None, content="x"),
        lambda: ReasoningBlock(text=5),
        lambda: ReasoningBlock(text="x", signature=5),
        lambda: LLMMessage(role="system", content=(TextBlock(text="x"),)),
        lambda: LLMMessage(role="user", content=()),
        lambda: LLMMessage(role="user", content="hello"),
        lambda: LLMMessage(role="user", content=(ToolUseBlock(id="1", name="x", input={}),)),
        lambda: LLMMessage(role="user", content=(ReasoningBlock(text="x"),)),
        lambda: LLMMessage(
            role="assistant", content=(ToolResultBlock(tool_use_id="t", content="x"),)
        ),
        lambda: LLMMessage(role="user", content=({"type": "text", "text": 1},)),
    ],
)
def test_invalid_objects_cannot_be_constructed(build: Any) -> None:
    with pytest.raises(InvalidMessageError):
        build()


def test_constructed_error_never_echoes_base64() -> None:
    with pytest.raises(InvalidMessageError) as info:
        Base64Source(media_type="image/png", data="SECRETPAYLOAD" * 10 + "!")
    assert "SECRETPAYLOAD" not in str(info.value)


def test_evolving_into_an_invalid_object_is_refused() -> None:
    source = UrlSource(media_type="image/png", url=IMG_URL)
    with pytest.raises(InvalidMessageError):
        attrs.evolve(source, url="file:///x")
