"""Module-level tools, agents, plans and methods for the pickling tests (workers import them by name)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import toolspan


@toolspan.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@toolspan.tool
async def add_async(a: int, b: int) -> int:
    return a + b


@toolspan.tool
def count(n: int) -> Iterator[int]:
    yield from range(n)


@toolspan.agent
def answer(question: str) -> str:
    return f"{question}!"


@toolspan.plan(name="steps")
def steps(n: int) -> int:
    return n * 2


def pid_and_sum(a: int, b: int) -> tuple[int, int]:
    return os.getpid(), add(a, b)


class Calculator:
    def __init__(self, base: int) -> None:
        self.base = base

    @toolspan.tool
    def plus(self, n: int) -> int:
        return self.base + n

    @toolspan.tool
    @classmethod
    def kind(cls) -> str:
        return cls.__name__

    @toolspan.tool
    @staticmethod
    def double(n: int) -> int:
        return n * 2

    def __call__(self, n: int) -> int:
        return self.base * n


def raw_multiply(a: int, b: int) -> int:
    return a * b


multiply = toolspan.tool(raw_multiply, name="multiply")  # decorated under another name: by value
scaled = toolspan.tool(Calculator(3), name="scaled")  # a callable object: by value
partial_add = toolspan.tool(functools.partial(raw_multiply, 10), name="times_ten")
renamed_plan = toolspan.plan(name="renamed")(raw_multiply)  # an agent or plan by value keeps its kind
