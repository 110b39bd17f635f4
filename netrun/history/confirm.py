"""A regression that pages is measured again before it does.

On a shared machine one dip reads like a regression once and not twice (a neighbour's
burst of CPU steal, a cron job on a host); a halved link reads halved both times. So a
run whose comparison would page measures those tests once more, at once, against the same
baseline, and ``settle`` keeps:

- a regression the second measurement repeats: it pages, ``confirmed``;
- one the second measurement does not repeat: ``noisy``, paging nobody, both figures
  named (``not confirmed``);
- one the second measurement could not judge (it failed, or was interrupted): it pages
  as it was, saying why it stands unconfirmed (a failure to confirm is no all-clear).

The first measurement's samples stay the run's figures; the second's are saved beside
them (their folder is in the run's ``baseline.confirmation``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from netrun.history.regress import Verdict

CONFIRMED, NOT_CONFIRMED, UNCONFIRMED = "confirmed", "not confirmed", "unconfirmed"


def to_confirm(verdicts: Sequence[Verdict]) -> list[str]:
    """The tests whose verdicts would page: the ones to measure again."""
    return [v.test for v in verdicts if v.verdict == "regressed" and v.pages]


def _headline(verdict: Verdict) -> str:
    """The second measurement's figure, as its verdict's detail begins."""
    return verdict.detail.split("; ")[0]


def settle(
    first: Sequence[Verdict],
    second: Sequence[Verdict] | None,
    why_none: str = "",
    figures: Mapping[str, float | None] | None = None,
) -> list[Verdict]:
    """The verdicts the run keeps, by the rule above; ``second``: the verdicts of the
    second measurement (None: it did not happen, ``why_none`` says why); ``figures``:
    test -> the second's figure of the metric its first verdict is about (Verdict.again:
    the reports show both figures, in the same metric)."""
    again = {v.test: v for v in second or ()}
    wanted = set(to_confirm(first))
    out = []
    for verdict in first:
        if verdict.test not in wanted:
            out.append(verdict)
            continue
        found = again.get(verdict.test)
        verdict = replace(verdict, again=(figures or {}).get(verdict.test))
        if found is None or found.verdict in ("failed", "new", "incomparable"):
            why = why_none or "no figure to compare"
            if found is not None:
                why = f"it {found.verdict}: {_headline(found)}"
            out.append(
                replace(
                    verdict,
                    detail=f"{verdict.detail}; a second measurement could not confirm it ({why})",
                    confirmation=UNCONFIRMED,
                )
            )
        elif found.verdict == "regressed":
            out.append(
                replace(
                    verdict,
                    detail=f"{verdict.detail}; confirmed by a second measurement: "
                    f"{_headline(found)}",
                    confirmation=CONFIRMED,
                )
            )
        else:
            said = f"not confirmed: a second measurement read {_headline(found)} ({found.verdict})"
            out.append(
                replace(
                    verdict,
                    verdict="noisy",
                    pages=False,
                    detail=f"{verdict.detail}; {said}",
                    noise=f"{verdict.noise}; {said}" if verdict.noise else said,
                    confirmation=NOT_CONFIRMED,
                )
            )
    return out
