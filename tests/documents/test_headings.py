"""Headings: Markdown (with code fences), PDF outlines located in text, numbered lines and their false positives."""

from __future__ import annotations

import pytest

from rag.documents.headings import find_headings, markdown_headings, numbered_headings
from rag.documents.loader import load_document
from rag.documents.outline import locate_outline
from tests.conftest import read_shared


def titles(headings) -> list[tuple[str, int]]:
    return [(h.title, h.level) for h in headings]


# ---- Markdown ----------------------------------------------------------------------------------------------

MARKDOWN = """# Setup

Install it:

```bash
# comment, not a heading
pip install rag
```

## Usage ##
~~~
## inside tilde fence
~~~
   ### Indented three spaces
    # four spaces is code
#no-space is not a heading

Underlined
==========

Second level
------------

- a list item
---
"""


def test_markdown_headings_levels_offsets_and_fences():
    headings = markdown_headings(MARKDOWN)
    assert titles(headings) == [
        ("Setup", 1),
        ("Usage", 2),
        ("Indented three spaces", 3),
        ("Underlined", 1),
        ("Second level", 2),
    ]
    assert all(h.source == "markdown" for h in headings)
    assert MARKDOWN[headings[1].start :].startswith("## Usage ##")
    assert MARKDOWN[headings[3].start :].startswith("Underlined\n===")


def test_markdown_front_matter_is_not_a_heading():
    text = "---\ntitle: x\n---\n\n# Real\n"
    assert titles(markdown_headings(text)) == [("Real", 1)]


def test_unclosed_fence_hides_the_rest():
    assert titles(markdown_headings("# A\n```\n# not\n")) == [("A", 1)]


def test_asvs_authentication_headings(shared_data):
    text = read_shared(shared_data, "markdown/asvs-de-V2-Authentication.md")
    document = load_document(text, "asvs-de-V2-Authentication.md")
    found = titles(document.headings)
    assert len(found) == 18
    assert found[0] == ("V2 Authentifizierung", 1)
    assert ("Auswahl einer geeigneten NIST AAL-Stufe", 3) in found
    assert ("V2.10 Service-Authentifizierung", 2) in found and found[-1] == ("Referenzen", 2)
    for heading in document.headings:
        assert document.text[heading.start :].startswith("#" * heading.level + " " + heading.title)


# ---- PDF outline -------------------------------------------------------------------------------------------


def test_outline_titles_are_found_tolerantly_on_their_page_or_the_next():
    page1 = "Intro text mentions the Methods in passing.\n2.1 METHODS\nBody."
    page2 = "More body.\nIII. Ergebnisse und\nDiskussion\nText."
    text = page1 + "\n\n" + page2
    outline = [("Methods", 2, 1), ("Ergebnisse und Diskussion", 1, 1), ("Nowhere", 1, 2)]
    headings = locate_outline(text, outline, {1: 0, 2: len(page1) + 2})
    assert [(h.title, h.level, h.source) for h in headings] == [
        ("Methods", 2, "outline"),
        ("Ergebnisse und Diskussion", 1, "outline"),
    ]
    assert text[headings[0].start :].startswith("2.1 METHODS")
    assert text[headings[1].start :].startswith("III. Ergebnisse")


def test_bookmarks_printed_otherwise_are_still_located_on_their_page():
    """As in l2kurz.pdf: a bookmark titled differently from its printed heading, and one with a footnote mark."""
    page1 = ("3.9.1. Zitate\nText.\n3.9.2. Listen\nText über Listen.\n"
             "3.9.3. Linksbündig, rechtsbündig (flushleft, flushright, center)\nText.\n3.9.4. Tabulatoren\nText.")
    page2 = "A. Mit dem Paket textcomp verfügbare Symbole3\nTabelle der Symbole.\nB. Literatur\nBücher."
    text = page1 + "\n\n" + page2
    outline = [("Zitate", 3, 1), ("Listen", 3, 1), ("Flattersatz (flushleft, flushright, center)", 3, 1),
               ("Tabulatoren", 3, 1), ("Mit dem Paket textcomp verfügbare Symbole", 1, 2), ("Literatur", 1, 2)]
    headings = locate_outline(text, outline, {1: 0, 2: len(page1) + 2})
    assert [text[h.start :].split("\n")[0][:12] for h in headings] == [
        "3.9.1. Zitat", "3.9.2. Liste", "3.9.3. Links", "3.9.4. Tabul", "A. Mit dem P", "B. Literatur"]


def test_an_outline_that_does_not_match_the_text_is_not_trusted():
    text = "Erste Seite.\n\nZweite Seite."
    assert locate_outline(text, [("Gibt es nicht", 1, 1), ("Auch nicht", 1, 2)], {1: 0, 2: 14}) == []


def test_outline_wins_over_numbered_lines_and_falls_back_when_nothing_is_found():
    text = "1 Einleitung\nText.\n\n2 Methoden\nText."
    with_outline = find_headings(text, "pdf", outline=[("Methoden", 1, 1)], page_starts={1: 0})
    assert titles(with_outline) == [("Methoden", 1)]
    fallback = find_headings(text, "pdf", outline=[("Gibt es nicht", 1, 1)], page_starts={1: 0})
    assert titles(fallback) == [("1 Einleitung", 1), ("2 Methoden", 1)]


