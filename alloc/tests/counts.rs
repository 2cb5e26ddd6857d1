//! The allocator counts what it is given: every allocation in the totals, and only those of
//! marked threads in `marked`; a loop over reused buffers counts zero. One test, so no other
//! test thread runs meanwhile.
use std::hint::black_box;

#[global_allocator]
static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;

#[test]
fn totals_count_everything_and_marked_only_marked_threads() {
    let (all0, marked0) = (rxsteer_alloc::totals(), rxsteer_alloc::marked());
    // An unmarked thread's allocation: in the totals, not in marked.
    std::thread::spawn(|| black_box(vec![0u8; 1000]))
        .join()
        .unwrap();
    let (all1, marked1) = (rxsteer_alloc::totals(), rxsteer_alloc::marked());
    assert!(all1.since(all0).bytes >= 1000);
    assert_eq!(marked1.since(marked0), rxsteer_alloc::Counts::default());
    // A marked thread's: in both, with its size.
    std::thread::spawn(|| {
        rxsteer_alloc::count_this_thread();
        let before = rxsteer_alloc::marked();
        black_box(Vec::<u8>::with_capacity(4096));
        let used = rxsteer_alloc::marked().since(before);
        assert_eq!((used.allocs, used.bytes), (1, 4096));
    })
    .join()
    .unwrap();
    assert!(rxsteer_alloc::marked().since(marked1).allocs >= 1);

    // A steady loop over a reused buffer, on a marked thread: zero.
    let mut buf = Vec::with_capacity(64);
    rxsteer_alloc::count_this_thread();
    let mine = rxsteer_alloc::marked();
    for i in 0..1000u32 {
        buf.clear();
        buf.extend_from_slice(&i.to_le_bytes());
        black_box(&buf);
    }
    assert_eq!(rxsteer_alloc::marked().since(mine).allocs, 0);
}
