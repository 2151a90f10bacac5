//! The plan executor: an MSCCL++ execution plan plus the caller's buffers become a context (connections,
//! channels, registered memory, scratch, semaphores, set up collectively once and cached) and device records
//! that the interpreter kernel runs on the caller's stream.
//!
//! ```no_run
//! use std::sync::Arc;
//! use mscclpp_exec::executor::{ExecutionPlan, Executor};
//! use mscclpp_exec::{Communicator, GpuBuffer};
//! use mscclpp_sys::driver::Stream;
//! use mscclpp_sys::interpreter::{ElementType, PacketType};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (comm, _env) = Communicator::from_env()?;
//! let comm = Arc::new(comm);
//! let exec = Executor::new(comm.clone())?;
//! let plan = ExecutionPlan::from_file("allreduce.json")?;
//! let buf = GpuBuffer::new(comm.device(), 1 << 20)?;
//! let stream = Stream::new(comm.device())?;
//! exec.execute(&plan, buf.ptr(), buf.ptr(), 1 << 20, 1 << 20, ElementType::F16, PacketType::Ll16, &stream)?;
//! exec.synchronize(&stream)?;
//! # Ok(()) }
//! ```
//!
//! Every rank must make the same sequence of `execute` calls (same plans, same sizes): the first call with a
//! plan and a pair of allocations sets up the context collectively, and packet flags advance in lock step.
//! A plan whose peers never address the caller's buffers ([`ExecutionPlan::buffers_independent`]) has contexts
//! keyed by the message size's power-of-two class instead, so the caller's buffers may change freely.
//! A CUDA graph may capture `execute` once the context and device plan exist (after one eager call with the
//! same shape, or for such a plan the same sizes); replays advance the packet flags in device memory, so they
//! stay correct.

mod ahead;
mod context;
pub mod records;

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use mscclpp_lang::plan::{Collective, Layout, Plan, Protocol, read_plan};
use mscclpp_sys::device_plan::LaunchArgs;
use mscclpp_sys::driver::{Device, DevicePtr, Function, LaunchConfig, Stream, address_range, buffer_id};
use mscclpp_sys::interpreter::{BlockSize, ElementType, PacketType, SOURCE, SOURCE_NAME, entry_defines, kernel_name};

/// Which interpreter entry point a launch takes: the generic one, or a plan-specialised program by its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Program {
    Generic,
    Fixed(u64),
}

/// An entry point: the program, element type, packet format and block size class.
type EntryKey = (Program, ElementType, PacketType, BlockSize);

/// When plan-specialised entry points run (`MSCCLPP_FIXED_KERNELS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum FixedMode {
    /// Never: every plan runs on the generic interpreter.
    Off,
    /// The embedded ones (the default plans); other plans run on the generic interpreter.
    Embedded,
    /// The default: the embedded ones, and the program of a plan whose operation sequences none of them has (a
    /// program the user named or wrote, an MSCCL++ JSON plan) compiled by NVRTC on its first bind, then cached on
    /// disk. A default plan in an element type or packet format without its embedded entry point runs on the
    /// generic interpreter, so that a default collective never waits for NVRTC.
    Auto,
    /// The embedded ones, and any other plan's compiled by NVRTC on its first bind (then cached on disk); with an
    /// edited interpreter source, every plan's, compiled from it.
    Compile,
}

impl FixedMode {
    /// Whether a program with no entry point loaded for the records of signature `hash` is compiled.
    fn compiles(self, hash: u64) -> bool {
        match self {
            FixedMode::Off | FixedMode::Embedded => false,
            FixedMode::Auto => !embedded_programs().contains(&hash),
            FixedMode::Compile => true,
        }
    }
}

/// The signatures of the embedded programs (whatever their element types, packet formats and block sizes).
fn embedded_programs() -> &'static HashSet<u64> {
    static EMBEDDED: OnceLock<HashSet<u64>> = OnceLock::new();
    EMBEDDED.get_or_init(|| mscclpp_sys::fixed::embedded_entries().into_iter().map(|(hash, _)| hash).collect())
}

fn entry_name((program, dtype, packet, block): EntryKey) -> String {
    match program {
        Program::Generic => kernel_name(dtype, packet, block),
        Program::Fixed(hash) => mscclpp_sys::fixed::kernel_name(hash, dtype, packet, block),
    }
}

use crate::communicator::Communicator;
use crate::error::{Error, Result};
use crate::kernel::{GpuContext, Kernel, KernelBuilder};
use ahead::{Ahead, Taken};
use context::{BufferKey, PlanContext};
use records::Shape;

/// A parsed plan with an identity for context caching.
#[derive(Clone, Debug)]
pub struct ExecutionPlan {
    plan: Arc<Plan>,
    /// Key of the context cache (cloned on every launch, so shared).
    id: Arc<str>,
    /// Whether any operation reads or writes LL packets (checked against the packet type of every launch).
    uses_packets: bool,
    /// Whether peers never address the caller's buffers (see [`ExecutionPlan::buffers_independent`]).
    independent: bool,
}

impl ExecutionPlan {
    /// Wrap a parsed plan.
    pub fn new(plan: Plan) -> Result<Self> {
        let text = serde_json::to_string(&plan).map_err(|e| Error::InvalidArgument(format!("plan: {e}")))?;
        let id = format!("{}#{}", plan.name, &blake3::hash(text.as_bytes()).to_hex()[..16]).into();
        let uses_packets = plan.uses_packets();
        let independent = context::buffers_independent(&plan);
        Ok(ExecutionPlan { plan: Arc::new(plan), id, uses_packets, independent })
    }

