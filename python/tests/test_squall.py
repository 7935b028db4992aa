"""The Python package against the squall binary: same scenario and seed, same numbers.

Each test runs `squall sim` / `squall run` (the CLI, an independent path
through main.rs and its argument parsing) and the package, and compares
what they wrote and read.
"""

import filecmp
import json
import pickle
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

import squall
from conftest import cli


def read_json(path: Path):
    with open(path) as f:
        return json.load(f)


def test_scenario_to_toml_is_the_cli_resolved_scenario(squall_bin, tiny, tmp_path):
    s = squall.Scenario.load(tiny).set("links.0.downlink.0.rate", "3 Mbit/s").set("duration", "2 s")
    cli(squall_bin, "sim", str(tiny), "--set", 'links.0.downlink.0.rate="3 Mbit/s"', "--set", "duration=2 s",
        "--out", str(tmp_path / "cli"))
    assert s.to_toml() == (tmp_path / "cli" / "scenario.toml").read_text()
    assert "3 Mbit/s" in s.to_toml() or "3000000" in s.to_toml()


def test_builtin_scenario_is_the_cli_one(squall_bin, tmp_path):
    s = squall.Scenario.load("builtin:gsm-udp").set("duration", "1 s")
    cli(squall_bin, "sim", "builtin:gsm-udp", "--set", "duration=1 s", "--out", str(tmp_path / "cli"))
    assert s.to_toml() == (tmp_path / "cli" / "scenario.toml").read_text()


def test_simulate_writes_and_reads_the_cli_numbers(squall_bin, tiny, tmp_path):
    cli(squall_bin, "sim", str(tiny), "--seed", "11", "--replications", "3", "--out", str(tmp_path / "cli"))
    run = squall.simulate(squall.Scenario.load(tiny), replications=3, seed=11, out=tmp_path / "py",
                          events=True, pcap=True)
    expected = read_json(tmp_path / "cli" / "summary.json")
    # summary.json as a whole: every replication's every figure, and the aggregate.
    assert read_json(tmp_path / "py" / "summary.json") == expected
    assert run.summary == expected["aggregate"]
    # The files of every replication, byte for byte.
    for i in range(3):
        for name in ["events.csv", "a.pcap", "b.pcap", "tcp-bulk-0-client.csv"]:
            assert filecmp.cmp(tmp_path / "cli" / f"rep-{i}" / name, tmp_path / "py" / f"rep-{i}" / name,
                               shallow=False), name
    # The frames hold summary.json's numbers, one row per replication and flow.
    runs = expected["runs"]
    assert len(run.flows) == sum(len(r["flows"]) for r in runs)
    for r in runs:
        for f in r["flows"]:
            row = run.flows[(run.flows.replication == r["replication"]) & (run.flows.flow == f["name"])]
            assert len(row) == 1
            row = row.iloc[0]
            assert row.seed == 11 + r["replication"]
            assert row.throughput_bit_per_s == f["throughput_bps"]
            assert row.delay_p99_s == f["delay_p99"]
            assert row.delivered_bytes == f["delivered_bytes"]
            assert row.dropped_packets == sum(f["dropped"].values())
            for reason, n in f["dropped"].items():
                assert row[f"dropped_{reason}_packets"] == n
        t = r["tcp_flows"][0]
        row = run.tcp_flows[run.tcp_flows.replication == r["replication"]].iloc[0]
        assert (row.flow, row.goodput_bit_per_s, row.transfer_time_s) == (t["name"], t["goodput_bps"],
                                                                           t["transfer_time"])
        assert row.sender_retransmitted_segments_packets == t["sender"]["retransmitted_segments"]
        for st in r["stages"]:
            row = run.stages[(run.stages.replication == r["replication"]) & (run.stages.stage == st["name"])].iloc[0]
            assert row.mean_queue_packets == st["mean_queue_len"]
            assert row.entered_packets == st["entered"]
    # The CLI's own per-flow means (--format csv) are the frame's means.
    csv = cli(squall_bin, "sim", str(tiny), "--seed", "11", "--replications", "3", "--no-pcap", "--no-events",
              "--format", "csv", "--out", str(tmp_path / "csv")).stdout
    means = pd.read_csv(pd.io.common.StringIO(csv)).set_index("flow")
    for flow, group in run.flows.groupby("flow"):
        assert group.throughput_bit_per_s.mean() == pytest.approx(means.loc[flow, "throughput_bit_per_s"], rel=1e-12)
        assert group.delivered_packets.mean() == pytest.approx(means.loc[flow, "delivered_packets"], rel=1e-12)
    # events(), trace() and pcap() read the files of that run.
    events = run.events(1)
    assert events.equals(pd.read_csv(tmp_path / "cli" / "rep-1" / "events.csv"))
    assert set(run.events().replication) == {0, 1, 2}
    trace = run.trace("bulk", replication=2)
    raw = pd.read_csv(tmp_path / "cli" / "rep-2" / "tcp-bulk-0-client.csv")
    assert list(trace.cwnd_bytes) == list(raw.cwnd) and list(trace.time_s) == list(raw.time)
    assert run.pcap("b", replication=1) == tmp_path / "py" / "rep-1" / "b.pcap"
    with pytest.raises(FileNotFoundError, match="no pcap of host 'nope'"):
        run.pcap("nope")


