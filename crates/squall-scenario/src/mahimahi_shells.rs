//! Mahimahi's shells' arguments as squall's keys (Netravali et al.,
//! USENIX ATC 2015; the repository github.com/ravinet/mahimahi):
//!
//! - `mm-link`'s `--uplink-queue=TYPE --uplink-queue-args=ARGS` (and the
//!   downlink's), read from `src/frontend/linkshell.cc`
//!   (`get_packet_queue`) and `src/packet/*_packet_queue.{hh,cc}`, as the
//!   trace stage's `queue`;
//! - `mm-onoff uplink|downlink MEAN-ON MEAN-OFF`, read from
//!   `src/frontend/onoffshell.cc` and `src/frontend/loss_queue.cc`
//!   (`StochasticSwitchingLink`), as a `[[blackouts]]` entry.
//!
//! Where squall refuses what Mahimahi reads silently: an argument a queue
//! does not take (mm-link looks each name up with `string::find` and
//! ignores the rest), digits followed by anything (`packets=100ms` is 100
//! to mm-link), a value of 0 (mm-link's "not given"), a name given twice.

use squall_link::{BlackoutMode, CodelConfig, Distribution, DropPolicy, Duration, PieConfig, QueueConfig};

use crate::schema::{BlackoutDirection, BlackoutSpec};

/// A Mahimahi argument squall cannot use: the option, the value given and
/// what was expected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{option} {value:?}: {message}")]
pub struct ShellArgError {
    pub option: String,
    pub value: String,
    pub message: String,
}

/// mm-link's queue types (`linkshell.cc` `get_packet_queue`).
pub const QUEUE_TYPES: [&str; 5] = ["infinite", "droptail", "drophead", "codel", "pie"];

