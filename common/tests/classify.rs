//! The classifier on crafted frames, on the host: the same code the XDP programs run.
use rxsteer_common::{
    frames::{arp, Ip, Spec},
    parse::{classify, walk, Family, Malformed, IPPROTO_TCP},
    Class, PORT_HTTP, PORT_NONE, PORT_ZAP,
};

fn ports(port: u16) -> u8 {
    match port {
        8080 => PORT_HTTP,
        9653 => PORT_ZAP,
        _ => PORT_NONE,
    }
}

fn class_of(bytes: &[u8]) -> Class {
    classify(bytes, ports).class
}

#[test]
fn http_and_zap_by_destination_and_source_port() {
    for ip in [Ip::V4, Ip::V6] {
        assert_eq!(
            class_of(Spec::tcp(ip, 40000, 8080).build().as_bytes()),
            Class::Http
        );
        assert_eq!(
            class_of(Spec::tcp(ip, 8080, 40000).data(100).build().as_bytes()),
            Class::Http
        );
        assert_eq!(
            class_of(Spec::tcp(ip, 40000, 9653).data(10).build().as_bytes()),
            Class::Zap
        );
        assert_eq!(
            class_of(Spec::tcp(ip, 9653, 40000).build().as_bytes()),
            Class::Zap
        );
        assert_eq!(
            class_of(Spec::tcp(ip, 40000, 22).build().as_bytes()),
            Class::OtherTcp
        );
        assert_eq!(
            class_of(Spec::udp(ip, 40000, 8080).build().as_bytes()),
            Class::OtherIp
        );
    }
}

#[test]
fn destination_port_wins_over_source_port() {
    let f = Spec::tcp(Ip::V4, 9653, 8080).build();
    assert_eq!(class_of(f.as_bytes()), Class::Http);
}

#[test]
fn families_and_vlan_are_reported() {
    let v = classify(Spec::tcp(Ip::V6, 1, 8080).build().as_bytes(), ports);
    assert_eq!((v.family, v.vlan), (Family::V6, false));
    for tags in [1, 2] {
        let f = Spec::tcp(Ip::V4, 1, 9653).build().with_vlan(tags);
        let v = classify(f.as_bytes(), ports);
        assert_eq!((v.class, v.family, v.vlan), (Class::Zap, Family::V4, true));
    }
    // Three stacked tags are more than the walker unwraps: malformed, not "non-IP".
    let f = Spec::tcp(Ip::V4, 1, 9653).build().with_vlan(3);
    assert_eq!(class_of(f.as_bytes()), Class::Malformed);
    let v = classify(arp().with_vlan(1).as_bytes(), ports);
    assert_eq!((v.class, v.vlan), (Class::NonIp, true));
}

#[test]
fn non_ip_is_non_ip() {
    assert_eq!(class_of(arp().as_bytes()), Class::NonIp);
}

#[test]
fn every_truncation_of_a_tcp_frame_is_malformed_until_the_tcp_header_is_whole() {
    for (ip, whole) in [(Ip::V4, 14 + 20 + 20), (Ip::V6, 14 + 40 + 20)] {
        let f = Spec::tcp(ip, 40000, 8080).build();
        assert_eq!(f.len(), whole);
        for len in 0..whole {
            let c = class_of(f.truncated(len).as_bytes());
            assert_eq!(c, Class::Malformed, "{ip:?} cut to {len} bytes");
        }
        assert_eq!(class_of(f.as_bytes()), Class::Http);
    }
}

#[test]
fn invalid_headers_are_malformed() {
    let v4 = Spec::tcp(Ip::V4, 1, 8080).build();
    // IP version 5 in an IPv4 ethertype; IHL below 5; IHL pointing past the frame.
    assert_eq!(
        class_of(v4.with_byte(14, 0x55).as_bytes()),
        Class::Malformed
    );
    assert_eq!(
        class_of(v4.with_byte(14, 0x44).as_bytes()),
        Class::Malformed
    );
    assert_eq!(
        class_of(v4.with_byte(14, 0x4f).as_bytes()),
        Class::Malformed
    );
    // TCP data offset below 5 words.
    assert_eq!(
        class_of(v4.with_byte(14 + 20 + 12, 0x40).as_bytes()),
        Class::Malformed
    );
    let v6 = Spec::tcp(Ip::V6, 1, 8080).build();
    assert_eq!(
        class_of(v6.with_byte(14, 0x40).as_bytes()),
        Class::Malformed
    );
}

#[test]
fn non_first_ipv4_fragment_is_tcp_without_ports() {
    // Fragment offset 185 (x 8 bytes): ports are not in this packet.
    let f = Spec::tcp(Ip::V4, 1, 8080)
        .build()
        .with_byte(14 + 6, 0x00)
        .with_byte(14 + 7, 185);
    let h = walk(f.as_bytes()).unwrap();
    assert_eq!((h.proto, h.ports()), (IPPROTO_TCP, None));
    assert_eq!(class_of(f.as_bytes()), Class::OtherTcp);
}

#[test]
fn ipv6_extension_headers_are_skipped_to_the_ports() {
    // Rebuild an IPv6 TCP frame with a hop-by-hop header (8 bytes) before TCP.
    let base = Spec::tcp(Ip::V6, 40000, 9653).build();
    let bytes = base.as_bytes();
    let mut v = [0u8; 200];
    v[..54].copy_from_slice(&bytes[..54]);
    v[14 + 6] = 0; // next header: hop-by-hop
    v[54] = IPPROTO_TCP; // hop-by-hop's next header
    v[55] = 0; // (0 + 1) * 8 bytes
    v[62..82].copy_from_slice(&bytes[54..74]);
    let frame = &v[..82];
    let h = walk(frame).unwrap();
    assert_eq!((h.proto, h.ports()), (IPPROTO_TCP, Some((40000, 9653))));
    assert_eq!(class_of(frame), Class::Zap);
    // The same frame cut inside the extension header is malformed.
    assert_eq!(walk(&v[..58]), Err(Malformed));
}
