"""What oma copies and when: loading copies the caller's data once; loaded messages cannot be
changed afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest
from _builders import (
    assistant,
    b64_source,
    full_conversation,
    text,
    tool_use,
    url_source,
    user,
    video,
)

from oma_core import (
    ToolUseBlock,
    dump_messages,
    image_base64,
    load_messages,
)

URL_SOURCE = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}


def tool_call(input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": "f", "input": input}


def test_mutating_the_callers_data_after_loading_changes_nothing() -> None:
    tags = ["a"]
    data = [user(text("before"), {"type": "image", "source": dict(URL_SOURCE)})]
    data.append(assistant(tool_call({"tags": tags, "opts": {"k": 1}})))
    loaded = load_messages(data)
    snapshot = repr(loaded)
    data[0]["content"][0]["text"] = "after"
    data[0]["content"][1]["source"]["url"] = "file:///etc/passwd"
    data[0]["content"].append(text("extra"))
    data[1]["content"][0]["input"]["opts"]["k"] = 2
    tags.append("b")
    data.clear()
    assert repr(loaded) == snapshot


def test_a_loaded_tool_input_cannot_be_mutated() -> None:
    block = load_messages([assistant(tool_call({"tags": ["a"], "opts": {"k": 1}}))])[0].content[0]
    with pytest.raises(TypeError):
        block.input["new"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        block.input["opts"]["k"] = 2
    with pytest.raises(AttributeError):
        block.input["tags"].append("b")
    assert block.input == {"tags": ("a",), "opts": {"k": 1}}


@pytest.mark.parametrize("data", ["QUJDRA==", "QUJDREU=", "QUJD"])
def test_a_complete_media_string_is_shared_not_copied(data: str) -> None:
    data = "".join([data])  # a str object of the test's own
    source = {"type": "base64", "media_type": "image/png", "data": data}
    loaded = load_messages([user({"type": "image", "source": source})])
    assert loaded[0].content[0].source.data is data


def test_mutating_caller_data_after_load_changes_nothing() -> None:
    data = full_conversation()
    messages = load_messages(data)
    before = dump_messages(messages)
    data[0]["content"][0]["text"] = "changed"
    data[0]["content"].append(text("more"))
    data[0]["content"][1]["source"]["url"] = "https://evil.example/x.png"
    data[1]["content"][3]["input"]["nested"]["list"].append("more")
    data[1]["content"][3]["input"]["factor"] = 99
    data[2]["content"][0]["content"][0]["text"] = "changed"
    data[2]["content"][0]["content"].clear()
    data.append(user(text("extra")))
    assert dump_messages(messages) == before


def test_mutating_a_dump_changes_nothing() -> None:
    messages = load_messages(full_conversation())
    dumped = dump_messages(messages)
    dumped[1]["content"][3]["input"]["nested"]["list"].append("x")
    dumped[0]["content"].clear()
    assert dump_messages(messages) == full_conversation()


def test_tool_input_of_a_loaded_message_cannot_be_changed_through_the_caller() -> None:
    inner = {"a": [1]}
    (message,) = load_messages([assistant(tool_use({"inner": inner}))])
    inner["a"].append(2)
    inner["b"] = 1
    assert dump_messages([message])[0]["content"][0]["input"] == {"inner": {"a": [1]}}


def test_media_strings_are_shared_not_copied() -> None:
    data = "QUJD" * 250_000
    url = "https://example.com/" + "a" * 1000 + ".mp4"
    messages = load_messages(
        [user(video(b64_source(data, "video/mp4")), video(url_source(url, "video/mp4")))]
    )
    assert messages[0].content[0].source.data is data
    assert messages[0].content[1].source.url is url


def test_objects_keep_their_media_strings() -> None:
    data = "QUJD" * 1000
    block = image_base64(data, "image/png")
    assert block.source.data is data


def test_loaded_tool_input_is_read_only() -> None:
    (message,) = load_messages([assistant(tool_use({"a": {"b": [1]}}))])
    block = message.content[0]
    with pytest.raises(TypeError):
        block.input["x"] = 1  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        block.input["a"]["b"].append(2)
    assert block.input["a"]["b"][0] == 1


def test_tool_input_mutators_all_refuse() -> None:
    import copy
    import pickle

    block = ToolUseBlock(id="t", name="f", input={"l": [1, 2], "d": {"k": 1}})
    lst, dct = block.input["l"], block.input["d"]
    for attempt in (
        lambda: lst.append(3),
        lambda: lst.extend([3]),
        lambda: lst.insert(0, 3),
        lambda: lst.pop(),
        lambda: lst.remove(1),
        lambda: lst.clear(),
        lambda: lst.sort(),
        lambda: lst.reverse(),
        lambda: lst.__setitem__(0, 9),
        lambda: lst.__delitem__(0),
        lambda: dct.update(k=2),
        lambda: dct.pop("k"),
        lambda: dct.popitem(),
        lambda: dct.setdefault("z", 1),
        lambda: dct.clear(),
        lambda: dct.__setitem__("k", 2),
        lambda: dct.__delitem__("k"),
        lambda: dct.__ior__({"k": 2}),
        lambda: dct.__init__({"k": 3}),
    ):
        with pytest.raises((TypeError, AttributeError)):
            attempt()
    local = block.input["l"]
    local += [3]
    assert block.input == {"l": [1, 2], "d": {"k": 1}}
    assert copy.deepcopy(block) == block
    assert pickle.loads(pickle.dumps(block)) == block
    assert block.input["l"] == (1, 2)
