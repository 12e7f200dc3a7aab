"""Stage 6, optional: the answer an LLM gives with the context, and the sources it cites.

prompts    build_prompt: the chat and generation presets (German and English), templates, context windows
llm        chat models over HTTP: Ollama (/api/chat) and OpenAI-compatible (/v1/chat/completions), streamed
citations  which [Quelle N] an answer cites, which sources it never used, which numbers name no source
answer     retrieve -> prompt -> LLM -> citations, as one call (`rag answer`, the Context page)
"""

from __future__ import annotations

from rag.generation.answer import Answer, answer_with
from rag.generation.citations import citation_spans
from rag.generation.llm import LLM_SPECS, ChatModel, get_llm
from rag.generation.prompts import (
    PRESETS,
    Prompt,
    Template,
    build_prompt,
    load_template,
    question_language,
    template_for,
)

__all__ = ["Answer", "ChatModel", "LLM_SPECS", "PRESETS", "Prompt", "Template", "answer_with", "build_prompt",
           "citation_spans", "get_llm", "load_template", "question_language", "template_for"]
