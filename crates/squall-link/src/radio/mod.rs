//! A 4G OFDM downlink: fading channel, prediction, adaptive modulation,
//! link frames and ARQ (seed 002, WIPEMU; VALIDATION cases 13 and 14).
//!
//! - [`channel`]: true and predicted SNR per slot and sub-channel, generated
//!   ([`fading`] Rayleigh taps, [`shadow`] AR(1) shadowing, [`prediction`]
//!   errors) or measured (data);
//! - [`modulation`]: BPSK to 256-QAM, symbol and frame error rates;
//! - [`adaptive`]: switching levels that maximise expected bits per frame;
//! - [`link`]: [`RadioLink`], the driven component (push, poll,
//!   next_wakeup) that cuts packets into frames, sends them in slots, and
//!   retransmits; [`RadioLink::apply`] takes a state's [`RadioPatch`]
//!   (mean SNR, prediction NMSE, modulation, scheduling, ARQ) mid-run.
//!
//! Pure like the rest of the crate: no clock, no I/O. A measured channel
//! arrives as numbers; reading its file is the scenario loader's job.

pub mod adaptive;
pub mod channel;
pub mod config;
pub mod fading;
pub mod link;
pub mod math;
pub mod modulation;
pub mod prediction;
pub mod residual;
pub mod shadow;
pub mod units;

pub use adaptive::{AdaptiveModulator, SwitchingLevels};
pub use channel::{ChannelConfig, FadingChannel, FadingConfig, MeasuredSnr, SlotChannel, SnrFiles};
pub use config::{ArqPatch, ChannelPatch, RadioConfig, RadioPatch, ResidualErrors, Scheduling};
pub use fading::{Tap, max_doppler_hz, typical_urban};
pub use link::{RadioLink, RadioStats};
pub use modulation::{Modulation, ModulationChoice};
pub use shadow::ShadowingConfig;
pub use units::{Frequency, Speed};
