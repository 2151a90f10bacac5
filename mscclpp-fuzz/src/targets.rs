//! The fuzz targets. Each takes arbitrary bytes and checks the contract for untrusted input: it ends in `Ok` or
//! in an error that names where the input is wrong; it never panics (the driver catches and records panics),
//! never hangs and never allocates from an untrusted size without a bound (the `mscclpp-fuzz` binary enforces
//! both). A target returns a short *class* of the outcome (used to keep inputs that reach new outcomes) or a
//! description of a broken contract.

use std::io::{Read, Write};

use mscclpp_exec::bootstrap::wire::{self, MAC_LEN, MAGIC, MAX_FRAME, NONCE_LEN};
use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::{Collective, emit_plan, parse_plan, validate};
use mscclpp_lang::registry::{self, PlanCache, Request, Target as BuildTarget};
use mscclpp_lang::verify::{FindingKind, VerifyOptions, verify_text};

/// A fuzz target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `plan::parse_plan` (parse + validate) and the emit/parse round trip of what it accepts.
    Plan,
    /// Registry requests: program names, `parse_size`, selection and compilation with arbitrary collectives,
    /// world sizes, ranks per node, instances, message sizes, placements, dtypes and tags.
    Registry,
    /// The CPU verifier (`mscclpp verify` on a plan file) within its memory and step bounds.
    Verify,
    /// The bootstrap's wire format: both sides of the handshake, frames, addresses and address tables.
    Bootstrap,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 4] = [Target::Plan, Target::Registry, Target::Verify, Target::Bootstrap];

    /// The target's name on the command line and in logs.
    pub fn name(self) -> &'static str {
        match self {
            Target::Plan => "plan",
            Target::Registry => "registry",
            Target::Verify => "verify",
            Target::Bootstrap => "bootstrap",
        }
    }

    /// The target named `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Runs one input: the outcome class, or the broken contract.
    pub fn run(self, data: &[u8]) -> Result<String, String> {
        match self {
            Target::Plan => plan(data),
            Target::Registry => registry_request(data),
            Target::Verify => verify(data),
            Target::Bootstrap => bootstrap(data),
        }
    }
}

/// A class of an error message: its first words, with numbers and quoted parts removed (coarse, so the working
/// corpus keeps inputs that reach new kinds of errors, not every new wording of one).
fn class(prefix: &str, message: &str) -> String {
    let mut out = String::from(prefix);
    out.push(':');
    let mut in_quote = false;
    for c in message.chars() {
        if c == '"' || c == '`' {
            in_quote = !in_quote;
        } else if !in_quote && !c.is_ascii_digit() {
            out.push(c);
        }
        if out.len() >= 40 {
            break;
        }
    }
    out
}

fn plan(data: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(data);
    match parse_plan(&text) {
        Ok(p) => {
            let again = emit_plan(&p);
            match parse_plan(&again) {
                Ok(q) if q == p => Ok("accepted".into()),
                Ok(_) => Err("an accepted plan changed in the emit/parse round trip".into()),
                Err(e) => Err(format!("an accepted plan does not parse after emit: {e}")),
            }
        }
        Err(e) => {
            if e.location().is_none() {
                return Err(format!("an error without a location: {e}"));
            }
            Ok(class("rejected", &e.to_string()))
        }
    }
}

/// Reads fields from the input, then zeros when it runs out.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |v, _| (v << 8) | self.byte() as u64)
    }
    /// A small number most of the time, sometimes a large one.
    fn count(&mut self) -> usize {
        match self.byte() {
            b @ 0..=239 => (b % 17) as usize,
            240..=249 => self.u64() as u16 as usize,
            _ => self.u64() as usize,
        }
    }
    fn text(&mut self) -> String {
        let n = (self.byte() % 48) as usize;
        let n = n.min(self.0.len());
        let (t, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(t).into_owned()
    }
}

/// Every collective a plan request can name (`custom` plans are not built from requests).
const COLLECTIVES: &[Collective] = Collective::ALL.split_last().expect("ALL is not empty").1;

