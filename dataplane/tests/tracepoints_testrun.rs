//! BPF_PROG_TEST_RUN on the softirq and xdp:* raw tracepoint programs: arguments in the
//! TP_PROTO positions land in the right counters, on the CPU the run was pinned to. Needs root.
use aya::programs::{RawTracePointRunOptions, TestRun};
use rxsteer_common::{SOFTIRQ_NET_RX, SOFTIRQ_NET_TX};
use rxsteer_dataplane::{Dataplane, PortConfig};

fn run(dp: &mut Dataplane, prog: &str, cpu: u32, args: &[u64]) {
    let mut opts = RawTracePointRunOptions::new();
    opts.args[..args.len()].copy_from_slice(args);
    opts.cpu = Some(cpu);
    dp.raw_tracepoint(prog).unwrap().test_run(opts).unwrap();
}

fn last_cpu() -> u32 {
    *rxsteer_tune::cpus::online_cpus().unwrap().last().unwrap()
}

#[test]
#[ignore = "needs root: loads BPF programs and runs them with BPF_PROG_TEST_RUN"]
fn xdp_tracepoint_arguments_land_in_their_counters() {
    let mut dp = Dataplane::load(&PortConfig::default()).unwrap();
    let cpu = last_cpu();
    // xdp_cpumap_kthread(map_id, processed, drops, sched, stats)
    run(&mut dp, "xdp_cpumap_kthread", cpu, &[7, 8, 1, 1, 0]);
    run(&mut dp, "xdp_cpumap_kthread", cpu, &[7, 4, 0, 0, 0]);
    // xdp_cpumap_enqueue(map_id, processed, drops, to_cpu)
    run(&mut dp, "xdp_cpumap_enqueue", cpu, &[7, 8, 2, 0]);
    // xdp_redirect_err(dev, prog, tgt, err, map_type, map_id, index): -ENOSPC, -EINVAL, and an
    // errno beyond the table, which lands in the last bucket.
    for err in [-28i32, -28, -22, -200] {
        run(
            &mut dp,
            "xdp_redirect_err",
            cpu,
            &[0, 0, 0, err as u32 as u64, 0, 7, 1],
        );
    }
    // xdp_exception(dev, prog, act): XDP_ABORTED twice, an unknown action once.
    for act in [0u64, 0, 99] {
        run(&mut dp, "xdp_exception", cpu, &[0, 0, act]);
    }
    let all = dp.take_counters().unwrap().xdp_trace().unwrap();
    let s = &all[cpu as usize];
    assert_eq!(
        (
            s.kthread_runs,
            s.kthread_processed,
            s.kthread_drops,
            s.kthread_sched
        ),
        (2, 12, 1, 1)
    );
    assert_eq!(
        (s.enqueue_batches, s.enqueue_frames, s.enqueue_drops),
        (1, 8, 2)
    );
    assert_eq!(s.redirect_err, 4);
    assert_eq!(s.redirect_err_by_errno[28], 2);
    assert_eq!(s.redirect_err_by_errno[22], 1);
    assert_eq!(s.redirect_err_by_errno[rxsteer_common::N_ERRNO - 1], 1);
    assert_eq!(s.exception_by_action[0], 2);
    assert_eq!(s.exception_by_action[rxsteer_common::N_XDP_ACTIONS - 1], 1);
    let elsewhere: u64 = all
        .iter()
        .enumerate()
        .filter(|(c, _)| *c != cpu as usize)
        .map(|(_, s)| s.redirect_err)
        .sum();
    assert_eq!(
        elsewhere, 0,
        "counted on the CPU the run was pinned to only"
    );
}

#[test]
#[ignore = "needs root: loads BPF programs and runs them with BPF_PROG_TEST_RUN"]
fn softirq_runs_and_time_are_per_vector() {
    let mut dp = Dataplane::load(&PortConfig::default()).unwrap();
    let cpu = last_cpu();
    for _ in 0..3 {
        run(&mut dp, "softirq_entry", cpu, &[SOFTIRQ_NET_RX as u64]);
        run(&mut dp, "softirq_exit", cpu, &[SOFTIRQ_NET_RX as u64]);
    }
    // An exit with no entry seen (attached mid-run) is not counted; an out-of-range vector is
    // ignored rather than written out of bounds.
    run(&mut dp, "softirq_exit", cpu, &[SOFTIRQ_NET_TX as u64]);
    run(&mut dp, "softirq_entry", cpu, &[10]);
    run(&mut dp, "softirq_exit", cpu, &[10]);
    let all = dp.take_counters().unwrap().softirq().unwrap();
    let s = &all[cpu as usize];
    assert_eq!(s.count[SOFTIRQ_NET_RX], 3);
    assert!(s.ns[SOFTIRQ_NET_RX] > 0);
    assert_eq!(s.count[SOFTIRQ_NET_TX], 0);
    assert_eq!(s.count.iter().sum::<u64>(), 3);
}

#[test]
#[ignore = "needs root: loads BPF programs and runs them with BPF_PROG_TEST_RUN"]
fn net_rx_runs_and_waits_land_in_log2_buckets() {
    let mut dp = Dataplane::load(&PortConfig::default()).unwrap();
    let cpu = last_cpu();
    // Raised twice before it ran: one wait, from the first raise. A raise of another vector
    // and a NET_RX entry with no raise seen (attached mid-run) time no wait.
    run(&mut dp, "softirq_raise", cpu, &[SOFTIRQ_NET_TX as u64]);
    run(&mut dp, "softirq_raise", cpu, &[SOFTIRQ_NET_RX as u64]);
    std::thread::sleep(std::time::Duration::from_millis(2));
    run(&mut dp, "softirq_raise", cpu, &[SOFTIRQ_NET_RX as u64]);
    run(&mut dp, "softirq_entry", cpu, &[SOFTIRQ_NET_RX as u64]);
    run(&mut dp, "softirq_exit", cpu, &[SOFTIRQ_NET_RX as u64]);
    run(&mut dp, "softirq_entry", cpu, &[SOFTIRQ_NET_RX as u64]);
    run(&mut dp, "softirq_exit", cpu, &[SOFTIRQ_NET_RX as u64]);
    // NET_TX's runs are in no NET_RX histogram.
    run(&mut dp, "softirq_entry", cpu, &[SOFTIRQ_NET_TX as u64]);
    run(&mut dp, "softirq_exit", cpu, &[SOFTIRQ_NET_TX as u64]);
    let all = dp.take_counters().unwrap().softirq().unwrap();
    let s = &all[cpu as usize];
    assert_eq!(
        s.net_rx_run_log2.iter().sum::<u64>(),
        2,
        "{:?}",
        s.net_rx_run_log2
    );
    assert_eq!(
        s.net_rx_wait_log2.iter().sum::<u64>(),
        1,
        "{:?}",
        s.net_rx_wait_log2
    );
    // At least the 2 ms slept between the first raise and the entry: bucket 20 ([1, 2) ms
    // starts at 2^20 ns) or above.
    let bucket = s.net_rx_wait_log2.iter().position(|&n| n == 1).unwrap();
    assert!(bucket >= 20, "the wait landed in bucket {bucket}");
    assert!(s.net_rx_wait_ns >= 2_000_000, "{}", s.net_rx_wait_ns);
    assert_eq!(s.net_rx_raised_ns, 0, "served: not pending");
    assert_eq!(
        rxsteer_common::log2_bucket(s.net_rx_wait_ns),
        bucket,
        "the one wait's sum is in its bucket"
    );
}
