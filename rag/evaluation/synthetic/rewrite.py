"""A sentence rewritten as a search query that is not a verbatim copy of it (German and English).

The rewrite keeps what the sentence is about and changes how it says it, the way a searcher would: its clauses
are rotated (the last one first), function words are dropped (articles, pronouns, auxiliaries, conjunctions,
single letters; negations and numbers stay, they carry meaning), about a quarter of the rest is left out (the
query keeps at most 12 words, as typed queries do), about a third of the long words are replaced by another
form with the same Snowball stem found in the documents ("Passwörter" -> "Passwort", "licenses" ->
"licensed"), most German compounds whose parts stand alone in the documents are split ("Benutzerpasswörter"
-> "Passwörter Benutzer", which a keyword index of the compound does not match), and the words are put in a
question frame ("Was steht zu …?"). All choices come from the random generator passed in, so a seed reproduces
them.

So a retriever cannot match the query to its sentence as one string, yet every content word it keeps comes from
the sentence or its stem: what this tests is whether retrieval finds the passage from part of its own
vocabulary in other forms, a lower bound on the vocabulary mismatch of real questions.
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

MIN_CONTENT_WORDS = 4  # fewer: the sentence says too little to be searched for
DROP_SHARE = 0.25
MAX_QUERY_WORDS = 12
VARIANT_SHARE = 0.35
MIN_VARIANT_WORD = 5  # shorter words are kept as they are
MIN_COMPOUND, MIN_PART, SPLIT_SHARE = 9, 4, 0.7  # German compounds split into words that stand alone
MAX_VARIANT_CHANGE = 2  # letters a form may add or lose: "public" -> "publicity" shares a stem, not a meaning

_WORD = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+(?:[-'’][^\W_]+)*")
_CLAUSE = re.compile(r"[,;:()]|\s[–—-]\s")
_FUNCTION_WORDS = {
    "de": frozenset("""
        aber alle allem allen aller alles als also am an andere anderem anderen anderer anderes auch auf aus bei
        beim bereits bin bis bist bzw da dabei dadurch daher dafür damit dann daran darauf darin darum das dass
        davon dazu dein deine dem den denen denn der deren des dessen dich die dies diese diesem diesen dieser
        dieses dir doch dort du durch eben ein eine einem einen einer eines einige einigen einiger er es etwa
        etwas euch euer eure für ganz gar gegen gibt habe haben hat hatte hätte hier hierbei hin ich ihm ihn
        ihnen ihr ihre ihrem ihren ihrer im immer in ins insbesondere ist ja je jede jedem jeden jeder jedes
        jedoch jetzt kann können könnte lässt man mehr mein meine mich mir mit muss müssen nach nämlich neben
        noch nun nur ob oder oft schon sehr sei sein seine seinem seinen seiner seit selbst sich sie sind so
        sodass sogar soll sollen sollte sollten somit sondern sowie sowohl über um und uns unser unsere unter
        usw vom von vor wann war waren warum was weil welche welchem welchen welcher welches wenn wer werden
        wie wieder will wir wird wo wobei wurde wurden zu zum zur zwar zwischen
    """.split()),
    "en": frozenset("""
        a about after also am an and any are as at be because been before being both but by can could did do
        does doing done each either for from further had has have having he her here hers him his how however i
        if in into is it its itself just may me might more most must my myself of off on once only or other
        our ours out over own same shall she should so some such than that the their theirs them themselves
        then there therefore these they this those through thus to too under until up upon us very was we
        were what when where whether which while who whom whose why will with would you your yours
    """.split()),
}
_KEEP = frozenset("nicht nie niemals kein keine keinem keinen keiner keines ohne weder no not never none nor "
                  "without neither cannot".split())  # negations: without them the query says the opposite
_FRAMES = {
    "de": ("Was steht zu {}?", "Was sagt der Text über {}?", "Wo geht es um {}?", "{}?"),
    "en": ("What is said about {}?", "What does the text say about {}?", "Where is {} covered?", "{}?"),
}
_STEMMERS = {"de": "german", "en": "english"}


class Vocabulary:
    """The words of the documents by language and Snowball stem: where another form of a word can be found."""

    def __init__(self, texts: Iterable[tuple[str, str]]):
        """texts: (text, language) pairs; language "de" or "en" (others are not stemmed)."""
        words: dict[str, Counter[str]] = defaultdict(Counter)
        for text, language in texts:
            if language in _STEMMERS:
                words[language].update(w for w in _WORD.findall(text) if len(w) >= MIN_VARIANT_WORD and w.isalpha())
        self._forms: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._german = {w.casefold(): w for w in words.get("de", ())}  # for compounds: the words that stand alone
        for language, counts in words.items():
            distinct = sorted(counts)
            for word, stem in zip(distinct, _stemmer(language).stem_words([w.casefold() for w in distinct]),
                                  strict=True):
                self._forms[language, stem].append(word)

    def variant(self, word: str, language: str, rng: random.Random) -> str:
        """Return another form of word with its stem in the documents ("Passwörter" -> "Passwort"), else word."""
        if language not in _STEMMERS or len(word) < MIN_VARIANT_WORD or not word.isalpha():
            return word
        stem = _stemmer(language).stem_word(word.casefold())
        others = [w for w in self._forms.get((language, stem), ()) if w.casefold() != word.casefold()
                  and abs(len(w) - len(word)) <= MAX_VARIANT_CHANGE and _shape(w) == _shape(word)]
        return rng.choice(others) if others else word


    def split(self, word: str) -> list[str]:
        """Return a German compound as its head and modifier when both stand alone in the documents
        ("Benutzerpasswörter" -> ["Passwörter", "Benutzer"]), else [word]."""
        folded = word.casefold()
        if len(word) < MIN_COMPOUND or not word.isalpha() or not word[0].isupper():
            return [word]
        for cut in range(len(word) - MIN_PART, MIN_PART - 1, -1):  # the longest head first
            head = self._german.get(folded[cut:])
            modifier = next((self._german[m] for m in _modifiers(folded[:cut]) if m in self._german), None)
            if head and modifier and head[0].isupper():
                return [head, modifier]
        return [word]


def _modifiers(part: str) -> list[str]:
    """Return the forms a compound's first part may stand alone in: as it is, or without a linking s, n, en, es."""
    return [part] + [part[: -len(link)] for link in ("s", "n", "en", "es", "e") if part.endswith(link)
                     and len(part) - len(link) >= MIN_PART]


