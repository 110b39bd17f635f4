"""PyYAML's syntax errors in plain words, each with what to change.

PyYAML speaks of its tokens ("expected <block end>, but found '<block mapping start>'"),
which a lab engineer editing a scenario cannot act on. netrun.core.yamlfile puts the file, line
and column in front; this module says what is wrong there and how to fix it. A message it
does not know keeps PyYAML's words, with the token names spelled out.
"""

from __future__ import annotations

import re

#: (pattern over "context problem", plain words with the fix); the first match wins.
_KNOWN: tuple[tuple[str, str], ...] = (
    (r"found character '\\t'", "a tab character; YAML indents with spaces only"),
    (
        r"expected <block end>, but found '<block mapping start>'",
        "this line is indented differently from the keys above it; line it up with them",
    ),
    (
        r"expected <block end>, but found '-'",
        "a list item '-' where a key was expected; put it under a key ('tests:') or indent it",
    ),
    (r"expected <block end>", "this line breaks the indentation above it; line it up"),
    (r"expected ',' or '\]'", "a '[' list is not closed; add ']' (or a ',' between items)"),
    (r"expected ',' or '\}'", "a '{' mapping is not closed; add '}' (or a ',' between items)"),
    (
        r"quoted scalar.*end of stream|quoted scalar.*found unexpected end",
        "a quoted string is never closed; add the closing quote",
    ),
    (
        r"mapping values are not allowed here",
        "a second ':' on one line; quote the value (key: \"a: b\") or start a new line",
    ),
    (
        r"could not find expected ':'",
        "a line that is not 'key: value'; add the ':' after the key, or quote the text",
    ),
    (
        r"found undefined alias '([^']*)'",
        r"the alias *\1 names no anchor; define &\1 above it, or remove the '*'",
    ),
    (
        r"expected a single document",
        "a second document ('---'); keep one document per file",
    ),
    (
        r"found duplicate anchor",
        "an anchor (&name) is defined twice; rename one",
    ),
)
_TOKENS = {
    "<stream end>": "the end of the file",
    "<block end>": "the end of an indented block",
    "<block mapping start>": "an indented key",
    "<block sequence start>": "an indented list",
    "<scalar>": "a value",
}


def plain(problem: str, context: str | None = None) -> str:
    """PyYAML's ``problem`` (and ``context``) as one line a user can act on."""
    text = " ".join(f"{context or ''} {problem}".split())
    for pattern, words in _KNOWN:
        found = re.search(pattern, text)
        if found:
            return found.expand(words)
    out = " ".join(problem.split())
    for token, words in _TOKENS.items():
        out = out.replace(f"'{token}'", words).replace(token, words)
    return out
