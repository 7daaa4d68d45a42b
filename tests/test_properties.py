"""Properties: any JSON-like input loads or raises InvalidMessageError; valid input round-trips."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oma_core import InvalidMessageError, dump_messages, load_messages
from oma_core._checks import check_base64, check_url

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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


# --- valid conversations ------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(TEXT, children, max_size=3)
    ),
    max_leaves=15,
)


@st.composite
def sources(draw: Any, family: str) -> dict[str, Any]:
    subtype = draw(
        st.sampled_from(["png", "jpeg", "webp"] if family == "image" else ["mp4", "webm"])
    )
    media_type = f"{family}/{subtype}"
    if draw(st.booleans()):
        data = base64.b64encode(draw(st.binary(min_size=1, max_size=40))).decode()
        return {"type": "base64", "media_type": media_type, "data": data}
    path = draw(st.text(alphabet="abcdefghij/._-~%", max_size=15))
    return {"type": "url", "media_type": media_type, "url": f"https://example.com/{path}"}


@st.composite
def user_blocks(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "image", "video", "tool_result"]))
    if kind == "text":
        return {"type": "text", "text": draw(TEXT)}
    if kind == "image":
        block = {"type": "image", "source": draw(sources("image"))}
        detail = draw(st.sampled_from([None, "low", "high", "auto"]))
        return block if detail is None else {**block, "detail": detail}
    if kind == "video":
        return {"type": "video", "source": draw(sources("video"))}
    if draw(st.booleans()):
        return {
            "type": "tool_result",
            "tool_use_id": draw(TEXT),
            "content": draw(TEXT),
            "is_error": True,
        }
    parts = draw(
        st.lists(
            st.one_of(
                st.builds(lambda t: {"type": "text", "text": t}, TEXT),
                st.builds(lambda s: {"type": "image", "source": s}, sources("image")),
                st.builds(
                    lambda n, s: {"type": "file", "filename": n, "source": s},
                    TEXT,
                    sources("video"),
                ),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return {"type": "tool_result", "tool_use_id": draw(TEXT), "content": parts}


ASSISTANT_BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(
        lambda i, n, v: {"type": "tool_use", "id": i, "name": n, "input": v},
        TEXT,
        TEXT,
        st.dictionaries(TEXT, JSON_VALUES, max_size=3),
    ),
    st.builds(
        lambda t, s: {"type": "reasoning", "text": t, **({"signature": s} if s else {})},
        TEXT,
        st.one_of(st.none(), TEXT.filter(bool)),
    ),
)
CONVERSATIONS = st.lists(
    st.one_of(
        st.builds(
            lambda c: {"role": "user", "content": c},
            st.lists(user_blocks(), min_size=1, max_size=4),
        ),
        st.builds(
            lambda c: {"role": "assistant", "content": c},
            st.lists(ASSISTANT_BLOCKS, min_size=1, max_size=4),
        ),
    ),
    min_size=1,
    max_size=4,
)


@SETTINGS
@given(CONVERSATIONS)
def test_valid_conversations_round_trip_exactly(conversation: list[dict[str, Any]]) -> None:
    loaded = load_messages(conversation)
    dumped = dump_messages(loaded)
    assert dumped == conversation
    assert load_messages(dumped) == loaded


# --- leaf rules ---------------------------------------------------------------------------


@SETTINGS
@given(st.binary(max_size=64))
def test_every_standard_encoding_is_accepted(raw: bytes) -> None:
    encoded = base64.b64encode(raw).decode()
    if raw:
        assert check_base64(encoded, "data") is encoded
        assert check_base64(encoded.rstrip("="), "data") == encoded


@SETTINGS
@given(st.text(alphabet="ABCQRSabcz019+/=-_ \n", max_size=12))
def test_accepted_base64_is_exactly_what_the_encoder_produces(text: str) -> None:
    try:
        padded = check_base64(text, "data")
    except InvalidMessageError:
        return
    decoded = binascii.a2b_base64(padded, strict_mode=True)
    assert base64.b64encode(decoded).decode() == padded


@SETTINGS
@given(st.one_of(st.text(max_size=40), st.text(alphabet="htps:/\\@[]:.%?#aZ09 \t", max_size=30)))
def test_accepted_urls_are_absolute_http_urls_with_a_host(text: str) -> None:
    for url in (text, "https://" + text, "http://example.com/" + text):
        try:
            check_url(url, "url")
        except InvalidMessageError as error:
            assert "HTTP" in str(error)
            continue
        scheme, _, rest = url.partition("://")
        assert scheme.lower() in ("http", "https")
        assert rest and rest[0] not in "/?#"
        assert not any(c.isspace() or c == "\\" for c in url)
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]  # the authority ends at / ? or #
        assert "@" not in authority
