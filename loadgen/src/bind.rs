//! `--bind ADDR[:LOW-HIGH],...`: where connections come from. Connection i takes the
//! addresses round-robin and, with a port range, a port of its own from that address's range
//! (a reconnect moves on to another, so a port in TIME_WAIT is not reused at once). Spread
//! source addresses and ports give 5-tuple steering distinct flows to spread.
use std::net::{IpAddr, SocketAddr};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    entries: Vec<(IpAddr, Option<(u16, u16)>)>,
}

/// One `--bind` value: a comma-separated list of `ADDR`, `ADDR:LOW-HIGH` or `[V6]:LOW-HIGH`.
pub fn parse(s: &str) -> Result<Bind, String> {
    let bad = |item: &str, why: &str| format!("--bind {item:?}: {why}");
    let mut entries = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (addr, range) = match item.strip_prefix('[') {
            Some(v6) => {
                let (a, rest) = v6.split_once(']').ok_or_else(|| bad(item, "missing ]"))?;
                (a, rest.strip_prefix(':'))
            }
            None if item.matches(':').count() == 1 => {
                let (a, r) = item.split_once(':').expect("one colon");
                (a, Some(r))
            }
            None => (item, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| bad(item, "not an IP address"))?;
        let range = match range {
            None => None,
            Some(r) => {
                let (lo, hi) = r
                    .split_once('-')
                    .ok_or_else(|| bad(item, "ports are LOW-HIGH"))?;
                let port = |p: &str| p.parse::<u16>().ok().filter(|p| *p > 0);
                let (lo, hi) = (port(lo), port(hi));
                match (lo, hi) {
                    (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
                    _ => return Err(bad(item, "ports are LOW-HIGH, 1-65535, LOW <= HIGH")),
                }
            }
        };
        entries.push((ip, range));
    }
    Ok(Bind { entries })
}

impl Bind {
    /// Checks the plan against the run: the target's address family, enough ports for
    /// `connections` (with room for reconnects), and every address being this machine's.
    pub fn check(&self, target: SocketAddr, connections: u32) -> Result<(), String> {
        let n = self.entries.len() as u32;
        for (i, (ip, range)) in self.entries.iter().enumerate() {
            if ip.is_ipv4() != target.is_ipv4() {
                return Err(format!(
                    "--bind {ip}: not the target's address family ({target})"
                ));
            }
            let mine = connections / n + u32::from((i as u32) < connections % n);
            if let Some((lo, hi)) = range {
                let span = u32::from(hi - lo) + 1;
                if span < mine {
                    return Err(format!(
                        "--bind {ip}:{lo}-{hi}: {span} ports for {mine} connections; widen the range"
                    ));
                }
            }
            std::net::TcpListener::bind((*ip, 0))
                .map_err(|e| format!("--bind {ip}: not an address of this machine ({e})"))?;
        }
        Ok(())
    }

    /// Local address of connection `index` on its `attempt`-th connect (0 = first).
    pub fn local(&self, index: u64, attempt: u64, connections: u64) -> SocketAddr {
        let n = self.entries.len() as u64;
        let (ip, range) = self.entries[(index % n) as usize];
        let port = match range {
            None => 0,
            Some((lo, hi)) => {
                let span = u64::from(hi - lo) + 1;
                // This address's connections, then the same again one round later per attempt.
                let per_addr = connections.div_ceil(n);
                lo + ((index / n + attempt * per_addr) % span) as u16
            }
        };
        SocketAddr::new(ip, port)
    }
}

/// Where one connection comes from: its index in the run and the run's plan.
#[derive(Clone, Debug)]
pub struct Source {
    pub bind: std::sync::Arc<Bind>,
    pub index: u64,
    pub connections: u64,
}

impl Source {
    /// A socket bound to this connection's address for its `attempt`-th connect.
    pub fn socket(
        &self,
        target: SocketAddr,
        attempt: u64,
    ) -> std::io::Result<tokio::net::TcpSocket> {
        let s = if target.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        s.set_reuseaddr(true)?;
        s.bind(self.bind.local(self.index, attempt, self.connections))?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_bad_ones_are_named() {
        let b = parse("127.0.0.2:40000-40009, 127.0.0.3").unwrap();
        assert_eq!(b.local(0, 0, 4), "127.0.0.2:40000".parse().unwrap());
        assert_eq!(b.local(1, 0, 4), "127.0.0.3:0".parse().unwrap());
        assert_eq!(b.local(2, 0, 4), "127.0.0.2:40001".parse().unwrap());
        // A reconnect takes a port one round further on.
        assert_eq!(b.local(0, 1, 4), "127.0.0.2:40002".parse().unwrap());
        assert_eq!(
            parse("[::1]:5000-5001").unwrap().local(1, 0, 2),
            "[::1]:5001".parse().unwrap()
        );
        for (bad, why) in [
            ("10.0.0.300", "not an IP address"),
            ("127.0.0.1:9-1", "LOW <= HIGH"),
            ("127.0.0.1:0-5", "1-65535"),
            ("127.0.0.1:80", "LOW-HIGH"),
            ("[::1", "missing ]"),
        ] {
            assert!(parse(bad).unwrap_err().contains(why), "{bad}");
        }
    }

    #[test]
    fn plans_are_checked_against_the_run() {
        let t: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(parse("127.0.0.1:40000-40003").unwrap().check(t, 4).is_ok());
        let e = parse("127.0.0.1:40000-40001")
            .unwrap()
            .check(t, 4)
            .unwrap_err();
        assert!(e.contains("2 ports for 4 connections"), "{e}");
        assert!(parse("::1")
            .unwrap()
            .check(t, 1)
            .unwrap_err()
            .contains("address family"));
        assert!(parse("192.0.2.77")
            .unwrap()
            .check(t, 1)
            .unwrap_err()
            .contains("not an address of this machine"));
    }
}
