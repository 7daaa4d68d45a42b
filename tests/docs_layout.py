"""The built docs, looked at in a real browser: no code block or table wider than the page.

Serves a built site (``mkdocs build --site-dir SITE``) on 127.0.0.1, opens the key pages in
headless Chromium at 1280 px wide (Debian's ``chromium`` and ``chromedriver``, driven by
Selenium with both paths given, so nothing is downloaded; every host but 127.0.0.1 resolves to
nothing), saves a screenshot of each and fails when, on any of them:

- a code block scrolls sideways (its ``pre > code`` is wider than the block), hiding the ends
  of lines;
- a table is wider than its box (columns off-screen) or than the content column;
- text in a table cell (a name, an option) breaks in the middle of a word;
- the page itself scrolls sideways;
- at a phone's width (390 px, a second pass) a code block's text runs under its copy button.

Before the browser it reads the built API reference: each class and function documented once,
no private name among its headings (``reference_problems``).

Run it after a build: ``python tests/docs_layout.py SITE [--screenshots DIR]
[--install-browser]``. With ``--install-browser`` a missing Chromium is installed with
``apt-get``; where there is no ``apt-get`` the check is skipped with a loud message (exit 0).
Not a pytest module (it needs a browser): the ``docs`` nox session runs it.
"""

from __future__ import annotations

import argparse
import base64
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

KEY_PAGES = (
    "",
    "getting-started/",
    "messages/",
    "agent/",
    "cli/",
    "providers/openai/",
    "reference/agent/",
)
WIDTH = 1280
HEIGHT = 900
MAX_SHOT_HEIGHT = 16_000  # a full-page screenshot taller than this is cut (pixels)

# Measured in the page: returns plain data, so the Python side only judges and reports.
_MEASURE = r"""
const content = document.querySelector('.md-content__inner') || document.body;
const column = content.getBoundingClientRect();
const result = {column: Math.round(column.width), page_overflow: 0, code: [], tables: [],
                breaks: []};
result.page_overflow = document.documentElement.scrollWidth - window.innerWidth;
let codeCount = 0;
for (const pre of content.querySelectorAll('pre')) {
  const code = pre.querySelector('code') || pre;
  codeCount += 1;
  const hidden = code.scrollWidth - code.clientWidth;
  if (hidden > 1) {
    const longest = code.textContent.split('\n').reduce((a, b) => b.length > a.length ? b : a, '');
    result.code.push({hidden: hidden, line: longest.slice(0, 120)});
  }
}
result.code_blocks = codeCount;
// Lines that wrap (allowed, with a hanging indent, but each one is a line to shorten).
result.wrapped = [];
for (const line of content.querySelectorAll('pre > code > span[id^="__span-"]')) {
  const height = parseFloat(getComputedStyle(line).lineHeight) || 20;
  if (line.getBoundingClientRect().height > height * 1.5) {
    result.wrapped.push(line.textContent.trimEnd().slice(0, 120));
  }
}
for (const table of content.querySelectorAll('table')) {
  if (table.closest('.highlight')) continue;  // line-number tables of code blocks
  const box = table.getBoundingClientRect();
  const scroller = table.closest('.md-typeset__scrollwrap') || table;
  result.tables.push({
    width: Math.round(box.width), visible: scroller.clientWidth,
    right: Math.round(box.right - column.right),
    head: (table.querySelector('th') || {}).textContent || '',
  });
}
function isSpace(ch) { return /\s/.test(ch); }
for (const cell of content.querySelectorAll('td, th')) {
  if (cell.closest('.highlight')) continue;
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  let prev = null;
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const code = node.parentElement.closest('code');
    const inName = !!code && !/\s/.test(code.textContent);  // a name: no break anywhere
    for (let i = 0; i < node.data.length; i++) {
      const ch = node.data[i];
      if (isSpace(ch)) { prev = {ch: ch, top: prev ? prev.top : 0}; continue; }
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rects = range.getClientRects();
      if (!rects.length || rects[0].width === 0) continue;
      const rect = rects[0];
      // A break between two word characters, or anywhere inside a name, is mid-word.
      const inWord = /\w/.test(prev ? prev.ch : '') && /\w/.test(ch);
      if (prev && !isSpace(prev.ch) && (inWord || inName)
          && rect.top > prev.top + rect.height / 2) {
        const text = cell.textContent.trim();
        result.breaks.push({word: text.slice(0, 80), at: prev.ch + '|' + ch});
      }
      prev = {ch: ch, top: rect.top};
    }
  }
}
return result;
"""


