"""Static checks on a parsed Program: what can be found wrong without running anything.

Every finding is a :class:`Diagnostic` with a stable ``code`` and a message that
says what to do. The op catalogue is the only source of op facts.
"""

from __future__ import annotations

import math

from . import catalogue, operand_types
from . import diagnostics as D
from .check_reuse import function_check_keys, is_clean, remember_clean
from .model import (
    Assign,
    BinOp,
    Const,
    DictExpr,
    DTypeRef,
    EnumRef,
    Expr,
    For,
    FuncCall,
    Function,
    If,
    Intrinsic,
    ListExpr,
    Name,
    OpaqueType,
    OpCall,
    Program,
    ScalarType,
    Scope,
    Span,
    Stmt,
    Subscript,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Type,
    UnaryOp,
    While,
    Yield,
    entry_function,
    fold_int,
    fold_ints,
    stmt_subexprs,
    stmt_targets,
    trailing_yield,
    walk_expr,
)
from .names import CROSS_CORE_OPS, SPLIT_COLUMNS, SPLIT_MODE_CODE, SPLIT_ROWS
from .printer import expr_str
from .scope_keywords import check_scope
from .value_kinds import ADDRESS_OPS, KIND_WORDS, NOT_A_NUMBER, KindChecks

FREE_VAR_MARK = "__FREE_VAR"

# result rules whose shape/dtype we can compare with an annotation
# ops of no result rule that make an array of their ``shape`` operand (a remote load's tile, a
# window, an extract, a fill-padded expansion, an iota, a triangle, random bits)
_SHAPED = frozenset(
    {
        "pld.tile.remote_load",
        "pld.tensor.window",
        "tile.extract",
        "tile.fillpad_expand",
        "tensor.fillpad_expand",
        "tile.ci",
        "tensor.ci",
        "tile.tri",
        "tile.random",
        "tensor.random",
    }
)
_SHARDS = frozenset({"tile.aiv_shard", "tensor.aiv_shard"})
# the rules whose result dtype is certain (see annotation)
_EXACT_DTYPE = frozenset({"cast", "create", "store", "slice", "reshape", "load"})
_RULES_CHECKED = {"same", "binary", "row_reduce", "col_reduce", "matmul", "cast", "load", "slice", "create", "reshape", "store"}


def check_program(program: Program, entry: str | None = None, *, reuse: bool = True) -> list[D.Diagnostic]:
    """All static diagnostics for ``program`` (parse diagnostics are not repeated here).

    ``reuse``: a function found clean before, word for word with the same callees' signatures, is
    not read again (see :func:`function_check_keys`); False reads every function (the same result)."""
    from .parser import gc_paused

    with gc_paused():
        return _check_program(program, entry, reuse)


def _check_program(program: Program, entry: str | None, reuse: bool) -> list[D.Diagnostic]:
    out: list[D.Diagnostic] = []
    if not program.functions:
        out.append(D.error(program.span, "no-functions", "the dump defines no function"))
        return out
    if entry is not None:
        if program.function(entry) is None:
            out.append(D.error(Span(1, 0, 1, 1), "no-entry", f"entry function '{entry}' is not defined in this dump"))
    elif entry_function(program) is None:
        out.append(
            D.error(
                program.functions[0].name_span,
                "no-entry",
                f"program '{program.name}' has {len(program.functions)} functions but no Orchestration function to run",
                "PyPTO runs the first Orchestration function by name; pass --entry NAME to choose one",
            )
        )
    dims: dict[int, list[int] | None] = {}
    keys = function_check_keys(program) if reuse else None
    for i, fn in enumerate(program.functions):
        seen: set[str] = set()
        for p in fn.params:
            if p.name in seen:  # Python's compile: "duplicate argument ... in function definition"
                out.append(D.error(p.span, "duplicate-param", f"'{fn.name}' has two parameters named '{p.name}'"))
            seen.add(p.name)
        key = keys[i] if keys is not None else None
        if key is not None and is_clean(key):
            continue  # checked before, word for word with the same callees' signatures: found nothing
        before = len(out)
        _FunctionChecker(program, fn, out, dims).run()
        if key is not None and len(out) == before:
            remember_clean(key)
    _check_groups(program, out)
    from .depcheck import check_deps
    from .pipecheck import check_pipes

    out.extend(check_pipes(program))
    out.extend(check_deps(program))
    return out


