//! A full cpumap ring is counted, not silent. Its own test binary: the xdp tracepoints are
//! machine-wide, so another test enqueueing into its cpumap at the same time would add to
//! these counts (test binaries run one after another; tests inside one run in parallel).
//! Frames go in through a veth pair (`wire`). Needs root.
// Each test binary uses part of the shared helper.
#[allow(dead_code)]
mod wire;

use rxsteer_common::frames::{Ip, Spec};
use rxsteer_dataplane::{Dataplane, PortConfig, SteerSets};
use std::time::Duration;
use wire::Veth;

const SENT: u64 = 20_000;

fn online() -> Vec<u32> {
    rxsteer_tune::cpus::online_cpus().unwrap()
}

/// This thread pinned to one CPU at SCHED_FIFO priority 1, put back (to every CPU it had,
/// SCHED_OTHER) when dropped. A few tens of milliseconds of sending: far inside the kernel's
/// real-time throttle (950 ms a second), so the rest of the machine is not starved.
struct RealTime {
    before: libc::cpu_set_t,
}

impl RealTime {
    fn on(cpu: u32) -> Self {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: cpu_set_t and sched_param are plain old data; the calls touch only this
        // thread's affinity and policy.
        unsafe {
            let mut before: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, size, &mut before), 0);
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, size, &set),
                0,
                "pinning the sender to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
            let param = libc::sched_param { sched_priority: 1 };
            assert_eq!(
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &param),
                0,
                "making the sender SCHED_FIFO: {}",
                std::io::Error::last_os_error()
            );
            RealTime { before }
        }
    }
}

impl Drop for RealTime {
    fn drop(&mut self) {
        // SAFETY: as in `on`.
        unsafe {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &param);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.before);
        }
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
    // A 4-frame ring, and the sender on the ring's own CPU as a real-time thread: the veth's
    // receive runs in the sender's softirq there, and the ring's kthread (an ordinary thread)
    // cannot run to drain it until the sender is done, so the ring must overflow. Without the
    // priority a 6.1 guest let the woken kthread preempt the sender after every frame, and
    // nothing overflowed.
    dp.fill_cpumap(&sets, 4, false).unwrap();
    let veth = Veth::new();
    veth.attach(&mut dp);
    let counters = dp.take_counters().unwrap();
    let frame = Spec::tcp(Ip::V4, 40000, 8080).build();
    {
        let _rt = RealTime::on(last);
        for _ in 0..SENT {
            // A 6.1 guest defers the veth's receive to ksoftirqd, which cannot run under the
            // sender either: its ring fills and refuses frames (ENOBUFS). Those never reach
            // the program, and the counts below start from what it redirected.
            match veth.try_send(frame.as_bytes()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) => panic!("sending a frame: {e}"),
            }
        }
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
    // What the program redirected is the count every later stage must account for.
    let redirected: u64 = counters
        .rx()
        .unwrap()
        .iter()
        .map(|s| s.redirected.iter().sum::<u64>())
        .sum();
    eprintln!("sent {SENT}, redirected {redirected}, enqueued {enqueued}, dropped {dropped}, arrived {arrived}");
    assert!(
        redirected > 4,
        "the steering program redirected {redirected} of {SENT} frames: more than the ring holds"
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
