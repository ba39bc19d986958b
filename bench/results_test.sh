#!/usr/bin/env bash
# Runs bench/results_test.py (results.json parsing, the regression check).
exec python3 "$(dirname "$0")/results_test.py"
