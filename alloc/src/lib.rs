//! The counting global allocator behind every "allocations per request" figure in rxsteer: the
//! servers' zero-allocation test, rxload's own report, and the wire benches.
//!
//! Every allocation counts in the process-wide totals. One made on a thread that called
//! [`count_this_thread`] also counts in [`marked`], so a test can judge the server's worker
//! threads alone while its client allocates freely. A program opts in with
//!
//! ```no_run
//! #[global_allocator]
//! static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;
//! # fn main() {}
//! ```
use std::{
    alloc::{GlobalAlloc, Layout, System},
    cell::Cell,
    sync::atomic::{AtomicU64, Ordering},
};

/// Allocations (alloc, alloc_zeroed and realloc each count once) and the bytes they asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub allocs: u64,
    pub bytes: u64,
}

impl Counts {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: Counts) -> Counts {
        Counts {
            allocs: self.allocs - earlier.allocs,
            bytes: self.bytes - earlier.bytes,
        }
    }
}

struct Counter {
    allocs: AtomicU64,
    bytes: AtomicU64,
}

impl Counter {
    const fn new() -> Self {
        Self {
            allocs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }
    fn add(&self, size: usize) {
        self.allocs.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(size as u64, Ordering::Relaxed);
    }
    fn read(&self) -> Counts {
        Counts {
            allocs: self.allocs.load(Ordering::SeqCst),
            bytes: self.bytes.load(Ordering::SeqCst),
        }
    }
}

static ALL: Counter = Counter::new();
static MARKED: Counter = Counter::new();

thread_local! {
    // `const` so reading it never allocates (this runs inside the allocator).
    static IS_MARKED: Cell<bool> = const { Cell::new(false) };
}

fn note(size: usize) {
    ALL.add(size);
    // `try_with`: a thread being torn down may still free and allocate.
    if IS_MARKED.try_with(Cell::get).unwrap_or(false) {
        MARKED.add(size);
    }
}

/// The system allocator, counting.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; counting touches only atomics and a
// const thread-local, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(p, l, new_size) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

/// Allocations so far in the whole process (zero unless [`Counting`] is the global allocator).
pub fn totals() -> Counts {
    ALL.read()
}

/// From now on, allocations on the calling thread also count in [`marked`].
pub fn count_this_thread() {
    IS_MARKED.with(|m| m.set(true));
}

/// Allocations so far on threads that called [`count_this_thread`].
pub fn marked() -> Counts {
    MARKED.read()
}
