//! Device sources embedded in the binary: the public headers users include from their own kernels, and the
//! built-in kernels.

/// Every public header, as `(include name, contents)`. Passed to NVRTC by name, so `#include
/// "mscclpp/memory_channel_device.hpp"` (or `<mscclpp/...>`, `<cstdint>`) works with no include path and no CUDA
/// toolkit headers.
pub const HEADERS: &[(&str, &str)] = &[
    ("mscclpp/core_device.hpp", include_str!("../cuda/include/mscclpp/core_device.hpp")),
    ("mscclpp/atomic_device.hpp", include_str!("../cuda/include/mscclpp/atomic_device.hpp")),
    ("mscclpp/copy_device.hpp", include_str!("../cuda/include/mscclpp/copy_device.hpp")),
    ("mscclpp/packet_device.hpp", include_str!("../cuda/include/mscclpp/packet_device.hpp")),
    ("mscclpp/semaphore_device.hpp", include_str!("../cuda/include/mscclpp/semaphore_device.hpp")),
    ("mscclpp/fifo_device.hpp", include_str!("../cuda/include/mscclpp/fifo_device.hpp")),
    ("mscclpp/memory_channel_device.hpp", include_str!("../cuda/include/mscclpp/memory_channel_device.hpp")),
    ("mscclpp/port_channel_device.hpp", include_str!("../cuda/include/mscclpp/port_channel_device.hpp")),
    ("mscclpp/switch_channel_device.hpp", include_str!("../cuda/include/mscclpp/switch_channel_device.hpp")),
    ("mscclpp/concurrency_device.hpp", include_str!("../cuda/include/mscclpp/concurrency_device.hpp")),
    ("mscclpp/reduce_device.hpp", include_str!("../cuda/include/mscclpp/reduce_device.hpp")),
    ("mscclpp/device.hpp", include_str!("../cuda/include/mscclpp/device.hpp")),
    // The default plans' specialised interpreter programs (generated; see fixed.rs), included by the interpreter.
    ("mscclpp/interp_fixed.hpp", include_str!("../cuda/include/mscclpp/interp_fixed.hpp")),
    // MSCCL++'s earlier name of the port channel header, for kernels written against it.
    ("mscclpp/proxy_channel_device.hpp", include_str!("../cuda/include/mscclpp/proxy_channel_device.hpp")),
    // NVRTC has no C library headers: the fixed-width integer types, as `#include <cstdint>` and `<stdint.h>`.
    ("cstdint", include_str!("../cuda/include/std/cstdint")),
    ("stdint.h", include_str!("../cuda/include/std/stdint.h")),
];

/// The built-in kernels (self-tests, examples, benchmarks): see `cuda/kernels/primitives.cu`.
pub const PRIMITIVES: &str = include_str!("../cuda/kernels/primitives.cu");

/// Every built-in kernel source, as `(name, contents)`.
pub const KERNELS: &[(&str, &str)] = &[("primitives.cu", PRIMITIVES)];

/// Look up a header by include name.
pub fn header(name: &str) -> Option<&'static str> {
    HEADERS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The interpreter source, embedded at build time.
pub const INTERPRETER: &str = include_str!("../cuda/execution_kernel.cu");
/// Name of the source in compiler messages and the cache.
pub const INTERPRETER_NAME: &str = "execution_kernel.cu";
