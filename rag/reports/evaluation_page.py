"""The HTML page of a sweep or an evaluation: a Jinja2 template with autoescaping (rag.reports.evaluation_html
fills it).

Every value is escaped by the template engine; the only markup inserted as is are the stylesheet below and the
charts (SVG from rag.reports.svg, which escapes its own labels), both marked `|safe` in the template.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2

from rag.evaluation.metrics import format_p

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: #1f1f1f; background: #fff; margin: 0 auto; max-width: 1180px; padding: 24px 28px 40px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 30px 0 10px; padding-bottom: 3px;
  border-bottom: 1px solid #ddd; }
p { margin: 6px 0; } .meta { color: #555; margin-bottom: 14px; }
.summary { background: #f2f7fb; border-left: 4px solid #0072B2; padding: 10px 14px; margin: 12px 0; }
.notes { color: #444; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; margin: 6px 0; }
th, td { padding: 4px 4px; border-bottom: 1px solid #e2e2e2; text-align: right; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; vertical-align: bottom; } td { white-space: nowrap; }
td.text, th.text { text-align: left; } td.p { white-space: normal; min-width: 48px; max-width: 64px; }
td.wrap { white-space: normal; max-width: 420px; overflow-wrap: anywhere; }
td .pm { color: #666; font-size: 12px; } th.chosen, td.chosen { background: #f7f7f7; }
tr.best td { background: #ffefb0; font-weight: 600; } tr.tie td { background: #e1eefa; }
.mark { display: inline-block; margin-left: 2px; padding: 0 6px; border-radius: 3px; font-size: 12px;
  font-weight: 700; color: #fff; } .mark.best { background: #7a5700; } .mark.tie { background: #0b4f8a; }
.mark.worse { background: #6b6b6b; }
figure { margin: 14px 0 22px; } figcaption { color: #444; font-size: 13.5px; max-width: 960px; }
svg.chart { display: block; max-width: 100%; height: auto; font-family: inherit; }
dl.settings { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 6px 0; }
dl.settings dt { font-weight: 600; } dl.settings dd { margin: 0; overflow-wrap: anywhere; }
footer { margin-top: 30px; color: #666; font-size: 13px; }
@page { size: A4 landscape; margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10.5pt; } table { font-size: 8.5pt; }
  th, td { padding: 3px 2px; } td .pm { font-size: 7.5pt; } svg.chart { max-width: 900px; }
  * { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
  h2 { break-after: avoid; } figure, table, .summary, dl.settings { break-inside: avoid; }
}
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{# CSP is our constant (evaluation_html.CSP): its single quotes are written as they are, as before Jinja2 #}
<meta http-equiv="Content-Security-Policy" content="{{ CSP|safe }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="RAG Lab">
<title>{{ title }}</title>
<style>{{ style|safe }}</style>
</head>
<body>
{% macro cell(value, css="") %}{% set v, low, high = value %}<td class="{{ css }}" title="95 % interval \
{{ "%.3f"|format(low) }} to {{ "%.3f"|format(high) }}">{{ "%.3f"|format(v) }}<span class="pm"> \
±{{ "%.3f"|format((high - low) / 2) }}</span></td>{% endmacro %}
{% macro show_figures(items) %}{% for svg, caption in items %}<figure>{{ svg|safe }}<figcaption>{{ caption }}\
</figcaption></figure>
{% endfor %}{% endmacro %}
{% if kind == "sweep" %}
<h1>Sweep: {{ metric }} of {{ result.results|length }} configurations and modes</h1>
<p class="meta">{{ result.created_at }} · {{ result.embedder }} · {{ result.queries }} queries · \
{{ result.documents|length }} documents · modes {{ result.modes|join(", ") }}</p>
<div class="summary">{% for w in words %}<p>{{ w }}</p>{% endfor %}
{% if ties %}<p>Tied with the best:</p><ul>{% for label, why in ties %}<li>{{ label }}: {{ why }}</li>{% endfor %}\
</ul>{% endif %}
</div>
{% for note in notes %}<p class="notes">{{ note }}</p>
{% endfor %}
{% if best %}
<h2>Charts</h2>
{{ show_figures(figures) }}
<h2>Every configuration</h2>
<table><thead><tr>{% for h in table.head %}<th class="{{ "text" if \
loop.index0 < 2 else "chosen" \
if loop.index0 == 2 else "" }}">{{ h }}</th>{% endfor %}</tr></thead><tbody>
{% for r in table.rows %}{% set mark, row, test = r.place.mark, r.row, r.place.test %}<tr class="{{ mark }}">\
<td class="text">{{ row.config.short }}{% if mark %} <span class="mark {{ mark }}">{{ mark }}</span>{% endif %}</td>\
<td class="text">{{ row.mode.label }}</td>{{ cell(r.chosen, "chosen") }}\
{% for c in r.others %}{{ cell(c) }}{% endfor %}\
<td>{{ row.chunks }}</td><td>{{ "%.0f"|format(row.mean_tokens) }}</td><td>{{ "{:.0%}".format(row.cut_share) }}</td>\
<td>{{ "%.1f"|format(r.seconds) }}{% if row.reused %}<br><span class="pm">reused</span>{% endif %}</td>\
{% if test is none %}<td>—</td><td></td>{% else %}<td>{{ "%+.3f"|format(test.difference) }}<br><span class="pm">\
{{ "%+.3f"|format(test.low) }} to {{ "%+.3f"|format(test.high) }}</span></td><td class="p">{{ format_p(test.p_value) }}\
{% if test.too_few_differ %}<br><span class="pm">too few differ</span>{% endif %}</td>{% endif %}</tr>
{% endfor %}</tbody></table>
<p class="notes">{{ table.caption }}</p>
{% if rerank %}<h2>{{ rerank.heading }}</h2>
<ul class="rerank">{% for line in rerank.lines %}<li>{{ line }}</li>{% endfor %}</ul>
<p class="notes">{{ rerank.note }}</p>
{% endif %}
{{ failed(failures) }}
{% if funnel %}<h2>{{ funnel.heading }}</h2>
<p>{{ funnel.words }}</p>
<table class="funnel"><thead><tr><th class="text">lost at</th><th>misses</th><th class="text">meaning</th></tr>\
</thead><tbody>
{% for stage, count, why in funnel.stages %}<tr><td class="text">{{ stage }}</td><td>{{ count }}</td>\
<td class="text wrap">{{ why }}</td></tr>
{% endfor %}</tbody></table>
{% if funnel.rows %}<table class="missed"><thead><tr>{% for h in funnel.head %}<th class="{{ "text" if \
loop.index0 < 2 or loop.index0 > 5 else "" }}">{{ h }}</th>{% endfor %}</tr></thead><tbody>
{% for r in funnel.rows %}<tr>{% for c in r %}<td class="{{ "text wrap" if loop.index0 < 2 or loop.index0 > 5 \
else "" }}">{{ "—" if c is none else c }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
<p class="notes">Ranks of each missed question's best relevant chunk in every ranking (—: not in it).</p>{% endif %}
{% endif %}
{% endif %}
{% else %}
<h1>Evaluation: {{ query_set }} on {{ collection }}</h1>
<p class="meta">{{ created_at }} · {{ embedder }} · {{ mode }} search · {{ queries }} queries</p>
<h2>Metrics with their 95 % intervals</h2>
{{ show_figures(figures) }}
<table><thead><tr><th class="text">k</th>{% for m in metrics.names %}<th>{{ m }}</th>{% endfor %}</tr></thead><tbody>
{% for k, cells in metrics.rows %}<tr><td class="text">{{ k }}</td>{% for c in cells %}{{ cell(c) }}{% endfor %}</tr>
{% endfor %}</tbody></table>
<p class="notes">± is half the 95 % bootstrap interval over the queries.</p>
{{ failed(failures) }}
{% endif %}
<h2>Settings</h2>
<dl class="settings">{% for name, value in settings %}<dt>{{ name }}</dt><dd>{{ value }}</dd>{% endfor %}</dl>
<footer>Made by RAG Lab. This file is self-contained: it loads nothing and runs no scripts.</footer>
</body>
</html>
"""

FAILURES = """{% macro failed(f) %}<h2>{{ f.heading }}</h2>
<p>{{ f.words }}</p>
{% if f.rows %}<table><thead><tr><th class="">rank</th><th class="">score</th><th class="">top score</th>\
<th class="text">query</th><th class="text">expected</th><th class="text">top hit</th></tr></thead><tbody>
{% for r in f.rows %}<tr><td>{{ r.rank or ">" ~ f.deepest }}</td>{% for s in r.scores %}\
<td>{{ "—" if s is none else "%.3f"|format(s) }}</td>{% endfor %}{% for t in r.texts %}\
<td class="text wrap">{{ t }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>{% endif %}{% endmacro %}"""


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                     lstrip_blocks=True, keep_trailing_newline=True)
    environment.globals |= {"format_p": format_p, "style": STYLE}
    return environment.from_string(FAILURES + TEMPLATE)


def render(page: dict) -> str:
    """Return the page (the values of rag.reports.evaluation_html) as HTML, every value escaped."""
    return _template().render(**page)
