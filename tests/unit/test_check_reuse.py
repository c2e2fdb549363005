"""A function found clean before is not read again (``ir.check_reuse``): the speed of
the static checks changes, never their result.

Every check compares ``check_program`` with earlier programs' functions known against a reading of
every function (``reuse=False``), diagnostic for diagnostic. Other checks make sure the known
functions are really taken, so that the comparisons compare something, and that what a function's
check depends on beyond its own text (a callee's signature, the dynamic dims) is in its key.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_lsp.ir.check import check_program
from pypto_lsp.ir.check_reuse import forget_clean, function_check_keys, known_clean
from pypto_lsp.ir.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
EXAMPLES = ROOT / "examples"
BADINPUT = ROOT / "tests" / "badinput"


def _diags(ds: list[object]) -> list[tuple[object, ...]]:
    return [(d.span, d.severity, d.code, d.message, d.hint) for d in ds]  # type: ignore[attr-defined]


def assert_same(text: str) -> tuple[int, int]:
    """Check with the functions before known and with every function read; equal diagnostics.
    (functions taken as known, functions)."""
    program = parse_text(text, "x.py").program
    if program is None:
        return 0, 0
    known = known_clean(program)
    fast = check_program(program)
    slow = check_program(program, reuse=False)
    assert _diags(fast) == _diags(slow)
    return known, len(program.functions)


def _folders() -> list[Path]:
    dumps = [*EXAMPLES.glob("**/passes_dump/*.py"), *SHARED.glob("fixtures*/**/passes_dump/*.py")]
    return sorted({p.parent for p in dumps})


def test_every_dump_of_every_folder_checks_the_same_with_the_functions_before_it_known() -> None:
    folders = _folders()
    assert folders  # the repo's own examples at least
    known = functions = 0
    for folder in folders:
        forget_clean()
        for f in sorted(folder.glob("*.py")):
            k, n = assert_same(f.read_text(encoding="utf-8"))
            known += k
            functions += n
    assert known > functions // 4  # a folder's passes leave many functions as they were


def test_every_bad_input_checks_the_same_after_every_other() -> None:
    forget_clean()
    files = sorted(p for p in BADINPUT.rglob("*") if p.is_file() and p.suffix in (".py", ""))
    assert files
    for _round in range(2):  # the second round with every clean function of the first known
        for f in files:
            assert_same(f.read_bytes().decode("utf-8", "replace"))


def _program(kernel_params: str, call_args: str, dyn: str = "") -> str:
    return (
        "# pypto.program: P\nimport pypto.language as pl\n" + dyn + "\n@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def k(self, {kernel_params}) -> pl.Tensor[[16, 64], pl.FP32]:\n"
        "        t: pl.Tile[[16, 64], pl.FP32] = pl.tile.load(a, [0, 0], [16, 64], [16, 64])\n"
        "        r: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(t, [0, 0], o)\n"
        "        return r\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        "    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:\n"
        f"        r: pl.Tensor[[16, 64], pl.FP32] = self.k({call_args})\n"
        "        return r\n"
    )


GOOD = "a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]"


def test_a_clean_function_is_taken_as_known_and_checked_again_when_its_text_changes() -> None:
    forget_clean()
    text = _program(GOOD, "a, o")
    assert not check_program(parse_text(text).program)
    assert known_clean(parse_text(text).program) == 2
    # the same functions further down the file: still known (the key is the text, not the lines)
    moved = text.replace("class P:\n", "class P:\n\n\n")
    assert known_clean(parse_text(moved).program) == 2
    # the orchestrator's call changed: it is read again, and its finding is there
    edited = text.replace("self.k(a, o)", "self.k(a, a, o)")
    program = parse_text(edited).program
    assert known_clean(program) == 1
    assert "wrong-arity" in {d.code for d in check_program(program)}


def test_a_callee_whose_signature_changed_gets_its_unchanged_callers_read_again() -> None:
    """The orchestrator's text is the same in both programs; only the kernel's parameters differ.
    Its key holds the callee's signature, so the call's wrong arity is found (a key of its own
    text only would take it as clean)."""
    forget_clean()
    assert not check_program(parse_text(_program(GOOD, "a, o")).program)
    three = GOOD + ", b: pl.Tensor[[16, 64], pl.FP32]"
    program = parse_text(_program(three, "a, o")).program
    assert known_clean(program) == 0
    codes = [d.code for d in check_program(program)]
    assert codes == [d.code for d in check_program(program, reuse=False)]
    assert "wrong-arity" in codes


def test_the_dynamic_dims_are_in_every_key() -> None:
    forget_clean()
    with_n = _program(GOOD, "a, o", dyn='N = pl.dynamic("N")\n')
    assert not check_program(parse_text(with_n).program)
    assert known_clean(parse_text(_program(GOOD, "a, o")).program) == 0


def test_a_finding_is_never_kept() -> None:
    forget_clean()
    text = _program(GOOD, "a, a, o")
    first = check_program(parse_text(text).program)
    assert "wrong-arity" in {d.code for d in first}
    program = parse_text(text).program
    assert known_clean(program) == 1  # the kernel only
    assert _diags(check_program(program)) == _diags(first)


def test_a_text_with_carriage_returns_is_read_whole() -> None:
    forget_clean()
    text = _program(GOOD, "a, o").replace("\n", "\r\n")
    program = parse_text(text).program
    assert function_check_keys(program) is None
    assert not check_program(program)


_EDITS = st.lists(
    st.tuples(st.sampled_from(["delete", "duplicate", "swap", "param", "rename", "blank"]), st.integers(0, 10_000)),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_EDITS)
def test_edited_dumps_check_the_same_with_their_functions_known(edits: list[tuple[str, int]]) -> None:
    """An editor's changes to a dump whose functions are all known clean: lines deleted, duplicated,
    swapped, a parameter dropped from a signature, a name changed."""
    files = sorted(EXAMPLES.glob("**/passes_dump/*.py"))
    assert files
    text = files[len(files) // 2].read_text(encoding="utf-8")
    forget_clean()
    check_program(parse_text(text).program)
    lines = text.split("\n")
    for kind, at in edits:
        i = at % len(lines)
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif kind == "param":
            defs = [j for j, line in enumerate(lines) if line.lstrip().startswith("def ") and ", " in line]
            if defs:
                j = defs[at % len(defs)]
                head, _, rest = lines[j].partition(", ")
                lines[j] = head + ", " + rest.partition(", ")[2] if ", " in rest else lines[j]
        elif kind == "rename":
            lines[i] = lines[i].replace("__ssa_v0", "__ssa_v9", 1)
        else:
            lines.insert(i, "")
        if not lines:
            lines = [""]
    assert_same("\n".join(lines))
