//! rx_account, the receive tracepoints and softirq accounting on real traffic across a veth
//! pair between two network namespaces the test creates (and removes). Needs root.
mod common;

use common::{echo_server, lab, online_cpus, tcp_exchanges, udp_burst};
use rxsteer_common::SOFTIRQ_NET_RX;
use rxsteer_dataplane::{
    procfs, Counters, Dataplane, PortConfig, XdpMode, XdpModeChoice, RX_ACCOUNT,
};
use std::{collections::BTreeMap, time::Duration};

/// Loads and attaches inside the server namespace; links stay tied to the device after the
/// thread ends, for as long as the returned Dataplane lives.
fn observe(lab: &rxsteer::netns::VethLab) -> (Dataplane, Counters) {
    let dev = lab.server_dev.clone();
    lab.server
        .spawn(None, move || {
            let mut dp = Dataplane::load(&PortConfig::default())?;
            dp.attach_tracepoints()?;
            let mode = dp.attach_xdp(RX_ACCOUNT, false, &dev, XdpModeChoice::Drv)?;
            assert_eq!(mode, XdpMode::Drv, "veth supports native XDP");
            let counters = dp.take_counters()?;
            Ok((dp, counters))
        })
        .join()
        .unwrap()
        .expect("attach in the server namespace")
}

/// The receive tracepoints instead of XDP, loaded and attached inside `ns` for `dev`.
fn observe_driver(ns: &rxsteer::netns::Netns, dev: &str) -> (Dataplane, Counters) {
    let dev = dev.to_string();
    ns.spawn(None, move || {
        let mut dp = Dataplane::load(&PortConfig::default())?;
        dp.attach_driver_tracepoints(&dev)?;
        let counters = dp.take_counters()?;
        Ok((dp, counters))
    })
    .join()
    .unwrap()
    .expect("receive tracepoints in the server namespace")
}

/// NET_RX is machine-wide: these tests compare exact counts, so they run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
#[ignore = "needs root: attaches XDP in a veth lab"]
fn udp_is_counted_exactly_on_the_cpu_that_sent_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab('u');
    let (dp, counters) = observe(&lab);
    let rx0 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();
    let cpus = online_cpus();
    // A veth has no interrupt: its receive work runs on the sending CPU. Send from each CPU in
    // turn and expect every datagram on exactly that CPU.
    let sent: Vec<(u32, u32)> = cpus.iter().take(4).map(|&c| (c, 300 + 100 * c)).collect();
    for &(cpu, n) in &sent {
        udp_burst(&lab.client, cpu, lab.server_ip, 5000, n);
        std::thread::sleep(Duration::from_millis(100));
    }
    let rx1 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();
    let per_cpu = counters.rx().unwrap();
    for &(cpu, n) in &sent {
        let s = &per_cpu[cpu as usize];
        assert_eq!(
            s.packets[rxsteer_common::Class::OtherIp.index()],
            n as u64,
            "CPU {cpu}"
        );
        assert_eq!(s.ipv4, n as u64, "CPU {cpu}");
    }
    let counted: u64 = per_cpu.iter().map(|s| s.total_packets()).sum();
    let total: u64 = sent.iter().map(|&(_, n)| n as u64).sum();
    assert_eq!(
        counted, total,
        "nothing but the test's datagrams crossed the veth"
    );
    assert_eq!(
        rx1 - rx0,
        total,
        "the device counted what rx_account counted"
    );
    drop(dp);
    assert_eq!(
        lab.server.xdp_attached(&lab.server_dev).unwrap(),
        None,
        "detached on drop"
    );
}

fn net_rx_runs(counters: &Counters) -> BTreeMap<u32, u64> {
    let all = counters.softirq().unwrap();
    online_cpus()
        .into_iter()
        .map(|c| (c, all[c as usize].count[SOFTIRQ_NET_RX]))
        .collect()
}

#[test]
#[ignore = "needs root: attaches XDP in a veth lab"]
fn tcp_to_the_http_port_is_http_and_net_rx_runs_match_proc_softirqs() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab('t');
    let (_dp, counters) = observe(&lab);
    let cpus = online_cpus();
    let (client_cpu, server_cpu) = (cpus[0], *cpus.last().unwrap());
    let server = echo_server(&lab.server, server_cpu, lab.server_ip, 8080);

    let rx0 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();
    let ours0 = net_rx_runs(&counters);
    let proc0 = procfs::proc_softirqs("NET_RX").unwrap();
    tcp_exchanges(&lab.client, client_cpu, lab.server_ip, 8080, 300, 64);
    server.join().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // The same order as at the start (ours, then /proc): both windows shift by the same small
    // gap, so runs that fall between the two reads cancel instead of adding up.
    let ours1 = net_rx_runs(&counters);
    let proc1 = procfs::proc_softirqs("NET_RX").unwrap();
    let rx1 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();

    let per_cpu = counters.rx().unwrap();
    let http: u64 = per_cpu.iter().map(|s| s.packets[0]).sum();
    let all: u64 = per_cpu.iter().map(|s| s.total_packets()).sum();
    assert!(http >= 300, "at least one segment per request: {http}");
    assert_eq!(all, http, "every frame to the server was TCP to port 8080");
    assert_eq!(rx1 - rx0, all);

    for cpu in cpus {
        let ours = ours1[&cpu] - ours0[&cpu];
        let proc = proc1[&cpu] - proc0[&cpu];
        // Reads of the two sources are not atomic together: allow a run or two at the edges.
        let slack = 2 + proc / 100;
        assert!(
            ours.abs_diff(proc) <= slack,
            "CPU {cpu}: NET_RX runs ours {ours} vs /proc/softirqs {proc}"
        );
        if cpu == client_cpu {
            assert!(proc > 0, "the exchange raised NET_RX on the client's CPU");
        }
    }
}

