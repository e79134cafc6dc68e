#!/usr/bin/env bash
# ruff and mypy over the tree (the tools of `make check`, installed by its stamp), held to
# the counts in .ci/findings-baseline.json: a change may not add findings. `make check`
# itself is strict (fails on any finding); this leg lets CI pass while the library still
# has known ones, and says when a count dropped so the baseline can follow it down.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory .venv/.lint
.venv/bin/python .ci/findings.py .ci/findings-baseline.json
