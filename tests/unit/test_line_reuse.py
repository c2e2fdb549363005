"""Known lines (``pypto_lsp.ir.line_reuse``) change the speed of a parse, never its result.

Every check parses a text with the lines of earlier texts known, and again with every line
read through ``ast`` (``printer_forms=False``: no shortcut at all), and requires equal
programs (every span included) and equal diagnostics. Other checks make sure known lines are
really taken, so that the comparisons compare something.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_lsp.ir import line_reuse
from pypto_lsp.ir.parser import parse_text

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _diags(res: object) -> list[tuple[object, ...]]:
    return [(d.span, d.severity, d.code, d.message, d.hint) for d in res.diagnostics]  # type: ignore[attr-defined]


def assert_same(text: str) -> int:
    """Parse with known lines and without any shortcut; equal results. How many lines were known."""
    known = len(line_reuse.blank_known_lines(text)[1])
    fast = parse_text(text, "x.py")
    slow = parse_text(text, "x.py", printer_forms=False)
    assert fast.program == slow.program
    assert _diags(fast) == _diags(slow)
    return known


def _folders() -> list[Path]:
    return sorted({p.parent for p in [*EXAMPLES.glob("**/passes_dump/*.py"), *FIXTURES.glob("**/passes_dump/*.py")]})


def test_every_dump_of_every_folder_parses_the_same_with_the_lines_before_it_known() -> None:
    folders = _folders()
    assert folders  # the repo's own examples at least
    known = lines = 0
    for folder in folders:
        line_reuse.forget()
        for f in sorted(folder.glob("*.py")):
            text = f.read_text(encoding="utf-8")
            known += assert_same(text)
            lines += text.count("\n")
    assert known > lines // 3  # most of a folder's lines are known by the time they come


def _program(body: str) -> str:
    return (
        "# pypto.program: P\nimport pypto.language as pl\n\n@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.AIV)\n"
        "    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:\n"
        + body
    )


LOAD = "t__tile: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Vec)"
STORE = "o__tile: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], o)"


def _warm() -> None:
    line_reuse.forget()
    parse_text(_program(f"        {LOAD}\n        {STORE}\n        return o__tile\n"))
    assert line_reuse.blank_known_lines(f"        {LOAD}\n")[1]  # both lines are known now


@pytest.mark.parametrize(
    "body",
    [
        # the known lines elsewhere: other lines, deeper, last line of a loop (the loop's span ends there)
        f"\n\n        for i in pl.range(2):\n            {LOAD}\n            {STORE}\n        return o__tile\n",
        # inside brackets: an argument, not a statement
        f"        x = pl.tile.add(\n            {LOAD}\n        )\n        return x\n",
        # after a backslash: part of the statement before
        f"        x = \\\n        {LOAD}\n        return x\n",
        # inside a string
        f'        """\n        {LOAD}\n        """\n        {STORE}\n        return o__tile\n',
        # a known line and a syntax error further down
        f"        {LOAD}\n        {STORE} +\n        return o__tile\n",
        # a syntax error that only the known line's own text has nothing to do with
        f"        {LOAD}\n        x = (\n        {STORE}\n        return o__tile\n",
        # bad indentation around it
        f"        {LOAD}\n          {STORE}\n        return o__tile\n",
        # a one-line compound statement before it, a comment after it
        f"        if True: pass\n        {LOAD}\n        {STORE}  # stored\n        return o__tile\n",
    ],
)
def test_a_known_line_in_another_context_parses_as_written(body: str) -> None:
    _warm()
    assert_same(_program(body))


def test_a_known_line_at_class_or_module_level_parses_as_written() -> None:
    _warm()
    assert_same(_program(f"        return o\n    {LOAD}\n"))
    _warm()
    assert_same(f"import pypto.language as pl\n{LOAD}\n" + _program(f"        {LOAD}\n        return t__tile\n")[27:])


def test_a_line_at_its_old_place_is_the_same_statement_and_elsewhere_a_moved_copy() -> None:
    line_reuse.forget()
    text = _program(f"        {LOAD}\n        {STORE}\n        return o__tile\n")
    first = parse_text(text).program
    again = parse_text(text).program
    assert first is not None and again is not None
    assert again.functions[0].body[0] is first.functions[0].body[0]  # the same objects: the IR is never changed after a parse
    moved = parse_text(text.replace("    def k", "\n    def k")).program
    assert moved is not None
    s = moved.functions[0].body[0]
    assert s is not first.functions[0].body[0]
    assert s.span.line == first.functions[0].body[0].span.line + 1
    assert s == parse_text(text.replace("    def k", "\n    def k"), printer_forms=False).program.functions[0].body[0]  # type: ignore[union-attr]


DEF = "    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:"


def test_a_known_def_line_gives_the_kept_signature_same_objects_in_place_a_moved_copy_elsewhere() -> None:
    line_reuse.forget()
    text = _program(f"        {LOAD}\n        {STORE}\n        return o__tile\n")
    first = parse_text(text).program
    assert first is not None
    assert line_reuse.blank_known_lines(DEF + "\n")[0].startswith("    def " + line_reuse.DEF_PLACEHOLDER)
    again = parse_text(text).program
    assert again is not None and again == first
    assert again.functions[0].params[0] is first.functions[0].params[0]
    shifted = text.replace("    @pl.function", "\n\n    @pl.function")
    assert any(isinstance(h[0], line_reuse.Signature) for h in line_reuse.blank_known_lines(shifted)[1].values())
    assert assert_same(shifted) == 3  # the def line, the load and the store
    moved = parse_text(shifted).program
    assert moved is not None
    fn = moved.functions[0]
    assert fn.name == "k" and fn.name_span.line == first.functions[0].name_span.line + 2
    assert fn.params[0].span.line == first.functions[0].params[0].span.line + 2


@pytest.mark.parametrize(
    "text",
    [
        # a nested def: not a function of the program
        _program(f"        {DEF.strip()}\n            return a\n        return o\n"),
        # in a string
        _program(f'        """\n{DEF}\n        """\n        return o\n'),
        # at module level, after the class
        _program("        return o\n") + DEF.strip() + "\n    return a\n",
        # another body under the same def line, and a second function with the same signature line
        _program(f"        {STORE}\n        return o__tile\n")
        + "    @pl.function(type=pl.FunctionType.AIV)\n"
        + DEF
        + "\n        return o\n",
        # a syntax error in the body below it
        _program("        x = (\n        return o\n"),
        # the body on the def line itself
        _program("        return o\n").replace(DEF, DEF + " return o").replace("        return o\n", ""),
    ],
)
def test_a_known_def_line_in_another_context_parses_as_written(text: str) -> None:
    _warm()
    assert line_reuse.blank_known_lines(DEF + "\n")[1]  # the def line is known
    assert_same(text)


def test_a_signature_over_two_lines_or_with_a_diagnostic_is_not_kept() -> None:
    line_reuse.forget()
    wrapped = DEF.replace(", o:", ",\n            o:")
    parse_text(_program("        return o\n").replace(DEF, wrapped))
    assert not any(line.lstrip().startswith("def ") for line in line_reuse._KEPT)
    unannotated = DEF.replace("a: pl.Tensor[[16, 64], pl.FP32]", "a")
    res = parse_text(_program("        return o\n").replace(DEF, unannotated))
    assert any(d.code == "missing-annotation" for d in res.diagnostics)
    assert not line_reuse.blank_known_lines(unannotated + "\n")[1]
    assert_same(_program("        return o\n").replace(DEF, unannotated))


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["blank", "indent", "dedent", "delete", "duplicate", "bracket", "string", "comment"]),
        st.integers(min_value=0, max_value=10_000),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_EDITS)
def test_edited_dumps_parse_the_same_with_their_lines_known(edits: list[tuple[str, int]]) -> None:
    """An editor's changes to a dump whose lines are all known: lines inserted, moved, re-indented,
    wrapped in brackets or strings."""
    files = sorted(EXAMPLES.glob("**/passes_dump/*.py"))
    assert files
    text = files[len(files) // 2].read_text(encoding="utf-8")
    line_reuse.forget()
    parse_text(text)
    lines = text.split("\n")
    for kind, at in edits:
        i = at % len(lines)
        line = lines[i]
        if kind == "blank":
            lines.insert(i, "")
        elif kind == "indent":
            lines[i] = "    " + line
        elif kind == "dedent":
            lines[i] = line[4:] if line.startswith("    ") else line
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, line)
        elif kind == "bracket":
            lines[i : i + 1] = ["        _x = pl.tile.add(", line, "        )"]
        elif kind == "string":
            lines[i : i + 1] = ['        """', line, '        """']
        else:
            lines[i] = line + "  # edited"
        if not lines:
            lines = [""]
    assert_same("\n".join(lines))


def test_a_very_long_line_is_not_kept() -> None:
    """A hostile workspace cannot make the kept lines hold its megabytes: lines over MAX_LINE are read each time."""
    line_reuse.forget()
    long_store = "o__tile: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(t__tile, [0, 0], o" + ", o" * 2000 + ")"
    assert len(long_store) > line_reuse.MAX_LINE
    parse_text(_program(f"        {LOAD}\n        {long_store}\n        return o__tile\n"))
    assert line_reuse.blank_known_lines(f"        {LOAD}\n")[1]
    assert not line_reuse.blank_known_lines(f"        {long_store}\n")[1]


def test_threads_parsing_at_once_get_the_programs_of_their_texts() -> None:
    """The server parses in more than one thread (as-you-type, the worker's replies): kept lines are
    shared, taken and replaced while others read them."""
    import threading

    files = sorted(EXAMPLES.glob("**/passes_dump/*.py"))
    texts = [f.read_text(encoding="utf-8") for f in files]
    want = [parse_text(t, "x.py", printer_forms=False).program for t in texts]
    line_reuse.forget()
    bad: list[int] = []

    def work(order: list[int]) -> None:
        for i in order:
            if parse_text(texts[i], "x.py").program != want[i]:
                bad.append(i)

    orders = [list(range(len(texts))), list(reversed(range(len(texts)))), list(range(0, len(texts), 2)) * 2]
    threads = [threading.Thread(target=work, args=(o,)) for o in orders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