/// The queue mm-link builds from `--{dir}-queue=kind` and
/// `--{dir}-queue-args=args`, as a squall stage queue. `option` is the
/// queue option's name (`--uplink-queue`); errors about the arguments name
/// `{option}-args`. `args` is `None` when `--{dir}-queue-args` was not
/// given.
///
/// - `infinite` (mm-link's default): no limit, no argument.
/// - `droptail`: `packets=N` and/or `bytes=N` (at least one), the arriving
///   packet is dropped when it would pass a limit (`drop_tail_packet_queue.hh`).
/// - `drophead`: the same limits; the arriving packet is taken and the
///   oldest are dropped until the limits hold (`drop_head_packet_queue.hh`).
/// - `codel`: a limit as above plus `target=MS` and `interval=MS`, both
///   required (`codel_packet_queue.cc`); drops, never marks.
/// - `pie`: a limit plus `qdelay_ref=MS` and `max_burst=MS`, both required
///   (`pie_packet_queue.cc`), updated every 30 ms as mm-link's PIE is
///   (`t_update_`), with its alpha 0.125 and beta 1.25; drops, never marks.
pub fn mm_link_queue(option: &str, kind: &str, args: Option<&str>) -> Result<QueueConfig, ShellArgError> {
    let args_option = format!("{option}-args");
    let type_error = |message: String| ShellArgError { option: option.into(), value: kind.into(), message };
    let takes: &[&str] = match kind {
        "infinite" => &[],
        "droptail" | "drophead" => &["packets", "bytes"],
        "codel" => &["packets", "bytes", "target", "interval"],
        "pie" => &["packets", "bytes", "qdelay_ref", "max_burst"],
        _ => {
            return Err(type_error(format!(
                "not a queue type of mm-link; expected one of {} (linkshell.cc)",
                QUEUE_TYPES.join(", ")
            )));
        }
    };
    let text = args.unwrap_or("");
    let args_error = |message: String| ShellArgError { option: args_option.clone(), value: text.into(), message };
    let given = parse_args(text, takes, kind).map_err(args_error)?;
    let get = |name: &str| given.iter().find(|(n, _)| *n == name).map(|&(_, v)| v);
    let ms = |name: &str| get(name).map(Duration::from_millis);
    let example = |e: &str| format!("; expected e.g. {option}={kind} {args_option}=\"{e}\"");
    if kind == "infinite" {
        if args.is_some() {
            return Err(args_error(
                "infinite (mm-link's default queue) takes no arguments; give a queue type with a limit, e.g. droptail with \"packets=100\"".into(),
            ));
        }
        return Ok(QueueConfig::default());
    }
    let (packets, bytes) = (get("packets"), get("bytes"));
    if packets.is_none() && bytes.is_none() {
        return Err(args_error(format!(
            "{kind} needs a limit, packets=N or bytes=N (mm-link: \"Dropping queue must have a byte or packet limit.\"){}",
            example("packets=100")
        )));
    }
    let packets = packets
        .map(|p| {
            u32::try_from(p).map_err(|_| args_error(format!("packets={p} is too large; expected at most {}", u32::MAX)))
        })
        .transpose()?;
    let mut queue = QueueConfig { packets, bytes: bytes.map(squall_link::Bytes), ..QueueConfig::default() };
    match kind {
        "drophead" => queue.drop = DropPolicy::Head,
        "codel" => {
            let (Some(target), Some(interval)) = (ms("target"), ms("interval")) else {
                return Err(args_error(format!(
                    "codel needs target=MS and interval=MS (mm-link refuses codel without them){}",
                    example("packets=100, target=5, interval=100")
                )));
            };
            if target >= interval {
                return Err(args_error(format!(
                    "target {target} is not below interval {interval}; CoDel needs target < interval (RFC 8289 §4.3: 5 and 100 ms)"
                )));
            }
            queue.codel = Some(CodelConfig { target, interval, ecn: false });
        }
        "pie" => {
            let (Some(target), Some(max_burst)) = (ms("qdelay_ref"), ms("max_burst")) else {
                return Err(args_error(format!(
                    "pie needs qdelay_ref=MS and max_burst=MS (mm-link refuses pie without them){}",
                    example("packets=100, qdelay_ref=15, max_burst=150")
                )));
            };
            queue.pie = Some(PieConfig {
                target,
                max_burst,
                t_update: Duration::from_millis(30),
                ecn: false,
                ..PieConfig::default()
            });
        }
        _ => {}
    }
    Ok(queue)
}

/// `NAME=NUMBER[, NAME2=NUMBER2, ...]` (mm-link's usage text), each name
/// one that `kind` takes, at most once, each number a whole number above 0.
fn parse_args<'a>(text: &str, takes: &[&'a str], kind: &str) -> Result<Vec<(&'a str, u64)>, String> {
    let mut out: Vec<(&'a str, u64)> = Vec::new();
    let expected = if takes.is_empty() {
        "no arguments".to_string()
    } else {
        format!("NAME=NUMBER[, NAME=NUMBER ...] with NAME one of {}", takes.join(", "))
    };
    for item in text.split(',').map(str::trim) {
        if item.is_empty() && text.trim().is_empty() {
            break;
        }
        let Some((name, value)) = item.split_once('=') else {
            return Err(format!("`{item}` is not NAME=NUMBER; {kind} takes {expected}"));
        };
        let (name, value) = (name.trim(), value.trim());
        let Some(&name) = takes.iter().find(|t| **t == name) else {
            return Err(format!("`{name}` is not an argument of {kind}; {kind} takes {expected}"));
        };
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!("`{name}` is given twice"));
        }
        let unit = if matches!(name, "packets" | "bytes") { name } else { "ms" };
        let number = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
            .then(|| value.parse::<u64>().ok())
            .flatten()
            .filter(|&v| v > 0)
            .ok_or_else(|| {
                format!(
                    "`{name}={value}`: expected a whole number of {unit} above 0, digits only{}",
                    if value == "0" { " (mm-link reads 0 as not given: leave the argument out)" } else { "" }
                )
            })?;
        out.push((name, number));
    }
    Ok(out)
}

