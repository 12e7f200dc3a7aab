"""Synthetic query sets: questions made from the documents' own text, each with an answer span verified in it.

For documents without labelled questions. Two methods:

- "sentence" (no LLM): usable sentences (rag.evaluation.synthetic.sentences) are picked spread over each document
  (seeded), each rewritten as a query that is not a verbatim copy of it (rag.evaluation.synthetic.rewrite); the answer
  is the sentence's own span, so a chunk is relevant when it holds the sentence the query came from. (Not the
  passage around it: a passage spans several small chunks, any of which would count, and small chunk sizes
  would look better than they are.)
- "llm:<spec>": a chat model gets the passage around such a sentence and writes a question with its answer
  quoted from the passage (rag.evaluation.synthetic.llm); a reply whose answer is not found in the passage, or
  whose question is not in the passage's language, is dropped (counted by reason in SyntheticSet.rejected) and
  another passage is tried.

What such a set measures: whether retrieval finds the place a sentence or question came from when it is asked
in other words, a lower bound on the vocabulary mismatch real questions bring; comparable between
configurations (chunk_size, overlap, mode) on the same documents. What it does not: real users' questions and
wording, questions that need several passages, questions the documents do not answer, or absolute quality.

A line: {"query", "document" (title), "answer" (exact text of Document.text), "answer_start", "synthetic": true,
"method", "passage_start", "passage_end"}; every answer is checked against its document's text when the line is
made and again when it is written.
"""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag.documents import Document, detect_language
from rag.errors import InvalidSettingsError, SyntheticQueriesError
from rag.evaluation.synthetic.llm import WRONG_LANGUAGE, Asked, ask
from rag.evaluation.synthetic.rewrite import Vocabulary, rewrite
from rag.evaluation.synthetic.sentences import Sentence, SentencePool, sentence_pools
from rag.generation import ChatModel
from rag.words import counted, plural

DEFAULT_COUNT = 50
SENTENCE = "sentence"
SENTENCE_BIAS = ("Rewritten sentences keep their passage's own words, so keyword (BM25) search finds them easily: "
                 "compare chunk sizes and overlaps within one search mode; compare modes on an LLM's questions "
                 "(--llm) or real ones.")
ProgressCallback = Callable[[int, int, str], None]  # (queries made, queries asked for, what is being done)


@dataclass(frozen=True)
class SyntheticQuery:
    query: str
    document: str  # the title, as the query set names it
    document_id: str
    answer: str  # == text[answer_start : answer_start + len(answer)] of the document
    answer_start: int
    passage_start: int
    passage_end: int
    method: str

    def line(self) -> dict:
        """Return the query-set line (rag.evaluation.querysets.queries), marked synthetic."""
        return {"query": self.query, "document": self.document, "answer": self.answer,
                "answer_start": self.answer_start, "synthetic": True, "method": self.method,
                "passage_start": self.passage_start, "passage_end": self.passage_end}


@dataclass(frozen=True)
class SyntheticSet:
    queries: tuple[SyntheticQuery, ...]
    documents: tuple[Document, ...]
    requested: int
    method: str
    notes: tuple[str, ...] = ()
    rejected: dict[str, int] = field(default_factory=dict)  # LLM replies dropped, per reason (synthetic_llm)
    asked: int = 0  # questions put to the LLM (0 without one)

    @property
    def wrong_language(self) -> int:
        """Return how many LLM questions were dropped for not being in their passage's language."""
        return self.rejected.get(WRONG_LANGUAGE, 0)

    def summary(self) -> dict:
        """Return what `rag make-queries --json` prints about the set (the lines themselves are in the file)."""
        return {"queries": len(self.queries), "requested": self.requested, "method": self.method,
                "documents": self.counts(), "asked": self.asked, "rejected": dict(self.rejected),
                "wrong_language": self.wrong_language, "notes": list(self.notes)}

    def counts(self) -> dict[str, int]:
        """Return the number of queries per document title, in the documents' order."""
        made = Counter(q.document for q in self.queries)
        return {d.title: made[d.title] for d in self.documents}

    def jsonl(self) -> str:
        """Return the set as JSONL after checking every span against its document's text once more."""
        return self._checked_jsonl

    @functools.cached_property
    def _checked_jsonl(self) -> str:  # once per set: the Evaluate page asks for it on every rerun
        texts = {d.id: d.text for d in self.documents}
        wrong = [q for q in self.queries if not _holds(texts.get(q.document_id), q.answer_start, q.answer)]
        if wrong:  # never happens unless this module has a bug; an unverified line is never written
            raise SyntheticQueriesError(f"{counted(len(wrong), 'synthetic answer span')} "
                                        f"{plural(len(wrong), 'does', 'do')} not match their document's text "
                                        f"(first: {wrong[0].document} at {wrong[0].answer_start}); nothing written.")
        return "".join(json.dumps(q.line(), ensure_ascii=False) + "\n" for q in self.queries)


