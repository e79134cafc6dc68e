"""The fuzz suite's Hypothesis profiles, and its table of generated cases per target.

Profiles: "default" for the normal run, "slow" with many more examples for CI's fuzz leg;
HYPOTHESIS_PROFILE picks one.  They live here, not in tests/conftest.py, so that a run of
other tests (the wheel leg's README test) does not need Hypothesis.

``PPDM_FUZZ_TABLE=1 python -m pytest tests/fuzz`` prints the table at the end of the run
(CI's fuzz leg does); without it the run prints one summary line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))  # the fuzz_* helper modules

from fuzz_contract import COUNTS, ERRORS, KNOWN_HITS, OUTCOMES

# The deadline flags a hang or a pathological slowdown in one example.
_FUZZ_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("default", max_examples=40, deadline=5_000, suppress_health_check=_FUZZ_HEALTH)
settings.register_profile("slow", max_examples=250, deadline=20_000, suppress_health_check=_FUZZ_HEALTH)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# Under pytest-xdist the cases are counted in the workers: each sends its counts home when
# it finishes, and the controller, which prints the summary, adds them up.
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fuzz_counts"] = json.dumps(
            {
                "counts": COUNTS,
                "known": KNOWN_HITS,
                "outcomes": OUTCOMES,
                "errors": ERRORS,
            }
        )


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    sent = getattr(node, "workeroutput", {}).get("fuzz_counts")
    if sent is None:
        return
    counts = json.loads(sent)
    COUNTS.update(counts["counts"])
    KNOWN_HITS.update(counts["known"])
    for name, outcome in counts["outcomes"].items():
        OUTCOMES[name].update(outcome)
    for name, errors in counts["errors"].items():
        ERRORS[name].update(errors)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not COUNTS:
        return
    write = terminalreporter.write_line
    total = sum(COUNTS.values())
    write(f"fuzz: {total} generated cases over {len(COUNTS)} targets; known findings hit: {dict(KNOWN_HITS)}")
    if not os.environ.get("PPDM_FUZZ_TABLE"):
        return
    write(f"{'target':<44} {'cases':>7} {'result':>7} {'error':>7} {'known':>7}")
    for name in sorted(COUNTS):
        o = OUTCOMES[name]
        write(f"{name:<44} {COUNTS[name]:>7} {o['result']:>7} {o['clear error']:>7} {o['known finding']:>7}")
        if os.environ.get("PPDM_FUZZ_TABLE") == "errors":
            for message, count in ERRORS[name].most_common(4):
                write(f"      {count:>4}  {message}")
