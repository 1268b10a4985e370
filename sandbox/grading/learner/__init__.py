"""The learner's side: what runs in the zygote and the workers, next to untrusted learner code.

Everything here may be patched, bypassed or killed by the learner's code, so nothing here decides
a verdict, writes a report or sets an exit status: it loads the learner's module, calls it, and
sends back plain data over its socket (`boundary/_protocol`, `boundary/_marshal`). It never
imports the judge (`judge/`); it may touch only its socket, the grader's endpoint over loopback,
and its own process.
"""
