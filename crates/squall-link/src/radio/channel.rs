//! The channel data the link consults (seed 002 §II.C: "an array of SNR
//! sample values, one per bin"): for every slot and sub-channel the true SNR,
//! which decides errors, and the predicted SNR, which chooses the
//! modulation and the sub-channel.
//!
//! Two sources: a generated channel (Rayleigh fading over a tapped delay
//! line, scaled to a mean SNR, plus AR(1) shadowing; [`FadingConfig`]) or
//! measured SNR given as data ([`MeasuredSnr`]; the scenario loader reads the
//! file, this crate only sees the numbers).

use serde::{Deserialize, Serialize};

use super::fading::{Tap, TappedDelayLine, max_doppler_hz, typical_urban};
use super::math::{Complex, db_to_linear, linear_to_db};
use super::prediction::Predictor;
use super::shadow::{Shadowing, ShadowingConfig};
use super::units::{Frequency, Speed};
use crate::rng::StreamRng;

/// Where a radio link's SNR comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChannelConfig {
    Fading(FadingConfig),
    Measured(MeasuredSnr),
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig::Fading(FadingConfig::default())
    }
}

/// A generated channel. Defaults are seed 002 §III.A and Table I: 25
/// sub-channels of 200 kHz, 1900 MHz, 75 km/h, 16 dB mean SNR, 12-tap
/// typical urban, AR(1) shadowing with σ 4 dB and pole 0.74 per 2 m.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FadingConfig {
    #[serde(default = "FadingConfig::default_sub_channels")]
    pub sub_channels: u32,
    #[serde(default = "FadingConfig::default_sub_channel_width")]
    pub sub_channel_width: Frequency,
    #[serde(default = "FadingConfig::default_carrier")]
    pub carrier: Frequency,
    #[serde(default = "FadingConfig::default_speed")]
    pub speed: Speed,
    /// Mean SNR per symbol over the fast fading, dB, with the shadow term
    /// at 0 dB (seed 002: 16).
    #[serde(default = "FadingConfig::default_mean_snr_db")]
    pub mean_snr_db: f64,
    /// Power-delay profile; powers are normalised to sum to one.
    #[serde(default = "typical_urban")]
    pub taps: Vec<Tap>,
    /// Sinusoids per tap in the sum-of-sinusoids generator.
    #[serde(default = "FadingConfig::default_sinusoids")]
    pub sinusoids: u32,
    #[serde(default)]
    pub shadowing: ShadowingConfig,
}

impl FadingConfig {
    fn default_sub_channels() -> u32 {
        25
    }
    fn default_sub_channel_width() -> Frequency {
        Frequency::from_hz(200e3)
    }
    fn default_carrier() -> Frequency {
        Frequency::from_hz(1.9e9)
    }
    fn default_speed() -> Speed {
        Speed::from_km_per_hour(75.0)
    }
    fn default_mean_snr_db() -> f64 {
        16.0
    }
    fn default_sinusoids() -> u32 {
        16
    }

    /// Maximum Doppler shift, Hz.
    pub fn doppler_hz(&self) -> f64 {
        max_doppler_hz(self.speed.meters_per_sec(), self.carrier.hz())
    }

    /// Centre frequency of each sub-channel relative to the carrier, Hz.
    pub fn sub_channel_offsets_hz(&self) -> Vec<f64> {
        let n = self.sub_channels as f64;
        (0..self.sub_channels).map(|c| (c as f64 - (n - 1.0) / 2.0) * self.sub_channel_width.hz()).collect()
    }
}

impl Default for FadingConfig {
    fn default() -> Self {
        FadingConfig {
            sub_channels: Self::default_sub_channels(),
            sub_channel_width: Self::default_sub_channel_width(),
            carrier: Self::default_carrier(),
            speed: Self::default_speed(),
            mean_snr_db: Self::default_mean_snr_db(),
            taps: typical_urban(),
            sinusoids: Self::default_sinusoids(),
            shadowing: ShadowingConfig::default(),
        }
    }
}

/// Measured (or externally generated) SNR, dB, `snr_db[slot][sub_channel]`
/// (seed 002 §II.C: "an array of SNR sample values, one per bin", from
/// channel sounding, ray tracing or a model). The trace repeats when the
/// run outlasts it.
///
/// In a scenario the values are given inline (`snr_db = [[16.5, 12.0],
/// ...]`) or in a file the scenario loader reads ([`SnrFiles`]; the format
/// is described in squall-scenario's schema). This crate only sees the
/// numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredSnr {
    /// The file(s) the scenario loader read `snr_db` (and
    /// `predicted_snr_db`) from, relative to the scenario file; kept in a
    /// run's resolved scenario for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<SnrFiles>,
    #[serde(default)]
    pub snr_db: Vec<Vec<f64>>,
    /// The predicted channel, same shape. When absent it is made from
    /// `snr_db` with the link's prediction NMSE, taking each sample as a
    /// real gain √(γ/γ̄) (γ̄ the trace's mean linear SNR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_snr_db: Option<Vec<Vec<f64>>>,
}

