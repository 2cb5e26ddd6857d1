//! The kernel's ring of receive buffers for the io_uring engine (a provided-buffer ring): the
//! kernel picks a buffer for each receive and names it in the completion; we hand it back once
//! its bytes are answered or copied.
use anyhow::{Context, Result};
use io_uring::{types, IoUring};
use std::sync::atomic::{AtomicU16, Ordering};

/// Receive buffers in the ring (a power of two) and the size of each.
pub const BUFS: u16 = 256;
pub const BUF_SIZE: usize = 16 << 10;
pub const BUF_GROUP: u16 = 0;
/// The kernel's ring of receive buffers: the entries (page-aligned, as the kernel requires)
/// and the memory they point into.
pub struct BufRing {
    entries: *mut types::BufRingEntry,
    layout: std::alloc::Layout,
    memory: Vec<u8>,
    tail: u16,
}

impl BufRing {
    pub fn register(ring: &IoUring) -> Result<Self> {
        let layout = std::alloc::Layout::from_size_align(
            BUFS as usize * std::mem::size_of::<types::BufRingEntry>(),
            4096,
        )?;
        // SAFETY: a non-zero size; freed in Drop with the same layout.
        let entries = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<types::BufRingEntry>();
        anyhow::ensure!(!entries.is_null(), "allocating the buffer ring");
        let mut r = Self {
            entries,
            layout,
            memory: vec![0; BUFS as usize * BUF_SIZE],
            tail: 0,
        };
        // SAFETY: the entries stay allocated, at this address, until Drop, which comes after
        // the ring that uses them is gone (the worker drops the ring first).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(entries as u64, BUFS, BUF_GROUP, 0)
        }
        .context("registering a provided-buffer ring (needs Linux 5.19 or later)")?;
        for bid in 0..BUFS {
            r.give_back(bid);
        }
        r.publish();
        Ok(r)
    }

    pub fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * BUF_SIZE;
        &self.memory[at..at + len]
    }

    /// Queues buffer `bid` for the kernel again; [`publish`](Self::publish) hands it over.
    pub fn give_back(&mut self, bid: u16) {
        let i = (self.tail & (BUFS - 1)) as usize;
        // SAFETY: `i` is within the ring; the kernel reads entries only up to the published
        // tail, and this one is past it.
        let e = unsafe { &mut *self.entries.add(i) };
        e.set_addr(self.memory[bid as usize * BUF_SIZE..].as_ptr() as u64);
        e.set_len(BUF_SIZE as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    pub fn publish(&self) {
        // SAFETY: the tail field shares the first entry's place, as the kernel defines it.
        let tail = unsafe { types::BufRingEntry::tail(self.entries) } as *const AtomicU16;
        // SAFETY: a u16 in memory the kernel reads; Release orders the entries' writes first.
        unsafe { (*tail).store(self.tail, Ordering::Release) };
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `register` with this layout.
        unsafe { std::alloc::dealloc(self.entries.cast(), self.layout) };
    }
}