def _core_num_problem(e: Expr) -> str | None:
    """Why ``e`` cannot be a ``core_num`` (the block count of an SPMD call or ``pl.spmd``): a
    literal that is not an integer, or an integer below 1; None for what only a run knows."""
    if isinstance(e, UnaryOp) and e.op == "-" and isinstance(e.operand, Const):
        v = e.operand.value
        return f"core_num must be a positive integer, got -{v!r}"
    if isinstance(e, Const) and (not isinstance(e.value, int) or isinstance(e.value, bool)):
        return f"core_num must be a positive integer, got {e.value!r}"
    n = fold_int(e)
    if n is not None and n < 1:
        return f"core_num must be a positive integer (a block count), got {n}"
    return None


class _FunctionChecker(KindChecks):
    def __init__(self, program: Program, fn: Function, out: list[D.Diagnostic], dims: dict[int, list[int] | None]) -> None:
        self.program = program
        self.fn = fn
        self.out = out
        self.types: dict[str, Type] = {}
        self.defined: set[str] = {p.name for p in fn.params} | set(program.dynamic_dims)
        for p in fn.params:
            if p.type is not None:
                self.types[p.name] = p.type
            if isinstance(p.type, TensorType | TileType):
                for d in p.type.shape:
                    if isinstance(d, Name):
                        self.defined.add(d.id)  # implicit dynamic dim (upstream creates it on load)
        # the names bound before the statement being checked (``run`` adds each statement's
        # targets after it), and the first statement that binds each of the others
        self.bound: set[str] = set(self.defined)
        self.subs: tuple[Expr, ...] = ()  # the expressions of the statement being checked
        self.first_binding: dict[str, Span] = {}
        self.addresses = {}
        self.type_source = {}
        self._dims = dims  # (one per program: a callee's parameters are asked at every call)
        self._split_modes: dict[int, int | None] | None = None  # statement -> its split_aiv's mode (made when asked)
        for s in fn.statements():
            if type(s) is Assign and type(s.value) is OpCall and s.value.op in ADDRESS_OPS:
                self.addresses[s.target.name] = s.value.op
            for t in stmt_targets(s):
                self.defined.add(t.name)
                self.first_binding.setdefault(t.name, s.span)
                if t.type is not None:
                    self.types.setdefault(t.name, t.type)
            if isinstance(s, For) and s.var is not None and s.var.type is None:
                # a loop's variable prints without annotation: an INDEX counter (a lane's index for
                # pl.split_aiv, a block's for pl.spmd), as the hover reads it (ir.symbols)
                self.types.setdefault(s.var.name, ScalarType("INDEX", s.var.span))
        self._iter_arg_types()

    def _iter_arg_types(self) -> None:
        """iter_args print without annotations: take the loop's return-var type, else the init's."""
        for s in self.fn.statements():
            if isinstance(s, For | While) and s.iter_args:
                y = trailing_yield(s.body)
                for i, t in enumerate(s.iter_args):
                    if t.name in self.types:
                        continue
                    if y is not None and i < len(y.targets) and y.targets[i].type is not None:
                        self.types[t.name] = y.targets[i].type  # type: ignore[assignment]
                    elif i < len(s.init_values) and isinstance(s.init_values[i], Name):
                        init = s.init_values[i]
                        assert isinstance(init, Name)
                        if init.id in self.types:
                            self.types[t.name] = self.types[init.id]
                            # where the type came from (through the iter_args of enclosing loops)
                            self.type_source[t.name] = self.type_source.get(init.id, init)

    def run(self) -> None:
        for s in self.fn.statements():
            loop = type(s) is For or type(s) is While
            if loop:  # a loop's own variables are bound in its header (a while's condition reads them)
                self.bound.update(t.name for t in stmt_targets(s))
            try:
                self.subs = subs = stmt_subexprs(s)
                for sub in subs:
                    self.expr(sub, s)
                if isinstance(s, Assign):
                    self.no_result(s)
                    self.annotation(s)
            except RecursionError:  # e.g. a 2000-term `a and b and ...` chain: flat in Python, deep in the IR
                self.add(D.error(s.span, "too-deep", "expression nesting is too deep to check"))
                continue
            if isinstance(s, Scope):
                self.out.extend(check_scope(s))
            if isinstance(s, Scope) and s.kind == "spmd":
                count = s.args[0] if s.args else s.kwargs.get("core_num")
                problem = self.core_num_problem(count) if count is not None else None
                if count is not None and problem is not None:
                    self.add(D.error(count.span, "bad-core-num", f"pl.spmd: {problem}"))
            if isinstance(s, For):
                self.loop_bounds(s)
            if isinstance(s, For | While):
                self.init_values(s)
            if isinstance(s, Yield):
                self.yield_kinds(s)
            if isinstance(s, For) and s.kind == "split_aiv" and (lanes := fold_int(s.stop)) is not None and lanes != 2:
                # PyPTO's parser: "AIV sub-core count is hardware-fixed at 2"; with 0 lanes a name
                # the body assigns is never bound, and Python said UnboundLocalError
                self.add(D.error(s.stop.span, "bad-lane-count", f"pl.split_aiv({lanes}): the AIV sub-core count is 2 on the hardware"))
            if isinstance(s, While) and s.ssa:
                self.while_yield(s)
            if isinstance(s, If):
                self.if_yields(s)
            if isinstance(s, If | While):
                self.condition(s.cond, "pl.cond" if isinstance(s, While) and s.ssa else "the condition")
            if not loop:
                self.bound.update(t.name for t in stmt_targets(s))

    def _own_dep(self, e: Name, stmt: Stmt) -> bool:
        """``e`` is in a ``deps=`` of the statement being checked, which assigns it: a task waiting
        on its own id reads it above its assignment too, which the dependency check (ir.depcheck)
        says in the runtime's words; asked only of a name read above its assignment. An id a later
        statement assigns (two statements swapped) is read before it is assigned, as any name."""
        if e.id not in {t.name for t in stmt_targets(stmt)}:
            return False
        return any(x is e for c in self.subs if isinstance(c, OpCall | FuncCall) for x in _dep_items(c))

    def add(self, d: D.Diagnostic) -> None:
        self.out.append(d)

    def expr(self, e: Expr, stmt: Stmt) -> None:
        if isinstance(e, Name):
            if e.id.endswith(FREE_VAR_MARK) or FREE_VAR_MARK in e.id:
                self.add(
                    D.error(
                        e.span,
                        "free-var",
                        f"'{e.id}' is used but never defined in '{self.fn.name}': the printer marks such uses with {FREE_VAR_MARK}",
                        "a pass left a reference to a variable of another scope; this dump cannot run",
                    )
                )
            elif e.id not in self.defined:
                self.add(D.error(e.span, "undefined-name", f"undefined name '{e.id}' in function '{self.fn.name}'"))
            elif e.id not in self.bound and not self._own_dep(e, stmt):
                # the DSL binds a name where it is assigned, as pypto's parser reads it (top to
                # bottom): a read above every statement that assigns it can never run
                first = self.first_binding[e.id]
                self.add(
                    D.error(
                        e.span,
                        "used-before-assigned",
                        f"'{e.id}' is read before it is assigned: the first statement that assigns it is on line {first.line}",
                        "a pass moved this statement above the one that defines its operand, or dropped that one",
                    )
                )
        elif isinstance(e, OpCall):
            self.op_call(e)
        elif isinstance(e, FuncCall):
            callee = self.program.function(e.func)
            if callee is None:
                self.add(D.error(e.name_span, "undefined-function", f"call to undefined function '{e.func}'"))
            else:
                self.core_num(e, stmt)
                self.device_value(e)
                extra = {
                    k
                    for k in e.kwargs
                    if k
                    not in ("attrs", "device", "deps", "core_num", "sync_start", "name_hint", "task_id", "predicate", "allow_early_resolve")
                }
                if extra:
                    self.add(D.warning(e.span, "unknown-keyword", f"unexpected keyword(s) {sorted(extra)} in call to '{e.func}'"))
                if len(e.args) != len(callee.params):
                    self.add(
                        D.error(
                            e.span,
                            "wrong-arity",
                            f"'{e.func}' takes {len(callee.params)} arguments, called with {len(e.args)}",
                        )
                    )
                else:
                    self.argument_kinds(e, callee)
        elif isinstance(e, BinOp) and e.op in ("and", "or"):
            self.condition(e.left, f"'{e.op}'")
            self.condition(e.right, f"'{e.op}'")
        elif isinstance(e, UnaryOp) and e.op == "not":
            self.condition(e.operand, "'not'")
        elif isinstance(e, BinOp | UnaryOp | Intrinsic) and (bad := self.not_a_number(e)) is not None:
            side, kind = bad
            self.add(
                D.error(
                    side.span,
                    "scalar-arithmetic",
                    f"'{expr_str(e)}' computes on {self.describe(side, kind)}",
                    "arithmetic in the DSL is of scalars; an array is computed on with ops (pl.tile.adds, ...)",
                )
            )
        elif isinstance(e, BinOp) and e.op in ("//", "%", "/") and fold_int(e.right) == 0:
            # an integer divisor that folds to 0: Python said "integer modulo by zero" in the run
            self.add(
                D.error(
                    e.span,
                    "division-by-zero",
                    f"'{expr_str(e)}' divides by zero",
                    "the divisor folds to 0: the device's result is undefined",
                )
            )
        elif isinstance(e, Intrinsic) and e.name in ("min", "max") and len(e.args) != 2:
            self.add(D.error(e.span, "wrong-arity", f"pl.{e.name} takes 2 arguments, got {len(e.args)}"))

    def core_num(self, e: FuncCall, stmt: Stmt) -> None:
        """``attrs={"core_num": N}`` / ``core_num=N`` of a call: a block count, checked here (the
        run would fail on it with Python's words, or not at all for 0). The one value of ``attrs``
        the run evaluates, so its expression is checked as any operand is: the ops in it (their
        arity, operands, keywords) and the names it reads (``walk_expr`` leaves ``attrs`` out)."""
        found = [e.kwargs["core_num"]] if "core_num" in e.kwargs else []
        attrs = e.kwargs.get("attrs")
        if isinstance(attrs, DictExpr):
            in_attrs = [v for k, v in zip(attrs.keys, attrs.values, strict=False) if isinstance(k, Const) and k.value == "core_num"]
            for v in in_attrs:
                for sub in walk_expr(v):
                    self.expr(sub, stmt)
            found += in_attrs
        for v in found:
            problem = self.core_num_problem(v)
            if problem is not None:
                self.add(D.error(v.span, "bad-core-num", f"call to '{e.func}': {problem}"))

    def core_num_problem(self, e: Expr) -> str | None:
        """Why ``e`` cannot be a block count: :func:`_core_num_problem`, or a value of another kind
        (a tile, a list, a memory space, an op with no result)."""
        problem = _core_num_problem(e)
        if problem is not None:
            return problem
        kind = self.value_kind(e)
        if kind == "none" and isinstance(e, OpCall):
            return f"core_num must be a positive integer, but '{e.op}' returns nothing"
        if kind is not None and kind != "scalar":
            return f"core_num must be a positive integer, got {self.describe(e, kind)}"
        return None

    def op_call(self, e: OpCall) -> None:
        spec = catalogue.lookup(e.op)
        if spec is None:
            self.add(D.error(e.name_span, "unknown-op", f"unknown op '{e.printed}'", "not an op PyPTO registers; check the spelling"))
            return
        n = len(e.args)
        if not spec.variadic and not (spec.min_args <= n <= len(spec.params)):
            want = str(spec.min_args) if spec.min_args == len(spec.params) else f"{spec.min_args} to {len(spec.params)}"
            self.add(
                D.error(
                    e.span,
                    "wrong-arity",
                    f"'{e.op}' takes {want} positional arguments ({', '.join(spec.params)}), got {n}",
                )
            )
        for k, v in e.kwargs.items():
            if k not in spec.kwargs:
                self.add(
                    D.error(v.span, "unknown-keyword", f"'{e.op}' has no keyword '{k}'", f"accepted: {', '.join(spec.kwargs) or 'none'}")
                )
        self.operand_kinds(e, spec)
        self.keyword_kinds(e, spec)
        self.device_value(e)
        self.out.extend(operand_types.problems(e, self.shape_of, self.dtype_of))
        if spec.status == "unsupported":
            self.add(
                D.warning(
                    e.name_span,
                    "unsupported-op",
                    f"'{e.op}' is a valid op but pypto-lsp cannot execute it yet; a run that reaches it fails here",
                )
            )

    def shape_of(self, e: Expr) -> list[int] | None:
        return self._shape_of(e)[0]

    def dtype_of(self, e: Expr) -> str | None:
        return self._shape_of(e)[1]

    def _shape_of(self, e: Expr, depth: int = 0) -> tuple[list[int] | None, str | None]:
        if isinstance(e, Name):
            t = self.types.get(e.id)
            if isinstance(t, TensorType | TileType):
                return fold_ints(t.shape), t.dtype
            if isinstance(t, ScalarType):
                return None, t.dtype
        elif isinstance(e, OpCall) and e.args and depth < 8:
            # an op nested in another's operands (``pl.tensor.mul(pl.tensor.exp(x), y)``): an
            # elementwise one has its first operand's shape
            spec = catalogue.lookup(e.op)
            if spec is not None and spec.result in ("same", "binary") and e.op.startswith(("tile.", "tensor.")):
                shape, dtype = self._shape_of(e.args[0], depth + 1)
                if spec.result == "binary" and shape is not None and len(e.args) > 1:
                    other, _ = self._shape_of(e.args[1], depth + 1)
                    if other is not None and len(other) == len(shape):
                        shape = _broadcast(shape, other)
                return shape, dtype
        return None, None

    def no_result(self, s: Assign) -> None:
        """An op that returns nothing (a push, a barrier, a free), its result assigned: the name
        would hold None, and the run fails where it is read, in Python's words."""
        v = s.value
        if isinstance(v, OpCall) and self.value_kind(v) == "none":
            self.add(
                D.error(
                    v.span,
                    "no-result",
                    f"'{v.op}' returns nothing, but its result is assigned to '{s.target.name}'",
                    "an op of this kind is a statement on its own line; a pass or an edit put it where a value goes",
                )
            )

    def annotation(self, s: Assign) -> None:
        t = s.target.type
        v = s.value
        if isinstance(t, TensorType | TileType):
            self.annotation_dims(s.target.name, t)
        if isinstance(v, FuncCall) and isinstance(t, TensorType | TileType):
            self.call_result(s, t, v)
        if isinstance(v, Subscript) and isinstance(t, TensorType | TileType):
            self.tuple_item(s, t, v)
        if not isinstance(v, OpCall):
            return
        made = self.value_kind(v)
        if isinstance(t, ScalarType) and (made in ("tile", "tensor") or (made == "task_id" and t.dtype != "TASK_ID")):
            self._kind_mismatch(s, f"a pl.Scalar[pl.{t.dtype}]" if made == "task_id" else "a scalar", made)
            return
        if isinstance(t, OpaqueType) and t.name != "UnknownType" and made in ("tile", "tensor", "array", "scalar", "task_id"):
            # a handle (a pointer, a context) made by an op of an array or a number: a window of it
            # failed in the run ("pld.tensor.window needs a buffer from pld.tensor.alloc_window_buffer")
            self._kind_mismatch(s, f"a {t.name}", made)
            return
        if not isinstance(t, TensorType | TileType):
            return
        if made == "scalar":
            self._kind_mismatch(s, KIND_WORDS["tile" if isinstance(t, TileType) else "tensor"], "scalar")
            return
        spec = catalogue.lookup(v.op)
        if spec is None or (spec.result not in _RULES_CHECKED and v.op not in _SHAPED and v.op not in _SHARDS):
            return
        declared = fold_ints(t.shape)
        shape: list[int] | None = None
        dtype: str | None = None
        a0_shape, a0_dtype = self._shape_of(v.args[0]) if v.args else (None, None)
        rule = "shaped" if v.op in _SHAPED else spec.result
        if v.op in _SHARDS and a0_shape is not None and len(a0_shape) == 2:
            # this lane's part of the cube's tile: the ceil half along the split axis (rows for
            # UP_DOWN, columns for LEFT_RIGHT), the whole tile with no split (PyPTO's
            # DeduceSplitReshape); the run fits the part to the annotation, so only here is a
            # wrong one seen
            code = self._split_code(v, s)
            if code is not None:
                axis = 0 if code in SPLIT_ROWS else 1 if code in SPLIT_COLUMNS else None
                shape = list(a0_shape)
                if axis is not None:
                    shape[axis] = (shape[axis] + 1) // 2
                rule = "shard"
        if rule == "shaped":  # an array of its shape operand, held as a load is (its element count)
            at = spec.params.index("shape")
            dims = v.args[at] if len(v.args) > at else None
            shape = fold_ints(dims.items) if isinstance(dims, ListExpr) else None
        elif rule in ("same", "binary"):
            shape, dtype = a0_shape, a0_dtype
            if rule == "binary" and len(v.args) > 1:
                a1_shape, _ = self._shape_of(v.args[1])
                if shape is not None and a1_shape is not None and len(shape) == len(a1_shape):
                    shape = _broadcast(shape, a1_shape)
        elif rule == "row_reduce" and a0_shape:
            shape, dtype = a0_shape[:-1] + [1], a0_dtype
        elif rule == "col_reduce" and a0_shape and len(a0_shape) >= 2:
            shape, dtype = a0_shape[:-2] + [1, a0_shape[-1]], a0_dtype
        elif rule == "cast":
            shape = a0_shape
            tt = v.kwargs.get("target_type")
            dtype = tt.name if isinstance(tt, DTypeRef) else None
        elif rule == "load" and len(v.args) > 2 and isinstance(v.args[2], ListExpr):
            shape, dtype = fold_ints(v.args[2].items), a0_dtype
        elif rule in ("slice", "reshape") and len(v.args) > 1 and isinstance(v.args[1], ListExpr):
            shape, dtype = fold_ints(v.args[1].items), a0_dtype
        elif rule == "create" and v.args and isinstance(v.args[0], ListExpr):
            shape = fold_ints(v.args[0].items)
            dk = v.kwargs.get("dtype")
            dtype = dk.name if isinstance(dk, DTypeRef) else None
        elif rule == "store":
            # a store or an assemble gives back its destination (tile.store's output tensor, an
            # assemble's target), of its shape and dtype: an annotation of another made the run
            # convert or fail where the value is next read (a yield, the output's compare)
            at = spec.params.index("output_tensor") if "output_tensor" in spec.params else 0
            if len(v.args) > at:
                shape, dtype = self._shape_of(v.args[at])
        elif rule == "matmul" and len(v.args) >= 2:
            b_shape, b_dtype = self._shape_of(v.args[1])
            if a0_shape and b_shape and len(a0_shape) >= 2 and len(b_shape) >= 2:
                at = _truthy(v.kwargs.get("a_trans"))
                bt = _truthy(v.kwargs.get("b_trans"))
                m = a0_shape[-1] if at else a0_shape[-2]
                n = b_shape[-2] if bt else b_shape[-1]
                shape = a0_shape[:-2] + [m, n]
            od = v.kwargs.get("out_dtype")
            if isinstance(od, DTypeRef):
                dtype = od.name
        if shape is not None and declared is not None:
            # flattening passes (FlattenTileNdTo2D) legitimately change rank: compare element counts then
            if len(shape) != len(declared):
                if math.prod(shape) != math.prod(declared) and rule in ("same", "binary", "cast"):
                    self._mismatch(s, "shape", declared, shape, v.op)
            elif shape != declared and rule not in ("load", "shaped"):
                self._mismatch(s, "shape", declared, shape, v.op)
            elif shape != declared and rule in ("load", "shaped") and math.prod(shape) != math.prod(declared):
                self._mismatch(s, "shape", declared, shape, v.op)
        # PyPTO's parser holds every annotated assignment to the inferred type's kind, dtype, rank
        # and static dims (language/parser/type_resolver.py, validate_annotation_consistency).
        # The dtypes here are the rules' whose result dtype is certain (the others': PyPTO
        # promotes where torch does not, see runtime.check_value); a view's or a load's is its
        # input's, when that is an array (a scalar there is said above)
        if rule in ("slice", "reshape", "load") and a0_shape is None:
            dtype = None
        if dtype is not None and t.dtype != dtype and rule in _EXACT_DTYPE and not _dtype_compatible(rule, dtype, t.dtype):
            self._mismatch(s, "dtype", t.dtype, dtype, v.op)

    def annotation_dims(self, name: str, t: TensorType | TileType) -> None:
        """The dimensions and valid shape of an annotation are scalars: a tensor there made the
        run's shape check say ``only one element tensors can be converted to Python scalars``."""
        for dim in [*t.shape, *(t.valid_shape or [])]:
            if type(dim) is Const:
                continue
            for sub in walk_expr(dim):
                kind = self.value_kind(sub) if isinstance(sub, Name) else None
                if kind in NOT_A_NUMBER and kind != "none":
                    self.add(D.error(sub.span, "bad-type", f"'{name}' is annotated with a dimension of {self.describe(sub, kind)}"))
                    return

    def _kind_mismatch(self, s: Assign, declared: str, made: str) -> None:
        assert isinstance(s.value, OpCall)
        self.add(
            D.error(
                s.target.span,
                "kind-mismatch",
                f"'{s.target.name}' is annotated as {declared} but '{s.value.op}' produces {KIND_WORDS[made]}",
                "the annotation and the op disagree: one of them is wrong in this pass",
            )
        )

    def _split_code(self, v: OpCall, s: Assign) -> int | None:
        """The split mode of an ``aiv_shard``: its ``split=``, else its ``pl.split_aiv`` loop's
        ``mode=`` (0 none, 1 rows, 2 columns, 3 and 4 their odd forms); None when neither says."""
        kw = v.kwargs.get("split")
        if kw is not None:
            return fold_int(kw)
        if self._split_modes is None:
            self._split_modes = {}
            _enclosing_splits(self.fn.body, None, self._split_modes)
        return self._split_modes.get(id(s))

    def tuple_item(self, s: Assign, t: TensorType | TileType, v: Subscript) -> None:
        """An item of a tuple (a launch's result, gather_compare's pair) annotated with other dims or
        another dtype than the tuple's own annotation gives it."""
        if not isinstance(v.value, Name):
            return
        name, tup, i = v.value.id, self.types.get(v.value.id), fold_int(v.index)
        if not isinstance(tup, TupleType) or i is None or not 0 <= i < len(tup.items):
            return
        item = tup.items[i]
        if not isinstance(item, TensorType | TileType):
            return
        want, got = fold_ints(t.shape), fold_ints(item.shape)
        if want is not None and got is not None and want != got:
            self._mismatch(s, "shape", want, got, f"{name}[{i}]")
        elif item.dtype != t.dtype and not _dtype_compatible("item", item.dtype, t.dtype):
            self._mismatch(s, "dtype", t.dtype, item.dtype, f"{name}[{i}]")

    def call_result(self, s: Assign, t: TensorType | TileType, v: FuncCall) -> None:
        """A call's result annotated with another dtype than the callee returns (one array): the run
        converted it or failed where it was next read (a call taking it, the output's compare)."""
        callee = self.program.function(v.func)
        if callee is None or len(callee.returns) != 1:
            return
        r = callee.returns[0]
        if isinstance(r, TensorType | TileType) and r.dtype != t.dtype and not _dtype_compatible("call", r.dtype, t.dtype):
            self._mismatch(s, "dtype", t.dtype, r.dtype, v.func)

    def _mismatch(self, s: Assign, what: str, declared: object, computed: object, op: str) -> None:
        self.add(
            D.error(
                s.target.span,
                f"{what}-mismatch",
                f"'{s.target.name}' is annotated with {what} {declared} but '{op}' produces {computed}",
                "the annotation and the op disagree: one of them is wrong in this pass",
            )
        )

    # ------------------------------------------------------------------ structured yields

    def while_yield(self, s: While) -> None:
        y = trailing_yield(s.body)
        if len(s.iter_args) != len(s.init_values):
            self.add(
                D.error(
                    s.span, "iter-args-mismatch", f"pl.while_ declares {len(s.iter_args)} iter_args but {len(s.init_values)} init values"
                )
            )
        if s.iter_args and y is None:
            self.add(D.error(s.span, "missing-yield", "a pl.while_ loop with iter_args must end with pl.yield_(...)"))
        elif y is not None and len(y.values) != len(s.iter_args):
            self.add(D.error(y.span, "yield-mismatch", f"pl.yield_ gives {len(y.values)} values for {len(s.iter_args)} iter_args"))

    def if_yields(self, s: If) -> None:
        a, b = trailing_yield(s.then), trailing_yield(s.orelse) if s.orelse else None
        if a is not None and a.targets and s.orelse and b is None:
            self.add(D.error(s.span, "missing-yield", "the else branch must yield the if's return values too"))
        if a is not None and b is not None and len(a.values) != len(b.values):
            self.add(D.error(b.span, "yield-mismatch", f"branches yield {len(a.values)} and {len(b.values)} values"))
        for y in (a, b):
            if y is not None and y.targets and len(y.targets) != len(y.values):
                self.add(D.error(y.span, "yield-mismatch", f"pl.yield_ gives {len(y.values)} values for {len(y.targets)} return variables"))