# ---- numbered heading lines --------------------------------------------------------------------------------

POSITIVES = """Vorwort ohne Nummer.

2.1 Auftragsklärung
Hier wird der Auftrag geklärt.
2.1.3 Feinheiten
Mehr Text.

3. Ergebnisse

Die Ergebnisse sind gut."""


def test_numbered_levels_from_the_numbering_depth():
    headings = numbered_headings(POSITIVES)
    assert titles(headings) == [("2.1 Auftragsklärung", 2), ("2.1.3 Feinheiten", 3), ("3. Ergebnisse", 1)]
    assert all(POSITIVES[h.start :].startswith(h.title) for h in headings)
    assert {h.source for h in headings} == {"numbered"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Chapter 4 Results\n\nText.", [("Chapter 4 Results", 1)]),
        ("Kapitel 3 Methoden\n\nText.\n\n3.1 Aufbau\n\nText.", [("Kapitel 3 Methoden", 1), ("3.1 Aufbau", 2)]),
        ("Teil II\n\nKapitel 3: Methoden\n\nText.", [("Teil II", 1), ("Kapitel 3: Methoden", 2)]),
        ("§ 5 Kündigung\n\n(1) Der Vertrag kann gekündigt werden.", [("§ 5 Kündigung", 1)]),
        (
            "A. Einleitung\n\nText.\n\nI. Problem\n\nText.\n\nII. Lösung\n\nText.\n\nB. Hauptteil\n\nText.",
            [("A. Einleitung", 1), ("I. Problem", 2), ("II. Lösung", 2), ("B. Hauptteil", 1)],
        ),
    ],
)
def test_numbered_heading_styles(text, expected):
    assert titles(numbered_headings(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Protokoll\n\n12.03.2024 Sitzung des Vorstands\n\nText.",  # a date
        "Protokoll\n\n12.03. Sitzung\n\nText.",  # a short date
        "Fristen.\n\n1. Januar 2024\n\nText.",  # a date with a month
        "Kosten.\n\n1.000 Euro Gebühr\n\n3,5 Prozent Zinsen\n\nText.",  # amounts
        "Drei Schritte:\n1. Erstellung einer Datenbank\n2. Einfügung von Verweisen\nDanach weiter.",  # a list
        "Ende.\n1. Erstellung einer Datenbank\n2. Einfügung von Verweisen\n\nText.",  # a list after a sentence
        "Tabelle.\n\n1 Äpfel 2,50\n2 Birnen 3\n\nText.",  # table rows
        "Inhalt\n\n1 Einleitung . . . . . 3\n2 Methoden . . . . . 7\n\nText.",  # table of contents
        "Wir kamen an.\n3 Personen warteten bereits.\nDann ging es los.",  # a sentence
        "Am Morgen.\n3 Personen und die\nKinder kamen später.",  # a wrapped sentence
        "Ende.\n\n2. Exceptions and Limitations. For the avoidance of doubt, where\nmore text",  # running text
        "Ende.\n\n       2. Patent and trademark rights are not licensed\n\nText.",  # indented list item
        "Ende.\n\n3 apples were eaten\n\nText.",  # lower-case title
        "Ende.\n\n99 Luftballons\n\nText.",  # implausible number
        "Autor:\n\nA. Einstein\n\nText.",  # an initial, no B. anywhere
        "Die Quelle.\n\n§ 823 Abs. 1 BGB\n\nText.",  # a citation
        "Ende.\n\nSection 2 describes the method\n\nText.",  # a sentence after a chapter word
        "Ende.\n\n4 Ergebnisse {siehe unten}\n\nText.",  # code-ish characters
    ],
)
def test_numbered_false_positives(text):
    assert numbered_headings(text) == []


def test_numbering_that_continues_is_accepted_without_a_sentence_end_above():
    text = "Titelseite v2.1\n1 Einleitung\nText.\n2 Methoden\nText {x}\n2.1 Daten\nText."
    assert titles(numbered_headings(text)) == [("1 Einleitung", 1), ("2 Methoden", 1), ("2.1 Daten", 2)]


def test_repeated_running_header_counts_once():
    text = "\n\n".join(f"3 Methoden\nSeite {n} Text." for n in range(4))
    assert len(numbered_headings(text)) == 1


def test_numbered_lines_in_a_text_file_and_in_hausarbeit_without_its_outline(shared_data):
    document = load_document(b"Einleitung.\n\n1 Ziel\n\nWir wollen.\n\n1.1 Umfang\n\nKlein.", "plan.txt")
    assert titles(document.headings) == [("1 Ziel", 1), ("1.1 Umfang", 2)]
    hausarbeit = load_document(read_shared(shared_data, "pdfs/hausarbeit-jura.pdf"), "h.pdf")
    found = numbered_headings(hausarbeit.text)
    assert [h.title for h in found] == [
        line for h in hausarbeit.headings if (line := hausarbeit.text[h.start :].split("\n", 1)[0])
    ]
    assert [h.level for h in found] == [h.level for h in hausarbeit.headings]


def test_markdown_files_use_only_markdown_headings():
    assert titles(find_headings("1 Ziel\n\nText.\n\n# Echt\n", "markdown")) == [("Echt", 1)]
    assert titles(find_headings("1 Ziel\n\nText.\n\n# Echt\n", "text")) == [("1 Ziel", 1)]
