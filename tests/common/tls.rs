//! An HTTPS site with a self-signed certificate (generated per test): every request gets
//! the same small HTML page. Used to check certificate verification on and off.

use std::sync::Arc;
use std::thread::JoinHandle;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

/// A running HTTPS site.
pub struct TlsSite {
    /// `https://127.0.0.1:PORT/`
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TlsSite {
    /// Starts the site.
    pub fn start() -> Self {
        ferrocrawl::scrape::engine::http::install_crypto_provider();
        let generated =
            rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("certificate");
        let cert = generated.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der()));
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("https://{}/", std_listener.local_addr().expect("addr"));
        let (tx, mut rx) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => {
                            let Ok((tcp, _)) = accepted else { continue };
                            let acceptor = acceptor.clone();
                            tokio::spawn(async move {
                                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                                let mut buf = vec![0u8; 8192];
                                let _ = tls.read(&mut buf).await;
                                let body = "<html><body><p>Secret garden served over TLS.</p></body></html>";
                                let response = format!(
                                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                    body.len()
                                );
                                let _ = tls.write_all(response.as_bytes()).await;
                                let _ = tls.shutdown().await;
                            });
                        }
                    }
                }
            });
        });
        Self { url, stop: Some(tx), thread: Some(thread) }
    }
}

impl Drop for TlsSite {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