def make_queries(documents: Sequence[Document], count: int = DEFAULT_COUNT, *, seed: int = 0,
                 llm: ChatModel | None = None, progress: ProgressCallback | None = None) -> SyntheticSet:
    """Return up to count synthetic queries over documents, spread by their length; notes say what fell short.

    Without llm, sentences are rewritten (reproducible with seed); with it, the LLM asks the questions. A
    failing LLM raises its LLMError; SyntheticQueriesError when no query at all could be made.
    """
    if count < 1:
        raise InvalidSettingsError(f"The number of queries must be at least 1, got {count}.")
    documents, notes = _distinct(documents)
    pools = sentence_pools(documents)
    languages = [detect_language(d.text) for d in documents]
    failed, tried = Counter(), 0
    if llm is None:
        sources = _rewritten(documents, pools, languages, seed)
        queries = _from_sentences(sources, count, seed)
    else:
        sources = [Source(d, language, _one_per_passage(p.usable), Counter(p.rejected))
                   for d, p, language in zip(documents, pools, languages, strict=True)]
        queries, failed, tried = _from_llm(sources, count, seed, llm, progress or _quiet)
        if failed:
            notes.append(f"{sum(failed.values())} of {tried} LLM replies were not usable ({_reasons(failed)}); "
                         "those passages were skipped.")
    if not queries:
        names = ", ".join(d.title for d in documents) or "no document"
        raise SyntheticQueriesError(f"No synthetic query could be made from {names}: "
                                    + " ".join(notes + _empty(sources, queries, count)))
    notes += _empty(sources, queries, count) + _shortfall(sources, queries, count, "sentences" if llm is None
                                                          else "passages")
    order = {d.id: i for i, d in enumerate(documents)}
    queries.sort(key=lambda q: (order[q.document_id], q.answer_start))
    method = SENTENCE if llm is None else f"llm:{llm.model_id}"
    rejected = {reason: n for reason, n in failed.most_common()}
    return SyntheticSet(tuple(queries), tuple(documents), count, method, tuple(notes), rejected, tried)


@dataclass
class Source:
    """A document with what can become its queries (sentences, or sentences with their rewrite) and what not."""

    document: Document
    language: str
    usable: list
    rejected: Counter
    asked: int = 0  # questions put to the LLM about its passages


def _rewritten(documents: Sequence[Document], pools: Sequence[SentencePool], languages: Sequence[str],
               seed: int) -> list[Source]:
    """Return each document's usable sentences with their rewrites; one too thin to rewrite is left out."""
    vocabulary = Vocabulary(zip((d.text for d in documents), languages, strict=True))
    sources = []
    for document, pool, language in zip(documents, pools, languages, strict=True):
        rewritten = [(s, rewrite(document.text[s.start:s.end], language,
                                 random.Random(f"{seed}:{document.id}:{s.start}"), vocabulary))
                     for s in pool.usable]
        thin = Counter({"few content words": sum(not q for _, q in rewritten)})
        sources.append(Source(document, language, [(s, q) for s, q in rewritten if q], Counter(pool.rejected) + thin))
    return sources


def _from_sentences(sources: Sequence[Source], count: int, seed: int) -> list[SyntheticQuery]:
    """Return each document's share of the rewritten sentences as queries, spread over the document."""
    quotas = allocate(count, [len(s.document.text) for s in sources], [len(s.usable) for s in sources])
    queries = []
    for source, quota in zip(sources, quotas, strict=True):
        picked = spread(source.usable, quota, random.Random(f"{seed}:{source.document.id}"))[:quota]
        queries += [_query(source.document, s, s.start, s.end, q, SENTENCE) for s, q in picked]
    return queries


def _from_llm(sources: Sequence[Source], count: int, seed: int, llm: ChatModel, progress: ProgressCallback
              ) -> tuple[list[SyntheticQuery], Counter, int]:
    """Return the LLM's questions on passages spread over the documents, why replies failed, and how many were
    asked; a passage whose reply is unusable is replaced by another, at most 2 * count + 10 questions in all."""
    weights = [len(s.document.text) for s in sources]
    quotas = allocate(count, weights, [len(s.usable) for s in sources])
    orders = [spread(s.usable, q, random.Random(f"{seed}:{s.document.id}")) for s, q in zip(sources, quotas,
                                                                                            strict=True)]
    made: list[list[SyntheticQuery]] = [[] for _ in sources]
    tried, failed, budget = [0] * len(sources), Counter(), 2 * count + 10
    while True:
        for i, (source, order) in enumerate(zip(sources, orders, strict=True)):
            document = source.document
            while len(made[i]) < quotas[i] and tried[i] < len(order) and sum(tried) < budget:
                sentence = order[tried[i]]
                tried[i] += 1
                progress(sum(map(len, made)), count, f"{document.title}: asking {llm.model_id} about the passage "
                         f"at character {sentence.passage_start}")
                asked = ask(llm, document.text, sentence.passage_start, sentence.passage_end, source.language)
                if not asked.reason and any(q.answer_start == asked.start and len(q.answer) == asked.end - asked.start
                                            for q in made[i]):
                    asked = Asked(reason="answer already used")
                if asked.reason:
                    failed[asked.reason] += 1
                    continue
                made[i].append(_query(document, sentence, asked.start, asked.end, asked.question,
                                      f"llm:{llm.model_id}"))
        short = count - sum(map(len, made))
        spare = [len(o) - t for o, t in zip(orders, tried, strict=True)]
        if not short or not any(spare) or sum(tried) >= budget:
            break
        quotas = [q + extra for q, extra in zip(quotas, allocate(short, weights, spare), strict=True)]
    for source, asked in zip(sources, tried, strict=True):
        source.asked = asked
    return [q for of_document in made for q in of_document], failed, sum(tried)


