"""The boundary between the judge and the learner's side: the only code both may import.

The frame protocol and the JSON marshalling of values and exceptions (never pickle), the loopback
endpoint serving each dialogue's sandbox, and the spawning of the processes that run learner code
(the zygote and its workers, a program of `sandbox grade`) with their limits, deadlines and sweeps.
It imports neither the judge nor the learner's side: the zygote is started by module name, in a
process of its own.
"""
