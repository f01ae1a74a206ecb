"""``--expectations`` globs match in at most len(glob) x len(id) steps (issue 11, item 8): runs of ``*?`` took seconds
per case id as a regex. The steps are counted, not timed, so the test means the same on any machine."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.plugin.expectations import id_pattern
from tests.hostile.conftest import examples

CASE_ID = "FastGelu/f16/X[2,4099]+bias[4099]/vec4_tail_bias@small-storage" * 3


def test_runs_of_star_question_do_not_backtrack():
    for glob in ("*?" * 40 + "!", "*?*" * 500 + "nope", "*a" * 300 + "b", "?" * 150 + "*" * 1000 + "x"):
        pattern = id_pattern(glob)
        assert not pattern.fullmatch(CASE_ID)
        assert pattern.steps <= (len(pattern.glob) + 1) * len(CASE_ID), (glob[:40], pattern.steps)
    assert id_pattern("*?" * 40).fullmatch(CASE_ID)


def _regex(glob: str) -> re.Pattern:  # the old translation: right answers, exponential time on hostile globs
    return re.compile(re.escape(glob).replace(r"\*", ".*").replace(r"\?", "."), re.DOTALL)


@settings(max_examples=examples(300))
@given(st.text("ab*?[]", max_size=8), st.text("ab[]", max_size=10))
def test_globs_match_like_the_regex_translation(glob, text):
    assert id_pattern(glob).fullmatch(text) == bool(_regex(glob).fullmatch(text))
