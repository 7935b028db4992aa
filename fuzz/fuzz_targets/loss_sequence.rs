#![no_main]
//! Fuzz target: the `loss_sequence` surface of squall-inputs (files of
//! per-packet loss decisions).

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::LossSequence.feed(data);
});
