#!/usr/bin/env bash
# The wheel as a user gets it: build it, install it with pytest into a clean venv outside
# the source tree, and run there (a) a smoke check of what the wheel must carry and
# (b) the README's code examples (tests/test_readme.py) against the installed package.
# The guard plugin (.ci/wheel_guard.py) stops the run if polars_ppdm would be imported
# from the source tree instead of the wheel.
set -euo pipefail
# pip compiles nothing it installs (Python compiles what is imported), except where
# PYTHONDONTWRITEBYTECODE is set and nothing would keep it (the Makefile's PIP, the same).
no_compile=$([ -n "${PYTHONDONTWRITEBYTECODE:-}" ] || echo --no-compile)
cd "$(dirname "$0")/.."
src=$PWD
PYTHON="${PYTHON:-python3}"
work=$(mktemp -d "${TMPDIR:-/tmp}/ppdm-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m pip wheel --quiet --no-deps -w "$work/dist" .
wheel=$(echo "$work"/dist/polars_ppdm-*.whl)
echo "built $(basename "$wheel")"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet $no_compile "$wheel" pytest

# Run from an empty folder, with -P (no current directory on sys.path), so the only
# polars_ppdm to import is the installed one.
mkdir "$work/run"
cd "$work/run"
"$work/venv/bin/python" -P "$src/.ci/wheel_smoke.py" "$wheel" "$src"

if [ -f "$src/tests/test_readme.py" ]; then
    # Not the project's pytest settings (--doctest-modules over the source tree,
    # testpaths): a minimal ini of our own, rootdir here, importlib mode so pytest does
    # not put the tests' folder on sys.path, no cache written into the source tree.
    printf '[pytest]\nfilterwarnings = error\nmarkers = slow: slow tests\n' > pytest.ini
    data="$src/../shared/data"
    PPDM_DATA="$( [ -d "$data" ] && cd "$data" && pwd || true)" \
    PYTHONPATH="$src/.ci" "$work/venv/bin/python" -P -m pytest -q -p no:cacheprovider \
        -p wheel_guard -c pytest.ini --rootdir . --import-mode=importlib \
        "$src/tests/test_readme.py"
else
    echo "tests/test_readme.py not there yet: the smoke check above is the whole wheel leg"
fi
