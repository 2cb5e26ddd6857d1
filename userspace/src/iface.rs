//! Interface checks done before anything is attached: it exists and it is up.
use anyhow::{bail, Context, Result};
use std::ffi::CString;

/// The interface's index, or an error naming it when it does not exist or is down.
pub fn require_up(name: &str) -> Result<u32> {
    validate_name(name)?;
    let c = CString::new(name)?;
    // SAFETY: c is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        bail!("interface {name:?} does not exist (in this network namespace)");
    }
    if !is_up(name)? {
        bail!("interface {name:?} is down: bring it up first (ip link set {name} up)");
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
}