#[test]
#[ignore = "needs root: attaches the receive tracepoints in a veth lab"]
fn the_receive_tracepoints_count_each_datagram_on_its_cpu_with_no_xdp_attached() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab('d');
    let (dp, counters) = observe_driver(&lab.server, &lab.server_dev);
    assert_eq!(
        lab.server.xdp_attached(&lab.server_dev).unwrap(),
        None,
        "observing adds no XDP program"
    );
    let rx0 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();
    // Without NAPI a veth receives on the sending CPU (netif_rx): each CPU's datagrams there.
    let sent: Vec<(u32, u32)> = online_cpus()
        .iter()
        .take(4)
        .map(|&c| (c, 400 + 100 * c))
        .collect();
    for &(cpu, n) in &sent {
        udp_burst(&lab.client, cpu, lab.server_ip, 5000, n);
        std::thread::sleep(Duration::from_millis(100));
    }
    let rx1 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();
    let per_cpu = counters.rx().unwrap();
    for &(cpu, n) in &sent {
        // Packets only, in no class: the tracepoints read no headers (tc ingress classifies).
        let s = &per_cpu[cpu as usize];
        assert_eq!(
            (s.unclassified, s.total_packets()),
            (n as u64, n as u64),
            "CPU {cpu}"
        );
    }
    let counted: u64 = per_cpu.iter().map(|s| s.total_packets()).sum();
    assert_eq!(counted, rx1 - rx0, "the device's rx_packets, exactly");
    drop(dp);
}

/// `total` bytes over one TCP connection from `client` on `cpu` to a sink in `server`.
fn tcp_upload(lab: &rxsteer::netns::VethLab, cpu: u32, total: usize) {
    let (ip, port) = (lab.server_ip, 8080);
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = lab.server.spawn(None, move || {
        let l = std::net::TcpListener::bind((ip, port))?;
        tx.send(()).unwrap();
        let (mut c, _) = l.accept()?;
        c.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut buf = vec![0u8; 1 << 16];
        while std::io::Read::read(&mut c, &mut buf)? > 0 {}
        Ok(())
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("sink listening");
    lab.client
        .spawn(Some(cpu), move || {
            let mut s = std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::from((ip, port)),
                Duration::from_secs(5),
            )?;
            let chunk = vec![b'u'; 1 << 16];
            for _ in 0..total / chunk.len() {
                std::io::Write::write_all(&mut s, &chunk)?;
            }
            Ok(())
        })
        .join()
        .unwrap()
        .expect("upload");
    sink.join().unwrap().expect("sink");
}

#[test]
#[ignore = "needs root: the embedded lab (threaded NAPI + GRO) and the receive tracepoints"]
fn under_a_gro_upload_the_napi_polls_count_rx_packets_on_the_napi_cpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = online_cpus();
    let roles = rxsteer::embedded_lab::choose_roles(&cpus, &[], None, None, None).unwrap();
    rxsteer::embedded_lab::EmbeddedLab::remove_leftovers().unwrap();
    let lab = rxsteer::embedded_lab::EmbeddedLab::create(&roles).unwrap();
    let v = &lab.veth;
    let (dp, counters) = observe_driver(&v.server, &v.server_dev);
    assert_eq!(v.server.xdp_attached(&v.server_dev).unwrap(), None);
    let rx0 = v.server.link_stat(&v.server_dev, "rx_packets").unwrap();
    let before = counters.rx().unwrap();
    tcp_upload(v, *roles.loader_cpus.first().unwrap(), 64 << 20);
    std::thread::sleep(Duration::from_millis(100));
    let rx1 = v.server.link_stat(&v.server_dev, "rx_packets").unwrap();
    let after = counters.rx().unwrap();
    let per_cpu: Vec<u64> = after
        .iter()
        .zip(&before)
        .map(|(a, b)| a.total_packets() - b.total_packets())
        .collect();
    let counted: u64 = per_cpu.iter().sum();
    let device = rx1 - rx0;
    assert!(
        device > 1000,
        "the upload crossed the veth: {device} packets"
    );
    let off = counted.abs_diff(device) as f64 / device as f64;
    assert!(
        off <= 0.005,
        "driver-side count {counted} vs rx_packets {device} ({:.2} % apart)",
        off * 100.0
    );
    let rx_cpu = roles.rx_cpu as usize;
    assert!(
        per_cpu[rx_cpu] as f64 >= 0.99 * counted as f64,
        "received by the NAPI thread on CPU {rx_cpu}: {per_cpu:?}"
    );
    drop(dp);
}