# At a phone's width: the code blocks whose lines can run under their copy button. The button
# sits over the block's top right corner; each line's box (where its text goes, wrapped text
# included) must stop short of it, or a line that fills the column hides its end there.
NARROW = 390
_COVERED = r"""
const covered = [];
for (const pre of document.querySelectorAll('.md-content__inner pre')) {
  const code = pre.querySelector('code');
  if (!code) continue;
  // The button as the theme's script places it; where the script has not run (headless),
  // where its stylesheet puts it: top 0.5em, right 0.5em, 1.5em square, in the pre's em.
  const button = pre.querySelector('.md-clipboard');
  const em = parseFloat(getComputedStyle(pre).fontSize) || 16;
  const p = pre.getBoundingClientRect();
  const b = button ? button.getBoundingClientRect()
    : {left: p.right - 2 * em, right: p.right - 0.5 * em, top: p.top + 0.5 * em,
       bottom: p.top + 2 * em, width: 1.5 * em, height: 1.5 * em};
  if (b.width === 0 || b.height === 0) continue;
  const range = document.createRange();
  range.selectNodeContents(code);
  for (const r of range.getClientRects()) {
    if (r.width > 0 && r.right > b.left && r.left < b.right && r.bottom > b.top
        && r.top < b.bottom) {
      covered.push(code.textContent.split('\n')[0].slice(0, 80));
      break;
    }
  }
}
return covered;
"""


class BrowserMissing(Exception):
    """No Chromium or chromedriver here, and no apt-get to install them: the check is skipped."""


def _find_browser(install: bool) -> tuple[str, str]:
    """The paths of Chromium and its driver, installing Debian's packages when allowed."""
    chromium = os.environ.get("OMA_CHROMIUM") or shutil.which("chromium")
    driver = os.environ.get("OMA_CHROMEDRIVER") or shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    apt = shutil.which("apt-get")
    if apt is None:  # the one case the check is skipped
        raise BrowserMissing(
            "no chromium/chromedriver found and no apt-get to install them"
            " (set OMA_CHROMIUM and OMA_CHROMEDRIVER to run it)"
        )
    if not install:
        raise RuntimeError(
            "no chromium/chromedriver found: pass --install-browser, or apt-get install"
            " chromium chromium-driver"
        )
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    subprocess.run([*sudo, apt, "update"], check=True)
    subprocess.run([*sudo, apt, "install", "-y", "chromium", "chromium-driver"], check=True)
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        raise RuntimeError("apt-get installed chromium, yet chromium/chromedriver are not on PATH")
    return chromium, driver


@contextmanager
def _serve(site: Path) -> Iterator[str]:
    """The site on an ephemeral port of 127.0.0.1, for the duration of the block."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def _browser(chromium: str, driver_path: str) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI containers run as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={WIDTH},{HEIGHT}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # offline, always
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()


def _screenshot(driver: Any, path: Path) -> None:
    """The whole page (up to ``MAX_SHOT_HEIGHT``), at the window's width."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": min(height, MAX_SHOT_HEIGHT), "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def measure(
    site: Path,
    screenshots: Path | None,
    install: bool = False,
    key_pages: Sequence[str] = KEY_PAGES,
) -> dict[str, Any]:
    """Open each key page of the built ``site``; return what was measured, page by page."""
    chromium, driver_path = _find_browser(install)
    pages: dict[str, Any] = {}
    with _serve(site) as root, _browser(chromium, driver_path) as driver:
        for page in key_pages:
            if not (site / page / "index.html").is_file():
                raise FileNotFoundError(f"{site / page / 'index.html'}: build the site first")
            driver.get(root + page)
            driver.execute_script("return document.fonts.ready")
            pages[page or "index"] = driver.execute_script(_MEASURE)
            if screenshots is not None:
                screenshots.mkdir(parents=True, exist_ok=True)
                name = (page.strip("/") or "index").replace("/", "-")
                _screenshot(driver, screenshots / f"{name}.png")
        driver.set_window_size(NARROW, HEIGHT)
        for page in key_pages:
            driver.get(root + page)
            driver.execute_script("return document.fonts.ready")
            pages[page or "index"]["covered"] = driver.execute_script(_COVERED)
    return pages


