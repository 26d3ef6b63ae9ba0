"""The floor: the undecorated tool, called in the same loop as every contender."""

from __future__ import annotations

from _harness import Setup, get_forecast, run


def bare() -> Setup:
    return Setup(tool=get_forecast, flush=lambda: None)


if __name__ == "__main__":
    run({"bare": bare})
