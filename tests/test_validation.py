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
    refused_saying,
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
        ("text", "messages must be a list, got str"),
        ({}, "messages must be a list, got dict"),
        ({"role": "user", "content": []}, "messages must be a list, got dict"),
    ],
)
def test_input_that_is_not_a_list_is_refused(data: Any, message: str) -> None:
    refused_saying(data, message, "messages")


def test_an_empty_list_is_refused_unless_allowed() -> None:
    refused_saying([], "messages must contain at least one message", "messages")
    assert load_messages([], allow_empty=True) == ()

    refused([], "messages", "at least one message")
    assert load_messages([], allow_empty=True) == ()
    assert load_messages((), allow_empty=True) == ()


def test_a_tuple_is_accepted_like_a_list() -> None:
    assert load_messages((user(text()),)) == (LLMMessage("user", [TextBlock("hi")]),)


def test_the_error_path_starts_from_the_given_name() -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_messages([None], path="history")
    assert info.value.path == "history[0]"


def test_the_first_violation_in_document_order_wins() -> None:
    refused_saying(
        [user(text()), user(text(1)), user(text(None))], "got int", "messages[1].content[0].text"
    )


def test_invalid_message_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        load_messages("nope")


# --- messages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "path", "phrase"),
    [
        (None, "messages[1]", "must be a message (a dict or LLMMessage), got None"),
        ("hi", "messages[1]", "got str"),
        ({"content": [text()]}, "messages[1].role", "is missing"),
        ({"role": "user"}, "messages[1].content", "is missing"),
        ({"role": "system", "content": [text()]}, "messages[1].role", 'must be "user" or'),
        ({"role": None, "content": [text()]}, "messages[1].role", "got None"),
        ({"role": "user", "content": "hi"}, "messages[1].content", "must be a list of content"),
        ({"role": "user", "content": []}, "messages[1].content", "at least one content block"),
        ({"role": "user", "content": None}, "messages[1].content", "got None"),
        ({"role": "user", "content": [text()], "name": "x"}, "messages[1].name", "not allowed"),
    ],
)
def test_a_malformed_message_is_refused(message: Any, path: str, phrase: str) -> None:
    refused_saying([user(text()), message], phrase, path)


def test_string_content_is_refused_with_the_documented_wording() -> None:
    refused_saying(
        [user(text()), {"role": "assistant", "content": "hello"}],
        "messages[1].content must be a list of content blocks, got str",
    )

    refused(
        [user(text()), {"role": "assistant", "content": "hello"}],
        "messages[1].content",
        "messages[1].content must be a list of content blocks, got str",
    )


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
def test_validation_opens_no_socket_and_no_file(conversation: list[dict[str, Any]]) -> None:
    assert len(load_messages(conversation)) == 4
    for url in ("file:///etc/passwd", "https://example.com/a.png", "http://127.0.0.1:1/x.png"):
        with contextlib.suppress(InvalidMessageError):
            load_messages([user({"type": "image", "source": {**URL_SOURCE, "url": url}})])


def test_tuples_are_accepted_wherever_lists_are() -> None:
    data = ({"role": "user", "content": (text("a"), tool_result((text("b"),)))},)
    messages = load_messages(data)
    assert dump_messages(messages) == [user(text("a"), tool_result([text("b")]))]


def test_a_dict_input_is_not_a_list() -> None:
    refused(user(text()), "messages", "messages must be a list, got dict")


@pytest.mark.parametrize(
    ("value", "name"), [("hello", "str"), (None, "None"), (3, "int"), ({1, 2}, "set")]
)
def test_input_types_are_named_as_python_names_them(value: Any, name: str) -> None:
    refused(value, "messages", f"messages must be a list, got {name}")


def test_a_message_that_is_not_a_mapping_is_refused() -> None:
    err = refused([user(text()), 42], "messages[1]")
    assert "got int" in str(err)


def test_none_content_is_named_none() -> None:
    refused([{"role": "user", "content": None}], "messages[0].content", "got None")


def test_missing_content_is_refused() -> None:
    refused([{"role": "user"}], "messages[0].content")


def test_empty_content_is_refused() -> None:
    refused([user()], "messages[0].content")


@pytest.mark.parametrize("role", ["system", "tool", "User", None, 1])
def test_roles_other_than_user_and_assistant_are_refused(role: Any) -> None:
    err = refused([{"role": role, "content": [text()]}])
    assert err.path.startswith("messages[0]")
    assert "role" in str(err)


def test_missing_role_is_refused() -> None:
    err = refused([{"content": [text()]}])
    assert err.path.startswith("messages[0]")


def test_unknown_message_key_is_refused() -> None:
    err = refused([{"role": "user", "content": [text()], "name": "bob"}])
    assert err.path.startswith("messages[0]")
    assert "name" in str(err)


def test_validation_never_touches_the_network_or_the_file_system(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import builtins
    import socket

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("validation touched the outside world")

    monkeypatch.setattr(socket, "getaddrinfo", boom)
    monkeypatch.setattr(socket.socket, "connect", boom)
    monkeypatch.setattr(builtins, "open", boom)
    load_messages(full_conversation())
    load_messages([user(image(url_source("https://does-not-exist.invalid/a.png")))])


def test_a_set_as_content_is_refused() -> None:
    refused([{"role": "user", "content": {"a"}}], "messages[0].content")


def test_a_function_as_a_message_is_refused() -> None:
    refused([user(text()), print], "messages[1]")


def test_first_offending_message_wins() -> None:
    data = [user(text()), user(text(1)), {"role": "user", "content": "x"}]
    err = refused(data)
    assert err.path.startswith("messages[1].content[0]")


def test_first_offending_block_wins() -> None:
    data = [user(text(), image(url_source("file:///a.png")), image(b64_source("!!")))]
    refused(data, "messages[0].content[1].source.url")


def test_structural_error_before_uncloneable_data_wins() -> None:
    data = [user(text(), {"type": "text", "text": 5}), assistant(tool_use({"x": {1, 2}}))]
    err = refused(data)
    assert err.path.startswith("messages[0].content[1]")
    assert "cloneable" not in str(err)


def test_uncloneable_data_before_structural_error_wins() -> None:
    data = [assistant(tool_use({"x": {1, 2}})), user(text(), {"type": "text", "text": 5})]
    refused(data, phrase="messages must contain cloneable structured data")


def test_role_error_in_first_message_wins_over_later_ones() -> None:
    data = [{"role": "system", "content": [text()]}, {"role": "user", "content": None}]
    err = refused(data)
    assert err.path.startswith("messages[0]")


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
