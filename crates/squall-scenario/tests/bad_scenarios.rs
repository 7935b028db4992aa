//! Every kind of bad scenario file gives one clear error: the file name,
//! the line of the offending key, the key path, what was expected and an
//! example. The files are in `scenarios/bad/`; each starts with a comment
//! saying what is wrong with it.

use std::path::PathBuf;

use squall_scenario::{ErrorKind, ScenarioError, load};

fn bad_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bad")
}

/// Loads `scenarios/bad/<file>`, which must fail, and checks the error.
#[track_caller]
fn expect(file: &str, kind: ErrorKind, line: usize, key: &str, expected: &[&str]) -> ScenarioError {
    let err = match load(&bad_dir().join(file)) {
        Ok(_) => panic!("{file} loaded, but it is bad on purpose"),
        Err(e) => e,
    };
    let msg = err.to_string();
    println!("{msg}");
    assert_eq!(err.kind(), kind, "{msg}");
    assert!(err.file().ends_with(file), "file name missing: {msg}");
    assert!(msg.contains(file), "file name missing: {msg}");
    assert_eq!(err.line(), Some(line), "{msg}");
    assert!(msg.contains(&format!(":{line}:")), "line missing: {msg}");
    assert_eq!(err.key_path(), key, "{msg}");
    assert!(msg.contains(&format!("`{key}`")), "key missing: {msg}");
    for e in expected {
        assert!(msg.contains(e), "{e:?} missing from: {msg}");
    }
    err
}

#[test]
fn unknown_key() {
    let err = expect(
        "unknown_key.toml",
        ErrorKind::Schema,
        17,
        "links[0].downlink[0].delya",
        &["unknown field `delya`", "expected one of", "`delay`", "did you mean `delay`?"],
    );
    assert_eq!(err.column(), Some(1));
}

#[test]
fn rate_in_an_unknown_unit() {
    let err = expect(
        "bad_unit.toml",
        ErrorKind::Schema,
        16,
        "links[0].downlink[0].rate",
        &["\"10 parsecs\"", "a positive rate with a unit", "like \"9600 bit/s\""],
    );
    // `{:?}` (anyhow's report) shows the line with the key marked.
    let debug = format!("{err:?}");
    assert!(debug.contains("\n 16 | rate = \"10 parsecs\"\n    | ^^^^^^^^^^^^^^^^^^^ "), "{debug}");
}

#[test]
fn number_without_unit() {
    expect(
        "no_unit.toml",
        ErrorKind::Schema,
        17,
        "links[0].downlink[0].delay",
        &["200 has no unit", "expected a time with a unit", "like \"200 ms\""],
    );
}

#[test]
fn negative_rate() {
    expect(
        "negative_rate.toml",
        ErrorKind::Schema,
        20,
        "links[0].uplink[0].rate",
        &["\"-5 Mbit/s\"", "positive rate", "like \"9600 bit/s\""],
    );
}

#[test]
fn probability_above_one() {
    let err = expect(
        "probability.toml",
        ErrorKind::Schema,
        18,
        "links[0].downlink[0].error.packet",
        &["\"150%\"", "a probability between 0 and 1", "like 0.01 or \"1%\""],
    );
    // `error = { packet = "150%" }`: the column of `packet`.
    assert_eq!(err.column(), Some(11));
}

#[test]
fn path_without_stages() {
    expect(
        "empty_path.toml",
        ErrorKind::Check,
        14,
        "links[0].downlink",
        &["a path needs at least one stage", "like [[links.downlink]]"],
    );
}

#[test]
fn unknown_distribution_kind() {
    expect(
        "unknown_kind.toml",
        ErrorKind::Schema,
        18,
        "links[0].downlink[0].jitter.kind",
        &["unknown variant `gaussian`", "expected one of", "`exponential`", "for example kind = \"exponential\""],
    );
}

#[test]
fn unreadable_distribution_file() {
    expect(
        "missing_file.toml",
        ErrorKind::DistributionFile,
        18,
        "links[0].downlink[0].jitter.file",
        &["cannot read the empirical distribution file", "no-such-file.txt", "one value per line, like \"12 ms\""],
    );
}

#[test]
fn bad_line_in_distribution_file() {
    let err = expect(
        "bad_file_line.toml",
        ErrorKind::DistributionFile,
        18,
        "links[0].downlink[0].jitter.file",
        &["jitter-bad-line.txt:5:", "\"five ms\"", "a non-negative time with a unit", "like \"200 ms\""],
    );
    // The distribution file is shown too, with its bad line.
    let related: Vec<_> = miette::Diagnostic::related(&err).expect("the file's line is attached").collect();
    assert_eq!(related.len(), 1);
    let label = related[0].labels().unwrap().next().unwrap();
    let text = std::fs::read_to_string(bad_dir().join("jitter-bad-line.txt")).unwrap();
    assert_eq!(&text[label.offset()..label.offset() + label.len()], "five ms");
}

