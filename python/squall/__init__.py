"""squall from Python: load scenarios, run them in-process, read runs and sweeps as pandas DataFrames.

The numbers are ``squall sim``'s: :func:`simulate` runs the code the CLI runs
(the native module ``squall._squall`` calls the same Rust functions) and
writes the same files (summary.json, scenario.toml, rep-N/), which
:func:`load_run` reads into DataFrames exactly as it reads a run the CLI
(or ``squall emu``) wrote.

Every numeric column of a frame has its unit in its name
(``throughput_bit_per_s``, ``delay_mean_s``, ``delivered_bytes``,
``dropped_error_packets``), as ``squall sim --format csv`` names them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import Executor
from itertools import product
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _squall
from ._errors import ScenarioError

__all__ = [
    "Experiment",
    "Run",
    "Scenario",
    "ScenarioError",
    "load_experiment",
    "load_run",
    "simulate",
    "sweep",
]

__version__ = _squall.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _value_text(value: Any) -> str:
    """A Python value as the VALUE of the CLI's ``--set KEY=VALUE``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"set: expected a str, int, float or bool value, got {type(value).__name__}")


class Scenario:
    """A scenario as ``squall sim`` loads it: a file or ``builtin:NAME``, with ``--set`` overrides.

    Picklable (it holds the scenario's text and overrides, no native
    object), so it can be sent to other processes.
    """

    def __init__(self, source: str, text: str, base: str, sets: Sequence[Tuple[str, str]] = ()) -> None:
        self.source = source
        self.text = text
        self.base = base
        self.sets: List[Tuple[str, str]] = list(sets)
        self._resolved = _squall.resolve(self.source, self.text, self.base, self.sets)

    @classmethod
    def load(cls, path_or_builtin: PathLike) -> "Scenario":
        """Loads a scenario file, or ``builtin:NAME`` (``squall scenarios`` lists them).

        Raises :class:`ScenarioError` (with file, line, column and key) when
        it does not load.
        """
        spec = os.fspath(path_or_builtin)
        source, text, base = _squall.scenario_source(spec)
        if not spec.startswith("builtin:"):
            # File names in the scenario stay relative to its own
            # directory whatever the working directory is later.
            base = os.path.abspath(base)
        return cls(source, text, base)

    def set(self, key: str, value: Any) -> "Scenario":
        """Sets a key exactly as ``squall sim --set KEY=VALUE`` does; returns the scenario.

        ``value`` is the text after ``=`` (``"2 Mbit/s"``, ``"300 ms"``), or
        a number or bool. A key or value that does not fit raises
        :class:`ScenarioError` and leaves the scenario unchanged.
        """
        sets = self.sets + [(key.strip(), _value_text(value).strip())]
        self._resolved = _squall.resolve(self.source, self.text, self.base, sets)
        self.sets = sets
        return self

    def to_toml(self) -> str:
        """The resolved scenario as TOML: what ``squall sim`` writes as scenario.toml."""
        return self._resolved

    def __getstate__(self) -> Dict[str, Any]:
        return {"source": self.source, "text": self.text, "base": self.base, "sets": self.sets}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["source"], state["text"], state["base"], state["sets"])  # type: ignore[misc]

    def __repr__(self) -> str:
        sets = "".join(f" --set {k}={v}" for k, v in self.sets)
        return f"Scenario({self.source}{sets})"


def _as_scenario(scenario: Union[Scenario, PathLike]) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else Scenario.load(scenario)


# Column names with their units, as `squall sim --format csv` and
# results.csv name them (crates/squall/src/output.rs metric_with_unit).
_UNITS = {
    "throughput_bps": "throughput_bit_per_s",
    "goodput_bps": "goodput_bit_per_s",
    "throughput_pps": "throughput_packet_per_s",
    "delay_mean": "delay_mean_s",
    "delay_p50": "delay_p50_s",
    "delay_p99": "delay_p99_s",
    "interarrival_sd": "interarrival_sd_s",
    "interarrival_mean": "interarrival_mean_s",
    "jitter_rfc3550": "jitter_rfc3550_s",
    "in_flight": "in_flight_packets",
    "corrupted": "corrupted_packets",
    "corrupted_discarded": "corrupted_discarded_packets",
    "start": "start_s",
    "transfer_time": "transfer_time_s",
    "entered": "entered_packets",
    "delivered": "delivered_packets",
    "ecn_marked": "ecn_marked_packets",
    "frame_errors": "frame_errors_frames",
    "retransmissions": "retransmissions_frames",
    "mean_queue_len": "mean_queue_packets",
    "max_queue_len": "max_queue_packets",
    "receiver_acks_sent": "receiver_acks_sent_packets",
    "sender_data_segments_sent": "sender_data_segments_sent_packets",
    "sender_data_bytes_sent": "sender_data_bytes_sent_bytes",
    "sender_retransmitted_segments": "sender_retransmitted_segments_packets",
    "sender_fast_retransmits": "sender_fast_retransmits_packets",
    "sender_bytes_acked": "sender_bytes_acked_bytes",
    "sender_goodput": "sender_goodput_fraction",
    "sender_packet_delay_mean": "sender_packet_delay_mean_s",
}