def test_load_run_reads_what_the_cli_wrote(squall_bin, tiny, tmp_path):
    cli(squall_bin, "sim", str(tiny), "--seed", "3", "--out", str(tmp_path / "cli"))
    loaded = squall.load_run(tmp_path / "cli")
    ran = squall.simulate(tiny, seed=3)
    pd.testing.assert_frame_equal(loaded.flows, ran.flows, check_exact=True)
    pd.testing.assert_frame_equal(loaded.tcp_flows, ran.tcp_flows, check_exact=True)
    pd.testing.assert_frame_equal(loaded.stages, ran.stages, check_exact=True)
    assert len(loaded.flows) == 2 * 3  # the scenario's 2 replications x (voice, bulk:c2s, bulk:s2c)
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        squall.load_run(tmp_path)


BAD_KEY = """\
name = "bad"
duration = "1 s"
rat = "2 Mbit/s"
"""


def test_a_bad_file_raises_with_its_place_and_the_cli_message(squall_bin, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD_KEY)
    with pytest.raises(squall.ScenarioError) as caught:
        squall.Scenario.load(bad)
    e = caught.value
    assert (e.file, e.line, e.column, e.key) == (str(bad), 3, 1, "rat")
    stderr = cli(squall_bin, "sim", str(bad), "--out", str(tmp_path / "o"), check=False).stderr
    assert stderr.strip() == f"error: {e.message}".strip()
    assert str(e) == e.message
    # Picklable, as an executor sends it back.
    again = pickle.loads(pickle.dumps(e))
    assert (again.file, again.line, again.key, again.message) == (e.file, e.line, e.key, e.message)


def test_a_bad_set_raises_with_its_key_and_leaves_the_scenario(squall_bin, tiny, tmp_path):
    s = squall.Scenario.load(tiny)
    before = s.to_toml()
    with pytest.raises(squall.ScenarioError) as caught:
        s.set("links.0.downlink.0.rate", "fast")
    e = caught.value
    # The CLI places an override's error at its --set argument.
    assert (e.file, e.line, e.key) == ("--set links.0.downlink.0.rate=fast", None, "links.0.downlink.0.rate")
    assert str(tiny) in e.message and '"fast" is not a positive rate' in e.reason
    stderr = cli(squall_bin, "sim", str(tiny), "--set", "links.0.downlink.0.rate=fast", "--out",
                 str(tmp_path / "o"), check=False).stderr
    assert stderr.strip() == f"error: {e.message}".strip()
    assert s.to_toml() == before and s.sets == []
    with pytest.raises(squall.ScenarioError) as missing:
        squall.Scenario.load(tmp_path / "none.toml")
    assert missing.value.file == str(tmp_path / "none.toml") and missing.value.line is None
    with pytest.raises(squall.ScenarioError, match="no built-in scenario `nope`"):
        squall.Scenario.load("builtin:nope")


def test_simulate_refuses_a_directory_that_holds_a_run(tiny, tmp_path):
    squall.simulate(tiny, out=tmp_path / "r")
    with pytest.raises(RuntimeError, match="already holds a run"):
        squall.simulate(tiny, out=tmp_path / "r")


