//! One runtime for collectives called the way NCCL's API and torch call them: a call names its collective, its
//! buffers, sizes and stream, and this module decides how it runs — directly on the caller's buffers, on
//! registered caller buffers, or through staging buffers of ours — prepares the plan once, binds it, and launches
//! it, in eager mode and inside CUDA graph captures alike. The NCCL-ABI library (`mscclpp-nccl`) and the Python
//! module's staged collectives both run on it; each supplies the plan for a call ([`PlanSource`]) and decides what
//! falls back to NCCL or torch.
//!
//! Paths ([`Path`]), chosen per call so that every rank makes the same collective setup calls:
//! - **zero copy**: a plan whose peers never address the caller's buffers
//!   ([`ExecutionPlan::buffers_independent`], the LL and scratch-staged programs) runs on the caller's buffers when
//!   the call's placement (in place or not) is the plan's. Its context depends on the message size only.
//! - **registered**: any other plan, from [`REGISTER_MIN_BYTES`] up, runs on the caller's buffers once every rank
//!   has them registered (mapped by its peers). Whether a rank has them already is local (allocators differ
//!   between ranks), so the ranks agree first: each says over the bootstrap whether it can run in place of the
//!   plan's placement and whether its context exists; if any cannot, all stage; if any lacks the context, all set
//!   a new one up. At most [`Settings::registered_max`] eager registrations are kept (the oldest go once the
//!   work queued on them has run).
//! - **window**: any other plan, on buffers inside symmetric windows ([`symmetric`]: ranges every rank
//!   registered alike, with buffers at the same offsets on every rank by the window's contract): zero copy on
//!   the caller's buffers with no agreement; the context is set up for the windows, once per plan.
//! - **staged**: everything else: the input is copied into our staging buffer on the caller's stream, the plan
//!   runs between our two staging buffers (the same allocations on every rank), the result is copied out.
//!   Staging grows on demand up to [`Settings::staging_max`]; a larger staged call falls back.
//!
//! Lanes: eager calls and captured calls run on two executors of the communicator, so a graph replayed on one
//! stream never shares scratch, semaphores or staging with eager calls on another. Eager calls on a stream other
//! than the previous call's first wait for it (they share the eager lane). Captured calls never wait on work
//! outside their capture, and a call captured before it ever ran eagerly sets up what it needs during the capture
//! under the relaxed capture mode ([`RelaxedCapture`], taken on every slow path, so an eager call's setup never
//! breaks another stream's capture either): all ranks capture the same calls, so all set up alike.
//!
//! Fast path: a zero-copy call whose (key, lane) ran before launches with the bound plan (no lookup of contexts,
//! device plans or allocations; see [`Executor::bind`]).

mod agree;
mod staging;
pub mod symmetric;
pub mod window;

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use mscclpp_lang::plan::Collective;
use mscclpp_sys::driver::{Device, DevicePtr, Event, RawStream, RelaxedCapture, Stream};
use mscclpp_sys::interpreter::{ElementType, PacketType};

use crate::communicator::Communicator;
use crate::error::{Error, Result};
use crate::executor::{Bound, ContextKey, ExecutionPlan, Executor, Operands, Within};
use crate::memory::RegisteredMemory;
use agree::Agreement;
use staging::Staging;
use symmetric::Windows;

/// Messages below this size never take the registered path: their agreement (a bootstrap round trip) would
/// cost more than the staging copies it saves.
pub const REGISTER_MIN_BYTES: u64 = 1 << 20;

/// A plan ready to run for one key.
#[derive(Debug)]
pub struct Prepared {
    /// The plan.
    pub plan: ExecutionPlan,
    /// Whether it is an in-place plan.
    pub inplace: bool,
    /// The input bytes it runs on: the call's, or more for a message no plan takes as it is (an all-reduce or
    /// broadcast padded through the staging buffers; the padding's results are never copied out).
    pub plan_bytes: u64,
}

/// Where a call's plan comes from: the caller's choice for a key (`Err`: why no plan runs it; the call falls
/// back). Called once per key; must depend on the key alone, so every rank chooses alike.
pub type PlanSource<K> = Box<dyn FnMut(&K) -> std::result::Result<Prepared, Decline> + Send>;

