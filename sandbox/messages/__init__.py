"""The skyl model: the neutral conversation every other package speaks.

`_types` holds a conversation's pieces (`Message`, its parts, `Request`, `Response`), `_events` the
typed stream events. The client (`skyl`), the wire formats and the engine all build and read these;
this package imports nothing of the sandbox but its errors. Learners reach it through `sandbox.skyl`.
"""
