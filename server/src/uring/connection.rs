//! One connection of the io_uring engine: its buffers and state, and how a receive's bytes are
//! answered (in place from the kernel's buffer, or from the read buffer).
use tokio::time::Instant;

use crate::{
    batch::{answer, Answered, BodyAt, End},
    config::ConnConfig,
    framing::{with_framing, Framing},
    read_buf::ReadBuf,
    Proto,
};
use std::os::fd::{AsRawFd, OwnedFd};

/// A send in flight: the bytes of `out` and of the body not yet sent, and what follows.
pub struct Flight {
    pub iov: [libc::iovec; 2],
    pub msg: libc::msghdr,
    /// Bytes of the read buffer the responses answered: consumed when the send completes.
    pub consumed: usize,
    pub close: bool,
}

/// How a connection's protocol is answered, chosen once at accept (as the epoll engine
/// monomorphises its connection loop over the framing).
#[derive(Clone, Copy)]
pub struct Speaks {
    pub transport: Proto,
    read_limit: fn(&ConnConfig) -> usize,
    answer: fn(&[u8], &ConnConfig, &mut Vec<u8>, &mut Vec<u8>) -> Answered,
}

impl Speaks {
    pub fn of(transport: Proto) -> Self {
        with_framing!(transport, F => Speaks {
            transport,
            read_limit: F::read_limit,
            answer: answer::<F>,
        })
    }

    /// The most bytes one request may hold in the read buffer.
    pub fn read_limit(&self, cfg: &ConnConfig) -> usize {
        (self.read_limit)(cfg)
    }
}

pub struct Conn {
    pub fd: OwnedFd,
    pub speaks: Speaks,
    pub generation: u32,
    pub rd: ReadBuf,
    /// Input that arrived while a send was in flight.
    pub stash: Vec<u8>,
    pub out: Vec<u8>,
    pub scratch: Vec<u8>,
    pub flight: Option<Flight>,
    /// Where it is in its life: open, the peer done, closing, shut down.
    pub life: Life,
    /// The multishot receive is in the kernel. With `paused`, the receive's own state, apart
    /// from `life`: a receive can still be in flight while paused or while closing.
    pub receiving: bool,
    /// The receive was stopped behind a send in flight (see [`PAUSE_AT`]).
    pub paused: bool,
    pub last_input: Instant,
    pub partial_since: Option<Instant>,
    /// Its place under the worker's connection limit, given back when the Conn goes.
    pub _place: crate::admit::Admitted,
}

impl Conn {
    pub fn read_limit(&self, cfg: &ConnConfig) -> usize {
        self.speaks.read_limit(cfg)
    }

    /// Closes it from our side now (refused input, a timeout, an error).
    pub fn shut_down(&mut self) {
        if self.life != Life::Shut {
            self.life = Life::Shut;
            // SAFETY: shutdown on a socket this connection owns; ends its receive.
            unsafe { libc::shutdown(self.fd.as_raw_fd(), libc::SHUT_RDWR) };
        }
    }

    /// Nothing more is answered (a reset or a receive error): closed once nothing is in flight.
    pub fn close(&mut self) {
        if self.life != Life::Shut {
            self.life = Life::Closing;
        }
    }

    /// The peer sent its last byte: what it sent is still answered, then it closes.
    pub fn peer_done(&mut self) {
        if self.life == Life::Open {
            self.life = Life::PeerDone;
        }
    }
}

/// A connection's life, one way: open, then the peer done or our close, then shut down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// Requests are received and answered.
    Open,
    /// The peer sent its last byte: what it sent is still answered, then it closes.
    PeerDone,
    /// Nothing more is answered; the descriptor is closed once nothing of it is in flight.
    Closing,
    /// Closing, and `shutdown` was called (it ends the receive and any send still waiting).
    Shut,
}

impl Life {
    /// Whether what arrives is still answered.
    pub fn answers(self) -> bool {
        matches!(self, Life::Open | Life::PeerDone)
    }
}

/// Answers what the read buffer holds.
pub fn answer_buffered(c: &mut Conn, cfg: &ConnConfig) -> Answered {
    (c.speaks.answer)(c.rd.data(), cfg, &mut c.out, &mut c.scratch)
}

/// Answers a receive straight from the kernel's buffer, nothing being buffered before it.
/// What must outlive the buffer (a partial request; a body to go out uncopied and everything
/// after it) is copied into the read buffer, and the answer is returned in its terms.
pub fn answer_in_place(c: &mut Conn, data: &[u8], cfg: &ConnConfig) -> Result<Answered, ()> {
    let a = (c.speaks.answer)(data, cfg, &mut c.out, &mut c.scratch);
    let keep_from = match &a.end {
        End::Close => data.len(),
        End::Body {
            at: BodyAt::Input(r),
            ..
        } => r.start,
        _ => a.used,
    };
    c.rd.append(&data[keep_from..]).map_err(drop)?;
    let end = match a.end {
        End::Body {
            at: BodyAt::Input(r),
            close,
        } => End::Body {
            at: BodyAt::Input(0..r.len()),
            close,
        },
        e => e,
    };
    Ok(Answered {
        used: a.used.saturating_sub(keep_from),
        n: a.n,
        end,
    })
}

pub fn flight(out: &[u8], body: &[u8], consumed: usize, close: bool) -> Flight {
    let iov = [
        libc::iovec {
            iov_base: out.as_ptr() as *mut _,
            iov_len: out.len(),
        },
        libc::iovec {
            iov_base: body.as_ptr() as *mut _,
            iov_len: body.len(),
        },
    ];
    // SAFETY: an all-zero msghdr is valid (no name, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iovlen = 2;
    Flight {
        iov,
        msg,
        consumed,
        close,
    }
}
