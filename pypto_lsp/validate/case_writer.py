"""The one writer of ``[[cases]]`` entries: ``golden freeze``, :func:`..golden.save_golden` and the
editor's "Configure Golden Tensors" (the server's ``pypto-lsp.writeGoldenCase`` command) all
write through here.

An entry is written by a TOML writer (tomli-w), under ``[tool.pypto-lsp]`` in a ``pyproject.toml``;
an existing entry for the same dumps folder is updated in place, key by key, every other line
(comments, other tables, other keys) kept as the user wrote it. Whatever is written is read back
first: ConfigError, and the file unchanged, when the result would not parse or would not read as
the entry asked for (a pyproject whose ``tool.pypto-lsp.cases`` is an inline array, a key written
across lines, a value TOML cannot carry ...). The file is replaced whole (a temporary file and
``os.replace``), never left half-written; created with the mode any new file gets (the umask's),
an existing file's mode kept. A read-only config is refused, not replaced. Writers of one config
take turns: an OS file lock (``.<name>.lock`` beside it) is held from the read to the replace, so
concurrent writers (two editors, ``golden freeze`` in a loop) each keep their entry.

No torch here: the language server writes cases too.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tomllib

from .config import ConfigError, our_table, table_headers

_PLACEHOLDER = "__pypto_lsp_new_case__"


def _table(config: Path) -> str:
    return "tool.pypto-lsp.cases" if config.name == "pyproject.toml" else "cases"


def _read(config: Path) -> str:
    try:
        if not config.exists():
            return ""
        with config.open(encoding="utf-8", newline="") as fh:  # CRLF kept as written
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{config}: cannot read it to write a [[cases]] entry: {exc}") from exc


def _cases_in_text(config: Path, text: str) -> list[Any] | None:
    """The [[cases]] ``text`` holds where they are read (None: it does not parse, or no array)."""
    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    ours = our_table(config, data)
    if ours is None:
        return [] if config.name == "pyproject.toml" else None
    cases = ours.get("cases", [])
    return cases if isinstance(cases, list) else None


def _toml(doc: dict[str, Any], config: Path) -> str:
    import tomli_w

    try:
        text = tomli_w.dumps(doc)
        text.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        raise ConfigError(f"{config}: cannot write the [[cases]] entry as TOML: {exc}") from exc
    return text


def _entry_chunk(config: Path, values: dict[str, Any]) -> str:
    """``values`` as a ``[[cases]]`` table (its sub-tables ``[cases.generate]``)."""
    # tomli-w writes a one-item array of tables inline (`cases = [{...}]`), which a later
    # `[[cases]]` could not extend: write the entry as a table under a placeholder name, then
    # make its header `[[cases]]`; headers are whole lines (a string value never starts a line:
    # tomli-w writes no multi-line strings)
    table = _table(config)
    doc: dict[str, Any] = {_PLACEHOLDER: values}
    for part in reversed(table.split(".")):
        doc = {part: doc}
    head = f"[{table}.{_PLACEHOLDER}"
    lines = []
    for line in _toml(doc, config).splitlines():
        if line == head + "]":
            line = f"[[{table}]]"
        elif line.startswith(head + "."):
            line = f"[{table}." + line[len(head) + 1 :]
        lines.append(line)
    return "\n".join(lines) + "\n"


def case_entry_text(config: Path, entry: dict[str, Any]) -> tuple[str, str]:
    """The file ``config`` with the ``[[cases]]`` table ``entry`` appended: (the text as it is, the
    text to append), checked by reading it back (ConfigError when it would not read as ``entry``)."""
    _check_writable(_target(config))
    values = {k: v for k, v in entry.items() if v is not None}
    chunk = _entry_chunk(config, values)
    old = _read(config)
    if "\r\n" in old:
        chunk = chunk.replace("\n", "\r\n")
    sep = "" if old == "" else ("" if old.endswith("\n\n") else "\n" if old.endswith("\n") else "\n\n")
    sep = sep.replace("\n", "\r\n") if "\r\n" in old else sep
    before = _cases_in_text(config, old)
    after = _cases_in_text(config, old + sep + chunk)
    if before is None or after is None or after[:-1] != before or after[-1:] != [values]:
        where = "[tool.pypto-lsp] " if config.name == "pyproject.toml" else ""
        raise ConfigError(f"{config}: a new {where}[[cases]] entry cannot be appended to this file (it would not be read); add it by hand")
    return old, sep + chunk


def _same_folder(config: Path, written: Any, dumps: str) -> bool:
    if not isinstance(written, str):
        return False
    base = config.parent
    return (base / written).resolve() == (base / dumps).resolve()


def _updated_text(config: Path, old: str, index: int, values: dict[str, Any]) -> str | None:
    """``old`` with the keys ``values`` set in the ``index``-th ``[[cases]]`` table, line by line;
    None when that table cannot be found by its headers (the read-back decides the rest)."""
    table = _table(config)
    lines = old.splitlines(keepends=True)
    heads = table_headers([ln.rstrip("\r\n") for ln in lines])
    starts = [i for i, name, aot in heads if aot and name == table]
    if index >= len(starts):
        return None
    start = starts[index]
    end = next((i for i, _, _ in heads if i > start), len(lines))
    eol = "\r\n" if lines[start].endswith("\r\n") else "\n"
    insert_at = start + 1
    for key, value in values.items():
        if isinstance(value, dict):
            return None  # a sub-table (generate): not updated in place
        pat = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*=")
        new = _toml({key: value}, config).strip() + eol
        hit = next((i for i in range(start + 1, end) if pat.match(lines[i])), None)
        if hit is not None:
            lines[hit] = new
            insert_at = max(insert_at, hit + 1)
        else:
            lines.insert(insert_at, new)
            insert_at += 1
            end += 1
    return "".join(lines)


def _target(config: Path) -> Path:
    return Path(os.path.realpath(config))  # a symlinked config: its target is written


def _check_writable(config: Path) -> None:
    """ConfigError for a config the user made read-only (no write bit: root could still write it)."""
    try:
        st = config.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"{config}: cannot write a [[cases]] entry: {exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{config}: not a regular file; a [[cases]] entry is not written to it")
    if not st.st_mode & 0o222 or not os.access(config, os.W_OK):
        raise ConfigError(f"{config}: it is read-only; the [[cases]] entry is not written (make it writable, or add the entry by hand)")


@contextmanager
def _locked(config: Path) -> Iterator[None]:
    """Hold the OS lock of ``config`` (a lock file beside it; not the config itself, which the
    replace swaps for a new inode) for one read-modify-replace."""
    from filelock import FileLock, Timeout

    target = _target(config)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target.parent / f".{target.name}.lock"), timeout=60):
            yield
    except Timeout as exc:
        raise ConfigError(f"{config}: another writer has held its lock for a minute; try again") from exc
    except PermissionError as exc:
        raise ConfigError(f"{config}: cannot lock it to write a [[cases]] entry: {exc}") from exc


def _replace(config: Path, text: str) -> None:
    config = _target(config)
    _check_writable(config)
    mode = config.stat().st_mode & 0o7777 if config.exists() else None
    # a temporary file made by os.open with 0o666: the umask applies, as to any new file
    # (mkstemp would make it 0600 whatever the umask)
    for _ in range(100):
        tmp = config.parent / f".{config.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise ConfigError(f"{config}: cannot create a temporary file beside it")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, config)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_case(config: Path, entry: dict[str, Any], *, update: bool = False) -> str:
    """Write the ``[[cases]]`` table ``entry`` (``None`` values left out) into ``config``; returns
    ``"added"`` or ``"updated"``.

    With ``update``, the first entry whose ``dumps`` names the same folder as ``entry["dumps"]``
    gets ``entry``'s keys set in place (the editor configuring goldens again); otherwise, and
    when there is none, the entry is appended (``golden freeze`` appends after a ``generate``-only
    case, which :func:`..config.find_case` ranks after it). ConfigError, the file unchanged, when
    the result would not read back as asked."""
    _check_writable(_target(config))
    with _locked(config):
        return _write_case(config, entry, update)


def _write_case(config: Path, entry: dict[str, Any], update: bool) -> str:
    _check_writable(_target(config))
    values = {k: v for k, v in entry.items() if v is not None}
    old = _read(config)
    if update:
        cases = _cases_in_text(config, old)
        if cases is None:
            raise ConfigError(f"{config}: it does not parse as TOML (or its cases are not [[cases]] tables); fix it first")
        index = next(
            (i for i, c in enumerate(cases) if isinstance(c, dict) and _same_folder(config, c.get("dumps"), str(values.get("dumps", "")))),
            None,
        )
        if index is not None:
            text = _updated_text(config, old, index, values)
            want = [dict(c) for c in cases]
            want[index] = {**want[index], **values}
            if text is None or _cases_in_text(config, text) != want:
                raise ConfigError(
                    f"{config}: its [[cases]] entry #{index + 1} cannot be updated in place (it would not be read as asked); edit it by hand"
                )
            _replace(config, text)
            return "updated"
    old, chunk = case_entry_text(config, values)
    _replace(config, old + chunk)
    return "added"


def config_for(dumps: Path, root: Path | None) -> Path:
    """Where a new case for the folder ``dumps`` goes: the nearest ``pypto-lsp.toml`` from its
    parent up to ``root`` (the workspace; the way :func:`..config.config_files` reads them), else
    a new one beside ``dumps``."""
    start = dumps.parent
    d = start
    while True:
        if (d / "pypto-lsp.toml").is_file():
            return d / "pypto-lsp.toml"
        if root is None or d == root or root not in d.parents or d.parent == d:
            return start / "pypto-lsp.toml"
        d = d.parent


def editor_case_problem(folder: Path, config: Path, root: Path | None) -> str | None:
    """Why the editor may not write a case for the dump folder ``folder`` into ``config`` (None:
    it may): a command any client can send, so only a folder inside the workspace ``root`` that
    holds dumps, with its config inside the workspace too (never ``/pypto-lsp.toml`` for
    ``dumps: "/"``, nor a file beside some folder elsewhere)."""
    if root is None:
        return "no workspace folder is open: a [[cases]] entry is written only inside the workspace"
    ws = root.resolve()
    where = folder.resolve()
    if where != ws and ws not in where.parents:
        return f"{folder} is outside the workspace {ws}: a [[cases]] entry is written only for dumps inside it"
    try:
        holds = any(f.suffix == ".py" and f.is_file() for f in where.iterdir())
    except OSError as exc:
        return f"{folder}: cannot list it: {exc}"
    if not holds:
        return f"{folder} holds no pass dumps (*.py): no [[cases]] entry is written for it"
    home = config.resolve().parent
    if home != ws and ws not in home.parents:
        return f"the entry would go to {config}, outside the workspace {ws}; add it by hand"
    return None


def golden_entry(config: Path, dumps: Path, inputs: Path, expected: Path, root: Path | None) -> dict[str, str]:
    """The ``[[cases]]`` keys naming ``dumps`` and its golden bundle, as written in ``config``:
    relative to it (forward slashes); a golden file outside ``root`` (the workspace) absolute."""
    base = config.parent.resolve()

    def written(p: Path, inside: bool = False) -> str:
        p = p.resolve()
        if inside or root is None or p == root.resolve() or root.resolve() in p.parents:
            try:
                return os.path.relpath(p, base).replace(os.sep, "/")
            except ValueError:  # another drive
                pass
        return p.as_posix()

    return {"dumps": written(dumps, inside=True), "inputs": written(inputs), "expected": written(expected)}