impl MeasuredSnr {
    /// Mean linear SNR of the trace, in dB (what a state's
    /// `channel.mean_snr_db` sets); `None` for an empty trace.
    pub fn mean_snr_db(&self) -> Option<f64> {
        let count = self.snr_db.iter().map(Vec::len).sum::<usize>();
        if count == 0 {
            return None;
        }
        let mean = self.snr_db.iter().flatten().map(|&db| db_to_linear(db)).sum::<f64>() / count as f64;
        Some(linear_to_db(mean))
    }

    /// Shifts every sample, true and predicted, by the same number of dB so
    /// that the trace's mean linear SNR becomes `mean_db`: the fading stays,
    /// its level changes (a state's `channel.mean_snr_db` on a measured
    /// channel).
    pub fn shift_mean_to(&mut self, mean_db: f64) {
        let Some(current) = self.mean_snr_db() else { return };
        let offset = mean_db - current;
        let shift = |rows: &mut Vec<Vec<f64>>| rows.iter_mut().flatten().for_each(|db| *db += offset);
        shift(&mut self.snr_db);
        if let Some(p) = self.predicted_snr_db.as_mut() {
            shift(p);
        }
    }
}

/// The files a measured channel is read from, relative to the scenario
/// file: `file = "traces/snr.csv"`, or with a predicted channel of the same
/// shape `file = { snr = "traces/snr.csv", predicted = "traces/snr-predicted.csv" }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnrFiles {
    /// The true SNR per slot and sub-channel.
    pub snr: String,
    /// The predicted SNR, same slots and sub-channels.
    pub predicted: Option<String>,
}

impl SnrFiles {
    pub fn new(snr: &str) -> Self {
        SnrFiles { snr: snr.to_string(), predicted: None }
    }
}

/// The table form of [`SnrFiles`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnrFilesTable {
    snr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    predicted: Option<String>,
}

impl Serialize for SnrFiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.predicted {
            None => s.serialize_str(&self.snr),
            Some(p) => SnrFilesTable { snr: self.snr.clone(), predicted: Some(p.clone()) }.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SnrFiles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Files;
        impl<'de> serde::de::Visitor<'de> for Files {
            type Value = SnrFiles;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a file name like \"traces/snr.csv\", or { snr = \"traces/snr.csv\", predicted = \"traces/snr-predicted.csv\" }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SnrFiles, E> {
                Ok(SnrFiles::new(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<SnrFiles, A::Error> {
                let t = SnrFilesTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(SnrFiles { snr: t.snr, predicted: t.predicted })
            }
        }
        d.deserialize_any(Files)
    }
}

/// The channel in one slot, all SNRs linear (Es/N0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlotChannel {
    pub slot: u64,
    /// True SNR per sub-channel: decides frame errors.
    pub snr: Vec<f64>,
    /// Predicted SNR per sub-channel: chooses sub-channel and modulation.
    pub predicted: Vec<f64>,
    /// Local mean SNR (mean SNR times the shadow term): the scale that
    /// imperfect-prediction switching levels are designed for.
    pub local_mean: f64,
}

/// A generated channel in slots.
#[derive(Clone, Debug)]
pub struct FadingChannel {
    delay_line: TappedDelayLine,
    shadowing: Shadowing,
    predictor: Predictor,
    mean_snr: f64,
    slot_secs: f64,
    gains: Vec<Complex>,
    scratch: Vec<Complex>,
}

