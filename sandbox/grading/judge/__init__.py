"""The judge: verdicts, checks, transcripts, lessons, feedback, grouping, the summary and the report.

Runs in the grader's process only, and never imports the learner's side (`learner/`): it reaches
learner code through the boundary (`boundary/`: a worker it talks to in JSON frames, a loopback
endpoint it serves), and judges only what reached the provider there, the data that came back, and
the tools it ran itself. It may read the catalogue and the scenarios, write the report and the state
file; it never runs, imports or unpickles anything a learner wrote.
"""
