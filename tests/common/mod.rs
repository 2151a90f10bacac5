//! What the integration tests share.

/// The default algorithms, as the registry must list them.
pub const DEFAULTS: &[&str] = &[
    "allgather_allpairs",
    "allgather_allpairs_ll",
    "allreduce_oneshot_ll",
    "allreduce_twoshot",
    "allreduce_twoshot_ll",
    "allreduce_rsag",
    "allreduce_port",
    "allgather_port",
    "allgather_staged",
    "reducescatter_staged",
    "reducescatter",
    "reducescatter_ll",
    "alltoall",
    "broadcast",
    "seed_allgather",
    "allreduce_nvls_zero_copy",
];
