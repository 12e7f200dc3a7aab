"""What a sweep reports: configurations, progress events, one row per configuration and search mode, the best.

A row is a configuration (chunk_size, overlap, strategy) searched in one mode (rag.evaluation.metrics.modes). The
modes of a configuration share its collection, so the collection is built once: the first mode's row
carries the chunking, embedding and indexing seconds, every row its own searching seconds, and sums over
rows stay true.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rag.chunking import ChunkSettings
from rag.embeddings import time_left
from rag.evaluation.metrics import ALPHA, Evaluation, PairedDifference, SearchMode, p_words, paired_difference
from rag.evaluation.sweeps.rerank_effect import Pair, effect_json, effect_words, rerank_pairs
from rag.words import counted

if TYPE_CHECKING:  # rag.evaluation.funnel.stages searches through rag.evaluation.sweeps.sweep, which makes these rows
    from rag.evaluation.funnel import Funnel, FunnelSummary

STAGES = ("chunking", "embedding", "indexing", "searching")  # the time split of every configuration


@dataclass(frozen=True)
class SweepConfig:
    chunk_size: int
    overlap: int
    strategy: str = "structure"
    chunk_headers: bool = False  # embedded and keyword-indexed with title and heading path (rag.chunking.headers)
    child_size: int = 0  # parent–child search: tokens per child (rag.chunking.children); 0 = the chunks are searched

    @property
    def settings(self) -> ChunkSettings:
        return ChunkSettings(self.chunk_size, self.overlap, self.strategy)

    @property
    def short(self) -> str:
        """Return the configuration as analysts write it, e.g. "400/50" (with the strategy if not structure)."""
        strategy = f" {self.strategy}" if self.strategy != "structure" else ""
        return (f"{self.chunk_size}/{self.overlap}{strategy}" + (" +headers" if self.chunk_headers else "")
                + (f" child {self.child_size}" if self.child_size else ""))

    @property
    def label(self) -> str:
        """Return the configuration in words, e.g. "chunk_size 400, overlap 50"."""
        extra = f", {self.strategy}" if self.strategy != "structure" else ""
        extra += ", chunk headers" if self.chunk_headers else ""
        extra += f", child_size {self.child_size}" if self.child_size else ""
        return f"chunk_size {self.chunk_size}, overlap {self.overlap}{extra}"


@dataclass(frozen=True)
class SweepProgress:
    """One step of a sweep, for a progress bar: the stage, the configuration, units done, the time left.

    Events come on the thread that called run_sweep, also for a configuration embedded ahead in the
    background (rag.evaluation.sweeps.sweep), so a page can draw them; with embedding ahead, events of two
    configurations interleave, and `fraction` still only grows (the sweep passes `floor`, the share reached).
    """

    stage: str  # "chunking" (config None: every configuration, first), "queries", then per configuration
    # "embedding", "indexing", "searching" (all its modes) and "done"
    config_index: int  # 0-based
    configs: int
    config: SweepConfig | None
    done: int = 0  # units of the stage done (texts for embedding, modes for searching, 0/1 otherwise)
    total: int = 1
    message: str = ""
    seconds_left: float | None = None  # estimate (rag.embeddings.pace); None until a rate has been measured
    floor: float = 0.0  # the share of the sweep an earlier event reported: fraction never goes below it

    @property
    def fraction(self) -> float:
        """Return how much of the whole sweep is done, 0.0 - 1.0 (for a progress bar)."""
        if self.stage == "queries" or not self.configs:
            return self.floor
        if self.stage == "done":
            return max((self.config_index + 1) / self.configs, self.floor)
        within = (STAGES.index(self.stage) + (self.done / self.total if self.total else 1.0)) / len(STAGES)
        return max(min((self.config_index + within) / self.configs, 1.0), self.floor)

    @property
    def time_left(self) -> str:
        """Return the estimate in words, e.g. "about 2 min left", "about 40 s left" ("" when there is none)."""
        return time_left(self.seconds_left)

    @property
    def status(self) -> str:
        """Return the event in words with the texts embedded and the time left, e.g. "chunk_size 350, overlap 50:
        embedding 40/126 · about 2 min left"."""
        counted = f"{self.message} {self.done}/{self.total}" if self.stage == "embedding" and self.total else ""
        return " · ".join(part for part in (counted or self.message, self.time_left) if part)


