"""Machine-readable bench results and the regression check (bench/README.md).

  results.py parse DIR [--device=D]    DIR/<case>.txt (hexir-bench reports of bench/run.sh)
                                       -> DIR/results.json, printed path
  results.py compare OLD NEW [--tolerance=0.10]
                                       names every case and dispatch of NEW slower than in
                                       OLD by more than the tolerance; exit 1 if any

results.json: {"device": ..., "cases": {case: {"wall_us", "busy_us", "dispatches":
{"<executable>": {"time_us", "gbps", "gflops", "roof_pct", "baseline_ratio"}}}}}.
baseline_ratio is Hexir's time / the baseline library's (cuBLAS, OpenBLAS; null when the
report gives none). The check compares baseline ratios where both runs have one (the
baseline absorbs a faster or slower machine), else dispatch times, else the case's wall.
"""
import json
import os
import re
import sys

DISPATCH = re.compile(
    r"^  (?P<name>[A-Za-z_][A-Za-z_0-9]*)\s+(?P<n>\d+)\s+(?P<time>[0-9.]+) us\s+\S+\s+\S+\s+\S+"
    r"\s+\S+\s+(?P<gbps>[0-9.]+)\s+(?P<gflops>[0-9.]+)\s+\S+\s+(?P<roof>[0-9.]+)(?P<rest>.*)$")
RATIO = re.compile(r"Hexir/baseline = (?P<ratio>[0-9.]+)x")


def parse_report(text):
    """The numbers of one hexir-bench report: wall, device busy and the dispatch rows."""
    case = {"wall_us": None, "busy_us": None, "dispatches": {}}
    for line in text.splitlines():
        m = re.search(r"wall \(invoke \+ wait idle\): ([0-9.]+) us", line)
        if m:
            case["wall_us"] = float(m.group(1))
        m = re.search(r"device busy per call: ([0-9.]+) us", line)
        if m:
            case["busy_us"] = float(m.group(1))
        m = DISPATCH.match(line)
        if m:
            ratio = RATIO.search(m.group("rest"))
            case["dispatches"][m.group("name")] = {
                "time_us": float(m.group("time")),
                "gbps": float(m.group("gbps")),
                "gflops": float(m.group("gflops")),
                "roof_pct": float(m.group("roof")),
                "baseline_ratio": float(ratio.group("ratio")) if ratio else None,
            }
    return case


def parse_dir(directory, device):
    cases = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".txt") or name == "SUMMARY.txt" or name.endswith(".compile.log"):
            continue
        with open(os.path.join(directory, name)) as f:
            case = parse_report(f.read())
        if case["wall_us"] is not None:
            cases[name[:-4]] = case
    return {"device": device, "cases": cases}


def slower(old, new, tolerance):
    """Lines naming what NEW does slower than OLD (by more than `tolerance`, a fraction)."""
    out = []

    def check(what, before, after, unit):
        if before and after and after > before * (1 + tolerance):
            out.append("SLOWER %s: %s %.3g -> %.3g (%+.0f%%)" %
                       (what, unit, before, after, 100.0 * (after / before - 1)))

    for name, case in sorted(new["cases"].items()):
        previous = old["cases"].get(name)
        if previous is None:
            continue
        compared = False
        for dispatch, row in sorted(case["dispatches"].items()):
            before = previous["dispatches"].get(dispatch)
            if before is None:
                continue
            compared = True
            if before["baseline_ratio"] and row["baseline_ratio"]:
                check("%s/%s" % (name, dispatch), before["baseline_ratio"], row["baseline_ratio"],
                      "Hexir/baseline")
            else:
                check("%s/%s" % (name, dispatch), before["time_us"], row["time_us"], "us")
        if not compared:
            check(name, previous["wall_us"], case["wall_us"], "wall us")
    return out


def main(argv):
    options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    args = [a for a in argv if not a.startswith("--")]
    if len(args) == 2 and args[0] == "parse":
        results = parse_dir(args[1], options.get("device", "unknown"))
        path = os.path.join(args[1], "results.json")
        with open(path, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        print(path)
        return 0
    if len(args) == 3 and args[0] == "compare":
        with open(args[1]) as f:
            old = json.load(f)
        with open(args[2]) as f:
            new = json.load(f)
        lines = slower(old, new, float(options.get("tolerance", "0.10")))
        for line in lines:
            print(line)
        print("regression check: %d slower than %s" % (len(lines), args[1]))
        return 1 if lines else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
