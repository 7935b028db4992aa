//! The names the engine gives agents and agents give their timers; the
//! hosts, the scheduler, the network and the agents all use them.

/// Index of an agent in the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentId(pub(crate) u32);

impl AgentId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// Names one of an agent's timers; the agent chooses the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerToken(pub u64);
