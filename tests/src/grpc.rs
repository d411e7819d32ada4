//! Talking to an agent's port directly: a subscription and the snapshots it brings, a port
//! nothing listens on, and certificates for TLS.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::CityModel;

/// A loopback port nothing listens on (bound, then released): for what a client does when no
/// agent answers.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A tokio runtime for tests that talk gRPC directly.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Subscribes to the agent at `port` as a well-behaved client.
pub async fn subscribe(port: &str) -> tonic::Streaming<memcity_proto::v1::StreamMessage> {
    let mut client = memcity_viewer::client::connect(Some(port), Duration::from_secs(10))
        .await
        .expect("connect to the agent");
    client
        .subscribe(memcity_proto::v1::SubscribeRequest {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            client: "e2e".into(),
        })
        .await
        .expect("subscribe")
        .into_inner()
}

/// Feeds `session` from `stream` until it holds snapshot `seq` (GC-driven snapshots may come
/// between requested ones); returns that snapshot's index in the session.
pub async fn read_until(
    stream: &mut tonic::Streaming<memcity_proto::v1::StreamMessage>,
    session: &mut CityModel,
    seq: u64,
    timeout: Duration,
) -> usize {
    let deadline = tokio::time::Instant::now() + timeout;
    while session.frames().last().is_none_or(|s| s.seq < seq) {
        let message = tokio::time::timeout_at(deadline, stream.message())
            .await
            .unwrap_or_else(|_| panic!("snapshot {seq} did not arrive within {timeout:?}"))
            .expect("stream error")
            .expect("stream ended");
        session.apply(&message).expect("valid stream");
    }
    session
        .frames()
        .iter()
        .position(|s| s.seq == seq)
        .expect("the requested snapshot itself")
}

/// A test CA and a certificate for 127.0.0.1 and localhost it signed, with its key (PEM files).
pub struct Certificates {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Makes [`Certificates`] in `dir` with openssl.
pub fn certificates(dir: &Path) -> Certificates {
    let path = |name: &str| dir.join(name);
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (scripts/setup.sh installs it)");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // A small CA, and the agent's certificate for 127.0.0.1 signed by it (rustls does not take
    // a self-signed certificate as its own CA).
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"],
            &ec[..],
            &[
                "-days",
                "1",
                "-subj",
                "/CN=memcity test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"],
            &ec[..],
            &[
                "-subj",
                "/CN=localhost",
                "-keyout",
                "key.pem",
                "-out",
                "agent.csr",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        path("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "agent.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        "-out",
        "cert.pem",
    ]);
    Certificates {
        ca: path("ca.pem"),
        cert: path("cert.pem"),
        key: path("key.pem"),
    }
}
