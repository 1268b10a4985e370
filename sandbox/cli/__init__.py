"""The `sandbox` command: `_main` the subcommands and their dispatch, `_challenges` working through
the challenges (`list`, `check`, `hint`, `watch`, `solution`), `_programs` grading and watching
programs in any language, `_room` the workshop room, `_scaffold` a new learner's folder, `_record`
scenarios from real traffic (`record`, `import`) and the server-control options.

It sits on top of everything else and is the only package that parses the command line.
"""

from __future__ import annotations

from ._main import main

__all__ = ["main"]
