#!/usr/bin/env python3
"""Turns a `bazel test` log plus the test logs into per-test-case counts.

Usage: summarize_tests.py BAZEL_OUTPUT_LOG TESTLOGS_DIR
Prints a table of targets, the names of skipped cases with reasons, and last the line
"N passed, N failed, N skipped". Exits 1 when anything failed.

       summarize_tests.py --total NAME:EXIT_STATUS=OUTPUT [NAME:EXIT_STATUS=OUTPUT...]
Adds up runs that each ended with such a line (CI: the suite and the sanitized tests): one line
per run, then the sum as the last line. A run whose output has no such line (it stopped
early), or that exited nonzero with no failure counted, counts as one failure. Exits 1 when
anything failed.
"""
import os
import re
import sys

STATUS_RE = re.compile(r"^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|FAILED TO BUILD|SKIPPED|INCOMPLETE)\b")
CATCH_ALL_PASSED = re.compile(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)")
CATCH_CASES = re.compile(r"test cases:\s+(\d+)\s+\|\s+(?:(\d+) passed)?\s*\|?\s*(?:(\d+) failed)?")
LIT_RE = re.compile(r"^\s*(Passed|Failed|Unsupported|Unresolved|Timed Out|Expectedly Failed|Unexpectedly Passed)\s*:\s*(\d+)", re.M)
SKIP_RE = re.compile(r"HEXIR_SKIPPED:\s*(.*)")
# pytest's last line, e.g. "===== 40 passed, 2 skipped in 12.3s =====", and its -rs lines.
PYTEST_SUMMARY = re.compile(r"^=+ (.*?) in [\d.]+s(?: \([^)]*\))? =+$", re.M)
PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
PYTEST_SKIP = re.compile(r"^SKIPPED \[\d+\] (.*)$", re.M)
# The last line of a summarized run (and of a setup failure, which has no skipped count).
SUMMARY_LINE = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")


def log_texts(testlogs, target):
    """The target's test.log, or one per shard (shard_K_of_N/test.log) of a sharded test."""
    pkg, _, name = target[2:].partition(":")
    folder = os.path.join(testlogs, pkg, name) if testlogs else ""
    paths = [os.path.join(folder, "test.log")]
    if folder and not os.path.exists(paths[0]) and os.path.isdir(folder):
        paths = sorted(os.path.join(folder, d, "test.log") for d in os.listdir(folder) if d.startswith("shard_"))
    texts = []
    for path in paths:
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                texts.append(f.read())
    return texts or [""]


def count(target, status, testlogs):
    """Returns (passed, failed, skipped, skip_reasons). Lit, pytest and Catch2 logs count per
    test case (summed over a sharded test's shards); any other target counts as one."""
    ok = status in ("PASSED", "FLAKY")
    results = [count_log(text, ok) for text in log_texts(testlogs, target)]
    if len(results) == 1:
        return results[0][:4]
    reasons = [r for result in results for r in result[3]]
    if any(result[4] for result in results):
        return tuple(sum(result[i] for result in results) for i in range(3)) + (reasons,)
    if not ok:
        return 0, 1, 0, reasons
    return (0, 0, 1, reasons) if all(result[2] for result in results) else (1, 0, 0, reasons)


def count_log(text, ok):
    """(passed, failed, skipped, skip_reasons, counted per test case) of one test.log."""
    skips = SKIP_RE.findall(text)
    lit = dict((k, int(v)) for k, v in LIT_RE.findall(text))
    if lit:
        passed = lit.get("Passed", 0) + lit.get("Expectedly Failed", 0)
        failed = sum(lit.get(k, 0) for k in ("Failed", "Unresolved", "Timed Out", "Unexpectedly Passed"))
        skipped = lit.get("Unsupported", 0)
        if not ok and failed == 0:
            failed = 1
        return passed, failed, skipped, skips, True
    summaries = PYTEST_SUMMARY.findall(text)
    counts = PYTEST_COUNT.findall(summaries[-1]) if summaries else []
    if counts:
        n = {}
        for value, key in counts:
            n[key.rstrip("s") if key.startswith("error") else key] = int(value)
        passed = n.get("passed", 0) + n.get("xfailed", 0)
        failed = n.get("failed", 0) + n.get("error", 0) + n.get("xpassed", 0)
        if not ok and failed == 0:
            failed = 1
        return passed, failed, n.get("skipped", 0), skips + PYTEST_SKIP.findall(text), True
    m = CATCH_ALL_PASSED.search(text)
    if m and ok:
        cases = int(m.group(2))
        return max(cases - len(skips), 0), 0, len(skips), skips, True
    m = CATCH_CASES.search(text)
    if m:
        passed = int(m.group(2) or 0)
        failed = int(m.group(3) or 0)
        if not ok and failed == 0:
            failed = 1
        return max(passed - len(skips), 0), failed, len(skips), skips, True
    if skips and ok:
        return 0, 0, len(skips), skips, False
    return (1, 0, 0, skips, False) if ok else (0, 1, 0, skips, False)


def total(runs):
    """Sums the summary lines of runs given as NAME:EXIT_STATUS=OUTPUT_FILE; returns the exit code."""
    totals = [0, 0, 0]
    print("\n==== runs ====")
    for run in runs:
        label, _, path = run.partition("=")
        name, _, status = label.partition(":")
        counts = None
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                for line in f.read().splitlines():
                    m = SUMMARY_LINE.match(line.strip())
                    if m:
                        counts = [int(g or 0) for g in m.groups()]
        if counts is None:
            counts = [0, 1, 0]
            print(f"{name}: no summary line (the run stopped early): counted as 1 failure")
        elif status not in ("", "0") and counts[1] == 0:
            counts[1] = 1
            print(f"{name}: exit status {status} with no failed test: counted as 1 failure")
        else:
            print(f"{name}: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped")
        totals = [t + c for t, c in zip(totals, counts)]
    print(f"\n{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--total":
        return total(sys.argv[2:])
    bazel_log, testlogs = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    with open(bazel_log, errors="replace") as f:
        lines = f.read().splitlines()
    totals = [0, 0, 0]
    seen = False
    skipped_notes = []
    print("\n==== per-target results ====")
    for line in lines:
        m = STATUS_RE.match(line)
        if not m:
            continue
        seen = True
        target, status = m.group(1), m.group(2)
        p, f, s, reasons = count(target, status, testlogs)
        totals[0] += p
        totals[1] += f
        totals[2] += s
        print(f"{target:60s} {status:16s} passed {p:4d}  failed {f:3d}  skipped {s:3d}")
        for r in reasons:
            skipped_notes.append(f"{target}: {r}")
    if any("FAILED: Build did NOT complete" in l or l.startswith("ERROR:") for l in lines) and totals[1] == 0:
        totals[1] += 1  # a build error that left no failed target still fails the run
        print("build errors (see above) count as one failure")
    if not seen:
        totals[1] += 1
        print("no test results found in the bazel output")
    if skipped_notes:
        print("\n==== SKIPPED (not passed) ====")
        for n in skipped_notes:
            print("  " + n)
    print(f"\n{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
