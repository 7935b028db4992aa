#![no_main]
//! Fuzz target: the `maketable_samples` surface of squall-inputs (the
//! samples `squall trace maketable` reads, and the table it builds).

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::MaketableSamples.feed(data);
});
