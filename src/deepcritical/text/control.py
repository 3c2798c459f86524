"""Control characters taken out of text that comes from people and files (a research question,
an imported corpus record) before it is searched, stored or shown.

A NUL byte in a question passed into the report, its JSON and the run database, where
PostgreSQL refuses it (``text`` columns cannot hold ``\\x00``); an escape sequence would
reach the terminal. :func:`strip_control_chars` keeps the text's words and its line structure
and removes everything else that is not text.
"""

from __future__ import annotations

import re

__all__ = ["strip_control_chars"]

_LINE_BREAK = re.compile(r"\r\n?")
_WHITESPACE_CONTROL = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
_OTHER_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ud800-\udfff]")


def strip_control_chars(text: str) -> str:
    """``text`` without control characters, except the tab and the line feed.

    - ``\\r\\n`` and a lone ``\\r`` become ``\\n``;
    - the controls that Python counts as white space (vertical tab, form feed, the
      information separators ``\\x1c``-``\\x1f``, NEL ``\\x85``) become a space, so the words
      they separated stay apart;
    - every other C0 and C1 control character (NUL, ESC, DEL...) and every lone surrogate
      (``\\ud800``-``\\udfff``: JSON can spell one, UTF-8 cannot encode it) is removed.

    Everything else (letters of every script, ``\\t``, ``\\n``, format characters such as
    the soft hyphen) is kept as it is. Never raises.

    >>> strip_control_chars("NUL\\x00 byte\\r\\nand\\x0bform")
    'NUL byte\\nand form'
    """
    if text.isprintable():  # the common case: nothing to do (no control, no line break)
        return text
    text = _LINE_BREAK.sub("\n", text)
    text = _WHITESPACE_CONTROL.sub(" ", text)
    return _OTHER_CONTROL.sub("", text)
