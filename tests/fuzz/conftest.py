"""The fuzz suite's table: generated cases per target and how they ended.

``PPDM_FUZZ_TABLE=1 python -m pytest tests/fuzz`` prints it at the end of the run (CI's
fuzz leg does); without it the run prints one summary line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the fuzz_* helper modules

from fuzz_contract import COUNTS, ERRORS, KNOWN_HITS, OUTCOMES


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
