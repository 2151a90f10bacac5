//! `mscclpp info`: what this process would run with. The resolved configuration (every declared variable, its
//! value and whether it is the default), the GPUs and the links between them, the CUDA driver and NVRTC
//! versions, the InfiniBand devices, and whether NVLink multicast is allowed. Whatever cannot be queried (no
//! driver, no GPU, no NVRTC, a build without InfiniBand) is reported with the reason; the command still succeeds.

use std::process::ExitCode;

use mscclpp_config::Source;
use mscclpp_exec::sys;
use serde::Serialize;

/// Arguments of `mscclpp info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A query's answer, or why there is none.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Probe<T> {
    /// The answer.
    Ok(T),
    /// Why it could not be queried.
    Unavailable(String),
}

impl<T> Probe<T> {
    fn from_result<E: std::fmt::Display>(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Probe::Ok(v),
            Err(e) => Probe::Unavailable(e.to_string()),
        }
    }
}

/// One configuration variable as resolved now.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigEntry {
    /// The variable.
    pub name: &'static str,
    /// Who reads it: library, examples, test-only or scripts.
    pub scope: &'static str,
    /// The value in effect, or the description of the default.
    pub value: String,
    /// `default`, `environment` or `invalid`.
    pub source: &'static str,
    /// For an invalid value: what is wrong and what is accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One GPU.
#[derive(Clone, Debug, Serialize)]
pub struct Gpu {
    /// Ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: String,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// Whether the GPU supports multicast objects (`CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED`).
    pub multicast_supported: bool,
    /// Where its plan interpreter comes from: the embedded cubin of an architecture, or NVRTC.
    pub interpreter: String,
}

/// One architecture's cubins in the kernel cache.
#[derive(Clone, Debug, Serialize)]
pub struct CachedArch {
    /// Architecture, e.g. `sm_90`.
    pub arch: String,
    /// Number of cubins.
    pub cubins: usize,
    /// Their total size.
    pub bytes: u64,
}

/// The device kernels: what this build embeds and what the kernel cache holds.
#[derive(Clone, Debug, Serialize)]
pub struct Kernels {
    /// Architectures the interpreter and primitives are embedded for (compiled when this binary was built).
    pub embedded_archs: Vec<String>,
    /// Why nothing is embedded (empty when something is).
    pub not_embedded: String,
    /// NVRTC version that compiled the embedded cubins.
    pub embedded_nvrtc: String,
    /// The embedded cubins were built from the device sources compiled into this binary.
    pub embedded_current: bool,
    /// Whether embedded kernels are used (`MSCCLPP_EMBEDDED_KERNELS`).
    pub embedded_enabled: bool,
    /// The kernel cache folder (none: caching off).
    pub cache_dir: Option<String>,
    /// What the cache holds, per architecture.
    pub cache: Vec<CachedArch>,
}

fn kernels() -> Kernels {
    use sys::embedded;
    let cache = sys::nvrtc::KernelCache::default();
    Kernels {
        embedded_archs: embedded::archs(sys::interpreter::SOURCE_NAME).iter().map(|a| a.to_string()).collect(),
        not_embedded: embedded::NOT_EMBEDDED.to_string(),
        embedded_nvrtc: embedded::NVRTC_VERSION.to_string(),
        embedded_current: !embedded::CUBINS.is_empty() && embedded::SOURCES_HASH == embedded::current_sources_hash(),
        embedded_enabled: embedded::enabled(),
        cache_dir: cache.dir().map(|d| d.display().to_string()),
        cache: cache
            .contents()
            .by_arch
            .into_iter()
            .map(|(arch, cubins, bytes)| CachedArch { arch, cubins, bytes })
            .collect(),
    }
}

/// How the interpreter is served on a GPU of `arch`.
fn interpreter_source(arch: &str) -> String {
    use sys::embedded;
    let embedded_archs = embedded::archs(sys::interpreter::SOURCE_NAME);
    match embedded::compatible_arch(&embedded_archs, arch) {
        Some(e) if embedded::enabled() => format!("embedded ({e} cubin)"),
        Some(e) => format!("NVRTC + cache (embedded {e} cubin disabled by MSCCLPP_EMBEDDED_KERNELS=0)"),
        None => "NVRTC + cache, per entry point on first use (no embedded cubin; `mscclpp install` warms it)".into(),
    }
}

/// The link from one GPU to another.
#[derive(Clone, Debug, Serialize)]
pub struct PeerEntry {
    /// The GPU that maps.
    pub from: usize,
    /// The GPU whose memory is mapped.
    pub to: usize,
    /// What the driver says about the link.
    pub link: Probe<Link>,
}

