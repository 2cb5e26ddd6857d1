//! A small generic-netlink client, for the values no file shows: the netdev family's per-NAPI
//! settings (Linux 6.13). Only what those need: resolve a family by name, dump, and a request
//! acknowledged by the kernel. Messages are built and parsed here (nlmsghdr, genlmsghdr, then
//! attributes, each 4-byte aligned), as `include/uapi/linux/netlink.h` and `genetlink.h` lay
//! them out.
use std::{
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
};

const NETLINK_GENERIC: libc::c_int = 16;
/// The controller's own family, which names the others.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;

/// One message's attributes: (type, payload), nesting flags cleared.
pub type Attrs = Vec<(u16, Vec<u8>)>;

/// A generic-netlink socket in the calling thread's network namespace.
pub struct Socket {
    fd: OwnedFd,
    seq: u32,
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

impl Socket {
    pub fn open() -> io::Result<Self> {
        // SAFETY: plain socket(2); the descriptor is owned right after.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by socket(2) and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd, seq: 0 })
    }

    /// The id of the family `name`, None where this kernel has no such family.
    pub fn family(&mut self, name: &str) -> io::Result<Option<u16>> {
        let mut value = name.as_bytes().to_vec();
        value.push(0);
        let replies = match self.request(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            1,
            0,
            &[(CTRL_ATTR_FAMILY_NAME, &value)],
        ) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            other => other?,
        };
        let id = replies
            .iter()
            .flatten()
            .find(|(t, _)| *t == CTRL_ATTR_FAMILY_ID)
            .and_then(|(_, v)| Some(u16::from_ne_bytes(v.get(..2)?.try_into().ok()?)));
        Ok(id)
    }

    /// Sends one request and gathers every reply message's attributes until the kernel says it
    /// is done: the end of a dump (`NLM_F_DUMP` in `flags`) or the acknowledgement of a request
    /// (asked for always). A kernel error comes back as that errno.
    pub fn request(
        &mut self,
        family: u16,
        cmd: u8,
        version: u8,
        flags: u16,
        attrs: &[(u16, &[u8])],
    ) -> io::Result<Vec<Attrs>> {
        self.seq = self.seq.wrapping_add(1);
        let msg = encode(family, cmd, version, flags, self.seq, attrs);
        // SAFETY: msg is a valid buffer of msg.len() bytes; the kernel is the default peer.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: buf is a valid writable buffer of buf.len() bytes.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            for reply in split(&buf[..n as usize])? {
                match reply {
                    Reply::Message(attrs) => out.push(attrs),
                    Reply::End(0) => return Ok(out),
                    Reply::End(errno) => return Err(io::Error::from_raw_os_error(errno)),
                }
            }
        }
    }
}

/// One request: nlmsghdr, genlmsghdr, then each attribute padded to 4 bytes.
fn encode(
    family: u16,
    cmd: u8,
    version: u8,
    flags: u16,
    seq: u32,
    attrs: &[(u16, &[u8])],
) -> Vec<u8> {
    let mut body = vec![cmd, version, 0, 0];
    for (kind, value) in attrs {
        let len = 4 + value.len();
        body.extend_from_slice(&(len as u16).to_ne_bytes());
        body.extend_from_slice(&kind.to_ne_bytes());
        body.extend_from_slice(value);
        body.resize(align4(body.len()), 0);
    }
    let mut msg = Vec::with_capacity(NLMSG_HDRLEN + body.len());
    msg.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&family.to_ne_bytes());
    msg.extend_from_slice(&(flags | NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&body);
    msg
}

/// One message of a reply datagram.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Message(Attrs),
    /// The dump's end or the acknowledgement: 0, or the kernel's errno.
    End(i32),
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("netlink reply: {what}"))
}

/// The messages in one datagram. The kernel's bytes are checked as untrusted input (the
/// `genl_reply` fuzz target feeds it): a length that runs past its datagram is an error.
pub fn split(mut data: &[u8]) -> io::Result<Vec<Reply>> {
    let mut out = Vec::new();
    while data.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes(data[0..4].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(data[4..6].try_into().unwrap());
        if len < NLMSG_HDRLEN || len > data.len() {
            return Err(bad("a message's length runs past the datagram"));
        }
        let payload = &data[NLMSG_HDRLEN..len];
        out.push(match kind {
            NLMSG_ERROR | NLMSG_DONE => {
                let code = payload
                    .get(..4)
                    .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
                    .ok_or_else(|| bad("an error message without its code"))?;
                // The kernel sends 0 or a negated errno; anything else (i32::MIN, whose
                // negation overflows, as the fuzzer found) is no reply of its.
                let errno = code
                    .checked_neg()
                    .filter(|e| *e >= 0)
                    .ok_or_else(|| bad("an error code that is no errno"))?;
                Reply::End(errno)
            }
            _ => Reply::Message(attrs(payload.get(GENL_HDRLEN..).unwrap_or_default())?),
        });
        data = &data[align4(len).min(data.len())..];
    }
    Ok(out)
}

