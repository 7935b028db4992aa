//! Writes a measured-SNR file (squall-scenario's `snr_file` format) from
//! the model's fading channel: what channel sounding of that channel would
//! record. `scenarios/traces/tu-75kmh-16db.csv` was made with
//!
//! ```sh
//! cargo run --release -p squall-scenario --example snr_trace -- \
//!     --seed 2 --slots 3000 --sub-channels 4 --mean-snr-db 16 \
//!     > scenarios/traces/tu-75kmh-16db.csv
//! ```
//!
//! Options: `--seed N` (replication seed, default 1), `--slots N` (default
//! 1500, one second), `--sub-channels N` (default 25), `--mean-snr-db X`
//! (default 16), `--speed "75 km/h"`, `--predicted FILE` with
//! `--nmse X` to write the predicted channel too. The rest is seed 002's
//! channel: 12-tap typical urban, 1900 MHz, 200 kHz sub-channels, AR(1)
//! shadowing σ 4 dB with pole 0.74 per 2 m, 1500 slots per second.

use std::process::ExitCode;

use squall_link::radio::FadingConfig;
use squall_scenario::snr_file::{fading_trace, write_snr_csv};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("snr_trace: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut config = FadingConfig::default();
    let (mut seed, mut slots, mut nmse, mut predicted_file) = (1u64, 1500u64, 0.0f64, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let bad = |v: &str| format!("{flag}: cannot read {v:?}");
        match flag.as_str() {
            "--seed" => seed = value()?.parse().map_err(|_| bad("seed"))?,
            "--slots" => slots = value()?.parse().map_err(|_| bad("slots"))?,
            "--sub-channels" => config.sub_channels = value()?.parse().map_err(|_| bad("sub-channels"))?,
            "--mean-snr-db" => config.mean_snr_db = value()?.parse().map_err(|_| bad("mean-snr-db"))?,
            "--speed" => config.speed = value()?.parse().map_err(|e| format!("{flag}: {e}"))?,
            "--nmse" => nmse = value()?.parse().map_err(|_| bad("nmse"))?,
            "--predicted" => predicted_file = Some(value()?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let (snr, predicted) = fading_trace(&config, 1500, nmse, seed, slots);
    let about = |what: &str| {
        format!(
            "{what} of squall's fading channel (seed 002): {} sub-channels of 200 kHz at 1900 MHz,\n\
             {}, {} dB mean SNR, 12-tap typical urban, AR(1) shadowing 4 dB / 0.74 per 2 m,\n\
             1500 slots/s, {slots} slots, seed {seed}. One line per slot, one SNR (Es/N0, dB)\n\
             per sub-channel. Made by:\n  cargo run --release -p squall-scenario --example snr_trace -- \
             --seed {seed} --slots {slots} --sub-channels {} --mean-snr-db {}",
            config.sub_channels, config.speed, config.mean_snr_db, config.sub_channels, config.mean_snr_db
        )
    };
    print!("{}", write_snr_csv(&about("True SNR"), &snr, 2));
    if let Some(file) = predicted_file {
        let text = write_snr_csv(&about(&format!("Predicted SNR (NMSE {nmse})")), &predicted, 2);
        std::fs::write(&file, text).map_err(|e| format!("cannot write {file}: {e}"))?;
    }
    Ok(())
}