fn registry_request(data: &[u8]) -> Result<String, String> {
    let mut f = Fields(data);
    let programs = registry::programs();
    if programs.is_empty() {
        return Err("no program is registered: the fuzz binary must link mscclpp-algorithms".into());
    }
    // A program name: a registered one, a damaged one, or arbitrary text.
    let pick = f.byte() as usize;
    let name = match pick % 3 {
        0 => programs[pick % programs.len()].name.to_string(),
        1 => {
            let mut n = programs[pick % programs.len()].name.to_string();
            n.push_str(&f.text());
            n
        }
        _ => f.text(),
    };
    let size_text = f.text();
    let size = match registry::parse_size(&size_text) {
        Ok(v) => v,
        Err(e) if e.to_string().is_empty() => {
            return Err(format!("parse_size({size_text:?}) failed without a message"));
        }
        Err(_) => f.u64() >> (f.byte() % 64),
    };
    let world = f.count();
    let rpn = if f.byte() % 2 == 0 { world } else { f.count() };
    let instances = f.count();
    let collective = COLLECTIVES[f.byte() as usize % COLLECTIVES.len()];
    let dtype = DataType::ALL[f.byte() as usize % DataType::ALL.len()];
    let inplace = f.byte() % 2 == 1;
    let mut req = Request::new(collective, world, size).ranks_per_node(rpn).inplace(inplace).dtype(dtype);
    for _ in 0..f.byte() % 3 {
        let key = match f.byte() % 3 {
            0 => "nvls".to_string(),
            1 => "example".to_string(),
            _ => f.text(),
        };
        req = req.tag(key, f.u64() as i64 % 4);
    }
    let cache = PlanCache::memory_only();
    let mut outcome = Vec::new();
    // By name, as `mscclpp plan NAME --world-size N` does.
    match registry::find(&name) {
        Ok(meta) => {
            let target = BuildTarget::new(world).ranks_per_node(rpn).instances(instances).inplace(inplace);
            match cache.compile(meta, &target) {
                Ok(c) => {
                    check_built(&c.plan, world)?;
                    outcome.push("built".to_string());
                }
                Err(e) => outcome.push(nonempty("compile", &e.to_string())?),
            }
        }
        Err(e) => outcome.push(nonempty("find", &e.to_string())?),
    }
    // By request, as the executor's selection does.
    match registry::select(&req) {
        Ok(sel) => match cache.compile(sel.program, &req.target()) {
            Ok(c) => {
                check_built(&c.plan, world)?;
                outcome.push("selected".to_string());
            }
            Err(e) => return Err(format!("a selected program does not compile for its request: {e}")),
        },
        Err(e) => outcome.push(nonempty("select", &e.to_string())?),
    }
    Ok(outcome.join(" / "))
}

fn nonempty(what: &str, message: &str) -> Result<String, String> {
    if message.trim().is_empty() {
        return Err(format!("{what} failed with an empty message"));
    }
    Ok(class(what, message))
}

fn check_built(plan: &mscclpp_lang::plan::Plan, world: usize) -> Result<(), String> {
    if plan.world_size() != world {
        return Err(format!("built a plan of {} ranks for a request of {world}", plan.world_size()));
    }
    validate(plan).map_err(|e| format!("a built plan is invalid: {e}"))
}

/// The verifier's settings under fuzzing: few schedules and launches, and bounds that keep one input small.
pub fn verify_options() -> VerifyOptions {
    VerifyOptions {
        launches: 2,
        schedules: 2,
        max_memory: 256 << 20,
        max_steps: 20_000_000,
        ..VerifyOptions::default()
    }
}

fn verify(data: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(data);
    let report = verify_text(&text, &verify_options());
    let mut kinds: Vec<&str> = Vec::new();
    for f in &report.findings {
        if f.message.trim().is_empty() {
            return Err(format!("a {} finding without a message", f.kind));
        }
        if f.kind == FindingKind::InvalidPlan {
            return Ok(class("invalid", &f.message));
        }
        let k = f.kind.to_string();
        if !kinds.contains(&k.as_str()) {
            kinds.push(match f.kind {
                FindingKind::OutOfBounds => "out of bounds",
                FindingKind::Deadlock => "deadlock",
                FindingKind::WrongResult => "wrong result",
                FindingKind::StalePacket => "stale packet",
                FindingKind::DataRace => "data race",
                FindingKind::Unbalanced => "unbalanced",
                FindingKind::StepLimit => "step limit",
                FindingKind::InvalidPlan => "invalid",
            });
        }
    }
    Ok(if kinds.is_empty() { "verified".into() } else { kinds.join("+") })
}

/// One side of a connection: reads the input, collects what the code under test writes.
struct Pipe<'a> {
    input: &'a [u8],
    written: usize,
}

impl Read for Pipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Pipe<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The job secret of the bootstrap target's simulated job.
pub const FUZZ_SECRET: [u8; 32] = [0x42; 32];
/// The listener nonce of the simulated job (fixed, so seeds can carry a valid MAC).
pub const FUZZ_NONCE: [u8; NONCE_LEN] = [0x17; NONCE_LEN];