fn attrs(mut data: &[u8]) -> io::Result<Attrs> {
    let mut out = Vec::new();
    while data.len() >= 4 {
        let len = u16::from_ne_bytes(data[0..2].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(data[2..4].try_into().unwrap()) & 0x3fff;
        if len < 4 || len > data.len() {
            return Err(bad("an attribute's length runs past its message"));
        }
        out.push((kind, data[4..len].to_vec()));
        data = &data[align4(len).min(data.len())..];
    }
    Ok(out)
}

/// An unsigned attribute of 4 or 8 bytes (the kernel's NLA_UINT takes either).
pub fn uint(value: &[u8]) -> Option<u64> {
    match value.len() {
        4 => Some(u32::from_ne_bytes(value.try_into().ok()?).into()),
        8 => Some(u64::from_ne_bytes(value.try_into().ok()?)),
        _ => None,
    }
}

/// Whether a request for a dump (`NLM_F_DUMP`) is meant.
pub const DUMP: u16 = NLM_F_DUMP;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_laid_out_as_the_kernel_reads_it() {
        let msg = encode(
            0x20,
            11,
            1,
            DUMP,
            7,
            &[(1, &3u32.to_ne_bytes()), (2, b"ab")],
        );
        // 16 header + 4 genl + 8 (u32 attr) + 8 (2-byte attr padded)
        assert_eq!(msg.len(), 36);
        assert_eq!(u32::from_ne_bytes(msg[0..4].try_into().unwrap()), 36);
        assert_eq!(u16::from_ne_bytes(msg[4..6].try_into().unwrap()), 0x20);
        let flags = u16::from_ne_bytes(msg[6..8].try_into().unwrap());
        assert_eq!(flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP);
        assert_eq!(u32::from_ne_bytes(msg[8..12].try_into().unwrap()), 7);
        assert_eq!(&msg[16..20], &[11, 1, 0, 0]);
        assert_eq!(u16::from_ne_bytes(msg[28..30].try_into().unwrap()), 6);
        assert_eq!(&msg[32..36], b"ab\0\0");
    }

    #[test]
    fn replies_split_into_messages_and_the_end_carries_the_errno() {
        let mut data = Vec::new();
        // a message with genl header and one u64 attribute (type 7, nested flag set)
        let attr: Vec<u8> = [12u16.to_ne_bytes(), (7u16 | 0x8000).to_ne_bytes()]
            .concat()
            .into_iter()
            .chain(9u64.to_ne_bytes())
            .collect();
        let len = (NLMSG_HDRLEN + 4 + attr.len()) as u32;
        data.extend_from_slice(&len.to_ne_bytes());
        data.extend_from_slice(&0x20u16.to_ne_bytes());
        data.extend_from_slice(&[0; 10]);
        data.extend_from_slice(&[11, 1, 0, 0]);
        data.extend_from_slice(&attr);
        // an error message: -ENODEV
        data.extend_from_slice(&20u32.to_ne_bytes());
        data.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        data.extend_from_slice(&[0; 10]);
        data.extend_from_slice(&(-libc::ENODEV).to_ne_bytes());
        let replies = split(&data).unwrap();
        assert_eq!(
            replies,
            vec![
                Reply::Message(vec![(7, 9u64.to_ne_bytes().to_vec())]),
                Reply::End(libc::ENODEV)
            ]
        );
        assert_eq!(uint(&9u64.to_ne_bytes()), Some(9));
        assert_eq!(uint(&5u32.to_ne_bytes()), Some(5));
        assert_eq!(uint(&[1, 2]), None);
    }

    #[test]
    fn a_truncated_reply_is_an_error_not_a_panic() {
        let mut data = 100u32.to_ne_bytes().to_vec();
        data.extend_from_slice(&[0; 12]);
        assert!(split(&data).is_err());
    }

    /// Found by the genl_reply fuzz target: an error code of i32::MIN overflowed its negation.
    #[test]
    fn an_error_code_that_is_no_errno_is_an_error() {
        for code in [i32::MIN, 5] {
            let mut data = 20u32.to_ne_bytes().to_vec();
            data.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
            data.extend_from_slice(&[0; 10]);
            data.extend_from_slice(&code.to_ne_bytes());
            assert!(split(&data).is_err(), "{code}");
        }
    }

    #[test]
    fn the_controller_names_its_own_family() {
        // Every kernel with generic netlink has nlctrl; this runs unprivileged.
        let mut s = Socket::open().unwrap();
        assert_eq!(s.family("nlctrl").unwrap(), Some(GENL_ID_CTRL));
        // Names are at most 15 bytes (GENL_NAMSIZ); a longer one is EINVAL, not absent.
        assert_eq!(s.family("rxsteer-none").unwrap(), None);
    }
}
