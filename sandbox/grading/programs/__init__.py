"""The door for programs in any language: `sandbox grade`.

Runs in the grader's process: it plans the cases (challenge x scenario x wire format), spawns the
program once per case through the boundary (`boundary/_program`), serves its private sandbox and
tools on the loopback endpoint, and judges each case with the judge's verdicts (`judge/`). It
never imports the learner's side: the program is the learner's side, in whatever language.
"""
