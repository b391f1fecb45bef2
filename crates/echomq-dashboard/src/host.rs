//! Which `Host` a request may name, and which `Origin` a POST may come
//! from: the defence against DNS rebinding (a site whose name resolves to
//! 127.0.0.1 would otherwise be same-origin with the dashboard) and a
//! second defence against cross-site forms.
//!
//! Served by default: `127.0.0.1`, `localhost` and `[::1]` (on the
//! listening port once it is known), the listening address itself when it
//! is a specific one, the base URL's host, and each host allowed by name.
//! Any other `Host` answers 421. A POST's `Origin` (or, lacking one, its
//! `Referer`) must name the request's own `Host` (the same origin: another
//! port of the same host is another origin) or a host named by
//! configuration (behind a proxy that rewrites `Host`); 403 otherwise. A
//! POST that names neither passes only with `Authorization: Bearer` (a
//! script, not a browser).
//!
//! This file holds the hosts served ([`Hosts`], which the shared state
//! holds) and how a name matches them; the checks that answer 421 and
//! 403 are `auth.rs`'s, beside `admit`, so that it imports nothing else
//! of the dashboard.

use std::net::{IpAddr, SocketAddr};

/// A host the dashboard serves: a name, and the one port it is served on
/// (any when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allowed {
    /// Lower case; an IPv6 address keeps its brackets (`[::1]`).
    name: String,
    port: Option<u16>,
}

/// A host that is not `name` or `name:port`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "allowed host {0:?}: expected a name or address, optionally with :port (ops.example.com, 10.0.0.5:7070, [::1]:7070)"
)]
pub struct HostError(pub String);

impl Allowed {
    /// Parses `ops.example.com`, `ops.example.com:8443`, `10.0.0.5`,
    /// `[::1]:7070`.
    pub(crate) fn parse(text: &str) -> Result<Self, HostError> {
        split(text).ok_or_else(|| HostError(text.to_string()))
    }

    /// The loopback names, on `port` (any when `None`).
    pub(crate) fn loopback(port: Option<u16>) -> Vec<Self> {
        ["127.0.0.1", "localhost", "[::1]"]
            .into_iter()
            .map(|name| Self {
                name: name.into(),
                port,
            })
            .collect()
    }

    /// The address a listener is bound to, unless it is unspecified
    /// (`0.0.0.0` names no host a client types).
    pub(crate) fn listening(addr: SocketAddr) -> Option<Self> {
        if addr.ip().is_unspecified() {
            return None;
        }
        let name = match addr.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        Some(Self {
            name,
            port: Some(addr.port()),
        })
    }

    fn admits(&self, name: &str, port: Option<u16>) -> bool {
        self.name == name && (self.port.is_none() || self.port == port)
    }
}

/// `name[:port]` split, the name lower-cased; `None` when it is not a
/// plausible host (empty, a bad port, characters no host name holds).
fn split(text: &str) -> Option<Allowed> {
    let (name, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        inside.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?.parse().ok()?),
        };
        (format!("[{}]", inside.to_ascii_lowercase()), port)
    } else {
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => (name, Some(port.parse().ok()?)),
            None => (text, None),
        };
        let plausible = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !plausible {
            return None;
        }
        (name.to_ascii_lowercase(), port)
    };
    Some(Allowed { name, port })
}

/// The hosts one dashboard serves.
#[derive(Debug, Clone)]
pub(crate) struct Hosts {
    /// The loopback names.
    pub(crate) loopback: Vec<Allowed>,
    /// The hosts configuration named: the listening address, each allowed
    /// host, the base URL's.
    pub(crate) named: Vec<Allowed>,
}

impl Hosts {
    /// Whether `host` (a `Host` header's value) is served.
    pub(crate) fn admit(&self, host: &str) -> bool {
        split(host).is_some_and(|h| {
            (self.loopback.iter().chain(&self.named)).any(|a| a.admits(&h.name, h.port))
        })
    }

    /// Whether a form from an origin of `authority` may act on a request
    /// for `host`: the same host and port, or a host configuration named.
    pub(crate) fn same_origin(&self, authority: &str, host: Option<&str>) -> bool {
        let Some(origin) = split(authority) else {
            return false;
        };
        host.and_then(split).is_some_and(|host| host == origin)
            || self
                .named
                .iter()
                .any(|a| a.admits(&origin.name, origin.port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(port: Option<u16>) -> Hosts {
        Hosts {
            loopback: Allowed::loopback(port),
            named: Vec::new(),
        }
    }

    #[test]
    fn loopback_names_are_served_on_their_port() {
        let served = hosts(Some(7070));
        for host in [
            "127.0.0.1:7070",
            "localhost:7070",
            "LOCALHOST:7070",
            "[::1]:7070",
        ] {
            assert!(served.admit(host), "{host}");
        }
        for host in [
            "127.0.0.1:7071",
            "127.0.0.1",
            "evil.example:7070",
            "127.0.0.1.nip.io:7070",
            "[::2]:7070",
            "",
            "localhost:7070:1",
            "local host:7070",
        ] {
            assert!(!served.admit(host), "{host}");
        }
        assert!(hosts(None).admit("localhost:1234"));
        assert!(hosts(None).admit("localhost"));
    }

    #[test]
    fn a_form_acts_from_its_own_origin_or_a_named_host() {
        let mut served = hosts(None);
        assert!(served.same_origin("127.0.0.1:7070", Some("127.0.0.1:7070")));
        assert!(served.same_origin("LOCALHOST:7070", Some("localhost:7070")));
        assert!(!served.same_origin("127.0.0.1:9999", Some("127.0.0.1:7070")));
        assert!(!served.same_origin("localhost:7070", Some("127.0.0.1:7070")));
        assert!(!served.same_origin("127.0.0.1:7070", None));
        served
            .named
            .push(Allowed::parse("ops.example.com").unwrap());
        assert!(served.same_origin("ops.example.com", Some("127.0.0.1:7070")));
    }

    #[test]
    fn allowed_hosts_parse_with_or_without_a_port() {
        assert_eq!(
            Allowed::parse("Ops.Example.com:8443"),
            Ok(Allowed {
                name: "ops.example.com".into(),
                port: Some(8443)
            })
        );
        assert!(Allowed::parse("[::1]").is_ok());
        for bad in [
            "", ":80", "a b", "a:port", "[::1", "[zz]:1", "a/b", "a:99999",
        ] {
            assert!(Allowed::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_unspecified_listening_address_names_no_host() {
        assert_eq!(Allowed::listening("0.0.0.0:7070".parse().unwrap()), None);
        assert_eq!(
            Allowed::listening("[::1]:7070".parse().unwrap()),
            Some(Allowed {
                name: "[::1]".into(),
                port: Some(7070)
            })
        );
    }
}
