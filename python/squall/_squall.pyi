"""Type stubs of the native module squall._squall (python/src/lib.rs)."""

from typing import List, Optional, Tuple

__version__: str

def scenario_source(spec: str) -> Tuple[str, str, str]:
    """(source name, text, base directory) of a scenario file or ``builtin:NAME``, as the CLI finds it."""

def resolve(source: str, text: str, base: str, sets: List[Tuple[str, str]]) -> str:
    """The resolved scenario as TOML, its ``--set`` overrides applied; raises squall.ScenarioError."""

def simulate(
    source: str,
    text: str,
    base: str,
    sets: List[Tuple[str, str]],
    out: str,
    replications: Optional[int] = None,
    seed: Optional[int] = None,
    events: bool = False,
    pcap: bool = False,
    jobs: Optional[int] = None,
) -> None:
    """``squall sim`` in this process, the GIL released, writing into ``out``."""
