//! BPF_PROG_TEST_RUN on `rx_account` with crafted frames: the exact class counters.
//! Needs root (CI runs as root).
use aya::programs::{TestRun, TestRunOptions};
use rxsteer_common::{
    frames::{arp, Frame, Ip, Spec},
    Class, RxStats, N_CLASSES,
};
use rxsteer_dataplane::{Dataplane, PortConfig, RX_ACCOUNT};

const XDP_PASS: u32 = 2;

fn run_frames(frames: &[Frame]) -> RxStats {
    let ports = PortConfig {
        http: vec![8080, 8081],
        zap: vec![9653],
    };
    let mut dp = Dataplane::load(&ports).expect("load (are we root?)");
    {
        let prog = dp.xdp(RX_ACCOUNT).unwrap();
        for f in frames {
            let r = prog
                .test_run(TestRunOptions {
                    data_in: Some(f.as_bytes()),
                    ..TestRunOptions::new()
                })
                .unwrap();
            assert_eq!(r.return_value, XDP_PASS, "observe mode always passes");
        }
    }
    let counters = dp.take_counters().unwrap();
    let mut sum = RxStats::ZERO;
    for s in counters.rx().unwrap() {
        for i in 0..N_CLASSES {
            sum.packets[i] += s.packets[i];
            sum.bytes[i] += s.bytes[i];
        }
        sum.ipv4 += s.ipv4;
        sum.ipv6 += s.ipv6;
        sum.vlan += s.vlan;
    }
    sum
}

fn packets(s: &RxStats, c: Class) -> u64 {
    s.packets[c.index()]
}

#[test]
#[ignore = "needs root: loads BPF programs and runs them with BPF_PROG_TEST_RUN"]
fn classes_are_counted_exactly() {
    let frames = [
        Spec::tcp(Ip::V4, 40000, 8080).build(),           // HTTP SYN
        Spec::tcp(Ip::V4, 40001, 8080).data(300).build(), // HTTP data
        Spec::tcp(Ip::V6, 40002, 8081).data(10).build(),  // HTTP, second port, IPv6
        Spec::tcp(Ip::V4, 8080, 40000).data(50).build(),  // HTTP response direction
        Spec::tcp(Ip::V4, 40003, 9653).build(),           // ZAP SYN
        Spec::tcp(Ip::V6, 40004, 9653).data(82).build(),  // ZAP data, IPv6
        Spec::tcp(Ip::V4, 40005, 22).build(),             // other TCP
        Spec::udp(Ip::V4, 5353, 5353).data(20).build(),   // UDP
        Spec::udp(Ip::V6, 40006, 8080).build(),           // UDP to an HTTP port: not HTTP
        arp(),                                            // non-IP
        Spec::tcp(Ip::V4, 40007, 9653).build().with_vlan(1), // VLAN-tagged ZAP
        Spec::tcp(Ip::V6, 40008, 8080).build().with_vlan(2), // QinQ HTTP
        Spec::tcp(Ip::V4, 1, 8080)
            .build()
            .with_vlan(1)
            .truncated(16), // cut inside the VLAN tag
        Spec::tcp(Ip::V4, 1, 8080).build().truncated(14 + 10), // truncated IPv4
        Spec::tcp(Ip::V6, 1, 8080).build().truncated(14 + 39), // truncated IPv6
        Spec::tcp(Ip::V4, 1, 8080).build().truncated(14 + 20 + 12), // truncated TCP
    ];
    let s = run_frames(&frames);
    assert_eq!(packets(&s, Class::Http), 5);
    assert_eq!(packets(&s, Class::Zap), 3);
    assert_eq!(packets(&s, Class::OtherTcp), 1);
    assert_eq!(packets(&s, Class::OtherIp), 2);
    assert_eq!(packets(&s, Class::NonIp), 1);
    assert_eq!(packets(&s, Class::Malformed), 4);
    assert_eq!(s.ipv4, 7);
    assert_eq!(s.ipv6, 4);
    assert_eq!(s.vlan, 2);
    let total_bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(s.total_bytes(), total_bytes);
    let http_bytes: u64 = [0, 1, 2, 3, 11]
        .iter()
        .map(|&i| frames[i].len() as u64)
        .sum();
    assert_eq!(s.bytes[Class::Http.index()], http_bytes);
}

#[test]
#[ignore = "needs root: loads BPF programs and runs them with BPF_PROG_TEST_RUN"]
fn unconfigured_ports_are_plain_tcp() {
    let s = run_frames(&[
        Spec::tcp(Ip::V4, 40000, 80).build(),
        Spec::tcp(Ip::V4, 40000, 9999).build(),
    ]);
    assert_eq!(packets(&s, Class::OtherTcp), 2);
    assert_eq!(packets(&s, Class::Http) + packets(&s, Class::Zap), 0);
}
