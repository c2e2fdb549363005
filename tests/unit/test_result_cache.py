"""The result cache's key: what cannot change a result is not in it, so two such dumps run once."""

from __future__ import annotations

import re
from pathlib import Path

from pypto_lsp.exec.codegen import generate
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate.config import RunSettings
from pypto_lsp.validate.folders import keyed_text, normalise, validate_files
from pypto_lsp.validate.golden import load_bundle

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "elementwise"
LAST = EXAMPLE / "passes_dump" / "32_after_InitMemRef.py"
_HEADER = re.compile(r"(in pl\.range\(.*init_values=\(.*\))\):$", re.M)


def _classified(text: str, attrs: str = '{"iter_arg_rebind_0": False}') -> str:
    """``text`` as ClassifyIterArgCarry prints it: its loop headers carry the pass's marks."""
    out, n = _HEADER.subn(rf"\1, attrs={attrs}):", text)
    assert n >= 1
    return out


def _script(text: str) -> list[str]:
    """The generated script's code, its comments (the IR lines it quotes) left out."""
    res = parse_text(text, "dump.py")
    assert res.program is not None and not res.errors
    src = generate(res.program).source
    return [line for line in src.split("\n") if not line.lstrip().startswith("#")]


def test_a_loop_marked_by_classify_iter_arg_carry_is_the_same_run() -> None:
    text = LAST.read_text()
    marked = _classified(text)
    assert marked != text
    for memory in (True, False):
        assert keyed_text(marked, memory) == keyed_text(text, memory)
        assert normalise(marked, memory) == normalise(text, memory)
    # the reason it may be: the engine never reads a loop's attrs. When that changes, this fails:
    # take the marks out of the key then (validate.folders._INERT_LOOP_ATTRS)
    assert _script(marked) == _script(text)


def test_other_loop_attrs_stay_in_the_key() -> None:
    text = LAST.read_text()
    for attrs in ('{"iter_arg_rebind_0": False, "unroll": 2}', '{"something_else": False}', '{"iter_arg_rebind_0": x}'):
        assert keyed_text(_classified(text, attrs), True) != keyed_text(text, True)


def test_the_folder_runs_the_marked_twin_once(tmp_path: Path) -> None:
    a = tmp_path / "46_after_MaterializeRuntimeScopes.py"
    b = tmp_path / "47_after_ClassifyIterArgCarry.py"
    a.write_text(LAST.read_text())
    b.write_text(_classified(LAST.read_text()))
    inputs = load_bundle(EXAMPLE / "golden" / "inputs.pt")
    expected = load_bundle(EXAMPLE / "golden" / "expected.pt")
    rep = validate_files([a, b], inputs, expected, settings=RunSettings(), jobs=1, use_cache=False)
    first, second = rep.files
    assert first.status == second.status == "pass"
    assert not first.cached and second.cached  # one run, its result given to both


MIXED = Path(__file__).resolve().parents[2] / "examples" / "mixed_matmul"


def test_a_stamped_tfree_split_is_the_same_run() -> None:
    """StampTfreeSplit adds ``split=1`` to a ``tfree``: the slot hand-back is a no-op here (a pop frees
    its slot), so the stamped dump and the one before are one run."""
    from pypto_lsp.ir.catalogue import NOOP_OPS
    from pypto_lsp.validate.engine import run_text

    before = (MIXED / "passes_dump" / "24_after_SplitVectorKernel.py").read_text()
    stamped = (MIXED / "passes_dump" / "25_after_StampTfreeSplit.py").read_text()
    assert "tfree_to_aic(acc__tile_Vec, split=1)" in stamped and stamped != before
    assert keyed_text(stamped, True) == keyed_text(before, True)
    # the reason it may be; when a tfree comes to do something, this fails: take the stamp out of
    # the key then (validate.folders._INERT_TFREE_SPLIT)
    assert {"system.tfree_to_aic", "system.tfree_to_aiv"} <= NOOP_OPS
    inputs = load_bundle(MIXED / "golden" / "inputs.pt")
    expected = load_bundle(MIXED / "golden" / "expected.pt")
    runs = [run_text(t, inputs, expected, sanitize=True).to_json() for t in (before, stamped)]
    for r in runs:
        r.pop("seconds", None)
    assert runs[0] == runs[1] and runs[0]["status"] == "pass"


def test_a_tfree_with_something_else_stays_in_the_key() -> None:
    before = (MIXED / "passes_dump" / "24_after_SplitVectorKernel.py").read_text()
    other = before.replace("tfree_to_aic(acc__tile_Vec)", "tfree_to_aic(acc__tile_Vec, split=1, id=2)")
    assert other != before and keyed_text(other, True) != keyed_text(before, True)
