//! Routing: the scenario's resolved topology ([`Topology`], shared with
//! the emulator, so both engines route alike), mapped onto the engine's
//! path slots.

use squall_scenario::Topology;

use crate::host::HostId;
use crate::network::PathId;

#[derive(Debug)]
pub(crate) struct Routes {
    topology: Topology,
    /// The engine's path for each topology path (`None`: no stages).
    slot_of: Vec<Option<PathId>>,
}

impl Routes {
    pub fn new(topology: Topology, slot_of: Vec<Option<PathId>>) -> Self {
        Routes { topology, slot_of }
    }

    /// The first path from `from` towards `to`.
    pub fn next_hop(&self, from: HostId, to: HostId) -> Option<PathId> {
        let path = self.topology.next_path(from.index(), to.index())?;
        self.slot_of.get(path).copied().flatten()
    }
}
