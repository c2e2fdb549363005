"""Golden tensor bundles: ``torch.save`` dicts (loaded with ``weights_only=True``) or ``.safetensors``."""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import torch


class GoldenError(Exception):
    """A missing, corrupt or ill-typed golden bundle; the message says which file and why."""


# keyed by a hash of the file's bytes, never by path/size/mtime: a golden rewritten with other
# values of the same size and its mtime restored must not be served from here
_CACHE: dict[str, dict[str, torch.Tensor]] = {}


def read_regular(p: Path) -> bytes:
    """The bytes of a regular file; a FIFO, device or folder is refused without opening it for
    a blocking read (a FIFO would hang the run)."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise GoldenError(f"golden bundle not found: {p}") from exc
        raise GoldenError(f"cannot open golden bundle {p}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GoldenError(f"golden bundle {p} is not a regular file ({_kind(st.st_mode)})")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError as exc:
        raise GoldenError(f"cannot read golden bundle {p}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def load_bundle(path: str | Path) -> dict[str, torch.Tensor]:
    """Load a ``dict[str, Tensor]``; never unpickles code. Regular files only; cached per file version."""
    p = Path(path)
    # the process cache is keyed by the file's identity and change times: a rewrite changes the
    # ctime, which no tool can set back (hashing the content cost ~0.4 s a run at hidden 4096)
    try:
        st = p.stat()
        key = f"{p.resolve()}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    except OSError:
        key = None
    hit = _CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    raw = read_regular(p)
    try:
        if p.suffix == ".safetensors":
            from safetensors.torch import load as load_safetensors

            data: object = load_safetensors(raw)
        else:
            data = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt file, pickle with code, wrong format ...
        raise GoldenError(f"cannot read golden bundle {p}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    if not isinstance(data, Mapping):
        raise GoldenError(f"golden bundle {p} holds a {type(data).__name__}, expected a dict of tensors")
    out: dict[str, torch.Tensor] = {}
    for k, v in data.items():
        if not isinstance(k, str):
            raise GoldenError(f"golden bundle {p}: key {k!r} is not a string")
        if not isinstance(v, torch.Tensor):
            raise GoldenError(f"golden bundle {p}: '{k}' is a {type(v).__name__}, expected a tensor")
        out[k] = v
    if len(_CACHE) > 16:
        _CACHE.clear()
    if key is not None:
        _CACHE[key] = out
    return out


def save_golden(
    directory: str | Path,
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    dumps: str | Path | None = None,
    entry: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    config: str | Path | None = None,
) -> Path:
    """Write ``inputs.pt`` and ``expected.pt`` into ``directory``.

    With ``dumps`` (a ``passes_dump/`` folder), also add a ``[[cases]]`` entry to
    ``config`` (default: ``pypto-lsp.toml`` in the parent of ``directory``). Returns
    the directory.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, bundle in (("inputs", inputs), ("expected", expected)):
        for k, v in bundle.items():
            if not isinstance(k, str) or not isinstance(v, torch.Tensor):
                raise GoldenError(f"{name}: every entry must be str -> Tensor, got {k!r}: {type(v).__name__}")
        torch.save({k: v.detach().cpu().clone() for k, v in bundle.items()}, d / f"{name}.pt")
    if dumps is not None:
        cfg = Path(config) if config is not None else d.parent / "pypto-lsp.toml"
        base = cfg.parent.resolve()

        def rel(p: Path) -> str:
            try:
                return p.resolve().relative_to(base).as_posix()
            except ValueError:
                return p.resolve().as_posix()

        for p in (Path(dumps), d):
            try:
                rel(p).encode("utf-8")
            except UnicodeEncodeError as exc:
                raise GoldenError(f"cannot write {p!r} into {cfg}: TOML needs UTF-8 paths") from exc
        # json.dumps gives a valid TOML basic string for any path (quotes, backslashes escaped)
        lines = [
            "",
            "[[cases]]",
            f"dumps = {json.dumps(rel(Path(dumps)))}",
            f"inputs = {json.dumps(rel(d / 'inputs.pt'))}",
            f"expected = {json.dumps(rel(d / 'expected.pt'))}",
        ]
        if entry:
            lines.append(f"entry = {json.dumps(entry)}")
        if rtol is not None:
            lines.append(f"rtol = {float(rtol)!r}")
        if atol is not None:
            lines.append(f"atol = {float(atol)!r}")
        with cfg.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return d