    /// Read and validate a JSON plan file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let plan = read_plan(path.as_ref()).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Self::new(plan)
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether no peer ever addresses the caller's input or output (they reach each other only through
    /// scratch: the LL plans, for one). Such a plan's context does not depend on the caller's buffers: nothing
    /// of theirs is registered, and a call on other buffers of a size already seen sets nothing up (no
    /// collective exchange, no allocation), so it may be captured in a CUDA graph on buffers never used before.
    pub fn buffers_independent(&self) -> bool {
        self.independent
    }
}

/// What one run of a plan works on: the caller's buffers (device addresses inside CUDA allocations), their sizes
/// in bytes, the element type and the packet format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operands {
    /// Input buffer.
    pub input: DevicePtr,
    /// Output buffer (the input's for an in-place run).
    pub output: DevicePtr,
    /// Input bytes.
    pub input_size: u64,
    /// Output bytes.
    pub output_size: u64,
    /// Element type.
    pub dtype: ElementType,
    /// Packet format of the LL operations.
    pub packet: PacketType,
}

/// Ranges registered as a whole that a call's buffers lie inside (symmetric windows: every rank registered a
/// range of the same size, and passes buffers at the same offsets of it), each as (start, bytes): a context set
/// up for them serves every call inside them, and a buffer's offset in its range travels in the device plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Within {
    /// The range the input lies inside.
    pub input: (DevicePtr, u64),
    /// The range the output lies inside.
    pub output: (DevicePtr, u64),
}

/// When one of two buffers lies inside the other (an in-place call), the outer one's start and size.
fn outer(a: DevicePtr, a_size: u64, b: DevicePtr, b_size: u64) -> Option<(DevicePtr, u64)> {
    if b <= a && a + a_size <= b + b_size {
        Some((b, b_size))
    } else if a <= b && b + b_size <= a + a_size {
        Some((a, a_size))
    } else {
        None
    }
}

/// One plan bound to a context, a device plan and an entry point ([`Executor::bind`]): what a launch needs.
#[derive(Clone, Debug)]
pub struct Bound {
    ctx: Arc<PlanContext>,
    dp: Arc<context::DevicePlan>,
    function: Function,
    config: LaunchConfig,
    independent: bool,
    buffers: (DevicePtr, DevicePtr),
    elem: u64,
    device: mscclpp_sys::driver::Device,
}

/// The identity of one context: its plan and the buffers it was set up for ([`Executor::context_key`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContextKey(Arc<str>, BufferKey);

impl ContextKey {
    /// The driver's ids of the input's and the output's allocations (the same id twice when one holds both).
    pub(crate) fn allocation_ids(&self) -> (u64, u64) {
        (self.1.input_id, self.1.output_id)
    }
}

/// Contexts by plan id and buffers.
type ContextCache = HashMap<ContextKey, Arc<PlanContext>>;

/// One interpreter entry point and the dynamic shared memory it currently allows (only ever raised).
#[derive(Debug)]
struct CachedFunction {
    function: Function,
    max_dynamic_shared: u32,
    /// The module holding it (kept loaded while the function is cached).
    _kernel: Kernel,
}

/// Runs execution plans on this rank's GPU.
pub struct Executor {
    comm: Arc<Communicator>,
    gpu: GpuContext,
    /// The whole interpreter as one module, when its cubin for this GPU is embedded (loaded at creation); else
    /// each entry point is compiled alone on first use (see [`Executor::function`]).
    kernel: Option<Kernel>,
    /// The interpreter source its entry points are compiled from when not embedded.
    source: std::borrow::Cow<'static, str>,
    /// Entry points by element type and packet format; the lock also covers raising their shared memory limit,
    /// so one launch never lowers the limit another one relies on.
    functions: Mutex<HashMap<EntryKey, CachedFunction>>,
    contexts: Mutex<ContextCache>,
    /// Contexts set up so far (each setup's bootstrap tags carry its serial).
    setups: std::sync::atomic::AtomicU64,
    /// This executor's id on its communicator: its contexts' setup messages carry it.
    id: u32,
    last: Mutex<Option<Arc<PlanContext>>>,
    /// The most shared memory a thread block may opt into on this GPU.
    max_shared: u32,
    /// Multiprocessors of the GPU: the interpreter runs one 1024-thread block per SM, and barriers, waits and
    /// semaphores need every thread block of a launch resident at once.
    sm_count: usize,
    /// When plan-specialised entry points run.
    fixed: FixedMode,
    /// Specialised programs whose first-use compile failed (not tried again).
    fixed_failed: Mutex<std::collections::HashSet<EntryKey>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("rank", &self.comm.rank()).finish()
    }
}

/// The packet format a run of `plan` uses: LL128 plans run with their 128-byte lines whatever the caller asks
/// for; other plans with the caller's LL16 or LL8 (LL128 lines serve only LL128 plans). An error names a plan
/// that cannot run with what was asked (LL128 asked for an LL plan; an LL128 plan of whole-warp-less blocks).
pub fn packet_format(plan: &Plan, asked: PacketType) -> Result<PacketType> {
    if plan.protocol == Protocol::Ll128 {
        let threads = plan.threads_per_block();
        if !threads.is_multiple_of(32) {
            return Err(Error::InvalidArgument(format!(
                "plan `{}` is LL128, whose lines are moved by whole warps, but runs {threads} threads per block; \
                 build it with a multiple of 32",
                plan.name
            )));
        }
        return Ok(PacketType::Ll128);
    }
    if asked == PacketType::Ll128 {
        return Err(Error::InvalidArgument(format!(
            "plan `{}` is {}: LL128 packets serve only LL128 plans; pass PacketType::Ll16 or Ll8",
            plan.name, plan.protocol
        )));
    }
    Ok(asked)
}

