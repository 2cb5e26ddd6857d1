//! TCP port lists as given on the command line: `8080`, `8080,8081`, `9000-9010`.
use anyhow::{bail, Result};

/// Parses a port list; every port in 1..=65535, ranges ascending, no empty items.
pub fn parse_ports(s: &str) -> Result<Vec<u16>> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (port(a, s)?, port(b, s)?),
            None => {
                let p = port(item, s)?;
                (p, p)
            }
        };
        if lo > hi {
            bail!("port range {item:?} in {s:?} runs backwards");
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn port(p: &str, whole: &str) -> Result<u16> {
    match p.trim().parse::<u16>() {
        Ok(0) | Err(_) => bail!("{p:?} in port list {whole:?} is not a TCP port (1-65535)"),
        Ok(n) => Ok(n),
    }
}

/// The HTTP and ZAP port sets must not share a port: a packet has one class.
pub fn check_disjoint(http: &[u16], zap: &[u16]) -> Result<()> {
    if let Some(p) = http.iter().find(|p| zap.contains(p)) {
        bail!("port {p} is in both --http-ports and --zap-ports");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_ports("8080").unwrap(), vec![8080]);
        assert_eq!(parse_ports("81, 80,80").unwrap(), vec![80, 81]);
        assert_eq!(parse_ports("9000-9002").unwrap(), vec![9000, 9001, 9002]);
    }

    #[test]
    fn bad_lists_name_the_value() {
        for (bad, needle) in [
            ("", "\"\""),
            ("0", "\"0\""),
            ("65536", "\"65536\""),
            ("80,,81", "\"\""),
            ("http", "\"http\""),
            ("90-80", "backwards"),
            ("1-x", "\"x\""),
        ] {
            let err = parse_ports(bad).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad:?}: {err}");
        }
        assert!(check_disjoint(&[8080], &[8080]).is_err());
        assert!(check_disjoint(&[8080], &[9653]).is_ok());
    }
}

/// A parsed port list as a clap value (one flag occurrence holds the whole list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortList(pub Vec<u16>);

/// clap value parser for [`PortList`].
pub fn port_list(s: &str) -> Result<PortList, String> {
    parse_ports(s).map(PortList).map_err(|e| e.to_string())
}
