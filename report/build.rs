//! What the last stored `cargo xtask bench observer` measured the XDP observer to cost: one
//! line from results/observer-cost.txt, quoted by reports of runs whose untuned and RPS arms
//! carried that observer and by `--observer xdp` in skb mode. Absent: "unknown".
fn main() {
    let path = "../results/observer-cost.txt";
    println!("cargo:rerun-if-changed={path}");
    let cost = std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
        .filter(|l| !l.trim().is_empty())
        .unwrap_or_else(|| {
            "unknown (no `cargo xtask bench observer` stored with this build)".into()
        });
    println!("cargo:rustc-env=RXSTEER_OBSERVER_COST={cost}");
}
