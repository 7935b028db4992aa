//! squall-trace: what a run leaves behind for people and tools to read.
//!
//! - [`PcapWriter`]: pcap files that tcpdump, Wireshark and tcptrace read.
//!   The emulator's packets are written as captured; the simulator's, which
//!   carry no bytes, get real IPv4/UDP/TCP headers synthesised from the
//!   [`squall_link::Packet`] (and a [`TcpHeaderInfo`] for TCP segments).
//! - [`EventLogWriter`] / [`EventLogReader`]: the model's events as CSV, one
//!   row per [`squall_link::Event`], and back.

mod class_log;
mod event_log;
mod pcap;
mod tcp;

pub use class_log::{
    ClassLogError, ClassLogReader, header as class_log_header, write_header as write_class_header,
    write_sample as write_class_sample,
};
pub use event_log::{EventLogError, EventLogReader, EventLogWriter, HEADER as EVENT_LOG_HEADER, push_seconds};
pub use pcap::{PcapWriteError, PcapWriter, SNAPLEN, synthesise_headers};
pub use tcp::{TcpFlags, TcpHeaderInfo};
