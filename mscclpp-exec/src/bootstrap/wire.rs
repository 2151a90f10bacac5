//! The TCP bootstrap's wire format, as pure functions over `Read`/`Write` so it can be tested and fuzzed without
//! sockets.
//!
//! Handshake (mutual: each side proves it holds the job secret without revealing it):
//! 1. listener → connector: `MAGIC` (8 bytes) + listener nonce (16 bytes);
//! 2. connector → listener: `MAGIC` + rank (u64 LE) + `MAC(secret, listener nonce, rank)` (32 bytes) + connector
//!    nonce (16 bytes);
//! 3. listener checks the MAC and the rank, then replies `OK` + `MAC(secret, connector nonce, LISTENER)`; on any
//!    failure it closes the connection without a reply.
//! 4. the connector checks the listener's MAC.
//!
//! Frames after the handshake: tag (u64 LE) + length (u64 LE) + payload. The payload is read in pieces, so a
//! length that the sender never backs with data costs no memory; lengths above the caller's bound are refused.

use std::io::{Read, Write};
use std::net::SocketAddr;

use mscclpp_lang::ParseError;

/// First bytes of every handshake message (protocol version 2: mutual authentication).
pub const MAGIC: &[u8; 8] = b"MSCLPPB2";
/// Length of a handshake nonce.
pub const NONCE_LEN: usize = 16;
/// Length of a handshake MAC (keyed BLAKE3).
pub const MAC_LEN: usize = 32;
/// Largest payload of a frame between authenticated ranks.
pub const MAX_FRAME: u64 = 1 << 31;
/// Largest payload of a rendezvous frame (one socket address as text).
pub const MAX_ADDRESS_FRAME: u64 = 256;
/// The "rank" the listener's proof is computed for (no real rank has it).
const LISTENER: u64 = u64::MAX;
/// Payload bytes read per step, so memory follows the bytes that really arrive.
const READ_STEP: u64 = 1 << 20;

/// Keyed MAC over the magic, a nonce and a rank.
pub fn mac(secret: &[u8; 32], nonce: &[u8], rank: u64) -> [u8; MAC_LEN] {
    let mut h = blake3::Hasher::new_keyed(secret);
    h.update(MAGIC);
    h.update(nonce);
    h.update(&rank.to_le_bytes());
    *h.finalize().as_bytes()
}

fn invalid(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.into())
}

fn denied(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, msg.into())
}

/// Writes one frame.
pub fn write_frame<W: Write>(w: &mut W, tag: u64, data: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&tag.to_le_bytes());
    head[8..].copy_from_slice(&(data.len() as u64).to_le_bytes());
    w.write_all(&head)?;
    w.write_all(data)
}

/// Reads one frame whose payload is at most `max` bytes. Errors: `InvalidData` naming the length and the bound
/// when it is larger, `UnexpectedEof` when the stream ends inside the frame.
pub fn read_frame<R: Read>(r: &mut R, max: u64) -> std::io::Result<(u64, Vec<u8>)> {
    let mut head = [0u8; 16];
    r.read_exact(&mut head)?;
    let (tag, len) = split_head(&head);
    if len > max {
        return Err(invalid(format!("frame of {len} bytes (tag {tag}) is over the bound of {max} bytes")));
    }
    let mut data = Vec::new();
    while (data.len() as u64) < len {
        let step = (len - data.len() as u64).min(READ_STEP);
        let before = data.len();
        r.by_ref().take(step).read_to_end(&mut data)?;
        if data.len() == before {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("frame (tag {tag}) ended after {before} of {len} payload bytes"),
            ));
        }
    }
    Ok((tag, data))
}

fn split_head(head: &[u8; 16]) -> (u64, u64) {
    let mut t = [0u8; 8];
    let mut l = [0u8; 8];
    t.copy_from_slice(&head[..8]);
    l.copy_from_slice(&head[8..]);
    (u64::from_le_bytes(t), u64::from_le_bytes(l))
}