# what each kind of operand accepts: a tile and a tensor are both arrays to the executor, and some
# ops take either (tile.load's source, the distributed ops' windows); a kind is only wrong when the
# value is no array at all, or an array where a scalar or a list of scalars goes


def _dep_items(e: OpCall | FuncCall) -> list[Expr]:
    deps = e.kwargs.get("deps")
    return list(deps.items) if isinstance(deps, ListExpr | TupleExpr) else []


def _truthy(e: Expr | None) -> bool:
    return isinstance(e, Const) and bool(e.value)


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    """The shape a binary elementwise op makes of two of one rank: a 1 takes the other's extent."""
    return [max(x, y) if 1 in (x, y) else x for x, y in zip(a, b, strict=True)]


def _enclosing_splits(body: list[Stmt], code: int | None, out: dict[int, int | None]) -> None:
    """Each statement of ``body`` (by identity) -> the mode of the innermost ``pl.split_aiv`` loop
    around it (``SPLIT_MODE_CODE``; None outside one, or a mode the dump does not spell)."""
    for st in body:
        out[id(st)] = code
        if isinstance(st, For):
            inner = code
            if st.kind == "split_aiv":
                mode = st.kwargs.get("mode")
                inner = SPLIT_MODE_CODE.get(mode.member) if isinstance(mode, EnumRef) else None
            _enclosing_splits(st.body, inner, out)
        elif isinstance(st, While | Scope):
            _enclosing_splits(st.body, code, out)
        elif isinstance(st, If):
            _enclosing_splits(st.then, code, out)
            _enclosing_splits(st.orelse, code, out)


