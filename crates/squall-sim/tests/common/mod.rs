//! Fixtures the engine's TCP test binaries share.

use squall_scenario::Scenario;

/// Parses and checks a test scenario.
pub fn scenario(toml: &str) -> Scenario {
    let s: Scenario = toml::from_str(toml).expect("test scenario parses");
    s.check().expect("test scenario checks");
    s
}

/// Two hosts, a (10.0.0.1) and b (10.0.1.1), on one link of 10 Mbit/s
/// each way with a 100-packet queue, and one TCP flow `f` from a to b.
pub struct TwoHosts<'a> {
    /// The scenario's name.
    pub name: &'a str,
    /// How long a run lasts, e.g. `"60 s"`.
    pub duration: &'a str,
    /// The delay of each direction, e.g. `"20 ms"`.
    pub delay: &'a str,
    /// TOML keys added to the downlink stage.
    pub down_extra: &'a str,
    /// TOML keys of the flow besides its name and ends.
    pub flow: &'a str,
}

impl TwoHosts<'_> {
    /// The scenario, parsed and checked.
    pub fn scenario(&self) -> Scenario {
        let TwoHosts { name, duration, delay, down_extra, flow } = self;
        // The expectations here are the RFC profile's unless a test names
        // its own (the default profile is `linux`).
        let profile = if flow.contains("profile") { "" } else { "profile = \"rfc\"\n" };
        scenario(&format!(
            r#"
name = "{name}"
duration = "{duration}"
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
rate = "10 Mbit/s"
delay = "{delay}"
queue = {{ packets = 100 }}
{down_extra}
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "{delay}"
queue = {{ packets = 100 }}
[[workload.tcp]]
name = "f"
from = "a"
to = "b"
{profile}{flow}
"#
        ))
    }
}
