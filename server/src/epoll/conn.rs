//! One connection on the epoll engine, generic over the framing. Buffers are allocated when
//! the connection opens and reused for every request: every request already in the read
//! buffer is answered, all responses go out in one write (may_minihttp's shape).
use std::{
    io,
    sync::atomic::{AtomicU64, Ordering},
};
use tokio::{
    io::AsyncWriteExt,
    net::TcpStream,
    time::{timeout, Instant},
};

use crate::{
    batch::{answer, partial_since as partial_since_of, End},
    config::ConnConfig,
    framing::Framing,
    read_buf::{self, ReadBuf},
};

/// Everything read was used and the socket was empty at the last read: the next read would
/// only return EAGAIN. Clear tokio's readiness instead, saving that system call per request.
/// Race-free: `try_io` clears only the readiness it observed, and bytes arriving later raise a
/// new one.
fn skip_empty_read(rd: &ReadBuf, s: &TcpStream) {
    if rd.used_up_and_drained() {
        let _ = s.try_io(tokio::io::Interest::READABLE, || {
            Err::<(), _>(io::ErrorKind::WouldBlock.into())
        });
    }
}

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
    let mut out = Vec::with_capacity(read_buf::INITIAL);
    let mut scratch = Vec::with_capacity(1024);
    let mut partial_since = None;
    loop {
        skip_empty_read(&rd, &s);
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
