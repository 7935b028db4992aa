#![no_main]
//! Fuzz target: the `mahimahi_trace` surface of squall-inputs.

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::MahimahiTrace.feed(data);
});
