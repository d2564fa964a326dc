//! TLS between nodes (`cluster.tls_cert`, `tls_key`, `tls_ca`): ractor_cluster's node
//! server accepts TLS connections with our acceptor, and every connection this node opens
//! goes through [`Dialer`]. Both sides prove themselves: a node accepts only peers whose
//! certificate chains to `tls_ca` (mutual TLS), and checks the certificate of the node it
//! dials against the address it dials (an IP address or DNS name among the certificate's
//! subject alternative names). The shared secret is still checked inside the TLS session.
//!
//! Inbound TLS is accepted here ([`accept`]), not by ractor_cluster's listener: that one
//! makes each handshake in turn with no time limit, so one connection that never speaks
//! would keep every other node out. Here each handshake runs on its own task, has
//! [`HANDSHAKE_TIMEOUT`] to finish, and at most [`HANDSHAKES`] run at once; a finished
//! session is handed to the node server as its own listener would.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor_cluster::{NetworkStream, NodeServerMessage};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::ClusterError;
use crate::config::ClusterSettings;

/// How this node opens connections to others: plain TCP or TLS with its certificate, from
/// the address it listens on when that is one address (so peers, and their firewalls, see
/// a node's connections come from the address it is known by).
#[derive(Clone)]
pub(crate) struct Dialer {
    /// TLS, or plain TCP (the secret is still checked) when `None`.
    tls: Option<TlsConnector>,
    /// The source address of the connections, `None` for the system's choice.
    from: Option<IpAddr>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer").field("tls", &self.tls.is_some()).field("from", &self.from).finish()
    }
}

impl Dialer {
    /// Opens a session with the node at `address` (`host:port`), giving up after
    /// [`HANDSHAKE_TIMEOUT`] (a peer that accepts but never answers holds no dial, nor
    /// this node's start, for longer).
    pub(crate) async fn dial(
        &self,
        server: &ActorRef<NodeServerMessage>,
        address: &str,
    ) -> Result<(), DialError> {
        let opened = async {
            let stream = self.connect(address).await.map_err(DialError::of)?;
            // The node may have dialled this one meanwhile (both redial when a cut heals,
            // and a connection can be minutes on its way through a lossy network): a second
            // session would be closed by ractor_cluster's election, with the calls on it.
            if super::agent::in_session(server).await.is_some_and(|open| open.contains(address)) {
                return Ok(());
            }
            let (peer_addr, local_addr) =
                (stream.peer_addr().map_err(DialError::of)?, stream.local_addr().map_err(DialError::of)?);
            let stream = match &self.tls {
                None => NetworkStream::Raw { peer_addr, local_addr, stream },
                Some(connector) => {
                    let host = super::host_of(address).trim_start_matches('[').trim_end_matches(']');
                    let name = ServerName::try_from(host.to_owned())
                        .map_err(|e| DialError::Other(format!("`{host}`: {e}")))?;
                    let stream = connector
                        .connect(name, stream)
                        .await
                        .map_err(|e| DialError::Other(format!("TLS handshake: {e}")))?;
                    NetworkStream::TlsClient { peer_addr, local_addr, stream }
                }
            };
            server
                .cast(NodeServerMessage::ConnectionOpened { stream: Box::new(stream), is_server: false })
                .map_err(|_| DialError::Other("the node server stopped".into()))
        };
        tokio::time::timeout(HANDSHAKE_TIMEOUT, opened).await.unwrap_or_else(|_| {
            Err(DialError::Other(format!("no answer within {} s", HANDSHAKE_TIMEOUT.as_secs())))
        })
    }

    /// A TCP connection to the first of `address`'s addresses that takes one.
    async fn connect(&self, address: &str) -> std::io::Result<TcpStream> {
        let mut last = None;
        for target in tokio::net::lookup_host(address).await? {
            let socket = if target.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
            if let Some(from) = source_for(self.from, target.ip()) {
                socket.bind(SocketAddr::new(from, 0))?;
            }
            match socket.connect(target).await {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("`{address}` has no address"))
        }))
    }
}

/// The source address of a connection to `target` from a node listening on `listen`: that
/// address when it is one (not `0.0.0.0` or `::`) of the target's family, and not a loopback
/// address while the target is elsewhere (which it could not reach).
fn source_for(listen: Option<IpAddr>, target: IpAddr) -> Option<IpAddr> {
    listen.filter(|ip| {
        !ip.is_unspecified()
            && ip.is_ipv4() == target.is_ipv4()
            && (!ip.is_loopback() || target.is_loopback())
    })
}