/// Every entry point of the loaded interpreter, resolved now and allowed all the dynamic shared memory the GPU lets a
/// thread block opt into.
///
/// CUDA loads a module's functions lazily (`CUDA_MODULE_LOADING=LAZY`, the default), on their first lookup, and
/// such a load waits for every kernel running on the GPU. Resolved at the first launch instead, a lookup would wait
/// for another executor's (or another communicator's) collective kernel, which itself waits for a peer rank whose
/// host thread may be stuck the same way: two ranks deadlock. So nothing a launch does may wait for the GPU; the
/// price is loading all entry points once per executor (a few milliseconds).
fn preload(kernel: &Kernel, max_shared: u32, fixed: FixedMode) -> Result<HashMap<EntryKey, CachedFunction>> {
    let mut keys = Vec::new();
    for packet in PacketType::ALL {
        for dtype in ElementType::ALL {
            for block in BlockSize::ALL {
                keys.push((Program::Generic, dtype, packet, block));
            }
        }
    }
    if fixed != FixedMode::Off {
        let embedded = mscclpp_sys::fixed::embedded_entries();
        keys.extend(
            embedded.into_iter().map(|(hash, (dtype, packet, block))| (Program::Fixed(hash), dtype, packet, block)),
        );
    }
    let mut functions = HashMap::new();
    for key in keys {
        let function = kernel.function(&entry_name(key))?;
        let dynamic = max_shared.saturating_sub(function.static_shared_mem()?);
        function.set_max_dynamic_shared_mem(dynamic)?;
        functions.insert(key, CachedFunction { function, max_dynamic_shared: dynamic, _kernel: kernel.clone() });
    }
    Ok(functions)
}

/// The embedded interpreter loaded on one GPU for one rank, every entry point resolved ([`preload`]).
struct Loaded {
    gpu: GpuContext,
    kernel: Kernel,
    functions: HashMap<EntryKey, CachedFunction>,
}

/// Loads started by [`warm_up`], by GPU ordinal, rank and specialised-kernel mode; the first executor made for
/// them takes theirs.
fn ahead() -> &'static Ahead<(usize, usize, FixedMode), Loaded> {
    static AHEAD: OnceLock<Ahead<(usize, usize, FixedMode), Loaded>> = OnceLock::new();
    AHEAD.get_or_init(Ahead::new)
}

/// When plan-specialised entry points run, for the interpreter `source`.
fn fixed_mode(source: &str) -> Result<FixedMode> {
    // An edited interpreter source (kernel development) has no embedded programs: it runs on its generic
    // interpreter, or with `compile` through programs compiled from it (the path the default plans take).
    let choice = mscclpp_config::FIXED_KERNELS.get().map_err(|e| Error::InvalidArgument(e.to_string()))?;
    Ok(fixed_mode_for(choice, source != SOURCE))
}

/// [`fixed_mode`] for the `MSCCLPP_FIXED_KERNELS` choice and whether the interpreter source is an edited one.
fn fixed_mode_for(choice: Option<&str>, edited: bool) -> FixedMode {
    match choice {
        Some("off") => FixedMode::Off,
        // An edited source has no embedded programs.
        Some("embedded") if edited => FixedMode::Off,
        Some("embedded") => FixedMode::Embedded,
        Some("compile") => FixedMode::Compile,
        _ if edited => FixedMode::Off,
        _ => FixedMode::Auto,
    }
}

/// Whether executors on `device` run the built-in interpreter embedded for its architecture (`source` is the
/// interpreter source in use: an edited one is compiled instead).
fn runs_embedded(device: &Device, source: &str) -> Result<bool> {
    Ok(source == SOURCE && mscclpp_sys::interpreter::embedded_for(&device.arch()?))
}

fn load_interpreter(device: Device, rank: usize, fixed: FixedMode) -> Result<Loaded> {
    let gpu = GpuContext::new(device, rank)?;
    let kernel = KernelBuilder::new(SOURCE_NAME, SOURCE).build(&gpu)?;
    let functions = preload(&kernel, device.max_shared_memory_per_block_optin()?, fixed)?;
    Ok(Loaded { gpu, kernel, functions })
}

/// The embedded interpreter of `device` for `rank`: the one [`warm_up`] loaded (waiting, bounded, while it is under
/// way), or loaded now. Each executor gets a module of its own (its kernels report into its own error slot).
fn embedded_interpreter(device: Device, rank: usize, fixed: FixedMode) -> Result<Loaded> {
    let limit = crate::env::wait_timeout();
    match ahead().take(&(device.ordinal(), rank, fixed), limit) {
        Taken::Done(l) => Ok(l),
        Taken::TimedOut => Err(mscclpp_sys::Error::Timeout {
            what: format!(
                "the interpreter's load on GPU {} by another thread (a load waits for the kernels running on the \
                 GPU: is one of them waiting for a peer?)",
                device.ordinal()
            ),
            millis: limit.as_millis() as u64,
        }
        .into()),
        // Loaded again here, so that an error reported is this thread's own.
        Taken::Failed(_) | Taken::NotStarted => load_interpreter(device, rank, fixed),
    }
}

/// Start loading the interpreter embedded for `device` on a thread of its own, for `rank`, so that the next
/// executor made there (the first collective's) finds it loaded: the load (80–150 ms on an H100 or H200) overlaps
/// what the caller does meanwhile. Does nothing where a load is under way or waiting to be taken, or where no
/// interpreter is embedded for the GPU (each entry point is then compiled at its first use). CUDA loads functions
/// lazily and such a load waits for the kernels running on the GPU, so call it where none of this process's kernels
/// waits for a peer that might wait for this one: right after a communicator is made, before its first collective.
pub fn warm_up(device: Device, rank: usize) {
    let fixed = || -> Result<Option<FixedMode>> {
        let source = mscclpp_sys::interpreter::source()?;
        Ok(if runs_embedded(&device, &source)? { Some(fixed_mode(&source)?) } else { None })
    };
    let Ok(Some(fixed)) = fixed() else { return };
    ahead().start((device.ordinal(), rank, fixed), "mscclpp-load", move || {
        let loaded = load_interpreter(device, rank, fixed).map_err(|e| e.to_string());
        crate::startup::mark("executor: interpreter loaded ahead");
        loaded
    });
}

