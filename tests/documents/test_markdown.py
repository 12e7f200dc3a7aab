"""Markdown read without markup for machines (issue 34, item 7): inline HTML tags, comments and relative link
targets leave Document.text (and so every chunk, vector and context); code, absolute links and text stay."""

from __future__ import annotations

import time

import pytest

from rag.documents.loader import load_document
from rag.documents.markdown import clean_markdown

SPEC = '''# OpenAPI Specification
<!-- TOC depthFrom:1 depthTo:3 -->
- [Info Object](#infoObject)
<!-- /TOC -->

#### <a name="infoObject"></a>Info Object

Field Name | Type | Description
---|:---:|---
<a name="infoTitle"></a>title | `string` | **REQUIRED**. See [`openapi`](#oasVersion) and [[Server](#serverObject)].
<a name="infoLicense"></a>license | [License](../license.md "the license") | [CommonMark](https://spec.commonmark.org/)<br>text

```html
<a name="kept"></a>[kept](#kept)
```
A `<span>` in code, a <T> type, a < b, <https://example.org>, ![logo](img/logo.png) and <span class="x">span</span>.
'''


def test_markdown_loses_anchors_tags_comments_and_relative_link_targets():
    text = load_document(SPEC.encode(), "spec.md").text
    assert text.splitlines()[:8] == [
        "# OpenAPI Specification", "", "- Info Object", "", "#### Info Object", "",
        "Field Name | Type | Description", "---|:---:|---"]
    assert "title | `string` | **REQUIRED**. See `openapi` and [Server]." in text
    assert "license | License | [CommonMark](https://spec.commonmark.org/) text" in text  # <br>: a space
    assert '```html\n<a name="kept"></a>[kept](#kept)\n```' in text  # code is text
    assert "A `<span>` in code, a <T> type, a < b, <https://example.org>, logo and span." in text
    assert [h.title for h in load_document(SPEC.encode(), "spec.md").headings] == [
        "OpenAPI Specification", "Info Object"]


def test_text_files_keep_their_markup():
    assert load_document(SPEC.encode(), "spec.txt").text == SPEC.strip()


def test_an_unclosed_fence_or_comment_keeps_the_rest():
    assert clean_markdown("a <b>x</b>\n```\n<b>y</b>") == "a x\n```\n<b>y</b>"
    assert clean_markdown("<!-- open\n<b>x</b>") == "<!-- open\nx"


@pytest.mark.slow
def test_hostile_markdown_is_read_in_linear_time():
    for piece in ("<a ", "[x](", "[", "`", "<!--", "<span " + "x" * 50, "](#"):
        text = piece * (400_000 // len(piece))
        started = time.perf_counter()
        clean_markdown(text)
        assert time.perf_counter() - started < 2.0, piece
