//! Interface checks done before anything is attached: it exists and it is up.
use anyhow::{bail, Context, Result};
use std::ffi::CString;

/// The interface's index, or an error naming it when it does not exist or is down.
pub fn require_up(name: &str) -> Result<u32> {
    let index = require_exists(name)?;
    if !is_up(name)? {
        bail!("interface {name:?} is down: bring it up first (ip link set {name} up)");
    }
    Ok(index)
}

/// The interface's index, or an error naming it when it does not exist.
pub fn require_exists(name: &str) -> Result<u32> {
    validate_name(name)?;
    let c = CString::new(name)?;
    // SAFETY: c is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        bail!("interface {name:?} does not exist (in this network namespace)");
    }
    Ok(index)
}

/// Interface names are at most 15 bytes, with no '/', whitespace or NUL (dev_valid_name).
pub fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b == 0);
    if !ok {
        bail!("{name:?} is not a valid interface name");
    }
    Ok(())
}

fn is_up(name: &str) -> Result<bool> {
    // SAFETY: plain socket(2); the fd is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("socket for SIOCGIFFLAGS");
    }
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: fd is a socket and req a properly sized ifreq.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) };
    let err = std::io::Error::last_os_error();
    // SAFETY: fd was opened above.
    unsafe { libc::close(fd) };
    if rc < 0 {
        return Err(err).with_context(|| format!("reading the flags of {name:?}"));
    }
    // SAFETY: SIOCGIFFLAGS filled the flags member.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    Ok(flags as i32 & libc::IFF_UP != 0)
}

/// The interface's first IPv4 address (the address a local load targets).
pub fn ipv4_of(name: &str) -> Result<std::net::Ipv4Addr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list that freeifaddrs releases below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        bail!("getifaddrs: {}", std::io::Error::last_os_error());
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        let same = !ifa.ifa_name.is_null()
            && unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_bytes() == name.as_bytes();
        if same && !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr points at a sockaddr whose family says which struct it is.
            if i32::from(unsafe { (*ifa.ifa_addr).sa_family }) == libc::AF_INET {
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                found = Some(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
                break;
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found.with_context(|| {
        format!("interface {name:?} has no IPv4 address: give the load's target with --target-ip")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("eth0").is_ok());
        assert!(validate_name("enP7s7").is_ok());
        for bad in ["", "a/b", "has space", "sixteen-chars-xx", "..", "a:b"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn loopback_is_up_and_unknown_is_named() {
        assert!(require_up("lo").unwrap() > 0);
        let err = require_up("rxnosuch0").unwrap_err().to_string();
        assert!(err.contains("\"rxnosuch0\" does not exist"), "{err}");
    }

    #[test]
    fn loopback_has_127_0_0_1_and_unknown_names_are_named() {
        assert_eq!(ipv4_of("lo").unwrap(), std::net::Ipv4Addr::LOCALHOST);
        let e = ipv4_of("nosuchif0").unwrap_err().to_string();
        assert!(e.contains("\"nosuchif0\" has no IPv4 address"), "{e}");
    }
}
