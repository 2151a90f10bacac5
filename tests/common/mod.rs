//! What the integration tests share.

/// The default algorithms, as the registry must list them.
#[allow(dead_code)]
pub const DEFAULTS: &[&str] = &[
    "allgather_allpairs",
    "allgather_allpairs_ll",
    "allreduce_oneshot_ll",
    "allreduce_twoshot",
    "allreduce_twoshot_ll",
    "allreduce_twoshot_ll128",
    "allreduce_oneshot_ll128",
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

/// One registered program as the registry sizes it: a world size (one node, or the program's nodes), a placement
/// and a message size it admits, with the buffer sizes and the target the registry tunes for that size.
#[allow(dead_code)]
pub struct Case {
    pub meta: &'static mscclpp_lang::registry::ProgramMeta,
    pub world: usize,
    pub inplace: bool,
    pub size: u64,
    pub sizes: mscclpp_lang::data::BufferSizes,
    pub target: mscclpp_lang::registry::Target,
}

/// Every case of the registered programs over `worlds` and `sizes` (the registry's own choice of instances and
/// threads per block for each size).
#[allow(dead_code)]
pub fn registered_cases(worlds: &[usize], sizes: &[u64]) -> Vec<Case> {
    use mscclpp_lang::registry::{self, Target};
    let mut out = Vec::new();
    for meta in registry::programs() {
        for &n in worlds {
            if !meta.supports_world_size(n) {
                continue;
            }
            // The shape the program admits at `n` ranks: one node, or its nodes (`nodes = 2`: two of n/2).
            let Some(per_node) = meta.ranks_per_node.most_in(n) else { continue };
            for inplace in [true, false] {
                if !meta.buffer_mode.accepts(inplace) {
                    continue;
                }
                for &size in sizes {
                    if !meta.message_sizes.contains(size) {
                        continue;
                    }
                    let Some(buffers) = mscclpp_lang::data::BufferSizes::for_collective(meta.collective, n, size)
                    else {
                        continue;
                    };
                    let base = Target::new(n).ranks_per_node(per_node).inplace(inplace);
                    let target = meta
                        .tuned_target(base, size)
                        .unwrap_or_else(|e| panic!("{} n={n} inplace={inplace} size={size}: {e}", meta.name));
                    out.push(Case { meta, world: n, inplace, size, sizes: buffers, target });
                }
            }
        }
    }
    out
}

/// The records' shape of f16 buffers of `sizes`, at offset zero (what the executor uploads for them).
#[allow(dead_code)]
pub fn f16_shape(sizes: &mscclpp_lang::data::BufferSizes) -> mscclpp_exec::executor::records::Shape {
    mscclpp_exec::executor::records::Shape {
        input_size: sizes.input,
        output_size: sizes.output,
        const_src_offset: 0,
        const_dst_offset: 0,
        dtype: mscclpp_exec::sys::interpreter::ElementType::F16,
    }
}
