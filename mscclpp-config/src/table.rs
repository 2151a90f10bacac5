//! The declarations: every environment variable the project reads, once. `docs/configuration.md` is rendered
//! from this table ([`crate::render_markdown`]).

use std::time::Duration;

use crate::kinds::{Bytes, Choice, Flag, Integer, List, Meta, Millis, Path, Scope, Text, Variable};

/// Declares each variable as a `pub static` of its kind and lists them all in [`VARIABLES`]: a variable cannot
/// be declared without being listed. The one-line doc comment is also the variable's documented meaning.
macro_rules! declare {
    ($(
        #[doc = $doc:literal]
        $id:ident: $kind:ident {
            name: $name:literal, scope: $scope:ident, reader: $reader:literal, unset: $unset:literal
            $(, $field:ident: $value:expr)* $(,)?
        }
    )*) => {
        $(
            #[doc = concat!("`", $name, "`:", $doc)]
            pub static $id: $kind = $kind {
                meta: Meta { name: $name, doc: $doc.trim_ascii(), reader: $reader, scope: Scope::$scope, unset: $unset },
                $($field: $value,)*
            };
        )*

        /// Every declared variable, in declaration order.
        pub static VARIABLES: &[&dyn Variable] = &[$(&$id),*];
    };
}

declare! {
    /// Root of the on-disk caches: compiled plans in `<dir>` (`mscclpp install` writes `<dir>/default/`), kernels in `<dir>/kernels`.
    CACHE_DIR: Path {
        name: "MSCCLPP_CACHE_DIR", scope: Library,
        reader: "mscclpp-lang (plan cache), mscclpp-sys (kernel cache), mscclpp-cli (install)",
        unset: "`~/.cache/mscclpp`",
    }
    /// Whether compiled kernels are cached on disk; `0` compiles every time and writes nothing.
    KERNEL_CACHE: Flag {
        name: "MSCCLPP_KERNEL_CACHE", scope: Library, reader: "mscclpp-sys (nvrtc::default_cache_dir)", unset: "",
        default: true,
    }
    /// The NVRTC library to load; when set nothing else is tried.
    NVRTC_PATH: Path {
        name: "MSCCLPP_NVRTC_PATH", scope: Library, reader: "mscclpp-sys (loader)",
        unset: "the loader's search path, then common CUDA and Python-wheel folders",
    }
    /// For kernel development: an interpreter source file to compile with NVRTC (per entry point) instead of the built-in one; its records must match this build's.
    INTERPRETER_SOURCE: Path {
        name: "MSCCLPP_INTERPRETER_SOURCE", scope: Library, reader: "mscclpp-sys (interpreter::source)",
        unset: "the built-in cuda/execution_kernel.cu (embedded, or compiled by NVRTC)",
    }
    /// Plan-specialised interpreter programs: `off` runs every plan on the generic interpreter; `embedded` only the embedded programs of the default plans (every other plan on the generic interpreter, no NVRTC at run time); `compile` also compiles the program of a default plan in an element type or packet format without an embedded one, and with `MSCCLPP_INTERPRETER_SOURCE` every plan's program from that source (which otherwise runs on its generic interpreter).
    FIXED_KERNELS: Choice {
        name: "MSCCLPP_FIXED_KERNELS", scope: Library, reader: "mscclpp-exec (executor)",
        unset: "auto: the embedded programs of the default plans; a plan with other operation sequences (a named or user's program, a JSON plan) gets its own compiled with NVRTC at its first bind (one line on stderr, cached on disk; the generic interpreter when it does not build)",
        choices: &["off", "embedded", "auto", "compile"],
    }
    /// Whether built-in kernels (the interpreter, the primitives) come from the cubins embedded at build time; `0` compiles them with NVRTC instead (per entry point, through the kernel cache).
    EMBEDDED_KERNELS: Flag {
        name: "MSCCLPP_EMBEDDED_KERNELS", scope: Library, reader: "mscclpp-sys (embedded)", unset: "",
        default: true,
    }
    /// Bound of every device-side wait and of host waits on the GPU; an expired wait stops the kernel and is reported.
    WAIT_TIMEOUT_MS: Millis {
        name: "MSCCLPP_WAIT_TIMEOUT_MS", scope: Library, reader: "mscclpp-sys (device_env), mscclpp-exec", unset: "",
        default: Duration::from_secs(10),
    }
    /// Bound of every bootstrap wait (rendezvous, send/recv, collectives of the bootstrap).
    BOOTSTRAP_TIMEOUT_MS: Millis {
        name: "MSCCLPP_BOOTSTRAP_TIMEOUT_MS", scope: Library, reader: "mscclpp-exec (bootstrap)", unset: "",
        default: Duration::from_secs(30),
    }
    /// Host identity: ranks with equal host ids use CUDA IPC, others a network transport.
    HOSTID: Text {
        name: "MSCCLPP_HOSTID", scope: Library, reader: "mscclpp-exec (env::host_id)", unset: "the hostname",
        default: None, secret: false,
    }
    /// Network interface whose IPv4 address a new unique id (the TCP bootstrap's rendezvous) uses.
    SOCKET_IFNAME: Text {
        name: "MSCCLPP_SOCKET_IFNAME", scope: Library, reader: "mscclpp-exec (bootstrap::tcp)",
        unset: "the interface that routes outside, else loopback", default: None, secret: false,
    }
    /// Rendezvous address of the TCP bootstrap (rank 0 listens there).
    MASTER_ADDR: Text {
        name: "MSCCLPP_MASTER_ADDR", scope: Library, reader: "mscclpp-exec (bootstrap::env)",
        unset: "torchrun's `MASTER_ADDR`, else `127.0.0.1`", default: None, secret: false,
    }
    /// Rendezvous port of the TCP bootstrap.
    MASTER_PORT: Integer {
        name: "MSCCLPP_MASTER_PORT", scope: Library, reader: "mscclpp-exec (bootstrap::env)",
        unset: "torchrun's `MASTER_PORT` + 1, else a port derived from the job id (single-host runs only)",
        default: None, min: 0, max: 65535,
    }
    /// Global rank, when no launcher sets one.
    RANK: Integer {
        name: "MSCCLPP_RANK", scope: Library, reader: "mscclpp-exec (bootstrap::env)",
        unset: "the launcher's rank (see below)", default: None, min: 0, max: u64::MAX,
    }
    /// Number of ranks, when no launcher sets it.
    WORLD_SIZE: Integer {
        name: "MSCCLPP_WORLD_SIZE", scope: Library, reader: "mscclpp-exec (bootstrap::env)",
        unset: "the launcher's world size (see below)", default: None, min: 0, max: u64::MAX,
    }
    /// Rank on this host: selects the GPU and the InfiniBand HCA.
    LOCAL_RANK: Integer {
        name: "MSCCLPP_LOCAL_RANK", scope: Library, reader: "mscclpp-exec (bootstrap::env, ib)",
        unset: "the launcher's local rank (see below), else the global rank", default: None, min: 0, max: u64::MAX,
    }
    /// Job identity from which every rank derives the same bootstrap secret.
    JOB_ID: Text {
        name: "MSCCLPP_JOB_ID", scope: Library, reader: "mscclpp-exec (bootstrap::env)",
        unset: "the launcher's job id (see below), else a fixed id", default: None, secret: false,
    }
    /// Explicit bootstrap secret (every rank must set the same); never shown by `mscclpp info`.
    BOOTSTRAP_SECRET: Text {
        name: "MSCCLPP_BOOTSTRAP_SECRET", scope: Library, reader: "mscclpp-exec (bootstrap::env)",
        unset: "derived from the rendezvous address and the job id", default: None, secret: true,
    }
    /// Several local ranks may share one GPU (round-robin over the visible GPUs); for correctness runs only.
    SHARED_GPU: Flag {
        name: "MSCCLPP_SHARED_GPU", scope: Library, reader: "mscclpp-exec (GPU choice from the local rank)",
        unset: "more local ranks than GPUs is an error", default: false,
    }
    /// One stderr line per start-up phase (CUDA initialisation, bootstrap, module load, first setup, teardown) with the time since the process started.
    TRACE_STARTUP: Flag {
        name: "MSCCLPP_TRACE_STARTUP", scope: Library, reader: "mscclpp-exec (startup)", unset: "no trace",
        default: false,
    }
    /// The real NCCL library (a file): what `libmscclpp_nccl.so` forwards to when no `libnccl.so.2` is loaded in the process yet, and what `mscclpp bench --nccl` times beside this library.
    NCCL_LIB_PATH: Path {
        name: "MSCCLPP_NCCL_LIB_PATH", scope: Library, reader: "mscclpp-nccl (real), mscclpp-cli (bench --nccl)",
        unset: "libmscclpp_nccl: the `libnccl.so.2` already loaded in the process (e.g. by torch), none: only the accelerated calls work; bench: `libnccl.so.2` from the loader's search path",
    }
    /// `all` or a comma list of `allreduce`, `allgather`, `reducescatter`, `broadcast`: these calls always go to the real NCCL.
    FORCE_NCCL_FALLBACK_OPERATION: List {
        name: "MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION", scope: Library, reader: "mscclpp-nccl (policy)",
        unset: "none: every call in the size window of a registered program is ours",
    }
    /// The most bytes each staging buffer of a communicator may grow to (calls that would need more, and that no plan runs on the application's buffers, go to NCCL).
    NCCL_STAGING_MAX: Bytes {
        name: "MSCCLPP_NCCL_STAGING_MAX", scope: Library, reader: "mscclpp-nccl (policy)", unset: "",
        default: 512 << 20,
    }
    /// A directory of MSCCL++ JSON execution plans `libmscclpp_nccl.so` tries before its own programs (each verified on the CPU once; a plan that fails is refused and named on stderr and in `ncclGetLastError`).
    NCCL_PLAN_DIR: Path {
        name: "MSCCLPP_NCCL_PLAN_DIR", scope: Library, reader: "mscclpp-nccl (user_plans)",
        unset: "no user plans: the registry's programs, then NCCL",
    }
    /// `info`: `libmscclpp_nccl.so` prints, per communicator, how many calls of each kind ran zero copy, registered, staged or on NCCL (and why it stopped accelerating, if it did): at destroy, every 100000 calls, and at process exit.
    NCCL_LOG: Choice {
        name: "MSCCLPP_NCCL_LOG", scope: Library, reader: "mscclpp-nccl (state)",
        unset: "silent, except for a setup failure", choices: &["info"],
    }
    /// `ib`: ranks on different hosts connect over InfiniBand even when an HCA was not detected on both sides (set it on every rank).
    TRANSPORT: Choice {
        name: "MSCCLPP_TRANSPORT", scope: Library, reader: "mscclpp-exec (connection, ib)",
        unset: "InfiniBand between hosts when both have an HCA port up, else Ethernet; CUDA IPC on one host",
        choices: &["ib"],
    }
    /// `copy`: the proxy signals by an 8-byte copy from pinned memory instead of `cuStreamWriteValue64`.
    PROXY_SIGNAL: Choice {
        name: "MSCCLPP_PROXY_SIGNAL", scope: Library, reader: "mscclpp-exec (connection)",
        unset: "`cuStreamWriteValue64` where the GPU supports stream memory operations", choices: &["copy"],
    }
    /// Largest port-channel put a GPU thread moves itself when the peer is on this host (0: every put goes through the proxy).
    PORT_DIRECT_MAX: Bytes {
        name: "MSCCLPP_PORT_DIRECT_MAX", scope: Library, reader: "mscclpp-exec (proxy)", unset: "",
        default: 2048,
    }
    /// HCAs by local rank: comma list of `name` or `name:port`; local rank i uses entry i mod length.
    HCA_DEVICES: List {
        name: "MSCCLPP_HCA_DEVICES", scope: Library, reader: "mscclpp-sys (ib::Context::open_for_local_rank)",
        unset: "the first device, port 1",
    }
    /// GID table index of the source GID (RoCE v2 usually needs another one than 0, see `show_gids`).
    IB_GID_INDEX: Integer {
        name: "MSCCLPP_IB_GID_INDEX", scope: Library, reader: "mscclpp-sys (ib)", unset: "",
        default: Some(0), min: 0, max: 255,
    }
    /// The verbs library to load.
    IBV_SO: Text {
        name: "MSCCLPP_IBV_SO", scope: Library, reader: "mscclpp-sys (ib::Verbs::load)", unset: "",
        default: Some("libibverbs.so.1"), secret: false,
    }
    /// NCCL's switch: `0` (or false/off) forbids NVLink multicast (NVLS) here too.
    NCCL_NVLS_ENABLE: Flag {
        name: "NCCL_NVLS_ENABLE", scope: Library, reader: "mscclpp-sys (driver::nvls_allowed), mscclpp info", unset: "",
        default: true,
    }
    /// `1` (or true/on) forbids NVLink multicast (NVLS); switch-channel plans then run through an emulation.
    DISABLE_NVLS: Flag {
        name: "MSCCLPP_DISABLE_NVLS", scope: Library, reader: "mscclpp-sys (driver::nvls_allowed), mscclpp info", unset: "",
        default: false,
    }
    /// MSCCL++'s name for the same switch as `MSCCLPP_DISABLE_NVLS`.
    FORCE_DISABLE_NVLS: Flag {
        name: "MSCCLPP_FORCE_DISABLE_NVLS", scope: Library, reader: "mscclpp-sys (driver::nvls_allowed), mscclpp info", unset: "",
        default: false,
    }
    /// Label put before every `RESULT` line name, so the suite can tell runs apart.
    RESULT_PREFIX: Text {
        name: "MSCCLPP_RESULT_PREFIX", scope: Examples, reader: "examples/common (result)", unset: "",
        default: Some(""), secret: false,
    }
    /// `1`: a test that needs NVRTC fails when it is missing instead of printing a SKIP line.
    REQUIRE_NVRTC: Flag {
        name: "MSCCLPP_REQUIRE_NVRTC", scope: Test, reader: "mscclpp-sys (loader::nvrtc_or_skip)", unset: "",
        default: false,
    }
    /// Set by the runtime's tests in the child processes they start (tests/common's `run_child`).
    TEST_CHILD: Flag {
        name: "MSCCLPP_TEST_CHILD", scope: Test, reader: "mscclpp-exec/tests/common", unset: "the process is the test itself",
        default: false,
    }
    /// Rank of a child process of the InfiniBand transport test (set by the test itself).
    IB_TEST_CHILD: Integer {
        name: "MSCCLPP_IB_TEST_CHILD", scope: Test, reader: "mscclpp-exec/tests/ib_transport.rs",
        unset: "the process is the parent", default: None, min: 0, max: u64::MAX,
    }
    /// Unique id the InfiniBand transport test passes to its child processes.
    IB_TEST_ID: Text {
        name: "MSCCLPP_IB_TEST_ID", scope: Test, reader: "mscclpp-exec/tests/ib_transport.rs",
        unset: "none (the test sets it for its children)",
        default: None, secret: false,
    }
    /// `1`: the documentation test rewrites docs/configuration.md instead of failing when it is stale.
    UPDATE_DOCS: Flag {
        name: "MSCCLPP_UPDATE_DOCS", scope: Test, reader: "mscclpp-config/tests/docs.rs", unset: "",
        default: false,
    }
    /// `1`: the `fixed_programs` test rewrites mscclpp-sys/cuda/include/mscclpp/interp_fixed.hpp (the embedded specialised programs) instead of failing when it is stale.
    BLESS: Flag {
        name: "MSCCLPP_BLESS", scope: Test, reader: "tests/fixed_programs.rs", unset: "",
        default: false,
    }
    /// Which programs the per-program steps of the GPU suite's matrix-a/b, gib and soak-a/b parts run (space-separated).
    SUITE_PROGRAMS: Text {
        name: "MSCCLPP_SUITE_PROGRAMS", scope: Scripts, reader: "the GPU suite (xtask gpu run)",
        unset: "every program each part takes", default: None, secret: false,
    }
    /// GPU architectures whose cubins are compiled ahead of time and embedded (comma-separated); `none` embeds nothing.
    EMBED_ARCHS: List {
        name: "MSCCLPP_EMBED_ARCHS", scope: Build, reader: "mscclpp-sys/build.rs", unset: "sm_80,sm_90,sm_100,sm_120",
    }
    /// A hash of a crate's sources, exported by its build script and recorded by `#[collective_program]`, so the plan cache key follows edits to helpers (`mscclpp-algorithms/build.rs`; copy it for your own crate). Not read at run time.
    PROGRAM_SOURCES: Text {
        name: "MSCCLPP_PROGRAM_SOURCES", scope: Build,
        reader: "mscclpp-algorithms/build.rs (sets it), mscclpp-macros (records it)", unset: "the plan cache key takes the \
        file the program was linked into", default: None, secret: false,
    }
    /// Fail the build when the kernels cannot be embedded (no NVRTC at build time) instead of building without them.
    REQUIRE_EMBEDDED: Flag {
        name: "MSCCLPP_REQUIRE_EMBEDDED", scope: Build, reader: "mscclpp-sys/build.rs, scripts/test.sh, xtask gpu collect", unset: "",
        default: false,
    }
}

