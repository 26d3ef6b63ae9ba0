"""Decorated tools, agents and plans pickle and copy like the functions they wrap."""

from __future__ import annotations

import asyncio
import copy
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

import toolspan
from tests.support import pickled_tools as mod
from tests.support.instrumentation import Spans
from toolspan._instrument.tool import tool_info

pytestmark = pytest.mark.usefixtures("fresh_config")

PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)


def round_trip(obj: Any, protocol: int = pickle.DEFAULT_PROTOCOL) -> Any:
    return pickle.loads(pickle.dumps(obj, protocol))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("tracing", [False, True])
def test_module_level_decorated_functions_pickle_by_reference(
    protocol: int, tracing: bool, request: pytest.FixtureRequest
) -> None:
    if tracing:
        request.getfixturevalue("spans")
    for obj in (mod.add, mod.add_async, mod.count, mod.answer, mod.steps):
        assert round_trip(obj, protocol) is obj
    assert round_trip(mod.Calculator.double, protocol)(3) == 6  # each class access binds anew
    # Exactly as the undecorated function does: a global reference, no function body.
    assert b"add" in pickle.dumps(mod.add, protocol)
    assert len(pickle.dumps(mod.add, protocol)) < 60


def test_bound_methods_pickle_as_getattr_of_their_holder(spans: Spans) -> None:
    calc = mod.Calculator(5)
    bound = round_trip(calc.plus)
    assert bound(1) == 6
    assert tool_info(bound) is tool_info(calc.plus)  # still the tool
    assert round_trip(mod.Calculator.kind)() == "Calculator"
    assert round_trip(mod.Calculator.plus)(calc, 2) == 7
    assert [span.name for span in spans()] == [
        "execute_tool plus",
        "execute_tool kind",
        "execute_tool plus",
    ]


def test_other_callables_pickle_by_value_and_stay_tools(spans: Spans) -> None:
    for obj, args, result in (
        (mod.multiply, (2, 3), 6),
        (mod.scaled, (4,), 12),
        (mod.partial_add, (3,), 30),
    ):
        again = round_trip(obj)
        assert again is not obj
        assert again(*args) == result
        info, original = tool_info(again), tool_info(obj)
        assert info is not None
        assert original is not None
        assert (info.name, info.description, info.tool_type) == (
            original.name,
            original.description,
            original.tool_type,
        )
    assert [span.name for span in spans()] == [
        "execute_tool multiply",
        "execute_tool scaled",
        "execute_tool times_ten",
    ]


def test_agents_and_plans_by_value_keep_kind_and_name(spans: Spans) -> None:
    again = round_trip(mod.renamed_plan)
    assert again is not mod.renamed_plan
    assert again(2, 5) == 10
    assert [span.name for span in spans()] == ["plan renamed"]


def test_local_functions_fail_as_they_do_undecorated() -> None:
    def local(x: int) -> int:
        return x

    with pytest.raises((pickle.PicklingError, AttributeError)) as undecorated:
        pickle.dumps(local)
    with pytest.raises(type(undecorated.value)):
        pickle.dumps(toolspan.tool(local))


def test_copy_and_deepcopy_keep_a_working_tool() -> None:
    assert copy.copy(mod.add) is mod.add
    assert copy.deepcopy(mod.add) is mod.add
    clone = copy.deepcopy(mod.scaled)
    assert clone(2) == 6
    assert tool_info(clone) is not None


def _in_worker(fn: Callable[..., Any], *args: Any) -> Any:
    with ProcessPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args).result(timeout=60)


@pytest.mark.processes
@pytest.mark.parametrize("tracing", [False, True])
def test_process_pool_runs_decorated_tools(tracing: bool, request: pytest.FixtureRequest) -> None:
    if tracing:
        request.getfixturevalue("spans")
    with ProcessPoolExecutor(max_workers=1) as pool:
        assert pool.submit(mod.add, 2, 3).result(timeout=60) == 5
        assert pool.submit(mod.answer, "hi").result(timeout=60) == "hi!"
        assert list(pool.map(mod.multiply, [1, 2], [3, 4], timeout=60)) == [3, 8]
        assert pool.submit(mod.scaled, 2).result(timeout=60) == 6
        pid, total = pool.submit(mod.pid_and_sum, 1, 1).result(timeout=60)
    assert pid != os.getpid()
    assert total == 2


@pytest.mark.processes
async def test_process_pool_from_the_event_loop(spans: Spans) -> None:
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(max_workers=1) as pool:
        assert await loop.run_in_executor(pool, mod.steps, 4) == 8