def rewrite(sentence: str, language: str, rng: random.Random, vocabulary: Vocabulary | None = None) -> str | None:
    """Return sentence as a question in other words, or None when it has too few content words.

    language: "de", "en" or "none" (both languages' function words, no word forms swapped).
    """
    stop = _FUNCTION_WORDS.get(language) or _FUNCTION_WORDS["de"] | _FUNCTION_WORDS["en"]
    clauses = [[w for w in _WORD.findall(part) if _content(w, stop)] for part in _CLAUSE.split(sentence)]
    clauses = [c for c in clauses if c]
    words = [w for clause in clauses[-1:] + clauses[:-1] for w in clause]  # the last clause first
    if len(words) < MIN_CONTENT_WORDS:
        return None
    droppable = [i for i, w in enumerate(words) if w.casefold() not in _KEEP and not w[0].isdigit()]
    share = round(DROP_SHARE * len(words)) if len(words) > MIN_CONTENT_WORDS else 0
    drop = set(rng.sample(droppable, min(len(droppable), max(share, len(words) - MAX_QUERY_WORDS))))
    kept = [w for i, w in enumerate(words) if i not in drop]
    if vocabulary is not None:
        kept = [vocabulary.variant(w, language, rng) if rng.random() < VARIANT_SHARE else w for w in kept]
        if language == "de":
            kept = [part for w in kept for part in (vocabulary.split(w) if rng.random() < SPLIT_SHARE else [w])]
    query = rng.choice(_FRAMES.get(language, _FRAMES["en"])).format(" ".join(kept))
    return query if not verbatim(query, sentence) else None


def verbatim(query: str, sentence: str) -> bool:
    """Return whether query, without its question frame's punctuation, is a run of the sentence's text."""
    core = " ".join(query.rstrip("?").split()).casefold()
    return core in " ".join(sentence.split()).casefold()


def _shape(word: str) -> tuple[bool, bool]:
    """Return whether a word starts with a capital and whether it is all capitals: a German noun stays a noun."""
    return word[0].isupper(), word.isupper()


def _content(word: str, stop: frozenset[str]) -> bool:
    folded = word.casefold()
    return folded in _KEEP or (folded not in stop and (len(word) > 1 or word.isdigit()))


@functools.lru_cache(maxsize=2)
def _stemmer(language: str):
    from py_rust_stemmers import SnowballStemmer  # lazily: only synthetic query sets need it

    return SnowballStemmer(_STEMMERS[language])
