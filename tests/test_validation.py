"""load_messages: the top-level input and message rules, first violation wins, no I/O."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from _builders import (
    SETTINGS,
    URL_SOURCE,
    assistant,
    b64_source,
    full_conversation,
    image,
    refused,
    text,
    tool_call,
    tool_result,
    tool_use,
    url_source,
    user,
)
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    InvalidMessageError,
    LLMMessage,
    TextBlock,
    dump_messages,
    load_messages,
)
from oma_core.validation import load_user_content

# --- the top level ------------------------------------------------------------------------


KEYS = st.sampled_from(
    [
        "role",
        "content",
        "type",
        "text",
        "source",
        "media_type",
        "data",
        "url",
        "detail",
        "id",
        "name",
        "input",
        "tool_use_id",
        "is_error",
        "filename",
        "signature",
        "redacted_data",
        "provider",
        "x",
    ]
)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        [
            "user",
            "assistant",
            "text",
            "image",
            "video",
            "tool_use",
            "tool_result",
            "reasoning",
            "file",
            "base64",
            "url",
            "image/png",
            "video/mp4",
            "QUJD",
            "https://example.com/a.png",
            "low",
        ]
    ),
)


JSON_LIKE = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(KEYS, st.text(max_size=5)), children, max_size=5),
    ),
    max_leaves=30,
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "messages must be a list, got None"),
        (0, "messages must be a list, got int"),
        (3, "messages must be a list, got int"),
        ("text", "messages must be a list, got str"),
        ({1, 2}, "messages must be a list, got set"),
        ({}, "messages must be a list, got dict"),
        ({"role": "user", "content": []}, "messages must be a list, got dict"),
        (user(text()), "messages must be a list, got dict"),
    ],
)
def test_input_that_is_not_a_list_is_refused_naming_its_python_type(
    data: Any, message: str
) -> None:
    refused(data, "messages", message)


def test_an_empty_list_is_refused_unless_allowed() -> None:
    refused([], "messages", "messages must contain at least one message")
    assert load_messages([], allow_empty=True) == ()
    assert load_messages((), allow_empty=True) == ()


def test_tuples_are_accepted_wherever_lists_are() -> None:
    assert load_messages((user(text()),)) == (LLMMessage("user", [TextBlock("hi")]),)
    data = ({"role": "user", "content": (text("a"), tool_result((text("b"),)))},)
    messages = load_messages(data)
    assert dump_messages(messages) == [user(text("a"), tool_result([text("b")]))]


def test_the_error_path_starts_from_the_given_name() -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_messages([None], path="history")
    assert info.value.path == "history[0]"


def test_invalid_message_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        load_messages("nope")


# --- messages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "path", "phrase"),
    [
        (None, "messages[1]", "must be a message (a dict or LLMMessage), got None"),
        ("hi", "messages[1]", "got str"),
        (42, "messages[1]", "got int"),
        (print, "messages[1]", "must be a message"),
        ({"content": [text()]}, "messages[1].role", "is missing"),
        ({"role": "user"}, "messages[1].content", "is missing"),
        ({"role": "system", "content": [text()]}, "messages[1].role", 'must be "user" or'),
        ({"role": "tool", "content": [text()]}, "messages[1].role", 'must be "user" or'),
        ({"role": "User", "content": [text()]}, "messages[1].role", 'must be "user" or'),
        ({"role": None, "content": [text()]}, "messages[1].role", "got None"),
        ({"role": 1, "content": [text()]}, "messages[1].role", "role"),
        (
            {"role": "assistant", "content": "hello"},
            "messages[1].content",
            "messages[1].content must be a list of content blocks, got str",
        ),
        ({"role": "user", "content": {"a"}}, "messages[1].content", "must be a list of content"),
        ({"role": "user", "content": []}, "messages[1].content", "at least one content block"),
        ({"role": "user", "content": None}, "messages[1].content", "got None"),
        ({"role": "user", "content": [text()], "name": "x"}, "messages[1].name", "not allowed"),
    ],
)
def test_a_malformed_message_is_refused(message: Any, path: str, phrase: str) -> None:
    refused([user(text()), message], path, phrase)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([user(text()), user(text(1)), user(text(None))], "messages[1].content[0].text"),
        (
            [user(text()), user(text(1)), {"role": "user", "content": "x"}],
            "messages[1].content[0].text",
        ),
        (
            [{"role": "system", "content": [text()]}, {"role": "user", "content": None}],
            "messages[0].role",
        ),
        (
            [user(text(), image(url_source("file:///a.png")), image(b64_source("!!")))],
            "messages[0].content[1].source.url",
        ),
        (
            [user(text(), {"type": "text", "text": 5}), assistant(tool_use({"x": {1, 2}}))],
            "messages[0].content[1].text",
        ),
    ],
)
def test_the_first_violation_in_document_order_wins(data: Any, path: str) -> None:
    error = refused(data, path)
    assert "cloneable" not in str(error)


def test_uncloneable_data_before_a_structural_error_wins() -> None:
    data = [assistant(tool_use({"x": {1, 2}})), user(text(), {"type": "text", "text": 5})]
    refused(data, phrase="messages must contain cloneable structured data")


# --- one user turn ------------------------------------------------------------------------


def test_load_user_content_builds_one_user_turn() -> None:
    message = load_user_content([text("a"), {"type": "image", "source": URL_SOURCE}])
    assert message.role == "user"
    assert [b.type for b in message.content] == ["text", "image"]


@pytest.mark.parametrize(
    ("blocks", "path", "phrase"),
    [
        ("hi", "messages[0].content", "must be a list of content blocks, got str"),
        ([], "messages[0].content", "at least one"),
        (
            [text(), {"type": "image", "source": {**URL_SOURCE, "url": "s3://b/k"}}],
            "messages[0].content[1].source.url",
            "must use HTTP or HTTPS",
        ),
        ([tool_call({})], "messages[0].content[0]", "only assistant messages"),
    ],
)
def test_load_user_content_names_errors_as_the_first_message(
    blocks: Any, path: str, phrase: str
) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_user_content(blocks)
    assert info.value.path == path
    assert phrase in str(info.value)


# --- no I/O -------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_io")
def test_validation_never_touches_the_network_or_the_file_system(
    conversation: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("validation touched the outside world")

    monkeypatch.setattr(socket, "getaddrinfo", boom)  # beside no_io's socket and open
    assert len(load_messages(conversation)) == 4
    load_messages(full_conversation())
    load_messages([user(image(url_source("https://does-not-exist.invalid/a.png")))])
    for url in ("file:///etc/passwd", "https://example.com/a.png", "http://127.0.0.1:1/x.png"):
        with contextlib.suppress(InvalidMessageError):
            load_messages([user({"type": "image", "source": {**URL_SOURCE, "url": url}})])


@SETTINGS
@given(JSON_LIKE)
def test_any_json_like_input_loads_or_is_refused_cleanly(data: Any) -> None:
    for candidate in (
        data,
        [data],
        [{"role": "user", "content": data}],
        [{"role": "assistant", "content": [data]}],
    ):
        try:
            loaded = load_messages(candidate)
        except InvalidMessageError as error:
            assert str(error).startswith(error.path)
        else:
            assert load_messages(dump_messages(loaded)) == loaded