/// What the driver says about a link (`cuDeviceGetP2PAttribute`).
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    /// Peer access is supported.
    pub access: bool,
    /// Atomics over the link are native; the driver reports this for NVLink, not PCIe, so it is the NVLink
    /// indicator here.
    pub nvlink: bool,
    /// The driver's relative performance rank (0 is the best link on this system).
    pub performance_rank: i32,
}

/// Whether NVLink multicast is allowed, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Multicast {
    /// Allowed by the environment.
    pub allowed: bool,
    /// Why (the variable that forbids it, or that none does).
    pub reason: String,
}

/// Everything `mscclpp info` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    /// Version of this build, with the commit it was built from.
    pub version: &'static str,
    /// Every declared variable, in the order of docs/configuration.md.
    pub config: Vec<ConfigEntry>,
    /// CUDA driver version, e.g. `13.0`.
    pub driver: Probe<String>,
    /// NVRTC version, e.g. `13.0`.
    pub nvrtc: Probe<String>,
    /// The visible GPUs (an empty list when the driver sees none).
    pub gpus: Probe<Vec<Probe<Gpu>>>,
    /// Every ordered pair of distinct GPUs.
    pub peers: Vec<PeerEntry>,
    /// Names of the RDMA devices.
    pub infiniband: Probe<Vec<String>>,
    /// Whether the environment allows NVLink multicast.
    pub multicast: Multicast,
    /// Embedded kernels and the kernel cache.
    pub kernels: Kernels,
}

fn gpu(ordinal: usize) -> sys::Result<Gpu> {
    use sys::driver::Device;
    let dev = Device::open(ordinal)?;
    let (major, minor) = dev.compute_capability()?;
    Ok(Gpu {
        ordinal,
        name: dev.name()?,
        compute_capability: format!("{major}.{minor}"),
        memory_bytes: sys::device_info::total_memory(ordinal)?,
        multicast_supported: sys::device_info::multicast_supported(ordinal)?,
        interpreter: interpreter_source(&dev.arch()?),
    })
}

#[cfg(feature = "ib")]
fn infiniband() -> Probe<Vec<String>> {
    Probe::from_result(sys::ib::Verbs::global().and_then(|v| v.device_names()))
}

#[cfg(not(feature = "ib"))]
fn infiniband() -> Probe<Vec<String>> {
    Probe::Unavailable("built without InfiniBand support (rebuild with `--features ib`)".into())
}

fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Gather everything `mscclpp info` reports. Never fails: what cannot be queried says why.
pub fn gather() -> Info {
    let config = mscclpp_config::settings()
        .into_iter()
        .map(|s| {
            let (source, error) = match &s.source {
                Source::Default => ("default", None),
                Source::Environment => ("environment", None),
                Source::Invalid(e) => ("invalid", Some(e.to_string())),
            };
            let m = s.variable.meta();
            // The default's description is markdown (docs/configuration.md); here it is plain text.
            let value = if s.source == Source::Environment { s.value } else { s.value.replace('`', "") };
            ConfigEntry { name: m.name, scope: m.scope.label(), value, source, error }
        })
        .collect();
    let count = sys::driver::device_count();
    let gpus = Probe::from_result(count.as_ref().map(|n| (0..*n).map(|i| Probe::from_result(gpu(i))).collect()));
    let n = *count.as_ref().unwrap_or(&0);
    let mut peers = Vec::new();
    for from in 0..n {
        for to in (0..n).filter(|to| *to != from) {
            let link = sys::device_info::peer_link(from, to).map(|l| Link {
                access: l.access_supported,
                nvlink: l.native_atomics,
                performance_rank: l.performance_rank,
            });
            peers.push(PeerEntry { from, to, link: Probe::from_result(link) });
        }
    }
    let multicast = match mscclpp_config::multicast_allowed() {
        Ok(()) => Multicast {
            allowed: true,
            reason: "no variable forbids it (NCCL_NVLS_ENABLE, MSCCLPP_DISABLE_NVLS, MSCCLPP_FORCE_DISABLE_NVLS); \
                     multicast itself is not implemented yet: switch channels run through the peer-pointer emulation"
                .into(),
        },
        Err(f) => Multicast { allowed: false, reason: f.to_string() },
    };
    Info {
        version: crate::VERSION,
        config,
        driver: Probe::from_result(sys::driver::driver_version().map(version_text)),
        nvrtc: Probe::from_result(sys::nvrtc::version().map(|(a, b)| format!("{a}.{b}"))),
        gpus,
        peers,
        infiniband: infiniband(),
        multicast,
        kernels: kernels(),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The text form of `info`.
pub fn render(info: &Info) -> String {
    use std::fmt::Write as _;
    let mut out = format!("mscclpp {}\n\nConfiguration (see docs/configuration.md):\n", info.version);
    let width = info.config.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &info.config {
        let scope = if c.scope == "library" { String::new() } else { format!(", {}", c.scope) };
        let _ = match &c.error {
            None => writeln!(out, "  {:width$}  {}  ({}{scope})", c.name, c.value, c.source),
            Some(e) => writeln!(out, "  {:width$}  INVALID: {e}; default: {}{scope}", c.name, c.value),
        };
    }
    let probe = |p: &Probe<String>| match p {
        Probe::Ok(v) => v.clone(),
        Probe::Unavailable(why) => format!("unavailable: {why}"),
    };
    let _ = writeln!(out, "\nCUDA driver: {}", probe(&info.driver));
    let _ = writeln!(out, "NVRTC: {}", probe(&info.nvrtc));
    match &info.gpus {
        Probe::Unavailable(why) => {
            let _ = writeln!(out, "GPUs: none (cannot query the GPUs: {why})");
        }
        Probe::Ok(gpus) if gpus.is_empty() => {
            let _ = writeln!(out, "GPUs: none (the driver sees no GPU)");
        }
        Probe::Ok(gpus) => {
            let _ = writeln!(out, "GPUs: {}", gpus.len());
            for (i, g) in gpus.iter().enumerate() {
                let _ = match g {
                    Probe::Ok(g) => writeln!(
                        out,
                        "  GPU {}: {}, compute capability {}, {}, multicast {}, interpreter: {}",
                        g.ordinal,
                        g.name,
                        g.compute_capability,
                        gib(g.memory_bytes),
                        if g.multicast_supported { "supported" } else { "not supported" },
                        g.interpreter
                    ),
                    Probe::Unavailable(why) => writeln!(out, "  GPU {i}: cannot query: {why}"),
                };
            }
        }
    }
    if !info.peers.is_empty() {
        out.push_str("Peer access (NVLink judged by native atomics over the link, which PCIe peers lack):\n");
        for p in &info.peers {
            let _ = match &p.link {
                Probe::Ok(l) if !l.access => writeln!(out, "  {} -> {}: no peer access", p.from, p.to),
                Probe::Ok(l) => writeln!(
                    out,
                    "  {} -> {}: peer access, {}, performance rank {}",
                    p.from,
                    p.to,
                    if l.nvlink { "NVLink" } else { "not NVLink (PCIe or other)" },
                    l.performance_rank
                ),
                Probe::Unavailable(why) => writeln!(out, "  {} -> {}: cannot query: {why}", p.from, p.to),
            };
        }
    }
    let _ = match &info.infiniband {
        Probe::Ok(devs) if devs.is_empty() => writeln!(out, "InfiniBand: no RDMA device"),
        Probe::Ok(devs) => writeln!(out, "InfiniBand: {}", devs.join(", ")),
        Probe::Unavailable(why) => {
            writeln!(out, "InfiniBand: unavailable: {}", why.trim_start_matches("InfiniBand: "))
        }
    };
    let _ = writeln!(
        out,
        "Multicast (NVLS): {}: {}",
        if info.multicast.allowed { "allowed" } else { "forbidden" },
        info.multicast.reason
    );
    let k = &info.kernels;
    if k.embedded_archs.is_empty() {
        let _ = writeln!(out, "Embedded kernels: none ({}); NVRTC compiles them on first use", k.not_embedded);
    } else {
        let _ = writeln!(
            out,
            "Embedded kernels: {} (NVRTC {}, {}{})",
            k.embedded_archs.join(", "),
            k.embedded_nvrtc,
            if k.embedded_current {
                "built from this binary's sources"
            } else {
                "STALE: not from this binary's sources"
            },
            if k.embedded_enabled { "" } else { "; disabled by MSCCLPP_EMBEDDED_KERNELS=0" }
        );
    }
    let _ = match &k.cache_dir {
        None => writeln!(out, "Kernel cache: off (MSCCLPP_KERNEL_CACHE=0, or no HOME)"),
        Some(dir) if k.cache.is_empty() => writeln!(out, "Kernel cache: {dir}: empty"),
        Some(dir) => {
            let held: Vec<String> = k
                .cache
                .iter()
                .map(|c| format!("{} cubins for {} ({} KiB)", c.cubins, c.arch, c.bytes / 1024))
                .collect();
            writeln!(out, "Kernel cache: {dir}: {}", held.join(", "))
        }
    };
    out
}

/// Runs `mscclpp info`.
pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let info = gather();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{}", render(&info));
    }
    Ok(ExitCode::SUCCESS)
}
