"""Pass-dump text -> :class:`~pypto_lsp.ir.model.Program`, with ``ast`` only.

Nothing here executes dump text. Anything outside the dump grammar becomes an
error diagnostic at its span and parsing goes on, so a file with several
problems reports all of them.
"""

from __future__ import annotations

import ast
import codecs
import errno
import gc
import io
import os
import re
import stat
import threading
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import diagnostics as D
from . import line_reuse
from .model import (
    Assign,
    Break,
    Const,
    Continue,
    DictExpr,
    Expr,
    ExprStmt,
    For,
    FuncAttr,
    Function,
    If,
    Param,
    Pass,
    Program,
    Return,
    Scope,
    Span,
    Stmt,
    Target,
    Type,
    Unpack,
    While,
    Yield,
    trailing_yield,
)
from .names import ENUMS, LOOP_KINDS, SCOPE_KINDS
from .parse_exprs import dotted, is_dunder, is_pl_call
from .parse_types import TypeParser
from .printer_forms import blank_printer_forms

__all__ = ["MAX_BYTES", "ParseResult", "gc_paused", "load", "loads", "parse_bytes", "parse_text"]

MAX_BYTES = 8 * 1024 * 1024
_HEADER = re.compile(r"^#\s*pypto\.program:\s*(\S+)")


class ParseResult:
    def __init__(self, program: Program | None, diagnostics: list[D.Diagnostic]) -> None:
        self.program = program
        self.diagnostics = diagnostics

    @property
    def errors(self) -> list[D.Diagnostic]:
        return [d for d in self.diagnostics if d.severity == D.ERROR]


def _rewrite_xor(text: str) -> str | None:
    """The printer writes logical xor as the bare word ``xor``; turn it into ``^`` (same columns)."""
    if not re.search(r"\bxor\b", text):
        return None
    out = []
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int]] = [(t.start[0], t.start[1]) for t in toks if t.type == tokenize.NAME and t.string == "xor"]
    if not edits:
        return None
    for lineno, line in enumerate(lines, start=1):
        cols = [c for (ln, c) in edits if ln == lineno]
        for c in sorted(cols, reverse=True):
            line = line[:c] + "^  " + line[c + 3 :]
        out.append(line)
    return "".join(out)


