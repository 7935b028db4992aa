//! mm-link's queue options and mm-onoff's arguments as flags beside a
//! `--link` one-liner (`squall sim` and `squall emu`); the mapping is
//! `squall_scenario::mahimahi_shells`'s.

use anyhow::{Result, bail};
use clap::Args;
use squall_scenario::Scenario;
use squall_scenario::mahimahi_shells::{mm_link_queue, mm_onoff};

/// Mahimahi's shells' options, for a `--link` one-liner.
#[derive(Args, Clone, Default)]
pub struct MahimahiFlags {
    /// mm-link's --uplink-queue: the queue in front of the --uplink-trace
    /// stage, one of infinite (the default), droptail, drophead, codel, pie.
    #[arg(long, value_name = "TYPE", requires = "uplink_trace")]
    pub uplink_queue: Option<String>,
    /// mm-link's --uplink-queue-args, "NAME=NUMBER[, ...]" with NAME one of
    /// packets, bytes, target, interval (codel), qdelay_ref, max_burst (pie);
    /// times in ms: "packets=100, target=5, interval=100".
    #[arg(long, value_name = "ARGS", requires = "uplink_queue")]
    pub uplink_queue_args: Option<String>,
    /// The same for the --downlink-trace stage (mm-link's --downlink-queue).
    #[arg(long, value_name = "TYPE", requires = "downlink_trace")]
    pub downlink_queue: Option<String>,
    /// mm-link's --downlink-queue-args.
    #[arg(long, value_name = "ARGS", requires = "downlink_queue")]
    pub downlink_queue_args: Option<String>,
    /// mm-onoff's arguments, "uplink|downlink MEAN-ON MEAN-OFF" in seconds:
    /// that direction is on and off for exponential times of these means,
    /// starting on, and drops what reaches it while off.
    #[arg(long, value_name = "DIRECTION ON OFF", requires = "link")]
    pub onoff: Option<String>,
}

impl MahimahiFlags {
    /// Whether any is given (they need `--link`).
    pub fn any(&self) -> bool {
        self.uplink_queue.is_some()
            || self.downlink_queue.is_some()
            || self.uplink_queue_args.is_some()
            || self.downlink_queue_args.is_some()
            || self.onoff.is_some()
    }

    /// Sets the trace stages' queues and adds the on/off blackout to a
    /// scenario made from `--link` (after its trace stages were added).
    pub fn apply(&self, scenario: &mut Scenario) -> Result<()> {
        for (dir, kind, args, stage) in [
            ("downlink", &self.downlink_queue, &self.downlink_queue_args, "trace-down"),
            ("uplink", &self.uplink_queue, &self.uplink_queue_args, "trace-up"),
        ] {
            let option = format!("--{dir}-queue");
            let Some(kind) = kind else {
                if args.is_some() {
                    bail!("--{dir}-queue-args gives the arguments of {option}: give {option}=TYPE too");
                }
                continue;
            };
            let queue = mm_link_queue(&option, kind, args.as_deref())?;
            let Some(st) = scenario
                .links
                .iter_mut()
                .flat_map(|l| l.downlink.iter_mut().chain(l.uplink.iter_mut()))
                .find(|s| s.name == stage)
            else {
                bail!("{option} sets the queue of the --{dir}-trace stage: give --{dir}-trace FILE too");
            };
            st.queue = queue;
        }
        if let Some(spec) = &self.onoff {
            scenario.blackouts.push(mm_onoff("--onoff", spec)?);
        }
        Ok(())
    }
}
