"""Why was it missed? Each question's relevant chunks through every stage of retrieval (the diagnosis).

stages  a question's funnel, lost_at, misses per stage   rankings  where each chunk ranked at each stage
"""

from __future__ import annotations

from rag.evaluation.funnel.rankings import Rankings, relevant_chunks
from rag.evaluation.funnel.stages import (
           RANKED,
           STAGES,
           ChunkStages,
           Explanation,
           Funnel,
           FunnelSummary,
           evaluation_funnels,
           explain_chunk,
           query_rankings,
           summarize,
)
from rag.evaluation.funnel.verdicts import absent_note, verdict
from rag.retrieval import CANDIDATES  # the depth every stage is ranked to

__all__ = ["CANDIDATES", "ChunkStages", "Explanation", "Funnel", "FunnelSummary", "RANKED", "Rankings", "STAGES",
           "absent_note", "evaluation_funnels", "explain_chunk", "query_rankings", "relevant_chunks", "summarize",
           "verdict"]
