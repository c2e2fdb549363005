"""What kind of value each expression of a function is (a tile, a tensor, a scalar, a list of
scalars, a handle, an array, or nothing), and the checks that hold values to the kinds their places
take: an op's operands and keywords against PyPTO's registration, a call's arguments against the
callee's signature, a loop's bounds and its carried values, scalar arithmetic of what is not a
number. :class:`KindChecks` is mixed into :mod:`.check`'s function checker, which owns the names'
types (``types``) and the findings (``add``).
"""

from __future__ import annotations

from . import catalogue
from . import diagnostics as D
from .keyword_values import KEYWORD_WORDS
from .keyword_values import fits as _keyword_fits
from .model import (
    ArrayType,
    BinOp,
    Const,
    DictExpr,
    DTypeRef,
    EnumRef,
    Expr,
    For,
    FuncCall,
    Function,
    Intrinsic,
    ListExpr,
    Name,
    OpaqueType,
    OpCall,
    ScalarType,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Type,
    UnaryOp,
    While,
    Yield,
    fold_ints,
    trailing_yield,
)

# the scalar arithmetic and comparisons a dump writes as Python operators (boolean ones aside)
_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "==", "!=", "<", "<=", ">", ">="})
# op -> whether a gap among its optional operands leaves each at a place of its own kind (kept)
_NO_GAP: dict[str, bool] = {}
# the kinds that are never a number: where a scalar goes (a loop bound, arithmetic) each is wrong.
# A task id (``pl.Scalar[pl.TASK_ID]``: what a launch returns beside its result, ``system.task_invalid``)
# orders tasks; a pipe buffer's address (``system.reserve_buffer``/``import_peer_buffer``, an INT32
# scalar to PyPTO) only initialises a pipe, and its value, the allocator's choice, is not modelled
NOT_A_NUMBER = frozenset({"tile", "tensor", "handle", "tuple", "none", "array", "task_id", "address"})
# the ops whose result is a pipe buffer's local address
ADDRESS_OPS = frozenset({"system.reserve_buffer", "system.import_peer_buffer"})
# ops whose tile operand is a tile only: a push moves a tile of local memory into a pipe slot (a
# tensor there, a gm pipe buffer, was popped as what it is not: "shape mismatch ... computed [1]")
TILE_ONLY_OPS = frozenset({"tile.tpush_to_aiv", "tile.tpush_to_aic"})
# the ops whose result is a task id
TASK_ID_OPS = frozenset({"system.task_invalid", "system.task_dummy"})
ACCEPTS: dict[str, frozenset[str]] = {
    "tile": frozenset({"tile", "tensor"}),
    "tensor": frozenset({"tile", "tensor"}),
    "scalar": frozenset({"scalar"}),
    "tuple": frozenset({"tuple"}),
    "tensor|scalar": frozenset({"tile", "tensor", "scalar"}),
    "tile|scalar": frozenset({"tile", "tensor", "scalar"}),
    "handle": frozenset({"handle"}),
    "array": frozenset({"array"}),
    "task_id": frozenset({"task_id", "scalar"}),  # (a number where a task id goes is not looked at)
}
KIND_WORDS: dict[str, str] = {
    "tile": "a tile",
    "tensor": "a tensor",
    "scalar": "a scalar",
    "tuple": "a list of scalars",
    "dtype": "a dtype",
    "enum": "an enum member",
    "string": "a string",
    "array": "a pl.Array",
    "handle": "a handle",
    "none": "nothing",
    "task_id": "a task id",
    "address": "a pipe buffer's address",
    "tensor|scalar": "a tensor or a scalar",
    "tile|scalar": "a tile or a scalar",
}
# result rules (ir.catalogue) whose op makes a tile or a tensor, of its own namespace
ARRAY_RULES = frozenset(
    {
        "binary",
        "cast",
        "cmp_mask",
        "col_reduce",
        "create",
        "load",
        "matmul",
        "matmul_acc",
        "popped",
        "reshape",
        "row_reduce",
        "same",
        "slice",
    }
)
TYPE_KINDS: dict[type, str] = {TileType: "tile", TensorType: "tensor", ScalarType: "scalar", TupleType: "tuple", ArrayType: "array"}


