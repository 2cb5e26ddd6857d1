//! The flow dissector's reach: `rps-dissector` replaces the flow dissector for everything in
//! its network namespace, so a multipath route there splits by what it says too. In a
//! forwarding namespace with a two-path L4 multipath route, 64 flows to the service port split
//! over both paths without the arm and all take one with it; the arm is refused there unless
//! the user accepts that reach. Needs root.
mod common;

use common::{lab, online_cpus, udp_flows};
use rxsteer::netns::{Netns, VethLab};
use std::{net::Ipv4Addr, process::Command};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");
const SERVICE: u16 = 7000;
const FAR: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);

/// The lab's server namespace made a router: two paths to 10.99.0.0/24 over two veth pairs into
/// a sink namespace, L4 multipath hashing, forwarding on.
struct Router {
    lab: VethLab,
    _sink: Netns,
    paths: [String; 2],
}

fn sysctl(ns: &Netns, key: &str, value: &str) {
    let o = ns
        .command("sysctl")
        .args(["-qw", &format!("{key}={value}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "sysctl {key}: {o:?}");
}

fn router(tag: char) -> Router {
    let lab = lab(tag);
    let n = std::process::id() % 10000;
    let sink = Netns::create(&format!("rxs-{tag}{n}-t")).unwrap();
    let paths = [format!("rx{tag}{n}p1"), format!("rx{tag}{n}p2")];
    for (i, p) in paths.iter().enumerate() {
        let q = format!("rx{tag}{n}q{}", i + 1);
        let net = format!("10.81.{}", i + 1);
        let r = &lab.server;
        r.ip(&[
            "link",
            "add",
            p,
            "type",
            "veth",
            "peer",
            "name",
            &q,
            "netns",
            sink.name(),
        ])
        .unwrap();
        sysctl(r, &format!("net.ipv6.conf.{p}.disable_ipv6"), "1");
        sysctl(&sink, &format!("net.ipv6.conf.{q}.disable_ipv6"), "1");
        r.ip(&["addr", "add", &format!("{net}.1/24"), "dev", p])
            .unwrap();
        sink.ip(&["addr", "add", &format!("{net}.2/24"), "dev", &q])
            .unwrap();
        r.ip(&["link", "set", p, "up"]).unwrap();
        sink.ip(&["link", "set", &q, "up"]).unwrap();
        // A permanent neighbour: no ARP in the counts, none waiting for an answer.
        let mac = sink
            .command("cat")
            .arg(format!("/sys/class/net/{q}/address"))
            .output()
            .unwrap();
        let mac = String::from_utf8_lossy(&mac.stdout).trim().to_string();
        r.ip(&[
            "neigh",
            "replace",
            &format!("{net}.2"),
            "lladdr",
            &mac,
            "dev",
            p,
            "nud",
            "permanent",
        ])
        .unwrap();
    }
    let r = &lab.server;
    sysctl(r, "net.ipv4.ip_forward", "1");
    sysctl(r, "net.ipv4.fib_multipath_hash_policy", "1");
    r.ip(&[
        "route",
        "add",
        "10.99.0.0/24",
        "nexthop",
        "via",
        "10.81.1.2",
        "dev",
        &paths[0],
        "nexthop",
        "via",
        "10.81.2.2",
        "dev",
        &paths[1],
    ])
    .unwrap();
    lab.client
        .ip(&[
            "route",
            "add",
            "10.99.0.0/24",
            "via",
            &lab.server_ip.to_string(),
        ])
        .unwrap();
    Router {
        lab,
        _sink: sink,
        paths,
    }
}

impl Router {
    /// 64 UDP flows to the service port far away: the packets each path carried.
    fn split(&self) -> [u64; 2] {
        let r = &self.lab.server;
        let before = self
            .paths
            .clone()
            .map(|p| r.link_stat(&p, "tx_packets").unwrap());
        udp_flows(&self.lab.client, online_cpus()[0], FAR, SERVICE, 64, 5);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let after = self
            .paths
            .clone()
            .map(|p| r.link_stat(&p, "tx_packets").unwrap());
        [after[0] - before[0], after[1] - before[1]]
    }

    fn attach(&self, extra: &[&str]) -> Command {
        let cpus = online_cpus();
        let all = format!("{}-{}", cpus[0], cpus.last().unwrap());
        let mut c = self.lab.server.command(RXSTEER);
        c.args([
            "attach",
            "--iface",
            &self.lab.server_dev,
            "--steer",
            "rps-dissector",
        ])
        .args([
            "--cpus",
            &all,
            "--http-ports",
            &SERVICE.to_string(),
            "--json",
        ])
        .args(extra);
        c
    }
}

#[test]
#[ignore = "needs root: builds a forwarding namespace and attaches a flow dissector"]
fn a_multipath_route_is_named_and_with_the_reach_accepted_its_flows_take_one_path() {
    let r = router('m');
    // The loader side's hash is dropped on the wire, as from a NIC without RXHASH: the
    // router dissects every packet itself.
    let _wire = rxsteer_dataplane::lab_wire::LabWire::attach(
        &format!("/run/netns/{}", r.lab.client.name()),
        &r.lab.client_dev,
    )
    .unwrap();
    let before = common::profile_values(&r.lab);

    let without = r.split();
    eprintln!("without the arm: packets per path {without:?}");
    let total: u64 = without.iter().sum();
    assert!(
        total >= 64 * 5 * 9 / 10,
        "the flows were forwarded: {without:?}"
    );
    assert!(
        without.iter().all(|&n| n * 10 >= total),
        "the kernel's dissector spreads 64 flows over both paths: {without:?}"
    );

    // Refused in one line naming the route, before anything changes.
    let refused = r.attach(&["--count", "1"]).output().unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.trim().lines().count() == 1
            && err.contains("multipath route 10.99.0.0/24")
            && err.contains("--accept-dissector-reach"),
        "{err}"
    );
    assert_eq!(common::profile_values(&r.lab), before);

    // Accepted: every flow to the service hashes alike, so the route sends all of them down
    // one path. This is the reach the refusal warns of.
    let mut session = r
        .attach(&[
            "--accept-dissector-reach",
            "--interval",
            "500ms",
            "--count",
            "6",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut err = std::io::BufReader::new(session.stderr.take().unwrap());
    while !said.contains("observing") {
        let mut line = String::new();
        assert!(
            std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0,
            "attach ended early: {said}"
        );
        said.push_str(&line);
    }
    let with = r.split();
    eprintln!("with rps-dissector (reach accepted): packets per path {with:?}");
    assert!(session.wait().unwrap().success(), "{said}");
    let total: u64 = with.iter().sum();
    assert!(
        total >= 64 * 5 * 9 / 10,
        "the flows were forwarded: {with:?}"
    );
    assert!(
        with.iter().any(|&n| n * 100 >= total * 99),
        "with the dissector every flow to the service takes one path: {with:?}"
    );
    assert_eq!(common::profile_values(&r.lab), before, "the host as found");
}