#[test]
fn duplicate_stage_name() {
    expect(
        "duplicate_stage.toml",
        ErrorKind::Check,
        19,
        "links[0].uplink[0].name",
        &["stage name `down` is already used by links[0].downlink[0]", "must be unique", "like \"down-2\""],
    );
}

#[test]
fn state_naming_unknown_stage() {
    expect(
        "state_unknown_stage.toml",
        ErrorKind::Check,
        33,
        "states[0].set.dwn",
        &["no stage named `dwn`", "the stages are `down`, `up`"],
    );
}

#[test]
fn workload_naming_unknown_host() {
    expect(
        "workload_unknown_host.toml",
        ErrorKind::Check,
        26,
        "workload.udp[0].to",
        &["no host named `mobil`", "the hosts are `fixed`, `mobile`"],
    );
}

#[test]
fn no_route_between_hosts() {
    expect(
        "no_route.toml",
        ErrorKind::Check,
        30,
        "workload.udp[0].to",
        &["no route from `server` to `mobile`", "like [[links]] with between = [\"server\", \"mobile\"]"],
    );
}

#[test]
fn both_rate_and_interval() {
    expect(
        "rate_and_interval.toml",
        ErrorKind::Check,
        29,
        "workload.udp[0].interval",
        &["give either `rate`", "or `interval`", "not both", "like interval = \"20 ms\""],
    );
}

#[test]
fn uniform_with_low_above_high() {
    expect(
        "uniform_bounds.toml",
        ErrorKind::Check,
        18,
        "links[0].downlink[0].jitter.low",
        &["uniform needs low <= high", "like { kind = \"uniform\", low = \"0 ms\", high = \"20 ms\" }"],
    );
}