def problems(pages: dict[str, Any]) -> list[str]:
    """One line per layout fault found by ``measure``."""
    found = []
    for page, m in pages.items():
        if m["page_overflow"] > 0:
            found.append(f"{page}: the page scrolls sideways by {m['page_overflow']} px")
        for block in m["code"]:
            found.append(f"{page}: a code block hides {block['hidden']} px: {block['line']!r}")
        for table in m["tables"]:
            if table["right"] > 1:  # columns past the content column: hidden or off the page
                found.append(
                    f"{page}: table ({table['head']!r}, ...) is {table['width']} px wide"
                    f" in {table['visible']} px, {m['column']} px column"
                )
        for broken in m["breaks"]:
            found.append(f"{page}: {broken['at']!r} breaks mid-word in cell {broken['word']!r}")
        for first in m.get("covered", ()):
            found.append(f"{page}: at {NARROW} px the copy button covers code: {first!r}")
    return found


def reference_problems(site: Path) -> list[str]:
    """The API reference documents each class and function once, and no private name.

    Reads the built reference pages (no browser needed): every object heading is resolved to
    the Python object it documents; two headings for one object (a re-export documented next
    to its home module) or a heading for a ``_private`` name is a fault.
    """
    import importlib
    import inspect
    import re

    found = []
    homes: dict[tuple[str, str], list[str]] = {}
    for page in sorted((site / "reference").glob("*/index.html")):
        html = page.read_text(encoding="utf-8")
        for ident in sorted(set(re.findall(r'<h\d id="([^"]+)" class="doc doc-heading', html))):
            if any(p.startswith("_") and not p.startswith("__") for p in ident.split(".")):
                found.append(f"reference/{page.parent.name}: private name {ident}")
            obj = _resolve(ident, importlib.import_module)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                key = (obj.__module__, obj.__qualname__)
                if inspect.isclass(obj) or "." not in obj.__qualname__:
                    homes.setdefault(key, []).append(f"{page.parent.name}:{ident}")
    for (module, name), places in sorted(homes.items()):
        if len(places) > 1:
            found.append(f"{module}.{name} is documented {len(places)} times: {places}")
    return found


def _resolve(ident: str, load: Any) -> object:
    """The object a dotted heading id names (the longest importable module, then attributes)."""
    parts = ident.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = load(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def summary(pages: dict[str, Any]) -> str:
    """The figures: code blocks that scroll, the widest table, mid-word breaks."""
    blocks = sum(m["code_blocks"] for m in pages.values())
    scrolling = sum(len(m["code"]) for m in pages.values())
    widest = max(
        ((t["width"], page) for page, m in pages.items() for t in m["tables"]), default=(0, "-")
    )
    breaks = sum(len(m["breaks"]) for m in pages.values())
    wrapped = sum(len(m.get("wrapped", ())) for m in pages.values())
    column = max(m["column"] for m in pages.values())
    return (
        f"{len(pages)} pages at {WIDTH} px (content column {column} px): {scrolling} of {blocks}"
        f" code blocks scroll sideways ({wrapped} lines wrap);"
        f" widest table {widest[0]} px ({widest[1]});"
        f" {breaks} mid-word breaks in table cells"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("site", type=Path, help="the built site (mkdocs build --site-dir)")
    parser.add_argument("--screenshots", type=Path, help="where to save one PNG per page")
    parser.add_argument("--install-browser", action="store_true", help="apt-get it if missing")
    parser.add_argument("--pages", nargs="+", default=KEY_PAGES, help="paths in the site")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    reference = reference_problems(args.site)
    for line in reference:
        print(f"reference: {line}", file=sys.stderr)
    try:
        pages = measure(args.site, args.screenshots, args.install_browser, args.pages)
    except BrowserMissing as missing:
        banner = "!" * 78
        print(f"{banner}\nSKIPPED the docs layout check: {missing}\n{banner}", file=sys.stderr)
        return 1 if reference else 0
    if args.json:
        print(json.dumps(pages, indent=1))
    print(summary(pages))
    found = problems(pages)
    for line in found:
        print(f"layout: {line}", file=sys.stderr)
    if args.screenshots:
        print(f"screenshots in {args.screenshots}")
    return 1 if found or reference else 0


if __name__ == "__main__":
    sys.exit(main())
