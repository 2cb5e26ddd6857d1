//! A connection's read buffer, for both engines: requests are parsed straight out of it, and
//! it grows only with bytes received, never to a length a peer announced.
use std::io;
use tokio::io::AsyncReadExt;

/// The size a buffer starts at (and a response buffer's first capacity).
pub const INITIAL: usize = 16 << 10;

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
                self.compact();
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
            self.compact();
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

    /// Moves the unconsumed bytes to the front, making room behind them without growing.
    fn compact(&mut self) {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    /// Everything read was used and the socket was empty at the last read: the next read
    /// would only return EAGAIN.
    pub fn used_up_and_drained(&self) -> bool {
        self.start == self.end && self.drained
    }

    /// Bytes held (grows only with what was received).
    pub fn capacity(&self) -> usize {
        self.buf.len()
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
