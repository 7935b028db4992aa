//! Feeds files through a surface, as the fuzz target and the regression
//! test do, and prints the outcome and the time it took:
//!
//!     cargo run --release -p squall-inputs --example feed -- SURFACE FILE...

use squall_inputs::Surface;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_default();
    let Some(surface) = Surface::from_name(&name) else {
        eprintln!("usage: feed SURFACE FILE... (surfaces: {:?})", Surface::ALL.map(Surface::name));
        std::process::exit(2);
    };
    for file in args {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let started = std::time::Instant::now();
        let outcome = surface.feed(&data);
        println!(
            "{file}: {:?} in {:.3} s",
            outcome.map_err(|e| e.lines().next().unwrap_or("").to_string()),
            started.elapsed().as_secs_f64()
        );
    }
}
