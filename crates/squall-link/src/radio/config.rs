//! How a radio link is configured (seed 002 Table I). Like the rest of the
//! scenario schema these types deserialize with units written out and
//! refuse unknown keys; [`RadioConfig::validate`] checks what serde cannot.

use serde::{Deserialize, Serialize};

use super::channel::{ChannelConfig, FadingConfig, MeasuredSnr};
use super::modulation::ModulationChoice;
use crate::config::ArqConfig;
use crate::error::ConfigError;
use crate::time::Duration;

/// A slotted OFDM downlink with adaptive modulation and link ARQ (seed 002
/// §II): one frame per slot on one sub-channel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioConfig {
    /// Slots (frames) per second on the chosen sub-channel (seed 002: 1500,
    /// 0.667 ms each).
    #[serde(default = "RadioConfig::default_slots_per_second")]
    pub slots_per_second: u32,
    /// Payload symbols per frame (seed 002: 120 per bin, 12 of them for
    /// training and control, leaving 108).
    #[serde(default = "RadioConfig::default_symbols_per_frame")]
    pub symbols_per_frame: u32,
    #[serde(default)]
    pub channel: ChannelConfig,
    /// Normalised mean square error of the channel prediction, 0..1
    /// (0 = perfect; seed 002: 0.1).
    #[serde(default)]
    pub prediction_nmse: f64,
    /// `"adaptive"` or a fixed format like `"4qam"`.
    #[serde(default)]
    pub modulation: ModulationChoice,
    #[serde(default)]
    pub scheduling: Scheduling,
    /// Link ARQ: `retries` retransmissions per frame (seed 002: 3 to 30),
    /// each no earlier than `delay` after the failed frame ended (2 ms).
    #[serde(default = "RadioConfig::default_arq")]
    pub arq: ArqConfig,
    #[serde(default)]
    pub residual: ResidualErrors,
}

/// Which sub-channel carries the frame of each slot (seed 002 §III.A).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduling {
    /// Always the same sub-channel (index from 0): `{ static = 12 }`.
    Static(u32),
    /// The sub-channel with the highest predicted SNR in each slot: `"best"`.
    Best,
}

impl Default for Scheduling {
    fn default() -> Self {
        Scheduling::Static(0)
    }
}

/// What happens to a packet whose frame is still in error after the last
/// retransmission (seed 002 §II.C).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResidualErrors {
    /// Bit errors are applied at the symbol error rate and the corrupted
    /// packet is delivered (the seed's behaviour).
    #[default]
    Deliver,
    /// The packet is dropped ([`crate::DropReason::ArqLimit`]).
    Drop,
}

impl RadioConfig {
    fn default_slots_per_second() -> u32 {
        1500
    }
    fn default_symbols_per_frame() -> u32 {
        108
    }
    fn default_arq() -> ArqConfig {
        ArqConfig { delay: Duration::from_millis(2), retries: 10 }
    }

    /// Number of sub-channels the channel offers.
    pub fn sub_channels(&self) -> usize {
        match &self.channel {
            ChannelConfig::Fading(f) => f.sub_channels as usize,
            ChannelConfig::Measured(m) => m.snr_db.first().map_or(0, Vec::len),
        }
    }

    /// Checks what serde cannot; errors name the key under `key` (e.g.
    /// "downlink.radio").
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let err = |k: &str, msg: &str| Err(ConfigError::new(&format!("{key}.{k}"), msg));
        if self.slots_per_second == 0 {
            return err("slots_per_second", "must be at least 1, like 1500");
        }
        if self.symbols_per_frame == 0 {
            return err("symbols_per_frame", "must be at least 1, like 108");
        }
        if !(0.0..1.0).contains(&self.prediction_nmse) {
            return err("prediction_nmse", "must be in [0, 1), like 0.1 (0 = perfect prediction)");
        }
        if self.arq.retries > 1000 {
            return err("arq.retries", "must be at most 1000 (seed 002 uses 3 to 30)");
        }
        match &self.channel {
            ChannelConfig::Fading(f) => validate_fading(f, &format!("{key}.channel"))?,
            ChannelConfig::Measured(m) => validate_measured(m, &format!("{key}.channel"))?,
        }
        if let Scheduling::Static(c) = self.scheduling
            && c as usize >= self.sub_channels()
        {
            return err("scheduling", "names a sub-channel the channel does not have (they count from 0)");
        }
        Ok(())
    }
}

impl Default for RadioConfig {
    /// Seed 002 Table I with adaptive modulation, perfect prediction, a
    /// static sub-channel and 10 retransmissions.
    fn default() -> Self {
        RadioConfig {
            slots_per_second: Self::default_slots_per_second(),
            symbols_per_frame: Self::default_symbols_per_frame(),
            channel: ChannelConfig::default(),
            prediction_nmse: 0.0,
            modulation: ModulationChoice::Adaptive,
            scheduling: Scheduling::default(),
            arq: Self::default_arq(),
            residual: ResidualErrors::Deliver,
        }
    }
}

