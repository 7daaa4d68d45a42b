"""A new provider plugin from oma's template: ``python -m oma_core.testing.template NAME DEST``
(``--stream sse`` for a service that streams server-sent events; newline-delimited JSON
by default).

Writes a plugin folder that installs, registers provider ``NAME`` and passes the conformance
kit as generated, against its own fake server, the request- and reply-mapping checks included
(its kit class has a wire reader and a reply script for the placeholder wire)::

    DEST/
      pyproject.toml                  oma-NAME, its entry point, the test extra
      oma_NAME/__init__.py            the ProviderSpec and the hook (cheap to import)
      oma_NAME/_provider.py           the wire, on HttpProvider
      tests/conftest.py               the fake_server_factory fixture
      tests/fake_NAME.py              the fake service
      tests/test_NAME_conformance.py  the conformance kit

The wire it ships is a placeholder (the bodies of Ollama's ``/api/chat``, streamed as the
``stream`` option says: newline-delimited JSON lines, or server-sent events whose ``data``
is one JSON object); every place the service's own wire goes is marked ``TODO(wire)``, and,
with the stream format chosen to match the service's, nothing else needs changing. See
"Writing a provider plugin" in the docs.
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

__all__ = ["FILES", "generate", "main"]

#: Template file -> the file it becomes (``{module}``: NAME with ``-`` as ``_``).
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "package/__init__.py.tmpl": "oma_{module}/__init__.py",
    "package/_provider.py.tmpl": "oma_{module}/_provider.py",
    "tests/conftest.py.tmpl": "tests/conftest.py",
    "tests/fake.py.tmpl": "tests/fake_{module}.py",
    "tests/test_conformance.py.tmpl": "tests/test_{module}_conformance.py",
}
_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
#: The stream formats the skeleton can speak, and how its docstrings name them.
STREAMS = {"ndjson": "newline-delimited JSON", "sse": "server-sent events"}
_SECTION = re.compile(r"^\{\{#(\w+)\}\}\n(.*?)^\{\{/\1\}\}\n", re.M | re.S)


def _choose(text: str, stream: str) -> str:
    """Keep the ``{{#STREAM}} ... {{/STREAM}}`` sections of ``stream``, drop the others."""
    return _SECTION.sub(lambda m: m.group(2) if m.group(1) == stream else "", text)


def generate(
    name: str, dest: Path | str, *, display_name: str | None = None, stream: str = "ndjson"
) -> list[Path]:
    """Write the plugin for provider ``name`` (lower case, digits and single hyphens) into
    ``dest``, which must not exist or be empty; return the files written. ``stream`` is the
    skeleton's stream format, ``"ndjson"`` or ``"sse"``. A bad name, stream format or a
    non-empty ``dest`` is a ``ValueError``, before anything is written."""
    if stream not in STREAMS:
        raise ValueError(f"stream {stream!r}: use one of {', '.join(sorted(STREAMS))}")
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"provider name {name!r}: use lower-case letters, digits and single hyphens, "
            "starting with a letter (e.g. 'acme' or 'acme-chat')"
        )
    target = Path(dest)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"{target} exists and is not an empty folder: nothing written")
    module = name.replace("-", "_")
    words = name.split("-")
    values = {
        "name": name,
        "module": module,
        "package": f"oma_{module}",
        "Class": "".join(w.capitalize() for w in words),
        "display": display_name or " ".join(w.capitalize() for w in words),
        "ENV": f"{module.upper()}_API_KEY",
        "stream_words": STREAMS[stream],
    }
    root = resources.files(__package__).joinpath("plugin_template")
    written = []
    for source, pattern in FILES.items():
        text = _choose(root.joinpath(source).read_text(encoding="utf-8"), stream)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        path = target / pattern.format(module=module)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


_USAGE = "usage: python -m oma_core.testing.template [--stream ndjson|sse] NAME DEST [DISPLAY NAME]"


def main(argv: list[str] | None = None) -> int:
    """The command line: ``[--stream ndjson|sse] NAME DEST [DISPLAY NAME]``; 0 on success,
    2 on a usage error."""
    args = list(sys.argv[1:] if argv is None else argv)
    stream = "ndjson"
    if args[:1] == ["--stream"] and len(args) > 1:
        stream, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--stream="):
        stream, args = args[0].partition("=")[2], args[1:]
    if len(args) not in (2, 3):
        print(_USAGE, file=sys.stderr)
        return 2
    try:
        files = generate(
            args[0], args[1], display_name=args[2] if len(args) == 3 else None, stream=stream
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in files:
        print(path)
    print(f"next: pip install -e '{args[1]}[test]' && pytest {args[1]}/tests; then the TODO(wire)s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
