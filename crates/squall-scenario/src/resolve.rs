//! From a checked scenario to the model's inputs: one path configuration
//! per link and direction, and the state schedule (states and blackouts).

use squall_link::{Change, Direction, Entry, PathConfig, ScheduledState, State};

use crate::schema::{BlackoutDirection, Host, Scenario};

/// The paths of link `link` (index into `Scenario::links`).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkPaths {
    pub link: usize,
    /// Host that sends on the downlink (`between[0]`).
    pub first: String,
    /// Host that sends on the uplink (`between[1]`).
    pub second: String,
    pub downlink: PathConfig,
    pub uplink: PathConfig,
}

impl Scenario {
    /// Every stage of every link, downlink stages before uplink ones, link
    /// by link.
    pub fn stages(&self) -> impl Iterator<Item = &squall_link::StageConfig> {
        self.links.iter().flat_map(|l| l.downlink.iter().chain(&l.uplink))
    }

    /// The stage named `name` (names are unique in a checked scenario).
    pub fn stage(&self, name: &str) -> Option<&squall_link::StageConfig> {
        self.stages().find(|st| st.name == name)
    }

    /// The host that stands for everything beyond the scenario
    /// (`outside_interface`), if any, with its index.
    pub fn outside_host(&self) -> Option<(usize, &Host)> {
        self.hosts.iter().enumerate().find(|(_, h)| h.outside_interface.is_some())
    }

    /// An error for an engine that cannot run an outside host (the
    /// simulator has no outside world): `None` when the scenario has none.
    pub fn refuse_outside_host(&self, engine: &str) -> Option<String> {
        let (i, h) = self.outside_host()?;
        Some(format!(
            "host `{}` (hosts[{i}]) is outside (outside_interface = \"{}\"): {engine} has no world beyond the \
             scenario for it to reach; run this scenario with `squall emu`, or remove outside_interface",
            h.name,
            h.outside_interface.as_deref().unwrap_or_default()
        ))
    }

    /// Every link's two paths.
    pub fn link_paths(&self) -> Vec<LinkPaths> {
        self.links
            .iter()
            .enumerate()
            .map(|(i, l)| LinkPaths {
                link: i,
                first: l.between[0].clone(),
                second: l.between[1].clone(),
                downlink: PathConfig { direction: Direction::Downlink, stages: l.downlink.clone() },
                uplink: PathConfig { direction: Direction::Uplink, stages: l.uplink.clone() },
            })
            .collect()
    }

    /// Names of the stages of one direction, over all links.
    pub fn stage_names(&self, direction: Direction) -> Vec<String> {
        self.links
            .iter()
            .flat_map(|l| match direction {
                Direction::Downlink => &l.downlink,
                Direction::Uplink => &l.uplink,
            })
            .map(|s| s.name.clone())
            .collect()
    }

    /// The states and blackouts as the model's schedule entries. Blackout
    /// `i` becomes the timed states `blackout-i-start` and `blackout-i-end`.
    pub fn schedule(&self) -> Vec<ScheduledState> {
        let series = self.state_series.as_ref().map(|s| s.entries());
        let mut out: Vec<ScheduledState> = self
            .states
            .iter()
            .map(|s| {
                let changes = s
                    .set
                    .iter()
                    .map(|(stage, patch)| Change::Set { stage: stage.clone(), patch: Box::new(patch.clone()) })
                    .collect();
                let in_series = series.as_ref().and_then(|(at, period)| Some((at.get(s.name.as_str())?, *period)));
                let entry = match (in_series, s.at, &s.hold) {
                    (Some((at, period)), _, _) => Entry::Series { at: at.clone(), period },
                    (None, Some(at), _) => Entry::At(at),
                    (None, None, Some(hold)) => Entry::Cycle { hold: hold.clone() },
                    (None, None, None) => Entry::External,
                };
                ScheduledState { state: State { name: s.name.clone(), changes }, entry }
            })
            .collect();
        for (i, b) in self.blackouts.iter().enumerate() {
            let stages: Vec<String> = match &b.stages {
                Some(names) => names.clone(),
                None => {
                    let mut v = Vec::new();
                    if matches!(b.direction, BlackoutDirection::Downlink | BlackoutDirection::Both) {
                        v.extend(self.stage_names(Direction::Downlink));
                    }
                    if matches!(b.direction, BlackoutDirection::Uplink | BlackoutDirection::Both) {
                        v.extend(self.stage_names(Direction::Uplink));
                    }
                    v
                }
            };
            let start: Vec<Change> =
                stages.iter().map(|s| Change::BlackoutStart { stage: s.clone(), mode: b.mode }).collect();
            let end: Vec<Change> = stages.iter().map(|s| Change::BlackoutEnd { stage: s.clone() }).collect();
            let start = State { name: format!("blackout-{i}-start"), changes: start };
            let end = State { name: format!("blackout-{i}-end"), changes: end };
            match (b.at.as_constant(), b.duration.as_constant(), b.every.is_some() || b.gap.is_some()) {
                // Once, at set times: two timed states.
                (Some(at), Some(duration), false) => {
                    out.push(ScheduledState { state: start, entry: Entry::At(at) });
                    out.push(ScheduledState { state: end, entry: Entry::At(at + duration) });
                }
                _ => out.push(ScheduledState {
                    state: start,
                    entry: Entry::Recurring {
                        first: b.at.clone(),
                        every: b.every.clone(),
                        gap: b.gap.clone().map(Box::new),
                        length: b.duration.clone(),
                        end,
                    },
                }),
            }
        }
        out
    }
}
