"""results.py: a hexir-bench report parses into results.json's numbers, and the regression
check names exactly the dispatches whose Hexir/baseline ratio (else time) grew."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

REPORT = """hexir-bench: function 'main' on cuda
  executable = entry              n        time  busy%      read B   written B      GFLOP      GB/s   GFLOP/s   FLOP/B    roof%  baseline
  main_dispatch_0                 1     13.4 us  100.0    33562624       16384    0.03355   2500.14   2498.31    0.999     59.6  1x4096x4096 bf16->f32: 11.6 us, Hexir/baseline = 1.16x (cuBLAS)
  main_dispatch_1                 2      4.1 us    3.0        2048          16  4.608e-06      0.53      1.18     2.23      0.0  -
  dispatches per call: 3; device busy per call: 21.6 us
  wall (invoke + wait idle): 23.7 us
"""


def case(ratio0, time1, wall=23.7):
    return {"wall_us": wall, "busy_us": 21.6, "dispatches": {
        "main_dispatch_0": {"time_us": 13.4, "gbps": 2500.0, "gflops": 2500.0, "roof_pct": 59.6,
                            "baseline_ratio": ratio0},
        "main_dispatch_1": {"time_us": time1, "gbps": 0.5, "gflops": 1.2, "roof_pct": 0.0,
                            "baseline_ratio": None}}}


def test_report_parses_into_numbers():
    parsed = results.parse_report(REPORT)
    assert parsed["wall_us"] == 23.7 and parsed["busy_us"] == 21.6
    d0 = parsed["dispatches"]["main_dispatch_0"]
    assert (d0["time_us"], d0["gbps"], d0["roof_pct"], d0["baseline_ratio"]) == (13.4, 2500.14, 59.6, 1.16)
    assert parsed["dispatches"]["main_dispatch_1"]["baseline_ratio"] is None


def test_check_names_slower_ratio_and_time_only():
    old = {"cases": {"gemv": case(1.16, 4.1)}}
    new = {"cases": {"gemv": case(1.40, 4.2), "new_case": case(9.0, 9.0)}}
    lines = results.slower(old, new, 0.10)
    assert lines == ["SLOWER gemv/main_dispatch_0: Hexir/baseline 1.16 -> 1.4 (+21%)"], lines
    new["cases"]["gemv"]["dispatches"]["main_dispatch_1"]["time_us"] = 5.0
    assert len(results.slower(old, new, 0.10)) == 2
    assert results.slower(new, old, 0.10) == []  # faster is no regression


def test_compare_command_exits_1_on_a_regression():
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, ratio in (("old", 1.0), ("new", 1.5)):
            path = os.path.join(d, name + ".json")
            with open(path, "w") as f:
                f.write(results.json.dumps({"device": "cuda", "cases": {"gemv": case(ratio, 4.1)}}))
            paths.append(path)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.py")
        run = subprocess.run([sys.executable, script, "compare"] + paths, capture_output=True, text=True)
        assert run.returncode == 1 and "SLOWER gemv/main_dispatch_0" in run.stdout, run.stdout
        run = subprocess.run([sys.executable, script, "compare", paths[1], paths[0]], capture_output=True, text=True)
        assert run.returncode == 0 and "0 slower" in run.stdout, run.stdout


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print("PASS", name)