#[test]
fn not_toml() {
    let err = match load(&bad_dir().join("syntax.toml")) {
        Ok(_) => panic!("syntax.toml loaded"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert_eq!(err.kind(), ErrorKind::Syntax);
    assert_eq!((err.line(), err.column()), (Some(3), Some(17)), "{msg}");
    assert!(msg.contains("syntax.toml:3:17: invalid TOML"), "{msg}");
}

#[test]
fn duplicate_host_name() {
    expect(
        "duplicate_host.toml",
        ErrorKind::Check,
        9,
        "hosts[1].name",
        &["host name `fixed` is already used by hosts[0]"],
    );
}

/// Issue 34: an IPv6 address in the IPv4 key, named with the key to use.
#[test]
fn ipv6_address_in_the_ipv4_key() {
    expect(
        "ipv6_in_address.toml",
        ErrorKind::Schema,
        10,
        "hosts[1].address",
        &["`fd00::1` is an IPv6 address: give it as address6 = \"fd00::1\""],
    );
}

/// Issue 34: a flow over IPv6 to a host without an IPv6 address.
#[test]
fn ipv6_flow_to_a_host_without_ipv6() {
    expect(
        "ipv6_flow_without_ipv6.toml",
        ErrorKind::Check,
        28,
        "workload.tcp[0].ip_version",
        &["`fixed` and `mobile` need an IPv6 address each", "address6 = \"fd00::1\""],
    );
}

/// Issue 34: a host needs one address at least.
#[test]
fn host_without_any_address() {
    expect(
        "host_without_address.toml",
        ErrorKind::Check,
        8,
        "hosts[1].address",
        &["a host needs an address", "address6 = \"fd00::1\" (IPv6) or both"],
    );
}

#[test]
fn state_with_at_and_hold() {
    expect(
        "state_at_and_hold.toml",
        ErrorKind::Check,
        33,
        "states[0].hold",
        &["give either `at`", "or `hold`", "not both"],
    );
}

#[test]
fn on_without_off() {
    expect(
        "on_without_off.toml",
        ErrorKind::Check,
        29,
        "workload.udp[0].on",
        &["give `on` and `off` together", "like on = \"1 s\", off = \"2 s\""],
    );
}

#[test]
fn blackout_naming_unknown_stage() {
    let err = expect(
        "blackout_unknown_stage.toml",
        ErrorKind::Check,
        35,
        "blackouts[0].stages[1]",
        &["no stage named `sideways`"],
    );
    // `stages = ["down", "sideways"]`: the second element.
    assert_eq!(err.column(), Some(19));
}

/// `gap` (end to start, mm-onoff's alternation) and `every` (start to
/// start) on one blackout.
#[test]
fn blackout_with_every_and_gap() {
    expect(
        "blackout_every_and_gap.toml",
        ErrorKind::Check,
        36,
        "blackouts[0].gap",
        &["either `every` (start to start) or after a `gap` (end to start), not both"],
    );
}

#[test]
fn zero_duration() {
    expect("zero_duration.toml", ErrorKind::Check, 3, "duration", &["positive duration", "like duration = \"300 s\""]);
}

#[test]
fn link_from_a_host_to_itself() {
    expect(
        "link_to_itself.toml",
        ErrorKind::Check,
        13,
        "links[0].between",
        &["two different hosts", "like between = [\"fixed\", \"mobile\"]"],
    );
}

#[test]
fn stage_with_rate_and_service_time() {
    expect(
        "rate_and_service_time.toml",
        ErrorKind::Check,
        18,
        "links[0].downlink[0].service_time",
        &["give either `rate` or `service_time`, not both"],
    );
}

/// Errors in inline text name the source and place the key too.
fn parse_err(text: &str) -> ScenarioError {
    match squall_scenario::parse("inline.toml", text, std::path::Path::new(".")) {
        Ok(_) => panic!("parsed:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn missing_key_is_named_in_full() {
    let err = parse_err("name = \"x\"\nduration = \"1 s\"\nlinks = []\n");
    assert_eq!(err.key_path(), "hosts");
    assert!(err.to_string().contains("missing field `hosts`; for example [[hosts]]"), "{err}");
}

#[test]
fn link_between_three_hosts() {
    let err = parse_err(
        "name = \"x\"\nduration = \"1 s\"\nhosts = []\n\
         links = [{ between = [\"a\", \"b\", \"c\"], downlink = [], uplink = [] }]\n",
    );
    assert_eq!(err.line(), Some(4));
    assert!(err.to_string().contains("a link joins exactly two hosts, found 3"), "{err}");
}

#[test]
fn no_hosts() {
    let err = parse_err("name = \"x\"\nduration = \"1 s\"\nhosts = []\nlinks = []\n");
    assert_eq!((err.line(), err.key_path()), (Some(3), "hosts"));
    assert!(err.to_string().contains("at least one host"), "{err}");
}

#[test]
fn garbage_never_panics() {
    let example = include_str!("example.toml");
    // Every prefix of a valid file, cut anywhere (also inside a UTF-8
    // character in a comment), is either valid or a located error.
    let text = format!("# ünïcödé\n{example}");
    for cut in 0..text.len() {
        let Some(prefix) = text.get(..cut) else { continue };
        if let Err(e) = squall_scenario::parse("cut.toml", prefix, std::path::Path::new(".")) {
            // Located: in this file, at a line and column inside the
            // prefix, the line being the one the span starts on.
            let msg = e.to_string();
            assert_eq!(e.file(), "cut.toml", "cut at {cut}: {msg}");
            let (Some(line), Some(column), Some(span)) = (e.line(), e.column(), e.span()) else {
                panic!("cut at {cut}: error without a place: {msg}");
            };
            assert!(span.start <= prefix.len() && span.end <= prefix.len(), "cut at {cut}: span {span:?}: {msg}");
            let start = span.start.min(prefix.len());
            let line_start = prefix[..start].rfind('\n').map_or(0, |i| i + 1);
            assert_eq!(line, 1 + prefix[..start].matches('\n').count(), "cut at {cut}: {msg}");
            assert!(column >= 1 && column <= start - line_start + 1, "cut at {cut}: column {column}: {msg}");
            assert!(msg.contains(&format!("cut.toml:{line}:{column}")), "cut at {cut}: {msg}");
        }
    }
}

// ------------------------------------------------ radio stages (seed 002)

#[test]
fn missing_snr_file() {
    expect(
        "radio_trace_missing.toml",
        ErrorKind::ChannelFile,
        17,
        "links[0].downlink[0].radio.channel.file",
        &["cannot read the SNR file", "no-such-trace.csv", "one SNR in dB per sub-channel, like `16.5, 12.0, -3.2`"],
    );
}

/// Checks the SNR file's line and column in the message and that its
/// line is attached with `bad` underlined.
#[track_caller]
fn expect_in_file(err: &ScenarioError, file: &str, line: usize, column: usize, bad: &str) {
    assert!(err.to_string().contains(&format!("{file}:{line}:{column}: ")), "{err}");
    let related: Vec<_> = miette::Diagnostic::related(err).expect("the file's line is attached").collect();
    let label = related[0].labels().unwrap().next().unwrap();
    let text = std::fs::read_to_string(bad_dir().join(file)).unwrap();
    assert_eq!(&text[label.offset()..label.offset() + label.len()], bad);
}

#[test]
fn snr_file_with_a_word() {
    let err = expect(
        "radio_trace_not_a_number.toml",
        ErrorKind::ChannelFile,
        17,
        "links[0].downlink[0].radio.channel.file",
        &["`fourteen` is not a number", "expected an SNR in dB, like 16.5"],
    );
    expect_in_file(&err, "snr-not-a-number.csv", 5, 6, "fourteen");
}

#[test]
fn snr_file_with_a_nan() {
    let err = expect(
        "radio_trace_nan.toml",
        ErrorKind::ChannelFile,
        17,
        "links[0].downlink[0].radio.channel.file",
        &["`NaN` is not a finite SNR", "like 16.5 or -3"],
    );
    expect_in_file(&err, "snr-nan.csv", 3, 6, "NaN");
}

#[test]
fn snr_file_with_a_ragged_line() {
    let err = expect(
        "radio_trace_ragged.toml",
        ErrorKind::ChannelFile,
        17,
        "links[0].downlink[0].radio.channel.file",
        &["slot 2 has 3 values, but the first slot (line 2) has 2", "one SNR per sub-channel"],
    );
    expect_in_file(&err, "snr-ragged.csv", 5, 1, "-2.4,14.0,3.0");
}

#[test]
fn snr_file_without_slots() {
    expect(
        "radio_trace_empty.toml",
        ErrorKind::ChannelFile,
        17,
        "links[0].downlink[0].radio.channel.file",
        &["snr-empty.csv has no slots", "expected one line per slot"],
    );
}

#[test]
fn predicted_snr_file_of_another_shape() {
    let err = expect(
        "radio_trace_predicted_shape.toml",
        ErrorKind::ChannelFile,
        17,
        "links[0].downlink[0].radio.channel.file.predicted",
        &["ends after 3 slots, but", "snr-good.csv has 4", "the shape of the SNR file (4 slots × 2 sub-channels)"],
    );
    assert_eq!(err.column(), Some(95), "at `predicted = ...`");
    expect_in_file(&err, "snr-predicted-short.csv", 4, 1, "-2.0,14.0");
}

#[test]
fn radio_state_with_an_unknown_key() {
    let err = expect(
        "radio_patch_unknown_key.toml",
        ErrorKind::Schema,
        26,
        "states[0].set.radio.radio.modulaton",
        &["unknown field `modulaton`", "`prediction_nmse`", "did you mean `modulation`?"],
    );
    assert_eq!(err.column(), Some(25));
}

#[test]
fn radio_state_with_a_bad_value() {
    expect(
        "radio_patch_bad_value.toml",
        ErrorKind::Check,
        26,
        "states[0].set.radio.radio.prediction_nmse",
        &["must be in [0, 1)", "like 0.1"],
    );
}

#[test]
fn radio_state_with_a_channel_link_key() {
    expect(
        "radio_patch_link_key.toml",
        ErrorKind::Check,
        26,
        "states[0].set.radio.delay",
        &["a radio stage sends with its own frames", "remove this key"],
    );
}

#[test]
fn radio_state_on_a_stage_without_radio() {
    expect(
        "radio_patch_not_radio.toml",
        ErrorKind::Check,
        26,
        "states[0].set.up.radio",
        &["the stage has no radio link", "radio = { ... } only to a radio stage"],
    );
}

// Classes, schedulers and AQMs inside a stage's queue (issue 12).

const Q: &str = "links[0].downlink[0].queue";

#[test]
fn rule_naming_an_unknown_class() {
    expect(
        "class_rule_unknown_class.toml",
        ErrorKind::Check,
        25,
        &format!("{Q}.rules[0].class"),
        &["names no class of this stage", "`voice`, `bulk`"],
    );
}

#[test]
fn wrr_weight_zero() {
    expect("class_weight_zero.toml", ErrorKind::Check, 22, &format!("{Q}.classes[0].weight"), &["at least 1"]);
}

#[test]
fn wrr_weight_negative() {
    expect("class_weight_negative.toml", ErrorKind::Schema, 22, &format!("{Q}.classes[0].weight"), &["`-2`"]);
}

#[test]
fn codel_target_not_below_interval() {
    expect(
        "codel_target_above_interval.toml",
        ErrorKind::Check,
        22,
        &format!("{Q}.classes[0].codel"),
        &["0 < target < interval", "RFC 8289"],
    );
}

#[test]
fn prefix_that_does_not_parse() {
    expect(
        "class_prefix_bad.toml",
        ErrorKind::Schema,
        25,
        &format!("{Q}.rules[0].src"),
        &["\"10.0.0.0/33\"", "like \"10.0.0.0/24\""],
    );
}

#[test]
fn port_range_low_above_high() {
    expect(
        "class_port_range_reversed.toml",
        ErrorKind::Check,
        25,
        &format!("{Q}.rules[0].dst_port"),
        &["low <= high", "\"5000-5100\""],
    );
}

#[test]
fn two_classes_with_one_name() {
    expect(
        "class_duplicate_name.toml",
        ErrorKind::Check,
        22,
        &format!("{Q}.classes[1].name"),
        &["another class of this stage has this name"],
    );
}

#[test]
fn default_class_naming_no_class() {
    expect("class_default_unknown.toml", ErrorKind::Check, 19, &format!("{Q}.default_class"), &["names no class"]);
}

#[test]
fn rules_without_classes() {
    expect("class_rules_without_classes.toml", ErrorKind::Check, 19, &format!("{Q}.rules"), &["need classes"]);
}

#[test]
fn drr_quantum_zero() {
    expect("class_quantum_zero.toml", ErrorKind::Check, 22, &format!("{Q}.classes[0].quantum"), &["at least 1 B"]);
}

#[test]
fn weight_under_drr() {
    expect(
        "class_weight_without_wrr.toml",
        ErrorKind::Check,
        22,
        &format!("{Q}.classes[0].weight"),
        &["scheduler = \"wrr\" only"],
    );
}

#[test]
fn dscp_beyond_six_bits() {
    expect("class_dscp_out_of_range.toml", ErrorKind::Check, 25, &format!("{Q}.rules[0].dscp"), &["0..=63"]);
}

#[test]
fn unknown_protocol_name() {
    expect(
        "class_protocol_unknown.toml",
        ErrorKind::Check,
        25,
        &format!("{Q}.rules[0].protocol"),
        &["\"tcp\", \"udp\", \"icmp\" or a protocol number"],
    );
}

#[test]
fn red_and_codel_together() {
    expect("red_and_codel.toml", ErrorKind::Check, 20, &format!("{Q}.codel"), &["either `red`, `codel` or `pie`"]);
}

#[test]
fn stage_wide_limit_beside_classes() {
    expect("class_shared_limit.toml", ErrorKind::Check, 19, &format!("{Q}.packets"), &["per class"]);
}

#[test]
fn unknown_scheduler() {
    expect(
        "class_unknown_scheduler.toml",
        ErrorKind::Schema,
        19,
        &format!("{Q}.scheduler"),
        &["unknown variant `fifo`", "`strict_priority`, `wrr`, `drr`"],
    );
}

#[test]
fn state_with_a_rule_naming_an_unknown_class() {
    expect(
        "class_state_unknown_class.toml",
        ErrorKind::Check,
        39,
        "states[0].set.down.queue.rules[0].class",
        &["names no class of this stage"],
    );
}

#[test]
fn pie_with_a_negative_alpha() {
    expect("pie_negative_alpha.toml", ErrorKind::Check, 20, &format!("{Q}.pie"), &["alpha and beta >= 0", "RFC 8033"]);
}

// Background load (issue 12).

const BG: &str = "links[0].downlink[0].background[0]";

#[test]
fn background_with_a_negative_rate() {
    expect(
        "background_negative_rate.toml",
        ErrorKind::Schema,
        20,
        &format!("{BG}.rate"),
        &["\"-2 Mbit/s\"", "a positive rate"],
    );
}

#[test]
fn background_on_without_off() {
    expect("background_on_without_off.toml", ErrorKind::Check, 22, &format!("{BG}.on"), &["needs `off` too"]);
}

#[test]
fn background_phase_neither_random_nor_a_duration() {
    expect(
        "background_phase_word.toml",
        ErrorKind::Schema,
        22,
        &format!("{BG}.phase"),
        &["expected \"random\" or a duration like \"3 ms\""],
    );
}

#[test]
fn background_naming_an_unknown_class() {
    expect("background_unknown_class.toml", ErrorKind::Check, 24, &format!("{BG}.class"), &["names no class"]);
}

#[test]
fn background_with_rate_and_gap() {
    expect(
        "background_rate_and_gap.toml",
        ErrorKind::Check,
        21,
        &format!("{BG}.gap"),
        &["either `rate` or `gap`, not both"],
    );
}

#[test]
fn fq_codel_target_not_below_interval() {
    expect(
        "fq_codel_target_at_interval.toml",
        ErrorKind::Check,
        19,
        &format!("{Q}.fq_codel"),
        &["0 < target < interval"],
    );
}

#[test]
fn fq_codel_beside_a_stage_wide_limit() {
    expect(
        "fq_codel_with_packets.toml",
        ErrorKind::Check,
        19,
        &format!("{Q}.packets"),
        &["fq_codel is the whole queue"],
    );
}

#[test]
fn udp_packet_larger_than_ipv4_allows() {
    expect(
        "udp_size_too_large.toml",
        ErrorKind::Check,
        25,
        "workload.udp[0].size",
        &["4000000000 B", "larger than an IPv4 packet can be (65535 bytes, RFC 791)", "like size = \"1200 B\""],
    );
}

#[test]
fn sysctl_value_not_a_string_or_number() {
    expect(
        "sysctl_bad_value.toml",
        ErrorKind::Schema,
        11,
        "hosts[1].sysctl.\"net.ipv4.tcp_rmem\"",
        &["a string or a whole number", "like \"4096 131072 67108864\""],
    );
}

#[test]
fn sysctl_outside_the_network_namespace() {
    expect(
        "sysctl_not_net.toml",
        ErrorKind::Check,
        14,
        "hosts[1].sysctl.\"kernel.hostname\"",
        &["only net.* sysctls belong to a host's network namespace", "whole machine"],
    );
}

// Vacations, BGL forwarding and flow control (issue 12).

const STAGE: &str = "links[0].downlink[0]";

#[test]
fn vacation_that_never_serves() {
    expect(
        "vacation_serving_zero.toml",
        ErrorKind::Check,
        18,
        &format!("{STAGE}.vacation.serving"),
        &["a server that never serves", "like serving = \"9 ms\""],
    );
}

#[test]
fn vacation_of_negative_length() {
    expect("vacation_negative_length.toml", ErrorKind::Schema, 18, &format!("{STAGE}.vacation.length"), &["\"-1 ms\""]);
}

#[test]
fn background_forwarded_from_the_last_stage() {
    expect(
        "background_forward_last_stage.toml",
        ErrorKind::Check,
        22,
        &format!("{STAGE}.background[0].forward"),
        &["no next stage to forward background load to"],
    );
}

#[test]
fn flow_control_window_of_zero() {
    expect(
        "flow_control_window_zero.toml",
        ErrorKind::Check,
        22,
        "links[0].downlink[1].flow_control.window",
        &["at least 1 packet", "like window = \"8 packets\""],
    );
}

#[test]
fn flow_control_on_the_first_stage() {
    expect(
        "flow_control_first_stage.toml",
        ErrorKind::Check,
        18,
        &format!("{STAGE}.flow_control"),
        &["no stage before it"],
    );
}

#[test]
fn fq_codel_class_beside_a_class_limit() {
    expect(
        "class_fq_codel_with_packets.toml",
        ErrorKind::Check,
        20,
        &format!("{Q}.classes[1].packets"),
        &["fq_codel is the whole queue"],
    );
}

#[test]
fn flow_control_set_by_a_state_on_the_first_stage() {
    expect(
        "flow_control_state_first_stage.toml",
        ErrorKind::Check,
        26,
        "states[0].set.down.flow_control",
        &["no stage before it"],
    );
}

#[test]
fn web_max_requests_without_keep_alive() {
    expect(
        "web_max_requests_without_keep_alive.toml",
        ErrorKind::Check,
        27,
        "workload.tcp[0].app.web.max_requests",
        &["needs keep_alive = true"],
    );
}

#[test]
fn web_keep_alive_timeout_zero() {
    expect(
        "web_keep_alive_timeout_zero.toml",
        ErrorKind::Check,
        27,
        "workload.tcp[0].app.web.keep_alive_timeout",
        &["must be positive", "\"15 s\""],
    );
}

#[test]
fn web_site_and_size() {
    expect(
        "web_site_and_size.toml",
        ErrorKind::Check,
        27,
        "workload.tcp[0].app.web.site",
        &["either `size` or `site`"],
    );
}

#[test]
fn web_site_manifest_with_a_bad_line() {
    expect(
        "web_site_bad_line.toml",
        ErrorKind::DistributionFile,
        27,
        "workload.tcp[0].app.web.site",
        &["web-site-bad-line.csv:4:", "is not `path,bytes`", "like `img/0007.gif,2400`"],
    );
}

#[test]
fn background_load_without_a_stage_rate() {
    expect(
        "background_load_without_rate.toml",
        ErrorKind::Check,
        17,
        &format!("{BG}.load"),
        &["share of the stage's `rate`", "rate = \"2 Mbit/s\""],
    );
}

#[test]
fn inline_rules_use_the_classifier_and_its_two_classes() {
    expect(
        "inline_rule_class.toml",
        ErrorKind::Check,
        25,
        "inline.rules[1].class",
        &["\"link\" (through the link) or \"pass\"", "not `voice`"],
    );
    // The multi-class stage's own rule checks.
    expect("inline_rule_port.toml", ErrorKind::Check, 24, "inline.rules[0].dst_port", &["low <= high"]);
}

// Outside hosts (issue 11).

#[test]
fn outside_interface_with_a_bad_name() {
    expect(
        "outside_interface_bad_name.toml",
        ErrorKind::Check,
        11,
        "hosts[1].outside_interface",
        &["`eth0/1` is not a network interface name", "15 characters", "like outside_interface = \"eth0\""],
    );
}

#[test]
fn two_outside_hosts() {
    expect(
        "outside_interface_twice.toml",
        ErrorKind::Check,
        15,
        "hosts[2].outside_interface",
        &["hosts[1] (`internet`) is already the outside host"],
    );
}

#[test]
fn outside_interface_not_a_string() {
    expect("outside_interface_not_a_string.toml", ErrorKind::Schema, 11, "hosts[1].outside_interface", &["string"]);
}

/// A two-host scenario whose one TCP flow ends with `keys` (line 13 on).
fn tcp_flow_with(keys: &str) -> String {
    format!(
        "name = \"x\"\nduration = \"1 s\"\n\
         [[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n\
         [[hosts]]\nname = \"b\"\naddress = \"10.0.0.2\"\n\
         [[links]]\nbetween = [\"a\", \"b\"]\ndownlink = [{{ name = \"d\", rate = \"1 Mbit/s\" }}]\n\
         uplink = [{{ name = \"u\", rate = \"1 Mbit/s\" }}]\n\
         [[workload.tcp]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\napp = {{ bulk = \"10 KB\" }}\n{keys}\n"
    )
}

#[test]
fn dupack_threshold_zero_negative_or_a_word() {
    assert!(
        squall_scenario::parse("ok.toml", &tcp_flow_with("dupack_threshold = 5"), std::path::Path::new(".")).is_ok()
    );
    let err = parse_err(&tcp_flow_with("dupack_threshold = 0"));
    assert_eq!(
        (err.kind(), err.line(), err.key_path()),
        (ErrorKind::Check, Some(18), "workload.tcp[0].dupack_threshold")
    );
    assert!(err.to_string().contains("at least one duplicate ACK, like dupack_threshold = 3"), "{err}");
    for bad in ["-1", "\"three\"", "2.5"] {
        let err = parse_err(&tcp_flow_with(&format!("dupack_threshold = {bad}")));
        assert_eq!(
            (err.kind(), err.line(), err.key_path()),
            (ErrorKind::Schema, Some(18), "workload.tcp[0].dupack_threshold"),
            "{err}"
        );
        println!("{err}");
    }
}

// Host processing delays (issue 31).

#[test]
fn processing_at_neither_input_nor_output() {
    expect(
        "processing_bad_at.toml",
        ErrorKind::Schema,
        11,
        "hosts[1].processing.at",
        &["unknown variant `middle`", "`input`", "`output`", "for example at = \"input\""],
    );
}

#[test]
fn processing_delay_with_bounds_the_wrong_way() {
    expect("processing_bad_delay.toml", ErrorKind::Check, 11, "hosts[1].processing.delay.low", &["low <= high"]);
}

#[test]
fn processing_delay_without_a_unit() {
    expect("processing_no_unit.toml", ErrorKind::Schema, 11, "hosts[1].processing.delay", &["like \"200 ms\""]);
}

// Ephemeral ports (issue 35).

#[test]
fn ephemeral_ports_not_a_range() {
    let host = |value: &str| {
        format!(
            "name = \"x\"\nduration = \"1 s\"\nlinks = []\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n\
             ephemeral_ports = {value}\n"
        )
    };
    assert_eq!(
        squall_scenario::parse("ok.toml", &host("\"40000-40009\""), std::path::Path::new(".")).unwrap().hosts[0]
            .ephemeral_ports
            .map(|r| (r.low, r.high, r.len())),
        Some((40_000, 40_009, 10))
    );
    for (bad, says) in [
        ("\"40009-40000\"", "starts above its end (40009 > 40000)"),
        ("\"0-10\"", "is not a range of ports"),
        ("\"40000\"", "is not a range of ports"),
        ("\"40000-70000\"", "is not a range of ports"),
        ("\"low-high\"", "is not a range of ports"),
        ("40000", "expected a string"),
    ] {
        let err = parse_err(&host(bad));
        println!("{err}");
        assert_eq!(
            (err.kind(), err.line(), err.key_path()),
            (ErrorKind::Schema, Some(7), "hosts[0].ephemeral_ports"),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.contains(says), "{says:?} missing from: {msg}");
        if bad.starts_with('"') {
            assert!(msg.contains("like \"32768-60999\""), "{msg}");
        }
    }
}

/// A host's timestamp clock phase is a duration below 1 ms (issue 31).
#[test]
fn clock_phase_bad_values_name_their_key() {
    let host = |value: &str| {
        format!(
            "name = \"x\"\nduration = \"1 s\"\nlinks = []\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n\
             clock_phase = {value}\n"
        )
    };
    let ok = squall_scenario::parse("ok.toml", &host("\"0.4 ms\""), std::path::Path::new(".")).unwrap();
    assert_eq!(ok.hosts[0].clock_phase, Some(squall_link::Duration::from_micros(400)));
    for (bad, kind, says) in [
        ("\"1 ms\"", ErrorKind::Check, "1 ms is not a phase of the millisecond timestamp clock"),
        ("\"2.5 ms\"", ErrorKind::Check, "give a duration below 1 ms, like \"0.4 ms\""),
        ("\"-0.2 ms\"", ErrorKind::Schema, "\"-0.2 ms\""),
        ("\"0.4\"", ErrorKind::Schema, "like \"200 ms\""),
        ("0.4", ErrorKind::Schema, "expected"),
    ] {
        let err = parse_err(&host(bad));
        println!("{err}");
        assert_eq!((err.kind(), err.line(), err.key_path()), (kind, Some(7), "hosts[0].clock_phase"), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(says), "{says:?} missing from: {msg}");
    }
}

/// Each bad `arrivals` value is refused at its key (issue 35).
#[test]
fn arrivals_bad_values_name_their_key() {
    let scenario = |keys: &str| {
        format!(
            "name = \"t\"\nduration = \"10 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\n\
             address = \"10.0.0.2\"\n[[links]]\nbetween = [\"a\", \"b\"]\n[[links.downlink]]\nname = \"l\"\n\
             rate = \"10 Mbit/s\"\n[[links.uplink]]\nname = \"u\"\n[[workload.tcp]]\nname = \"f\"\nfrom = \"a\"\n\
             to = \"b\"\n{keys}\n"
        )
    };
    let bulk = "app = { bulk = { kind = \"exponential\", mean = \"10 KB\" } }";
    let ok = format!("{bulk}\narrivals = {{ poisson = {{ load = \"60%\", of = \"l\" }}, until = \"5 s\" }}");
    assert!(squall_scenario::parse("ok.toml", &scenario(&ok), std::path::Path::new(".")).is_ok());
    for (keys, path, says) in [
        (format!("{bulk}\narrivals = {{ from = \"1 s\" }}"), "workload.tcp[0].arrivals", "arrivals need a process"),
        (
            format!("{bulk}\narrivals = {{ gap = \"1 ms\", poisson = {{ load = \"60%\", of = \"l\" }} }}"),
            "workload.tcp[0].arrivals.gap",
            "either poisson or gap",
        ),
        (format!("{bulk}\narrivals = {{ gap = \"0 s\" }}"), "workload.tcp[0].arrivals.gap", "gaps of 0 s"),
        (
            format!("{bulk}\narrivals = {{ poisson = {{ load = 0, of = \"l\" }} }}"),
            "workload.tcp[0].arrivals.poisson.load",
            "above 0",
        ),
        (
            format!("{bulk}\narrivals = {{ poisson = {{ load = \"60%\", of = \"u\" }} }}"),
            "workload.tcp[0].arrivals.poisson.of",
            "`u` is not a stage with a rate",
        ),
        (
            format!("{bulk}\narrivals = {{ gap = \"1 ms\", until = \"11 s\" }}"),
            "workload.tcp[0].arrivals.until",
            "after the run's end",
        ),
        (
            format!("{bulk}\narrivals = {{ gap = \"1 ms\", from = \"5 s\", until = \"5 s\" }}"),
            "workload.tcp[0].arrivals.from",
            "the window is empty",
        ),
        (format!("{bulk}\narrivals = {{ gap = \"1 us\" }}"), "workload.tcp[0].arrivals", "flows expected"),
        (
            format!("{bulk}\ncount = 3\narrivals = {{ gap = \"1 ms\" }}"),
            "workload.tcp[0].count",
            "either count or arrivals",
        ),
        (
            format!("{bulk}\nsrc_port = 3000\narrivals = {{ gap = \"1 ms\" }}"),
            "workload.tcp[0].src_port",
            "leave src_port out",
        ),
        (
            format!("{bulk}\nstart = \"1 s\"\narrivals = {{ gap = \"1 ms\" }}"),
            "workload.tcp[0].start",
            "leave start out",
        ),
        (
            "app = { bulk_for = \"1 s\" }\narrivals = { gap = \"1 ms\" }".to_string(),
            "workload.tcp[0].app",
            "bulk flows",
        ),
        (
            "app = { bulk = { kind = \"pareto\", scale = \"1 KB\", shape = 0.9 } }\n\
             arrivals = { poisson = { load = \"60%\", of = \"l\" } }"
                .to_string(),
            "workload.tcp[0].app.bulk",
            "positive mean",
        ),
        (
            format!("{bulk}\narrivals = {{ gap = \"1 ms\", when = 1 }}"),
            "workload.tcp[0].arrivals.when",
            "unknown field",
        ),
    ] {
        let err = parse_err(&scenario(&keys));
        println!("{err}");
        assert_eq!(err.key_path(), path, "{err}");
        assert!(err.line().is_some(), "{err}");
        assert!(err.to_string().contains(says), "{says:?} missing from: {err}");
    }
}

// Existing namespaces as hosts (issue 34).

#[test]
fn netns_with_a_bad_name() {
    expect(
        "netns_bad_name.toml",
        ErrorKind::Check,
        11,
        "hosts[1].netns",
        &["`../lab` is not a network namespace name", "without `/`", "like netns = \"lab\""],
    );
}

#[test]
fn netns_and_outside_interface_on_one_host() {
    expect(
        "netns_and_outside.toml",
        ErrorKind::Check,
        12,
        "hosts[1].outside_interface",
        &["host `fixed` has both `netns` and `outside_interface`", "keep one"],
    );
}

#[test]
fn two_hosts_in_one_namespace() {
    expect(
        "netns_twice.toml",
        ErrorKind::Check,
        12,
        "hosts[1].netns",
        &["hosts[0] (`mobile`) is already namespace `lab`"],
    );
}

/// A radio stage ignores `send_buffer` (it takes one packet at a time from
/// its queue): refused where it is given, not ignored.
#[test]
fn radio_stage_with_a_send_buffer() {
    expect(
        "radio_send_buffer.toml",
        ErrorKind::Check,
        15,
        "links[0].downlink[0].send_buffer",
        &["a radio stage sends with its own frames", "remove this key"],
    );
}

/// "No host named X" names the hosts there are, the first twelve of a
/// large scenario and how many more (not 1 000 names).
#[test]
fn an_unknown_host_among_many_names_a_few() {
    let mut text = String::from("name = \"many\"\nduration = \"1 s\"\n");
    for i in 0..1000 {
        text += &format!("[[hosts]]\nname = \"h{i}\"\naddress = \"10.0.{}.{}\"\n", i / 250, i % 250 + 1);
    }
    text +=
        "[[links]]\nbetween = [\"h0\", \"nobody\"]\n[[links.downlink]]\nname = \"d\"\n[[links.uplink]]\nname = \"u\"\n";
    let err = squall_scenario::parse("many.toml", &text, std::path::Path::new(".")).unwrap_err().to_string();
    println!("{err}");
    assert!(err.contains("no host named `nobody`; the hosts are `h0`, `h1`,"), "{err}");
    assert!(err.contains("`h11` and 988 more"), "{err}");
    assert!(!err.contains("`h12`"), "{err}");
}
