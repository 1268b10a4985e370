"""Build hooks for the documentation: the command-line reference is written from the argparse
definitions at build time, so it cannot drift from `sandbox --help`."""

from __future__ import annotations

import argparse
import os
from typing import Any

MARKER = "<!-- cli-reference -->"


def _sections() -> str:
    from sandbox.cli._main import _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: one width for every build
    parser = _parser()
    parts = [f"## `sandbox`\n\n```text\n{parser.format_help()}```\n"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append(f"## `sandbox {name}`\n\n```text\n{sub.format_help()}```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, _sections())
    return markdown