@dataclass
class ConfigResult:
    config: SweepConfig
    collection: str
    evaluation: Evaluation
    chunks: int
    mean_tokens: float
    seconds: dict[str, float]  # one entry per STAGES (building: only in the first mode's row, see above)
    reused: bool  # the collection already held these chunks: nothing embedded or indexed
    embedded: int  # chunks the embedder had to embed (the rest came from the cache); 0 in later mode rows
    mode: SearchMode = field(default_factory=SearchMode)
    cut_share: float = 0.0  # share of chunks longer than the model reads: their ends are never embedded
    funnels: tuple[Funnel, ...] | None = None  # each question's funnel at funnel.k (rag.evaluation.sweeps.sweep_funnel)
    funnel: FunnelSummary | None = None  # the misses per stage of funnels
    embedder: str = ""  # the row's model id where a sweep compares embedders (merge_sweeps), else ""

    @property
    def metrics(self) -> dict[str, float]:
        return self.evaluation.metrics

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    @property
    def label(self) -> str:
        """Return the row in words, e.g. "chunk_size 400, overlap 50, hybrid-rrf search" (", by <model>" where a
        sweep compares embedders)."""
        return f"{self.config.label}, {self.mode.label} search" + (f", by {self.embedder}" if self.embedder else "")

    @property
    def short(self) -> str:
        """Return the row as analysts write it, e.g. "400/50 hybrid-rrf" ("400/50 hybrid-rrf <model>" where a sweep
        compares embedders)."""
        return f"{self.config.short} {self.mode.label}" + (f" {self.embedder}" if self.embedder else "")

    def to_json(self) -> dict:
        """Return one row of the sweep: configuration, mode, metrics, chunk count, mean tokens and times."""
        return {"chunk_size": self.config.chunk_size, "overlap": self.config.overlap,
                "strategy": self.config.strategy, "chunk_headers": self.config.chunk_headers,
                "child_size": self.config.child_size, "mode": self.mode.mode, "fusion": self.mode.fusion_used,
                "rerank": self.mode.rerank, **({"embedder": self.embedder} if self.embedder else {}),
                "collection": self.collection, "chunks": self.chunks, "mean_tokens": round(self.mean_tokens, 1),
                "metrics": dict(self.metrics),
                "intervals": {k: list(v) for k, v in self.evaluation.intervals.items()},
                "reused": self.reused, "embedded": self.embedded,
                "cut_by_model": round(self.cut_share, 4),
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "total_seconds": round(self.total_seconds, 3),
                "funnel": self.funnel.to_json() if self.funnel else None}

    def per_query_json(self) -> list[dict]:
        """Return each question's outcome as `rag eval --json` gives it, with its "stages" and "lost_at" once traced."""
        entries = self.evaluation.to_json()["per_query"]
        for entry, funnel in zip(entries, self.funnels or (), strict=False):
            entry.update(funnel.to_json())
        return entries


@dataclass(frozen=True)
class Standing:
    """A row's standing on a metric: "best", "tie" (a paired test cannot tell it from the best) or "worse" (it can).

    test is the row's paired difference from the best (None for the best itself).
    """

    row: ConfigResult
    mark: str
    test: PairedDifference | None

    def words(self, form: str = "{mark} ({why})") -> str:
        """Return the standing in words: "best", "tie (p = 0.35)", "tie (too few differ)" or "worse (p = 0.01)"
        (form: a tie's or a worse row's)."""
        if self.test is None:
            return self.mark
        why = "too few differ" if self.test.too_few_differ else p_words(self.test.p_value)
        return form.format(mark=self.mark, why=why)


