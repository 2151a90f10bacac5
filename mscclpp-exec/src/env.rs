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
