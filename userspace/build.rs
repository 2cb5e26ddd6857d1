//! The commit a run's results were measured with (run.json's environment), and what the last
//! stored `cargo xtask bench observer` measured the skb-mode XDP observer to cost (the line
//! `--observer xdp --xdp-mode skb` prints).
fn main() {
    let cost = "../results/observer-cost.txt";
    println!("cargo:rerun-if-changed={cost}");
    let cost = std::fs::read_to_string(cost)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
        .filter(|l| !l.trim().is_empty())
        .unwrap_or_else(|| {
            "unknown (no `cargo xtask bench observer` stored with this build)".into()
        });
    println!("cargo:rustc-env=RXSTEER_OBSERVER_COST={cost}");
    let git = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RXSTEER_GIT={git}");
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
}
