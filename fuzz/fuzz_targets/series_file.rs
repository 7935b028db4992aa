#![no_main]
//! Fuzz target: the `series_file` surface of squall-inputs.

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::SeriesFile.feed(data);
});