/// A variable that a launcher sets and the library reads (no accessor: read with [`crate::value_of`]).
#[derive(Debug)]
pub struct LauncherVariable {
    /// The variable.
    pub name: &'static str,
    /// Which launcher sets it.
    pub launcher: &'static str,
    /// What the library takes from it.
    pub meaning: &'static str,
}

/// Variables read from the launcher, in the order they are tried (the `MSCCLPP_*` ones above come first).
pub static LAUNCHER_VARIABLES: &[LauncherVariable] = &[
    LauncherVariable { name: "OMPI_COMM_WORLD_RANK", launcher: "mpirun (Open MPI)", meaning: "rank" },
    LauncherVariable { name: "OMPI_COMM_WORLD_SIZE", launcher: "mpirun (Open MPI)", meaning: "world size" },
    LauncherVariable { name: "OMPI_COMM_WORLD_LOCAL_RANK", launcher: "mpirun (Open MPI)", meaning: "local rank" },
    LauncherVariable { name: "OMPI_MCA_ess_base_jobid", launcher: "mpirun (Open MPI)", meaning: "job id" },
    LauncherVariable { name: "PMI_RANK", launcher: "PMI (MPICH, Intel MPI)", meaning: "rank" },
    LauncherVariable { name: "PMI_SIZE", launcher: "PMI (MPICH, Intel MPI)", meaning: "world size" },
    LauncherVariable { name: "MPI_LOCALRANKID", launcher: "PMI (MPICH, Intel MPI)", meaning: "local rank" },
    LauncherVariable { name: "PMIX_NAMESPACE", launcher: "PMIx", meaning: "job id" },
    LauncherVariable { name: "RANK", launcher: "torchrun", meaning: "rank" },
    LauncherVariable { name: "WORLD_SIZE", launcher: "torchrun", meaning: "world size" },
    LauncherVariable { name: "LOCAL_RANK", launcher: "torchrun", meaning: "local rank" },
    LauncherVariable { name: "TORCHELASTIC_RUN_ID", launcher: "torchrun", meaning: "job id" },
    LauncherVariable {
        name: "MASTER_ADDR",
        launcher: "torchrun",
        meaning: "rendezvous address (when `MSCCLPP_MASTER_ADDR` is unset)",
    },
    LauncherVariable {
        name: "MASTER_PORT",
        launcher: "torchrun",
        meaning: "rendezvous port + 1 (torchrun's store owns the port itself)",
    },
    LauncherVariable { name: "SLURM_PROCID", launcher: "Slurm (srun)", meaning: "rank" },
    LauncherVariable { name: "SLURM_NTASKS", launcher: "Slurm (srun)", meaning: "world size" },
    LauncherVariable { name: "SLURM_LOCALID", launcher: "Slurm (srun)", meaning: "local rank" },
    LauncherVariable { name: "SLURM_JOB_ID", launcher: "Slurm (srun)", meaning: "job id" },
    LauncherVariable {
        name: "SLURM_STEP_NODELIST",
        launcher: "Slurm (srun)",
        meaning: "rendezvous host when no address is given: the list's first host (e.g. `gpu[01-04]` gives gpu01)",
    },
    LauncherVariable {
        name: "SLURM_JOB_NODELIST",
        launcher: "Slurm",
        meaning: "rendezvous host as above, when the step's list is unset",
    },
    LauncherVariable { name: "SLURM_NODELIST", launcher: "Slurm", meaning: "rendezvous host, as the job's list" },
];