/// One call.
#[derive(Clone, Copy, Debug)]
pub struct Call<K> {
    /// The identity of the call's plan (collective, size, type, operator, root, and whatever else the source
    /// needs): equal keys get the same plan.
    pub key: K,
    /// The collective.
    pub collective: Collective,
    /// Input (device address).
    pub send: DevicePtr,
    /// Output (device address).
    pub recv: DevicePtr,
    /// Input bytes of this rank.
    pub in_bytes: u64,
    /// Output bytes of this rank.
    pub out_bytes: u64,
    /// Element type.
    pub elem: ElementType,
    /// The root of a broadcast (0 otherwise): only the root's input is read.
    pub root: usize,
    /// The caller's `CUstream` (0: the legacy default stream).
    pub stream: u64,
}

/// How a call ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// On the caller's buffers, with a plan that never addresses them remotely.
    ZeroCopy,
    /// On the caller's buffers, registered with every peer.
    Registered,
    /// Through our staging buffers.
    Staged,
    /// On the caller's buffers inside symmetric windows.
    Window,
}

impl Path {
    /// Every path, in counter order.
    pub const ALL: [Path; 4] = [Path::ZeroCopy, Path::Registered, Path::Staged, Path::Window];

    /// Its name in logs and counters.
    pub fn name(self) -> &'static str {
        match self {
            Path::ZeroCopy => "zero-copy",
            Path::Registered => "registered",
            Path::Staged => "staged",
            Path::Window => "window",
        }
    }
}

/// What a call turned into.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Queued on the caller's stream, this way.
    Ran(Path),
    /// Not ours (why): the caller runs it elsewhere (NCCL, torch).
    Fallback(Decline),
}

/// Why a call is not ours to run: the caller hands it to its fallback (NCCL, torch.distributed). Not an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Decline {
    /// This machine's tuned table measured the fallback faster at this size.
    #[error("this machine's tuned table measured the fallback (NCCL) faster at this size")]
    FallbackFaster,
    /// No plan runs the call; why not, per candidate.
    #[error("no plan runs it: {0}")]
    NoPlan(String),
    /// The call would need staging buffers larger than they may grow.
    #[error("{plan_in} B in, {plan_out} B out: larger than the staging buffers may grow ({limit} B)")]
    StagingLimit {
        /// Input bytes of the plan.
        plan_in: u64,
        /// Output bytes of the plan.
        plan_out: u64,
        /// The staging bound.
        limit: u64,
    },
}

/// Limits of one frontend.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The most bytes each staging buffer of a lane may grow to.
    pub staging_max: u64,
    /// The most eager registrations (contexts on caller buffers) kept at once.
    pub registered_max: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { staging_max: 512 << 20, registered_max: 64 }
    }
}

/// Calls per path, for one frontend (read while it runs).
#[derive(Debug, Default)]
pub struct Counters {
    counts: [AtomicU64; 4],
}

