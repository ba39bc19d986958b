#!/usr/bin/env bash
# Runs pytest on the given folder against the assembled package (bazel-bin/python/package).
# Uses Debian's interpreter: the extensions are built against its headers, and NumPy, pytest
# and PyTorch come from Debian packages. -rs lists the reason of every skipped case.
set -euo pipefail
here="${TEST_SRCDIR:-$PWD/..}/${TEST_WORKSPACE:-hexir}"
export PYTHONPATH="$here/python/package${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$here"
exec /usr/bin/python3 -m pytest -p no:cacheprovider -rs -v "$@"
