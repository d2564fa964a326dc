//! TLS between nodes (`cluster.tls_cert`, `tls_key`, `tls_ca`): ractor_cluster's node
//! server accepts TLS connections with our acceptor, and every connection this node opens
//! goes through [`Dialer`]. Both sides prove themselves: a node accepts only peers whose
//! certificate chains to `tls_ca` (mutual TLS), and checks the certificate of the node it
//! dials against the address it dials (an IP address or DNS name among the certificate's
//! subject alternative names). The shared secret is still checked inside the TLS session.

use std::sync::Arc;

use ractor::ActorRef;
use ractor_cluster::{IncomingEncryptionMode, NodeServerMessage};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::ClusterError;
use crate::config::ClusterSettings;

/// How this node opens connections to others: plain TCP, or TLS with its certificate.
#[derive(Clone)]
pub(crate) enum Dialer {
    /// Plain TCP (the secret is still checked).
    Plain,
    /// TLS.
    Tls(TlsConnector),
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain => "Dialer::Plain",
            Self::Tls(_) => "Dialer::Tls",
        })
    }
}

impl Dialer {
    /// Opens a session with the node at `address` (`host:port`).
    pub(crate) async fn dial(
        &self,
        server: &ActorRef<NodeServerMessage>,
        address: &str,
    ) -> Result<(), String> {
        match self {
            Self::Plain => ractor_cluster::client_connect(server, address).await.map_err(|e| e.to_string()),
            Self::Tls(connector) => {
                let host = super::host_of(address).trim_start_matches('[').trim_end_matches(']');
                let name = ServerName::try_from(host.to_owned()).map_err(|e| format!("`{host}`: {e}"))?;
                ractor_cluster::client_connect_enc(server, address, connector.clone(), name)
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }
}

fn invalid(key: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Settings(format!("{key}: {e}"))
}

/// The node server's mode for incoming connections and this node's dialer, from the
/// settings: plain TCP when no certificate is configured.
pub(crate) fn load(
    settings: &ClusterSettings,
) -> Result<(Option<IncomingEncryptionMode>, Dialer), ClusterError> {
    if !settings.tls() {
        return Ok((None, Dialer::Plain));
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
    Ok((
        Some(IncomingEncryptionMode::Tls(TlsAcceptor::from(Arc::new(server)))),
        Dialer::Tls(TlsConnector::from(Arc::new(client))),
    ))
}
