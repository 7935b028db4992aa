//! Residual bit errors: a frame still in error after the last
//! retransmission is delivered with bit errors "calculated from the channel
//! data" (seed 002 §II.C).
//!
//! Given that the frame was in error, the erroneous symbols are drawn from
//! the binomial distribution of N symbols with error probability SER,
//! conditioned on at least one error: the first erroneous symbol from a
//! geometric law truncated to the frame, the later ones independently.
//! Each erroneous symbol flips one of its log2(M) bits (Gray mapping: a
//! symbol error is almost always to a neighbour, one bit away). Errors in
//! the padding after a packet's last bit change nothing.

use super::modulation::frame_error_from_ser;
use crate::dist::unit;
use crate::packet::Packet;
use crate::rng::StreamRng;

/// The frame's place in its packet and how it was sent.
#[derive(Clone, Copy, Debug)]
pub struct FrameBits {
    /// First packet bit the frame carries (0 = most significant bit of the
    /// first byte).
    pub first_bit: u64,
    /// Packet bits the frame carries (the rest of the frame is padding).
    pub bits: u32,
    pub bits_per_symbol: u32,
    pub symbols: u32,
}

/// Flips the packet bits hit by symbol errors at rate `ser`, given at least
/// one; returns how many bits were flipped.
pub fn apply_symbol_errors(packet: &mut Packet, frame: FrameBits, ser: f64, rng: &mut StreamRng) -> u32 {
    let n = frame.symbols;
    if n == 0 || ser <= 0.0 {
        return 0;
    }
    let first = if ser >= 1.0 {
        0
    } else {
        // P(J = j) ∝ (1 − s)^j·s for j < N: inverse of the truncated CDF.
        let f = frame_error_from_ser(ser, n);
        let j = (f64::ln_1p(-unit(rng) * f) / f64::ln_1p(-ser)).floor();
        if j.is_finite() { (j.max(0.0) as u32).min(n - 1) } else { 0 }
    };
    let mut flipped = 0;
    let mut hit = |symbol: u32, rng: &mut StreamRng| {
        let k = frame.bits_per_symbol as u64;
        let offset = symbol as u64 * k + ((unit(rng) * k as f64) as u64).min(k - 1);
        if offset < frame.bits as u64 {
            packet.flip_bit(frame.first_bit + offset);
            flipped += 1;
        }
    };
    hit(first, rng);
    for symbol in first + 1..n {
        if unit(rng) < ser {
            hit(symbol, rng);
        }
    }
    flipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowKey, PacketId, Protocol};
    use crate::rng::stream;
    use std::net::Ipv4Addr;

    fn packet(bytes: usize) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: Ipv4Addr::LOCALHOST.into(),
            dst: Ipv4Addr::LOCALHOST.into(),
            src_port: 1,
            dst_port: 2,
        };
        let mut p = Packet::new(PacketId(1), bytes as u32, flow);
        p.payload = Some(vec![0; bytes].into());
        p
    }

    #[test]
    fn errors_stay_inside_the_frame_and_there_is_at_least_one() {
        let mut rng = stream(1, "residual");
        for _ in 0..1000 {
            let mut p = packet(100);
            let frame = FrameBits { first_bit: 216, bits: 216, bits_per_symbol: 2, symbols: 108 };
            let n = apply_symbol_errors(&mut p, frame, 1e-4, &mut rng);
            let bytes = p.payload.as_ref().unwrap().bytes();
            let ones: u32 = bytes.iter().map(|b| b.count_ones()).sum();
            assert!(n >= 1 && ones == n, "flipped {n}, ones {ones}");
            assert!(bytes[..27].iter().all(|&b| b == 0) && bytes[54..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn conditional_error_count_matches_theory() {
        // E[errors | ≥ 1] = N·s / (1 − (1 − s)^N).
        let (n, s) = (108u32, 0.02);
        let mut rng = stream(2, "residual");
        let trials = 20_000;
        let mut total = 0u64;
        for _ in 0..trials {
            let mut p = packet(14);
            total += apply_symbol_errors(
                &mut p,
                FrameBits { first_bit: 0, bits: 108, bits_per_symbol: 1, symbols: n },
                s,
                &mut rng,
            ) as u64;
        }
        let want = n as f64 * s / frame_error_from_ser(s, n);
        let got = total as f64 / trials as f64;
        assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
    }
}
