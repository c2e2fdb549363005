"""pytest plugin (entry point ``pytest11``): ``pytest --pypto-lsp[=CONFIG]``.

Collects every ``[[cases]]`` entry of a ``pypto-lsp.toml`` (default: the one in pytest's
rootdir, else ``[tool.pypto-lsp]`` in its ``pyproject.toml``) times every pass file of its
dump folder as a test item, ``<case>/<pass>`` (``qwen3/35_after_AllocateMemoryAddr``; the
case is its ``name`` key, else the folder holding ``passes_dump/``). A failing pass reports
the tensor, max |Δ|, the tolerances and the IR line (with its text), what it was compared with,
and whether it is the first divergent pass (then with the first value it computes unlike the
pass before).

Made for pytest-xdist: ``pytest --pypto-lsp -n auto --dist loadgroup`` spreads the folders over
workers (and hosts) while every item of one folder carries ``xdist_group(<case>)``, so a folder's
passes run in one worker, in order: its goldens (or differential reference) load once, the result
cache and the first-divergent logic hold. Results are cached on disk like the CLI's.

Without ``--pypto-lsp`` every hook returns at once; nothing beyond this module is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_KEY = "pypto_lsp"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pypto-lsp", "pass-dump validation (pypto-lsp)")
    group.addoption(
        "--pypto-lsp",
        dest=_KEY,
        nargs="?",
        const="",
        default=None,
        metavar="CONFIG",
        help="collect every [[cases]] x pass file of CONFIG (default: pypto-lsp.toml in the rootdir) as a test; write --pypto-lsp=CONFIG",
    )
    group.addoption("--pypto-lsp-no-localize", action="store_true", help="do not localise the first divergent pass to a value")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(_KEY) is None:
        return
    config.addinivalue_line("markers", "xdist_group(name): pytest-xdist --dist loadgroup runs a group in one worker")


def _config_file(opt: str, rootpath: Path) -> Path:
    if opt:
        p = Path(opt)
        return p if p.is_absolute() else (Path.cwd() / p)
    for name in ("pypto-lsp.toml", "pyproject.toml"):
        if (rootpath / name).is_file():
            return rootpath / name
    raise pytest.UsageError(f"--pypto-lsp: no pypto-lsp.toml in {rootpath}; give one: --pypto-lsp=CONFIG")


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    opt = config.getoption(_KEY)
    if opt is None:
        return
    from .formats.ci_formats import case_labels
    from .validate import config as cfg

    path = _config_file(opt, config.rootpath)
    from .ir.alloc_budget import env_problem

    if env_problem() is not None:  # never silently the default budget
        raise pytest.UsageError(f"--pypto-lsp: {env_problem()}")
    try:
        cases = cfg.cases_in(path)
        labels = case_labels(path, cases)
    except (cfg.ConfigError, OSError, ValueError) as exc:
        raise pytest.UsageError(f"--pypto-lsp: {exc}") from exc
    if not cases:
        raise pytest.UsageError(f"--pypto-lsp: {path} has no [[cases]]")
    for case, label in zip(cases, labels, strict=True):
        node = CaseNode.from_parent(session, name=label, nodeid=label, path=case.dumps or path.parent)
        node.case = case
        collected = node.collect()
        # reported as pytest's own collection reports them: the terminal counts items from these
        # reports ("collected N items", and --collect-only's "N tests collected")
        for item in collected:
            config.hook.pytest_itemcollected(item=item)
        config.hook.pytest_collectreport(report=pytest.CollectReport(node.nodeid, "passed", None, list(collected)))
        items.extend(collected)


class PassFailed(Exception):
    """A pass file that failed or errored; the message is the report pytest prints."""


class CaseNode(pytest.Collector):
    """One ``[[cases]]`` entry: its pass files, and (lazily, once per process) its reference."""

    case: Any = None
    files: list[Path] = []
    _run: Any = None

    def collect(self) -> list[pytest.Item]:
        from .validate import config as cfg

        error: str | None = None
        try:
            files = cfg.discover_dumps(self.case.dumps)
        except (FileNotFoundError, ValueError) as exc:
            files, error = [], str(exc)
        if error is not None:
            item = PassItem.from_parent(self, name="collect", nodeid=f"{self.name}/collect", path=self.path, index=-1)
            item.error = error
            item.add_marker(pytest.mark.xdist_group(self.name))
            return [item]
        out: list[pytest.Item] = []
        # an xdist worker under --dist loadgroup: the group goes into the id as '@<group>'. xdist 3.8
        # writes it to item._nodeid, which pytest >= 9.1 no longer reads (ids live in _id): say it here
        group = f"@{self.name}" if getattr(self.config.option, "loadgroup", False) and "_nodeid" not in _node_slots() else ""
        for i, f in enumerate(files):
            item = PassItem.from_parent(self, name=f.stem, nodeid=f"{self.name}/{f.stem}{group}", path=f, index=i)
            item.add_marker(pytest.mark.xdist_group(self.name))
            out.append(item)
        self.files = files
        return out

    def run(self) -> CaseRun:
        if self._run is None:
            self._run = CaseRun(self.case, self.files, localize=not self.config.getoption("pypto_lsp_no_localize"))
        return self._run


def _node_slots() -> tuple[str, ...]:
    from _pytest import nodes

    return tuple(getattr(nodes.Node, "__slots__", ()))


class PassItem(pytest.Item):
    def __init__(self, *, index: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.index = index
        self.error: str | None = None
        # plugins written for function items (pytest-lsp's runtest_call wrapper) look for it
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        if self.error is not None:
            raise PassFailed(f"{self.parent.name if self.parent else ''}: {self.error}")
        assert isinstance(self.parent, CaseNode)
        message = self.parent.run().check(self.index)
        if message is not None:
            raise PassFailed(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, PassFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, self.nodeid


class CaseRun:
    """A case's reference and its per-file results in this process (the on-disk cache across processes)."""

    def __init__(self, case: Any, files: list[Path], localize: bool) -> None:
        self.case, self.files, self.localize = case, files, localize
        self.results: dict[int, Any] = {}
        self.prepared = False
        self.problem: str | None = None

    def _prepare(self) -> None:
        if self.prepared:
            return
        self.prepared = True
        from .validate import differential as dif
        from .validate.folders import ResultCache
        from .validate.golden import GoldenError
        from .validate.process_setup import configure_process

        configure_process()
        self.cache = ResultCache()
        c = self.case
        try:
            from .validate.reference import resolve

            compared = resolve(self.files[0], c, c.settings)  # the case's budget for a reference run too
            self.inputs, self.expected = compared.inputs, compared.expected
            self.bundle_paths: tuple[str, str] | None = compared.bundle_paths
            self.label = compared.label
        except (GoldenError, dif.GenerateError, dif.DifferentialError) as exc:
            self.problem = str(exc)

    def result(self, i: int) -> Any:
        if i not in self.results:
            from .validate.folders import validate_files

            c = self.case
            rep = validate_files(
                [self.files[i]],
                self.inputs,
                self.expected,
                settings=c.settings,
                jobs=1,
                cache=self.cache,
                bundle_paths=self.bundle_paths,
            )
            self.results[i] = rep.files[0]
        return self.results[i]

    def check(self, i: int) -> str | None:
        """None when file ``i`` passes (or runs, without expected values); else the failure report."""
        self._prepare()
        if self.problem is not None:
            return f"{self.files[i].name}: cannot validate without a reference: {self.problem}"
        fr = self.result(i)
        if fr.status in ("pass", "ran"):
            return None
        return self._describe(i, fr)

    def _describe(self, i: int, fr: Any) -> str:
        from .formats.ci_formats import error_message, failures
        from .validate.report import Report

        earlier = [self.result(j) for j in range(i)]  # cached: the same worker ran them (loadgroup)
        first_bad = next((r for r in earlier if r.status in ("fail", "error")), None)
        report = Report([*earlier, fr])
        if first_bad is None and self.localize and fr.status == "fail" and i > 0:
            from .validate.localize import localize_report

            c = self.case
            localize_report(report, self.inputs, **c.settings.values_kwargs())
        try:
            from .ir.parser import read_dump  # never more than the size limit

            lines = read_dump(fr.file).decode("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []

        def src(line: int | None) -> str:
            if not line or line > len(lines):
                return ""
            return f"\n    {line:>4} | {lines[line - 1].strip()[:160]}"

        name = Path(fr.file).name
        out = [f"{name}: {fr.status} (vs {self.label})"]
        if fr.status == "error":
            out.append(f"  {error_message(fr)}{src(fr.error.line if fr.error else None)}")
        for _, msg, line in failures(report, fr, self.label):
            out.append(f"  {msg}{src(line)}")
        if first_bad is None:
            out.append(f"  first divergent pass: {name} (every pass before it passes)")
            v = report.first_differing_value
            if v is not None:
                out.append(f"  {name}:{v.line}: {v.describe(Path(earlier[-1].file).name)}{src(v.line)}")
        else:
            out.append(f"  first divergent pass: {Path(first_bad.file).name} (this one inherits its difference)")
        return "\n".join(out)
