#![no_main]
//! Fuzz target: the `scenario` surface of squall-inputs.

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::Scenario.feed(data);
});