def _dtype_compatible(rule: str, computed: str, declared: str) -> bool:
    # INDEX and INT64 share a representation; BOOL masks may be declared UINT8
    same = {frozenset({"INDEX", "INT64"}), frozenset({"BOOL", "UINT8"})}
    return frozenset({computed, declared}) in same


# id(function) -> (the function, its codes): the checker, the lowering and the code generator each
# ask for a Group's kernels' codes in turn (a parsed function is never changed)
_SPLIT_CODES: dict[int, tuple[Function, dict[int, Span]]] = {}


def transport_split_codes(fn: Function) -> dict[int, Span]:
    """split= codes of the cross-core transport ops in ``fn`` (first span of each); the checker
    and the code generator's Group pairing both read them here. A new dict each call."""
    hit = _SPLIT_CODES.get(id(fn))
    if hit is not None and hit[0] is fn:
        return dict(hit[1])
    codes: dict[int, Span] = {}
    for s in fn.statements():
        for sub in stmt_subexprs(s):
            if isinstance(sub, OpCall) and sub.op in CROSS_CORE_OPS:
                v = sub.kwargs.get("split")
                if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
                    codes.setdefault(v.value, sub.span)
    if len(_SPLIT_CODES) >= 512:  # (each keeps its function alive: a few programs' Group kernels)
        _SPLIT_CODES.clear()
    _SPLIT_CODES[id(fn)] = (fn, dict(codes))
    return codes


