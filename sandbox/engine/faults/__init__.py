"""Faults, as the providers really fail: rate limits, overload, errors inside a stream, cut
connections and latency, each with the provider's real status, body, headers or events.

    Fault("rate_limit", request=2)            the 2nd model request of a conversation gets a 429
    Step(calls=[...], fault=Fault("cut"))      the step's answer is cut before any byte, once
    parse_faults("overloaded@1:times=2")       the ad-hoc form of `sandbox serve --faults`

Each provider's bodies live in `faults/<provider>.py` with their sources; `_spec` is the model and
its refusals, `_plan` the engine's hook (which fault plays on which attempt), `_apply` and `_delivery`
what a fault does to one answer and how the adapters send it.
"""

from __future__ import annotations

from ._apply import FaultError, fault_error, shape
from ._delivery import Delivery
from ._plan import Applied, FaultPlan, arrived_at
from ._spec import KINDS, Fault, FaultKind, fault_from_dict, parse_faults

__all__ = [
    "KINDS",
    "Applied",
    "Delivery",
    "Fault",
    "FaultError",
    "FaultKind",
    "FaultPlan",
    "fault_error",
    "fault_from_dict",
    "arrived_at",
    "parse_faults",
    "shape",
]
