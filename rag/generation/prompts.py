"""The prompt an LLM gets: a system text, the context, the question; for a chat or for content generation.

A preset has one template per language (German and English). The question's language picks it (from its stop
words; a question without any takes the context's language, else German). A template is two strings with the
fields {context}, {question} and {label} (the source label, "Quelle"); a JSON file gives others:
{"system": "...", "user": "... {context} ... {question} ..."}.

The whole prompt is counted with cl100k (exact for OpenAI's models, an estimate for others) and checked
against the model's context window, leaving room for the answer.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path

from rag import settings
from rag.chunking import tokens
from rag.errors import ContextWindowError, InvalidSettingsError
from rag.retrieval import Context

PRESETS = ("chat", "generation")
ANSWER_RESERVE = 1024  # tokens kept free for the answer
DEFAULT_CONTEXT_WINDOW = 8192  # a model not in the table below
# Context windows of common models, in tokens (the model name without its tag or provider).
CONTEXT_WINDOWS = {
    "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4.1": 1_047_576, "gpt-4.1-mini": 1_047_576,
    "gpt-4-turbo": 128_000, "gpt-4": 8192, "gpt-3.5-turbo": 16_385, "o3-mini": 200_000,
    "llama3": 8192, "llama3.1": 131_072, "llama3.2": 131_072, "llama3.3": 131_072, "mistral": 32_768,
    "mixtral": 32_768, "mistral-nemo": 128_000, "qwen2.5": 32_768, "qwen3": 40_960, "gemma2": 8192,
    "gemma3": 131_072, "phi3": 4096, "phi4": 16_384, "deepseek-r1": 131_072,
}  # fmt: skip
FIELDS = {"context", "question", "label"}


@dataclass(frozen=True)
class Template:
    system: str
    user: str


TEMPLATES: dict[tuple[str, str], Template] = {
    ("chat", "de"): Template(
        "Du bist ein sorgfältiger Assistent. Beantworte die Frage nur mit den Informationen aus den Quellen. "
        "Belege jede Aussage mit der Nummer ihrer Quelle, z. B. [{label} 2]. Wenn die Quellen die Antwort "
        "nicht enthalten, sag das, statt zu raten. Antworte auf Deutsch.",
        "Quellen:\n\n{context}\n\nFrage: {question}",
    ),
    ("chat", "en"): Template(
        "You are a careful assistant. Answer the question only with the information in the sources. Cite "
        "every statement with the number of its source, e.g. [{label} 2]. If the sources do not hold the "
        "answer, say so instead of guessing. Answer in English.",
        "Sources:\n\n{context}\n\nQuestion: {question}",
    ),
    ("generation", "de"): Template(
        "Du schreibst Texte auf Grundlage der Quellen. Verwende nur Fakten aus den Quellen und belege sie "
        "mit [{label} N]. Gliedere den Text mit kurzen Absätzen; erfinde nichts hinzu. Schreibe auf Deutsch.",
        "Quellen:\n\n{context}\n\nAufgabe: {question}",
    ),
    ("generation", "en"): Template(
        "You write texts based on the sources. Use only facts from the sources and cite them with "
        "[{label} N]. Structure the text in short paragraphs; add nothing that is not there. Write in English.",
        "Sources:\n\n{context}\n\nTask: {question}",
    ),
}


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    language: str  # "de" | "en": the template's
    preset: str
    token_count: int  # cl100k tokens of system + user

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


def question_language(question: str, context_text: str = "") -> str:
    """Return "de" or "en": the question's language, else the context's, else German."""
    from rag.documents import detect_language  # the stop-word lists of keyword search

    for text in (question, context_text):
        language = detect_language(text)
        if language in ("de", "en"):
            return language
    return "de"


def template_for(preset: str, language: str) -> Template:
    if preset not in PRESETS:
        raise InvalidSettingsError(f"Unknown prompt preset '{preset}'. Use one of: {', '.join(PRESETS)}.")
    return TEMPLATES[(preset, language if language in ("de", "en") else "de")]


def load_template(path: str | Path) -> Template:
    """Return the template in a JSON file {"system": ..., "user": ...}; InvalidSettingsError saying what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidSettingsError(f"The template {path} cannot be read ({error.strerror}).") from None
    except ValueError as error:
        raise InvalidSettingsError(f"The template {path} is not JSON ({error}).") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("system", "user")):
        raise InvalidSettingsError(f'The template {path} needs two strings: {{"system": "...", "user": "..."}}.')
    return check_template(Template(data["system"], data["user"]))


def check_template(template: Template) -> Template:
    """Return template if its fields are known and the user text holds {context} and {question}."""
    for name, text in (("system", template.system), ("user", template.user)):
        try:
            used = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
        except ValueError as error:
            raise InvalidSettingsError(f"The {name} template is malformed ({error}); write braces as {{{{ }}}}.") \
                from None
        if used - FIELDS:
            raise InvalidSettingsError(f"The {name} template uses unknown fields {sorted(used - FIELDS)}; "
                                       f"it may use {{context}}, {{question}} and {{label}}.")
    missing = {"context", "question"} - {f for _, f, _, _ in string.Formatter().parse(template.user) if f}
    if missing:
        raise InvalidSettingsError(f"The user template needs {', '.join('{' + m + '}' for m in sorted(missing))}.")
    return template


def build_prompt(question: str, context: Context, preset: str = "chat", template: Template | None = None,
                 label: str = "Quelle") -> Prompt:
    """Return the prompt for question with the context, in the question's language (or with template)."""
    language = question_language(question, context.text)
    chosen = check_template(template) if template is not None else template_for(preset, language)
    if preset not in PRESETS:
        raise InvalidSettingsError(f"Unknown prompt preset '{preset}'. Use one of: {', '.join(PRESETS)}.")
    fields = {"context": context.text, "question": question.strip(), "label": label}
    # the context is data: it is put in as it is, never formatted itself (braces in documents stay braces)
    system = chosen.system.format_map(fields)
    user = chosen.user.format_map(fields)
    return Prompt(system, user, language, preset, tokens.count(system) + tokens.count(user))


def context_window(model: str) -> int:
    """Return the model's context window: RAG_LLM_CONTEXT_WINDOW when set, else the table, else a cautious 8192."""
    if configured := settings.load().llm_context_window:
        return configured
    name = model.lower().removeprefix("ollama:").removeprefix("openai:").split("/")[-1]
    base = name.split(":")[0]  # an Ollama tag ("llama3.1:8b") has the window of its model
    return CONTEXT_WINDOWS.get(name) or CONTEXT_WINDOWS.get(base) or DEFAULT_CONTEXT_WINDOW


def check_window(prompt: Prompt, model: str, window: int | None = None, reserve: int = ANSWER_RESERVE) -> int:
    """Return the window if the prompt leaves room for the answer in it; ContextWindowError saying what to cut."""
    window = window or context_window(model)
    if prompt.token_count + reserve > window:
        raise ContextWindowError(
            f"The prompt has {prompt.token_count} tokens, and {model} reads {window} (with {reserve} kept for the "
            f"answer). Lower the context's token budget or top_k, or set RAG_LLM_CONTEXT_WINDOW if the model "
            "reads more."
        )
    return window
