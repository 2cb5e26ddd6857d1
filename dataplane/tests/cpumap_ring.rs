//! A full cpumap ring is counted, not silent. Its own test binary: the xdp tracepoints are
//! machine-wide, so another test enqueueing into its cpumap at the same time would add to
//! these counts (test binaries run one after another; tests inside one run in parallel).
//! Needs root.
use aya::programs::{TestRun, TestRunAttrs, TestRunOptions};
use rxsteer_common::frames::{Ip, Spec};
use rxsteer_dataplane::{Dataplane, PortConfig, SteerSets, STEER};
use std::time::Duration;

fn online() -> Vec<u32> {
    rxsteer_tune::cpus::online_cpus().unwrap()
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
    // A 4-frame ring fed 64-frame batches: it must overflow.
    dp.fill_cpumap(&sets, 4, false).unwrap();
    let counters = dp.take_counters().unwrap();
    let frame = Spec::tcp(Ip::V4, 40000, 8080).build();
    let opts = TestRunOptions {
        data_in: Some(frame.as_bytes()),
        repeat: 20_000,
        attrs: TestRunAttrs::new().xdp_live_frames(64),
        ..TestRunOptions::new()
    };
    dp.xdp(STEER).unwrap().test_run(opts).unwrap();
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
    assert!(
        dropped > 0,
        "ring overflow shows as enqueue drops (enqueued {enqueued})"
    );
    assert_eq!(enqueued, 20_000, "every frame was offered to the ring");
    assert_eq!(
        arrived + dropped,
        20_000,
        "arrived + dropped = sent: nothing vanished"
    );
}
