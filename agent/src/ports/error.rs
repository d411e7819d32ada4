//! Why a port does not serve, each saying what to give or do instead.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// Why a port does not serve.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot read metrics_token {}: {source} (a file holding the token Prometheus sends)", .path.display())]
    ReadToken { path: PathBuf, source: io::Error },
    #[error("metrics_token {} is empty: write the token Prometheus sends into it", .path.display())]
    EmptyToken { path: PathBuf },
    #[error("not serving on {addr}: a non-loopback address would put the heap's structure, class and thread names on the network without TLS. Give tls_cert= and tls_key=, or serve on 127.0.0.1 and forward it (ssh -L), or pass insecure=true to serve it anyway (clients then need the token from {})", .run_dir.display())]
    NeedsTls { addr: SocketAddr, run_dir: PathBuf },
    #[error("not serving metrics on {bind}: off loopback they need metrics_token=FILE (the bearer token Prometheus sends), so that the heap's class names are not anyone's to read")]
    NeedsToken { bind: IpAddr },
    #[error("cannot listen on {addr}: {source} (another JVM with memcity on this port? pass port=0 for a free port, or port=N)")]
    Listen { addr: SocketAddr, source: io::Error },
    /// What the page's files or port answered (`memcity_page`).
    #[error("{0}")]
    Page(String),
    #[error("{0}; or give their folder with web=PATH")]
    NoPageFiles(String),
    /// Anything else the port needs from the system: what it was doing, and why it failed.
    #[error("cannot {doing}: {source}")]
    System {
        doing: &'static str,
        source: io::Error,
    },
    #[error("cannot serve TLS with tls_cert/tls_key: {0}")]
    Tls(tonic::transport::Error),
    #[error("server error: {0}")]
    Served(tonic::transport::Error),
    #[error("cannot write portfile {}: {source}", .path.display())]
    Portfile { path: PathBuf, source: io::Error },
}

impl From<String> for PortError {
    fn from(page: String) -> PortError {
        PortError::Page(page)
    }
}

impl PortError {
    pub(crate) fn system(doing: &'static str) -> impl FnOnce(io::Error) -> PortError {
        move |source| PortError::System { doing, source }
    }
}