class _Parser(TypeParser):
    """Statements, functions and the module (expressions and types: the base classes)."""

    # ------------------------------------------------------------------ module

    # line_reuse: the known lines of this parse (line -> kept statement) and the lines it keeps;
    # None: every statement read from the text
    _known: dict[int, tuple[Stmt | line_reuse.Signature, int, int, int]] | None = None
    _keeping: list[tuple[str, tuple[Stmt | line_reuse.Signature, int, int]]] | None = None
    _reused = False  # some line of the text was blanked as known

    def parse(self, printer_forms: bool = True, reuse: bool = False) -> Program | None:
        text = self.text
        parsed = text
        if reuse and "\r" not in text:
            parsed, known = line_reuse.blank_known_lines(text)
            self._known, self._keeping, self._reused = known, [], bool(known)
        if printer_forms:
            parsed, self._forms = blank_printer_forms(parsed)
        try:
            tree = ast.parse(parsed, filename=self.filename or "<dump>", type_comments=False)
        except SyntaxError:
            fixed = _rewrite_xor(parsed)
            if fixed is None:
                raise
            tree = ast.parse(fixed, filename=self.filename or "<dump>")
        name = "Program"
        first = text.split("\n", 1)[0]
        m = _HEADER.match(first)
        if m:
            name = m.group(1)
        functions: list[Function] = []
        program_span = Span(1, 0, max(1, text.count("\n") + 1), 0)
        saw_program = False
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name not in ("pypto.language", "pypto.language.distributed"):
                        self.grammar(node, f"import of '{alias.name}'")
            elif isinstance(node, ast.ImportFrom):
                if node.module not in ("pypto", "pypto.language") or node.level:
                    self.grammar(node, f"import from '{node.module}'")
            elif isinstance(node, ast.Assign) and self._is_dynamic(node):
                continue
            elif isinstance(node, ast.ClassDef):
                if saw_program:
                    self.err(node, "duplicate-program", f"second @pl.program class '{node.name}' in one dump")
                saw_program = True
                if not any(dotted(d) == ["pl", "program"] for d in node.decorator_list):
                    self.err(node, "missing-decorator", f"class '{node.name}' is not decorated with @pl.program")
                for d in node.decorator_list:
                    if dotted(d) != ["pl", "program"]:
                        self.grammar(d, "a class decorator other than @pl.program")
                for k in node.bases + [kw.value for kw in node.keywords]:
                    self.grammar(k, "a class base")
                name = node.name if not m else name
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        f = self._guarded_function(item)
                        if f is not None:
                            functions.append(f)
                    elif isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str):
                        continue  # docstring
                    elif isinstance(item, ast.Pass):
                        continue
                    else:
                        self.grammar(item, f"'{type(item).__name__}' in the program class")
            elif isinstance(node, ast.FunctionDef):
                f = self._guarded_function(node)
                if f is not None:
                    functions.append(f)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                continue
            else:
                self.grammar(node, f"top-level '{type(node).__name__}'")
        seen: dict[str, Function] = {}
        for f in functions:
            if f.name in seen:
                self.err(
                    f.name_span, "duplicate-function", f"function '{f.name}' is defined twice (first at line {seen[f.name].span.line})"
                )
            else:
                seen[f.name] = f
        return Program(name, functions, dict(self.dyn), program_span, self.filename, text)

    def _is_dynamic(self, node: ast.Assign) -> bool:
        v = node.value
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(v, ast.Call)
            and dotted(v.func) == ["pl", "dynamic"]
        ):
            self.dyn[node.targets[0].id] = Span.of(node.targets[0])
            a = v.args
            if len(a) != 1 or v.keywords or not (isinstance(a[0], ast.Constant) and isinstance(a[0].value, str)):
                self.grammar(v, "pl.dynamic(...) with anything but one name string")
            return True
        return False

    # ------------------------------------------------------------------ functions

    def _guarded_function(self, node: ast.FunctionDef) -> Function | None:
        try:
            return self.function(node)
        except RecursionError:  # a signature nested too deep (bodies are guarded per statement)
            self.err(node, "too-deep", "expression nesting is too deep to parse")
            return None

    def function(self, node: ast.FunctionDef) -> Function | None:
        sig = self._known_signature(node)
        name = sig.name if sig is not None else node.name
        if is_dunder(name):
            self.grammar(node, f"dunder function name '{name}'")
        kind, level, role = "Opaque", None, None
        attrs: dict[str, Expr] = {}
        decorated = False
        for dec in node.decorator_list:
            dd = dotted(dec.func if isinstance(dec, ast.Call) else dec)
            if dd != ["pl", "function"]:
                self.grammar(dec, "a decorator other than @pl.function")
                continue
            decorated = True
            if isinstance(dec, ast.Call):
                for a in dec.args:
                    self.grammar(a, "a positional @pl.function argument")
                for kw in dec.keywords:
                    if kw.arg == "type":
                        kind = self._enum_member(kw.value, "FunctionType") or kind
                    elif kw.arg == "level":
                        level = self._enum_member(kw.value, "Level")
                    elif kw.arg == "role":
                        role = self._enum_member(kw.value, "Role")
                    elif kw.arg == "attrs":
                        d = self.expr(kw.value)
                        if isinstance(d, DictExpr):
                            self._merge_attrs(attrs, d)
                    elif kw.arg in ("auto_scope", "external_source", "strict_ssa", "name"):
                        attrs[kw.arg] = self.expr(kw.value)
                    else:
                        self.err(kw.value, "unknown-keyword", f"@pl.function has no keyword '{kw.arg}'")
        if not decorated:
            self.err(node, "missing-decorator", f"function '{name}' is not decorated with @pl.function")
        if sig is None:
            sig = self._signature(node)
        params, returns, has_self = list(sig.params), list(sig.returns), sig.has_self
        body_nodes = list(node.body)
        abstract = False
        if (
            len(body_nodes) == 1
            and isinstance(body_nodes[0], ast.Expr)
            and isinstance(body_nodes[0].value, ast.Constant)
            and body_nodes[0].value.value is Ellipsis
        ):
            abstract = True
            body_nodes = []
        body = self.block(body_nodes)
        # pl.func_attr({...}) prologue
        for s in body:
            if isinstance(s, FuncAttr):
                self._merge_attrs(attrs, s.attrs)
        name_span = self._name_span(node, name)
        return Function(
            name=name,
            kind=kind,
            params=params,
            returns=returns,
            body=body,
            span=Span.of(node),
            name_span=name_span,
            level=level,
            role=role,
            attrs=attrs,
            has_self=has_self,
            abstract=abstract,
            first_line=min([node.lineno, *(d.lineno for d in node.decorator_list)]),
        )

    def _known_signature(self, node: ast.FunctionDef) -> line_reuse.Signature | None:
        """The kept signature a placeholder ``def`` line stands for (:mod:`.line_reuse`), taken back."""
        known = self._known
        if not known or not node.name.startswith(line_reuse.DEF_PLACEHOLDER):
            return None
        hit = known.get(node.lineno)
        if hit is None or not isinstance(hit[0], line_reuse.Signature) or node.col_offset != hit[3]:
            return None
        del known[node.lineno]
        sig, (_, line, col, indent) = hit[0], hit
        if line == node.lineno and col == indent:
            return sig
        moved: line_reuse.Signature = line_reuse.moved(sig, line, node.lineno - line, indent - col)
        if self._keeping is not None:  # kept where it is now, as a moved statement is
            self._keeping.append((self.lines[node.lineno - 1][indent:], (moved, node.lineno, indent)))
        return moved

    def _signature(self, node: ast.FunctionDef) -> line_reuse.Signature:
        """The name, parameters and return types of ``node`` read from its ``def``; kept for the next
        text (:func:`.line_reuse.keep_signature`) when it stood on one line and read without a diagnostic."""
        n = len(self.diags)
        fargs = node.args
        for extra in (fargs.vararg, fargs.kwarg):
            if extra is not None:
                self.grammar(extra, "*args/**kwargs")
        if fargs.kwonlyargs or fargs.posonlyargs or fargs.defaults or fargs.kw_defaults:
            self.grammar(node, "keyword-only, positional-only or default parameters")
        params: list[Param] = []
        has_self = False
        for i, arg in enumerate(fargs.args):
            if i == 0 and arg.arg == "self" and arg.annotation is None:
                has_self = True
                continue
            if is_dunder(arg.arg):
                self.grammar(arg, f"dunder parameter name '{arg.arg}'")
            direction = "in"
            ptype: Type | None = None
            if arg.annotation is None:
                self.err(arg, "missing-annotation", f"parameter '{arg.arg}' has no type annotation")
            else:
                ann = arg.annotation
                if isinstance(ann, ast.Subscript) and dotted(ann.value) in (["pl", "Out"], ["pl", "InOut"]):
                    direction = "out" if dotted(ann.value) == ["pl", "Out"] else "inout"
                    ann = ann.slice
                ptype = self.type(ann)
            params.append(Param(arg.arg, ptype, direction, Span.of(arg)))
        returns: list[Type] = []
        if node.returns is not None:
            r = node.returns
            if isinstance(r, ast.Subscript) and dotted(r.value) == ["tuple"]:
                elts = r.slice.elts if isinstance(r.slice, ast.Tuple) else [r.slice]
                for e in elts:
                    t = self.type(e)
                    if t is not None:
                        returns.append(t)
            elif not (isinstance(r, ast.Constant) and r.value is None):
                t = self.type(r)
                if t is not None:
                    returns.append(t)
        sig = line_reuse.Signature(node.name, params, returns, has_self)
        line = node.lineno
        if (
            self._keeping is not None
            and len(self.diags) == n
            and node.body
            and node.body[0].lineno > line
            and all(a.end_lineno == line for a in fargs.args)
            and (node.returns is None or node.returns.end_lineno == line)
            and line <= len(self.lines)
        ):
            entry = line_reuse.keep_signature(sig, self.lines[line - 1], line, node.col_offset)
            if entry is not None:
                self._keeping.append(entry)
        return sig

    def _name_span(self, node: ast.FunctionDef, name: str) -> Span:
        # "def name" sits on the line of the def keyword, after the decorators.
        line = node.lineno
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = src.find("def " + name)
        if col < 0:
            return Span(line, node.col_offset, line, node.col_offset + 3)
        return Span(line, col + 4, line, col + 4 + len(name))

    def _merge_attrs(self, attrs: dict[str, Expr], d: DictExpr) -> None:
        for k, v in zip(d.keys, d.values, strict=False):
            if isinstance(k, Const) and isinstance(k.value, str):
                attrs[k.value] = v

    def _enum_member(self, node: ast.expr, enum: str) -> str | None:
        dd = dotted(node)
        if dd and len(dd) == 3 and dd[0] == "pl" and dd[1] == enum:
            members = ENUMS.get(enum)
            if members is not None and dd[2] not in members:
                self.err(node, "unknown-enum", f"pl.{enum} has no member '{dd[2]}'")
            return dd[2]
        self.err(node, "expected-enum", f"expected pl.{enum}.<member>")
        return None

    # ------------------------------------------------------------------ statements

    def block(self, nodes: list[ast.stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for n in nodes:
            try:
                s = self.stmt(n)
            except RecursionError:
                self.err(n, "too-deep", "expression nesting is too deep to parse")
                continue
            if s is not None:
                out.append(s)
        return out

    def target(self, node: ast.expr, ann: ast.expr | None = None) -> Target | None:
        if not isinstance(node, ast.Name):
            self.grammar(node, "an assignment target other than a plain name")
            return None
        if is_dunder(node.id):
            self.grammar(node, f"dunder name '{node.id}'")
        t = self.type(ann) if ann is not None else None
        return Target(node.id, Span.of(node), t)

    def _call_name(self, node: ast.expr) -> list[str] | None:
        return dotted(node.func) if isinstance(node, ast.Call) else None

    def stmt(self, node: ast.stmt) -> Stmt | None:
        known = self._known
        if known is None:
            return self._stmt(node)
        if type(node) is ast.Expr and known:
            v = node.value
            if type(v) is ast.Name and v.id.startswith(line_reuse.PLACEHOLDER):
                hit = known.get(node.lineno)
                if hit is not None and node.col_offset == hit[3] and not isinstance(hit[0], line_reuse.Signature):
                    del known[node.lineno]
                    kept, (_, line, col, indent) = hit[0], hit
                    if line == node.lineno and col == indent:
                        return kept  # where it was: the same objects
                    moved: Stmt = line_reuse.moved(kept, line, node.lineno - line, indent - col)
                    if self._keeping is not None:  # kept where it is now: the next pass's dump most likely has it here too
                        self._keeping.append((self.lines[node.lineno - 1][indent:], (moved, node.lineno, indent)))
                    return moved
        n = len(self.diags)
        s = self._stmt(node)
        if s is not None and self._keeping is not None and len(self.diags) == n and node.end_lineno == node.lineno:
            lines = self.lines
            if node.lineno <= len(lines):
                entry = line_reuse.keep(s, lines[node.lineno - 1], node.lineno, node.col_offset, node.end_col_offset or 0)
                if entry is not None:
                    self._keeping.append(entry)
        return s

    def _stmt(self, node: ast.stmt) -> Stmt | None:
        span = Span.of(node)
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                self.grammar(node, "an annotation without a value")
                return None
            tgt = self.target(node.target, node.annotation)
            if tgt is None:
                return None
            if is_pl_call(node.value, "yield_"):
                assert isinstance(node.value, ast.Call)
                return Yield([tgt], [self.expr(a) for a in node.value.args], span)
            return Assign(tgt, self.expr(node.value), span)
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                self.grammar(node, "a chained assignment")
                return None
            t = node.targets[0]
            if isinstance(t, ast.Tuple | ast.List):
                tgts = [x for x in (self.target(e) for e in t.elts) if x is not None]
                if is_pl_call(node.value, "yield_"):
                    assert isinstance(node.value, ast.Call)
                    return Yield(tgts, [self.expr(a) for a in node.value.args], span)
                return Unpack(tgts, self.expr(node.value), span)
            tgt = self.target(t)
            if tgt is None:
                return None
            if is_pl_call(node.value, "yield_"):
                assert isinstance(node.value, ast.Call)
                return Yield([tgt], [self.expr(a) for a in node.value.args], span)
            return Assign(tgt, self.expr(node.value), span)
        if isinstance(node, ast.Expr):
            v = node.value
            if is_pl_call(v, "yield_"):
                assert isinstance(v, ast.Call)
                return Yield([], [self.expr(a) for a in v.args], span)
            if is_pl_call(v, "func_attr"):
                assert isinstance(v, ast.Call)
                d = self.expr(v.args[0]) if v.args else None
                if not isinstance(d, DictExpr):
                    self.err(v, "bad-func-attr", "pl.func_attr takes one dict literal")
                    return None
                return FuncAttr(d, span)
            if is_pl_call(v, "cond"):
                self.err(v, "misplaced-cond", "pl.cond(...) may only be the first statement of a pl.while_ loop body")
                return None
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                return None  # docstring / string statement: inert
            return ExprStmt(self.expr(v), span)
        if isinstance(node, ast.Return):
            vals: list[Expr] = []
            if node.value is not None:
                if isinstance(node.value, ast.Tuple):
                    vals = [self.expr(e) for e in node.value.elts]
                else:
                    vals = [self.expr(node.value)]
            return Return(vals, span)
        if isinstance(node, ast.For):
            return self.for_stmt(node)
        if isinstance(node, ast.While):
            if node.orelse:
                self.grammar(node.orelse[0], "while ... else")
            return While(self.expr(node.test), [], [], self.block(node.body), span, ssa=False, cond_span=Span.of(node.test))
        if isinstance(node, ast.If):
            return If(self.expr(node.test), self.block(node.body), self.block(node.orelse), span)
        if isinstance(node, ast.With):
            return self.with_stmt(node)
        if isinstance(node, ast.Break):
            return Break(span)
        if isinstance(node, ast.Continue):
            return Continue(span)
        if isinstance(node, ast.Pass):
            return Pass(span)
        what = {
            ast.Import: "an import inside a function",
            ast.ImportFrom: "an import inside a function",
            ast.FunctionDef: "a nested function",
            ast.ClassDef: "a nested class",
            ast.Global: "'global'",
            ast.Nonlocal: "'nonlocal'",
            ast.Delete: "'del'",
            ast.Raise: "'raise'",
            ast.Try: "'try'",
            ast.Assert: "'assert'",
            ast.AugAssign: "an augmented assignment",
            ast.AsyncFunctionDef: "an async function",
        }.get(type(node), f"statement '{type(node).__name__}'")
        self.grammar(node, what)
        return None

    def _loop_target(self, node: ast.expr) -> tuple[Target | None, list[Target]]:
        if isinstance(node, ast.Name):
            return self.target(node), []
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], ast.Tuple):
            var = self.target(node.elts[0])
            its = [x for x in (self.target(e) for e in node.elts[1].elts) if x is not None]
            return var, its
        self.grammar(node, "this loop target")
        return None, []

    def for_stmt(self, node: ast.For) -> Stmt | None:
        span = Span.of(node)
        header = Span(node.lineno, node.col_offset, node.iter.end_lineno or node.lineno, node.iter.end_col_offset or 0)
        if node.orelse:
            self.grammar(node.orelse[0], "for ... else")
        it = node.iter
        dd = dotted(it.func) if isinstance(it, ast.Call) else None
        if not isinstance(it, ast.Call) or dd is None or len(dd) != 2 or dd[0] != "pl":
            self.grammar(it, "a loop over something other than pl.range/parallel/unroll/pipeline/while_/spmd/split_aiv")
            return None
        kind = dd[1]
        kwargs = {kw.arg: kw for kw in it.keywords if kw.arg}
        for kw in it.keywords:
            if kw.arg is None:
                self.grammar(kw.value, "**kwargs")
        init_values = []
        if "init_values" in kwargs:
            iv = kwargs["init_values"].value
            if isinstance(iv, ast.Tuple | ast.List):
                init_values = [self.expr(e) for e in iv.elts]
            else:
                self.err(iv, "bad-init-values", "init_values must be a tuple")
        if kind == "while_":
            if not isinstance(node.target, ast.Tuple):
                self.grammar(node.target, "a pl.while_ target that is not a tuple")
                return None
            its = [x for x in (self.target(e) for e in node.target.elts) if x is not None]
            body_nodes = list(node.body)
            cond: Expr = Const(True, span)
            cond_span = span
            if body_nodes and isinstance(body_nodes[0], ast.Expr) and is_pl_call(body_nodes[0].value, "cond"):
                c = body_nodes[0].value
                assert isinstance(c, ast.Call)
                cond = self.expr(c.args[0]) if c.args else Const(True, Span.of(c))
                cond_span = Span.of(body_nodes[0])
                body_nodes = body_nodes[1:]
            else:
                self.err(node, "missing-cond", "a pl.while_ loop body must start with pl.cond(<condition>)")
            return While(cond, its, init_values, self.block(body_nodes), span, ssa=True, cond_span=cond_span)
        if kind not in LOOP_KINDS:
            self.grammar(it, f"loop iterator pl.{kind}")
            return None
        var, its = self._loop_target(node.target)
        args = [self.expr(a) for a in it.args]
        start: Expr | None = None
        step: Expr | None = None
        if kind in ("spmd", "split_aiv"):
            if not args:
                self.err(it, "wrong-arity", f"pl.{kind} needs a count")
                return None
            stop = args[0]
        else:
            if not 1 <= len(args) <= 3:
                self.err(it, "wrong-arity", f"pl.{kind} takes 1 to 3 positional bounds, got {len(args)}")
                return None
            if len(args) == 1:
                stop = args[0]
            else:
                start, stop = args[0], args[1]
                step = args[2] if len(args) == 3 else None
        extra = {k: self.expr(v.value) for k, v in kwargs.items() if k != "init_values"}
        if len(its) != len(init_values):
            self.err(
                node.target,
                "iter-args-mismatch",
                f"loop declares {len(its)} iter_args but init_values has {len(init_values)} values",
            )
        body = self.block(node.body)
        if its:
            last = trailing_yield(body)
            if last is None:
                self.err(node, "missing-yield", "a loop with iter_args must end with pl.yield_(...)")
            elif len(last.values) != len(its):
                self.err(last.span, "yield-mismatch", f"pl.yield_ gives {len(last.values)} values for {len(its)} iter_args")
        f = For(kind, var, its, start, stop, step, init_values, body, span, extra)
        f.header_span = header
        return f

    def with_stmt(self, node: ast.With) -> Stmt | None:
        span = Span.of(node)
        if len(node.items) != 1:
            self.grammar(node, "a with statement with several items")
            return None
        item = node.items[0]
        ce = item.context_expr
        dd = dotted(ce.func) if isinstance(ce, ast.Call) else None
        if not isinstance(ce, ast.Call) or dd is None or len(dd) != 2 or dd[0] != "pl" or dd[1] not in SCOPE_KINDS:
            self.grammar(ce, "a with statement other than pl.at/cluster/scope/spmd")
            return None
        as_name = self.target(item.optional_vars) if item.optional_vars is not None else None
        kwargs = {kw.arg: self.expr(kw.value) for kw in ce.keywords if kw.arg}
        args = [self.expr(a) for a in ce.args]
        return Scope(dd[1], kwargs, args, as_name, self.block(node.body), span)