def _flatten(record: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """One row: nested tables joined with `_`, lists (a flow's hops) left out, units named."""
    row: Dict[str, Any] = {}
    for k, v in record.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            if k == "dropped":
                for reason, n in v.items():
                    row[f"{name}_{reason}_packets"] = n
            else:
                row.update(_flatten(v, f"{name}_"))
        elif isinstance(v, list):
            continue
        else:
            row[_UNITS.get(name, name)] = v
    return row


def _frame(rows: List[Dict[str, Any]], first: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    dropped = [c for c in frame.columns if c.startswith("dropped_") and c.endswith("_packets")]
    if dropped:
        # A reason with no drop is absent from summary.json: zero drops.
        frame[dropped] = frame[dropped].fillna(0).astype("int64")
        frame["dropped_packets"] = frame[dropped].sum(axis=1).astype("int64")
    order = [c for c in first if c in frame.columns]
    return frame[order + [c for c in frame.columns if c not in order]]


def _tables(replications: Iterable[Mapping[str, Any]], extra: Optional[Dict[str, Any]] = None):
    """The flows, tcp_flows and stages frames of replication records (summary.json's `runs`)."""
    return _tables_of_points([(extra or {}, replications)])


def _tables_of_points(points: Iterable[Tuple[Mapping[str, Any], Iterable[Mapping[str, Any]]]]):
    """One set of frames for many points: each point's columns (``extra``) in front of its replications' rows."""
    tables: Dict[str, List[Dict[str, Any]]] = {"flows": [], "tcp_flows": [], "stages": []}
    key = {"flows": "flow", "tcp_flows": "flow", "stages": "stage"}
    first: List[str] = []
    for extra, replications in points:
        first.extend(k for k in extra if k not in first)
        for r in replications:
            ids = dict(extra)
            ids["replication"] = r.get("replication", 0)
            if "seed" in r:
                ids["seed"] = r["seed"]
            for table in tables:
                for item in r.get(table, []) or []:
                    row = dict(ids)
                    flat = _flatten(item)
                    row[key[table]] = flat.pop("name")
                    row.update(flat)
                    tables[table].append(row)
    first += ["replication", "seed"]
    return {t: _frame(rows, first + [key[t]]) for t, rows in tables.items()}


class Run:
    """A run's results: what ``squall sim`` or ``squall emu`` wrote into a directory.

    Attributes:
        dir: the run's directory.
        data: summary.json as read.
        summary: the aggregate over replications (summary.json's
            ``aggregate``: per flow and stage, each figure's n, mean,
            standard deviation and 95% confidence interval).
        flows: one row per replication and flow direction.
        tcp_flows: one row per replication and TCP flow.
        stages: one row per replication and stage.
    """

    def __init__(self, dir: PathLike) -> None:
        self.dir = Path(dir)
        path = self.dir / "summary.json"
        try:
            with open(path, encoding="utf-8") as f:
                self.data: Dict[str, Any] = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{path}: no summary.json; give a directory squall sim or squall emu wrote"
            ) from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
        self.summary: Dict[str, Any] = self.data.get("aggregate", {})
        tables = _tables(self.data.get("runs", []))
        self.flows: pd.DataFrame = tables["flows"]
        self.tcp_flows: pd.DataFrame = tables["tcp_flows"]
        self.stages: pd.DataFrame = tables["stages"]

    def _rep(self, replication: int) -> Path:
        rep = self.dir / f"rep-{replication}"
        if not rep.is_dir():
            raise FileNotFoundError(f"{rep}: no such replication in {self.dir}")
        return rep

    def events(self, replication: Optional[int] = None) -> pd.DataFrame:
        """The model events (events.csv) of one replication, or of all with a ``replication`` column.

        Read from disk when called; a run simulated without ``events=True``
        has none.
        """
        reps = [replication] if replication is not None else [r.get("replication", 0) for r in self.data.get("runs", [])]
        frames = []
        for i in reps:
            path = self._rep(i) / "events.csv"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no events.csv (simulate with events=True to write it)")
            frame = pd.read_csv(path)
            if replication is None:
                frame.insert(0, "replication", i)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def trace(self, flow: str, replication: int = 0, connection: int = 0, endpoint: str = "client") -> pd.DataFrame:
        """A TCP flow's trace over time (time, cwnd, ssthresh, srtt, rttvar, rto, in_flight)."""
        path = self._rep(replication) / f"tcp-{flow}-{connection}-{endpoint}.csv"
        if not path.is_file():
            have = sorted(p.name for p in path.parent.glob("tcp-*.csv"))
            raise FileNotFoundError(f"{path}: no such TCP trace; there are: {', '.join(have) or 'none'}")
        frame = pd.read_csv(path)
        return frame.rename(
            columns={"time": "time_s", "cwnd": "cwnd_bytes", "ssthresh": "ssthresh_bytes", "srtt": "srtt_s",
                     "rttvar": "rttvar_s", "rto": "rto_s", "in_flight": "in_flight_bytes"}
        )

    def pcap(self, host: str, replication: int = 0) -> Path:
        """The path of a host's pcap (open it with scapy, dpkt or tshark)."""
        path = self._rep(replication) / f"{host}.pcap"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no pcap of host {host!r} (simulate with pcap=True to write them)")
        return path

    def __repr__(self) -> str:
        return f"Run({str(self.dir)!r}: {self.data.get('scenario')}, {self.data.get('replications')} replication(s))"


def simulate(
    scenario: Union[Scenario, PathLike],
    replications: Optional[int] = None,
    seed: Optional[int] = None,
    out: Optional[PathLike] = None,
    events: bool = False,
    pcap: bool = False,
    jobs: Optional[int] = None,
) -> Run:
    """Runs ``squall sim`` in this process and returns its :class:`Run`.

    Replication i uses seed + i (``seed`` defaults to the scenario's), and
    the replications run in parallel on ``jobs`` threads (default: all
    cores) with the GIL released. The files go into ``out`` (new or
    empty), or a new temporary directory that is kept for ``events()``,
    ``trace()`` and ``pcap()`` (remove it with ``shutil.rmtree(run.dir)``).
    The numbers are those ``squall sim SCENARIO --seed SEED --replications N``
    writes.
    """
    scenario = _as_scenario(scenario)
    directory = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix="squall-")
    _squall.simulate(
        scenario.source, scenario.text, scenario.base, scenario.sets, directory,
        replications=replications, seed=seed, events=events, pcap=pcap, jobs=jobs,
    )
    return Run(directory)


