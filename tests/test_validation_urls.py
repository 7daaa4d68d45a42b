"""URL sources: only absolute http(s) URLs with a host, checked by a strict parser."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _builders import SETTINGS, image, refused, text, tool_result, url_source, user, video
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    InvalidMessageError,
    UrlSource,
    load_messages,
)
from oma_core._checks import check_url

ABSOLUTE = "must be an absolute HTTP(S) URL"
SCHEME = "must use HTTP or HTTPS"
PATH = "messages[0].content[1].source.url"


def load_url(url: Any) -> Any:
    source = {"type": "url", "media_type": "image/png", "url": url}
    return load_messages(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "t"}, {"type": "image", "source": source}],
            }
        ]
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a.png",
        "http://example.com",
        "HTTPS://EXAMPLE.COM/A.PNG",
        "hTTp://example.com:8080/a.png?x=1&y=%20#frag",
        "https://127.0.0.1/a.png",
        "https://[::1]:443/a.png",
        "https://sub.example.co.uk/path/to/caf\u00e9.png",
        "https://b\u00fccher.example/a.png",
        "https://example.com/a.png?sig=abc/def:ghi@jkl",
        "http://example.com/a.png",
        "HTTP://EXAMPLE.COM/a.png",
        "hTTpS://example.com",
        "https://example.com:8443/a.png?x=1&y=2#frag",
        "http://127.0.0.1/a.png",
        "http://[::1]:8080/a.png",
    ],
)
def test_absolute_http_urls_are_accepted_unchanged(url: str) -> None:
    assert load_url(url)[0].content[1].source.url is url
    (message,) = load_messages([user(image(url_source(url)))])
    assert message.content[0].source.url == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "s3://b/k",
        "ftp://h/x",
        "javascript:alert(1)",
        "data:image/png;base64,iVBORw0KGgo=",
        "gs://bucket/object.png",
        "ws://example.com/socket",
        "ftp://example.com/a.png",
        "s3://bucket/a.png",
        "gs://bucket/a.png",
        "FILE:///tmp/a.png",
        "mailto:someone@example.com",
        "urn:isbn:0451450523",
        "mm-file://abc",
        "mm+file://abc",
        "ws://x.org/a",
    ],
)
def test_absolute_urls_of_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_url(url)
    assert info.value.path == PATH
    assert SCHEME in str(info.value)
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must use HTTP or HTTPS",
    )
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must use HTTP or HTTPS",
    )


def test_a_data_url_in_a_url_field_points_to_base64_sources() -> None:
    with pytest.raises(InvalidMessageError, match="base64 source"):
        load_url("data:image/png;base64,iVBORw0KGgo=")


@pytest.mark.parametrize(
    "url",
    [
        "mm_file://abc123",
        "a.png",
        "/images/a.png",
        "//evil.com/a.png",
        "",
        ":foo",
        "1http://example.com/",
        "ht tp://example.com/",
        "http://a.com\\@127.0.0.1/",
        "https://example.com\\a.png",
        "https://u:p@h/x.png",
        "https://user@example.com/",
        "https://@example.com/",
        "https://exa mple.com/",
        "https://example.com/a b.png",
        "https://example.com/a\tb.png",
        "https://example.com/a.png\n",
        "\nhttps://example.com/a.png",
        " https://example.com/a.png",
        "https://example.com/a\x00.png",
        "https://example.com/a\x7f.png",
        "https://example.com/\u200ba.png",
        "https://example.com/\u00a0a.png",
        "https://example.com/\ud800",
        "http:/example.com/a.png",
        "http:example.com",
        "https://",
        "https:///a.png",
        "https://:443/a.png",
        "https://example.com:port/",
        "https://example.com:/",
        "https://example.com:99999/",
        "https://exa<mple.com/",
        "https://[::1/a.png",
        "https://[zz]/a.png",
        "mm_file://abc",
        "example.com/a.png",
        "//example.com/a.png",
        "https://exa mple.com/a.png",
        "https://example.com/\ta.png",
        "https://example.com/\x00a.png",
        "https://example.com/\x7fa.png",
        "https://user:hunter2@example.com/a.png",
        "https://user@example.com/a.png",
        "1http://example.com/a.png",
        "https:/example.com/a.png",
        "https://example.com/a\u2028.png",
        "https://example.com/a\u00a0.png",
        "https://example.com/a\x85.png",
        "https://example.com/a\x1f.png",
        "https://:pw@example.com/a.png",
    ],
)
def test_urls_that_are_not_absolute_http_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_url(url)
    assert info.value.path == PATH
    assert ABSOLUTE in str(info.value)
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must be an absolute HTTP(S) URL",
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (None, "None"),
        (5, "int"),
        (b"https://example.com/a.png", "bytes"),
        (["https://a.b/"], "list"),
    ],
)
def test_a_url_that_is_not_a_string_is_refused(url: Any, shown: str) -> None:
    with pytest.raises(InvalidMessageError, match=r"must be an absolute HTTP\(S\) URL in a string"):
        load_url(url)
    err = refused([user(video(url_source(url, "video/mp4")))], "messages[0].content[0].source.url")
    assert f"got {shown}" in str(err)


def test_a_refused_url_is_never_echoed() -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_url("https://example.com/a.png?token=s3cr3t&x=\\")
    assert "s3cr3t" not in str(info.value)
    err = refused([user(image(url_source("https://bob:hunter2@example.com/a.png")))])
    assert "hunter2" not in str(err)


def test_hand_built_url_sources_run_the_same_checks() -> None:
    with pytest.raises(InvalidMessageError) as info:
        UrlSource("image/png", "file:///etc/passwd")
    assert str(info.value) == "url must use HTTP or HTTPS, not file:"
    assert info.value.path == "url"


def test_url_errors_inside_tool_result_parts_name_the_part() -> None:
    part = {"type": "image", "source": url_source("file:///x.png")}
    refused(
        [user(tool_result([text("a"), part]))],
        "messages[0].content[0].content[1].source.url",
        "must use HTTP or HTTPS",
    )


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
