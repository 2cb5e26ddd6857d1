//! One connection's buffers and loop, generic over the framing. Buffers are allocated when the
//! connection opens and reused for every request: every request already in the read buffer is
//! answered, all responses go out in one write (may_minihttp's shape).
use std::{
    io,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::{timeout, Instant},
};

use rxsteer_wire::http1::Limits;

use crate::{
    batch::{answer, partial_since as partial_since_of, End},
    framing::Framing,
};

/// Per-connection limits and timeouts.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    pub http: Limits,
    /// Largest ZAP frame (the reference default is 64 MiB); larger closes the connection.
    pub max_frame: usize,
    /// A connection with nothing to read for this long is closed.
    pub idle: Duration,
    /// A request must arrive whole within this long of its first byte; otherwise the
    /// connection is closed. The idle timeout alone never closes a slowloris client that
    /// trickles a byte at a time.
    pub request: Duration,
    /// Bodies at least this long are not copied into the response buffer: the head and the
    /// body go out in one vectored write. `usize::MAX` always copies.
    pub vectored_min: usize,
    /// Connections one worker holds at most (nginx's `worker_connections`); a new one past
    /// it is closed at once and counted in `Served::refused`.
    pub max_connections: usize,
}

/// Default for [`ConnConfig::vectored_min`].
pub const VECTORED_MIN: usize = 16 << 10;

/// Sends the responses encoded so far in `out`, then `body` (the last one's body), in one
/// vectored write, and empties `out`.
async fn send_with_body(s: &mut TcpStream, out: &mut Vec<u8>, body: &[u8]) -> io::Result<()> {
    write_all_vectored(s, out, body).await?;
    out.clear();
    Ok(())
}

/// After a read's requests are answered: drop what they used, count them, and send every
/// response still in `out` with one write.
async fn end_batch(
    s: &mut TcpStream,
    rd: &mut ReadBuf,
    out: &mut Vec<u8>,
    served: &AtomicU64,
    consumed: usize,
    n: u64,
) -> io::Result<()> {
    rd.consume(consumed);
    served.fetch_add(n, Ordering::Relaxed);
    if !out.is_empty() {
        s.write_all(out).await?;
        out.clear();
    }
    Ok(())
}

/// Writes `a` then `b` with vectored writes, without copying either.
async fn write_all_vectored(s: &mut TcpStream, mut a: &[u8], mut b: &[u8]) -> io::Result<()> {
    while !a.is_empty() || !b.is_empty() {
        let n = s
            .write_vectored(&[io::IoSlice::new(a), io::IoSlice::new(b)])
            .await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        if n < a.len() {
            a = &a[n..];
        } else {
            b = &b[n - a.len()..];
            a = &[];
        }
    }
    Ok(())
}

const INITIAL: usize = 16 << 10;

/// A read buffer that holds `data()` = `buf[start..end]`. It grows by doubling, only when it is
/// full of unconsumed bytes and below `limit`: never to a length a peer announced.
pub struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    limit: usize,
    /// The last read returned less than the space offered: the socket was empty then.
    drained: bool,
}

impl ReadBuf {
    pub fn new(limit: usize) -> Self {
        Self {
            buf: vec![0; INITIAL.min(limit.max(1))],
            start: 0,
            end: 0,
            limit,
            drained: false,
        }
    }

    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads once. `Ok(0)`: the peer closed. Errors with `InvalidData` when the buffer is full
    /// at its limit (a request or frame larger than allowed).
    pub async fn read_from<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        s: &mut R,
    ) -> io::Result<usize> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < self.limit {
                let grown = (self.buf.len() * 2).min(self.limit);
                self.buf.resize(grown, 0);
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "request larger than the buffer limit",
                ));
            }
        }
        let space = self.buf.len() - self.end;
        let n = s.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        self.drained = n < space;
        Ok(n)
    }

    /// Appends bytes received elsewhere (io_uring's provided buffers), compacting or growing
    /// as a read would. `InvalidData` when they do not fit under the limit.
    pub fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.end + data.len() > self.buf.len() && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let need = self.end + data.len();
        if need > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request larger than the buffer limit",
            ));
        }
        if need > self.buf.len() {
            let grown = need.next_power_of_two().min(self.limit);
            self.buf.resize(grown, 0);
        }
        self.buf[self.end..need].copy_from_slice(data);
        self.end = need;
        Ok(())
    }

    /// Everything read was used and the socket was empty at the last read: the next read
    /// would only return EAGAIN. Clear tokio's readiness instead, saving that system call per
    /// request. Race-free: `try_io` clears only the readiness it observed, and bytes arriving
    /// later raise a new one.
    pub fn skip_empty_read(&self, s: &TcpStream) {
        if self.start == self.end && self.drained {
            let _ = s.try_io(tokio::io::Interest::READABLE, || {
                Err::<(), _>(io::ErrorKind::WouldBlock.into())
            });
        }
    }

    /// Bytes held (grows only with what was received).
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
}

