//! LL packet formats: LL16 = `{data1, flag1, data2, flag2}` (8 payload bytes in 16),
//! LL8 = `{data, flag}` (4 payload bytes in 8).

use serde::Serialize;

/// The packet format a launch uses (an `execute()` argument, not part of the plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub enum PacketFormat {
    /// 16-byte packets with 8 payload bytes.
    #[default]
    #[serde(rename = "LL16")]
    Ll16,
    /// 8-byte packets with 4 payload bytes.
    #[serde(rename = "LL8")]
    Ll8,
}

impl PacketFormat {
    /// Payload bytes per packet.
    pub fn payload(self) -> usize {
        match self {
            PacketFormat::Ll16 => 8,
            PacketFormat::Ll8 => 4,
        }
    }
    /// The name used by MSCCL++.
    pub fn as_str(self) -> &'static str {
        match self {
            PacketFormat::Ll16 => "LL16",
            PacketFormat::Ll8 => "LL8",
        }
    }
}

impl std::str::FromStr for PacketFormat {
    type Err = crate::ParseError;
    fn from_str(s: &str) -> Result<Self, crate::ParseError> {
        match s.to_ascii_uppercase().as_str() {
            "LL16" => Ok(PacketFormat::Ll16),
            "LL8" => Ok(PacketFormat::Ll8),
            _ => Err(crate::ParseError::Unknown {
                what: "packet format",
                input: s.to_string(),
                expected: "LL16 or LL8".into(),
            }),
        }
    }
}

