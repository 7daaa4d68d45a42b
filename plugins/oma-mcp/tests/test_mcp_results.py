"""The mapping of an MCP tool result to an oma one, on any content: it never raises, never
drops an item, and every media string it hands on passed the core's checks."""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types
from hypothesis import given
from hypothesis import strategies as st
from oma_mcp import tool_output

from oma_core import ImageBlock, TextBlock, ToolResultBlock

_b64 = st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode())
_data = _b64 | st.text(max_size=40)  # valid base64, or (mostly) not
_mime = st.sampled_from(["image/png", "image/jpeg", "IMAGE/PNG", "image/png; q=1", "text"])

_items = st.one_of(
    st.builds(types.TextContent, text=st.text(max_size=40)),
    st.builds(types.ImageContent, data=_data, mime_type=_mime),
    st.builds(types.AudioContent, data=_data, mime_type=st.sampled_from(["audio/wav", "x"])),
    st.builds(
        types.EmbeddedResource,
        resource=st.builds(
            types.TextResourceContents,
            uri=st.just("file:///a.txt"),
            mime_type=st.just("text/plain"),
            text=st.text(max_size=20),
        ),
    ),
)


@given(items=st.lists(_items, max_size=6), is_error=st.booleans())
def test_any_result_maps_to_valid_content_or_an_error_naming_the_place(
    items: list[Any], is_error: bool
) -> None:
    result = types.CallToolResult(content=items, is_error=is_error)

    output = tool_output("t", result)

    if output.is_error or isinstance(output.content, str):
        assert isinstance(output.content, str)
        if output.is_error and not is_error:
            assert "content[" in output.content and "oma refuses" in output.content
        # a str is itself valid tool-result content
        ToolResultBlock("c", output.content, output.is_error)
        return
    parts = list(output.content)
    assert len(parts) >= len(items)  # nothing dropped
    block = ToolResultBlock("c", tuple(parts))  # valid by construction
    assert all(isinstance(p, TextBlock | ImageBlock) or p.type == "file" for p in block.content)


def test_an_image_with_parameters_in_its_media_type_is_refused_by_name() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    result = types.CallToolResult(
        content=[types.ImageContent(data=png, mime_type="image/png; charset=x")]
    )

    output = tool_output("pic", result)

    assert output.is_error
    assert output.content.startswith("MCP tool 'pic' returned content[0] that oma refuses")
    assert png not in output.content  # no payload in an error
