"""Write what the run settings' metadata declares into the files that are not Python.

Every field of ``pypto_lsp.validate.config.RunSettings`` declares its carriers in its metadata
(``pypto_lsp/validate/carriers.py``): the ``[[cases]]`` key, the ``validate`` flag, the editor
setting, the docs row. ``cli.py`` and ``server/config.py`` read them at run time; this script
writes the rest:

* ``vscode-extension/package.json``: the ``pypto-lsp.<key>`` entry of every editor setting, in
  field order right after ``pypto-lsp.runOn`` (the other entries are the extension's own and stay
  as they are);
* ``docs/configuration.md``: the run-settings table (key, type, flag, editor setting, meaning);
* ``docs/cli.md``: the table of the run settings' ``validate`` flags;
* ``vscode-extension/README.md``: the table of the editor's run settings (setting, default,
  what it does).

Each table sits between a ``<!-- generated: ... -->`` line and ``<!-- end generated -->``.

    python tools/gen_settings.py           # write
    python tools/gen_settings.py --check   # exit 1 when a file is out of date (a unit test runs this)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pypto_lsp.validate.carriers import Doc, Editor, Flag, carried  # noqa: E402
from pypto_lsp.validate.config import RunSettings  # noqa: E402

SECTION = "pypto-lsp"
PACKAGE_JSON = Path("vscode-extension/package.json")
CONFIGURATION_MD = Path("docs/configuration.md")
CLI_MD = Path("docs/cli.md")
EXTENSION_README = Path("vscode-extension/README.md")
# the extension's own settings: every other `pypto-lsp.*` entry of package.json is a run setting's
CLIENT_SETTINGS = ("interpreter", "runOn", "golden.inputs", "golden.expected", "trace.server")
AFTER = f"{SECTION}.runOn"  # the generated entries follow this one
END = "<!-- end generated -->"


def _begin(what: str) -> str:
    return f"<!-- generated: {what} (tools/gen_settings.py from RunSettings' metadata; do not edit) -->"


# ---------------------------------------------------------------------- package.json


def editor_entries() -> dict[str, dict[str, Any]]:
    """package.json's entry of every run setting with an editor key, in field order."""
    out: dict[str, dict[str, Any]] = {}
    for _, e in carried(RunSettings, "editor"):
        assert isinstance(e, Editor)
        text = "markdownDescription" if e.markdown else "description"
        out[f"{SECTION}.{e.key}"] = {**e.schema, "scope": "resource", text: e.description}
    return out


def package_json(text: str) -> str:
    """``text`` (package.json) with the run settings' entries written after ``pypto-lsp.runOn``;
    the extension's own entries as they were. ValueError for an entry that is neither."""
    pkg = json.loads(text)
    props: dict[str, Any] = pkg["contributes"]["configuration"]["properties"]
    ours = editor_entries()
    own = {f"{SECTION}.{k}" for k in CLIENT_SETTINGS}
    stray = [k for k in props if k not in own and k not in ours]
    if stray:
        raise ValueError(
            f"package.json declares {stray}: neither a run setting's editor key (RunSettings) nor one of the "
            f"extension's own settings (CLIENT_SETTINGS in tools/gen_settings.py); remove it or declare it"
        )
    new: dict[str, Any] = {}
    for k, v in props.items():
        if k in ours:
            continue
        new[k] = v
        if k == AFTER:
            new.update(ours)
    pkg["contributes"]["configuration"]["properties"] = new
    return json.dumps(pkg, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------- docs


def _cell(text: str) -> str:
    return text.replace("\n", " ")


def _flag_usage(flag: Flag) -> str:
    if flag.options.get("action") == "store_true":
        return f"`{flag.name}`"
    choices = flag.options.get("choices")
    if choices:
        return f"`{flag.name} " + "\\|".join(choices) + "`"
    return f"`{flag.name} {flag.options.get('metavar') or flag.dest.upper()}`"


def settings_table() -> str:
    """docs/configuration.md: every run setting, its carriers and what it means."""
    rows = ["| key | type | `validate` flag | editor setting | meaning |", "|---|---|---|---|---|"]
    for f, doc in carried(RunSettings, "doc"):
        assert isinstance(doc, Doc)
        flag: Flag | None = f.metadata.get("flag")
        editor: Editor | None = f.metadata.get("editor")
        rows.append(
            f"| `{f.name}` | {doc.type} | {_flag_usage(flag) if flag else '-'} | "
            f"{f'`{SECTION}.{editor.key}`' if editor else '-'} | {_cell(doc.meaning)} |"
        )
    return "\n".join(rows)


def flags_table() -> str:
    """docs/cli.md: the run settings' ``validate`` flags."""
    rows = ["| flag | case key | meaning |", "|---|---|---|"]
    for f, flag in carried(RunSettings, "flag"):
        rows.append(f"| {_flag_usage(flag)} | `{f.name}` | {_cell(f.metadata['doc'].meaning)} |")
    return "\n".join(rows)


def _json_default(e: Editor) -> str:
    return f"`{json.dumps(e.schema.get('default'))}`"


def editor_table() -> str:
    """vscode-extension/README.md: the editor's run settings with their defaults."""
    rows = ["| Setting | Default | What it does |", "| --- | --- | --- |"]
    for _, e in carried(RunSettings, "editor"):
        rows.append(f"| `{SECTION}.{e.key}` | {_json_default(e)} | {_cell(e.description)} |")
    return "\n".join(rows)


def between_markers(text: str, what: str, body: str, name: str) -> str:
    """``text`` with what is between the markers of ``what`` replaced by ``body``."""
    begin = _begin(what)
    i = text.find(begin)
    j = text.find(END, i)
    if i < 0 or j < 0:
        raise ValueError(f"{name}: no '{begin}' ... '{END}' lines")
    return text[: i + len(begin)] + "\n" + body + "\n" + text[j:]


# ---------------------------------------------------------------------- files


def generated(root: Path) -> dict[Path, str]:
    """Every file this script writes, by path under ``root``, with its text as it should be."""
    out = {root / PACKAGE_JSON: package_json((root / PACKAGE_JSON).read_text(encoding="utf-8"))}
    doc = root / CONFIGURATION_MD
    out[doc] = between_markers(doc.read_text(encoding="utf-8"), "run settings", settings_table(), str(CONFIGURATION_MD))
    cli = root / CLI_MD
    out[cli] = between_markers(cli.read_text(encoding="utf-8"), "run setting flags", flags_table(), str(CLI_MD))
    readme = root / EXTENSION_README
    out[readme] = between_markers(readme.read_text(encoding="utf-8"), "run settings", editor_table(), str(EXTENSION_README))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout to write into (default: this one)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    args = p.parse_args(argv)
    try:
        files = generated(args.root)
    except ValueError as exc:
        print(f"gen_settings: {exc}", file=sys.stderr)
        return 2
    stale = [path for path, text in files.items() if path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(args.root)}: out of date with RunSettings (run: python tools/gen_settings.py)")
        return 1 if stale else 0
    for path in stale:
        path.write_text(files[path], encoding="utf-8")
        print(f"wrote {path.relative_to(args.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