impl Executor {
    /// An executor for the communicator's rank and GPU. Several executors may share one communicator and run
    /// concurrently (each sets up its own connections, semaphores and scratch), provided every rank creates them
    /// in the same order ([`Communicator::next_executor_id`]). Loads the interpreter embedded for the GPU's
    /// architecture; on a GPU with no embedded interpreter, each entry point (element type and packet format) is
    /// compiled by NVRTC, or taken from the kernel cache, when a launch first needs it.
    pub fn new(comm: Arc<Communicator>) -> Result<Self> {
        let device = *comm.device();
        let source = mscclpp_sys::interpreter::source()?;
        let fixed = fixed_mode(&source)?;
        let (gpu, kernel, functions) = if runs_embedded(&device, &source)? {
            let l = embedded_interpreter(device, comm.rank(), fixed)?;
            (l.gpu, Some(l.kernel), l.functions)
        } else {
            (GpuContext::new(device, comm.rank())?, None, HashMap::new())
        };
        let max_shared = device.max_shared_memory_per_block_optin()?;
        let sm_count = device.multiprocessor_count()?;
        let id = comm.next_executor_id();
        crate::startup::mark("executor: interpreter loaded");
        Ok(Executor {
            comm,
            gpu,
            kernel,
            source,
            functions: Mutex::new(functions),
            contexts: Mutex::new(HashMap::new()),
            setups: std::sync::atomic::AtomicU64::new(0),
            id,
            last: Mutex::new(None),
            max_shared,
            sm_count,
            fixed,
            fixed_failed: Mutex::new(Default::default()),
        })
    }

    /// The communicator.
    pub fn communicator(&self) -> &Arc<Communicator> {
        &self.comm
    }

    /// The generic entry point for `dtype`, `packet` and blocks of `threads` threads, allowing at least
    /// `shared_bytes` of dynamic shared memory: the limit is raised (under the cache's lock) only when it is
    /// lower, and never lowered.
    fn function(
        &self,
        plan: &str,
        (dtype, packet, threads): (ElementType, PacketType, u32),
        shared_bytes: u32,
    ) -> Result<Function> {
        let key = (Program::Generic, dtype, packet, BlockSize::for_threads(threads));
        let build = || -> Result<Option<Kernel>> {
            Ok(Some(match &self.kernel {
                Some(k) => k.clone(),
                None => {
                    let mut b = KernelBuilder::new(SOURCE_NAME, self.source.as_ref());
                    for d in entry_defines(dtype, packet, key.3) {
                        b = b.define(d);
                    }
                    b.build(&self.gpu)?
                }
            }))
        };
        self.entry(plan, key, build, shared_bytes)?.ok_or_else(|| {
            Error::InvalidArgument(format!("plan `{plan}`: no interpreter entry point {}", entry_name(key)))
        })
    }

    /// The plan-specialised entry point of the program `signature` hashes to (see [`Self::function`] for the
    /// shared memory), when there is one: embedded, loaded before, or compiled now from `signature` when the
    /// mode compiles it ([`FixedMode::compiles`]: by default a program none is embedded for).
    fn fixed_function(
        &self,
        plan: &str,
        hash: u64,
        signature: Option<&mscclpp_sys::fixed::Signature>,
        (dtype, packet, threads): (ElementType, PacketType, u32),
        shared_bytes: u32,
    ) -> Result<Option<Function>> {
        if self.fixed == FixedMode::Off {
            return Ok(None);
        }
        let key = (Program::Fixed(hash), dtype, packet, BlockSize::for_threads(threads));
        let build = || -> Result<Option<Kernel>> {
            let Some(sig) = signature.filter(|s| s.hash == hash && self.fixed.compiles(hash)) else {
                return Ok(None);
            };
            let mut failed =
                self.fixed_failed.lock().map_err(|_| Error::Poisoned { what: "the failed-compile set" })?;
            if failed.contains(&key) {
                return Ok(None);
            }
            let header = mscclpp_sys::fixed::header_source(
                &[(sig, vec![(dtype, packet, key.3)])],
                &format!("plan `{plan}`, compiled on its first bind"),
            );
            // One line when NVRTC runs (not when the kernel cache holds the cubin), naming the plan.
            let built = KernelBuilder::new(SOURCE_NAME, self.source.as_ref())
                .purpose(format!("the interpreter specialised for plan `{plan}`, {}", entry_name(key)))
                .define("MSCCLPP_FIXED_ONLY")
                .header(mscclpp_sys::fixed::ONE_HEADER, header)
                .build(&self.gpu);
            match built {
                Ok(k) => Ok(Some(k)),
                // The generic interpreter runs the plan just as well: say why once and use it (without NVRTC,
                // once for every plan).
                Err(e) => {
                    match e {
                        Error::Sys(mscclpp_sys::Error::NoNvrtc { .. }) => crate::tune::warn_once(&format!(
                            "plans without an embedded program run on the generic interpreter: {e} \
                             (MSCCLPP_FIXED_KERNELS=embedded says not to try)"
                        )),
                        e => eprintln!(
                            "mscclpp: plan `{plan}` runs on the generic interpreter: its program did not build: {e}"
                        ),
                    }
                    failed.insert(key);
                    Ok(None)
                }
            }
        };
        self.entry(plan, key, build, shared_bytes)
    }

