"""`sandbox init go DIR`: a Go module, from an empty folder, holding the lesson's loop and the skyl client.

A Go learner starts from the lesson's code, which imports `skyl`. The client ships inside this package
(`sandbox/skyl/golang/skyl`, a Go module named `skyl`, standard library only), so the scaffold copies it into
the new module and points a `replace` line at the copy: `go build` then needs no network and no module
proxy (GOPROXY=off works), and the learner owns every line that gets compiled.

It writes only into DIR, which must be absent or empty, and never overwrites a file.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

__all__ = ["GO_SOURCES", "ScaffoldError", "init_go"]

GO_SOURCES = Path(__file__).parent.parent / "skyl" / "golang"
"""`skyl/` (the client module) and `main.go` (the lesson's loop, wired to the sandbox's contract)."""

_GO_MOD = """module {module}

go 1.19

require skyl v0.0.0

// skyl is the lesson's client, copied here by `sandbox init go`: a module of its own, in ./skyl.
replace skyl => ./skyl
"""


class ScaffoldError(Exception):
    """The folder cannot take a new module: said in one line, with what to do."""


def module_name(folder: Path) -> str:
    """The folder's name as a Go module path (`go mod init` would want one): lowercase letters, digits,
    `-`, `_` and `.`; `myloop` when nothing of the name is left."""
    name = re.sub(r"[^a-z0-9._-]+", "-", folder.name.lower()).strip("-.")
    return name if name and name != "skyl" else "myloop"


def init_go(target: Path) -> list[Path]:
    """Create the module in `target`; returns the files written, relative to it."""
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} is a file: name a new folder (or an empty one) for the Go module.")
    if target.is_dir() and any(target.iterdir()):
        raise ScaffoldError(
            f"{target} is not empty, and `sandbox init go` never overwrites files: name a new folder, "
            "e.g. `sandbox init go myloop`."
        )
    target.mkdir(parents=True, exist_ok=True)
    (target / "go.mod").write_text(_GO_MOD.format(module=module_name(target.resolve())), encoding="utf-8")
    shutil.copyfile(GO_SOURCES / "main.go", target / "main.go")
    skyl = target / "skyl"
    skyl.mkdir()
    for source in sorted((GO_SOURCES / "skyl").iterdir()):
        if (source.suffix == ".go" and not source.name.endswith("_test.go")) or source.name == "go.mod":
            shutil.copyfile(source, skyl / source.name)
    return sorted(path.relative_to(target) for path in target.rglob("*") if path.is_file())