def _decode_error_span(data: bytes, exc: UnicodeDecodeError) -> Span:
    line = data.count(b"\n", 0, exc.start) + 1
    col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
    return Span(line, col, line, col + 1)


def read_dump(path: str | Path) -> bytes:
    """A dump file's bytes, at most ``MAX_BYTES + 1`` of them: a bigger file (a sparse 1 GB one)
    is never read whole, and :func:`parse_bytes` refuses what is over the limit. A FIFO, device
    or folder is refused without a blocking read (a FIFO would hang). Raises OSError (unreadable:
    permissions, gone, not a regular file), with ``strerror`` saying why."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = MAX_BYTES + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_bytes(data: bytes, filename: str | None = None) -> ParseResult:
    """Parse raw file content; binary, non-UTF-8 and oversized input become diagnostics."""
    if len(data) > MAX_BYTES:
        return ParseResult(
            None,
            [D.error(None, "too-large", f"file is larger than {MAX_BYTES // 2**20} MiB, the most a pass dump may be; not parsed")],
        )
    if b"\x00" in data[:65536] or b"\x00" in data:
        nul = data.index(b"\x00")
        line = data.count(b"\n", 0, nul) + 1
        return ParseResult(None, [D.error(Span(line, 0, line, 1), "binary", "this is a binary file (NUL byte), not a pass dump")])
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]  # Python and editors accept a UTF-8 signature
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ParseResult(None, [D.error(_decode_error_span(data, exc), "encoding", f"not UTF-8: {exc.reason} at byte {exc.start}")])
    return parse_text(text, filename)


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building a tree: a parse allocates tens of thousands of
    acyclic objects, and the collections they trigger (gen 2 walks the whole heap of a
    long-running server) cost 15-30% of a parse and its worst outliers. Nested and
    thread-safe; the GC is restored to what it was."""
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def parse_text(text: str, filename: str | None = None, *, printer_forms: bool = True) -> ParseResult:
    """Parse dump text into a Program plus every grammar diagnostic found on the way.

    ``printer_forms=False`` reads every annotation through ``ast`` instead of taking the
    :mod:`~pypto_lsp.ir.printer_forms` shortcut; the result is the same, only slower.
    """
    with gc_paused():
        return _parse_text(text, filename, printer_forms)


