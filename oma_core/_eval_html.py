"""An ``EvalReport`` as one self-contained HTML page (``oma eval show --html``).

The page holds the side-by-side table, then each case: its input (text; images given as
base64 shown as thumbnails from ``data:`` URIs; other media named with their type and size)
and each config's output and scores side by side. It loads nothing: no script, no font, no
stylesheet and no image from anywhere (a media URL in an input is shown as text, never
fetched), so it can be attached to a CI run and opened offline.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from html import escape
from typing import Any

from ._eval_report import CaseResult, EvalReport

__all__ = ["report_html"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}
th,td{border:1px solid #ccc;padding:.35rem .6rem;text-align:left;vertical-align:top}
td.best{font-weight:bold;background:#e8f5e9}
img.thumb{max-width:160px;max-height:160px;border:1px solid #ccc;margin:.2rem}
pre{white-space:pre-wrap;margin:0;max-width:40rem}
.fail{color:#b71c1c}.pass{color:#1b5e20}.muted{color:#777}
"""
#: Image types a browser shows from a ``data:`` URI.
_SHOWN_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def report_html(report: EvalReport) -> str:
    """The page for ``report``."""
    title = f"oma eval: {report.dataset}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        _spent(report),
        _table(report),
        "<h2>Cases</h2>",
    ]
    by_case: dict[str, list[CaseResult]] = {}
    for case in report.cases:
        by_case.setdefault(case.case, []).append(case)
    for name, results in by_case.items():
        parts.append(_case(name, results, report))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _spent(report: EvalReport) -> str:
    spent = "no prices given" if report.spent is None else f"spent ${report.spent:.4f}"
    stopped = f"; stopped at max_cost, {len(report.not_run)} not run" if report.stopped else ""
    return f'<p class="muted">{escape(spent + stopped)}</p>'


def _table(report: EvalReport) -> str:
    comparison = report.comparison()
    head = "".join(f"<th>{escape(column)}</th>" for column in comparison.columns)
    rows = [f'<table class="comparison"><tr><th></th>{head}</tr>']
    for label, cells, best in comparison.rows:
        tds = "".join(
            f'<td class="best">{escape(cell)} ★</td>' if i in best else f"<td>{escape(cell)}</td>"
            for i, cell in enumerate(cells)
        )
        rows.append(f"<tr><th>{escape(label)}</th>{tds}</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _case(name: str, results: list[CaseResult], report: EvalReport) -> str:
    first = results[0]
    expected = (
        ""
        if first.expected is None
        else f"<p><b>expected</b></p><pre>{escape(_text(first.expected))}</pre>"
    )
    head = "".join(f"<th>{escape(result.config)}</th>" for result in results)
    cells = "".join(f"<td>{_outcome(result, report)}</td>" for result in results)
    return (
        f'<section class="case"><h3>{escape(name)}</h3>'
        f'<div class="input">{_input(first.input)}</div>{expected}'
        f'<table class="outputs"><tr>{head}</tr><tr>{cells}</tr></table></section>'
    )


def _text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _input(value: Any) -> str:
    if isinstance(value, str):
        return f"<pre>{escape(value)}</pre>"
    if not isinstance(value, list):
        return f"<pre>{escape(_text(value))}</pre>"
    parts = []
    for message in value:
        if not isinstance(message, Mapping):
            continue
        blocks = message.get("content")
        shown = [_block(b) for b in blocks] if isinstance(blocks, list) else []
        parts.append(f"<p><b>{escape(str(message.get('role')))}</b></p>{''.join(shown)}")
    return "".join(parts)


def _block(block: Any) -> str:
    if not isinstance(block, Mapping):
        return ""
    kind = str(block.get("type"))
    if kind == "text":
        return f"<pre>{escape(str(block.get('text')))}</pre>"
    source = block.get("source")
    if not isinstance(source, Mapping):
        return f'<p class="muted">[{escape(kind)}]</p>'
    media_type = str(source.get("media_type"))
    if source.get("type") == "url":  # named, never fetched
        url = escape(str(source.get("url")))
        return f'<p class="muted">[{escape(kind)} {escape(media_type)} at {url}]</p>'
    data = source.get("data")
    if not isinstance(data, str):
        return f'<p class="muted">[{escape(kind)} {escape(media_type)}]</p>'
    if kind == "image" and media_type in _SHOWN_IMAGES and _is_base64(data):
        alt = escape(f"{kind} {media_type}")
        return f'<img class="thumb" alt="{alt}" src="data:{media_type};base64,{data}">'
    size = len(data) * 3 // 4
    named = block.get("filename")
    label = f"{kind} {named} " if isinstance(named, str) else f"{kind} "
    return f'<p class="muted">[{escape(label)}{escape(media_type)}, about {size} bytes]</p>'


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _outcome(result: CaseResult, report: EvalReport) -> str:
    if result.status == "not_run":
        return '<p class="muted">not run (max_cost was spent)</p>'
    parts = []
    if result.status != "ok":
        parts.append(f'<p class="fail">{escape(result.status)}: {escape(result.error or "")}</p>')
    if result.output is not None:
        parts.append(f"<pre>{escape(result.output)}</pre>")
    items = []
    for name, score in result.scores.items():
        passed = score.value >= report.pass_mark(name)
        why = f" ({score.reason})" if score.reason else ""
        css = "pass" if passed else "fail"
        items.append(f'<li class="{css}">{escape(name)}: {score.value:g}{escape(why)}</li>')
    for name, text in result.score_errors.items():
        items.append(f'<li class="fail">{escape(name)} failed: {escape(text)}</li>')
    if items:
        parts.append(f"<ul>{''.join(items)}</ul>")
    cost = "" if result.cost is None else f"${result.cost:.4f} · "
    latency = "" if result.latency is None else f"{result.latency * 1000:.0f} ms · "
    parts.append(f'<p class="muted">{escape(cost + latency)}{result.usage.total_tokens} tokens</p>')
    return "".join(parts)
