"""Benchmark (not a test): a 1 000-run sweep on two local Dask workers against the same sweep run serially.

    python bench/python/dask_sweep.py [--scenario builtin:seed001-split] [--points 200] [--replications 5]
                                      [--duration "100 s"] [--chunksize 25]

The sweep is `--points` values of the scenario's `duration` (from
`--duration`, by default the scenario's own, up a millisecond apart, so
that every point is its own work), each point `--replications`
replications (1 000 runs by default). Serially, every point runs in
this process on one thread, one after the other (an executor that runs
each task as it is submitted: the work of one core). On Dask, a
LocalCluster of two worker processes with one thread each takes the
points through `client.get_executor()`, twice:

- as it comes: Dask's default settings, one point per task;
- set for CPU-bound tasks: the worker profiler off (by default it
  samples every thread's stack every 10 ms), memory and system monitors
  polled every 2 s and 5 s instead of 100 ms and 500 ms, the event
  loop's tick every 1 s instead of 20 ms, no work stealing (every task
  is alike), and `--chunksize` points per task
  (`squall.sweep(..., chunksize=)`).
  Measured on an idle 2-core VM, an idle cluster with the defaults took
  1.35 s of CPU in 8 s (client 0.30, each worker 0.2, each nanny 0.3)
  and 0.15 s with these settings; and each task costs about 8 ms of CPU
  between the client, the scheduler and the worker.

Every run gives the same rows (checked). Prints each wall time (the
cluster's start-up, with the import of squall on each worker, left out
and shown apart) and the ratios to serial; issue 33 asks for at most 0.55.
"""

import argparse
import importlib
import time
import tomllib
from concurrent.futures import Executor, Future

import pandas as pd

import squall

# Dask settings for a cluster whose tasks are CPU-bound simulations.
CPU_BOUND = {
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.monitor-interval": "2s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.tick.interval": "1s",
    "distributed.scheduler.work-stealing": False,
}


class InlineExecutor(Executor):
    """Runs each task at once, in this thread: the serial baseline."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def on_dask(scenario, grid, replications, chunksize, config):
    """Runs the sweep on a fresh two-worker LocalCluster: (rows, seconds, start-up seconds)."""
    import dask
    from dask.distributed import Client, LocalCluster

    start = time.perf_counter()
    with dask.config.set(config), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        # The serial side has squall (and pandas) imported before its clock
        # starts; so do the workers, as part of the cluster's start-up.
        client.run(importlib.import_module, "squall")
        up_s = time.perf_counter() - start
        start = time.perf_counter()
        rows = squall.sweep(scenario, grid, replications=replications, executor=client.get_executor(),
                            chunksize=chunksize)
        return rows, time.perf_counter() - start, up_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="builtin:seed001-split")
    parser.add_argument("--duration", help="seconds, like \"100 s\" (default: the scenario's)")
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--replications", type=int, default=5)
    parser.add_argument("--chunksize", type=int, default=25, help="points per task on the tuned cluster")
    args = parser.parse_args()

    scenario = squall.Scenario.load(args.scenario)
    duration = args.duration or tomllib.loads(scenario.to_toml())["duration"]
    base = float(str(duration).split()[0])
    grid = {"duration": [f"{base + i / 1000:.3f} s" for i in range(args.points)]}
    runs = args.points * args.replications
    start = time.perf_counter()
    serial = squall.sweep(scenario, grid, replications=args.replications, executor=InlineExecutor())
    serial_s = time.perf_counter() - start
    plain, plain_s, plain_up = on_dask(scenario, grid, args.replications, 1, {})
    tuned, tuned_s, tuned_up = on_dask(scenario, grid, args.replications, args.chunksize, CPU_BOUND)
    pd.testing.assert_frame_equal(serial, plain, check_exact=True)
    pd.testing.assert_frame_equal(serial, tuned, check_exact=True)
    print(f"{args.scenario} for {base:g} s, {args.points} points x {args.replications} replications = {runs} runs"
          f" ({len(serial)} rows, identical each time):")
    print(f"  serial, one thread                                {serial_s:6.2f} s")
    print(f"  Dask, 2 workers, defaults, 1 point per task       {plain_s:6.2f} s  ratio {plain_s / serial_s:.3f}"
          f"  (cluster start-up {plain_up:.2f} s more)")
    print(f"  Dask, 2 workers, CPU-bound settings, {args.chunksize} per task {tuned_s:6.2f} s  ratio {tuned_s / serial_s:.3f}"
          f"  (cluster start-up {tuned_up:.2f} s more)")


if __name__ == "__main__":
    main()
