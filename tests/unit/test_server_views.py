"""The server's diagnostics and code lenses are pure functions of a document's ``DocView``: no server,
no worker, no client -- a view in, LSP values out (the end-to-end tests drive the same functions
through the real server)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pypto_lsp.ir.model import split_lines
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.server import contract as C
from pypto_lsp.server.diagnostics import diagnostics_for
from pypto_lsp.server.documents import DocView, Localized, Related, path_to_uri, uri_to_path
from pypto_lsp.server.lenses import lenses_for
from pypto_lsp.validate.report import FAIL, PASS, FileResult, TensorResult, ValueDivergence

EX = Path(__file__).resolve().parents[2] / "examples" / "broken_elementwise" / "passes_dump"


def _view(path: Path, **kw: object) -> DocView:
    text = path.read_text(encoding="utf-8")
    lines = split_lines(text)
    base = DocView(
        uri=path_to_uri(path),
        path=path,
        version=3,
        is_open=True,
        validation=True,
        program=parse_text(text, str(path)).program,
        parse_diags=[],
        parsed_lines=lines,
        result=None,
        result_hash="h1",
        result_lines=lines,
        stale=False,
        pending=False,
        no_golden=False,
        config_error=None,
        compared_label=None,
        divergence=None,
        divergence_previous=None,
        first_divergent=None,
        previous=None,
        changed_blocks=[],
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def _dumps() -> list[Path]:
    return sorted(EX.glob("*.py"))


def test_a_failing_pass_right_after_a_passing_one() -> None:
    prev, this = _dumps()[0], _dumps()[1]
    fr = FileResult(str(this), FAIL, {"out": TensorResult(0.25, 0.5, False)}, writes={"out": [[3, 3]]})
    before = Related(path_to_uri(prev), prev, FileResult(str(prev), PASS), split_lines(prev.read_text()))
    v = _view(this, result=fr, previous=before, changed_blocks=[(2, 4)])
    diags = diagnostics_for(v, "utf-16")
    codes = [d.code for d in diags]
    assert codes == ["numeric-mismatch", "changed-in-divergent-pass"]
    assert diags[0].range.start.line == 2 and "0.25" not in diags[0].message and "2.50e-01" in diags[0].message
    assert prev.name in str(diags[1].message) and (diags[1].range.start.line, diags[1].range.end.line) == (1, 3)
    titles = [(lens.command.title, lens.command.command) for lens in lenses_for(v) if lens.command is not None]
    assert titles[0][0].startswith("✗ out") and titles[0][1] == C.VALIDATE_FILE
    assert ("Show error map of 'out'", C.SHOW_ERROR_MAP) in titles
    assert ("Compare with previous pass", C.COMPARE_WITH_PREVIOUS) in titles
    assert ("Debug this pass", C.DEBUG_PASS) in titles
    # the same view while a run is in flight, or once the text moved on
    assert [lens.command.title for lens in lenses_for(replace(v, pending=True)) if lens.command][0] == "… validating"
    first = lenses_for(replace(v, stale=True))[0]
    assert first.command is not None and first.command.title.endswith("(before edits)")


def test_the_first_differing_value_points_into_the_previous_pass() -> None:
    prev, this = _dumps()[0], _dumps()[1]
    fr = FileResult(str(this), FAIL, {"out": TensorResult(0.25, 0.5, False)})
    val = ValueDivergence(4, "t", 0, 0, 0, 0, 2, 0.25, "max |Δ| 2.50e-01", 3, False)
    prev_rel = Related(path_to_uri(prev), prev, FileResult(str(prev), PASS), split_lines(prev.read_text()))
    v = _view(this, result=fr, divergence=Localized(("h1",), prev, val), divergence_previous=prev_rel)
    first = [d for d in diagnostics_for(v, "utf-16") if d.code == "first-differing-value"]
    assert len(first) == 1 and first[0].range.start.line == 3
    assert first[0].related_information and first[0].related_information[0].location.uri == prev_rel.uri
    assert first[0].related_information[0].location.range.start.line == 1
    lens = [x for x in lenses_for(v) if x.command and x.command.command == C.REVEAL_LINE]
    assert lens and lens[0].command is not None and lens[0].command.arguments == [v.uri, 3]
    # a localisation of an older text of this pass says nothing
    assert not [d for d in diagnostics_for(replace(v, result_hash="h2"), "utf-16") if d.code == "first-differing-value"]


def test_closed_documents_show_no_lenses_and_config_problems_replace_the_result() -> None:
    this = _dumps()[1]
    fr = FileResult(str(this), FAIL, {"out": TensorResult(0.25, 0.5, False)})
    assert lenses_for(_view(this, result=fr, is_open=False)) == []
    v = _view(this, result=fr, config_error="bad rtol")
    assert [d.code for d in diagnostics_for(v, "utf-16")] == ["config"]
    assert [lens.command.title for lens in lenses_for(v) if lens.command][0].startswith("✗ config: bad rtol")


def test_file_uris_round_trip_as_pygls_spells_them() -> None:
    from pygls.uris import from_fs_path, to_fs_path

    for p in (Path("/tmp/a b/passes_dump/01_after_X.py"), Path("/tmp/ü/%x#y.py"), Path("/w/a+b=c;d@e.py")):
        uri = path_to_uri(p)
        assert uri == from_fs_path(str(p))
        assert uri.startswith("file:///") and " " not in uri and "#" not in uri
        assert uri_to_path(uri) == p == Path(str(to_fs_path(uri)))
    assert uri_to_path("file://server/share/x.py") == Path(str(to_fs_path("file://server/share/x.py")))
    assert uri_to_path("untitled:Untitled-1") is None