EXPERIMENT = """\
name = "tiny-sweep"

[[sets]]
name = "loss"
scenario = "tiny.toml"
replications = 3
[sets.sweep]
"links.0.downlink.0.error.packet" = ["1%", "5%"]
"""


def test_load_experiment_and_sweep_give_the_cli_experiment(squall_bin, tiny, tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    cli(squall_bin, "run", str(exp), "--out", str(tmp_path / "exp"))
    e = squall.load_experiment(tmp_path / "exp")
    assert e.missing == []
    assert len(e.flows) == 2 * 3 * 3
    assert set(e.flows["set"]) == {"loss"}
    # Each run's numbers are its result.json's.
    manifest = read_json(tmp_path / "exp" / "experiment.json")
    point = manifest["sets"][0]["points"][1]
    replication, seed, run_dir = point["runs"][2]
    result = read_json(tmp_path / "exp" / run_dir / "result.json")
    rows = e.flows[(e.flows["links.0.downlink.0.error.packet"] == dict(point["params"])[
        "links.0.downlink.0.error.packet"]) & (e.flows.replication == replication)]
    assert sorted(rows.throughput_bit_per_s) == sorted(f["throughput_bps"] for f in result["flows"])
    assert e.results is not None and len(e.results) > 0
    # The same sweep from Python: the same runs, the same numbers.
    swept = squall.sweep(tiny, {"links.0.downlink.0.error.packet": ["1%", "5%"]}, replications=3)
    key = ["links.0.downlink.0.error.packet", "replication", "flow"]
    a = swept.sort_values(key).reset_index(drop=True)
    b = e.flows.drop(columns=["set"]).sort_values(key).reset_index(drop=True)[a.columns]
    pd.testing.assert_frame_equal(a, b, check_exact=True, check_dtype=False)


def test_sweep_through_a_process_pool_gives_the_serial_rows(tiny):
    grid = {"links.0.downlink.0.rate": ["1 Mbit/s", "4 Mbit/s"], "links.0.downlink.0.error.packet": [0.0, 0.05]}
    serial = squall.sweep(tiny, grid, replications=2, seed=9)
    with ProcessPoolExecutor(max_workers=2) as pool:
        parallel = squall.sweep(tiny, grid, replications=2, seed=9, executor=pool)
    assert len(serial) == 4 * 2 * 3
    pd.testing.assert_frame_equal(serial, parallel, check_exact=True)
    # The grid's values in front, as given.
    assert list(serial.columns[:2]) == list(grid)
    assert sorted(set(serial["links.0.downlink.0.rate"])) == ["1 Mbit/s", "4 Mbit/s"]
    # A faster link delivers the UDP flow sooner: the sweep did change the scenario.
    voice = serial[serial.flow == "voice"].groupby("links.0.downlink.0.rate").delay_mean_s.mean()
    assert voice["4 Mbit/s"] < voice["1 Mbit/s"]


def test_points_sent_in_chunks_give_the_same_rows_in_the_same_order(tiny):
    # 3 × 2 points in chunks of 4: one full chunk and one of 2, each task a
    # list of points; the rows come back in the grid's order all the same.
    grid = {"links.0.downlink.0.rate": ["1 Mbit/s", "2 Mbit/s", "4 Mbit/s"], "links.0.downlink.0.error.packet": [0.0, 0.05]}
    serial = squall.sweep(tiny, grid, replications=2, seed=9)
    submitted = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            submitted.append(len(args[0]))
            return super().submit(fn, *args, **kwargs)

    with Counting(max_workers=2) as pool:
        chunked = squall.sweep(tiny, grid, replications=2, seed=9, executor=pool, chunksize=4)
    assert submitted == [4, 2]
    pd.testing.assert_frame_equal(serial, chunked, check_exact=True)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="chunksize"):
            squall.sweep(tiny, grid, executor=pool, chunksize=bad)


def test_a_bad_grid_value_fails_before_any_run(tiny):
    with pytest.raises(squall.ScenarioError, match="links.0.downlink.0.rate"):
        squall.sweep(tiny, {"links.0.downlink.0.rate": ["1 Mbit/s", "fast"]})
