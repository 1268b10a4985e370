"""Load the implementation under test from its file, in the worker process that runs it.

Each file gets a module name of its own (the eight `exercise.py` files would collide in
`sys.modules` otherwise), and an import error becomes a short message pointing at the learner's
line rather than the import machinery's stack.
"""

from __future__ import annotations

import importlib.util
import linecache
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..boundary._protocol import ImplementationError

__all__ = ["ImplementationError", "load_implementation"]


def module_name(path: Path) -> str:
    stem = path.parent.name if path.name == "exercise.py" else path.stem
    return "_sandbox_impl_" + "".join(char if char.isalnum() else "_" for char in stem)


def load_implementation(path: Path, shown_as: str, source: str | None = None) -> ModuleType:
    """Import `path` as a new module; `shown_as` is the path as the learner knows it.

    With `source` (the file's text, read by the grader), the module is built from it under the file's
    name, and the file itself need not exist here: a sandboxed worker sees the submission, not the
    folder it sits in. Its lines are kept for tracebacks, which name `path` as usual."""
    if source is None:
        if not path.is_file():
            raise ImplementationError(f"{shown_as} does not exist.")
        source = path.read_text(encoding="utf-8", errors="replace")
    name = module_name(path)
    module = ModuleType(name)
    module.__file__ = str(path)
    module.__spec__ = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
    linecache.cache[str(path)] = (len(source), None, source.splitlines(keepends=True), str(path))
    # Registered while it runs: dataclasses and typing look their module up by name.
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the learner's module, in its worker
    except SyntaxError as exc:
        del sys.modules[name]
        where = f"line {exc.lineno}" if exc.lineno else "somewhere"
        code = f"\n    {exc.text.rstrip()}" if exc.text else ""
        raise ImplementationError(
            f"{shown_as} has a syntax error at {where}: {exc.msg}.{code}\nFix it, then run the tests again."
        ) from None
    except BaseException as exc:  # noqa: BLE001 - anything the learner's module does on import
        del sys.modules[name]
        frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if Path(frame.filename) == path]
        stack = "".join(traceback.format_list(frames[-3:]))
        raise ImplementationError(
            f"{shown_as} raised {type(exc).__name__} while being imported: {exc}\n{stack}".rstrip()
        ) from None
    return module