impl std::fmt::Display for PacketFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Writes `payload` as packets carrying `flag` into `raw` (twice the payload's length).
pub(crate) fn write(fmt: PacketFormat, raw: &mut [u8], payload: &[u8], flag: u32) {
    let f = flag.to_le_bytes();
    let p = fmt.payload();
    let full = (payload.len() / p).min(raw.len() / (2 * p));
    let (head, tail) = payload.split_at(full * p);
    match fmt {
        PacketFormat::Ll16 => {
            for (pkt, d) in raw.chunks_exact_mut(16).zip(head.chunks_exact(8)) {
                pkt[0..4].copy_from_slice(&d[0..4]);
                pkt[4..8].copy_from_slice(&f);
                pkt[8..12].copy_from_slice(&d[4..8]);
                pkt[12..16].copy_from_slice(&f);
            }
        }
        PacketFormat::Ll8 => {
            for (pkt, d) in raw.chunks_exact_mut(8).zip(head.chunks_exact(4)) {
                pkt[0..4].copy_from_slice(d);
                pkt[4..8].copy_from_slice(&f);
            }
        }
    }
    if !tail.is_empty() {
        let mut d = vec![0u8; p];
        d[..tail.len()].copy_from_slice(tail);
        let mut pkt = vec![0u8; 2 * p];
        write(fmt, &mut pkt, &d, flag);
        let at = full * 2 * p;
        let n = pkt.len().min(raw.len().saturating_sub(at));
        raw[at..at + n].copy_from_slice(&pkt[..n]);
    }
}

/// Whether `raw` already holds exactly the packets [`write`] would produce.
pub(crate) fn holds(fmt: PacketFormat, raw: &[u8], payload: &[u8], flag: u32) -> bool {
    let f = flag.to_le_bytes();
    let p = fmt.payload();
    if payload.len().is_multiple_of(p) && raw.len() == 2 * payload.len() {
        return match fmt {
            PacketFormat::Ll16 => raw
                .chunks_exact(16)
                .zip(payload.chunks_exact(8))
                .all(|(pkt, d)| pkt[0..4] == d[0..4] && pkt[4..8] == f && pkt[8..12] == d[4..8] && pkt[12..16] == f),
            PacketFormat::Ll8 => {
                raw.chunks_exact(8).zip(payload.chunks_exact(4)).all(|(pkt, d)| pkt[0..4] == *d && pkt[4..8] == f)
            }
        };
    }
    match fmt {
        PacketFormat::Ll16 => raw.chunks(16).zip(payload.chunks(8)).all(|(pkt, data)| {
            let mut d = [0u8; 8];
            d[..data.len()].copy_from_slice(data);
            pkt.len() == 16 && pkt[0..4] == d[0..4] && pkt[4..8] == f && pkt[8..12] == d[4..8] && pkt[12..16] == f
        }),
        PacketFormat::Ll8 => raw.chunks(8).zip(payload.chunks(4)).all(|(pkt, data)| {
            let mut d = [0u8; 4];
            d[..data.len()].copy_from_slice(data);
            pkt.len() == 8 && pkt[0..4] == d && pkt[4..8] == f
        }),
    }
}

/// The first packet of `raw` whose flag is not `flag`, with the flag it holds.
///
/// Hot in the verifier (every readiness check of an LL operation scans its packets): blocks of packets are first
/// folded without branches (the compiler vectorizes the fold), and only a block holding a stale flag is searched.
pub(crate) fn first_stale(fmt: PacketFormat, raw: &[u8], flag: u32) -> Option<(usize, u32)> {
    const BLOCK: usize = 32;
    let word = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let size = 2 * fmt.payload();
    // Flags at these offsets of each packet.
    let offsets: &[usize] = match fmt {
        PacketFormat::Ll16 => &[4, 12],
        PacketFormat::Ll8 => &[4],
    };
    let stale_in = |pkt: &[u8]| offsets.iter().map(|&o| word(pkt, o)).find(|&w| w != flag);
    for (b, block) in raw.chunks(BLOCK * size).enumerate() {
        let whole = block.len() / size * size;
        let folded = match fmt {
            PacketFormat::Ll16 => {
                block[..whole].chunks_exact(16).fold(0u32, |acc, p| acc | (word(p, 4) ^ flag) | (word(p, 12) ^ flag))
            }
            PacketFormat::Ll8 => block[..whole].chunks_exact(8).fold(0u32, |acc, p| acc | (word(p, 4) ^ flag)),
        };
        if folded != 0 {
            for (i, p) in block[..whole].chunks_exact(size).enumerate() {
                if let Some(w) = stale_in(p) {
                    return Some((b * BLOCK + i, w));
                }
            }
        }
    }
    None
}

/// Extracts the payload of the packets in `raw` into `out` (half of `raw`'s length).
pub(crate) fn read(fmt: PacketFormat, raw: &[u8], out: &mut [u8]) {
    let p = fmt.payload();
    let full = (out.len() / p).min(raw.len() / (2 * p));
    let (head, tail) = out.split_at_mut(full * p);
    match fmt {
        PacketFormat::Ll16 => {
            for (pkt, d) in raw.chunks_exact(16).zip(head.chunks_exact_mut(8)) {
                d[0..4].copy_from_slice(&pkt[0..4]);
                d[4..8].copy_from_slice(&pkt[8..12]);
            }
        }
        PacketFormat::Ll8 => {
            for (pkt, d) in raw.chunks_exact(8).zip(head.chunks_exact_mut(4)) {
                d.copy_from_slice(&pkt[0..4]);
            }
        }
    }
    if !tail.is_empty() {
        let at = full * 2 * p;
        if let Some(pkt) = raw.get(at..at + 2 * p) {
            let mut d = vec![0u8; p];
            read(fmt, pkt, &mut d);
            let n = tail.len();
            tail.copy_from_slice(&d[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_stale_finds_the_first_old_flag_past_a_block() {
        for fmt in [PacketFormat::Ll16, PacketFormat::Ll8] {
            let payload: Vec<u8> = (0..100 * fmt.payload()).map(|i| i as u8).collect();
            let mut raw = vec![0u8; 2 * payload.len()];
            write(fmt, &mut raw, &payload, 7);
            assert_eq!(first_stale(fmt, &raw, 7), None);
            // Packet 70 (third block) gets an old flag in its last flag word.
            let size = 2 * fmt.payload();
            let at = 70 * size + size - 4;
            raw[at..at + 4].copy_from_slice(&6u32.to_le_bytes());
            assert_eq!(first_stale(fmt, &raw, 7), Some((70, 6)));
            // An earlier one wins.
            raw[3 * size + 4..3 * size + 8].copy_from_slice(&5u32.to_le_bytes());
            assert_eq!(first_stale(fmt, &raw, 7), Some((3, 5)));
        }
    }

    #[test]
    fn round_trip() {
        for fmt in [PacketFormat::Ll16, PacketFormat::Ll8] {
            let payload: Vec<u8> = (0..32).collect();
            let mut raw = vec![0u8; 64];
            write(fmt, &mut raw, &payload, 5);
            assert_eq!(first_stale(fmt, &raw, 5), None);
            assert!(first_stale(fmt, &raw, 6).is_some());
            let mut back = vec![0u8; 32];
            read(fmt, &raw, &mut back);
            assert_eq!(back, payload);
        }
    }
}