    /// The cached entry point `key`, else the one `build`'s module holds (none when `build` gives no module);
    /// its dynamic shared memory limit raised to `shared_bytes` when lower.
    fn entry(
        &self,
        plan: &str,
        key: EntryKey,
        build: impl FnOnce() -> Result<Option<Kernel>>,
        shared_bytes: u32,
    ) -> Result<Option<Function>> {
        let mut cache = self.functions.lock().map_err(|_| Error::Poisoned { what: "the kernel function cache" })?;
        let cached = match cache.entry(key) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                let Some(kernel) = build()? else { return Ok(None) };
                let function = kernel.function(&entry_name(key))?;
                // Without opting in: 48 KiB less the kernel's static shared memory.
                let max_dynamic_shared = function.max_dynamic_shared_mem()?;
                v.insert(CachedFunction { function, max_dynamic_shared, _kernel: kernel })
            }
        };
        if shared_bytes > cached.max_dynamic_shared {
            let limit = self.max_shared.saturating_sub(cached.function.static_shared_mem()?);
            if shared_bytes > limit {
                return Err(Error::InvalidArgument(format!(
                    "plan `{plan}` needs {shared_bytes} B of shared memory per thread block, more than the {limit} B \
                     the interpreter can have on this GPU; split its thread blocks"
                )));
            }
            cached.function.set_max_dynamic_shared_mem(shared_bytes)?;
            cached.max_dynamic_shared = shared_bytes;
        }
        Ok(Some(cached.function.clone()))
    }

    /// Queue one run of `plan` on `stream`: `input` (`input_size` bytes) and `output` (`output_size` bytes) are
    /// device pointers inside CUDA allocations (in place: the same allocation). Returns once the launch is
    /// queued; call [`Executor::synchronize`] (or synchronize the stream yourself) to wait.
    ///
    /// Errors, before anything is launched: a plan for another world size, a message size outside the plan's
    /// range or not splittable into its chunks, a pointer outside any CUDA allocation or not on an element
    /// boundary of `dtype`, a stream of another GPU.
    #[allow(clippy::too_many_arguments)]
    pub fn execute(
        &self,
        plan: &ExecutionPlan,
        input: DevicePtr,
        output: DevicePtr,
        input_size: u64,
        output_size: u64,
        dtype: ElementType,
        packet: PacketType,
        stream: &Stream,
    ) -> Result<()> {
        if stream.device().ordinal() != self.comm.device().ordinal() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to GPU {} but this rank's communicator runs on GPU {}; pass a stream of GPU {}",
                stream.device().ordinal(),
                self.comm.device().ordinal(),
                self.comm.device().ordinal()
            )));
        }
        let ops = Operands { input, output, input_size, output_size, dtype, packet };
        let bound = self.bind(plan, &ops)?;
        self.launch(&bound, input, output, stream)
    }

    /// Everything one run of `plan` needs short of the launch: the checks [`Executor::execute`] makes, the
    /// context (set up collectively on first use: every rank binds the same plans in the same order) and the
    /// device plan. [`Executor::launch`] then queues a run with a few pointer checks, so a caller that runs the
    /// same call many times binds once. A bound plan whose peers never address the caller's buffers
    /// ([`ExecutionPlan::buffers_independent`]) runs on any buffers of the bound sizes; any other only on the
    /// allocations it was bound with.
    pub fn bind(&self, plan: &ExecutionPlan, ops: &Operands) -> Result<Bound> {
        self.bind_within(plan, ops, None)
    }

    /// [`Executor::bind`] for buffers inside ranges registered as a whole (`within`, see [`Within`]): the
    /// context is set up (collectively, at the first bind of the plan on these ranges) for the ranges, not the
    /// buffers, so every rank must bind with ranges of the same sizes and buffers at the same offsets in them.
    pub fn bind_within(&self, plan: &ExecutionPlan, ops: &Operands, within: Option<Within>) -> Result<Bound> {
        let p = &plan.plan;
        let rank = self.comm.rank();
        let Operands { input, output, input_size, output_size, dtype, packet } = *ops;
        let packet = packet_format(p, packet)?;
        let key = self.buffer_key(plan, ops, within)?;
        // The entry point first: compiling or loading it (when not embedded and preloaded) may wait for kernels
        // running on this GPU, so it must happen before a collective setup lets the peers launch (a peer's kernel
        // sharing the GPU would wait for ours, ours for the load).
        let entry = (dtype, packet, p.threads_per_block());
        self.function(&p.name, entry, 0)?;
        let shape = Shape {
            input_size,
            output_size,
            // Zero but in place, where the inner buffer sits inside the registered outer one (see `buffer_key`);
            // a buffer-independent plan's references never carry them.
            const_src_offset: if plan.independent { 0 } else { input - key.input_base },
            const_dst_offset: if plan.independent { 0 } else { output - key.output_base },
            dtype,
        };
        let ctx_key = ContextKey(plan.id.clone(), key);
        // A bind of a shape bound before finds both; only a new shape builds records (once) and goes on.
        let cached = self
            .contexts
            .lock()
            .map_err(|_| Error::Poisoned { what: "the executor's context cache" })?
            .get(&ctx_key)
            .cloned();
        let cached_dp = match &cached {
            Some(ctx) => ctx.cached_device_plan(shape)?,
            None => None,
        };
        // A specialised program compiled on first use is loaded now too, from the records' signature; the same
        // records then make the device plan.
        let mut built = None;
        if cached_dp.is_none()
            && matches!(self.fixed, FixedMode::Auto | FixedMode::Compile)
            && let Ok(recs) = records::build(p, rank, shape)
        {
            let sig = recs.signature();
            self.fixed_function(&p.name, sig.hash, Some(&sig), entry, 0)?;
            built = Some(recs);
        }
        crate::startup::mark("executor: entry point ready");
        let ctx = match cached {
            Some(ctx) => ctx,
            None => {
                let mut contexts =
                    self.contexts.lock().map_err(|_| Error::Poisoned { what: "the executor's context cache" })?;
                match contexts.entry(ctx_key) {
                    Entry::Occupied(c) => c.get().clone(),
                    Entry::Vacant(v) => {
                        // The setups made so far, not the cache's size: a context forgotten on one rank must not
                        // shift the bootstrap tags of later setups between the ranks.
                        let serial = self.setups.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let ctx = Arc::new(PlanContext::new(&self.comm, plan.plan.clone(), key, self.id, serial)?);
                        crate::startup::mark("executor: plan context set up");
                        v.insert(ctx).clone()
                    }
                }
            }
        };
        let dp = match cached_dp {
            Some(dp) => dp,
            None => ctx.device_plan(&self.comm, shape, built)?,
        };
        crate::startup::mark("executor: device plan ready");
        let shared_bytes = dp.header.block_stride;
        // The program specialised for the uploaded records when there is one loaded, else the generic one.
        let function = match self.fixed_function(&p.name, dp.fixed, None, entry, shared_bytes)? {
            Some(f) => f,
            None => self.function(&p.name, entry, shared_bytes)?,
        };
        let n_tbs = dp.header.n_tbs;
        if n_tbs as usize > self.sm_count {
            return Err(Error::InvalidArgument(format!(
                "plan `{}` runs {n_tbs} thread blocks on rank {rank}, but the GPU has {} multiprocessors and the \
                 interpreter needs every thread block resident at once (barriers, waits and semaphores would \
                 deadlock); build the plan with fewer instances",
                p.name, self.sm_count
            )));
        }
        let config =
            LaunchConfig { grid: (n_tbs, 1, 1), block: (p.threads_per_block(), 1, 1), shared_mem_bytes: shared_bytes };
        Ok(Bound {
            ctx,
            dp,
            function,
            config,
            independent: plan.independent,
            buffers: (input, output),
            elem: dtype.size().max(1) as u64,
            device: *self.comm.device(),
        })
    }

    /// Queue one run of `bound` on `stream` with `input` and `output`: for a plan bound buffer-independent, any
    /// buffers of the bound sizes (the caller vouches that they lie inside live allocations, as NCCL's API
    /// does); otherwise exactly the bound pointers.
    pub fn launch(&self, bound: &Bound, input: DevicePtr, output: DevicePtr, stream: &Stream) -> Result<()> {
        if !bound.independent && (input, output) != bound.buffers {
            return Err(Error::InvalidArgument(format!(
                "plan `{}` was bound to the buffers {:#x}/{:#x}, not {input:#x}/{output:#x}; bind it again for these",
                bound.ctx.plan.name, bound.buffers.0, bound.buffers.1
            )));
        }
        // The interpreter reads and writes whole elements: a pointer between elements would fault on the GPU.
        for (what, ptr) in [("input", input), ("output", output)] {
            if !ptr.is_multiple_of(bound.elem) || ptr == 0 {
                return Err(Error::InvalidArgument(format!(
                    "the {what} pointer {ptr:#x} is not a non-null pointer to a whole {}-byte element; pass a \
                     pointer to a whole element (CUDA allocations start 256-byte aligned)",
                    bound.elem
                )));
            }
        }
        if stream.device().ordinal() != bound.device.ordinal() {
            return Err(Error::InvalidArgument(format!(
                "the stream belongs to GPU {} but this plan is bound on GPU {}",
                stream.device().ordinal(),
                bound.device.ordinal()
            )));
        }
        if bound.config.grid.0 == 0 {
            return Ok(());
        }
        let (ctx, dp) = (&bound.ctx, &bound.dp);
        let args = LaunchArgs {
            plan: dp.mem.ptr(),
            input,
            output,
            scratch: ctx.scratch.ptr(),
            scratch_half: ctx.scratch_half,
            flags: ctx.flags.ptr(),
            blocks: dp.header.blocks,
            block_stride: dp.header.block_stride,
            reserved: 0,
            syncers: ctx.syncers.ptr(),
            semaphores: ctx.semaphores.ptr(),
            mem_channels: dp.header.mem_channels,
        };
        // SAFETY: `LaunchArgs` matches the kernel's only parameter (layout probe); every pointer in it is owned
        // by the bound context and device plan, which the executor's cache keeps alive as long as the executor,
        // or is the caller's buffer: checked inside a live allocation of the needed size when bound, and for a
        // buffer-independent plan vouched for by the caller.
        unsafe { bound.function.launch_value(stream, bound.config, &args)? };
        if let Ok(mut last) = self.last.try_lock()
            && !last.as_ref().is_some_and(|l| Arc::ptr_eq(l, ctx))
        {
            *last = Some(ctx.clone());
        }
        Ok(())
    }

    /// The context key of a call (its checks are [`Executor::execute`]'s).
    fn buffer_key(&self, plan: &ExecutionPlan, ops: &Operands, within: Option<Within>) -> Result<BufferKey> {
        let Operands { input, output, input_size, output_size, dtype, packet } = *ops;
        let p = &plan.plan;
        let rank = self.comm.rank();
        if p.world_size() != self.comm.size() {
            return Err(Error::PlanMismatch {
                plan: p.name.clone(),
                rank,
                reason: format!(
                    "it is for {} ranks but this job has {}; generate the plan for {} ranks",
                    p.world_size(),
                    self.comm.size(),
                    self.comm.size()
                ),
            });
        }
        // A rank with neither input nor output chunks (the DSL's unit tests) runs the message as one chunk.
        match Layout::new(p, rank, input_size, output_size) {
            Ok(_) | Err(mscclpp_lang::plan::SizeError::NoChunks { .. }) => {}
            Err(e) => return Err(Error::PlanMismatch { plan: p.name.clone(), rank, reason: e.to_string() }),
        }
        // A packet starts at twice its payload offset: LL16 packets (8 payload bytes, 16-byte stores) need payload
        // offsets on 8-byte boundaries, LL8 packets on 4-byte ones.
        let payload = packet.payload() as u64;
        if plan.uses_packets && !p.alignment().is_multiple_of(payload) {
            return Err(Error::InvalidArgument(format!(
                "plan `{}` uses packets with a buffer alignment of {} B, but {packet:?} packets carry {payload} B \
                 of payload and need it to be a multiple of {payload} B; run it with LL8 packets or regenerate \
                 the plan with a larger buffer_alignment",
                p.name,
                p.alignment()
            )));
        }
        // The interpreter reads and writes whole elements: a pointer between elements would fault on the GPU.
        let elem = dtype.size().max(1) as u64;
        for (what, ptr) in [("input", input), ("output", output)] {
            if !ptr.is_multiple_of(elem) {
                return Err(Error::InvalidArgument(format!(
                    "the {what} pointer {ptr:#x} is not aligned to the {elem}-byte elements of {}; pass a pointer to a \
                     whole element (CUDA allocations start 256-byte aligned)",
                    dtype.as_str()
                )));
            }
        }
        let device = self.comm.device();
        let (input_base, input_range) = address_range(device, input)?;
        // In place (or inside the input's allocation): the same allocation, queried once.
        let same = output >= input_base && output - input_base < input_range;
        let (output_base, output_range) = if same { (input_base, input_range) } else { address_range(device, output)? };
        if input - input_base + input_size > input_range || output - output_base + output_size > output_range {
            return Err(Error::InvalidArgument(format!(
                "the message ({input_size} B in, {output_size} B out) runs past the end of its CUDA allocation"
            )));
        }
        let key = if plan.independent {
            context::independent_key(input_size, output_size)
        } else if let Some(w) = within {
            let inside =
                |ptr: DevicePtr, size: u64, (base, range): (DevicePtr, u64)| ptr >= base && ptr - base + size <= range;
            if !inside(input, input_size, w.input) || !inside(output, output_size, w.output) {
                return Err(Error::InvalidArgument(format!(
                    "the buffers {input:#x} ({input_size} B) and {output:#x} ({output_size} B) are not inside the \
                     registered ranges {:#x} ({} B) and {:#x} ({} B)",
                    w.input.0, w.input.1, w.output.0, w.output.1
                )));
            }
            BufferKey {
                input_base: w.input.0,
                input_range: w.input.1,
                input_id: buffer_id(device, w.input.0)?,
                output_base: w.output.0,
                output_range: w.output.1,
                output_id: buffer_id(device, w.output.0)?,
            }
        } else {
            // The call's buffers, not their whole allocations: peers map what this rank registers, and the same
            // tensor may sit at different offsets of its allocation on different ranks (each rank's caching
            // allocator places it), so only the buffers' own starts line up between ranks. In place (one buffer
            // inside the other: an all-gather's input in its output, a reduce-scatter's output in its input),
            // both are registered from the outer buffer's start, and the inner one's offset there travels in the
            // device plan: a remote reference to a peer's inner buffer then lands at the accessing rank's offset,
            // as MSCCL++'s executor (and the CPU verifier) define it. The allocations' ids as well: a buffer freed
            // and another allocated at the same address must not reuse the context that peers mapped the freed
            // one into.
            let input_id = buffer_id(device, input)?;
            let output_id = if same { input_id } else { buffer_id(device, output)? };
            let (base, range) = outer(input, input_size, output, output_size).unwrap_or((input, input_size));
            let (out_base, out_range) = outer(input, input_size, output, output_size).unwrap_or((output, output_size));
            BufferKey {
                input_base: base,
                input_range: range,
                input_id,
                output_base: out_base,
                output_range: out_range,
                output_id,
            }
        };
        Ok(key)
    }

    /// The identity of the context `plan` runs with on these buffers (an error: the call is not one `plan` can
    /// run on them), for [`Executor::has_context`] and [`Executor::forget_context`].
    pub fn context_key(&self, plan: &ExecutionPlan, ops: &Operands) -> Result<ContextKey> {
        Ok(ContextKey(plan.id.clone(), self.buffer_key(plan, ops, None)?))
    }

    /// Whether the context `key` names is set up already: a local answer, which ranks whose allocations differ
    /// agree on before binding (see [`crate::frontend`]).
    pub fn has_context(&self, key: &ContextKey) -> bool {
        self.contexts.lock().is_ok_and(|c| c.contains_key(key))
    }

    /// Forget the context `key` names, if set up (its memory goes once no [`Bound`] holds it); the next bind of it
    /// sets a new one up, collectively.
    pub fn forget_context(&self, key: &ContextKey) {
        if let Ok(mut c) = self.contexts.lock() {
            c.remove(key);
        }
    }

    /// Forget every context set up on the range `(start, bytes)` as a whole ([`Executor::bind_within`]), as
    /// input or output (their memory goes once no [`Bound`] holds them).
    pub fn forget_contexts_within(&self, range: (DevicePtr, u64)) {
        if let Ok(mut c) = self.contexts.lock() {
            c.retain(|ContextKey(_, k), _| {
                (k.input_base, k.input_range) != range && (k.output_base, k.output_range) != range
            });
        }
    }

    /// Wait for `stream`, bounded by `MSCCLPP_WAIT_TIMEOUT_MS`. A device wait that expired is reported with the
    /// rank, thread block, operation, channel and peer (a peer that never called shows up here).
    pub fn synchronize(&self, stream: &Stream) -> Result<()> {
        self.gpu.synchronize(stream).map_err(|e| self.explain(e))
    }

    /// The error to report for `e`, a failure of work this executor queued, however it surfaced (a
    /// [`Executor::synchronize`], a CUDA graph replay or an event): when a device wait of one of its kernels ran
    /// past `MSCCLPP_WAIT_TIMEOUT_MS`, that wait (rank, thread block, operation, channel and peer), whatever `e`
    /// says; else `e`. A trapped kernel leaves the CUDA context lost ([`mscclpp_sys::driver::context_lost`]):
    /// report the error and exit.
    pub fn explain(&self, e: Error) -> Error {
        self.device_report().unwrap_or_else(|| self.describe(e))
    }

    /// The expired device wait of one of this executor's kernels, if any, described as [`Executor::explain`]
    /// does (e.g. to replace an error that surfaced elsewhere, such as a failed event record after the kernel
    /// trapped).
    pub fn device_report(&self) -> Option<Error> {
        self.gpu.check().err().map(|report| self.describe(report))
    }

    /// A device wait report with the plan's operation added; other errors unchanged.
    fn describe(&self, e: Error) -> Error {
        match e {
            Error::Sys(mscclpp_sys::Error::DeviceWait(report)) => Error::InvalidArgument(self.describe_wait(&report)),
            e => e,
        }
    }

    /// The report of a device wait of this executor's kernels that expired, if one did: the rank, wait,
    /// channel, peer, thread block and, when known, the operation and plan. Never blocks (it reads the error
    /// slot in mapped host memory and takes no lock a launch holds), so a watchdog thread may poll it.
    pub fn device_error(&self) -> Option<String> {
        match self.gpu.check() {
            Err(Error::Sys(mscclpp_sys::Error::DeviceWait(report))) => Some(self.describe_wait(&report)),
            _ => None,
        }
    }

    /// `report` with the operation and plan the thread block was at (from the last launch's plan).
    fn describe_wait(&self, report: &mscclpp_sys::handles::DeviceWaitReport) -> String {
        let last = self.last.try_lock().ok().and_then(|l| l.clone());
        let at = last.as_ref().and_then(|c| {
            let op = report.op?;
            let tb = c.plan.gpus.get(c.rank)?.threadblocks.get(report.block as usize)?;
            let name = flat_op_name(tb, op as usize)?;
            // A packet read has no channel, so the device cannot name whom it waited for; the plan can.
            let from = if report.peer.is_none() {
                let peers = mscclpp_lang::verify::peers_writing_what_op_reads(
                    &c.plan,
                    c.rank,
                    report.block as usize,
                    op as usize,
                );
                let named: Vec<String> = peers.iter().map(|q| format!("peer rank {q}")).collect();
                if named.is_empty() { String::new() } else { format!(", whose data comes from {}", named.join(" or ")) }
            } else {
                String::new()
            };
            Some(format!(" at operation {op} (`{name}`) of plan `{}`{from}", c.plan.name))
        });
        format!("{report}{}", at.map(|s| format!("; thread block {} was{s}", report.block)).unwrap_or_default())
    }

    /// The output size a collective needs for `input_size` bytes of input on `world` ranks.
    pub fn output_size(collective: Collective, world: u64, input_size: u64) -> u64 {
        match collective {
            Collective::AllGather => input_size * world,
            Collective::ReduceScatter => input_size / world.max(1),
            _ => input_size,
        }
    }
}

