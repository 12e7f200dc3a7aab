"""The README is one screen and docs/ holds the rest: every docs/*.md is linked from the README, every relative
link in the README and docs/ reaches a file (and its #anchor a heading), and the README stays under 200 lines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def links(path: Path) -> list[str]:
    """Return the targets of the Markdown links in a file, code blocks left out."""
    return LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8")))


def anchors(path: Path) -> set[str]:
    """Return the anchors GitHub makes of a Markdown file's headings."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", path.read_text(encoding="utf-8")), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def broken(path: Path) -> list[str]:
    """Return the relative links of a file that reach no file, or no heading of it."""
    found = []
    for target in links(path):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ...: not a file of the repository
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists() or (anchor and resolved.suffix == ".md" and anchor not in anchors(resolved)):
            found.append(target)
    return found


def test_every_docs_page_is_linked_from_the_readme():
    assert PAGES, "docs/*.md exist"
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README)}
    assert [page.name for page in PAGES if page.resolve() not in linked] == []


def test_every_relative_link_of_the_readme_and_docs_reaches_a_file():
    assert {str(path.relative_to(ROOT)): broken(path) for path in [README, *PAGES] if broken(path)} == {}


def test_the_readme_is_one_screen_with_the_commands_and_a_screenshot():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    for command in ("make run", "make test-fast", "make test"):
        assert re.search(rf"^{command}\b", text, re.MULTILINE), command
    assert "docs/images/search.png" in links(README)


def test_the_check_finds_a_broken_link_and_an_unlinked_page(tmp_path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "a.md"
    page.write_text("# A\n\n[b](b.md) [here](#a) [gone](#nowhere) [web](https://example.org)\n"
                    "```\n[in code](missing.md)\n```\n", encoding="utf-8")
    assert broken(page) == ["b.md", "#nowhere"]
    (tmp_path / "docs" / "b.md").write_text("# B\n", encoding="utf-8")
    assert broken(page) == ["#nowhere"]
