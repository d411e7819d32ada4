//! The page over TLS, for a bind other than loopback: a PEM certificate chain and key (`serve`'s
//! `--tls-cert`/`--tls-key`, the agent's `tls_cert`/`tls_key`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::conn::{ConnInfo, Guarded, Incoming};

/// A client that has not finished its handshake by then is dropped: it holds a slot.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(10);

/// Reads the certificate chain and key; errors say which file is wrong and how, naming them as
/// `cert_name` and `key_name` (the option that gave them).
pub fn acceptor(
    cert: &Path,
    key: &Path,
    cert_name: &str,
    key_name: &str,
) -> Result<TlsAcceptor, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| {
            format!(
                "{cert_name} {}: not a readable PEM certificate chain: {e}",
                cert.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "{cert_name} {}: holds no certificate",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "{key_name} {}: not a readable PEM private key: {e}",
            key.display()
        )
    })?;
    // The ring provider named, not the process default: no other crate can make it ambiguous.
    let config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("{cert_name} and {key_name} do not make a usable pair: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Connections that finished their TLS handshake, for `axum::serve`. Handshakes run apart from
/// the accepting, so one slow or silent client does not hold up the rest; the connections
/// handshaking count against the listener's limit as any other.
pub struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<Guarded<TcpStream>>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Must be called within the runtime.
    pub fn new(mut incoming: Incoming, acceptor: TlsAcceptor) -> Self {
        let local = incoming.local_addr();
        let (tx, ready) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            while let Some(conn) = incoming.next().await {
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let peer = conn.peer();
                    let handshake = tokio::time::timeout(HANDSHAKE_WITHIN, acceptor.accept(conn));
                    // A client that is no TLS client (or gives up) is simply dropped. Inside
                    // TLS the connection keeps the limits of its TCP stream (`conn::Patient`).
                    if let Ok(Ok(tls)) = handshake.await {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        TlsListener { ready, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<Guarded<TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task ends only with the runtime, and this with it.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for ConnInfo
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        stream.io().get_ref().0.info()
    }
}