/// Listener side of the handshake with a fresh `nonce`: returns the connector's rank once it proved it holds
/// `secret` and its rank is below `nranks`.
pub fn accept_handshake<S: Read + Write>(
    s: &mut S,
    secret: &[u8; 32],
    nranks: usize,
    nonce: &[u8; NONCE_LEN],
) -> std::io::Result<usize> {
    s.write_all(MAGIC)?;
    s.write_all(nonce)?;
    s.flush()?;
    let mut reply = [0u8; 8 + 8 + MAC_LEN + NONCE_LEN];
    s.read_exact(&mut reply)?;
    if &reply[..8] != MAGIC {
        return Err(invalid("the connector is not an mscclpp bootstrap peer of this version (bad magic)"));
    }
    let mut r = [0u8; 8];
    r.copy_from_slice(&reply[8..16]);
    let rank = u64::from_le_bytes(r);
    let expect = mac(secret, nonce, rank);
    if reply[16..16 + MAC_LEN] != expect[..] {
        return Err(denied("the connector does not hold the job secret (wrong MAC)"));
    }
    if rank >= nranks as u64 {
        return Err(invalid(format!("the connector claims rank {rank}, out of range for {nranks} ranks")));
    }
    let proof = mac(secret, &reply[16 + MAC_LEN..], LISTENER);
    s.write_all(b"OK")?;
    s.write_all(&proof)?;
    s.flush()?;
    Ok(rank as usize)
}

/// Connector side of the handshake as `rank` with a fresh `nonce`: fails unless the listener proves it holds
/// `secret`.
pub fn connect_handshake<S: Read + Write>(
    s: &mut S,
    secret: &[u8; 32],
    rank: usize,
    nonce: &[u8; NONCE_LEN],
) -> std::io::Result<()> {
    let mut hello = [0u8; 8 + NONCE_LEN];
    s.read_exact(&mut hello)?;
    if &hello[..8] != MAGIC {
        return Err(invalid("the listener is not an mscclpp bootstrap of this version (bad magic)"));
    }
    let mut reply = Vec::with_capacity(8 + 8 + MAC_LEN + NONCE_LEN);
    reply.extend_from_slice(MAGIC);
    reply.extend_from_slice(&(rank as u64).to_le_bytes());
    reply.extend_from_slice(&mac(secret, &hello[8..], rank as u64));
    reply.extend_from_slice(nonce);
    s.write_all(&reply)?;
    s.flush()?;
    let mut ok = [0u8; 2 + MAC_LEN];
    s.read_exact(&mut ok).map_err(|_| {
        denied("the listener closed the connection during the handshake: it does not share our job secret")
    })?;
    if &ok[..2] != b"OK" || ok[2..] != mac(secret, nonce, LISTENER)[..] {
        return Err(denied("the listener does not hold the job secret (wrong MAC): it is not this job's rank"));
    }
    Ok(())
}

/// Decodes a rank's listening address sent to the rendezvous.
pub fn parse_address(bytes: &[u8]) -> Result<SocketAddr, ParseError> {
    let lossy = || String::from_utf8_lossy(bytes).into_owned();
    let text = std::str::from_utf8(bytes).map_err(|_| ParseError::invalid(&lossy(), "the address is not UTF-8"))?;
    text.parse::<SocketAddr>()
        .map_err(|_| ParseError::invalid(text, format!("{text:?} is not a socket address (ip:port)")))
}

/// Decodes the rendezvous's address table (comma-separated socket addresses, one per rank).
pub fn parse_address_table(bytes: &[u8], nranks: usize) -> Result<Vec<SocketAddr>, ParseError> {
    let lossy = || String::from_utf8_lossy(bytes).into_owned();
    let text =
        std::str::from_utf8(bytes).map_err(|_| ParseError::invalid(&lossy(), "the address table is not UTF-8"))?;
    let mut out = Vec::with_capacity(nranks.min(1 << 16));
    for (i, a) in text.split(',').enumerate() {
        if i >= nranks {
            return Err(ParseError::invalid(text, format!("the address table has more than {nranks} entries")));
        }
        out.push(
            a.parse::<SocketAddr>()
                .map_err(|_| ParseError::invalid(text, format!("entry {i} ({a:?}) is not a socket address")))?,
        );
    }
    if out.len() != nranks {
        return Err(ParseError::invalid(
            text,
            format!("the address table has {} entries, expected {nranks}", out.len()),
        ));
    }
    Ok(out)
}

