"""Text -> terms -> BM25-style sparse vectors for keyword search (German and English).

Analysis (`analyze`), the same for chunks and queries:

1. Unicode NFKC, so PDF text with decomposed umlauts (a + combining diaeresis), ligatures (ﬁ) or
   full-width characters gives the same terms as typed text.
2. `str.casefold()`: lower case, and ß/ẞ become "ss". Folding ß is deliberate: Swiss German always writes
   "ss", older texts write "daß" for "dass", and capitals give "STRASSE"; all should find "Straße". The
   price is rare collisions (Maße/Masse). Umlauts stay letters: folding ä->a merges different words
   (schon/schön, zählen/zahlen), and the issue asks for umlaut-preserving terms; a query typed as
   "Groesse" therefore does not find "Größe" (dense search usually does).
3. Word tokens: runs of letters and digits (`[^\\W_]+`); a hyphen or underscore splits
   ("Mehrfaktor-Authentifizierung" -> "mehrfaktor", "authentifizierung"). Numbers are kept, and digit
   groups joined by "." or "," stay one term, so requirement numbers ("2.1.1"), paragraph numbers and
   decimals ("1.000,50") match exactly.
4. Stop words: a compact German + English list (`STOP_WORDS`) is removed by default. Words that are stop
   words in one language but content words in the other ("hat", "war", "will", "man", "bin") are kept.
   No stemming: "Passwort" and "Passwörter" are different terms (dense search covers inflections; a
   German stemmer would need a dependency and a measurement first).

Scoring. BM25 of a chunk D for a query Q is

    sum over distinct terms t of Q:  idf(t) * tf(t, D) * (k1 + 1) / (tf(t, D) + k1 * (1 - b + b * |D| / avgdl))

`chunk_vector` stores the fraction (the term-frequency part) per term of the chunk; Qdrant's IDF modifier
multiplies in idf(t) = ln((N - n(t) + 0.5) / (n(t) + 0.5) + 1) at query time from the collection's own
statistics (N chunks with a keyword vector, n(t) of them containing t); `query_vector` gives each
distinct query term the weight 1.0. The dot product the engine computes is then exactly the sum above,
with two differences from textbook BM25: avgdl is the fixed `AVGDL` instead of the collection's real
average (Qdrant cannot supply it, and a fixed value keeps stored vectors valid as the collection grows),
and a term repeated in the query counts once. |D| is the number of terms after stop-word removal.

Term ids are the first 4 bytes of blake2b(term) (stable across processes and versions, unlike Python's
salted hash()); two terms sharing an id (about 1 in 4 billion per pair) count as one term.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections import Counter

K1 = 1.2  # term-frequency saturation (the common BM25 default)
B = 0.75  # length normalisation (the common BM25 default)
AVGDL = 128  # terms per chunk: German test documents at the default settings give 55-106, full 600-token chunks ~170
ANALYZER = f"rag-lab-1 k1={K1} b={B} avgdl={AVGDL} stopwords=de+en"  # recorded in collection metadata

_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+")

_GERMAN = """
aber alle allem allen aller alles als also am an andere anderem anderen anderer anderes auch auf aus bei
beim bis bist da damit dann das dass dein deine dem den denn der des dessen dich die dir dies diese diesem diesen
dieser dieses doch dort du durch ein eine einem einen einer eines er es etwa euch euer eure für gegen habe
haben hatte hätte hier ich ihm ihn ihnen ihr ihre ihrem ihren ihrer im in ins ist ja jede jedem jeden jeder
jedes kann kein keine keinem keinen keiner können könnte mein meine mich mir mit muss müssen nach nicht
noch nun nur ob oder ohne sehr sein seine seinem seinen seiner sich sie sind so soll sollte sondern sowie
über um und uns unser unsere unter vom von vor wann warum was weil welche welchem welchen welcher welches
wenn wer werden wie wieder wir wird wo wurde wurden zu zum zur zwar zwischen
"""
_ENGLISH = """
a about an and any are as at be been being but by can could did do does for from had has have he her his
how i if in into is it its me more most my no nor not of on or our ours she should so than that the their
theirs them then there these they this those through to too was we were what when where which while who
whom why with would you your yours
"""
STOP_WORDS: frozenset[str] = frozenset(w.casefold() for w in (_GERMAN + _ENGLISH).split())


def analyze(text: str, stop_words: frozenset[str] | None = STOP_WORDS) -> list[str]:
    """Return the terms of text in order (NFKC, casefolded, stop words removed unless stop_words is None)."""
    terms = _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())
    return [t for t in terms if t not in stop_words] if stop_words else terms


@functools.lru_cache(maxsize=1 << 16)  # a collection's vocabulary repeats from chunk to chunk
def term_id(term: str) -> int:
    """Return the stable unsigned 32-bit id of a term (first 4 bytes of its blake2b digest)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "little")


def chunk_vector(text: str) -> tuple[list[int], list[float]]:
    """Return (indices, values) of a chunk: each term's id and its BM25 term-frequency weight."""
    terms = analyze(text)
    counts: Counter[int] = Counter()
    for term, tf in Counter(terms).items():  # hash each distinct term once
        counts[term_id(term)] += tf
    indices = sorted(counts)
    norm = K1 * (1 - B + B * len(terms) / AVGDL)  # the length part of the denominator, once per chunk
    return indices, [counts[i] * (K1 + 1) / (counts[i] + norm) for i in indices]


sparse_vector = chunk_vector  # the name the design notes use


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """Return (indices, values) of a query: each distinct term's id with weight 1.0 ([] when no terms)."""
    indices = sorted({term_id(t) for t in analyze(text)})
    return indices, [1.0] * len(indices)


def matching_terms(query: str, text: str) -> list[str]:
    """Return the query's distinct terms that occur in text, in query order (why a chunk matched)."""
    present = set(analyze(text))
    return [t for t in dict.fromkeys(analyze(query)) if t in present]
