//! TARGET: `http://host:port/path` or `zap://host:port/path`.
use anyhow::{bail, Context, Result};
use std::net::{SocketAddr, ToSocketAddrs};

pub use rxsteer_records::Proto;

#[derive(Clone, Debug)]
pub struct Target {
    pub proto: Proto,
    /// `host:port` as given (the Host header).
    pub authority: String,
    pub addr: SocketAddr,
    /// The path given, or None for `/` (the scenario picks it then).
    pub path: Option<String>,
}

pub fn parse(s: &str) -> Result<Target> {
    let scheme_of = |p: &Proto| format!("{}://", p.spec().scheme);
    let Some((proto, rest)) = Proto::ALL
        .iter()
        .find_map(|p| s.strip_prefix(&scheme_of(p)).map(|r| (*p, r)))
    else {
        let schemes: Vec<String> = Proto::ALL.iter().map(scheme_of).collect();
        bail!("target {s:?}: the scheme must be {}", schemes.join(" or "));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if !authority.contains(':') {
        bail!("target {s:?}: give a port (host:port)");
    }
    let addr = authority
        .to_socket_addrs()
        .with_context(|| format!("target {s:?}: cannot resolve {authority:?}"))?
        .next()
        .with_context(|| format!("target {s:?}: {authority:?} has no address"))?;
    Ok(Target {
        proto,
        authority: authority.to_string(),
        addr,
        path: (path != "/").then(|| path.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = parse("http://127.0.0.1:8080/health").unwrap();
        assert_eq!(
            (t.proto, t.authority.as_str(), t.path.as_deref()),
            (Proto::Http, "127.0.0.1:8080", Some("/health"))
        );
        let t = parse("zap://127.0.0.1:9653").unwrap();
        assert_eq!((t.proto, t.path), (Proto::Zap, None));
        for (bad, needle) in [
            ("ftp://x:1/", "scheme must be http:// or zap://"),
            ("http://127.0.0.1/", "give a port"),
            ("http://no.such.host.invalid:80/", "cannot resolve"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
