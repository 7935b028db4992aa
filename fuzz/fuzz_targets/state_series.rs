#![no_main]
//! Fuzz target: the `state_series` surface of squall-inputs (state
//! series files).

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::StateSeries.feed(data);
});