fn io_class(what: &str, e: &std::io::Error) -> Result<String, String> {
    use std::io::ErrorKind::*;
    if !matches!(e.kind(), InvalidData | PermissionDenied | UnexpectedEof) {
        return Err(format!("{what}: unexpected error kind {:?}: {e}", e.kind()));
    }
    nonempty(what, &e.to_string())
}

fn bootstrap(data: &[u8]) -> Result<String, String> {
    let Some((&mode, rest)) = data.split_first() else { return Ok("empty".into()) };
    let nranks = 1 + (rest.first().copied().unwrap_or(0) % 16) as usize;
    match mode % 4 {
        // The listener: the peer's handshake reply, then frames until the stream ends.
        0 => {
            let mut p = Pipe { input: rest, written: 0 };
            let rank = match wire::accept_handshake(&mut p, &FUZZ_SECRET, nranks.max(2), &FUZZ_NONCE) {
                Ok(r) => r,
                Err(e) => return io_class("accept", &e),
            };
            if p.written != MAGIC.len() + NONCE_LEN + 2 + MAC_LEN {
                return Err(format!("the listener wrote {} bytes in an accepted handshake", p.written));
            }
            let mut frames = 0usize;
            loop {
                match wire::read_frame(&mut p, MAX_FRAME) {
                    Ok(_) => frames += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && p.input.is_empty() => {
                        return Ok(format!("accepted rank {}, {} frame(s)", rank.min(1), frames.min(3)));
                    }
                    Err(e) => return io_class("frame", &e),
                }
            }
        }
        // The connector: the listener's greeting and proof.
        1 => {
            let mut p = Pipe { input: rest, written: 0 };
            match wire::connect_handshake(&mut p, &FUZZ_SECRET, 1, &FUZZ_NONCE) {
                Ok(()) => Ok("connected".into()),
                Err(e) => io_class("connect", &e),
            }
        }
        // The rendezvous: a rank's address frame.
        2 => match wire::read_frame(&mut &rest[..], wire::MAX_ADDRESS_FRAME) {
            Ok((_, a)) => match wire::parse_address(&a) {
                Ok(_) => Ok("address".into()),
                Err(e) => nonempty("address", &e.to_string()),
            },
            Err(e) => io_class("address frame", &e),
        },
        // A rank: the address table from the rendezvous.
        _ => match wire::read_frame(&mut &rest[1.min(rest.len())..], wire::max_table_frame(nranks)) {
            Ok((_, t)) => match wire::parse_address_table(&t, nranks) {
                Ok(v) if v.len() == nranks => Ok("table".into()),
                Ok(v) => Err(format!("a table of {} entries accepted for {nranks} ranks", v.len())),
                Err(e) => nonempty("table", &e.to_string()),
            },
            Err(e) => io_class("table frame", &e),
        },
    }
}

/// Seeds of the bootstrap target: valid transcripts of each mode (and the same with small damage, made by the
/// mutator).
pub fn bootstrap_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // Mode 0: a valid reply of rank 1 of 2, then two frames.
    let mut s = vec![0u8];
    s.extend_from_slice(MAGIC);
    s.extend_from_slice(&1u64.to_le_bytes());
    s.extend_from_slice(&wire::mac(&FUZZ_SECRET, &FUZZ_NONCE, 1));
    s.extend_from_slice(&[5u8; NONCE_LEN]);
    let mut frames = Vec::new();
    let _ = wire::write_frame(&mut frames, 3, b"payload");
    let _ = wire::write_frame(&mut frames, u64::MAX, &[]);
    s.extend_from_slice(&frames);
    out.push(s);
    // Mode 1: a valid greeting and proof.
    let mut s = vec![1u8];
    s.extend_from_slice(MAGIC);
    s.extend_from_slice(&[9u8; NONCE_LEN]);
    s.extend_from_slice(b"OK");
    s.extend_from_slice(&wire::mac(&FUZZ_SECRET, &FUZZ_NONCE, u64::MAX));
    out.push(s);
    // Mode 2: an address frame.
    let mut s = vec![2u8];
    let _ = wire::write_frame(&mut s, 0, b"127.0.0.1:29500");
    out.push(s);
    // Mode 3: a table for 3 ranks (byte 1 selects the rank count).
    let mut s = vec![3u8, 2];
    let _ = wire::write_frame(&mut s, 0, b"10.0.0.1:1,[fe80::1]:2,127.0.0.1:65535");
    out.push(s);
    out
}