def _one_per_passage(sentences: Sequence[Sentence]) -> list[Sentence]:
    """Return the sentences whose passage no sentence before them has: an LLM is asked about a passage once."""
    seen: set[tuple[int, int]] = set()
    kept = []
    for sentence in sentences:
        if (sentence.passage_start, sentence.passage_end) not in seen:
            seen.add((sentence.passage_start, sentence.passage_end))
            kept.append(sentence)
    return kept


def _empty(sources: Sequence[Source], queries: Sequence[SyntheticQuery], count: int) -> list[str]:
    """Return a note for each document that gave no query, saying why."""
    used = {q.document_id for q in queries}
    notes = []
    for source in sources:
        title = source.document.title
        if source.document.id in used:
            continue
        if not source.usable:
            notes.append(f"{title}: no sentence could become a query ({_reasons(source.rejected)}).")
        elif source.asked:
            notes.append(f"{title}: no usable reply about any of the {source.asked} passages asked about.")
        else:
            notes.append(f"{title}: no query; its share of the {count} by length is below one.")
    return notes


def _shortfall(sources: Sequence[Source], queries: Sequence[SyntheticQuery], count: int, unit: str) -> list[str]:
    """Return a note on a set smaller than asked for: how many sentences (passages) each document had, and why."""
    if len(queries) >= count:
        return []
    used = Counter(q.document_id for q in queries)
    usable = "; ".join(f"{s.document.title}: {len(s.usable)} usable, {used[s.document.id]} used, left out: "
                       f"{_reasons(s.rejected, 'none')}" for s in sources)
    return [f"Made {len(queries)} of the {count} queries asked for: the documents have no more usable {unit} "
            f"({usable})."]


def allocate(count: int, weights: Sequence[float], capacities: Sequence[int]) -> list[int]:
    """Return count split over items in proportion to weights (largest remainder), none above its capacity."""
    quotas = [0] * len(weights)
    left = count
    active = [i for i, c in enumerate(capacities) if c > 0 and weights[i] > 0]
    while left > 0 and active:
        total = sum(weights[i] for i in active)
        shares = {i: left * weights[i] / total for i in active}
        share = {i: int(shares[i]) for i in active}
        for i in sorted(active, key=lambda i: (share[i] - shares[i], i))[: left - sum(share.values())]:
            share[i] += 1
        for i in active:
            taken = min(share[i], capacities[i] - quotas[i])
            quotas[i] += taken
            left -= taken
        active = [i for i in active if quotas[i] < capacities[i]]
    return quotas


def spread(items: list, k: int, rng: random.Random) -> list:
    """Return items reordered: one at random from each of k equal stretches first, then the rest shuffled."""
    n = len(items)
    k = min(k, n)
    picks = [j * n // k + rng.randrange((j + 1) * n // k - j * n // k) for j in range(k)]
    chosen = set(picks)
    rest = [i for i in range(n) if i not in chosen]
    rng.shuffle(rest)
    return [items[i] for i in picks + rest]


def _query(document: Document, sentence: Sentence, start: int, end: int, query: str, method: str) -> SyntheticQuery:
    answer = document.text[start:end]
    if not answer.strip() or not _holds(document.text, start, answer):
        raise AssertionError(f"span {start}:{end} of {document.title} is not its answer")
    return SyntheticQuery(query, document.title, document.id, answer, start, sentence.passage_start,
                          sentence.passage_end, method)


def _holds(text: str | None, start: int, answer: str) -> bool:
    return text is not None and start >= 0 and text[start : start + len(answer)] == answer


def _distinct(documents: Sequence[Document]) -> tuple[list[Document], list[str]]:
    """Return the documents once each (by content), the first of each title; notes name those left out."""
    kept, notes, ids, titles = [], [], set(), set()
    for document in documents:
        if document.id in ids:
            continue
        if document.title in titles:
            notes.append(f"Two documents are named {document.title}: a query set names documents by title, so "
                         "only the first is used. Rename one to use both.")
            continue
        ids.add(document.id)
        titles.add(document.title)
        kept.append(document)
    return kept, notes


def _reasons(counts: dict[str, int], none: str = "it has no text") -> str:
    """Return the reasons counted, most frequent first, or none when nothing was counted."""
    return ", ".join(f"{reason}: {n}" for reason, n in Counter(counts).most_common() if n) or none


def _quiet(done: int, total: int, message: str) -> None:
    pass
