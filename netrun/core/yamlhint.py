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


#: PyYAML's words where a line indented too far lands (a value that goes on, or a new block).
_INDENT_PROBLEMS = (
    "mapping values are not allowed here",
    "expected <block end>, but found '<block mapping start>'",
)
_KEY = re.compile(r"^((?:- +)*)([^\s#:][^:#]*?)\s*:(?:\s+(\S.*))?$")


def over_indented(source: str, line: int) -> str | None:
    """The words for line ``line`` (0-based) of ``source`` when it is indented further than
    the key above it, which holds a value (so nothing may nest under it); else None.

    PyYAML reads such a line as the value above going on, then finds its ':' ("mapping
    values are not allowed here"), which it words as a second ':' on one line."""
    lines = source.splitlines()
    if not 0 < line < len(lines) or not lines[line].strip():
        return None
    here = len(lines[line]) - len(lines[line].lstrip(" "))
    for above in reversed(lines[:line]):
        body = above.strip()
        if not body or body.startswith("#"):
            continue
        indent = len(above) - len(above.lstrip(" "))
        match = _KEY.match(above.lstrip(" "))
        if match is None:
            return None
        column = indent + len(match[1])  # the key's column, after any "- "
        if here <= column:
            return None
        key = match[2].strip()
        if match[3] is None:  # "key:" opens a block; its own indentation is PyYAML's to judge
            return None
        return (
            f"this line is indented more than the key {key!r} above it, which already has a"
            f" value; line it up with {key!r} (column {column + 1})"
        )
    return None


def plain(
    problem: str, context: str | None = None, source: str | None = None, line: int | None = None
) -> str:
    """PyYAML's ``problem`` (and ``context``) as one line a user can act on; with the
    file's ``source`` and the problem's ``line`` (0-based), an over-indented line is named."""
    text = " ".join(f"{context or ''} {problem}".split())
    if source is not None and line is not None and any(p in text for p in _INDENT_PROBLEMS):
        indented = over_indented(source, line)
        if indented:
            return indented
    for pattern, words in _KNOWN:
        found = re.search(pattern, text)
        if found:
            return found.expand(words)
    out = " ".join(problem.split())
    for token, words in _TOKENS.items():
        out = out.replace(f"'{token}'", words).replace(token, words)
    return out
