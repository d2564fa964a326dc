//! The outbound address policy (SSRF guard). Targets that resolve to private, loopback,
//! link-local, cloud-metadata or otherwise non-public addresses are refused unless the
//! configuration allows them. The check runs on every redirect hop: IP-literal hosts are
//! checked directly, and host names are checked by the DNS resolver the HTTP client uses,
//! so the address that is connected to is the address that was checked (no rebinding gap).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Which targets may be contacted.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allow_private: bool,
    exempt_hosts: HashSet<String>,
}

/// Why a name did not yield a usable address.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Every address of the name is refused by the policy.
    #[error("{host} resolves only to addresses that are not allowed")]
    Blocked {
        /// The name.
        host: String,
    },
    /// The name does not resolve.
    #[error("could not resolve {host}: {detail}")]
    NotFound {
        /// The name.
        host: String,
        /// Resolver message.
        detail: String,
    },
}

impl AddressPolicy {
    /// A policy; `exempt_hosts` are exact names or addresses always allowed.
    pub fn new(allow_private: bool, exempt_hosts: &[String]) -> Self {
        let exempt_hosts = exempt_hosts.iter().map(|h| normalize_host(h)).collect();
        Self { allow_private, exempt_hosts }
    }

    /// Whether `host` is exempt from the private-address rule.
    pub fn is_exempt(&self, host: &str) -> bool {
        self.allow_private || self.exempt_hosts.contains(&normalize_host(host))
    }

    /// Whether connecting to `ip` for `host` is allowed.
    pub fn permits(&self, host: &str, ip: IpAddr) -> bool {
        is_public(ip) || self.is_exempt(host)
    }

    /// Checks a URL whose host is an IP literal; host names are checked at resolution.
    /// Returns the refused host on failure.
    pub fn check_literal(&self, url: &Url) -> Result<(), String> {
        let ip = match url.host() {
            Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
            _ => return Ok(()),
        };
        let host = url.host_str().unwrap_or_default();
        if self.permits(host, ip) { Ok(()) } else { Err(host.to_owned()) }
    }

    /// Resolves `host` and keeps only permitted addresses.
    ///
    /// Special-use names are answered without asking DNS (RFC 6761): `.invalid` never
    /// exists, and `localhost` subdomains are the loopback address.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = normalize_host(bare);
        let found: Vec<SocketAddr> = if name == "invalid" || name.ends_with(".invalid") {
            return Err(ResolveError::NotFound { host: host.to_owned(), detail: "reserved name".into() });
        } else if name.ends_with(".localhost") {
            vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)]
        } else {
            match tokio::net::lookup_host((bare, port)).await {
                Ok(addrs) => addrs.collect(),
                Err(e) => {
                    return Err(ResolveError::NotFound { host: host.to_owned(), detail: e.to_string() });
                }
            }
        };
        if found.is_empty() {
            return Err(ResolveError::NotFound { host: host.to_owned(), detail: "no addresses".into() });
        }
        let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| self.permits(host, a.ip())).collect();
        if allowed.is_empty() {
            return Err(ResolveError::Blocked { host: host.to_owned() });
        }
        Ok(allowed)
    }
}

fn normalize_host(host: &str) -> String {
    host.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase()
}

/// The DNS resolver handed to the HTTP client: resolution through the policy.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    /// A resolver enforcing `policy`.
    pub fn new(policy: Arc<AddressPolicy>) -> Self {
        Self { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let addrs = policy.resolve(name.as_str(), 0).await?;
            let iter: Addrs = Box::new(addrs.into_iter());
            Ok(iter)
        })
    }
}

/// Whether `ip` is a globally routable unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = ip.is_unspecified()
        || a == 0                                   // "this network"
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()                       // includes 169.254.169.254 metadata
        || (a == 100 && (64..128).contains(&b))     // carrier-grade NAT
        || (a == 192 && b == 0 && c == 0)           // IETF protocol assignments
        || ip.is_documentation()
        || (a == 198 && (b == 18 || b == 19))       // benchmarking
        || ip.is_multicast()
        || a >= 240; // reserved and broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let seg = ip.segments();
    // NAT64 (64:ff9b::/96) embeds an IPv4 address.
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((seg[6] >> 8) as u8, seg[6] as u8, (seg[7] >> 8) as u8, seg[7] as u8);
        return is_public_v4(v4);
    }
    let refused = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00              // unique local, incl. fd00:ec2::254 metadata
        || (seg[0] & 0xffc0) == 0xfe80              // link-local
        || (seg[0] & 0xffc0) == 0xfec0              // site-local (deprecated)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8)   // documentation
        || seg[..6] == [0, 0, 0, 0, 0, 0]; // IPv4-compatible and other reserved low space
    !refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn private_and_special_addresses_are_refused() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(bad)), "{bad} should be refused");
        }
        for good in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip(good)), "{good} should be allowed");
        }
    }

    #[test]
    fn literal_hosts_follow_the_policy() {
        let strict = AddressPolicy::new(false, &["intranet.test".into(), "10.0.0.7".into()]);
        let url = |s: &str| Url::parse(s).expect("url");
        assert_eq!(strict.check_literal(&url("http://127.0.0.1:8080/")), Err("127.0.0.1".into()));
        assert_eq!(strict.check_literal(&url("http://[::1]/")), Err("[::1]".into()));
        assert!(strict.check_literal(&url("http://10.0.0.7/")).is_ok());
        assert!(strict.check_literal(&url("http://example.test/")).is_ok());
        assert!(strict.permits("intranet.test", ip("10.0.0.5")));
        assert!(!strict.permits("other.test", ip("10.0.0.5")));
        let open = AddressPolicy::new(true, &[]);
        assert!(open.check_literal(&url("http://127.0.0.1/")).is_ok());
    }

    #[tokio::test]
    async fn names_resolving_to_loopback_are_blocked() {
        let strict = AddressPolicy::new(false, &[]);
        let err = strict.resolve("localhost", 80).await.unwrap_err();
        assert!(matches!(err, ResolveError::Blocked { .. }), "{err}");
        let exempt = AddressPolicy::new(false, &["localhost".into()]);
        assert!(!exempt.resolve("localhost", 80).await.expect("resolves").is_empty());
    }

    #[tokio::test]
    async fn special_use_names_never_reach_dns() {
        let open = AddressPolicy::new(true, &[]);
        let err = open.resolve("nothing.invalid", 80).await.unwrap_err();
        assert!(matches!(err, ResolveError::NotFound { .. }));
        let addrs = open.resolve("blog.site.localhost", 8080).await.expect("loopback");
        assert_eq!(addrs, vec!["127.0.0.1:8080".parse().expect("addr")]);
        let strict = AddressPolicy::new(false, &[]);
        assert!(matches!(strict.resolve("a.localhost", 80).await, Err(ResolveError::Blocked { .. })));
    }
}
