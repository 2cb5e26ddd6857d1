//! Soak: both transports at full load at once, with zero errors, the server's resident memory
//! growing by less than 1 MiB after warm-up, and every per-connection descriptor released when
//! the clients disconnect. The test runs RXSTEER_SOAK_SECS (default 5 s); `cargo xtask bench
//! soak` runs 60 s and stores the figures. No privileges needed; loopback only.
mod served;

use serde_json::json;
use served::{errors, rxload, Served};
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

/// One engine at a time: two soaks at once would share the CPUs they measure.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn full_load_on_both_transports_holds_memory_and_releases_descriptors_on_epoll() {
    soak("epoll");
}

#[test]
fn full_load_on_both_transports_holds_memory_and_releases_descriptors_on_uring() {
    soak("uring");
}

fn soak(io: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let secs: u64 = std::env::var("RXSTEER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let warmup = Duration::from_secs(1 + secs / 10);
    let srv = Served::start(1, &["--io", io]);
    let listeners = srv.sockets();
    // Memory over the run, sampled beside the load.
    let done = Arc::new(AtomicBool::new(false));
    let samples: Arc<Mutex<Vec<(f64, u64)>>> = Arc::default();
    let d = format!("{secs}s");
    let w = format!("{}ms", warmup.as_millis());
    let args = ["-c", "16", "-t", "1", "-d", &d, "--warmup", &w];
    let (http, zap) = thread::scope(|s| {
        let (done2, samples2, srv_ref) = (Arc::clone(&done), Arc::clone(&samples), &srv);
        s.spawn(move || {
            let start = Instant::now();
            while !done2.load(Ordering::Relaxed) {
                samples2
                    .lock()
                    .unwrap()
                    .push((start.elapsed().as_secs_f64(), srv_ref.rss_kib()));
                thread::sleep(Duration::from_millis(200));
            }
        });
        let h = s.spawn(|| rxload(&format!("http://{}", srv.http), 0, &args));
        let z = rxload(&format!("zap://{}", srv.zap), 0, &args);
        let h = h.join().unwrap();
        done.store(true, Ordering::Relaxed);
        (h, z)
    });
    let samples = samples.lock().unwrap().clone();
    // After warm-up and a second of load, until the end of the measured window.
    let settled = warmup.as_secs_f64() + 1.0;
    let window: Vec<u64> = samples
        .iter()
        .filter(|(t, _)| *t >= settled && *t <= warmup.as_secs_f64() + secs as f64)
        .map(|(_, kib)| *kib)
        .collect();
    assert!(window.len() >= 3, "too few memory samples: {samples:?}");
    let (first, last) = (window[0], *window.last().unwrap());
    let max = *window.iter().max().unwrap();
    let growth_kib = max.saturating_sub(first);
    let sockets_after = srv.settle(Served::sockets, listeners, Duration::from_secs(5));
    let figures = json!({
        "seconds": secs,
        "http": {"requests": http["requests"], "req_per_s": http["req_per_s"], "errors": errors(&http)},
        "zap": {"requests": zap["requests"], "req_per_s": zap["req_per_s"], "errors": errors(&zap)},
        "rss_kib_after_warmup": first, "rss_kib_end": last, "rss_kib_max": max,
        "rss_growth_kib": growth_kib, "peak_rss_kib": srv.peak_rss_kib(),
        "sockets_before": listeners, "sockets_after_clients_left": sockets_after,
    });
    println!("soak figures: {figures}");
    assert_eq!(errors(&http) + errors(&zap), 0, "{figures}");
    assert!(http["requests"].as_u64().unwrap() > 1000, "{figures}");
    assert!(zap["requests"].as_u64().unwrap() > 1000, "{figures}");
    assert!(
        growth_kib < 1024,
        "RSS grew {growth_kib} KiB after warm-up: {figures}"
    );
    assert_eq!(sockets_after, listeners, "connections released: {figures}");
}