/// Largest address-table payload for `nranks` ranks (an IPv6 address with port fits in 48 bytes).
pub fn max_table_frame(nranks: usize) -> u64 {
    (nranks as u64).saturating_mul(48).saturating_add(MAX_ADDRESS_FRAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that reads from a fixed input and collects what is written.
    struct Pipe<'a> {
        input: &'a [u8],
        output: Vec<u8>,
    }
    impl Read for Pipe<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Pipe<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_frame_round_trips_and_a_lying_length_allocates_nothing_large() {
        let mut buf = Vec::new();
        write_frame(&mut buf, 7, b"hello").expect("write");
        assert_eq!(read_frame(&mut &buf[..], 16).expect("read"), (7, b"hello".to_vec()));
        // Claims 1 GiB, sends 3 bytes: an end-of-stream error, not a 1 GiB buffer.
        let mut lie = Vec::new();
        lie.extend_from_slice(&1u64.to_le_bytes());
        lie.extend_from_slice(&(1u64 << 30).to_le_bytes());
        lie.extend_from_slice(b"abc");
        let err = read_frame(&mut &lie[..], MAX_FRAME).expect_err("truncated");
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof, "{err}");
        assert!(err.to_string().contains("3 of 1073741824"), "{err}");
        let err = read_frame(&mut &lie[..], 16).expect_err("over the bound");
        assert!(err.to_string().contains("over the bound of 16"), "{err}");
    }

    #[test]
    fn the_handshake_is_mutual() {
        let secret = [7u8; 32];
        let (ln, cn) = ([1u8; NONCE_LEN], [2u8; NONCE_LEN]);
        // What an honest connector of rank 1 sends after the listener's hello.
        let mut reply = Vec::new();
        reply.extend_from_slice(MAGIC);
        reply.extend_from_slice(&1u64.to_le_bytes());
        reply.extend_from_slice(&mac(&secret, &ln, 1));
        reply.extend_from_slice(&cn);
        let mut listener = Pipe { input: &reply, output: Vec::new() };
        assert_eq!(accept_handshake(&mut listener, &secret, 2, &ln).expect("accept"), 1);
        // The connector accepts that listener's answer ...
        let mut hello_and_ok = listener.output.clone();
        let mut connector = Pipe { input: &hello_and_ok, output: Vec::new() };
        connect_handshake(&mut connector, &secret, 1, &cn).expect("connect");
        assert_eq!(connector.output, reply);
        // ... and refuses one from a listener without the secret.
        let n = hello_and_ok.len();
        hello_and_ok[n - 1] ^= 1;
        let mut connector = Pipe { input: &hello_and_ok, output: Vec::new() };
        let err = connect_handshake(&mut connector, &secret, 1, &cn).expect_err("forged listener");
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
        // A wrong secret and an out-of-range rank are refused by the listener.
        let mut listener = Pipe { input: &reply, output: Vec::new() };
        let err = accept_handshake(&mut listener, &[8u8; 32], 2, &ln).expect_err("wrong secret");
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
        let mut listener = Pipe { input: &reply, output: Vec::new() };
        let err = accept_handshake(&mut listener, &secret, 1, &ln).expect_err("rank out of range");
        assert!(err.to_string().contains("out of range for 1"), "{err}");
    }

    #[test]
    fn address_tables_are_checked() {
        let t = parse_address_table(b"127.0.0.1:1,[::1]:2", 2).expect("table");
        assert_eq!(t.len(), 2);
        assert!(parse_address_table(b"127.0.0.1:1", 2).expect_err("short").to_string().contains("expected 2"));
        assert!(parse_address_table(b"127.0.0.1:1,x", 2).expect_err("bad").to_string().contains("entry 1"));
        assert!(
            parse_address_table(b"127.0.0.1:1,127.0.0.1:1", 1).expect_err("long").to_string().contains("more than 1")
        );
        assert!(parse_address(b"\xff").is_err());
    }
}
