"""query -> context -> prompt -> the LLM's answer -> its citations: what `rag answer` and the Context page run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag.generation.citations import Citations, citations
from rag.generation.llm import ChatModel
from rag.generation.prompts import Prompt, Template, build_prompt, check_window
from rag.retrieval import Context


@dataclass(frozen=True)
class Answer:
    text: str
    model: str
    prompt: Prompt
    context: Context
    citations: Citations
    context_window: int

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON of `rag answer --json`: answer, citations, context, prompt_tokens, model and more."""
        return {"answer": self.text, **self.citations.to_dict(), "context": self.context.to_dict(),
                "prompt_tokens": self.prompt.token_count, "model": self.model, "preset": self.prompt.preset,
                "language": self.prompt.language, "context_window": self.context_window}


def answer_with(llm: ChatModel, question: str, context: Context, preset: str = "chat",
                template: Template | None = None, label: str = "Quelle",
                on_text: Callable[[str], None] | None = None, window: int | None = None) -> Answer:
    """Return the LLM's answer to question with the context; on_text gets each piece as it streams in.

    The prompt is checked against the model's context window before anything is sent.
    """
    prompt = build_prompt(question, context, preset, template, label)
    window = check_window(prompt, llm.model, window)
    pieces = []
    for piece in llm.stream(prompt.messages):
        pieces.append(piece)
        if on_text is not None:
            on_text(piece)
    text = "".join(pieces).strip()
    return Answer(text, llm.model_id, prompt, context, citations(text, context, label), window)
