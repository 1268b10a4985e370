"""Load the implementation under test from its file, in the worker process that runs it.

Each file gets a module name of its own (the eight `exercise.py` files would collide in
`sys.modules` otherwise), and an import error becomes a short message pointing at the learner's
line rather than the import machinery's stack.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..boundary._protocol import ImplementationError

__all__ = ["ImplementationError", "load_implementation"]


def module_name(path: Path) -> str:
    stem = path.parent.name if path.name == "exercise.py" else path.stem
    return "_sandbox_impl_" + "".join(char if char.isalnum() else "_" for char in stem)


def load_implementation(path: Path, shown_as: str) -> ModuleType:
    """Import `path` as a new module; `shown_as` is the path as the learner knows it."""
    if not path.is_file():
        raise ImplementationError(f"{shown_as} does not exist.")
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - only for non-.py paths
        raise ImplementationError(f"{shown_as} is not a Python file.")
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs: dataclasses and typing look their module up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
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
