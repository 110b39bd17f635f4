"""PyYAML's syntax errors in plain words: an over-indented line is named as such (issue 25)."""

from __future__ import annotations

import pytest
import yaml

from netrun.core.yamlhint import over_indented, plain


def hint(text: str) -> tuple[int, str]:
    """(1-based line, plain words) of the YAML error ``text`` raises."""
    with pytest.raises(yaml.MarkedYAMLError) as info:
        yaml.safe_load(text)
    exc = info.value
    assert exc.problem_mark is not None
    return exc.problem_mark.line + 1, plain(
        str(exc.problem), exc.context, text, exc.problem_mark.line
    )


@pytest.mark.parametrize(
    ("text", "line", "key", "column"),
    [
        # PyYAML: "mapping values are not allowed here" (it read the line as mode's value)
        ("tests:\n  - name: a\n    mode: baremetal\n      server: alpha\n", 4, "mode", 5),
        ("tests:\n  - name: a\n     mode: baremetal\n", 3, "name", 5),  # under "- name"
        ("a: 1\n  b: 2\n", 2, "a", 1),
        # PyYAML: "expected <block end>, but found '<block mapping start>'"
        ("t:\n  sweep:\n    streams: [1]\n      length: [1]\n", 4, "streams", 5),
        ("a: 1\n\n  # a comment\n  b: 2\n", 4, "a", 1),  # blank and comment lines skipped
    ],
)
def test_over_indentation_is_named(text: str, line: int, key: str, column: int) -> None:
    where, words = hint(text)
    assert where == line
    assert words == (
        f"this line is indented more than the key {key!r} above it, which already has a"
        f" value; line it up with {key!r} (column {column})"
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: x\nkey: a: b\n", "a second ':' on one line"),  # same indentation: a real ':'
        ("a:\n  b: 1\n c: 2\n", "this line is indented differently"),  # less, not more
    ],
)
def test_other_errors_keep_their_words(text: str, words: str) -> None:
    assert hint(text)[1].startswith(words)


def test_without_the_source_the_old_words_stand() -> None:
    assert plain("mapping values are not allowed here").startswith("a second ':' on one line")
    assert over_indented("a: 1\n", 5) is None
    assert over_indented("a:\n    b: 1\n", 1) is None  # "a:" opens a block: any indent
