//! Crafted Ethernet frames for BPF_PROG_TEST_RUN tests, benches and fuzz seeds.
//! No allocation: a frame is a fixed buffer and a length. Checksums are not filled in; the
//! classifier never reads them.

use crate::parse::{ETH_HLEN, ETH_P_8021Q, ETH_P_IPV4, ETH_P_IPV6, IPPROTO_TCP, IPPROTO_UDP};

pub const MAX_FRAME: usize = 1536;

#[derive(Clone, Copy)]
pub struct Frame {
    buf: [u8; MAX_FRAME],
    len: usize,
}

impl Frame {
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts `tags` 802.1Q tags (VLAN 100, 101, ...) after the MAC addresses.
    pub fn with_vlan(mut self, tags: usize) -> Frame {
        for t in 0..tags {
            let at = 12;
            self.buf.copy_within(at..self.len, at + 4);
            let tci = 100 + t as u16;
            self.buf[at..at + 2].copy_from_slice(&ETH_P_8021Q.to_be_bytes());
            self.buf[at + 2..at + 4].copy_from_slice(&tci.to_be_bytes());
            self.len += 4;
        }
        self
    }

    /// The first `len` bytes only (a frame cut short on the wire).
    pub fn truncated(mut self, len: usize) -> Frame {
        self.len = self.len.min(len);
        self
    }

    /// Overwrites one byte (to make a header invalid).
    pub fn with_byte(mut self, off: usize, value: u8) -> Frame {
        self.buf[off] = value;
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ip {
    V4,
    V6,
}

/// What to put in a frame.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub ip: Ip,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
    pub payload: usize,
    /// TCP flags byte (0x02 = SYN, 0x18 = PSH|ACK).
    pub tcp_flags: u8,
    /// Last byte of the source address, to vary flows.
    pub src_host: u8,
}

impl Spec {
    pub fn tcp(ip: Ip, sport: u16, dport: u16) -> Self {
        Self {
            ip,
            proto: IPPROTO_TCP,
            sport,
            dport,
            payload: 0,
            tcp_flags: 0x02,
            src_host: 1,
        }
    }

    pub fn udp(ip: Ip, sport: u16, dport: u16) -> Self {
        Self {
            proto: IPPROTO_UDP,
            ..Self::tcp(ip, sport, dport)
        }
    }

    /// A data segment (PSH|ACK) with `payload` bytes.
    pub fn data(mut self, payload: usize) -> Self {
        self.payload = payload;
        self.tcp_flags = 0x18;
        self
    }

    pub fn build(&self) -> Frame {
        let mut f = Frame {
            buf: [0; MAX_FRAME],
            len: 0,
        };
        let b = &mut f.buf;
        b[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
        b[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        let l4_len = match self.proto {
            IPPROTO_TCP => 20,
            IPPROTO_UDP => 8,
            _ => 0,
        };
        let l4_total = l4_len + self.payload;
        let l4_off = match self.ip {
            Ip::V4 => {
                b[12..14].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
                let ip = &mut b[ETH_HLEN..ETH_HLEN + 20];
                ip[0] = 0x45;
                ip[2..4].copy_from_slice(&((20 + l4_total) as u16).to_be_bytes());
                ip[6] = 0x40; // don't fragment
                ip[8] = 64;
                ip[9] = self.proto;
                ip[12..16].copy_from_slice(&[10, 0, 0, self.src_host]);
                ip[16..20].copy_from_slice(&[10, 0, 0, 200]);
                ETH_HLEN + 20
            }
            Ip::V6 => {
                b[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
                let ip = &mut b[ETH_HLEN..ETH_HLEN + 40];
                ip[0] = 0x60;
                ip[4..6].copy_from_slice(&(l4_total as u16).to_be_bytes());
                ip[6] = self.proto;
                ip[7] = 64;
                ip[8] = 0xfd;
                ip[23] = self.src_host;
                ip[24] = 0xfd;
                ip[39] = 200;
                ETH_HLEN + 40
            }
        };
        let l4 = &mut b[l4_off..l4_off + l4_len];
        if l4_len > 0 {
            l4[0..2].copy_from_slice(&self.sport.to_be_bytes());
            l4[2..4].copy_from_slice(&self.dport.to_be_bytes());
        }
        if self.proto == IPPROTO_TCP {
            l4[12] = 5 << 4;
            l4[13] = self.tcp_flags;
            l4[14..16].copy_from_slice(&64240u16.to_be_bytes());
        } else if self.proto == IPPROTO_UDP {
            l4[4..6].copy_from_slice(&(l4_total as u16).to_be_bytes());
        }
        let end = (l4_off + l4_total).min(MAX_FRAME);
        for (i, byte) in b[l4_off + l4_len..end].iter_mut().enumerate() {
            *byte = b'a' + (i % 26) as u8;
        }
        f.len = end;
        f
    }
}

/// An ARP request (non-IP).
pub fn arp() -> Frame {
    let mut f = Frame {
        buf: [0; MAX_FRAME],
        len: 42,
    };
    f.buf[0..6].copy_from_slice(&[0xff; 6]);
    f.buf[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f.buf[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f.buf[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f
}