def load_run(dir: PathLike) -> Run:
    """Reads a run ``squall sim`` or ``squall emu`` (or :func:`simulate`) wrote."""
    return Run(dir)


class Experiment:
    """An experiment ``squall run`` wrote (experiment.json, and result.json per run).

    ``flows``, ``tcp_flows`` and ``stages`` are a :class:`Run`'s frames for
    every finished run, with the columns ``set`` and one per swept key
    (its value as the experiment gives it) in front. ``results`` and
    ``summary_table`` are results.csv and summary.csv where the report
    has been built (else None).
    """

    def __init__(self, dir: PathLike) -> None:
        self.dir = Path(dir)
        path = self.dir / "experiment.json"
        try:
            with open(path, encoding="utf-8") as f:
                self.manifest: Dict[str, Any] = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no experiment.json; give a directory squall run wrote") from None
        points: List[Tuple[Dict[str, Any], List[Dict[str, Any]]]] = []
        self.missing: List[str] = []
        for s in self.manifest["sets"]:
            for point in s["points"]:
                extra: Dict[str, Any] = {"set": s["name"]}
                extra.update({k: v for k, v in point["params"]})
                records = []
                for replication, seed, run_dir in point["runs"]:
                    result = self.dir / run_dir / "result.json"
                    if not result.is_file():
                        self.missing.append(run_dir)
                        continue
                    with open(result, encoding="utf-8") as f:
                        r = json.load(f)
                    # An emulated run's result.json is squall emu's summary.json.
                    r = r["runs"][0] if "runs" in r and r["runs"] else r
                    r = dict(r, replication=replication, seed=seed)
                    records.append(r)
                points.append((extra, records))
        frames = {t: f if len(f) else pd.DataFrame() for t, f in _tables_of_points(points).items()}
        self.flows: pd.DataFrame = frames["flows"]
        self.tcp_flows: pd.DataFrame = frames["tcp_flows"]
        self.stages: pd.DataFrame = frames["stages"]
        results, summary = self.dir / "results.csv", self.dir / "summary.csv"
        self.results: Optional[pd.DataFrame] = pd.read_csv(results) if results.is_file() else None
        self.summary_table: Optional[pd.DataFrame] = pd.read_csv(summary) if summary.is_file() else None

    def __repr__(self) -> str:
        return f"Experiment({str(self.dir)!r}: {self.manifest.get('experiment')}, {len(self.flows)} flow rows)"