fn flat_op_name(tb: &mscclpp_lang::plan::ThreadBlock, index: usize) -> Option<&'static str> {
    let mut i = 0;
    for op in &tb.ops {
        if i == index {
            return Some(op.name.as_str());
        }
        i += 1;
        for inner in op.inner() {
            if i == index {
                return Some(inner.name.as_str());
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{FixedMode, fixed_mode_for, outer};

    #[test]
    fn specialised_programs_compile_by_default_and_from_an_edited_source_only_when_asked() {
        assert_eq!(fixed_mode_for(None, false), FixedMode::Auto);
        assert_eq!(fixed_mode_for(Some("auto"), false), FixedMode::Auto);
        assert_eq!(fixed_mode_for(None, true), FixedMode::Off);
        assert_eq!(fixed_mode_for(Some("auto"), true), FixedMode::Off);
        assert_eq!(fixed_mode_for(Some("embedded"), false), FixedMode::Embedded);
        assert_eq!(fixed_mode_for(Some("embedded"), true), FixedMode::Off);
        assert_eq!(fixed_mode_for(Some("compile"), true), FixedMode::Compile);
        assert_eq!(fixed_mode_for(Some("compile"), false), FixedMode::Compile);
        assert_eq!(fixed_mode_for(Some("off"), false), FixedMode::Off);
        assert_eq!(fixed_mode_for(Some("off"), true), FixedMode::Off);
    }

    #[test]
    fn by_default_only_programs_none_is_embedded_for_are_compiled() {
        let embedded = mscclpp_sys::fixed::embedded_entries();
        assert!(!embedded.is_empty(), "the embedded header lists no programs");
        let (hash, _) = embedded[0];
        assert!(!FixedMode::Auto.compiles(hash), "a default plan's program in another element type compiled");
        assert!(FixedMode::Compile.compiles(hash));
        let other =
            (0..).map(|i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).find(|h| !embedded.iter().any(|e| e.0 == *h));
        let other = other.unwrap_or_default();
        assert!(FixedMode::Auto.compiles(other) && FixedMode::Compile.compiles(other));
        assert!(!FixedMode::Embedded.compiles(other) && !FixedMode::Off.compiles(other));
    }

    #[test]
    fn in_place_buffers_register_from_the_outer_one() {
        // An in-place all-gather on 2 ranks, rank 1: its 256-byte input is the second half of its output.
        assert_eq!(outer(0x1100, 256, 0x1000, 512), Some((0x1000, 512)));
        // An in-place reduce-scatter, rank 1: its output is the second half of its input.
        assert_eq!(outer(0x1000, 512, 0x1100, 256), Some((0x1000, 512)));
        // In place, same buffer.
        assert_eq!(outer(0x1000, 512, 0x1000, 512), Some((0x1000, 512)));
        // Out of place, even in one allocation: each buffer on its own.
        assert_eq!(outer(0x1000, 256, 0x1100, 256), None);
        assert_eq!(outer(0x1000, 256, 0x1080, 256), None, "overlapping but neither inside the other");
    }
}
