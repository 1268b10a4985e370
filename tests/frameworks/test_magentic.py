"""magentic's `prompt_chain` loop, unmodified, over `sandbox serve`. magentic echoes each call under
an id of its own (`"0"` for an issued `call_...`: its cassette
tests/cassettes/test_prompt_chain/test_prompt_chain.yaml, recorded against the real Chat Completions
API, got a 200 for that), so it plays on the faithful echo alone. No `from __future__ import
annotations`: magentic reads the decorated function's return type as a type, not a string."""

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import LIMIT, THIRD_PARTY_WARNINGS, expected_answer

pytestmark = [
    *THIRD_PARTY_WARNINGS,
    pytest.mark.slow,
    # magentic's own import of a class it deprecates.
    pytest.mark.filterwarnings("ignore:UserImageMessage is deprecated:DeprecationWarning"),
]


def test_magentic_prompt_chain_runs_a_multi_step_task_under_its_own_call_ids(server: str) -> None:
    from magentic import OpenaiChatModel, prompt_chain

    scenario = sandbox.get_scenario("multi_step")
    model = OpenaiChatModel("multi_step", api_key="test-key", base_url=f"{server}/v1")

    @prompt_chain(scenario.prompt, functions=scenario_functions("multi_step"), model=model, max_calls=LIMIT)
    def book() -> str: ...

    assert book() == expected_answer("multi_step")