def _parse_text(text: str, filename: str | None, printer_forms: bool) -> ParseResult:
    if len(text) > MAX_BYTES:
        return ParseResult(
            None,
            [D.error(None, "too-large", f"file is {len(text) / 1e6:.1f} MB; pass dumps above {MAX_BYTES // 2**20} MiB are not parsed")],
        )
    if "\x00" in text:
        return ParseResult(None, [D.error(None, "binary", "this is a binary file (NUL character), not a pass dump")])
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 signature, which Python source may carry
    try:
        p, program = _first_reading(text, filename, printer_forms)
        if p._forms:  # a placeholder stood where no type item may: read the text as written
            p = _Parser(text, filename)
            program = p.parse(printer_forms=False)
        elif p._keeping:
            line_reuse.remember(p._keeping)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        end_line = exc.end_lineno or line
        end_col = (
            (exc.end_offset - 1) if exc.end_offset and exc.end_offset > 0 and end_line == line and exc.end_offset - 1 > col else col + 1
        )
        msg = exc.msg
        if isinstance(exc, IndentationError) or "indent" in msg:
            code = "indentation"
        else:
            code = "syntax"
        return ParseResult(None, [D.error(Span(line, col, end_line, end_col), code, f"syntax error: {msg}")])
    except (RecursionError, MemoryError):
        return ParseResult(None, [D.error(None, "too-deep", "expression nesting is too deep to parse")])
    except ValueError as exc:  # e.g. source contains NUL after decoding
        return ParseResult(None, [D.error(None, "syntax", f"cannot parse: {exc}")])
    return ParseResult(program, p.diags)


