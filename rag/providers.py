"""Provider specs: one rule and one registry for every kind of provider (embedders, rerankers, LLMs).

A spec is "<provider>" or "<provider>:<argument>". The rule: the spec is stripped; the provider is what comes
before its first ":" (stripped, lower-cased), the argument all that follows (stripped; it may hold ":" itself:
tei:http://localhost:8080, ollama:llama3.1:8b). A Registry maps provider names to factories, each registered with
the spec forms it takes and, when it needs an argument, what that argument is; an unknown provider or a missing
argument is the kind's one-line error, saying the valid forms:

    Unknown reranker 'bm25:x'. Use one of: tei:<url>, cohere:<model>, jina:<model>, local:<path>, e.g. ...
    The embedder 'ollama' needs a model name, e.g. ollama:mxbai-embed-large.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rag.errors import RagError

T = TypeVar("T")


def split_spec(spec: str) -> tuple[str, str]:
    """Return (provider, argument) of a spec by the rule (see module); nothing is checked."""
    provider, _, argument = spec.strip().partition(":")
    return provider.strip().lower(), argument.strip()


@dataclass(frozen=True)
class Provider(Generic[T]):
    """One provider of a registry: its factory (argument, then the kind's keyword options), its spec forms, and
    what its argument is when it needs one (None: the argument may be empty)."""

    name: str
    factory: Callable[..., T]
    forms: tuple[str, ...]
    needs: str | None = None
    example: str = ""


class Registry(Generic[T]):
    """The providers of one kind (see module), in the order they were registered."""

    def __init__(self, kind: str, error: type[RagError], example: str = ""):
        self.kind, self.error, self.example = kind, error, example  # example: shown with the valid forms
        self.providers: dict[str, Provider[T]] = {}

    def register(self, name: str, factory: Callable[..., T], forms: tuple[str, ...], needs: str | None = None,
                 example: str = "") -> None:
        """Add a provider; forms: its specs as the help shows them; needs and example: what its argument is."""
        self.providers[name] = Provider(name, factory, forms, needs, example)

    @property
    def forms(self) -> str:
        """Return every valid spec form, comma-separated."""
        return ", ".join(form for provider in self.providers.values() for form in provider.forms)

    def parse(self, spec: str, origin: str = "") -> tuple[str, str]:
        """Return (provider, argument) of spec; the kind's error for an unknown provider or a missing argument.
        origin: where the spec came from, said after it (" (from RAG_EMBEDDER)")."""
        provider, argument = split_spec(spec)
        if provider not in self.providers:
            example = f", e.g. {self.example}" if self.example else ""
            raise self.error(f"Unknown {self.kind} '{spec.strip()}'{origin}. Use one of: {self.forms}{example}.")
        found = self.providers[provider]
        if found.needs and not argument:
            raise self.error(f"The {self.kind} '{provider}' needs {found.needs}, e.g. {found.example}.")
        return provider, argument

    def make(self, spec: str, /, **options: Any) -> T:
        """Return what the provider of spec makes of its argument and options (parse's errors first)."""
        provider, argument = self.parse(spec)
        return self.providers[provider].factory(argument, **options)
