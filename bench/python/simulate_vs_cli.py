"""Benchmark (not a test): squall.simulate from Python against `squall sim` for the same work.

    python bench/python/simulate_vs_cli.py [--squall target/release/squall] [--repeats 5]

Both run builtin:seed001-split (100 s of simulated time per replication)
with 40 replications on the same number of threads, without events or
pcaps, into a fresh directory each time; `squall sim` is timed as a
process (its start-up included), squall.simulate as a call. Prints the
median of each and their ratio (Python / CLI). Issue 33 asks for a ratio
within 1.05.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import squall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squall", default="target/release/squall")
    parser.add_argument("--scenario", default="builtin:seed001-split")
    parser.add_argument("--replications", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    scenario = squall.Scenario.load(args.scenario)
    cli, py = [], []
    for _ in range(args.repeats):
        out = tempfile.mkdtemp(prefix="bench-cli-")
        shutil.rmtree(out)
        start = time.perf_counter()
        subprocess.run(
            [args.squall, "sim", args.scenario, "--replications", str(args.replications), "--jobs", str(args.jobs),
             "--no-events", "--no-pcap", "--out", out, "--format", "csv"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        cli.append(time.perf_counter() - start)
        shutil.rmtree(out)
        out = tempfile.mkdtemp(prefix="bench-py-")
        start = time.perf_counter()
        squall.simulate(scenario, replications=args.replications, out=out, jobs=args.jobs)
        py.append(time.perf_counter() - start)
        shutil.rmtree(out)
    c, p = statistics.median(cli), statistics.median(py)
    print(f"{args.scenario}, {args.replications} replications on {args.jobs} thread(s), median of {args.repeats}:")
    print(f"  squall sim       {c:.3f} s")
    print(f"  squall.simulate  {p:.3f} s  (includes reading summary.json into DataFrames)")
    print(f"  ratio            {p / c:.3f}")


if __name__ == "__main__":
    main()
