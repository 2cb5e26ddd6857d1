//! Who else in this network namespace hashes with the flow dissector. A BPF flow dissector
//! (the `rps-dissector` arm's `rps_by_service`) replaces the kernel's for every caller in its
//! namespace, not only RPS: its context holds the packet and the keys to fill, and no device or
//! caller to tell them apart by, and a packet's hash, once computed, is shared by all. So
//! before it attaches, rxsteer looks for the users it would change: multipath routes (the
//! route's L4 hash), bonds (layer3+4 transmit hash) and tc flower filters (they match on the
//! dissected keys). fq and sfq hash with it too, but only forwarded packets carry a dissected
//! hash to them: that is said in docs/steering.md, not looked for.
use anyhow::{Context, Result};
use serde::Deserialize;

/// What uses the flow dissector here besides RPS, one phrase each (empty: nothing found).
pub fn users() -> Result<Vec<String>> {
    let mut found = multipath_routes()?;
    found.extend(bonds());
    found.extend(flower_filters()?);
    Ok(found)
}

/// `ip -j route`'s fields that say a route has more than one path.
#[derive(Deserialize)]
struct Route {
    #[serde(default)]
    dst: String,
    #[serde(default)]
    nexthops: Vec<serde::de::IgnoredAny>,
    nhid: Option<u32>,
}

/// `ip -j nexthop`'s: a group is a multipath next hop.
#[derive(Deserialize)]
struct Nexthop {
    id: u32,
    #[serde(default)]
    group: Vec<serde::de::IgnoredAny>,
}

fn ip_json<T: serde::de::DeserializeOwned>(args: &[&str]) -> Result<Vec<T>> {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        // `ip nexthop` on a kernel without nexthop objects (before 5.3): none there.
        return Ok(Vec::new());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&text).with_context(|| format!("reading `ip {}`", args.join(" ")))
}

fn multipath_routes() -> Result<Vec<String>> {
    let groups: Vec<u32> = ip_json::<Nexthop>(&["-j", "nexthop", "show"])?
        .into_iter()
        .filter(|n| !n.group.is_empty())
        .map(|n| n.id)
        .collect();
    let mut found = Vec::new();
    for family in ["-4", "-6"] {
        for r in ip_json::<Route>(&[family, "-j", "route", "show", "table", "all"])? {
            let multipath = r.nexthops.len() > 1 || r.nhid.is_some_and(|id| groups.contains(&id));
            if multipath {
                found.push(format!("multipath route {}", r.dst));
            }
        }
    }
    Ok(found)
}

fn bonds() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("bonding").is_dir())
        .map(|e| format!("bond {}", e.file_name().to_string_lossy()))
        .collect();
    found.sort();
    found
}

/// `tc -j filter show`'s one field read here.
#[derive(Deserialize)]
struct Filter {
    kind: Option<String>,
}

fn flower_filters() -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut devs: Vec<String> = std::fs::read_dir("/sys/class/net")
        .context("listing /sys/class/net")?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    devs.sort();
    for dev in devs {
        for at in ["ingress", "egress", "root"] {
            let out = std::process::Command::new("tc")
                .args(["-j", "filter", "show", "dev", &dev, at])
                .output()
                .context("running tc (iproute2)")?;
            let text = String::from_utf8_lossy(&out.stdout);
            let filters: Vec<Filter> = serde_json::from_str(text.trim()).unwrap_or_default();
            if filters.iter().any(|f| f.kind.as_deref() == Some("flower")) {
                found.push(format!("tc flower filter on {dev} {at}"));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_with_several_paths_or_a_group_are_multipath() {
        let routes: Vec<Route> = serde_json::from_str(
            r#"[{"dst":"10.9.0.0/24","nexthops":[{"gateway":"10.1.0.2"},{"gateway":"10.2.0.2"}]},
                {"dst":"default","gateway":"10.0.0.1"},
                {"dst":"10.8.0.0/24","nhid":7}]"#,
        )
        .unwrap();
        assert_eq!(routes[0].nexthops.len(), 2);
        assert!(routes[1].nexthops.is_empty() && routes[1].nhid.is_none());
        assert_eq!(routes[2].nhid, Some(7));
        let groups: Vec<Nexthop> =
            serde_json::from_str(r#"[{"id":7,"group":[{"id":1},{"id":2}]},{"id":1}]"#).unwrap();
        assert_eq!(groups[0].group.len(), 2);
        assert!(groups[1].group.is_empty());
    }
}
