"""Benchmark (not a test): a 1 000-run sweep on two local Dask workers against the same sweep run serially.

    python bench/python/dask_sweep.py [--scenario builtin:seed001-split] [--points 200] [--replications 5]

The sweep is `--points` values of the scenario's `duration` (from
`--duration` up, a millisecond apart, so that every point is its own
work), each point `--replications` replications (1 000 runs by
default). Serially, every point runs in this
process on one thread, one after the other (an executor that runs each
task as it is submitted: the work of one core). On Dask, a LocalCluster
of two worker processes with one thread each takes the points through
`client.get_executor()`. Both give the same rows (checked). Prints each
wall time (the cluster's start-up, with the import of squall on each
worker, left out and shown apart) and their
ratio; issue 33 asks for at most 0.55.
"""

import argparse
import importlib
import time
from concurrent.futures import Executor, Future

import pandas as pd

import squall


class InlineExecutor(Executor):
    """Runs each task at once, in this thread: the serial baseline."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="builtin:seed001-split")
    parser.add_argument("--duration", default="20 s", help="seconds, like \"20 s\"")
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--replications", type=int, default=5)
    args = parser.parse_args()
    from dask.distributed import Client, LocalCluster

    scenario = squall.Scenario.load(args.scenario)
    base = float(args.duration.split()[0])
    grid = {"duration": [f"{base + i / 1000:.3f} s" for i in range(args.points)]}
    runs = args.points * args.replications
    start = time.perf_counter()
    serial = squall.sweep(scenario, grid, replications=args.replications, executor=InlineExecutor())
    serial_s = time.perf_counter() - start
    start = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        # The serial side has squall (and pandas) imported before its clock
        # starts; so do the workers, as part of the cluster's start-up.
        client.run(importlib.import_module, "squall")
        up_s = time.perf_counter() - start
        start = time.perf_counter()
        dask = squall.sweep(scenario, grid, replications=args.replications, executor=client.get_executor())
        dask_s = time.perf_counter() - start
    pd.testing.assert_frame_equal(serial, dask, check_exact=True)
    print(f"{args.scenario} for {args.duration}, {args.points} points x {args.replications} replications = {runs} runs"
          f" ({len(serial)} rows, identical):")
    print(f"  serial, one thread        {serial_s:.2f} s")
    print(f"  Dask, 2 worker processes  {dask_s:.2f} s  (cluster start-up {up_s:.2f} s more)")
    print(f"  ratio                     {dask_s / serial_s:.3f}  (with start-up {(dask_s + up_s) / serial_s:.3f})")


if __name__ == "__main__":
    main()
