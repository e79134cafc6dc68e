"""Run ruff and mypy, count their findings, and compare with a baseline.

Usage: python .ci/findings.py BASELINE.json

Fails (exit 1) when a tool finds more than its baseline allows, printing every finding
of that tool; prints a one-line summary per tool either way.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent


def ruff() -> tuple[list[str], Counter[str]]:
    done = subprocess.run(
        [str(BIN / "ruff"), "check", "--output-format", "json", "."], capture_output=True, text=True
    )
    if done.returncode not in (0, 1):
        sys.exit(f"ruff failed to run:\n{done.stderr}")
    found = json.loads(done.stdout)
    lines = [
        f"{f['filename']}:{f['location']['row']}:{f['location']['column']}: {f['code']} {f['message']}"
        for f in found
    ]
    return lines, Counter(f["code"] or "syntax" for f in found)


def mypy() -> tuple[list[str], Counter[str]]:
    done = subprocess.run([str(BIN / "mypy")], capture_output=True, text=True)
    if done.returncode not in (0, 1) or not done.stdout:
        sys.exit(f"mypy failed to run:\n{done.stdout}{done.stderr}")
    lines = [line for line in done.stdout.splitlines() if ": error: " in line]
    kinds = Counter(m.group(1) for line in lines if (m := re.search(r"\[([a-z-]+)\]$", line)))
    return lines, kinds


def main() -> int:
    baseline_path = Path(sys.argv[1])
    baseline = json.loads(baseline_path.read_text())
    failed = False
    for name, tool in (("ruff", ruff), ("mypy", mypy)):
        lines, kinds = tool()
        allowed = baseline[name]
        by_kind = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
        print(f"{name}: {len(lines)} findings (baseline {allowed}){': ' + by_kind if by_kind else ''}")
        if len(lines) > allowed:
            failed = True
            print(f"{name}: {len(lines) - allowed} more than the baseline; every finding:")
            print("\n".join(f"  {line}" for line in lines))
        elif len(lines) < allowed:
            print(f'{name}: below the baseline: set "{name}": {len(lines)} in {baseline_path}')
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