def _check_groups(program: Program, out: list[D.Diagnostic]) -> None:
    for g in program.functions:
        if g.kind != "Group":
            continue
        aic = program.function(g.name + "_aic")
        aiv = program.function(g.name + "_aiv")
        if aic is not None and aiv is not None:
            codes = transport_split_codes(aic)
            for c, sp in transport_split_codes(aiv).items():
                codes.setdefault(c, sp)
            if len(codes) > 1:
                # PyPTO derives one split code per group from its transport ops (reference §2.3)
                out.append(
                    D.error(
                        codes[max(codes)],
                        "split-conflict",
                        f"conflicting split codes {sorted(codes)} in the cross-core ops of group '{g.name}'; a group has one split mode",
                        "every tpush/tpop of one group must carry the same split=",
                    )
                )
        if (aic is None) != (aiv is None):
            missing = g.name + ("_aic" if aic is None else "_aiv")
            out.append(
                D.warning(
                    g.name_span,
                    "group-pairing",
                    f"Group '{g.name}' has no '{missing}': its body runs on one thread, and cross-core pops may deadlock",
                )
            )
        for member in (aic, aiv):
            if member is not None and len(member.params) != len(g.params):
                out.append(
                    D.warning(
                        member.name_span,
                        "group-signature",
                        f"'{member.name}' takes {len(member.params)} parameters but Group '{g.name}' passes {len(g.params)}",
                    )
                )
        if aic is not None and aic.kind not in ("AIC", "InCore", "Opaque"):
            out.append(
                D.warning(aic.name_span, "group-pairing", f"'{aic.name}' is paired as the cube kernel of '{g.name}' but is {aic.kind}")
            )
        if aiv is not None and aiv.kind not in ("AIV", "InCore", "Opaque"):
            out.append(
                D.warning(aiv.name_span, "group-pairing", f"'{aiv.name}' is paired as the vector kernel of '{g.name}' but is {aiv.kind}")
            )


_ = (EnumRef,)