def _first_reading(text: str, filename: str | None, printer_forms: bool) -> tuple[_Parser, Program | None]:
    """The text read with the shortcuts (:mod:`.printer_forms`, :mod:`.line_reuse`), and its parser.
    Read again without known lines when a placeholder came back as no statement, or on an exception
    where known lines were blanked (what is raised, a syntax error, its place and words, is then the
    text's own, never a placeholder's)."""
    p = _Parser(text, filename)
    if not printer_forms:
        return p, p.parse(printer_forms=False)
    try:
        program = p.parse(printer_forms=True, reuse=True)
        if not p._known:
            return p, program
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        if not p._reused:
            raise
    p = _Parser(text, filename)
    return p, p.parse(printer_forms=True)


def loads(text: str, filename: str | None = None) -> Program:
    """Parse a dump; raise :class:`IRSyntaxError`/:class:`IRError` on the first error."""
    res = parse_text(text, filename)
    errs = res.errors
    if errs:
        first = errs[0]
        cls = (
            D.IRSyntaxError
            if first.code in ("syntax", "indentation", "outside-grammar", "binary", "encoding", "too-large", "too-deep")
            else D.IRError
        )
        raise cls(first, filename)
    assert res.program is not None
    return res.program


def load(path: str | Path) -> Program:
    p = Path(path)
    res = parse_bytes(read_dump(p), str(p))
    errs = res.errors
    if errs:
        raise D.IRError(errs[0], str(p))
    assert res.program is not None
    return res.program
