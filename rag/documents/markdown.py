"""Markdown text without its markup for machines: inline HTML tags, HTML comments and in-document link targets.

A Markdown file's text is what its chunks hold, what the model embeds, what BM25 indexes and what the LLM
reads. Markup that only a renderer needs is noise there: `<a name="oasVersion"></a>` anchors before table
rows and headings, `<!-- TOC -->` comments, and link targets into the document or the repository
(`[Paths Object](#pathsObject)`) that mean nothing without the rendered page. They are removed when the file
is read (rag.documents.loader), so Document.text is the clean text and every chunk offset refers to it:

    <a name="infoTitle"></a>title | `string`     ->  title | `string`
    [Pets](#pets), [guide](../docs/guide.md)      ->  Pets, guide
    ##### <a name="oasDocument"></a>OpenAPI ...    ->  ##### OpenAPI ...

Kept as written: code (fenced blocks and `inline code`), absolute link targets (https://..., mailto:...:
an answer may cite them), tables, emphasis, text in angle brackets that is no HTML tag (`<T>`, `a < b`,
autolinks). Every pattern is linear in the length of the text.
"""

from __future__ import annotations

import re

# Elements written inline in Markdown files (GitHub's sanitizer allows about these); a word in angle brackets
# that is none of them (`<Name>`, `<wd>`) is text.
_TAGS = (
    "a|abbr|b|big|blockquote|br|center|cite|code|dd|del|details|dfn|div|dl|dt|em|figcaption|figure|font|h[1-6]|hr|"
    "i|img|ins|kbd|li|mark|ol|p|picture|pre|q|s|samp|small|source|span|strike|strong|sub|summary|sup|table|tbody|"
    "td|tfoot|th|thead|tr|tt|u|ul|var|wbr"
)
_INLINE = re.compile(
    r"(?P<code>(?P<ticks>`+)[^`\n]+?(?P=ticks)(?!`))"  # a code span: kept
    rf"|(?P<tag></?(?:{_TAGS})(?:\s[^<>]{{0,2000}})?/?>)"  # an HTML tag: removed (<br> becomes a space)
    r"|(?P<image>!?)\[(?P<text>[^\[\]\n]*)\]\((?P<target>[^()\s]*)(?:\s+\"[^\"\n]*\")?\)",  # a link
    re.IGNORECASE,
)
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # https:, mailto:, ftp: ... (a target that works anywhere)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LINE_BREAK_TAG = re.compile(r"<br", re.IGNORECASE)


def clean_markdown(text: str) -> str:
    """Return Markdown text without inline HTML tags, HTML comments and relative link targets (code kept)."""
    parts, prose, fence = [], [], ""
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence:  # inside a fenced code block: verbatim up to its closing fence
            parts.append(line)
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line[opening.end():].strip():
                fence = ""
        elif opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end():]):
            if prose:
                parts.append(_clean_prose("\n".join(prose)))
            prose, fence = [], opening.group(1)
            parts.append(line)
        else:
            prose.append(line)
    if prose:
        parts.append(_clean_prose("\n".join(prose)))
    return "\n".join(parts)


def _clean_prose(text: str) -> str:
    """Return text outside code fences without comments, tags and relative link targets."""
    return _INLINE.sub(_replace, _without_comments(text))


def _replace(match: re.Match) -> str:
    if match.group("code"):
        return match.group("code")
    if tag := match.group("tag"):
        return " " if _LINE_BREAK_TAG.match(tag) else ""
    target = match.group("target")
    if _ABSOLUTE.match(target):
        return match.group()
    return match.group("text")


def _without_comments(text: str) -> str:
    """Return text without `<!-- ... -->` comments (an unclosed one stays: it is no comment yet)."""
    if "<!--" not in text:
        return text
    pieces, pos = [], 0
    while (start := text.find("<!--", pos)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break
        pieces.append(text[pos:start])
        pos = end + 3
    pieces.append(text[pos:])
    return "".join(pieces)
