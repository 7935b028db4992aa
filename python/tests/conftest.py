"""Fixtures: the squall binary the package is compared against, and tiny scenarios.

crates/squall/tests/python.rs runs this suite with SQUALL set to the
binary cargo built from the same checkout.
"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Two hosts, one lossy 2 Mbit/s link, a UDP flow and a short TCP transfer:
# a few seconds of simulated time, so that hundreds of runs stay quick.
TINY = """\
name = "tiny"
duration = "3 s"
seed = 5
replications = 2

[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.1.1"

[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "down"
rate = "2 Mbit/s"
delay = "20 ms"
queue = { packets = 20, drop = "tail" }
error = { packet = "2%" }
[[links.uplink]]
name = "up"
rate = "2 Mbit/s"
delay = "20 ms"

[[workload.udp]]
name = "voice"
from = "a"
to = "b"
size = "200 B"
interval = "20 ms"

[[workload.tcp]]
name = "bulk"
from = "a"
to = "b"
cc = "newreno"
app = { bulk = "60 KB" }
"""


@pytest.fixture(scope="session")
def squall_bin() -> str:
    path = os.environ.get("SQUALL")
    if not path:
        pytest.fail("SQUALL is not set: run this suite through `cargo test -p squall --test python`")
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def cli(squall_bin: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the squall binary, its output as text."""
    done = subprocess.run([squall_bin, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"squall {' '.join(args)} failed: {done.stderr}")
    return done
