"""An LLM's question about one passage, and where its quoted answer is in the document's text.

The chat model gets the passage and is asked for JSON: {"question": "...", "answer": "<quoted verbatim>"}. The
answer is looked for in the passage exactly, then ignoring differences in whitespace (a line break where the
model wrote a space), and mapped back to the document's own offsets. A reply that is not such JSON, whose
answer is not in the passage, or whose question copies the passage, gives a reason instead of a query: the
caller skips that passage and goes on. A failing server raises its LLMError leaf (rag.generation.llm).

Language: the question is asked for in the passage's language, and a question in another one is rejected
(WRONG_LANGUAGE), so German documents get German questions. Both are told by the rule keyword search uses to
tell a document's language (rag.documents.detect_language: which language's stop words it uses more); a
passage with neither language's stop words takes the document's, and a question with neither (too short to
tell) is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from rag.documents import detect_language
from rag.evaluation.querysets import squeezed
from rag.generation import ChatModel

MAX_ANSWER_SHARE = 0.9  # an "answer" that is nearly the whole passage pins down nothing
LANGUAGE_NAMES = {"de": "German", "en": "English"}
WRONG_LANGUAGE = "question not in the passage's language"  # the reason a question in another language is dropped

SYSTEM = ("You write test questions for a search engine. You are given a passage of a document. Write one "
          "question that a reader of the whole document could ask and that this passage answers. Use your own "
          "words: do not copy phrases of the passage into the question. Then quote the part of the passage that "
          "answers it, copied character for character (one sentence or less). Reply with JSON only, exactly "
          'of this form: {"question": "...", "answer": "..."}')
USER = "Passage:\n\"\"\"\n{passage}\n\"\"\"\n\nWrite the question in {language}. Reply with the JSON object only."

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_QUOTES = "\"'„“”«»‚‘’ "


@dataclass(frozen=True)
class Asked:
    """What one passage gave: a question and its answer's span in the document's text, or the reason why not."""

    question: str = ""
    start: int = 0
    end: int = 0
    reason: str = ""  # "" when the question is usable


def ask(llm: ChatModel, text: str, passage_start: int, passage_end: int, language: str) -> Asked:
    """Return the LLM's question on text[passage_start:passage_end], with its answer located in text.

    language: the document's ("de", "en" or "none"), used when the passage alone does not tell.
    """
    passage = text[passage_start:passage_end]
    language = passage_language(passage, language)
    named = LANGUAGE_NAMES.get(language, "the passage's language")
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": USER.format(passage=passage, language=named)}]
    parsed = parse_reply(llm.complete(messages))
    if parsed is None:
        return Asked(reason="not the JSON asked for")
    question, answer = parsed
    if not in_language(question, language):
        return Asked(reason=WRONG_LANGUAGE)
    span = locate(answer, text, passage_start, passage_end)
    if span is None:
        return Asked(reason="answer not in the passage")
    if span[1] - span[0] > MAX_ANSWER_SHARE * len(passage.strip()):
        return Asked(reason="answer is the whole passage")
    if squeezed(question.rstrip("?")).casefold() in squeezed(passage).casefold():
        return Asked(reason="question copies the passage")
    return Asked(question, span[0], span[1])


def passage_language(passage: str, document_language: str) -> str:
    """Return the language of a passage by its stop words, the document's when it has neither language's."""
    found = detect_language(passage)
    return document_language if found == "none" else found


def in_language(question: str, language: str) -> bool:
    """Return False only when the question is told to be in another known language than language."""
    said = detect_language(question)
    return said == language or said not in LANGUAGE_NAMES or language not in LANGUAGE_NAMES


def parse_reply(reply: str) -> tuple[str, str] | None:
    """Return (question, answer) from a reply holding one JSON object with both as text, else None."""
    found = _JSON_OBJECT.search(reply)  # models like to wrap JSON in ```json fences or a sentence
    if not found:
        return None
    try:
        data = json.loads(found.group())
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    question, answer = data.get("question"), data.get("answer")
    if not isinstance(question, str) or not isinstance(answer, str):
        return None
    question, answer = " ".join(question.split()), answer.strip().strip(_QUOTES)
    return (question, answer) if question and answer else None


def locate(answer: str, text: str, start: int, end: int) -> tuple[int, int] | None:
    """Return the span of answer in text[start:end]: exactly, else with any whitespace run matching any other."""
    found = text.find(answer, start, end)
    if found >= 0:
        return found, found + len(answer)
    words = answer.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    match = pattern.search(text, start, end)
    return (match.start(), match.end()) if match else None
