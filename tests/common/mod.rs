//! What the integration tests share.

/// The default algorithms, as the registry must list them.
pub const DEFAULTS: &[&str] = &[
    "allgather_allpairs",
    "allgather_allpairs_ll",
    "allreduce_oneshot_ll",
    "allreduce_twoshot",
    "reducescatter",
    "reducescatter_ll",
    "alltoall",
    "broadcast",
    "seed_allgather",
    "allreduce_nvls_zero_copy",
];
