//! What was attached while an arm ran, read from the kernel instead of assumed: the XDP
//! attachment `ip -d link` shows on the interface, and rxsteer's programs loaded at all. An
//! arm that must carry no XDP program (untuned, RPS) and shows one, or the no-BPF arm with
//! any of rxsteer's programs loaded, stops the run: its figures would measure the observer.
use anyhow::{bail, Context, Result};
use rxsteer_records::run::Attached;
use serde::Deserialize;
use std::path::Path;

use super::{arm::Arm, sites::Site};
use crate::child;

/// One interface as `ip -d -j link show` prints it: only the XDP part is read.
#[derive(Deserialize)]
struct Link {
    #[serde(default)]
    xdp: Option<LinkXdp>,
}

#[derive(Deserialize)]
struct LinkXdp {
    /// XDP_ATTACHED_*: 1 driver, 2 generic (skb), 3 offloaded, 4 several.
    mode: u32,
}

/// The XDP attachment of `dev` as `ip -j -d link show` prints it (parsed, for the tests).
pub fn xdp_of(ip_json: &str) -> Result<Option<String>> {
    let links: Vec<Link> = serde_json::from_str(ip_json).context("parsing ip -j link")?;
    Ok(links.first().and_then(|l| l.xdp.as_ref()).map(|x| {
        match x.mode {
            1 => "xdp",
            2 => "xdpgeneric",
            3 => "xdpoffload",
            _ => "xdpmulti",
        }
        .to_string()
    }))
}

/// What the kernel shows attached on the site's interface now.
pub fn read(site: &Site) -> Result<Attached> {
    let json = child::output_of(
        crate::netns::command_at(site.ns(), Path::new("ip")).args([
            "-d",
            "-j",
            "link",
            "show",
            "dev",
            &site.server_dev,
        ]),
        "running ip -d -j link show",
        format_args!("ip link show dev {}", site.server_dev),
    )?;
    Ok(Attached {
        xdp: xdp_of(&json)?,
        programs: rxsteer_dataplane::loaded_rxsteer_programs()?,
    })
}

/// Before the no-BPF arm: waits (at most `within`) until none of rxsteer's programs is
/// loaded. The kernel frees a cpumap's entries, and the `on_cpu` program each holds,
/// asynchronously after the steering session ends, so they can outlive it briefly.
pub fn wait_unloaded(within: std::time::Duration) -> Result<()> {
    let deadline = std::time::Instant::now() + within;
    while !rxsteer_dataplane::loaded_rxsteer_programs()?.is_empty()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// Refuses an arm whose attachments disturb what it claims to measure.
pub fn check(arm: &Arm, dev: &str, seen: &Attached) -> Result<()> {
    if !arm.runs_xdp() {
        if let Some(x) = &seen.xdp {
            bail!(
                "arm {} must carry no XDP program, but ip -d link shows {x} on {dev}: its \
                 figures would measure the observer; nothing stored for it",
                arm.key()
            );
        }
    }
    if arm.observer == rxsteer_dataplane::ObserverChoice::Off && !seen.programs.is_empty() {
        bail!(
            "the no-BPF arm found rxsteer's programs loaded ({}): another rxsteer is running? \
             nothing stored for it",
            seen.programs.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_json_says_which_xdp_is_attached() {
        let none = r#"[{"ifindex":2,"ifname":"veth0","flags":["UP"]}]"#;
        assert_eq!(xdp_of(none).unwrap(), None);
        let skb = r#"[{"ifname":"veth0","xdp":{"mode":2,"prog":{"id":7}}}]"#;
        assert_eq!(xdp_of(skb).unwrap().as_deref(), Some("xdpgeneric"));
        let drv = r#"[{"ifname":"veth0","xdp":{"mode":1,"prog":{"id":7}}}]"#;
        assert_eq!(xdp_of(drv).unwrap().as_deref(), Some("xdp"));
    }

    #[test]
    fn an_arm_without_xdp_that_shows_xdp_is_refused() {
        let untuned = super::super::arm::Arm {
            observer: rxsteer_dataplane::ObserverChoice::Auto,
            ..Arm::no_bpf()
        };
        let seen = Attached {
            xdp: Some("xdpgeneric".into()),
            programs: vec!["rx_account".into()],
        };
        let e = check(&untuned, "veth0", &seen).unwrap_err().to_string();
        assert!(e.contains("arm none must carry no XDP program"), "{e}");
        let e = check(&Arm::no_bpf(), "veth0", &Attached { xdp: None, ..seen })
            .unwrap_err()
            .to_string();
        assert!(e.contains("rx_account"), "{e}");
        assert!(check(&Arm::no_bpf(), "veth0", &Attached::default()).is_ok());
    }
}
