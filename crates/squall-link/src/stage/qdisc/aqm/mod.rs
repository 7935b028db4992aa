//! Active queue management: what decides, besides the limits, that a
//! packet is dropped or marked (RED, Floyd & Jacobson 1993 and RFC 2309;
//! CoDel, RFC 8289; PIE, RFC 8033). One file per algorithm, each with its
//! configuration, its state and its [`Aqm`] impl; [`AnyAqm`] dispatches
//! statically (smoltcp's `AnyController`). A queue ([`super::Fifo`]) holds
//! at most one and asks it about every arrival and every departure.
//!
//! Every AQM is listed once, in [`with_aqms!`]: its scenario key, its
//! variant name, its configuration and state types, how its state is
//! made and a line saying what it is. Each place that needs one thing per
//! AQM expands that list with a macro of its own: [`AqmConfig`] and
//! [`AnyAqm`] here, the queue's keys in the file's syntax
//! (`crate::queue`'s `QueueConfig` and `ClassConfig`) and its drop reason
//! (`crate::event::DropReason`, named after the variant).
//!
//! Adding an AQM: a file here (config with serde and `validate`, state
//! with a `config` field, `impl Aqm`), its `mod` below and one line at the
//! end of `with_aqms!`: 2 files besides the docs (docs/design.md,
//! "Queues", counts the sites).

mod codel;
mod pie;
mod red;

pub use codel::CodelConfig;
pub use pie::PieConfig;
pub use red::RedConfig;

pub(crate) use codel::Codel;
pub use dispatch::AqmConfig;
pub(crate) use dispatch::{AnyAqm, Aqm, QueueState, Verdict};

mod dispatch;

/// Every AQM, once, in the order of their drop reasons' columns: a new
/// one goes last (`crate::event::DropReason` says why). Each entry: a
/// line of doc saying what it is, `key: Variant(Config, State, |config,
/// rng| state)`, where `Config` is re-exported here (`pub use`) and `rng(component)` gives the queue's random stream of
/// that name (by custom, the key). `with_aqms!(m)` expands to `m! { the
/// list }`.
macro_rules! with_aqms {
    ($m:ident) => {
        $m! {
            #[doc = "RED (Floyd & Jacobson 1993), at enqueue"]
            red: Red(RedConfig, red::Red, |c, rng| red::Red::new(c.clone(), rng("red"))),
            #[doc = "CoDel at dequeue (RFC 8289)"]
            codel: Codel(CodelConfig, Codel, |c, _rng| Codel::new(c.clone())),
            #[doc = "PIE at enqueue (RFC 8033)"]
            pie: Pie(PieConfig, pie::Pie, |c, rng| pie::Pie::new(c.clone(), rng("pie"))),
        }
    };
}
pub(crate) use with_aqms;

/// The keys in `keys` as a choice for a message: "`a`, `b` or `c`".
pub(crate) fn one_of(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry's keys, in order, and the message's list of them.
    #[test]
    fn every_aqm_is_listed_once_under_its_key() {
        assert_eq!(&AqmConfig::KEYS[..3], ["red", "codel", "pie"]);
        assert_eq!(AqmConfig::Codel(CodelConfig::default()).key(), "codel");
        assert_eq!(one_of(&["red", "codel", "pie"]), "`red`, `codel` or `pie`");
        assert_eq!(one_of(&["red"]), "`red`");
    }
}
