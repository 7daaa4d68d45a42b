"""URL sources: only absolute http(s) URLs with a host, checked by a strict parser."""

from __future__ import annotations

from typing import Any

import pytest

from oma_core import InvalidMessageError, UrlSource, load_messages

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
    ],
)
def test_absolute_http_urls_are_accepted_unchanged(url: str) -> None:
    assert load_url(url)[0].content[1].source.url is url


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
    ],
)
def test_absolute_urls_of_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_url(url)
    assert info.value.path == PATH
    assert SCHEME in str(info.value)


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
    ],
)
def test_urls_that_are_not_absolute_http_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_url(url)
    assert info.value.path == PATH
    assert ABSOLUTE in str(info.value)


@pytest.mark.parametrize("url", [None, 5, b"https://example.com/a.png", ["https://a.b/"]])
def test_a_url_that_is_not_a_string_is_refused(url: Any) -> None:
    with pytest.raises(InvalidMessageError, match=r"must be an absolute HTTP\(S\) URL in a string"):
        load_url(url)


def test_error_messages_do_not_repeat_the_url() -> None:
    secret = "https://example.com/a.png?token=s3cr3t&x=\\"
    with pytest.raises(InvalidMessageError) as info:
        load_url(secret)
    assert "s3cr3t" not in str(info.value)


def test_hand_built_url_sources_run_the_same_checks() -> None:
    with pytest.raises(InvalidMessageError) as info:
        UrlSource("image/png", "file:///etc/passwd")
    assert str(info.value) == "url must use HTTP or HTTPS, not file:"
    assert info.value.path == "url"
