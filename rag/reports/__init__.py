"""What the pages and the CLI show about chunks and hits, computed without any UI.

chunks   statistics, flags, overlaps, the heading tree of a document's chunks
hits     scores per source, the score threshold, neighbours of a hit
scores   score distributions over a collection, and where each query's answer ranked
embedding_map  a 2-D map of a collection's chunk embeddings with a query and its hits
evaluation_html  a sweep or an evaluation as one self-contained HTML page (charts: svg)
pages    "Show on page": a chunk's pages drawn with its text marked, or its text marked as plain text
"""

from __future__ import annotations

from rag.reports.chunks import (
    CUT_OFF,
    WINDOWED,
    ChunkReport,
    FlagSummary,
    Segment,
    chunk_reports,
    chunk_stats,
    flag_summary,
    heading_tree,
    model_text,
    overflow_flag,
    overlap_spans,
    segments,
    table_header,
    table_header_source,
    tiny_limit,
    unread_start,
)
from rag.reports.embedding_map import DEFAULT_SAMPLE, EmbeddingMap, available_methods, embedding_map
from rag.reports.evaluation_html import evaluation_report, sweep_report
from rag.reports.hits import (
    SCORE_NAMES,
    SCORE_SHORT,
    SearchOutcome,
    apply_threshold,
    explanation,
    keywords,
    neighbours,
    rrf_sum,
    score_kind,
    score_name,
    source_scores,
    threshold_scale,
)
from rag.reports.pages import (
    CHUNK_CLOSE,
    CHUNK_OPEN,
    MARK_CLOSE,
    MARK_OPEN,
    PagePicture,
    child_boxes,
    child_span,
    chunk_boxes,
    draw_pages,
    hit_pages,
    is_pdf,
    located_boxes,
    marked_text,
    text_marked,
)
from rag.reports.scores import ScoreDistribution, distribution_of, rank_rows, score_distribution

__all__ = ["CHUNK_CLOSE", "CHUNK_OPEN", "CUT_OFF", "ChunkReport", "DEFAULT_SAMPLE", "EmbeddingMap", "FlagSummary",
           "MARK_CLOSE", "MARK_OPEN", "PagePicture", "SCORE_NAMES", "SCORE_SHORT", "ScoreDistribution",
           "SearchOutcome", "Segment", "WINDOWED", "apply_threshold", "available_methods", "child_boxes", "child_span",
           "chunk_boxes", "chunk_reports", "chunk_stats", "distribution_of", "draw_pages", "embedding_map",
           "evaluation_report", "explanation", "flag_summary", "heading_tree", "hit_pages", "is_pdf", "keywords",
           "located_boxes", "marked_text", "model_text", "neighbours", "overflow_flag", "overlap_spans", "rank_rows",
           "rrf_sum", "score_distribution", "score_kind", "score_name", "segments", "source_scores", "sweep_report",
           "table_header", "table_header_source", "text_marked", "threshold_scale", "tiny_limit", "unread_start"]
