"""Quoting what reports show: text that came from a package or an implementation (case ids, error messages,
reasons) is data, never Markdown, HTML or terminal control.

* :func:`control_free`: every control character but newline and tab (ANSI escapes, carriage returns, NUL) as a
  visible ``\\xNN``; the terminal summary and failure messages go through it.
* :func:`code_span`: one line of text as a Markdown code span (CommonMark shows a code span's HTML as text), its
  backticks fenced by a longer run and its newlines shown as ``\\n``;
* :func:`code_block`: text verbatim as a fenced block, fenced longer than any backtick run inside it;
* :func:`cell`: text for a Markdown table cell or inside a line: HTML, pipes and inline markup escaped, on one
  line.
"""

from __future__ import annotations

import html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: What can start markup inside a line (intraword ``_`` cannot; ``#``, ``-``, ``+`` only at a line's start, where
#: quoted text never stands): escaped with a backslash.
_MARKDOWN = re.compile(r"([\\`*\[\]|])")


def control_free(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def one_line(text: str) -> str:
    return control_free(str(text).replace("\r", "\\r").replace("\n", "\\n").replace("\t", " "))


def _fence(text: str, at_least: int) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(at_least, longest + 1)


def code_span(text: str) -> str:
    text = one_line(text)
    fence = _fence(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") or fence != "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text: str, indent: str = "  ") -> list[str]:
    text = control_free(text)
    fence = _fence(text, 3)
    return [f"{indent}{fence}"] + [f"{indent}{line}" for line in text.splitlines()] + [f"{indent}{fence}"]


def cell(text) -> str:
    return _MARKDOWN.sub(r"\\\1", html.escape(one_line(text), quote=False))