impl FadingChannel {
    /// `config` must have passed validation. `fading` and `shadow` are the
    /// streams of the two processes.
    pub fn new(
        config: &FadingConfig,
        slots_per_second: u32,
        predictor: Predictor,
        mut fading: StreamRng,
        shadow: StreamRng,
    ) -> Self {
        let sps = slots_per_second as f64;
        let step_m = config.speed.meters_per_sec() / sps;
        FadingChannel {
            delay_line: TappedDelayLine::new(
                &config.taps,
                &config.sub_channel_offsets_hz(),
                config.sinusoids as usize,
                config.doppler_hz(),
                &mut fading,
            ),
            shadowing: Shadowing::new(&config.shadowing, step_m, shadow),
            predictor,
            mean_snr: db_to_linear(config.mean_snr_db),
            slot_secs: 1.0 / sps,
            gains: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Sets the mean SNR, dB, from the next slot on (a state change): the
    /// fading and shadowing processes go on unchanged, only their scale
    /// moves.
    pub fn set_mean_snr_db(&mut self, mean_snr_db: f64) {
        self.mean_snr = db_to_linear(mean_snr_db);
    }

    pub fn delay_line(&self) -> &TappedDelayLine {
        &self.delay_line
    }

    /// The per-slot pole of the shadow process.
    pub fn shadow_pole(&self) -> f64 {
        self.shadowing.pole()
    }

    /// The shadow term of `slot`, dB (slots in non-decreasing order).
    pub fn shadow_db(&mut self, slot: u64) -> f64 {
        self.shadowing.at(slot)
    }

    /// Unit-power complex gains H_c of every sub-channel in `slot`,
    /// evaluated at the slot's centre.
    pub fn gains(&mut self, slot: u64) -> &[Complex] {
        let t = (slot as f64 + 0.5) * self.slot_secs;
        self.delay_line.frequency_response(t, &mut self.scratch, &mut self.gains);
        &self.gains
    }

    /// Fills `out` with slot `slot` (slots in non-decreasing order).
    pub fn slot(&mut self, slot: u64, out: &mut SlotChannel) {
        let local_mean = self.mean_snr * db_to_linear(self.shadowing.at(slot));
        let t = (slot as f64 + 0.5) * self.slot_secs;
        self.delay_line.frequency_response(t, &mut self.scratch, &mut self.gains);
        let mut rng = self.predictor.slot_rng(slot);
        out.slot = slot;
        out.local_mean = local_mean;
        out.snr.clear();
        out.predicted.clear();
        for h in &self.gains {
            out.snr.push(local_mean * h.norm_sqr());
            out.predicted.push(local_mean * self.predictor.predict(*h, &mut rng).norm_sqr());
        }
    }
}

/// A measured channel in slots.
#[derive(Clone, Debug)]
pub struct MeasuredChannel {
    snr: Vec<Vec<f64>>,
    predicted: Option<Vec<Vec<f64>>>,
    mean: f64,
    predictor: Predictor,
}

impl MeasuredChannel {
    /// `data` must have passed validation (non-empty, rectangular, finite).
    pub fn new(data: &MeasuredSnr, predictor: Predictor) -> Self {
        let to_linear = |rows: &Vec<Vec<f64>>| -> Vec<Vec<f64>> {
            rows.iter().map(|r| r.iter().map(|&db| db_to_linear(db)).collect()).collect()
        };
        let snr = to_linear(&data.snr_db);
        let count = snr.iter().map(Vec::len).sum::<usize>().max(1);
        let mean = snr.iter().flatten().sum::<f64>() / count as f64;
        MeasuredChannel { predicted: data.predicted_snr_db.as_ref().map(to_linear), snr, mean, predictor }
    }

    /// Mean linear SNR of the trace, and in dB.
    pub fn mean_snr(&self) -> (f64, f64) {
        (self.mean, linear_to_db(self.mean))
    }

    /// The predictor of the predicted channel when the trace has none.
    pub fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    pub fn slot(&mut self, slot: u64, out: &mut SlotChannel) {
        let row = (slot % self.snr.len() as u64) as usize;
        out.slot = slot;
        out.local_mean = self.mean;
        out.snr.clear();
        out.snr.extend_from_slice(&self.snr[row]);
        out.predicted.clear();
        match &self.predicted {
            Some(p) => out.predicted.extend_from_slice(&p[row]),
            None => {
                let mut rng = self.predictor.slot_rng(slot);
                for &g in &self.snr[row] {
                    let h = Complex::new((g / self.mean).sqrt(), 0.0);
                    out.predicted.push(self.mean * self.predictor.predict(h, &mut rng).norm_sqr());
                }
            }
        }
    }
}

/// Either kind of channel.
#[derive(Clone, Debug)]
pub enum Channel {
    Fading(Box<FadingChannel>),
    Measured(MeasuredChannel),
}

impl Channel {
    pub fn slot(&mut self, slot: u64, out: &mut SlotChannel) {
        match self {
            Channel::Fading(c) => c.slot(slot, out),
            Channel::Measured(c) => c.slot(slot, out),
        }
    }

    /// The predictor that makes the predicted channel (for a measured
    /// trace with its own predicted SNR, unused).
    pub fn predictor(&self) -> &Predictor {
        match self {
            Channel::Fading(c) => &c.predictor,
            Channel::Measured(c) => &c.predictor,
        }
    }

    /// Replaces the predictor from the next slot on (a state changing the
    /// prediction NMSE).
    pub fn set_predictor(&mut self, predictor: Predictor) {
        match self {
            Channel::Fading(c) => c.predictor = predictor,
            Channel::Measured(c) => c.predictor = predictor,
        }
    }
}
