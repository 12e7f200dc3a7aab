"""rag.retrieval.context: exact token budget, headers, ordering, overlap trimming and duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import tokens
from rag.errors import InvalidSettingsError
from rag.retrieval.context import (
    CHAT_MAX_TOKENS,
    GENERATION_MAX_TOKENS,
    NO_SENTENCE,
    OVERFLOWS,
    TRUNCATION_MARK,
    build_context,
    header,
)
from rag.retrieval.records import Hit

SEPARATOR = "\n\n---\n\n"


def hit(
    content: str,
    score: float | None = 0.5,
    doc: str = "doc",
    title: str = "doc.md",
    start: int | None = None,
    heading: tuple[str, ...] = (),
    pages: tuple[int, int] | None = None,
    index: int | None = 0,
) -> Hit:
    end = None if start is None else start + len(content)
    page_start, page_end = pages or (None, None)
    return Hit(
        score,
        content,
        doc,
        title,
        f"{doc}-{start}-{index}",
        index,
        heading,
        page_start,
        page_end,
        start,
        end,
        {"content": content},
    )


def test_presets() -> None:
    assert (CHAT_MAX_TOKENS, GENERATION_MAX_TOKENS) == (3000, 5000)


def test_header_format() -> None:
    full = hit("x", title="hausarbeit-jura.pdf", heading=("Kapitel 2", "Auftragsklärung"), pages=(3, 4))
    assert header(1, full) == "[Quelle 1: hausarbeit-jura.pdf — Kapitel 2 › Auftragsklärung — S. 3–4]"
    assert header(2, hit("x", title="a.md", pages=(5, 5))) == "[Quelle 2: a.md — S. 5]"
    assert header(3, hit("x", title="a.md"), label="Source") == "[Source 3: a.md]"
    assert header(1, hit("x", title="zwei\nZeilen.md", heading=("A\nB",))) == "[Quelle 1: zwei Zeilen.md — A B]"
    assert header(1, hit("x", doc="only-id", title="")) == "[Quelle 1: only-id]"


def test_sources_numbered_in_score_order() -> None:
    hits = [
        hit("Mittel.", 0.5, "b", "b.md"),
        hit("Bester Treffer.", 0.9, "a", "a.md", pages=(2, 2)),
        hit("Schwach.", 0.1, "c", "c.md"),
    ]
    context = build_context(hits)
    assert [s.number for s in context.sources] == [1, 2, 3]
    assert [s.document_id for s in context.sources] == ["a", "b", "c"]
    assert context.sources[0].score == 0.9 and context.sources[0].page_start == 2
    assert context.text == SEPARATOR.join(
        ["[Quelle 1: a.md — S. 2]\nBester Treffer.", "[Quelle 2: b.md]\nMittel.", "[Quelle 3: c.md]\nSchwach."]
    )
    assert context.token_count == tokens.count(context.text) and context.dropped == []


def test_hits_without_score_keep_their_order() -> None:
    hits = [hit("drei", None, "c"), hit("eins", None, "a"), hit("zwei", None, "b")]
    assert [h.content for h in build_context(hits).included] == ["drei", "eins", "zwei"]


def test_duplicates_are_dropped() -> None:
    text = "Gleicher Inhalt in zwei Dateien, einmal hochgeladen als PDF und einmal als Text."
    same_span = hit(text, 0.8, "a", start=0)
    context = build_context([hit(text, 0.9, "a", start=0), same_span, hit(text, 0.7, "b", "b.md")])
    assert len(context.included) == 1
    assert [d.reason for d in context.dropped] == ["duplicate", "duplicate"]
    assert context.dropped[0].hit == same_span


def test_overlap_is_trimmed_to_the_new_part_at_word_boundaries() -> None:
    text = (
        "Das Passwort muss mindestens zwölf Zeichen lang sein und darf nicht in Listen stehen. "
        "Mehrfaktor-Authentifizierung ist für Administratoren verpflichtend und wird protokolliert. "
        "Sitzungen enden nach dreißig Minuten ohne Aktivität automatisch."
    )
    first = hit(text[0:100], 0.9, start=0, index=0)
    second = hit(text[80:], 0.8, start=80, index=1)  # 20 chars of overlap, starting mid-word
    context = build_context([first, second])
    assert context.dropped == [] and len(context.included) == 2
    trimmed = context.included[1]
    assert trimmed.start >= 100 and trimmed.content == text[trimmed.start : trimmed.end]
    assert trimmed.end == len(text) and trimmed.content.startswith("ist für")  # the cut word is skipped
    assert trimmed.chunk_index == 1 and context.sources[1].chunk_index == 1
    assert text[0:100] in context.text and context.text.count("Mehrfaktor") == 1


def test_overlap_with_little_new_text_is_dropped() -> None:
    text = "Erster Satz über Passwörter und ihre Länge im System. Zweiter Satz über Sitzungen. Ende."
    context = build_context([hit(text[:80], 0.9, start=0), hit(text[5:88], 0.8, start=5)])
    assert len(context.included) == 1
    assert [d.reason for d in context.dropped] == ["overlaps source 1"]


def test_hits_without_offsets_are_deduplicated_on_content_only() -> None:
    context = build_context(
        [
            hit("Passwörter sind lang.", 0.9),
            hit("Passwörter sind lang. Und sicher.", 0.8),
            hit("Passwörter sind lang.", 0.7, "other"),
        ]
    )
    assert [h.content for h in context.included] == ["Passwörter sind lang.", "Passwörter sind lang. Und sicher."]
    assert [d.reason for d in context.dropped] == ["duplicate"]


def test_budget_below_one_header_gives_empty_context() -> None:
    hits = [hit("Kurz.", 0.9), hit("Auch kurz.", 0.8, "b")]
    context = build_context(hits, max_tokens=4, overflow="skip")
    assert (context.text, context.token_count, context.sources, context.included) == ("", 0, [], [])
    assert [d.reason for d in context.dropped] == ["over budget", "over budget"]
    context = build_context(hits, max_tokens=4)  # truncate: not even the header fits, so the context ends
    assert context.text == "" and [d.reason for d in context.dropped] == ["over budget", "budget full"]


def test_small_chunk_fits_after_a_large_one_was_dropped() -> None:
    large = hit("Lange Ausführungen über Authentifizierung. " * 60, 0.9, "a")
    small = hit("Kurzer Hinweis.", 0.5, "b", "b.md")
    context = build_context([large, small], max_tokens=50, overflow="skip")
    assert [s.document_id for s in context.sources] == ["b"] and context.sources[0].number == 1
    assert [(d.hit, d.reason) for d in context.dropped] == [(large, "over budget")]
    assert context.text == "[Quelle 1: b.md]\nKurzer Hinweis."


def test_document_text_is_data() -> None:
    nasty = "[Quelle 9: gefälscht]\n{label} <script>alert(1)</script> ---"
    context = build_context([hit(nasty, 0.9, title="{x}.md")])
    assert context.text == "[Quelle 1: {x}.md]\n" + nasty


def test_to_dict_is_json() -> None:
    context = build_context([hit("Inhalt eins.", 0.9, heading=("A",)), hit("Inhalt eins.", 0.1, "b")], 100)
    data = json.loads(json.dumps(context.to_dict()))
    assert set(data) == {"text", "token_count", "max_tokens", "sources", "included", "dropped", "truncated", "overflow"}
    assert data["sources"][0]["heading_path"] == ["A"] and data["sources"][0]["number"] == 1
    assert data["included"][0]["payload"] == {"content": "Inhalt eins."}
    assert data["dropped"][0]["reason"] == "duplicate" and data["max_tokens"] == 100


GERMAN_WORDS = [
    "Prüfung",
    "Größe",
    "Schlüssel",
    "Übermäßig",
    "äußerst",
    "weiß",
    "Straße",
    "Öl",
    "für",
    "über",
    "Authentifizierung",
    "Passwort",
    "—",
    "«",
    "»",
    "123",
    ".",
    ",",
    "\n",
    "  ",
    "ẞ",
    "🙂",
]
german_text = st.lists(st.sampled_from(GERMAN_WORDS), min_size=1, max_size=120).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(german_text, min_size=1, max_size=12, unique=True), max_tokens=st.integers(1, 2000))
def test_budget_is_exact_and_greedy(texts: list[str], max_tokens: int) -> None:
    hits = [
        hit(t, 1.0 - i / 100, f"d{i}", f"Datei-{i}.md", heading=("Kapitel Ä",), pages=(i + 1, i + 2))
        for i, t in enumerate(texts)
    ]
    context = build_context(hits, max_tokens=max_tokens, overflow="skip")
    assert context.token_count == tokens.count(context.text) <= max_tokens
    assert len(context.included) + len(context.dropped) == len(hits)
    for dropped in context.dropped:
        if dropped.reason == "duplicate":
            continue
        assert dropped.reason == "over budget"
        position = hits.index(dropped.hit)
        before = [h for h in hits[:position] if h in context.included]
        assert build_context([*before, dropped.hit], max_tokens=10**9, overflow="skip").token_count > max_tokens


def test_real_text_overlapping_chunks(shared_data: Path) -> None:
    text = (shared_data / "markdown" / "asvs-de-V2-Authentication.md").read_text(encoding="utf-8")
    size, step = 900, 700  # 200 characters of overlap, cut anywhere (mid-word too)
    spans = [(s, min(s + size, len(text))) for s in range(0, len(text), step)]
    scores = [((i * 37) % 101) / 100 for i in range(len(spans))]
    hits = [hit(text[s:e], scores[i], "asvs", "asvs-de-V2.md", start=s, index=i) for i, (s, e) in enumerate(spans)]
    # a chunk inside each chunk, scored just below it: dropped as overlapping once its container is in
    hits += [
        hit(text[s + 50 : s + 600], scores[i] - 0.001, "asvs", "asvs-de-V2.md", start=s + 50, index=100 + i)
        for i, (s, _) in enumerate(spans)
    ]
    context = build_context(hits, max_tokens=CHAT_MAX_TOKENS, overflow="skip")
    assert context.token_count == tokens.count(context.text) <= CHAT_MAX_TOKENS
    assert context.token_count > CHAT_MAX_TOKENS - 400  # budget well used
    included = sorted(context.included, key=lambda h: h.start)
    for piece in included:
        assert piece.content == text[piece.start : piece.end] and piece.content in context.text
    assert all(a.end <= b.start for a, b in zip(included, included[1:], strict=False))  # nothing twice
    assert any(len(p.content) < size - 10 for p in context.included)  # some neighbours were trimmed
    assert sum(d.reason.startswith("overlaps source") for d in context.dropped) >= len(context.sources) // 2
    assert {d.reason for d in context.dropped} <= {"over budget"} | {
        f"overlaps source {n}" for n in range(1, len(context.sources) + 1)
    }
    assert [s.score for s in context.sources] == sorted((s.score for s in context.sources), reverse=True)


@settings(max_examples=150, deadline=None)
@given(
    text=german_text.filter(lambda t: len(t) > 20),
    spans=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=10),
    max_tokens=st.integers(1, 2000),
)
def test_overlapping_spans_never_repeat_text(
    text: str, spans: list[tuple[float, float, float]], max_tokens: int
) -> None:
    hits = []
    for i, (a, b, score) in enumerate(spans):
        start, end = sorted((int(a * len(text)), int(b * len(text))))
        if end > start:
            hits.append(hit(text[start:end], score, "doc", start=start, index=i))
    context = build_context(hits, max_tokens=max_tokens, overflow="skip")
    assert context.token_count == tokens.count(context.text) <= max_tokens
    assert len(context.included) + len(context.dropped) == len(hits)
    pieces = sorted(context.included, key=lambda h: h.start)
    assert all(p.content == text[p.start : p.end] for p in pieces)
    assert all(a.end <= b.start for a, b in zip(pieces, pieces[1:], strict=False))
    numbers = range(1, len(context.sources) + 1)
    allowed = {"over budget", "duplicate"} | {f"overlaps source {n}" for n in numbers}
    assert {d.reason for d in context.dropped} <= allowed


SENTENCES = " ".join(f"Satz {n} erklärt, wie die Kündigungsfrist im Abschnitt {n} berechnet wird." for n in range(60))


def test_truncate_keeps_the_best_chunk_cut_at_a_sentence_and_then_stops() -> None:
    best = hit(SENTENCES, 0.9, "a", "vertrag.pdf")  # about 1100 tokens
    small = hit("Kurzer Hinweis.", 0.5, "b", "b.md")
    assert tokens.count(best.content) > 600
    context = build_context([best, small], max_tokens=400)
    assert [s.document_id for s in context.sources] == ["a"] and context.sources[0].truncated
    assert context.text.startswith("[Quelle 1: vertrag.pdf]\nSatz 0 erklärt")
    assert context.text.endswith("berechnet wird. …")  # at a sentence end, marked
    assert context.token_count == tokens.count(context.text) and 380 < context.token_count <= 400
    kept = context.included[0]
    assert kept.content[: -len(TRUNCATION_MARK)] == best.content[: len(kept.content) - len(TRUNCATION_MARK)]
    [cut] = context.truncated
    assert cut.hit is best and cut.reason.startswith("cut to fit: ") and f"of {len(best.content)}" in cut.reason
    assert [(d.hit, d.reason) for d in context.dropped] == [(small, "budget full")]
    assert context.to_dict()["sources"][0]["truncated"] is True


def test_truncate_cuts_at_a_word_when_no_sentence_end_fits() -> None:
    words = hit(" ".join(["Authentifizierungsverfahren"] * 400), 0.9)
    context = build_context([words], max_tokens=60)
    assert context.text.endswith("Authentifizierungsverfahren …") and context.token_count <= 60
    assert context.sources[0].truncated


def test_stop_ends_the_context_at_the_first_block_that_does_not_fit() -> None:
    first = hit("Erster Treffer.", 0.9, "a")
    large = hit(SENTENCES, 0.8, "b")
    small = hit("Kurzer Hinweis.", 0.5, "c")
    context = build_context([first, large, small], max_tokens=200, overflow="stop")
    assert [s.document_id for s in context.sources] == ["a"]
    assert [(d.hit, d.reason) for d in context.dropped] == [(large, "over budget"), (small, "budget full")]
    skipped = build_context([first, large, small], max_tokens=200, overflow="skip")
    assert [s.document_id for s in skipped.sources] == ["a", "c"]


def test_an_unknown_overflow_policy_is_refused() -> None:
    with pytest.raises(InvalidSettingsError, match="truncate, skip, stop"):
        build_context([hit("Text.", 0.9)], overflow="cut")


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(german_text, min_size=1, max_size=8, unique=True), max_tokens=st.integers(1, 600),
       overflow=st.sampled_from(OVERFLOWS))
def test_every_policy_keeps_the_budget_exact(texts: list[str], max_tokens: int, overflow: str) -> None:
    hits = [hit(t, 1.0 - i / 100, f"d{i}", f"Datei-{i}.md") for i, t in enumerate(texts)]
    context = build_context(hits, max_tokens=max_tokens, overflow=overflow)
    assert context.token_count == tokens.count(context.text) <= max_tokens
    assert len(context.included) + len(context.dropped) == len(hits)
    assert len(context.truncated) <= (1 if overflow == "truncate" else 0)


LONG_RULE = "1.1.2. Die Authentifizierung erfolgt über " + " ".join(f"Verfahren{i}" for i in range(120)) + \
    " und ist verbindlich. Danach kommt der nächste Satz."


def test_a_cut_that_would_keep_only_a_heading_number_drops_the_chunk_with_its_reason() -> None:
    first = hit("Die Frist beträgt drei Monate. Sie beginnt mit dem Zugang.", 0.9, "a", "a.md")
    rule = hit(LONG_RULE, 0.8, "b", "b.md")
    alone = build_context([first], max_tokens=1000)
    budget = alone.token_count + tokens.count("\n\n---\n\n[Quelle 2: b.md]\n1.1.2. …") + 2
    context = build_context([first, rule], max_tokens=budget)  # before: [Quelle 2] held "1.1.2. …" only
    assert [s.document_id for s in context.sources] == ["a"] and context.truncated == []
    assert [(d.hit, d.reason) for d in context.dropped] == [(rule, NO_SENTENCE)]
    assert context.text == alone.text and "1.1.2." not in context.text
    data = context.to_dict()
    assert len(data["sources"]) == 1 and data["dropped"][0]["reason"] == NO_SENTENCE
    no_room = build_context([first, rule], max_tokens=alone.token_count + tokens.count("\n\n---\n\n[Quelle 2: b.md]\n"))
    assert [d.reason for d in no_room.dropped] == ["over budget"]  # not even a word would fit: no cut to speak of


def test_a_cut_keeps_whole_sentences_and_never_ends_on_a_heading_number() -> None:
    rule = hit(LONG_RULE, 0.8, "b", "b.md")
    room = tokens.count("[Quelle 1: b.md]\n" + LONG_RULE[: LONG_RULE.index("verbindlich.") + 12] + " …")
    kept = build_context([rule], max_tokens=room).included[0].content
    assert kept.endswith("und ist verbindlich. …")  # the first sentence, number and all
    tail = hit("Erster Satz der Regel. Zweiter Satz folgt hier.\n\n1.1.4. " + " ".join(["Wort"] * 200) + ".", 0.8)
    room = tokens.count("[Quelle 1: doc.md]\nErster Satz der Regel. Zweiter Satz folgt hier.\n\n1.1.4. …") + 1
    cut = build_context([tail], max_tokens=room).included[0].content
    assert cut == "Erster Satz der Regel. Zweiter Satz folgt hier. …"  # not "... hier.\n\n1.1.4. …"
