"""The script engine: a request's bytes in, the provider's exact answer out, deterministically.

`_engine` is the dispatch (wire format, scenario, replay, budget, answer); `_scenario` and
`_catalogue` the scripts, `_replay` the history checked against them (`_sent`: what the script sent
at each step), `_answer` the next turn rendered and encoded, `_refusals`, `_limits`,
`_repeats`, `_senders` and `_wrong_path` the errors the engine words itself, `kept/` the state a
provider keeps for its client (stored responses, threads, conversations), `faults/` the failures
scripted on purpose, and `_recorded` (with `_toml_out` and `_cassettes`) scenarios written from
recorded traffic. It imports the wire formats and the skyl model, never an adapter, the graders
or the room: any adapter can sit in front of it.
"""
