"""The code blocks of the README and the guides, read as docs/README.md's convention says, and
the order a reader meets the files in (docs/README.md, "Reading order").

A fenced block's info string decides what happens to it:

- ``sh``, ``bash``, ``python`` (the runnable languages): run as pasted. The shell blocks of all
  the files run in order as in one terminal, so a variable one block sets is there for the next;
  each Python block runs on its own.
- the same language followed by ``norun`` (```` ```sh norun ````): shown, never run (it needs
  something the demo does not have, or it never ends, like ``make run``).
- any other language (``text``, ``json``, ``toml``, ``yaml``, ``js``…): shown, never run.
- no info string at all: refused, so every new block says which it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUNNABLE = frozenset({"sh", "bash", "python"})
NORUN = "norun"
# `make run`'s default address: a runnable block reads it from $SWITCHBOARD_URL instead, so the
# test, serving on a port of its own, refuses a block that writes it out.
DEMO_BASE = "http://127.0.0.1:8000"

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>.*)$")
# An item of docs/README.md's reading order: "3. [guides/webhooks.md](guides/webhooks.md): …".
_READING_ITEM = re.compile(r"^\d+\. \[[^\]]*\]\((?P<target>[^)#\s]+\.md)\)")


@dataclass(frozen=True, slots=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    norun: bool
    code: str

    @property
    def runnable(self) -> bool:
        return self.language in RUNNABLE and not self.norun

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def guide_files() -> list[Path]:
    """The README and every guide, whether or not the reading order lists it."""
    return [ROOT / "README.md", *sorted((DOCS / "guides").glob("*.md"))]


def reading_order() -> list[Path]:
    """The files of docs/README.md's "Reading order", in its order."""
    text = (DOCS / "README.md").read_text()
    section = text.split("\n## Reading order\n", 1)[1].split("\n## ", 1)[0]
    found = (_READING_ITEM.match(line) for line in section.splitlines())
    return [(DOCS / item["target"]).resolve() for item in found if item is not None]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order; an indented fence (in a list item) loses the
    fence's indentation from each of its lines."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        words = opening["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            line = lines[j]
            body.append(line[indent:] if line[:indent].strip() == "" else line)
            j += 1
        language = words[0] if words else ""
        found.append(Block(path, i + 1, language, NORUN in words[1:], "\n".join(body) + "\n"))
        i = j + 1
    return found
