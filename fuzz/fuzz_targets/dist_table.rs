#![no_main]
//! Fuzz target: the `dist_table` surface of squall-inputs (netem's `.dist`
//! distribution tables).

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::DistTable.feed(data);
});
