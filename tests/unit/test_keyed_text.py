"""The result cache's key text, made line by line, is the text the whole-text patterns make.

``validate.folders.keyed_text`` (memory on, the default) blanks comment lines, drops the inert
pass marks and strips trailing blanks in one pass over the lines; the reference here does the same
with the module's whole-text, line-anchored patterns, one after the other, as it was done before.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_lsp.validate import folders

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def reference(text: str) -> str:
    t = folders._COMMENT_LINE.sub("", text)
    t = folders._INERT_TFREE_SPLIT.sub(r"\1)", folders._INERT_LOOP_ATTRS.sub("", t))
    return "\n".join(raw.rstrip(" \t") for raw in t.split("\n"))


def test_every_dump_keys_as_before() -> None:
    files = sorted(ROOT.glob("examples/**/passes_dump/*.py")) + sorted(FIXTURES.glob("**/passes_dump/*.py"))
    marks = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert folders.keyed_text(text, memory=True) == reference(text), f
        marks += "iter_arg_rebind_" in text or "tfree_to_ai" in text
    assert marks > 10  # the marks are there to drop


_LINES = st.sampled_from(
    [
        '        for i, (a,) in pl.range(4, init_values=(x,), attrs={"iter_arg_rebind_0": False}):',
        '        for i, (a, b) in pl.range(4, init_values=(x, y), attrs={"iter_arg_rebind_0": True, "iter_arg_rebind_1": False}):',
        '        for i in pl.range(4, attrs={"iter_arg_rebind_0": False}):  # not at the end',
        "            pl.system.tfree_to_aic(t__tile, split=1)",
        "            pl.system.tfree_to_aiv(t__tile, split=0)  ",
        "            pl.system.tfree_to_aiv(t__tile, split=0) # c",
        "    # a comment",
        "\t# a tab comment",
        "x = 1 # trailing",
        "        y = pl.tile.add(a, b)\t ",
        "\r",
        "   ",
        "",
        "# pypto.program: P",
        "\f# form feed",
        "s = '# not a comment'",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=12), st.sampled_from(["", "\n", "\r", " "]))
def test_any_mix_of_marks_comments_and_blanks_keys_as_before(lines: list[str], end: str) -> None:
    text = "\n".join(lines) + end
    assert folders.keyed_text(text, memory=True) == reference(text)
