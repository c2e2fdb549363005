"""The documentation keeps up with the code: ARCHITECTURE.md names every module under
``pypto_lsp/`` (and names none that is gone), README.md stays short and links every page
of ``docs/``, and the local links of README.md and ``docs/`` lead somewhere (file and heading)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pypto_lsp"
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
DOCS = ROOT / "docs"

README_MAX_LINES = 160
# pages other branches bring (README's "More" list): linked before they land, checked once they exist
PENDING_PAGES = {"docs/sanitizer.md", "docs/debugger.md", "docs/goldens.md", "docs/reliability.md"}

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_MODULE = re.compile(r"`((?:[a-z_]+/)*[a-z_]+\.py)`")


def _modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


def _named_modules(text: str) -> set[str]:
    """Paths relative to pypto_lsp/ in backticks (`ir/parser.py`, `cli.py`)."""
    return set(_MODULE.findall(text))


def test_architecture_names_every_module() -> None:
    named = _named_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = sorted(_modules() - named)
    assert not missing, f"ARCHITECTURE.md does not name {missing} (one line each, as `floor/module.py`)"


def test_architecture_names_no_module_that_is_gone() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    floors = ("ir/", "exec/", "validate/", "worker/", "server/", "report_assets/", "debug/")
    named = {m for m in _named_modules(text) if m.startswith(floors)}
    gone = sorted(m for m in named if not (PACKAGE / m).is_file())
    assert not gone, f"ARCHITECTURE.md names modules that do not exist: {gone}"


def test_readme_is_short() -> None:
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES}: details go to docs/)"


def test_readme_links_every_docs_page() -> None:
    links = {link.split("#", 1)[0] for link in _LINK.findall(README.read_text(encoding="utf-8"))}
    pages = {p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md")}
    unlinked = sorted(pages - links)
    assert not unlinked, f"README.md links no {unlinked}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    out: set[str] = set()
    fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _broken_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    bad: list[str] = []
    for link in _LINK.findall(text) + _IMAGE.findall(text):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        rel = target.relative_to(ROOT).as_posix() if target.is_relative_to(ROOT) else str(target)
        if not target.exists():
            if rel not in PENDING_PAGES:
                bad.append(link)
            continue
        if anchor and target.suffix == ".md" and anchor not in _anchors(target):
            bad.append(link)
    return bad


def test_local_links_lead_somewhere() -> None:
    pages = [README, ARCHITECTURE, *sorted(DOCS.glob("*.md"))]
    broken = {p.relative_to(ROOT).as_posix(): b for p in pages if (b := _broken_links(p))}
    assert not broken, f"links to no file or heading: {broken}"
