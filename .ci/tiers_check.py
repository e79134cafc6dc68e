"""Every test of the suite runs in exactly one tier of CI (.ci/run), none falls through.

The tiers are the Makefile's ``TIER_<NAME> := <marker expression>`` lines (the one place
they are written; `make test` is TIER_FAST, .ci/run runs each tier as a leg). This collects
the whole suite once (no test runs) and evaluates every tier's expression on every test's
markers, as ``pytest -m`` does: a test no tier selects (a new marker, say) or that two
tiers select is named and the check fails.

    .venv/bin/python .ci/tiers_check.py     # prints the tests per tier
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression  # what `pytest -m` evaluates

ROOT = Path(__file__).resolve().parents[1]


def tiers() -> dict[str, str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = dict(re.findall(r"^TIER_(\w+) := (.+)$", makefile, re.M))
    if "FAST" not in found:
        sys.exit("tiers_check: no TIER_FAST := ... line in the Makefile")
    return {name.lower(): expression.strip() for name, expression in found.items()}


class Collect:
    def __init__(self) -> None:
        self.markers: dict[str, set[str]] = {}

    @pytest.hookimpl(trylast=True)  # after tests/conftest.py has marked folders and files
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.markers = {item.nodeid: {mark.name for mark in item.iter_markers()} for item in items}


def _matcher(markers: set[str]) -> Callable[..., bool]:
    """As `pytest -m` matches: the name ``slow`` is true for a test that has the marker slow."""
    return lambda name, /, **_: name in markers


def main() -> int:
    expressions = {name: Expression.compile(text) for name, text in tiers().items()}
    collect = Collect()
    args = ["--collect-only", "-qq", "-p", "no:cacheprovider", "-p", "no:xdist"]
    printed = io.StringIO()  # the list of files collected: shown only when collecting fails
    with contextlib.redirect_stdout(printed):
        code = pytest.main(args, plugins=[collect])
    if code != 0 or not collect.markers:
        print(printed.getvalue())
        print(f"tiers_check: collecting the suite failed (pytest exit {code})")
        return 1
    counts: Counter[str] = Counter()
    wrong = []
    for nodeid, markers in collect.markers.items():
        chosen = [name for name, expression in expressions.items() if expression.evaluate(_matcher(markers))]
        counts.update(chosen)
        if len(chosen) != 1:
            wrong.append(f"  {nodeid}: markers {sorted(markers) or 'none'}, tiers {chosen or 'none'}")
    print(
        f"tiers_check: {len(collect.markers)} tests; per tier: "
        + ", ".join(f"{n} {counts[n]}" for n in expressions)
    )
    stale = [
        start
        for start in _tests_placed_by_name()
        if not any(n.startswith(f"tests/{start}") for n in collect.markers)
    ]
    if wrong:
        print(f"tiers_check: {len(wrong)} tests are not in exactly one tier (Makefile TIER_* lines):")
        print("\n".join(wrong[:50]))
    if stale:
        print("tiers_check: tests/conftest.py TIER_OF_TEST names tests that do not exist (renamed?):")
        print("\n".join(f"  {start}" for start in stale))
    return 1 if wrong or stale else 0


def _tests_placed_by_name() -> list[str]:
    spec = importlib.util.spec_from_file_location("tiers_conftest", ROOT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.TIER_OF_TEST)


if __name__ == "__main__":
    sys.exit(main())