/// A state's change to a radio stage (`set.<stage> = { radio = { ... } }`):
/// the keys present are set, the others kept, from the first slot that
/// starts at or after the state's time. Packets, frames and retransmissions
/// in flight stay where they are: a frame already cut keeps its bits, a
/// pending retransmission its ready time and attempt count.
///
/// ```toml
/// [[states]]
/// name = "fast-fading"
/// at = "10 s"
/// set.radio = { radio = { channel = { mean_snr_db = 10 }, modulation = "16qam",
///               prediction_nmse = 0.1, arq = { retries = 3 }, scheduling = "best" } }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ChannelPatch>,
    /// Normalised mean square error of the prediction, 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction_nmse: Option<f64>,
    /// `"adaptive"` or a fixed format like `"16qam"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modulation: Option<ModulationChoice>,
    /// `"best"` or `{ static = 12 }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Scheduling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arq: Option<ArqPatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<ResidualErrors>,
}

/// A change of the channel's level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelPatch {
    /// Mean SNR, dB. A fading channel's `mean_snr_db`; a measured trace is
    /// shifted by the same number of dB everywhere so that its mean linear
    /// SNR is this (the fading stays, its level moves).
    pub mean_snr_db: f64,
}

/// A change of the link ARQ (either or both keys).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArqPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    /// Retransmissions per frame; a frame already retransmitted this often
    /// or more gets no further retransmission after its next error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
}

impl RadioPatch {
    /// Checks what the patched configuration's own validation cannot name
    /// well; errors name the key under `key` (e.g. "downlink.radio").
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if let Some(c) = &self.channel
            && !(c.mean_snr_db.is_finite() && c.mean_snr_db.abs() <= 300.0)
        {
            return Err(ConfigError::new(&format!("{key}.channel.mean_snr_db"), "must be a finite SNR in dB, like 16"));
        }
        Ok(())
    }
}

impl RadioConfig {
    /// This configuration with `patch` applied.
    pub fn patched(&self, patch: &RadioPatch) -> RadioConfig {
        let mut c = self.clone();
        if let Some(ch) = &patch.channel {
            match &mut c.channel {
                ChannelConfig::Fading(f) => f.mean_snr_db = ch.mean_snr_db,
                ChannelConfig::Measured(m) => m.shift_mean_to(ch.mean_snr_db),
            }
        }
        if let Some(v) = patch.prediction_nmse {
            c.prediction_nmse = v;
        }
        if let Some(m) = patch.modulation {
            c.modulation = m;
        }
        if let Some(s) = patch.scheduling {
            c.scheduling = s;
        }
        if let Some(a) = &patch.arq {
            if let Some(d) = a.delay {
                c.arq.delay = d;
            }
            if let Some(r) = a.retries {
                c.arq.retries = r;
            }
        }
        if let Some(r) = patch.residual {
            c.residual = r;
        }
        c
    }
}

fn validate_fading(f: &FadingConfig, key: &str) -> Result<(), ConfigError> {
    let err = |k: &str, msg: &str| Err(ConfigError::new(&format!("{key}.{k}"), msg));
    if f.sub_channels == 0 || f.sub_channels > 4096 {
        return err("sub_channels", "must be between 1 and 4096, like 25");
    }
    if !(f.mean_snr_db.is_finite() && f.mean_snr_db.abs() <= 300.0) {
        return err("mean_snr_db", "must be a finite SNR in dB, like 16");
    }
    if !(1..=4096).contains(&f.sinusoids) {
        return err("sinusoids", "must be between 1 and 4096, like 16");
    }
    if f.carrier.hz() <= 0.0 {
        return err("carrier", "must be positive, like \"1900 MHz\"");
    }
    if f.taps.is_empty() || !f.taps.iter().any(|t| t.power_db.is_finite()) {
        return err("taps", "needs at least one tap with a finite power in dB");
    }
    if f.taps.iter().any(|t| t.power_db.is_nan() || t.power_db == f64::INFINITY) {
        return err("taps", "tap powers must be finite dB values or -inf for an empty tap");
    }
    let s = &f.shadowing;
    if !(s.std_dev_db.is_finite() && s.std_dev_db >= 0.0) {
        return err("shadowing.std_dev_db", "must be a non-negative dB value, like 4");
    }
    if !(0.0..1.0).contains(&s.pole) {
        return err("shadowing.pole", "must be in [0, 1), like 0.74");
    }
    if !(s.pole_distance_m.is_finite() && s.pole_distance_m > 0.0) {
        return err("shadowing.pole_distance_m", "must be a positive distance in metres, like 2");
    }
    Ok(())
}

fn validate_measured(m: &MeasuredSnr, key: &str) -> Result<(), ConfigError> {
    let shape_ok =
        |rows: &Vec<Vec<f64>>, width: usize| rows.iter().all(|r| r.len() == width && r.iter().all(|v| v.is_finite()));
    let width = m.snr_db.first().map_or(0, Vec::len);
    if width == 0 {
        return Err(ConfigError::new(&format!("{key}.snr_db"), "needs at least one slot of at least one sub-channel"));
    }
    if !shape_ok(&m.snr_db, width) {
        return Err(ConfigError::new(
            &format!("{key}.snr_db"),
            "every slot needs the same number of sub-channels, each a finite SNR in dB",
        ));
    }
    if let Some(p) = &m.predicted_snr_db
        && (p.len() != m.snr_db.len() || !shape_ok(p, width))
    {
        return Err(ConfigError::new(
            &format!("{key}.predicted_snr_db"),
            "must have the shape of snr_db (slots × sub-channels), finite dB values",
        ));
    }
    Ok(())
}

impl crate::keys::Distributions for RadioConfig {}
