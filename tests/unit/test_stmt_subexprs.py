"""``ir.model.stmt_subexprs`` (and ``stmt_reads``): a statement's expressions walked once, kept by statement identity.

The checker, the lowering and the code generator all ask for every sub-expression of a statement;
the walk is kept per statement object (line reuse hands an unchanged line's statement to the next
dump as the same object). Here: the kept walk is the walk, on every statement of every dump in pass
order (shared statements included), and a kept walk is never handed to another statement.
"""

from __future__ import annotations

from pathlib import Path

from pypto_lsp.ir import model
from pypto_lsp.ir.model import Assign, Name, Span, Target, stmt_exprs, stmt_reads, stmt_subexprs, walk_expr, walk_stmts
from pypto_lsp.ir.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def _walked(s: model.Stmt) -> list[model.Expr]:
    return [sub for e in stmt_exprs(s) for sub in walk_expr(e)]


def test_kept_walk_is_the_walk_on_every_dump_in_pass_order() -> None:
    folders = sorted({p.parent for p in ROOT.glob("examples/**/passes_dump/*.py")})
    folders += sorted({p.parent for p in FIXTURES.glob("*/passes_dump/*.py")})
    statements = shared = kept = 0
    seen: set[int] = set()
    for folder in folders:
        for f in sorted(folder.glob("*.py")):
            program = parse_text(f.read_text(encoding="utf-8"), str(f)).program
            if program is None:
                continue
            for fn in program.functions:
                for s in walk_stmts(fn.body):
                    statements += 1
                    shared += id(s) in seen
                    seen.add(id(s))
                    first = stmt_subexprs(s)
                    assert list(first) == _walked(s), (f, s.span)
                    assert all(a is b for a, b in zip(first, _walked(s), strict=True))
                    bodied = isinstance(s, model.For | model.While | model.If | model.Scope)
                    kept += not bodied
                    assert stmt_subexprs(s) is first  # kept, not walked again
                    # a loop's entry holds its header's expressions, not the loop (and with it its body)
                    assert (model._SUBEXPRS[id(s)][0] is s) != bodied
                    assert stmt_reads(s) == {e.id for e in _walked(s) if isinstance(e, Name)}
    assert statements > 1000 and kept > statements // 2
    assert shared > 0  # line reuse handed statements over, and their walks with them


def test_a_kept_walk_is_never_another_statements() -> None:
    span = Span(1, 0, 1, 1)
    a = Assign(Target("x", span), Name("a", span), span)
    walk_a = stmt_subexprs(a)
    assert [e.id for e in walk_a] == ["a"]  # type: ignore[union-attr]
    # an equal statement that is another object: its own walk (its own expression objects)
    b = Assign(Target("x", span), Name("a", span), span)
    walk_b = stmt_subexprs(b)
    assert walk_b[0] is b.value and walk_b[0] is not walk_a[0]
    # an entry whose statement is not the one asked about (an id taken over): walked again
    c = Assign(Target("y", span), Name("c", span), span)
    model._SUBEXPRS[id(c)] = (a, walk_a)
    assert stmt_subexprs(c)[0] is c.value


def test_a_loops_kept_walk_is_its_headers() -> None:
    program = parse_text(
        "import pypto.language as pl\n@pl.program\nclass P:\n    @pl.function\n    def f(self, n: pl.Scalar[pl.INDEX]):\n"
        "        for i in pl.range(n):\n            x = i + 1\n        for j in pl.range(n + 2):\n            y = j\n",
        "t.py",
    ).program
    assert program is not None
    loops = [s for s in walk_stmts(program.functions[0].body) if isinstance(s, model.For)]
    a, b = loops
    walk_a = stmt_subexprs(a)
    assert [type(e).__name__ for e in walk_a] == ["Name"]
    # another loop whose id takes over the entry (the first one gone): its own header, walked again
    model._SUBEXPRS[id(b)] = model._SUBEXPRS[id(a)]
    assert [type(e).__name__ for e in stmt_subexprs(b)] == ["BinOp", "Name", "Const"]
    assert model._SUBEXPRS[id(b)][0] == (b.stop,)


def test_the_kept_walks_are_bounded() -> None:
    span = Span(1, 0, 1, 1)
    kept = model.SUBEXPRS_KEPT
    try:
        model.SUBEXPRS_KEPT = 8
        model._SUBEXPRS.clear()
        stmts = [Assign(Target(f"x{i}", span), Name("a", span), span) for i in range(20)]
        for s in stmts:
            assert stmt_subexprs(s)[0] is s.value
            assert len(model._SUBEXPRS) <= 8
    finally:
        model.SUBEXPRS_KEPT = kept


def test_function_statements_are_its_walk_and_stay_with_it() -> None:
    """``Function.statements()`` is ``walk_stmts`` of the body, kept on the function object only:
    a copy made with ``dataclasses.replace`` (another body) walks its own body."""
    import dataclasses

    text = (ROOT / "examples" / "elementwise" / "passes_dump").glob("*.py")
    program = parse_text(sorted(text)[-1].read_text(encoding="utf-8"), "x").program
    assert program is not None
    nested = 0
    for fn in program.functions:
        walked = fn.statements()
        assert list(walked) == list(walk_stmts(fn.body))
        assert fn.statements() is walked
        nested += len(walked) - len(fn.body)
        other = dataclasses.replace(fn, body=fn.body[:1])
        assert list(other.statements()) == list(walk_stmts(fn.body[:1]))
    assert nested > 0  # the walk goes into loop bodies: a program without one would not test it
