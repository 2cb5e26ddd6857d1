//! A full cpumap ring is counted, not silent. Its own test binary: the xdp tracepoints are
//! machine-wide, so another test enqueueing into its cpumap at the same time would add to
//! these counts (test binaries run one after another; tests inside one run in parallel).
//! Frames go in through a veth pair (`wire`). Needs root.
mod wire;

use rxsteer_common::frames::{Ip, Spec};
use rxsteer_dataplane::{Dataplane, PortConfig, SteerSets};
use std::time::Duration;
use wire::Veth;

const SENT: u64 = 20_000;

fn online() -> Vec<u32> {
    rxsteer_tune::cpus::online_cpus().unwrap()
}

fn pin_this_thread(cpu: u32) {
    // SAFETY: cpu_set_t is plain old data; the calls touch only this thread's affinity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "pinning the sender to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs and runs them with BPF_PROG_TEST_RUN"]
fn a_full_cpumap_ring_is_counted_not_silent() {
    let cpus = online();
    let last = *cpus.last().unwrap();
    let sets = SteerSets {
        http: vec![last],
        zap: vec![],
        other: vec![],
    };
    let mut dp = Dataplane::load_with(&PortConfig::default(), &sets).unwrap();
    dp.attach_tracepoints().unwrap();
    // A 4-frame ring, and the sender pinned to the ring's own CPU: the veth's receive runs
    // there too, and the ring's kthread cannot drain it while the sender holds the CPU, so the
    // ring must overflow.
    dp.fill_cpumap(&sets, 4, false).unwrap();
    let veth = Veth::new();
    veth.attach(&mut dp);
    pin_this_thread(last);
    let counters = dp.take_counters().unwrap();
    let frame = Spec::tcp(Ip::V4, 40000, 8080).build();
    for _ in 0..SENT {
        veth.send(frame.as_bytes());
    }
    std::thread::sleep(Duration::from_millis(200));
    let trace = counters.xdp_trace().unwrap();
    let enqueued: u64 = trace.iter().map(|t| t.enqueue_frames).sum();
    let dropped: u64 = trace.iter().map(|t| t.enqueue_drops).sum();
    let arrived: u64 = counters
        .on_cpu()
        .unwrap()
        .iter()
        .map(|s| s.total_packets())
        .sum();
    // The veth's own ring (256 frames) may drop a burst before the program sees it: what the
    // program redirected is the count every later stage must account for.
    let redirected: u64 = counters
        .rx()
        .unwrap()
        .iter()
        .map(|s| s.redirected.iter().sum::<u64>())
        .sum();
    assert!(
        redirected > SENT / 2,
        "the steering program redirected {redirected} of {SENT} frames"
    );
    assert!(
        dropped > 0,
        "ring overflow shows as enqueue drops (enqueued {enqueued})"
    );
    assert_eq!(
        enqueued, redirected,
        "every redirected frame was offered to the ring"
    );
    assert_eq!(
        arrived + dropped,
        redirected,
        "arrived + dropped = redirected: nothing vanished"
    );
}