@dataclass
class SweepResult:
    results: list[ConfigResult]
    embedder: str
    ks: tuple[int, ...]
    queries: int
    documents: list[str]  # titles
    query_seconds: float  # embedding the queries, once for all configurations
    skipped: list[str] = field(default_factory=list)  # notes on configurations left out
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    rerank: dict | None = None  # the reranker of the "+rerank" rows: spec, depth, scale (rag.rerank.describe)
    seconds: float | None = None  # the run's wall time (run_sweep's): its one total, in the report, runs and pages
    collection: str | None = None  # the collection the documents were read from (run_sweep's), else None
    _tested: dict[str, list] = field(default_factory=dict, init=False, repr=False, compare=False)  # metric -> tests

    @property
    def modes(self) -> list[str]:
        """Return the mode labels of the rows, each once, in order ("dense", "hybrid-rrf", ...)."""
        return list(dict.fromkeys(r.mode.label for r in self.results))

    def default_metric(self) -> str:
        return f"mrr@{self.ks[-1]}"

    def configuration_runs(self) -> list[list[ConfigResult]]:
        """Return the rows grouped by configuration run: one list per chunking, its modes in order.

        A configuration's modes share its collection and one search round trip, so its time is the run's: the
        first mode's row holds the chunking, embedding and indexing, the others only their own scoring.
        """
        runs: list[list[ConfigResult]] = []
        for row in self.results:
            if runs and runs[-1][-1].config == row.config and runs[-1][-1].collection == row.collection:
                runs[-1].append(row)
            else:
                runs.append([row])
        return runs

    def best(self, metric: str | None = None) -> ConfigResult | None:
        """Return the row with the highest metric (ties: higher hit@max k, then fewer chunks, then the first)."""
        metric = metric or self.default_metric()
        hit = f"hit@{self.ks[-1]}"
        return max(self.results, key=lambda r: (r.metrics[metric], r.metrics[hit], -r.chunks), default=None)

    def paired(self, row: ConfigResult, metric: str | None = None) -> PairedDifference:
        """Return row minus the best row on metric, paired over the sweep's queries (rag.evaluation.metrics.paired)."""
        metric = metric or self.default_metric()
        best = self.best(metric)
        return paired_difference(best.evaluation.values(metric), row.evaluation.values(metric))

    def ties(self, metric: str | None = None) -> list[tuple[ConfigResult, PairedDifference]]:
        """Return the rows a paired test cannot tell apart from the best at ALPHA, closest first, with the test."""
        tied = [(row, test) for row, test in self._tests(metric) if test.tied]
        return sorted(tied, key=lambda pair: -pair[1].difference)

    def _tests(self, metric: str | None = None) -> list[tuple[ConfigResult, PairedDifference]]:
        """Return every row but the best with its paired difference from the best, in row order."""
        metric = metric or self.default_metric()
        if metric not in self._tested:  # a page draws them several times per run: test each row once
            best = self.best(metric)
            self._tested[metric] = [(row, self.paired(row, metric)) for row in self.results if row is not best]
        return self._tested[metric]

    def standing(self, metric: str | None = None) -> list[Standing]:
        """Return each row's standing on metric (best, tie or the rest, with its paired test), in row order."""
        best, tests = self.best(metric), iter(test for _, test in self._tests(metric))  # every row but the best
        return [Standing(row, "best", None) if row is best else Standing(row, "tie" if test.tied else "worse", test)
                for row in self.results for test in [None if row is best else next(tests)]]

    def tie_summary(self, metric: str | None = None) -> str:
        """Return best and ties in words, e.g. "400/0 dense and 200/50 dense are indistinguishable on ..."."""
        metric = metric or self.default_metric()
        best = self.best(metric)
        if best is None:
            return ""
        ties = self.ties(metric)
        on = f"on these {self.queries} queries (paired test, {ALPHA:.0%} level)"
        if len(self.results) == 1:
            return f"Only one configuration was run: {best.short}; nothing to compare it with."
        if not ties:
            return (f"{best.short} is the best by {metric}, and every other configuration is worse {on}, each "
                    "tested against it one by one.")
        names: list[str] = []
        for name in [best.short] + [row.short for row, _ in ties]:
            names.append(f"{name} (again)" if name in names else name)
        shown = _listed(names)
        row, test = ties[0]
        lead, low, high = (0.0 - v for v in (test.difference, test.high, test.low))  # 0.0 - v: no "-0.000"
        if f"{lead:.3f}" == "0.000":  # a lead that rounds away is no lead at the precision shown
            same = "score the same" if lead == 0 else "are equal at three decimals"
            lead_words = f"{best.short} and {names[1]} {same} ({metric} {best.metrics[metric]:.3f}; the difference's "
        else:
            lead_words = f"{best.short} is ahead of {names[1]} by {lead:.3f} ("
        words = [f"{shown} are indistinguishable by {metric} {on}: {lead_words}95 % interval {low:.3f} to "
                 f"{high:.3f}, {p_words(test.p_value)})."]
        few = [name for name, (_, tie) in zip(names[1:], ties, strict=True) if tie.too_few_differ]
        if few:
            words.append(f"Too few questions differ to tell for {_listed(few)}: 5 or fewer questions score "
                         f"differently from {best.short}, and no paired test can decide on so few.")
        return " ".join([*words, *self._tie_breakers(best, [row for row, _ in ties])])

    @staticmethod
    def _tie_breakers(best: ConfigResult, ties: list[ConfigResult]) -> list[str]:
        """Return what may decide among tied rows: chunks the model reads whole, smaller chunks."""
        rows = [best, *ties]
        notes = []
        whole = [r for r in ties if r.cut_share == 0]
        if best.cut_share > 0 and whole:
            notes.append(f"{whole[0].short} embeds every chunk fully ({best.cut_share:.0%} of {best.short}'s chunks "
                         "are cut by the model).")
        smallest = min(rows, key=lambda r: r.mean_tokens)
        if smallest is not best and smallest.mean_tokens < 0.8 * best.mean_tokens:
            notes.append(f"{smallest.short} has the smallest chunks ({smallest.mean_tokens:.0f} tokens on average, "
                         f"{best.short} {best.mean_tokens:.0f}): more of them fit a context budget.")
        return notes

    def summary(self, metric: str | None = None) -> str:
        """Return the best row in words, e.g. "Best by mrr@10: chunk_size 400, overlap 50, dense search (...)"."""
        metric = metric or self.default_metric()
        best = self.best(metric)
        if best is None:
            return "No configuration was run."
        hit = f"hit@{self.ks[-1]}"
        also = f", {hit} {best.metrics[hit]:.3f}" if hit != metric else ""
        words = (f"Best by {metric}: {best.label} ({metric} {best.metrics[metric]:.3f}{also}; "
                 f"{counted(best.chunks, 'chunk')} of {best.mean_tokens:.0f} tokens on average).")
        if best.cut_share > 0:
            words += (f" But {best.cut_share:.0%} of its chunks are longer than {self.embedder} reads: their ends are "
                      "never embedded, so dense search cannot find what they say there.")
        return words

    def notes(self) -> list[str]:
        """Return what a reader of the metrics must know: configurations whose hit@k is 1 by construction."""
        notes, seen = [], set()
        k = self.ks[-1]
        for row in self.results:
            if row.config in seen or row.chunks > k:
                continue
            seen.add(row.config)
            notes.append(f"{row.config.label}: {counted(row.chunks, 'chunk')}, at most k = {k}: every chunk is "
                         f"returned, so "
                         f"hit@{k} and recall@{k} are 1 by construction, not by retrieval.")
        return notes

    def rerank_effect(self, metric: str | None = None) -> list[Pair]:
        """Return each row with rerank paired with its row without: (off, on, on minus off), see rerank_effect."""
        return rerank_pairs(self.results, metric or self.default_metric())

    def to_json(self, per_query: bool = False) -> dict:
        """Return the whole sweep: embedder, date, ks, modes, the rows (each query's outcome if asked), the best
        and its ties (rows as in "configs", each with "paired": its difference from the best)."""
        best, metric = self.best(), self.default_metric()
        configs = [r.to_json() | ({"per_query": r.per_query_json()} if per_query else {}) for r in self.results]
        ties = [row.to_json() | {"paired": test.to_json()} for row, test in self.ties(metric)] if best else []
        return {"embedder": self.embedder, "created_at": self.created_at, "ks": list(self.ks), "modes": self.modes,
                "queries": self.queries, "documents": self.documents, "query_seconds": round(self.query_seconds, 3),
                "seconds": None if self.seconds is None else round(self.seconds, 3), "skipped": self.skipped,
                "configs": configs,
                "best": best.to_json() | {"by": metric} if best else None, "ties": ties,
                "tie_test": {"by": metric, "alpha": ALPHA, "test": "paired sign-flip permutation test over the "
                             "queries; interval: the same test inverted, every shift of the difference (tie minus "
                             "best) it does not reject, so it holds 0 exactly for a tie"},
                "tie_summary": self.tie_summary(metric),
                "rerank": self.rerank and self.rerank | {"effect": effect_json(self.rerank_effect(metric), metric),
                                                         "summary": effect_words(self.rerank_effect(metric), metric)},
                "funnel": self.funnel_json()}

    def funnel_json(self) -> dict | None:
        """Return the best row's funnel: its misses per stage and each missed question's stages (None: not traced)."""
        best = self.best()
        if best is None or best.funnel is None:
            return None
        missed = [{"query": f.query.text, **f.to_json()} for f in best.funnels or () if f.lost_at is not None]
        return {"row": best.short, "collection": best.collection, **best.funnel.to_json(), "missed": missed}

    def table(self) -> list[dict]:
        """Return one flat row per configuration and mode (for CSV): settings, embedder, date, metrics, times."""
        return [{"chunk_size": r.config.chunk_size, "overlap": r.config.overlap, "strategy": r.config.strategy,
                 "mode": r.mode.label, "embedder": self.embedder, "created_at": self.created_at, "chunks": r.chunks,
                 "mean_tokens": round(r.mean_tokens, 1), "cut_by_model": round(r.cut_share, 4), **r.metrics,
                 **{f"{stage}_seconds": round(r.seconds[stage], 3) for stage in STAGES},
                 "total_seconds": round(r.total_seconds, 3), "collection": r.collection}
                for r in self.results]


def _listed(names: list[str], most: int = 5) -> str:
    """Return "a, b and c" (beyond most names: "a, b, c, d and 3 more")."""
    if len(names) > most:
        return ", ".join(names[: most - 1]) + f" and {len(names) - most + 1} more"
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def merge_sweeps(results: list[SweepResult]) -> SweepResult:
    """Return one sweep of the rows of several, each row marked with its sweep's embedder (`rag sweep --embedder
    local,local:fp32`): the same documents and queries, so every row is paired with the best like any other."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    rows = []
    for result in results:
        for row in result.results:
            row.embedder = result.embedder
            rows.append(row)
    seconds = [r.seconds for r in results]
    notes = list(dict.fromkeys(n for r in results for n in r.skipped))
    return SweepResult(rows, ", ".join(r.embedder for r in results), first.ks, first.queries, first.documents,
                       sum(r.query_seconds for r in results), notes,
                       rerank=first.rerank, seconds=None if None in seconds else sum(seconds),
                       collection=first.collection)
