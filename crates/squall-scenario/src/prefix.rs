//! IPv4 and IPv6 networks as a scenario writes them (`prefix =
//! "10.1.0.0/16"`, `prefix6 = "fd00:1::/64"`: a host group's addresses,
//! [`crate::pattern`]).

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

/// An IPv4 network, written `"10.1.0.0/16"` (RFC 4632 §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Prefix {
    pub address: Ipv4Addr,
    pub len: u8,
}

impl Ipv4Prefix {
    /// Addresses for hosts: all but the network and broadcast addresses
    /// (none for a /31 or /32 here).
    pub fn host_addresses(self) -> u64 {
        (1u64 << (32 - u32::from(self.len))).saturating_sub(2)
    }

    fn network(self) -> u32 {
        let mask = if self.len == 0 { 0 } else { u32::MAX << (32 - u32::from(self.len)) };
        u32::from(self.address) & mask
    }

    /// Host `k`'s address: the network's + 1 + k.
    pub fn host(self, k: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.network().wrapping_add(1).wrapping_add(k))
    }
}

impl std::fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.len)
    }
}

impl std::str::FromStr for Ipv4Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not an IPv4 network; write its address and length, like \"10.1.0.0/16\"");
        let (address, len) = s.split_once('/').ok_or_else(bad)?;
        let address: Ipv4Addr = address.trim().parse().map_err(|_| bad())?;
        let len: u8 = len.trim().parse().map_err(|_| bad())?;
        if len > 32 {
            return Err(bad());
        }
        let prefix = Ipv4Prefix { address, len };
        if u32::from(address) != prefix.network() {
            return Err(format!("`{s}` has host bits set: the network is {}/{len}", Ipv4Addr::from(prefix.network())));
        }
        Ok(prefix)
    }
}

impl Serialize for Ipv4Prefix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ipv4Prefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An IPv6 network, written `"fd00:1::/64"` (RFC 4291 §2.3), a host
/// group's IPv6 addresses (`prefix6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Prefix {
    pub address: Ipv6Addr,
    pub len: u8,
}

impl Ipv6Prefix {
    /// Addresses for hosts: all but the network's own, which is the
    /// subnet-router anycast address (RFC 4291 §2.6.1); IPv6 has no
    /// broadcast address.
    pub fn host_addresses(self) -> u128 {
        match self.len {
            0 => u128::MAX,
            len => (1u128 << (128 - u32::from(len))) - 1,
        }
    }

    fn network(self) -> u128 {
        let mask = if self.len == 0 { 0 } else { u128::MAX << (128 - u32::from(self.len)) };
        u128::from(self.address) & mask
    }

    /// Host `k`'s address: the network's + 1 + k.
    pub fn host(self, k: u32) -> Ipv6Addr {
        Ipv6Addr::from(self.network().wrapping_add(1).wrapping_add(u128::from(k)))
    }
}

impl std::fmt::Display for Ipv6Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.len)
    }
}

impl std::str::FromStr for Ipv6Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not an IPv6 network; write its address and length, like \"fd00:1::/64\"");
        let (address, len) = s.split_once('/').ok_or_else(bad)?;
        let address: Ipv6Addr = address.trim().parse().map_err(|_| bad())?;
        let len: u8 = len.trim().parse().map_err(|_| bad())?;
        if len > 128 {
            return Err(bad());
        }
        let prefix = Ipv6Prefix { address, len };
        if u128::from(address) != prefix.network() {
            return Err(format!("`{s}` has host bits set: the network is {}/{len}", Ipv6Addr::from(prefix.network())));
        }
        if address.is_multicast() {
            return Err(format!("`{s}` is a multicast network (ff00::/8); give a unicast one, like \"fd00:1::/64\""));
        }
        Ok(prefix)
    }
}

impl Serialize for Ipv6Prefix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ipv6Prefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
