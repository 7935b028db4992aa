#![no_main]
//! Fuzz target: the `flow_cdf` surface of squall-inputs (flow-size CDF
//! files, `SIZE CDF` a line).

use libfuzzer_sys::fuzz_target;
use squall_inputs::Surface;

fuzz_target!(|data: &[u8]| {
    let _ = Surface::FlowCdf.feed(data);
});
