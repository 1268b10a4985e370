"""`python -m sandbox ...`: the `sandbox` command, for when the console script is not on PATH."""

import sys

from .cli._main import main

sys.exit(main())