def type_kind(t: Type | None) -> str | None:
    """The kind of a value of type ``t`` (a ``pl.Scalar[pl.TASK_ID]`` is a task id, not a number)."""
    if isinstance(t, ScalarType) and t.dtype == "TASK_ID":
        return "task_id"
    return TYPE_KINDS.get(type(t)) if t is not None else None


_LISTS: dict[tuple[str, int], bool] = {}


def _lists_of_scalars(spec: catalogue.OpSpec, known: int) -> bool:
    """Every operand of ``spec`` past the first ``known`` has a kind, one of them a list of scalars
    (kept per op): a list given there can only be that list."""
    key = (spec.name, known)
    if key not in _LISTS:
        kinds = spec.operand_kinds
        _LISTS[key] = "tuple" in kinds.values() and None not in (kinds.get(p) for p in spec.params[known:])
    return _LISTS[key]


class KindChecks:
    """The kind checks of one function (mixed into ``check._FunctionChecker``)."""

    types: dict[str, Type]
    # names assigned a pipe buffer's address (ADDRESS_OPS) -> that op
    addresses: dict[str, str]
    # an unannotated iter_arg -> the first value whose type it took (its loop's init, or an outer one's)
    type_source: dict[str, Expr]
    _dims: dict[int, list[int] | None]  # static_dims, by the type's identity

    def add(self, d: D.Diagnostic) -> None:
        raise NotImplementedError

    def loop_bounds(self, s: For) -> None:
        """A loop's start, stop and step are scalars: a tensor or a window buffer there made the
        run say ``only integer tensors of a single element can be converted to an index`` or
        ``'WindowBuffer' object cannot be interpreted as an integer``."""
        for bound in (s.start, s.stop, s.step):
            kind = self.value_kind(bound) if bound is not None else None
            if kind in NOT_A_NUMBER:
                assert bound is not None
                self.add(
                    D.error(
                        bound.span,
                        "bad-loop-bound",
                        f"pl.{s.kind} is bounded by {self.describe(bound, kind)}",
                        "a loop's start, stop and step are scalars",
                    )
                )

    def array_misfit(self, carried: Type | None, value: Expr, call: bool = False) -> tuple[str, str] | None:
        """(what a place of tensor or tile type ``carried`` takes, what the array ``value`` is) when
        both say their dims or dtypes and these differ (a [16, 64] chunk yielded where the loop
        carries [32, 64], an INT32 flag passed for an FP32 inbox), or a plain tensor goes where a
        window (``pld.DistributedTensor``) goes; None when they fit or either is unknown. The run
        failed later, on the line that read it (``shape mismatch for 'y_next'``, ``a remote op's
        target is not a window``). ``call``: a call's argument, held to its parameter's dtype but not
        its dims (a kernel typed [16, 16] may be given a [16, 8] view: issue 34's sanitizer judges
        its windows against the buffer); a loop's or a branch's value is held to its dims but not
        its dtype (it runs, and the localiser names the op that changed the dtype). A window where a
        plain tensor goes, or the other way, is :meth:`argument_kinds`' warning."""
        if not isinstance(carried, TensorType | TileType) or not isinstance(value, Name):
            return None
        t = self.types.get(value.id)
        if t is carried or not isinstance(t, TensorType | TileType):
            return None
        kind, its = ("tile" if isinstance(x, TileType) else "tensor" for x in (carried, t))
        want, got = self.static_dims(carried), self.static_dims(t)
        if not call and want is not None and got is not None and want != got:
            return f"a {want} {carried.dtype} {kind}", f"'{value.id}', a {got} {t.dtype} {its}"
        if type(t) is not type(carried):
            return None
        if call and carried.dtype != t.dtype and "UNKNOWN" not in (carried.dtype, t.dtype):
            return f"a {kind} of {carried.dtype}", f"'{value.id}', a {its} of {t.dtype}"
        return None

    def static_dims(self, t: TensorType | TileType) -> list[int] | None:
        """``t``'s dims when each folds to an integer (kept per type: a callee's parameter is asked
        at every call)."""
        dims = self._dims.get(id(t), self)
        if dims is self:
            dims = self._dims[id(t)] = fold_ints(t.shape)
        return dims  # type: ignore[return-value]

    def argument_dims(self, param: Type | None, arg: Expr) -> tuple[list[int], list[int]] | None:
        """(the parameter's dims, the argument's) when both are known and differ. Another rank is
        an error (a store into a 1-D tensor with 2 offsets failed inside the callee); the same rank
        a warning: PyPTO's own dumps never pass one, and a kernel given a smaller view reads and
        writes past it (issue 34's sanitizer judges those windows against the buffer, and a result
        annotated with the parameter's dims fails its shape check inside the callee)."""
        if not isinstance(param, TensorType | TileType) or not isinstance(arg, Name):
            return None
        t = self.types.get(arg.id)
        if not isinstance(t, TensorType | TileType):
            return None
        want, got = self.static_dims(param), self.static_dims(t)
        if want is None or got is None or want == got:
            return None
        return want, got

    def misfit(self, carried: Type | None, value: Expr) -> tuple[str, str] | None:
        """(what a place of type ``carried`` takes, what ``value`` is) when the two are of other
        kinds (a scalar where a tensor goes); None when they fit or either is unknown."""
        want = type_kind(carried)
        if want not in ("tile", "tensor", "scalar", "array", "task_id"):
            return None
        got = self.value_kind(value)
        return None if got is None or got in ACCEPTS[want] else (want, got)

    def init_values(self, s: For | While) -> None:
        """Each loop-carried value starts, and goes round, as what the loop carries: a scalar
        given or yielded where the loop carries a tile made an iteration fail in Python's words
        (``'int' object has no attribute 'clone'``). A yield whose targets print without
        annotations (``a, b = pl.yield_(...)``) is held to the loop's carried values here."""
        y = trailing_yield(s.body)
        unannotated = y is not None and all(t.type is None for t in y.targets)
        for i, target in enumerate(s.iter_args):
            carried = self.types.get(target.name)
            if i < len(s.init_values) and (odd := self.array_misfit(carried, s.init_values[i])) is not None:
                self.add(
                    D.error(
                        s.init_values[i].span,
                        "wrong-init-value",
                        f"'{target.name}' carries {odd[0]} through the loop, but starts as {odd[1]}",
                        "init_values give each loop-carried value its first value, of the same type",
                    )
                )
            if i < len(s.init_values) and (bad := self.misfit(carried, s.init_values[i])) is not None:
                init = s.init_values[i]
                self.add(
                    D.error(
                        init.span,
                        "wrong-init-value",
                        f"'{target.name}' carries {KIND_WORDS[bad[0]]} through the loop, but starts as {self.describe(init, bad[1])}",
                        "init_values give each loop-carried value its first value, of the same kind",
                    )
                )
            if y is not None and unannotated and i < len(y.values) and (bad := self.misfit(carried, y.values[i])) is not None:
                d = D.error(
                    y.values[i].span,
                    "wrong-yield",
                    f"'{target.name}' carries {KIND_WORDS[bad[0]]}, but pl.yield_ hands on {self.describe(y.values[i], bad[1])}",
                    "each yielded value goes where its loop carries a value of the same kind",
                )
                source = self.type_source.get(target.name)
                if source is not None:  # no annotation says what it carries: the first value did
                    d.related.append(D.Related(f"'{target.name}' is {KIND_WORDS[bad[0]]} from its first value here", None, source.span))
                self.add(d)

    def yield_kinds(self, y: Yield) -> None:
        """Each value a ``pl.yield_`` hands on is of the kind its loop or branch carries: a scalar
        yielded where the loop carries a tensor made the next iteration fail in Python's words
        (``'int' object has no attribute 'dim'``)."""
        for target, value in zip(y.targets, y.values, strict=False):
            carried = target.type if target.type is not None else self.types.get(target.name)
            if (odd := self.array_misfit(carried, value)) is not None:
                self.add(
                    D.error(
                        value.span,
                        "wrong-yield",
                        f"'{target.name}' carries {odd[0]}, but pl.yield_ hands on {odd[1]}",
                        "each yielded value goes where its loop or branch carries a value of the same type",
                    )
                )
                continue
            if (bad := self.misfit(carried, value)) is None:
                continue
            self.add(
                D.error(
                    value.span,
                    "wrong-yield",
                    f"'{target.name}' carries {KIND_WORDS[bad[0]]}, but pl.yield_ hands on {self.describe(value, bad[1])}",
                    "each yielded value goes where its loop or branch carries a value of the same kind",
                )
            )

    def argument_kinds(self, e: FuncCall, callee: Function) -> None:
        """Each argument of a call against its parameter's type: a scalar where the callee takes a
        tensor or a tile, an array where it takes a scalar. The callee would fail on it in Python's
        words (``'int' object has no attribute 'dim'`` at its first op), or read a tensor as a
        number."""
        for arg, param in zip(e.args, callee.params, strict=False):
            if (odd := self.array_misfit(param.type, arg, call=True)) is not None:
                self.add(
                    D.error(
                        arg.span,
                        "wrong-argument",
                        f"'{e.func}' takes {odd[0]} as {param.name}, got {odd[1]}",
                        "the callee's signature says each argument's type; a pass or an edit passed another value",
                    )
                )
                continue
            p, name = param.type, arg.id if isinstance(arg, Name) else ""
            a = self.types.get(name)
            if isinstance(p, TensorType) and p.distributed and isinstance(a, TensorType) and not a.distributed:
                # a window's remote ops on it fail ("a remote op's target is not a window"); one the
                # callee reads only here would work: a warning, at the call
                self.add(
                    D.warning(
                        arg.span,
                        "argument-window",
                        f"'{e.func}' takes a window (pld.DistributedTensor) as {param.name}, got '{name}', a tensor of this rank only",
                        "a remote op (remote_load, put, notify) on it reaches no other rank",
                    )
                )
            if (dims := self.argument_dims(param.type, arg)) is not None:
                want, got = dims
                if len(want) != len(got):
                    self.add(
                        D.error(
                            arg.span,
                            "wrong-argument",
                            f"'{e.func}' takes a {len(want)}-D {want} array as {param.name}, got '{name}', a {len(got)}-D {got} one",
                            "the callee indexes its parameter by the rank it declares",
                        )
                    )
                else:
                    self.add(
                        D.warning(
                            arg.span,
                            "argument-shape",
                            f"'{e.func}' takes {want} as {param.name}, got '{name}' of {got}: its ops read and write {want}",
                        )
                    )
                continue
            if (bad := self.misfit(param.type, arg)) is None:
                continue
            self.add(
                D.error(
                    arg.span,
                    "wrong-argument",
                    f"'{e.func}' takes {KIND_WORDS[bad[0]]} as {param.name}, got {self.describe(arg, bad[1])}",
                    "the callee's signature says what each argument is; a pass or an edit passed another value",
                )
            )

    def not_a_number(self, e: BinOp | UnaryOp | Intrinsic) -> tuple[Expr, str] | None:
        """The operand of ``e`` that is an array, a handle, a list or an op with no result: scalar
        arithmetic (an operator, ``pl.cast``/``pl.min``/``pl.max``/``abs``) of it would read a
        tensor as a number in the run (Python said ``a Tensor with 128 elements cannot be
        converted to Scalar``, ``'WindowBuffer' object cannot be interpreted as an integer``)."""
        if isinstance(e, BinOp):
            if e.op not in _ARITHMETIC:
                return None
            operands: list[Expr] = [e.left, e.right]
        elif isinstance(e, UnaryOp):
            if e.op == "not":
                return None
            operands = [e.operand]
        else:
            if e.name not in ("cast", "min", "max", "abs"):
                return None
            operands = list(e.args[:1] if e.name == "cast" else e.args)
        for side in operands:
            if isinstance(side, Name | OpCall):
                kind = self.value_kind(side)
                if kind in NOT_A_NUMBER:
                    return side, kind
        return None

    def operand_kinds(self, e: OpCall, spec: catalogue.OpSpec) -> None:
        """Each operand the catalogue gives a kind (PyPTO's registration of the op) against what
        the dump passes: a scalar where a tile goes, a list where a tensor goes, a memory space
        where a shape goes. The run would fail on it in Python's words, or not at all."""
        kinds = spec.operand_kinds
        if not kinds:
            return
        # an optional operand may be left out from the middle (pld.tile.put prints its region
        # without its second staging tile): past the required ones, an operand is known by its
        # position when every one is given, or when the optional ones are all of one kind but
        # for trailing ones of no kind (a gap then moves no operand to a place of another kind:
        # tensor.view's shape, then its valid_shape)
        uniform = _NO_GAP.get(e.op)
        if uniform is None:
            optional = [kinds.get(p) for p in spec.params[spec.min_args :]]
            while optional and optional[-1] is None:
                optional.pop()
            uniform = _NO_GAP[e.op] = len(set(optional)) <= 1 and None not in optional
        known = len(spec.params) if len(e.args) == len(spec.params) or uniform else spec.min_args
        given: list[tuple[int | None, str, Expr]] = [(i, p, a) for i, (p, a) in enumerate(zip(spec.params[:known], e.args, strict=False))]
        given += [(None, k, v) for k, v in e.kwargs.items() if k not in spec.params]
        for i, param, arg in given:
            want = kinds.get(param)
            if want == "scalar" and (param == "task_id" or (param == "value" and e.op == "array.update_element")):
                want = "task_id"  # system.task_is_valid; an element of an array of task ids
            if want is None:
                continue
            got = self.value_kind(arg)
            where = f"{param} (operand {i + 1})" if i is not None else f"{param}="
            if got is not None and (got not in ACCEPTS[want] or (got == "tensor" and want == "tile" and e.op in TILE_ONLY_OPS)):
                self.add(
                    D.error(
                        arg.span,
                        "wrong-operand",
                        f"'{e.op}' takes {KIND_WORDS[want]} as {where}, got {self.describe(arg, got)}",
                        "PyPTO's registration of the op says what each operand is; a pass or an edit passed the wrong value",
                    )
                )
            elif want == "tuple" and isinstance(arg, ListExpr | TupleExpr):
                self.scalar_items(arg, f"'{e.op}' takes a list of scalars as {where}, got {{}} in it")
        if known < len(spec.params) and _lists_of_scalars(spec, known):
            # the optional operands left unplaced: a list can only be one of them that takes a
            # list of scalars (pld.tile.put's offsets and shape)
            for arg in e.args[known:]:
                if isinstance(arg, ListExpr | TupleExpr):
                    self.scalar_items(arg, f"'{e.op}' takes lists of scalars, got {{}} in one")

    def scalar_items(self, items: ListExpr | TupleExpr, message: str) -> None:
        """Each item of a list that takes scalars: one of another kind is said with ``message``
        (its ``{}`` the item in words)."""
        for item in items.items:
            k = self.value_kind(item)
            if k is not None and k not in ACCEPTS["scalar"]:
                self.add(D.error(item.span, "wrong-operand", message.format(self.describe(item, k))))

    def keyword_kinds(self, e: OpCall, spec: catalogue.OpSpec) -> None:
        """Each keyword attribute against the type PyPTO declares it with: a dtype where a dtype
        goes, a memory space where a memory space goes, a flag where a flag goes. A value of
        another kind does not fail the run: the kernel reads it as something else (a list as a
        true ``b_trans``) or not at all. Names and expressions are left to the run."""
        for k, v in e.kwargs.items():
            want = spec.keyword_kinds.get(k)
            if want is None or _keyword_fits(want, v) is not False:
                continue
            got = self.value_kind(v)
            self.add(
                D.error(
                    v.span,
                    "wrong-keyword",
                    f"'{e.op}' takes {KEYWORD_WORDS[want]} as {k}=, got {self.describe(v, got) if got else 'an expression'}",
                    "PyPTO declares each attribute's type; a pass or an edit gave it a value of another kind",
                )
            )

    def value_kind(self, e: Expr) -> str | None:
        """What ``e`` is statically ("tile", "tensor", "scalar", "tuple", "dtype", "enum",
        "string", "array", "handle", or "none" for an op that returns nothing), or None when only
        the run can say."""
        if isinstance(e, Name):
            t = self.types.get(e.id)
            if isinstance(t, OpaqueType):  # a handle: a pointer, a context, an event
                # pl.UnknownType is what PyPTO gives the result of an op with no value
                # (pld.system.notify, wait, pld.tile.put; DeduceUnknownType): no real dump reads one
                return "none" if t.name == "UnknownType" else "handle"
            kind = type_kind(t)
            return "address" if kind == "scalar" and e.id in self.addresses else kind
        if isinstance(e, Const):
            v = e.value
            return "string" if isinstance(v, str) else None if v is None else "scalar"
        if isinstance(e, ListExpr | TupleExpr):
            return "tuple"
        # the DSL computes on arrays with ops only: arithmetic, a comparison, pl.min/max/cast of
        # scalars is a scalar (of an array, or of what only the run knows, left to the run)
        if isinstance(e, BinOp):
            # one side a scalar, the other a scalar or unknown (``n * 4``, ``i < n``)
            sides = (self.value_kind(e.left), self.value_kind(e.right))
            return "scalar" if "scalar" in sides and all(k in ("scalar", None) for k in sides) else None
        if isinstance(e, UnaryOp) or isinstance(e, Intrinsic) and e.name in ("min", "max", "cast"):
            operand = e.operand if isinstance(e, UnaryOp) else e.args[0] if e.args else None
            return "scalar" if operand is not None and self.value_kind(operand) == "scalar" else None
        if isinstance(e, DTypeRef):
            return "dtype"
        if isinstance(e, EnumRef):
            return "enum"
        if isinstance(e, OpCall):
            spec = catalogue.lookup(e.op)
            if spec is None:
                return None
            if e.op in ADDRESS_OPS:
                return "address"
            if e.op in TASK_ID_OPS:
                return "task_id"
            if e.op in ("array.create", "array.update_element"):
                return "array"
            if spec.result in ("scalar_index", "scalar_elem"):
                return "scalar"
            if spec.result == "none":
                return "none"
            if any(isinstance(a, Const) and a.value is None for a in e.args):
                return None  # an operand that did not parse (its own diagnostic says why): nothing more about it
            if spec.result == "tuple":
                return "tuple"
            # an op of no shape rule is still an array of its namespace: every such tile./tensor. op
            # PyPTO registers deduces a TileType or TensorType (the tuples are ruled "tuple")
            if (spec.result in ARRAY_RULES or spec.result is None) and e.op.startswith(("tile.", "tensor.")):
                return e.op.split(".", 1)[0]
        return None

    def condition(self, e: Expr, what: str) -> None:
        """A condition (``if``, ``while``, ``pl.cond``, an operand of ``and``/``or``/``not``) is a
        scalar: a tile, a tensor, a list or a task id there has no truth value (Python said
        ``Boolean value of Tensor with more than one value is ambiguous``, or took any list as
        true). The operands of a nested ``and``/``not`` are checked where that op is."""
        if not isinstance(e, Name | OpCall | ListExpr | TupleExpr):
            return
        kind = self.value_kind(e)
        if kind in NOT_A_NUMBER:
            self.add(
                D.error(
                    e.span,
                    "bad-condition",
                    f"{what} tests {self.describe(e, kind)}, which has no truth value",
                    "a condition is a scalar: compare values first (a tile's are compared with pl.tile.cmp)",
                )
            )

    def device_value(self, e: OpCall | FuncCall) -> None:
        """The rank a call runs on (``device=`` or ``attrs={"device": ...}``) is a scalar: a tensor
        there made the run say ``int() argument must be ... not 'WindowView'``."""
        attrs = e.attrs if isinstance(e, OpCall) else e.kwargs.get("attrs")
        if attrs is None and "device" not in e.kwargs:
            return
        values = [e.kwargs["device"]] if "device" in e.kwargs else []
        if isinstance(attrs, DictExpr):
            values += [v for k, v in zip(attrs.keys, attrs.values, strict=False) if isinstance(k, Const) and k.value == "device"]
        for v in values:
            kind = self.value_kind(v)
            if kind in NOT_A_NUMBER:
                name = e.op if isinstance(e, OpCall) else e.func
                self.add(
                    D.error(
                        v.span, "wrong-keyword", f"'{name}' runs on the rank {self.describe(v, kind)}", "device= names a rank: a scalar"
                    )
                )

    def describe(self, e: Expr, kind: str) -> str:
        if isinstance(e, OpCall):
            return f"'{e.op}' ({'which returns nothing' if kind == 'none' else KIND_WORDS[kind]})"
        if isinstance(e, Name):
            t = self.types.get(e.id)
            if isinstance(t, OpaqueType):
                what = "pl.UnknownType: what an op with no value gave" if t.name == "UnknownType" else f"a {t.name}"
            elif kind == "address":
                what = f"the address of a pipe buffer, from pl.{self.addresses[e.id]}, whose value pypto-lsp does not model"
            else:
                what = KIND_WORDS[kind]
            return f"'{e.id}' ({what})"
        if isinstance(e, Const):
            return f"{e.value!r} ({KIND_WORDS[kind]})"
        if isinstance(e, DTypeRef):
            return f"pl.{e.name} (a dtype)"
        if isinstance(e, EnumRef):
            return f"pl.{e.enum}.{e.member} (an enum member)"
        return KIND_WORDS[kind]

    # ------------------------------------------------------------------ annotation vs op result
