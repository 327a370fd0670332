"""``agent_text``: text an agent wrote, as a reviewer must read it.

Escaped like any value, isolated in ``<bdi>`` when it holds right-to-left letters so that its
direction cannot reorder the page around it, and each hidden character (bidirectional controls,
zero-width and other invisible ones: governance/kernel/invisible.py) shown as a visible marker,
``⟨U+202E⟩``, with its name on hover, instead of doing what it would do. It comes after a
truncation and before ``linebreaksbr``: ``{{ message.text|agent_text|linebreaksbr }}``. Styled by
``.hidden-char`` in app.css.

``agent_js`` is ``escapejs`` for agent text inside an attribute's script (htmx's ``hx-vals``), where
no marker can show: its hidden characters are written as ``\\uXXXX`` escapes, never raw.
``agent_attr`` is the same for an attribute a form posts back (an ``<option>``'s value): the hidden
characters written as character references, so the page holds none raw and the browser still posts
the exact text.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape, escapejs, format_html
from django.utils.safestring import SafeString, mark_safe

from governance.kernel import invisible

register = template.Library()


@register.filter
def agent_text(value: Any) -> SafeString:
    text = "" if value is None else str(value)
    parts = (
        format_html('<span class="hidden-char" title="{}">{}</span>', invisible.name(run), invisible.marker(run))
        if hidden
        else escape(run)
        for run, hidden in invisible.split(text)
    )
    shown = "".join(parts)  # each part escaped, or a marker built by format_html
    return mark_safe(f"<bdi>{shown}</bdi>" if invisible.needs_isolation(text) else shown)


def _js_escapes(char: str) -> str:
    """``\\uXXXX`` for each UTF-16 unit of ``char`` (a surrogate pair past the BMP)."""
    units = char.encode("utf-16-be")
    return "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))


@register.filter
def agent_js(value: Any) -> SafeString:
    text = "" if value is None else str(value)
    return mark_safe("".join(_js_escapes(run) if hidden else escapejs(run) for run, hidden in invisible.split(text)))


@register.filter
def agent_attr(value: Any) -> SafeString:
    text = "" if value is None else str(value)
    return mark_safe(
        "".join(
            "".join(f"&#x{ord(c):X};" for c in run) if hidden else escape(run) for run, hidden in invisible.split(text)
        )
    )
