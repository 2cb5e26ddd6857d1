//! `predict` on a stored run: the same numbers every time, and the shape the model promises
//! (the RX core binds untuned; a spread arm costs the RX core less per request).
use rxsteer_report::predict::{costs, predict, Limit, LoaderPlace};
use std::path::Path;

fn stored() -> rxsteer_records::RunDoc {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/2026-12-01-vm-upload-drv-vs-skb");
    rxsteer_report::read(&dir).unwrap()
}

#[test]
fn a_stored_run_predicts_the_same_numbers_every_time() {
    let (a, b) = (costs(&stored(), 0).unwrap(), costs(&stored(), 0).unwrap());
    assert_eq!(a, b);
    assert_eq!(a.len(), 12, "3 modes x 2 XDP modes x 2 protocols");
    for c in &a {
        for n in [1, 2, 20, 192] {
            assert_eq!(
                predict(c, n, LoaderPlace::Remote),
                predict(c, n, LoaderPlace::Remote)
            );
        }
    }
    // Pinned from this stored run (a change to the model or the fit shows here).
    let untuned = a
        .iter()
        .find(|c| c.arm.to_string() == "none-skb" && c.proto == rxsteer_records::Proto::Http)
        .unwrap();
    assert_eq!(format!("{:.1}", untuned.rx), "255.5");
    let rps = a
        .iter()
        .find(|c| c.arm.to_string() == "rps-skb" && c.proto == rxsteer_records::Proto::Http)
        .unwrap();
    assert_eq!(format!("{:.1}", rps.rx), "68.6");
    assert_eq!(predict(untuned, 20, LoaderPlace::Remote).1, Limit::RxCore);
    assert!(rps.rx < untuned.rx && rps.steered > untuned.steered);
}
