"""A real Dask cluster (two worker processes) runs a 200-run sweep: exactly the serial rows."""

import pandas as pd

import squall


def test_dask_local_cluster_sweep_equals_serial(tiny):
    from dask.distributed import Client, LocalCluster

    scenario = squall.Scenario.load(tiny).set("duration", "1 s")
    # 40 points x 5 replications = 200 runs.
    grid = {
        "links.0.downlink.0.error.packet": [f"{p}%" for p in range(10)],
        "links.0.downlink.0.rate": ["1 Mbit/s", "2 Mbit/s", "4 Mbit/s", "8 Mbit/s"],
    }
    serial = squall.sweep(scenario, grid, replications=5, seed=100)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        distributed = squall.sweep(scenario, grid, replications=5, seed=100, executor=client.get_executor())
    assert serial[["replication"]].drop_duplicates().shape[0] == 5
    assert len(serial.groupby(list(grid) + ["replication"])) == 200
    pd.testing.assert_frame_equal(serial, distributed, check_exact=True)
