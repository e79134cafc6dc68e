#!/usr/bin/env bash
# The declared lower bounds hold: install exactly the minimum of every core dependency
# (read from pyproject.toml, so they cannot drift apart) with the test stack into a clean
# venv, and run the fast tier there (the Makefile's TIER_FAST, what `make test` runs, on
# every core with pytest-xdist).
#
#   bash .ci/minimums.sh                  both steps in a folder of its own, removed after
#   bash .ci/minimums.sh prepare DIR      the venv only (.ci/run starts it in the background
#   bash .ci/minimums.sh test DIR         while other legs run), then the fast tier in it
set -euo pipefail
# pip compiles nothing it installs (Python compiles what is imported), except where
# PYTHONDONTWRITEBYTECODE is set and nothing would keep it (the Makefile's PIP, the same).
no_compile=$([ -n "${PYTHONDONTWRITEBYTECODE:-}" ] || echo --no-compile)
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
step=${1:-all}
if [ "$step" = all ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/ppdm-min.XXXXXX")
    trap 'rm -rf "$work"' EXIT
else
    work=${2:?"minimums: $step needs the folder of the venv"}
fi

# "polars>=1.34" -> "polars==1.34"; any other form of bound is refused, not skipped.
prepare() {
    "$PYTHON" - "$work/minimums.txt" <<'PY'
import re, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
pins = []
for dep in deps:
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)", dep)
    if not m:
        sys.exit(f"minimums: cannot read a lower bound from {dep!r} (expected 'name>=version')")
    pins.append(f"{m[1]}=={m[2]}")
open(sys.argv[1], "w").write("\n".join(pins) + "\n")
PY
    echo "minimum versions: $(tr '\n' ' ' < "$work/minimums.txt")"

    "$PYTHON" -m venv "$work/venv"
    "$work/venv/bin/python" -m pip install --quiet $no_compile -c "$work/minimums.txt" -e '.[test]'
}

run_fast_tier() {
    "$work/venv/bin/python" -m pip list 2>/dev/null \
        | grep -iE '^(polars|pyarrow|duckdb|numpy|cryptography|polars-runtime-32) ' | tr -s ' ' | paste -sd ',' -
    fast=$(sed -n 's/^TIER_FAST := //p' Makefile)
    [ -n "$fast" ] || { echo "minimums: no TIER_FAST := ... line in the Makefile" >&2; exit 1; }
    "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -n auto -m "$fast"
}

case "$step" in
    all) prepare; run_fast_tier ;;
    prepare) prepare ;;
    test) run_fast_tier ;;
    *) echo "minimums: unknown step $step (all, prepare DIR, test DIR)" >&2; exit 2 ;;
esac