/// mm-onoff's arguments, `uplink|downlink MEAN-ON-TIME MEAN-OFF-TIME` in
/// seconds (`onoffshell.cc`), as a blackout of the named direction: the
/// link starts on, each on period lasts an exponential time of mean
/// MEAN-ON, each off period one of mean MEAN-OFF, and packets reaching the
/// link while it is off are dropped (`StochasticSwitchingLink`, which
/// drops at arrival while off and starts on at its first use). The other
/// direction is never off. Both means must be above 0 (mm-onoff takes 0
/// for one of them: a link never on or never off, which `--link` says
/// with `loss 100%` or without `--onoff`).
pub fn mm_onoff(option: &str, spec: &str) -> Result<BlackoutSpec, ShellArgError> {
    let error = |message: String| ShellArgError { option: option.into(), value: spec.into(), message };
    let usage = "expected `uplink|downlink MEAN-ON-TIME MEAN-OFF-TIME` in seconds, as mm-onoff takes them, e.g. \"downlink 5 1\"";
    let words: Vec<&str> = spec.split_whitespace().collect();
    let [direction, on, off] = words[..] else {
        return Err(error(format!("{} words; {usage}", words.len())));
    };
    let direction = match direction {
        "uplink" => BlackoutDirection::Uplink,
        "downlink" => BlackoutDirection::Downlink,
        other => return Err(error(format!("`{other}` is not a direction; {usage}"))),
    };
    let seconds = |what: &str, word: &str| -> Result<Duration, ShellArgError> {
        let s: f64 = word
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite())
            .ok_or_else(|| error(format!("mean {what} time `{word}` is not a number of seconds; {usage}")))?;
        if s <= 0.0 || s > 1e9 {
            return Err(error(format!(
                "mean {what} time {word} s: expected a time above 0 s (and at most 10^9 s); {usage}"
            )));
        }
        Ok(Duration::from_nanos_f64(s * 1e9))
    };
    let (on, off) = (seconds("on", on)?, seconds("off", off)?);
    Ok(BlackoutSpec {
        at: Distribution::Exponential { mean: on },
        duration: Distribution::Exponential { mean: off },
        every: None,
        gap: Some(Distribution::Exponential { mean: on }),
        direction,
        mode: BlackoutMode::Drop,
        stages: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(kind: &str, args: Option<&str>) -> Result<QueueConfig, String> {
        mm_link_queue("--uplink-queue", kind, args).map_err(|e| e.to_string())
    }

    #[test]
    fn each_queue_type_maps_to_its_keys() {
        assert_eq!(q("infinite", None).unwrap(), QueueConfig::default());
        let t = q("droptail", Some("packets=100")).unwrap();
        assert_eq!((t.packets, t.bytes, t.drop), (Some(100), None, DropPolicy::Tail));
        let h = q("drophead", Some("bytes=150000, packets=20")).unwrap();
        assert_eq!((h.packets, h.bytes, h.drop), (Some(20), Some(squall_link::Bytes(150_000)), DropPolicy::Head));
        let c = q("codel", Some("packets=100,target=5,interval=100")).unwrap();
        assert_eq!(
            c.codel,
            Some(CodelConfig { target: Duration::from_millis(5), interval: Duration::from_millis(100), ecn: false })
        );
        assert_eq!(c.packets, Some(100));
        let p = q("pie", Some("bytes=30000, qdelay_ref=20, max_burst=100")).unwrap();
        let pie = p.pie.unwrap();
        assert_eq!(
            (pie.target, pie.max_burst, pie.t_update),
            (Duration::from_millis(20), Duration::from_millis(100), Duration::from_millis(30))
        );
        assert!(!pie.ecn && pie.alpha == 0.125 && pie.beta == 1.25);
        assert_eq!(p.bytes, Some(squall_link::Bytes(30_000)));
    }

    #[test]
    fn bad_queue_options_name_the_option_and_what_was_expected() {
        assert_eq!(
            q("fifo", None).unwrap_err(),
            "--uplink-queue \"fifo\": not a queue type of mm-link; expected one of infinite, droptail, drophead, codel, pie (linkshell.cc)"
        );
        assert_eq!(
            q("droptail", None).unwrap_err(),
            "--uplink-queue-args \"\": droptail needs a limit, packets=N or bytes=N (mm-link: \"Dropping queue must have a byte or packet limit.\"); expected e.g. --uplink-queue=droptail --uplink-queue-args=\"packets=100\""
        );
        assert_eq!(
            q("droptail", Some("packets=100, target=5")).unwrap_err(),
            "--uplink-queue-args \"packets=100, target=5\": `target` is not an argument of droptail; droptail takes NAME=NUMBER[, NAME=NUMBER ...] with NAME one of packets, bytes"
        );
        assert_eq!(
            q("droptail", Some("packets=100ms")).unwrap_err(),
            "--uplink-queue-args \"packets=100ms\": `packets=100ms`: expected a whole number of packets above 0, digits only"
        );
        assert!(
            q("droptail", Some("packets=0"))
                .unwrap_err()
                .ends_with("(mm-link reads 0 as not given: leave the argument out)")
        );
        assert!(q("drophead", Some("packets 10")).unwrap_err().contains("`packets 10` is not NAME=NUMBER"));
        assert!(q("droptail", Some("packets=1, packets=2")).unwrap_err().contains("`packets` is given twice"));
        assert!(
            q("codel", Some("packets=100, target=5")).unwrap_err().contains("codel needs target=MS and interval=MS")
        );
        assert!(q("codel", Some("packets=100, target=100, interval=100")).unwrap_err().contains("not below interval"));
        assert!(
            q("pie", Some("packets=100, max_burst=100"))
                .unwrap_err()
                .contains("pie needs qdelay_ref=MS and max_burst=MS")
        );
        assert!(q("infinite", Some("packets=10")).unwrap_err().contains("`packets` is not an argument of infinite"));
        assert!(q("infinite", Some("")).unwrap_err().contains("infinite (mm-link's default queue) takes no arguments"));
        assert!(q("droptail", Some("packets=99999999999")).unwrap_err().contains("too large"));
    }

    #[test]
    fn onoff_maps_to_alternating_exponential_blackouts() {
        let b = mm_onoff("--onoff", "downlink 5 0.5").unwrap();
        assert_eq!(b.direction, BlackoutDirection::Downlink);
        assert_eq!(b.mode, BlackoutMode::Drop);
        assert_eq!(b.at, Distribution::Exponential { mean: Duration::from_secs(5) });
        assert_eq!(b.gap, Some(Distribution::Exponential { mean: Duration::from_secs(5) }));
        assert_eq!(b.duration, Distribution::Exponential { mean: Duration::from_millis(500) });
        assert_eq!(b.every, None);
        let e = |s: &str| mm_onoff("--onoff", s).unwrap_err().to_string();
        assert_eq!(
            e("sideways 5 1"),
            "--onoff \"sideways 5 1\": `sideways` is not a direction; expected `uplink|downlink MEAN-ON-TIME MEAN-OFF-TIME` in seconds, as mm-onoff takes them, e.g. \"downlink 5 1\""
        );
        assert!(e("uplink 5").starts_with("--onoff \"uplink 5\": 2 words;"));
        assert!(e("uplink 5s 1").contains("mean on time `5s` is not a number of seconds"));
        assert!(e("uplink 5 0").contains("mean off time 0 s: expected a time above 0 s"));
        assert!(e("uplink -1 1").contains("mean on time -1 s"));
        assert!(e("uplink 5 nan").contains("mean off time `nan` is not a number"));
    }
}