def load_experiment(dir: PathLike) -> Experiment:
    """Reads an experiment ``squall run`` wrote (finished runs; ``missing`` lists the others)."""
    return Experiment(dir)


def _sweep_point(
    source: str, text: str, base: str, sets: List[Tuple[str, str]], replications: Optional[int],
    seed: Optional[int], jobs: Optional[int] = 1,
) -> List[Dict[str, Any]]:
    """One sweep point, run where an executor puts it: plain arguments in, plain records out.

    The records are summary.json's ``runs`` (one per replication), so a
    worker neither builds nor pickles a DataFrame: the caller builds one
    frame from every point's records (measured on 2 Dask workers: building
    and shipping a frame per point cost the workers and the client about
    as much CPU as a tenth of a 100-second seed001-split point).
    """
    directory = tempfile.mkdtemp(prefix="squall-sweep-")
    try:
        _squall.simulate(source, text, base, sets, directory, replications=replications, seed=seed, jobs=jobs)
        with open(os.path.join(directory, "summary.json"), encoding="utf-8") as f:
            return json.load(f).get("runs", [])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _sweep_points(tasks: List[Tuple[Any, ...]]) -> List[List[Dict[str, Any]]]:
    """Several sweep points as one executor task, one after the other (``chunksize`` > 1)."""
    return [_sweep_point(*t) for t in tasks]


def sweep(
    scenario: Union[Scenario, PathLike],
    grid: Mapping[str, Sequence[Any]],
    replications: Optional[int] = None,
    seed: Optional[int] = None,
    executor: Optional[Executor] = None,
    mode: str = "product",
    table: str = "flows",
    chunksize: int = 1,
) -> pd.DataFrame:
    """Runs ``scenario`` at every point of ``grid`` and returns one tidy DataFrame.

    ``grid`` maps ``--set`` keys to their values; ``mode="product"`` runs
    every combination, ``mode="zip"`` the i-th values together (as an
    experiment's ``[sets.sweep]``). Each point runs ``replications``
    replications from ``seed`` (defaults: the scenario's). The result has
    one row per point, replication and flow (``table="tcp_flows"`` or
    ``"stages"`` for those), with one column per grid key in front.

    ``executor`` is any :class:`concurrent.futures.Executor`
    (``ProcessPoolExecutor``, Dask's ``Client.get_executor()``): each
    point is one task whose arguments are plain strings and numbers. With
    none, the points run here, one after the other (each point's
    replications on all cores). The rows are the same either way.

    ``chunksize`` points go to the executor as one task (as in
    ``Executor.map``). An executor's own cost per task is paid once per
    chunk: on two local Dask workers about 8 ms of CPU per task, which is
    a tenth of a 100-second seed001-split point of 5 replications, so
    sweeps of many short points run faster with several points per task.
    Keep several tasks per worker, or the last ones leave workers idle.
    """
    if table not in ("flows", "tcp_flows", "stages"):
        raise ValueError(f"table={table!r}: expected 'flows', 'tcp_flows' or 'stages'")
    if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
        raise ValueError(f"chunksize={chunksize!r}: expected a whole number of points per task, 1 or more")
    scenario = _as_scenario(scenario)
    keys = list(grid)
    values = [list(grid[k]) for k in keys]
    if mode == "product":
        points = [list(p) for p in product(*values)]
    elif mode == "zip":
        lengths = {len(v) for v in values}
        if len(lengths) > 1:
            raise ValueError(f"mode='zip' needs as many values for every key, got {dict(zip(keys, map(len, values)))}")
        points = [list(p) for p in zip(*values)]
    else:
        raise ValueError(f"mode={mode!r}: expected 'product' or 'zip'")
    # Every point is checked here, so that a bad value fails before any runs.
    tasks = []
    for point in points:
        sets = scenario.sets + [(k, _value_text(v)) for k, v in zip(keys, point)]
        Scenario(scenario.source, scenario.text, scenario.base, sets)
        tasks.append((scenario.source, scenario.text, scenario.base, sets, replications, seed))
    if executor is None:
        results = [_sweep_point(*t, jobs=None) for t in tasks]
    else:
        chunks = [tasks[i:i + chunksize] for i in range(0, len(tasks), chunksize)]
        futures = [executor.submit(_sweep_points, c) for c in chunks]
        results = [r for f in futures for r in f.result()]
    if not results:
        return pd.DataFrame()
    return _tables_of_points((dict(zip(keys, point)), runs) for point, runs in zip(points, results))[table]

