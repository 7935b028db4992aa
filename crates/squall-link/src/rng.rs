//! Random streams. Every component draws from its own generator, seeded
//! from the replication seed and the component's stable name, so adding a
//! component never shifts another's stream (docs/design.md, "Determinism").

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The generator every component uses: small, fast and with a fixed
/// algorithm, so a seed gives the same numbers on every machine and release.
pub type StreamRng = Xoshiro256PlusPlus;

/// 64-bit FNV-1a: a stable hash of a component's name (std's hasher may
/// change between Rust releases).
fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The generator of the component `name` (e.g. "downlink/gsm/error") in the
/// replication with seed `seed`.
pub fn stream(seed: u64, name: &str) -> StreamRng {
    // SplitMix64 finaliser over seed and name, then the generator's own
    // seeding expands it to 256 bits.
    let mut z = seed ^ fnv1a(name).rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    StreamRng::seed_from_u64(z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_stable_and_independent_by_name() {
        let a1 = stream(7, "downlink/a/error").next_u64();
        let a2 = stream(7, "downlink/a/error").next_u64();
        let b = stream(7, "downlink/b/error").next_u64();
        let a_other_seed = stream(8, "downlink/a/error").next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, a_other_seed);
    }
}
