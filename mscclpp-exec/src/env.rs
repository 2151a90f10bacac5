//! Host identity and other process-wide settings from the environment.

use std::net::IpAddr;

/// `MSCCLPP_HOSTID`, else the hostname: ranks with equal host ids use CUDA IPC, others a network transport.
pub fn host_id() -> String {
    if let Ok(Some(h)) = mscclpp_config::HOSTID.get()
        && !h.is_empty()
    {
        return h;
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is 256 bytes and we pass its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The IPv4 address of network interface `name`, if it has one.
pub fn interface_ip(name: &str) -> Option<IpAddr> {
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: valid out-pointer; freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut addrs) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = addrs;
    while !cur.is_null() {
        // SAFETY: `cur` walks the list returned by getifaddrs, whose nodes stay valid until freeifaddrs.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() && !ifa.ifa_name.is_null() {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            let ifname = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy();
            // SAFETY: ifa_addr is non-null and points to a sockaddr of at least the family field.
            let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
            if ifname == name && family == libc::AF_INET {
                // SAFETY: the family is AF_INET, so the sockaddr is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                found = Some(IpAddr::V4(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
                break;
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: `addrs` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(addrs) };
    found
}

/// The bound of device waits and host waits on the device (`MSCCLPP_WAIT_TIMEOUT_MS`, default 10 s).
pub fn wait_timeout() -> std::time::Duration {
    mscclpp_sys::device_env::wait_timeout()
}

/// Where launchers put a process's rank on its host, most specific first: ours, Open MPI, MPICH / Intel MPI,
/// torchrun, Slurm.
pub const LOCAL_RANK_VARS: [&str; 5] =
    ["MSCCLPP_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK", "SLURM_LOCALID"];

/// This process's rank on its host: the first of [`LOCAL_RANK_VARS`] that holds a number, else `rank` (the
/// global rank, as on a single host). The one rule that picks both the GPU ([`gpu_ordinal`]) and the InfiniBand
/// HCA (entry `local_rank % n` of `MSCCLPP_HCA_DEVICES`).
pub fn local_rank(rank: usize) -> usize {
    local_rank_from(mscclpp_config::value_of, rank)
}

/// [`local_rank`] with the environment given as a lookup.
pub fn local_rank_from(lookup: impl Fn(&str) -> Option<String>, rank: usize) -> usize {
    LOCAL_RANK_VARS.iter().find_map(|name| lookup(name).and_then(|v| v.trim().parse().ok())).unwrap_or(rank)
}

/// Whether `MSCCLPP_SHARED_GPU=1` lets several local ranks share a GPU (for correctness runs on fewer GPUs than
/// ranks; timings are then meaningless).
pub fn shared_gpu() -> bool {
    mscclpp_config::SHARED_GPU.get_or_default()
}

/// The GPU of local rank `local_rank` among `device_count` visible GPUs: the GPU of the same ordinal; with
/// `shared`, more local ranks than GPUs map round-robin (`local_rank % device_count`). Without `shared`, a local
/// rank past the last GPU is the error that `Device::open` gives for it.
pub fn gpu_for_local_rank(local_rank: usize, device_count: usize, shared: bool) -> crate::Result<usize> {
    if device_count == 0 {
        return Err(mscclpp_sys::Error::NoDevice.into());
    }
    if shared {
        return Ok(local_rank % device_count);
    }
    if local_rank >= device_count {
        return Err(mscclpp_sys::Error::DeviceOutOfRange { ordinal: local_rank, count: device_count }.into());
    }
    Ok(local_rank)
}

/// The GPU ordinal of local rank `local_rank` on this host ([`gpu_for_local_rank`] over the visible GPUs and
/// [`shared_gpu`]). Logs a warning when GPUs may be shared.
pub fn gpu_ordinal(local_rank: usize) -> crate::Result<usize> {
    let count = mscclpp_sys::driver::device_count()?;
    let shared = shared_gpu();
    let ordinal = gpu_for_local_rank(local_rank, count, shared)?;
    if shared {
        tracing::warn!(
            "MSCCLPP_SHARED_GPU=1: local rank {local_rank} uses GPU {ordinal} of {count}, which other ranks may share; \
             timings are meaningless (correctness runs only)"
        );
    }
    Ok(ordinal)
}

/// Whether `MSCCLPP_TRANSPORT=ib` asks for InfiniBand between hosts (set it the same on every rank).
pub fn ib_requested() -> bool {
    matches!(mscclpp_config::TRANSPORT.get(), Ok(Some("ib")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_launcher_variable_with_a_number_is_the_local_rank() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(local_rank_from(env(&[]), 5), 5, "no launcher variable: the global rank");
        assert_eq!(local_rank_from(env(&[("SLURM_LOCALID", "2")]), 5), 2);
        assert_eq!(local_rank_from(env(&[("LOCAL_RANK", " 3 "), ("SLURM_LOCALID", "2")]), 5), 3);
        assert_eq!(local_rank_from(env(&[("MSCCLPP_LOCAL_RANK", "1"), ("OMPI_COMM_WORLD_LOCAL_RANK", "4")]), 5), 1);
        assert_eq!(local_rank_from(env(&[("MSCCLPP_LOCAL_RANK", "x"), ("MPI_LOCALRANKID", "6")]), 5), 6);
    }

    #[test]
    fn local_ranks_map_onto_gpus() {
        for lr in 0..4 {
            assert_eq!(gpu_for_local_rank(lr, 4, false).expect("one GPU each"), lr);
            assert_eq!(gpu_for_local_rank(lr, 4, true).expect("one GPU each"), lr);
        }
        let e = gpu_for_local_rank(2, 2, false).expect_err("two GPUs, local rank 2").to_string();
        assert!(e.contains("GPU 2") && e.contains("only 2 GPU(s)"), "{e}");
        let shared: Vec<usize> = (0..5).map(|lr| gpu_for_local_rank(lr, 2, true).expect("shared")).collect();
        assert_eq!(shared, vec![0, 1, 0, 1, 0]);
        assert!(gpu_for_local_rank(0, 0, true).is_err(), "no GPU at all is an error even when sharing");
    }
}
