//! The benchmark's baseline: the same two hosts joined by a plain veth
//! pair, no squall in between, to compare forwarding rates with.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::blast::SinkReport;
use crate::error::{Context, EmuError};
use crate::naming::{RunId, TUN_NAME};
use crate::netns::NetNs;

/// Runs `exe tool udp --sink` in one namespace and `exe tool udp --send`
/// (`ip_size`-byte packets for `seconds`) in the other, over a veth pair;
/// returns what the sink counted.
pub fn veth(exe: &Path, ip_size: usize, seconds: f64) -> Result<SinkReport, EmuError> {
    let id = RunId::current();
    let a = NetNs::create(&id.netns_name("veth-a"))?;
    let b = NetNs::create(&id.netns_name("veth-b"));
    let b = match b {
        Ok(b) => b,
        Err(e) => {
            let _ = a.delete();
            return Err(e);
        }
    };
    let result = run(exe, &a, &b, ip_size, seconds);
    let _ = a.delete();
    let _ = b.delete();
    result
}

fn run(exe: &Path, a: &NetNs, b: &NetNs, ip_size: usize, seconds: f64) -> Result<SinkReport, EmuError> {
    a.ip(&["link", "add", TUN_NAME, "type", "veth", "peer", "name", TUN_NAME, "netns", b.name()])?;
    for (ns, me, peer) in [(a, "10.0.0.1", "10.0.1.1"), (b, "10.0.1.1", "10.0.0.1")] {
        ns.ip(&["addr", "add", &format!("{me}/32"), "dev", TUN_NAME])?;
        ns.ip(&["link", "set", TUN_NAME, "up"])?;
        ns.ip(&["route", "add", &format!("{peer}/32"), "dev", TUN_NAME])?;
    }
    let mut sink = Command::new(exe);
    sink.args(["tool", "udp", "--sink"]).stdout(Stdio::piped()).stderr(Stdio::inherit());
    b.prepare(&mut sink, true)?;
    let sink = sink.spawn().context(|| "start the sink".to_string())?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut sender = Command::new(exe);
    sender.args([
        "tool",
        "udp",
        "--send",
        "10.0.1.1",
        "--size",
        &ip_size.to_string(),
        "--seconds",
        &seconds.to_string(),
    ]);
    sender.stdout(Stdio::null());
    a.prepare(&mut sender, true)?;
    sender.status().context(|| "run the sender".to_string())?;
    let out = sink.wait_with_output().context(|| "wait for the sink".to_string())?;
    serde_json::from_slice(&out.stdout).map_err(|e| EmuError::Scenario(format!("sink output: {e}")))
}