impl Counters {
    fn add(&self, path: Path) {
        self.counts[path as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Calls that ran `path`.
    pub fn get(&self, path: Path) -> u64 {
        self.counts[path as usize].load(Ordering::Relaxed)
    }
}

/// The eager lane (0) or the graph lane (1).
const EAGER: usize = 0;
const GRAPH: usize = 1;

/// One executor and what hangs off it.
struct Lane {
    exec: Arc<Executor>,
    /// Staging for buffer-independent plans: whether a call stages is local (its placement), and so may differ
    /// between ranks, but such a plan's context does not depend on the buffers.
    staging_local: Staging,
    /// Staging for every other plan: it grows only at calls every rank stages alike, so the contexts bound on it
    /// are set up on every rank at the same call.
    staging_tied: Staging,
    /// The stream of the lane's last call (eager lane only: a call on another stream waits for it).
    last_stream: Option<u64>,
    order: Event,
}

/// The collectives of one communicator.
pub struct Frontend<K> {
    comm: Arc<Communicator>,
    device: Device,
    rank: usize,
    world: usize,
    lanes: [Option<Lane>; 2],
    source: PlanSource<K>,
    plans: HashMap<K, std::result::Result<Arc<Prepared>, Decline>>,
    /// Zero-copy launches bound before, by key and lane, with the plan's placement.
    zero_copy: HashMap<(K, usize), (Bound, bool)>,
    /// Staged launches bound before, by key and lane, with the staging generation they were bound in.
    staged: HashMap<(K, usize), (Bound, u64)>,
    /// Registrations bound before, by lane, element type and context (one context serves every element type;
    /// a bound launch is for one).
    registered: HashMap<(usize, ElementType, ContextKey), Bound>,
    /// The eager lane's registrations, oldest first (at most [`Settings::registered_max`]).
    registered_order: VecDeque<(ElementType, ContextKey)>,
    /// The last registered call of each key and lane: its buffers and the context it ran with, so that a repeat on
    /// the same buffers skips working the context out again (its allocations' ids still checked). Holds only
    /// contexts in `registered`.
    registered_last: HashMap<(K, usize), (DevicePtr, DevicePtr, ContextKey)>,
    /// Registrations dropped from the executor's cache, their memory kept until the event recorded after their
    /// last use has passed.
    retiring: Vec<(Bound, Event)>,
    /// Captured registrations replaced by a new setup: a graph may still replay them, so they stay.
    captured_keep: Vec<Bound>,
    /// Symmetric windows ([`Frontend::add_window`]).
    windows: Windows,
    /// Launches on buffers inside windows bound before, by key, lane and buffers, with the windows they are in
    /// (at most [`WINDOW_BINDS_MAX`]).
    windowed: HashMap<(K, usize, DevicePtr, DevicePtr), (Bound, Within)>,
    /// How the ranks agree on registrations (made at the first call that needs one: every rank reaches it at the
    /// same call).
    agreement: Option<Agreement>,
    settings: Settings,
    counters: Arc<Counters>,
    /// Both lanes' executors, for [`Frontend::error_probe`] (the graph lane's is set when it is made).
    executors: Arc<(Arc<Executor>, OnceLock<Arc<Executor>>)>,
}

/// Reports an expired device wait of a frontend's kernels, if one happened; never blocks.
pub type ErrorProbe = Arc<dyn Fn() -> Option<String> + Send + Sync>;

impl<K: Copy + Eq + Hash> Frontend<K> {
    /// A frontend whose eager calls run on `exec` (the graph lane gets an executor of its own on first capture).
    pub fn new(exec: Arc<Executor>, source: PlanSource<K>, settings: Settings) -> Result<Self> {
        let comm = exec.communicator().clone();
        let device = *comm.device();
        let executors = Arc::new((exec.clone(), OnceLock::new()));
        let eager = Lane::new(exec)?;
        Ok(Frontend {
            rank: comm.rank(),
            world: comm.size(),
            comm,
            device,
            lanes: [Some(eager), None],
            source,
            plans: HashMap::new(),
            zero_copy: HashMap::new(),
            staged: HashMap::new(),
            registered: HashMap::new(),
            registered_order: VecDeque::new(),
            registered_last: HashMap::new(),
            retiring: Vec::new(),
            captured_keep: Vec::new(),
            windows: Windows::default(),
            windowed: HashMap::new(),
            agreement: None,
            settings,
            counters: Arc::new(Counters::default()),
            executors,
        })
    }

    /// Calls per path so far.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// What a watchdog polls: the report of an expired device wait of this frontend's kernels, eager or
    /// captured ([`Executor::device_error`]); never blocks.
    pub fn error_probe(&self) -> ErrorProbe {
        let executors = self.executors.clone();
        Arc::new(move || executors.0.device_error().or_else(|| executors.1.get().and_then(|g| g.device_error())))
    }

    /// Run `call` (queued on its stream), or say why it falls back. Errors: a launch, copy or setup failed
    /// (peers may be inside a kernel of this call: the communicator is unusable).
    pub fn run(&mut self, call: &Call<K>) -> Result<Outcome> {
        // SAFETY: the caller passes a live stream of this communicator's GPU (NCCL's and torch's contract), or 0
        // for the legacy default stream; the borrowed handle is never destroyed by us.
        let stream = unsafe { Stream::borrow_raw(&self.device, call.stream as usize as RawStream) };
        let capturing = stream.is_capturing()?;
        let lane = if capturing { GRAPH } else { EAGER };
        if let Some((bound, inplace)) = self.zero_copy.get(&(call.key, lane))
            && placement(call, self.rank as u64) == *inplace
        {
            let bound = bound.clone();
            self.order(lane, call.stream, &stream)?;
            self.lane(lane)?.exec.launch(&bound, call.send, call.recv, &stream)?;
            self.counters.add(Path::ZeroCopy);
            return Ok(Outcome::Ran(Path::ZeroCopy));
        }
        if !self.windows.is_empty()
            && let Some((bound, _)) = self.windowed.get(&(call.key, lane, call.send, call.recv))
        {
            let bound = bound.clone();
            self.order(lane, call.stream, &stream)?;
            self.lane(lane)?.exec.launch(&bound, call.send, call.recv, &stream)?;
            self.counters.add(Path::Window);
            return Ok(Outcome::Ran(Path::Window));
        }
        // Setting up (contexts, staging, the graph lane's executor) allocates and copies synchronously, which a
        // capture in the global mode forbids: inside our own capture, and in an eager call while another stream of
        // the process is being captured (which such a call would otherwise invalidate).
        let _relaxed = RelaxedCapture::begin()?;
        if self.lanes[lane].is_none() {
            let exec = Arc::new(Executor::new(self.comm.clone())?);
            let _ = self.executors.1.set(exec.clone());
            self.lanes[lane] = Some(Lane::new(exec)?);
        }
        let p = match self.prepared(&call.key) {
            Ok(p) => p,
            Err(reason) => return Ok(Outcome::Fallback(reason)),
        };
        let placed = placement(call, self.rank as u64) == p.inplace;
        let exact = p.plan_bytes == call.in_bytes;
        let (path, context) = if p.plan.buffers_independent() {
            if placed && exact && self.try_zero_copy(lane, call, &p, &stream)? {
                return Ok(Outcome::Ran(Path::ZeroCopy));
            }
            (Path::Staged, None)
        } else if placed
            && exact
            && let Some(within) = self.windows.within(call.send, call.in_bytes, call.recv, call.out_bytes)
        {
            self.run_window(lane, call, &p, within, &stream)?;
            return Ok(Outcome::Ran(Path::Window));
        } else if exact && call.in_bytes.max(call.out_bytes) >= REGISTER_MIN_BYTES {
            self.agree_registered(lane, call, &p, placed, &stream)?
        } else {
            (Path::Staged, None)
        };
        match (path, context) {
            (Path::Registered, Some(key)) => self.run_registered(lane, call, &p, key, &stream)?,
            _ => {
                let (plan_in, plan_out) = self.plan_sizes(call, &p);
                // The limit holds only where every rank stages this call alike (a padded size, or a plan tied to
                // the buffers after an agreement); a buffer-independent plan staged for this rank's own placement
                // stages whatever its size, since its peers may be running it zero copy.
                let collective_choice = !exact || !p.plan.buffers_independent();
                if collective_choice && plan_in.max(plan_out) > self.settings.staging_max {
                    return Ok(Outcome::Fallback(Decline::StagingLimit {
                        plan_in,
                        plan_out,
                        limit: self.settings.staging_max,
                    }));
                }
                self.run_staged(lane, call, &p, &stream)?
            }
        }
        self.counters.add(path);
        Ok(Outcome::Ran(path))
    }

    fn lane(&mut self, lane: usize) -> Result<&mut Lane> {
        self.lanes[lane].as_mut().ok_or_else(|| Error::InvalidArgument("collective lane not set up".into()))
    }

    /// The plan for `key`, prepared once.
    fn prepared(&mut self, key: &K) -> std::result::Result<Arc<Prepared>, Decline> {
        let source = &mut self.source;
        self.plans.entry(*key).or_insert_with(|| source(key).map(Arc::new)).clone()
    }

    /// Input and output bytes the plan runs on.
    fn plan_sizes(&self, call: &Call<K>, p: &Prepared) -> (u64, u64) {
        if p.plan_bytes == call.in_bytes {
            (call.in_bytes, call.out_bytes)
        } else {
            (p.plan_bytes, Executor::output_size(call.collective, self.world as u64, p.plan_bytes))
        }
    }

    /// An eager call on another stream than the eager lane's last call first waits for it.
    fn order(&mut self, lane: usize, raw: u64, stream: &Stream) -> Result<()> {
        if lane != EAGER {
            return Ok(());
        }
        let device = self.device;
        let l = self.lane(lane)?;
        if let Some(prev) = l.last_stream
            && prev != raw
        {
            // SAFETY: the previous call's stream; the caller keeps a stream alive while it uses the communicator
            // on it (a destroyed one makes the record fail, reported as an error).
            let prev = unsafe { Stream::borrow_raw(&device, prev as usize as RawStream) };
            l.order.record(&prev)?;
            l.order.wait_on(stream)?;
        }
        l.last_stream = Some(raw);
        Ok(())
    }

    /// Bind and launch `p` on the caller's buffers; false when they are not ones it can run on (the call is then
    /// staged, with the same context: a buffer-independent plan's context depends on the sizes only).
    fn try_zero_copy(&mut self, lane: usize, call: &Call<K>, p: &Prepared, stream: &Stream) -> Result<bool> {
        let exec = self.lane(lane)?.exec.clone();
        // Buffers the plan cannot run on (outside an allocation, misaligned): staged instead.
        if exec.context_key(&p.plan, &operands(call)).is_err() {
            return Ok(false);
        }
        let bound = exec.bind(&p.plan, &operands(call))?;
        self.order(lane, call.stream, stream)?;
        exec.launch(&bound, call.send, call.recv, stream)?;
        self.zero_copy.insert((call.key, lane), (bound, p.inplace));
        self.counters.add(Path::ZeroCopy);
        Ok(true)
    }

    /// Agree with every rank whether `call` runs registered (and whether its context must be set up anew), or
    /// staged; registered: the context to bind.
    fn agree_registered(
        &mut self,
        lane: usize,
        call: &Call<K>,
        p: &Prepared,
        placed: bool,
        stream: &Stream,
    ) -> Result<(Path, Option<ContextKey>)> {
        let exec = self.lane(lane)?.exec.clone();
        // 0: cannot run on its buffers; 1: its context exists; 2: it needs one.
        let (key, mine) = match self.registered_repeat(lane, call) {
            Some(k) => (Some(k), 1u64),
            None => {
                // Buffers no peer can map (cuMem memory made without a shareable handle type) stage, on every rank.
                let mappable = [call.send, call.recv].iter().all(|&b| RegisteredMemory::can_register(&self.device, b));
                let key = if placed && mappable { exec.context_key(&p.plan, &operands(call)).ok() } else { None };
                let mine = match &key {
                    None => 0,
                    Some(k) if exec.has_context(k) => 1,
                    Some(_) => 2,
                };
                (key, mine)
            }
        };
        if self.agreement.is_none() {
            self.agreement = Some(Agreement::new(&self.comm)?);
        }
        let Some(agreement) = self.agreement.as_mut() else { return Ok((Path::Staged, None)) };
        let all = agreement.all(&self.comm, mine)?;
        if all.contains(&0) || all.len() != self.world {
            return Ok((Path::Staged, None));
        }
        if let Some(k) = &key
            && mine == 1
            && all.contains(&2)
        {
            // A peer sets its side up anew (its buffer is new to it): so must this rank, for the same call. The old
            // context's memory stays while work may use it: until the eager work queued so far has run, or for
            // good when a captured graph may replay it.
            exec.forget_context(k);
            let old: Vec<_> = self.registered.extract_if(|(l, _, c), _| *l == lane && c == k).collect();
            self.registered_order.retain(|(_, r)| r != k);
            self.registered_last.retain(|&(_, l), (_, _, c)| l != lane || c != k);
            for (_, bound) in old {
                if lane == EAGER {
                    self.retire(bound, stream)?;
                } else {
                    self.captured_keep.push(bound);
                }
            }
        }
        Ok((Path::Registered, key))
    }

    /// The context of the last registered call of `call`'s key on `lane` when `call` repeats it: the same buffers,
    /// still the allocations that context was set up on (a buffer freed and allocated again at the same address
    /// gets a new id), its launch still bound. One or two driver queries instead of working the context out.
    fn registered_repeat(&self, lane: usize, call: &Call<K>) -> Option<ContextKey> {
        let (send, recv, key) = self.registered_last.get(&(call.key, lane))?;
        if (*send, *recv) != (call.send, call.recv) {
            return None;
        }
        let (input_id, output_id) = key.allocation_ids();
        let id = |ptr| mscclpp_sys::driver::buffer_id(&self.device, ptr).ok();
        let same = id(call.send) == Some(input_id) && (call.recv == call.send || id(call.recv) == Some(output_id));
        (same && self.registered.contains_key(&(lane, call.elem, key.clone()))).then(|| key.clone())
    }

    /// Launch on the caller's buffers with the context `key` (bound now, set up when the agreement said so, or
    /// bound before).
    fn run_registered(
        &mut self,
        lane: usize,
        call: &Call<K>,
        p: &Prepared,
        key: ContextKey,
        stream: &Stream,
    ) -> Result<()> {
        let exec = self.lane(lane)?.exec.clone();
        let bound = match self.registered.get(&(lane, call.elem, key.clone())) {
            Some(b) => b.clone(),
            None => {
                let b = exec.bind(&p.plan, &operands(call))?;
                self.registered.insert((lane, call.elem, key.clone()), b.clone());
                if lane == EAGER {
                    self.registered_order.push_back((call.elem, key.clone()));
                }
                b
            }
        };
        self.order(lane, call.stream, stream)?;
        exec.launch(&bound, call.send, call.recv, stream)?;
        if self
            .registered_last
            .get(&(call.key, lane))
            .is_none_or(|(s, r, c)| (*s, *r) != (call.send, call.recv) || *c != key)
        {
            self.registered_last.insert((call.key, lane), (call.send, call.recv, key));
        }
        // A captured registration stays for good (a graph may be replayed at any time); eager ones are bounded.
        while self.registered_order.len() > self.settings.registered_max.max(1) {
            if let Some((elem, old)) = self.registered_order.pop_front()
                && let Some(b) = self.registered.remove(&(EAGER, elem, old.clone()))
            {
                self.lane(EAGER)?.exec.forget_context(&old);
                self.registered_last.retain(|&(_, l), (_, _, c)| l != EAGER || *c != old);
                self.retire(b, stream)?;
            }
        }
        self.retiring.retain(|(_, e)| !e.is_done().unwrap_or(true));
        Ok(())
    }

    /// Launch on the caller's buffers inside symmetric windows (the plan's context for the windows is set up at
    /// its first call on them, collectively).
    fn run_window(&mut self, lane: usize, call: &Call<K>, p: &Prepared, within: Within, stream: &Stream) -> Result<()> {
        let exec = self.lane(lane)?.exec.clone();
        crate::startup::mark("frontend: binding a call in a window");
        let bound = exec.bind_within(&p.plan, &operands(call), Some(within))?;
        self.order(lane, call.stream, stream)?;
        exec.launch(&bound, call.send, call.recv, stream)?;
        crate::startup::mark("frontend: a call in a window launched");
        if self.windowed.len() < WINDOW_BINDS_MAX {
            self.windowed.insert((call.key, lane, call.send, call.recv), (bound, within));
        }
        self.counters.add(Path::Window);
        Ok(())
    }

    /// Register `[base, base + size)` as a symmetric window: every rank registers windows of the same sizes in the
    /// same order, and passes buffers at the same offsets of them ([`symmetric`]). Local and cheap: the memory is
    /// registered with the peers when a plan first runs on it. Errors: an empty range, one overlapping another
    /// window, or memory no peer can map (a cuMem allocation without the POSIX file descriptor handle type).
    pub fn add_window(&mut self, base: DevicePtr, size: u64) -> Result<()> {
        mscclpp_sys::driver::address_range(&self.device, base)?;
        if !RegisteredMemory::can_register(&self.device, base) {
            return Err(Error::InvalidArgument(format!(
                "the window at {base:#x} is cuMem memory without the POSIX file descriptor handle type: no peer can \
                 map it; allocate it with ncclMemAlloc or cudaMalloc"
            )));
        }
        self.windows.add(base, size)?;
        Ok(())
    }

    /// Forget the window starting at `base`: its contexts go once the eager work queued so far has run (a captured
    /// graph's stay while the frontend lives). False when no window starts there.
    pub fn remove_window(&mut self, base: DevicePtr) -> Result<bool> {
        let Some(w) = self.windows.remove(base) else { return Ok(false) };
        let range = (w.base, w.size);
        let gone: Vec<_> =
            self.windowed.extract_if(|_, (_, within)| within.input == range || within.output == range).collect();
        let last = self.lanes[EAGER].as_ref().and_then(|l| l.last_stream);
        // SAFETY: the eager lane's last stream; one the caller destroyed makes the record fail.
        let last = last.map(|raw| unsafe { Stream::borrow_raw(&self.device, raw as usize as RawStream) });
        for ((_, lane, _, _), (bound, _)) in gone {
            match (lane, &last) {
                (EAGER, Some(stream)) => self.retire(bound, stream)?,
                (EAGER, None) => drop(bound),
                _ => self.captured_keep.push(bound),
            }
        }
        for l in self.lanes.iter().flatten() {
            l.exec.forget_contexts_within(range);
        }
        Ok(true)
    }

    /// Keep `old` (a registration the executor's cache no longer holds) until the work queued so far on
    /// `stream` has run.
    fn retire(&mut self, old: Bound, stream: &Stream) -> Result<()> {
        let done = Event::untimed(&self.device)?;
        done.record(stream)?;
        self.retiring.push((old, done));
        Ok(())
    }

    /// Copy in, run between the staging buffers, copy out.
    fn run_staged(&mut self, lane: usize, call: &Call<K>, p: &Prepared, stream: &Stream) -> Result<()> {
        let (plan_in, plan_out) = self.plan_sizes(call, p);
        let rank = self.rank as u64;
        let need = plan_in.max(plan_out).max(call.in_bytes).max(call.out_bytes);
        let device = self.device;
        let independent = p.plan.buffers_independent();
        let l = self.lane(lane)?;
        let staging = if independent { &mut l.staging_local } else { &mut l.staging_tied };
        staging.reserve(&device, need)?;
        let (si, so, generation) = (staging.input(), staging.output(), staging.generation());
        let exec = l.exec.clone();
        // Where the plan reads and writes: the input is copied in there, the output copied out from there.
        let (inb, outb) = (call.in_bytes, call.out_bytes);
        let (input, output) = match (p.inplace, call.collective) {
            (false, _) => (si, so),
            (true, Collective::AllGather) => (so + rank * inb, so),
            (true, Collective::ReduceScatter) => (so, so + rank * outb),
            (true, _) => (so, so),
        };
        let bound = match self.staged.get(&(call.key, lane)) {
            Some((b, g)) if *g == generation => b.clone(),
            _ => {
                let b = exec.bind(
                    &p.plan,
                    &Operands {
                        input,
                        output,
                        input_size: plan_in,
                        output_size: plan_out,
                        dtype: call.elem,
                        packet: PACKET,
                    },
                )?;
                self.staged.insert((call.key, lane), (b.clone(), generation));
                b
            }
        };
        self.order(lane, call.stream, stream)?;
        // A broadcast reads the send buffer only at the root.
        if call.collective != Collective::Broadcast || call.root == self.rank {
            stream.copy_d2d(input, call.send, inb as usize)?;
        }
        exec.launch(&bound, input, output, stream)?;
        stream.copy_d2d(call.recv, output, outb as usize)?;
        Ok(())
    }
}

impl Lane {
    fn new(exec: Arc<Executor>) -> Result<Lane> {
        let device = *exec.communicator().device();
        Ok(Lane {
            exec,
            staging_local: Staging::default(),
            staging_tied: Staging::default(),
            last_stream: None,
            order: Event::untimed(&device)?,
        })
    }
}

impl<K> Drop for Frontend<K> {
    /// Our kernels may still run on the eager lane's last stream: wait (bounded) before buffers are freed.
    fn drop(&mut self) {
        if let Some(l) = &self.lanes[EAGER]
            && let Some(last) = l.last_stream
        {
            // SAFETY: the last call's stream; one the caller already destroyed makes the record fail, and then
            // nothing of ours is left to wait for on it.
            let stream = unsafe { Stream::borrow_raw(&self.device, last as usize as RawStream) };
            if l.order.record(&stream).is_ok() {
                let _ = l.order.synchronize(crate::bootstrap::default_timeout());
            }
        }
    }
}

impl<K> Frontend<K> {
    /// Forget the eager lane's last stream, so dropping does not wait for it (an aborted communicator: the work
    /// may never finish).
    pub fn abandon(&mut self) {
        if let Some(l) = &mut self.lanes[EAGER] {
            l.last_stream = None;
        }
    }
}

/// The most launches on window buffers a frontend keeps bound (beyond it, calls on new buffers bind each time:
/// the executor's caches still hold their contexts and device plans).
const WINDOW_BINDS_MAX: usize = 4096;

/// Packets of the LL plans (LL16 everywhere).
const PACKET: PacketType = PacketType::Ll16;

/// What `call`'s plan runs on when it runs on the caller's buffers.
fn operands<K>(call: &Call<K>) -> Operands {
    Operands {
        input: call.send,
        output: call.recv,
        input_size: call.in_bytes,
        output_size: call.out_bytes,
        dtype: call.elem,
        packet: PACKET,
    }
}

/// Whether `call` is in place, as NCCL defines it: the same buffer for all-reduce and broadcast, the send buffer
/// at this rank's piece of the receive buffer for all-gather, and the reverse for reduce-scatter.
pub fn placement<K>(call: &Call<K>, rank: u64) -> bool {
    match call.collective {
        Collective::AllGather => call.send == call.recv + rank * call.in_bytes,
        Collective::ReduceScatter => call.recv == call.send + rank * call.out_bytes,
        _ => call.send == call.recv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(collective: Collective, send: u64, recv: u64, in_bytes: u64, out_bytes: u64) -> Call<()> {
        Call { key: (), collective, send, recv, in_bytes, out_bytes, elem: ElementType::U8, root: 0, stream: 0 }
    }

    #[test]
    fn placement_follows_nccls_definition_of_in_place() {
        assert!(placement(&call(Collective::AllReduce, 0x1000, 0x1000, 256, 256), 1));
        assert!(!placement(&call(Collective::AllReduce, 0x1000, 0x2000, 256, 256), 1));
        // Rank 1's piece of an all-gather sits 256 B into the receive buffer.
        assert!(placement(&call(Collective::AllGather, 0x1100, 0x1000, 256, 512), 1));
        assert!(!placement(&call(Collective::AllGather, 0x1000, 0x1000, 256, 512), 1));
        // Rank 1 of a reduce-scatter receives into its piece of the send buffer.
        assert!(placement(&call(Collective::ReduceScatter, 0x1000, 0x1100, 512, 256), 1));
        assert!(!placement(&call(Collective::ReduceScatter, 0x1000, 0x1000, 512, 256), 1));
        assert!(placement(&call(Collective::Broadcast, 0x1000, 0x1000, 256, 256), 0));
    }

    #[test]
    fn paths_count_apart() {
        let c = Counters::default();
        c.add(Path::ZeroCopy);
        c.add(Path::ZeroCopy);
        c.add(Path::Staged);
        c.add(Path::Window);
        assert_eq!(Path::ALL.map(|p| c.get(p)), [2, 0, 1, 1]);
        assert_eq!(Path::ALL.map(Path::name), ["zero-copy", "registered", "staged", "window"]);
        // Counter slots follow the paths' order.
        assert!(Path::ALL.iter().enumerate().all(|(i, p)| *p as usize == i));
    }
}
