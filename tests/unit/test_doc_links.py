"""Docs (no MAPE-K part): every relative link in README.md and docs/**/*.md resolves; the README stays one page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(text: str) -> list[str]:
    """The link targets that point into the tree: no scheme, no bare anchor, anchors and queries cut off."""
    targets = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0].split("?", 1)[0])
    return targets


def test_the_link_pattern_finds_relative_links_and_skips_the_rest() -> None:
    text = "[a](docs/x.md) ![i](img/p.png) [b](https://example.org) [c](#top) [d](y.md#part)"
    assert relative_links(text) == ["docs/x.md", "img/p.png", "y.md"]


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_relative_link_resolves(doc: Path) -> None:
    missing = [t for t in relative_links(doc.read_text()) if not (doc.parent / t).exists()]
    assert not missing, f"{doc.relative_to(ROOT)}: links to missing files: {missing}"


def test_the_readme_opens_with_the_two_commands_and_stays_one_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    fence = lines.index("```sh")
    commands = [line.split("#", 1)[0].strip() for line in lines[fence + 1 : lines.index("```", fence + 1)]]
    assert fence < 5 and commands == ["make demo", "make test"], "README must open with `make demo` and `make test`"
    assert any("docs/attach.md" in line for line in lines[:50]), "attaching to your own job must be on the first screen"
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the product page stays within 200"
