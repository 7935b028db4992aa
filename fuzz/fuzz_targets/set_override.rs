#![no_main]
//! Fuzz target: the `set_override` surface of squall-inputs.

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::SetOverride.feed(data);
});