enum Read {
    Data,
    /// The peer closed.
    Closed,
    /// Nothing came within the allowed time.
    TimedOut,
}

/// One read, bounded by the idle timeout, or by what is left of the request deadline while
/// part of a request is buffered (`partial_since`).
async fn read_bounded(
    rd: &mut ReadBuf,
    s: &mut TcpStream,
    cfg: &ConnConfig,
    partial_since: Option<Instant>,
) -> io::Result<Read> {
    let wait = match partial_since {
        Some(t) => cfg
            .idle
            .min((t + cfg.request).saturating_duration_since(Instant::now())),
        None => cfg.idle,
    };
    match timeout(wait, rd.read_from(s)).await {
        Ok(Ok(0)) => Ok(Read::Closed),
        Ok(Ok(_)) => Ok(Read::Data),
        Ok(Err(e)) => Err(e),
        Err(_) => Ok(Read::TimedOut),
    }
}

/// One connection, served until the peer closes, a timeout, or input the framing refuses
/// closes it. Every request already buffered is answered before the one write of the batch.
pub async fn serve<F: Framing>(
    mut s: TcpStream,
    cfg: &ConnConfig,
    served: &AtomicU64,
) -> io::Result<()> {
    let mut rd = ReadBuf::new(F::read_limit(cfg));
    let mut out = Vec::with_capacity(INITIAL);
    let mut scratch = Vec::with_capacity(1024);
    let mut partial_since = None;
    loop {
        rd.skip_empty_read(&s);
        // Closed or timed out (idle, or a request too slow to arrive): close without a
        // reply, as nginx and the ZAP reference do.
        if !matches!(
            read_bounded(&mut rd, &mut s, cfg, partial_since).await?,
            Read::Data
        ) {
            return Ok(());
        }
        let (mut consumed, mut n) = (0, 0);
        let close = loop {
            let a = answer::<F>(&rd.data()[consumed..], cfg, &mut out, &mut scratch);
            n += a.n;
            match a.end {
                End::Partial => {
                    consumed += a.used;
                    break false;
                }
                End::Close => {
                    consumed += a.used;
                    break true;
                }
                End::Body { at, close } => {
                    let body = at.bytes(&rd.data()[consumed..], &scratch);
                    send_with_body(&mut s, &mut out, body).await?;
                    consumed += a.used;
                    if close {
                        break true;
                    }
                }
            }
        };
        end_batch(&mut s, &mut rd, &mut out, served, consumed, n).await?;
        if close {
            return Ok(());
        }
        partial_since = partial_since_of(
            !rd.data().is_empty(),
            consumed > 0,
            partial_since,
            Instant::now,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn memory_follows_bytes_received_not_the_announced_length() {
        block_on(async {
            let (mut client, mut server) = tokio::io::duplex(1 << 20);
            let mut rd = ReadBuf::new((2 << 20) + 4);
            // A 2 MiB frame announced, 100 bytes sent: the buffer stays at its initial size.
            client.write_all(&(2u32 << 20).to_be_bytes()).await.unwrap();
            client.write_all(&[7u8; 100]).await.unwrap();
            rd.read_from(&mut server).await.unwrap();
            assert_eq!(rd.data().len(), 104);
            assert_eq!(rd.capacity(), INITIAL);
            // It grows by doubling only as bytes arrive and fill it.
            let chunk = vec![1u8; 64 << 10];
            client.write_all(&chunk).await.unwrap();
            while rd.data().len() < 104 + chunk.len() {
                rd.read_from(&mut server).await.unwrap();
            }
            assert!(
                rd.capacity() < 4 * (104 + chunk.len()),
                "capacity {} for {} bytes",
                rd.capacity(),
                rd.data().len()
            );
        });
    }

    #[test]
    fn a_full_buffer_at_its_limit_is_an_error_and_consumed_bytes_are_reused() {
        block_on(async {
            let (mut client, mut server) = tokio::io::duplex(1 << 16);
            let mut rd = ReadBuf::new(32);
            client.write_all(&[1u8; 32]).await.unwrap();
            while rd.data().len() < 32 {
                rd.read_from(&mut server).await.unwrap();
            }
            client.write_all(&[2u8; 8]).await.unwrap();
            let err = rd.read_from(&mut server).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            // After consuming, the same capacity takes the next bytes (compacted, not grown).
            rd.consume(16);
            rd.read_from(&mut server).await.unwrap();
            assert_eq!(rd.capacity(), 32);
            assert_eq!(&rd.data()[16..], &[2u8; 8]);
        });
    }
}