/// Why a dial failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DialError {
    /// The address refused the connection: no process listens there (the node is not
    /// running, or not yet). A node that is frozen, or cut off by a network that drops its
    /// packets, does not refuse: its connections open, or time out.
    Refused,
    /// Anything else: no answer in time, a failed handshake, an address that does not
    /// resolve.
    Other(String),
}

impl DialError {
    fn of(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::ConnectionRefused => Self::Refused,
            _ => Self::Other(e.to_string()),
        }
    }
}

impl std::fmt::Display for DialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused => f.write_str("connection refused"),
            Self::Other(reason) => f.write_str(reason),
        }
    }
}

fn invalid(key: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Settings(format!("{key}: {e}"))
}

/// How long a peer may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Handshakes under way at most; a connection beyond them is closed at once.
const HANDSHAKES: usize = 64;

/// The acceptor for incoming connections and this node's dialer, from the settings: plain
/// TCP (no acceptor) when no certificate is configured.
pub(crate) fn load(settings: &ClusterSettings) -> Result<(Option<TlsAcceptor>, Dialer), ClusterError> {
    let from = settings.listen.trim().parse::<SocketAddr>().ok().map(|a| a.ip());
    if !settings.tls() {
        return Ok((None, Dialer { tls: None, from }));
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(settings.tls_cert.trim())
        .map_err(|e| invalid("cluster.tls_cert", e))?
        .collect::<Result<_, _>>()
        .map_err(|e| invalid("cluster.tls_cert", e))?;
    if certs.is_empty() {
        return Err(invalid("cluster.tls_cert", "no certificate in the file"));
    }
    let key =
        PrivateKeyDer::from_pem_file(settings.tls_key.trim()).map_err(|e| invalid("cluster.tls_key", e))?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in
        CertificateDer::pem_file_iter(settings.tls_ca.trim()).map_err(|e| invalid("cluster.tls_ca", e))?
    {
        roots.add(ca.map_err(|e| invalid("cluster.tls_ca", e))?).map_err(|e| invalid("cluster.tls_ca", e))?;
    }
    if roots.is_empty() {
        return Err(invalid("cluster.tls_ca", "no certificate in the file"));
    }
    let roots = Arc::new(roots);
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::clone(&roots))
        .build()
        .map_err(|e| invalid("cluster.tls_ca", e))?;
    let server = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| invalid("cluster.tls_cert", e))?;
    let client = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| invalid("cluster.tls_cert", e))?;
    let dialer = Dialer { tls: Some(TlsConnector::from(Arc::new(client))), from };
    Ok((Some(TlsAcceptor::from(Arc::new(server))), dialer))
}

/// Accepts the cluster's TLS connections on `listener` for `server` until the node server
/// stops: each handshake on a task of its own, bounded in time and number.
pub(crate) fn accept(listener: TcpListener, acceptor: TlsAcceptor, server: ActorRef<NodeServerMessage>) {
    let room = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
    tokio::spawn(async move {
        loop {
            let (stream, peer_addr) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a cluster connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if server.get_status() != ractor::ActorStatus::Running {
                return;
            }
            let Ok(permit) = Arc::clone(&room).try_acquire_owned() else {
                tracing::warn!(peer = %peer_addr, "too many cluster handshakes under way; closing a connection");
                continue;
            };
            let (acceptor, server) = (acceptor.clone(), server.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let local_addr = stream.local_addr().unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
                let _ = stream.set_nodelay(true);
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let stream = Box::new(NetworkStream::TlsServer { peer_addr, local_addr, stream });
                        let _ = server.cast(NodeServerMessage::ConnectionOpened { stream, is_server: true });
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(peer = %peer_addr, error = %e, "a cluster TLS handshake failed")
                    }
                    Err(_) => {
                        tracing::warn!(peer = %peer_addr, "a cluster connection did not finish its TLS handshake in time; closed")
                    }
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_leave_from_the_address_a_node_listens_on_when_they_can() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let from = |listen: &str, target: &str| source_for(Some(ip(listen)), ip(target));
        assert_eq!(from("10.0.0.5", "10.0.0.6"), Some(ip("10.0.0.5")));
        assert_eq!(from("127.0.1.3", "127.0.1.1"), Some(ip("127.0.1.3")));
        // Any address: the system chooses.
        assert_eq!(from("0.0.0.0", "10.0.0.6"), None);
        assert_eq!(from("::", "fd00::6"), None);
        // A loopback address reaches no other machine; another family cannot be bound.
        assert_eq!(from("127.0.0.1", "10.0.0.6"), None);
        assert_eq!(from("10.0.0.5", "fd00::6"), None);
        assert_eq!(source_for(None, ip("10.0.0.6")), None);
    }
}
