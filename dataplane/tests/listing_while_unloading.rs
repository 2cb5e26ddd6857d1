//! Listing the kernel's programs while ours load and unload: a program freed between the
//! kernel naming its id and our asking for it is "not loaded", never an error. A fresh-clone
//! CI run lost a whole interleaved comparison to that race (its no-BPF arm polled the
//! listing while a cpumap's programs were being freed). Needs root.
use rxsteer_dataplane::{loaded_rxsteer_programs, Dataplane, PortConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
#[ignore = "needs root: loads and unloads BPF programs"]
fn listing_while_programs_unload_never_fails() {
    let done = AtomicBool::new(false);
    let (listings, cycles) = std::thread::scope(|s| {
        let churn = s.spawn(|| {
            // At least 4 s and 3 cycles (an emulated guest loads the object in seconds), at
            // most a minute.
            let start = Instant::now();
            let mut cycles = 0u32;
            while (start.elapsed() < Duration::from_secs(4) || cycles < 3)
                && start.elapsed() < Duration::from_secs(60)
            {
                drop(Dataplane::load(&PortConfig::default()).expect("the observer loads"));
                cycles += 1;
            }
            done.store(true, Ordering::SeqCst);
            cycles
        });
        let mut listings = 0u64;
        while !done.load(Ordering::SeqCst) {
            if let Err(e) = loaded_rxsteer_programs() {
                panic!("listing #{listings} failed while programs unloaded: {e:#}");
            }
            listings += 1;
        }
        (listings, churn.join().unwrap())
    });
    eprintln!("{cycles} load/unload cycles, {listings} listings, none failed");
    assert!(cycles >= 3, "only {cycles} load/unload cycles in a minute");
    assert!(
        listings > u64::from(cycles),
        "{listings} listings over {cycles} cycles"
    );
}
