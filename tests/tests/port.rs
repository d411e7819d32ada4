//! The agent's port under abuse, on a real JVM over real loopback gRPC: connections are capped
//! and silent ones closed, viewers are capped, a flood of requests is answered instead of queued
//! forever, and forced walks are rate-limited. After each, a well-behaved client is still served.

use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use memcity_e2e::*;
use memcity_proto::v1::SnapshotRequest;
use memcity_viewer::client;

/// The agent's limits (agent/src/ports/server.rs), restated: the tests check the JVM holds to them.
const MAX_CONNECTIONS: usize = 64;
const MAX_SUBSCRIBERS: usize = 16;

fn start(jdk: &Jdk, seconds: f64) -> (JavaApp, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let portfile: PathBuf = dir.path().join("port");
    let app = AppSpec::new(jdk, "QuietHeap", seconds)
        .agent(format!("port=0,portfile={}", portfile.display()))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    (app, port, dir)
}

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Polls `check` every 100 ms until it holds or `timeout` passes; returns whether it held.
fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A well-behaved client still gets the handshake and a snapshot.
fn still_served(port: &str) {
    let rt = runtime();
    rt.block_on(async {
        let mut stream = subscribe(port).await;
        let first = tokio::time::timeout(Duration::from_secs(20), stream.message())
            .await
            .expect("the agent answers a new viewer")
            .expect("stream")
            .expect("a message");
        assert!(first.kind.is_some());
    });
}

#[test]
fn connections_are_capped_and_silent_ones_closed() {
    let jdk = jdk17();
    let (mut app, port, _dir) = start(&jdk, 90.0);
    let pid = app.pid();
    let baseline = descriptors(pid);
    let addr = format!("127.0.0.1:{port}");
    // 200 clients that connect and say nothing.
    let held: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    assert!(held.len() >= MAX_CONNECTIONS, "{} connected", held.len());
    // Give the server a moment to accept (and refuse) them all: the count settles at the cap.
    let mut peak = 0;
    eventually(Duration::from_secs(5), || {
        peak = peak.max(descriptors(pid));
        false
    });
    assert!(
        peak <= baseline + MAX_CONNECTIONS + 8,
        "the JVM went from {baseline} to {peak} descriptors for 200 silent connections"
    );
    // Silent for 10 s: closed, and the descriptors go back.
    assert!(
        eventually(Duration::from_secs(30), || descriptors(pid) <= baseline + 8),
        "silent connections still open: {} descriptors against {baseline}",
        descriptors(pid)
    );
    drop(held);
    still_served(&port);
    app.kill();
}

#[test]
fn viewers_are_capped_and_a_request_flood_is_answered() {
    let jdk = jdk17();
    let (mut app, port, _dir) = start(&jdk, 90.0);
    let rt = runtime();
    rt.block_on(async {
        // As many viewers as allowed, then one more: refused with a reason.
        let mut streams = Vec::new();
        for _ in 0..MAX_SUBSCRIBERS {
            streams.push(subscribe(&port).await);
        }
        let mut extra = client::connect(Some(&port), Duration::from_secs(10))
            .await
            .unwrap();
        let refused = extra
            .subscribe(memcity_proto::v1::SubscribeRequest {
                protocol_version: memcity_proto::PROTOCOL_VERSION,
                client: "one too many".into(),
            })
            .await
            .expect_err("past the viewer cap");
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().contains("at most 16 viewers"),
            "{refused}"
        );
        // A viewer that leaves frees its place.
        streams.pop();
        let mut again = false;
        for _ in 0..50 {
            if extra
                .subscribe(memcity_proto::v1::SubscribeRequest {
                    protocol_version: memcity_proto::PROTOCOL_VERSION,
                    client: "after one left".into(),
                })
                .await
                .is_ok()
            {
                again = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(again, "a freed place was not given to the next viewer");
        drop(streams);

        // 100 snapshot requests at once: each is answered (a walk, "not yet earned", or "busy,
        // retry"), none waits forever.
        let mut calls = Vec::new();
        for _ in 0..100 {
            let mut rpc = extra.clone();
            calls.push(tokio::spawn(async move {
                rpc.request_snapshot(SnapshotRequest { force: false }).await
            }));
        }
        let started = Instant::now();
        for call in calls {
            match tokio::time::timeout(Duration::from_secs(60), call)
                .await
                .expect("every request is answered within a minute")
                .unwrap()
            {
                Ok(_) => {}
                Err(status) => assert!(
                    matches!(
                        status.code(),
                        tonic::Code::FailedPrecondition | tonic::Code::ResourceExhausted
                    ),
                    "{status}"
                ),
            }
        }
        eprintln!("100 requests answered in {:?}", started.elapsed());
    });
    still_served(&port);
    app.kill();
}

#[test]
fn forced_walks_are_rate_limited() {
    let jdk = jdk17();
    let (mut app, port, _dir) = start(&jdk, 90.0);
    let first = memcity(&["snapshot", "--force", &port], Duration::from_secs(60));
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = memcity(&["snapshot", "--force", &port], Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("forced walks are limited to one every 10 s")
            && stderr.contains("retry in"),
        "{stderr}"
    );
    app.kill();
}

/// Every request needs the agent's token: none or a wrong one is refused with a reason; the
/// registration a local client finds it in is private to the user and goes with the JVM.
#[test]
fn requests_need_the_token_and_local_clients_find_it() {
    use std::os::unix::fs::PermissionsExt;
    let jdk = jdk17();
    let (mut app, port, _dir) = start(&jdk, 90.0);
    let registration = memcity_proto::registry::run_dir().join(app.pid().to_string());
    let text = std::fs::read_to_string(&registration).unwrap();
    assert!(text.contains(&format!("port={port}")), "{text}");
    let mode = std::fs::metadata(&registration)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "the token file is the user's alone");
    let dir_mode = std::fs::metadata(memcity_proto::registry::run_dir())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);

    let rt = runtime();
    rt.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let request = || memcity_proto::v1::SubscribeRequest {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            client: "no token".into(),
        };
        let refused = memcity_proto::v1::mem_city_client::MemCityClient::new(channel.clone())
            .subscribe(request())
            .await
            .expect_err("no token");
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert!(refused.message().contains("needs its token"), "{refused}");
        let wrong: tonic::metadata::MetadataValue<_> =
            "0123456789abcdef0123456789abcdef".parse().unwrap();
        let refused = memcity_proto::v1::mem_city_client::MemCityClient::with_interceptor(
            channel,
            move |mut r: tonic::Request<()>| {
                r.metadata_mut()
                    .insert(memcity_proto::registry::TOKEN_HEADER, wrong.clone());
                Ok(r)
            },
        )
        .request_snapshot(SnapshotRequest { force: true })
        .await
        .expect_err("wrong token");
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert!(refused.message().contains("wrong token"), "{refused}");
    });
    // The CLI finds the token by itself; given a wrong one, it is refused.
    still_served(&port);
    let out = memcity(
        &["--token", "feed", "snapshot", &port],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("wrong token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    app.kill();
}

/// A non-loopback bind is not served without TLS unless asked (`insecure=true`), and then
/// with a loud warning; the token is still needed.
#[test]
fn a_network_bind_is_refused_without_tls_unless_insecure() {
    let jdk = jdk17();
    let mut app = AppSpec::new(&jdk, "SteadyState", 2.0)
        .agent("port=0,bind=0.0.0.0")
        .spawn();
    let (status, _) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "the application runs on");
    let stderr = app.stderr();
    assert!(
        stderr.contains("not serving on 0.0.0.0") && stderr.contains("insecure=true"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let mut app = AppSpec::new(&jdk, "QuietHeap", 90.0)
        .agent(format!(
            "port=0,bind=0.0.0.0,insecure=true,portfile={}",
            portfile.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    assert!(
        eventually(Duration::from_secs(10), || app
            .stderr()
            .contains("SERVING WITHOUT TLS")),
        "{}",
        app.stderr()
    );
    still_served(&port);
    app.kill();
}

/// With a certificate and key, the agent serves TLS, on a network bind too; `memcity` checks it
/// against `--ca` on an `https://` address; a plain client gets nowhere.
#[test]
fn tls_serves_a_network_bind_to_clients_that_check_the_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let Certificates {
        ca: ca_file,
        cert,
        key,
    } = certificates(dir.path());

    let jdk = jdk17();
    let portfile = dir.path().join("port");
    let mut app = AppSpec::new(&jdk, "QuietHeap", 90.0)
        .agent(format!(
            "port=0,bind=0.0.0.0,tls_cert={},tls_key={},portfile={}",
            cert.display(),
            key.display(),
            portfile.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    assert!(!app.stderr().contains("not serving"), "{}", app.stderr());

    let ca = ca_file.to_str().unwrap();
    let https = format!("https://127.0.0.1:{port}");
    let out = memcity(
        &["--ca", ca, "snapshot", "--force", &https],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the certificate to check against: told what to give.
    let out = memcity(&["snapshot", &https], Duration::from_secs(30));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--ca"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A plain-text client cannot talk to it.
    let out = memcity(&["snapshot", &port], Duration::from_secs(30));
    assert!(!out.status.success());
    app.kill();
}

/// A viewer of a newer protocol is refused with both ends' versions and what to upgrade; the
/// port serves on.
#[test]
fn a_viewer_of_another_protocol_is_told_which_end_to_upgrade() {
    let jdk = jdk17();
    let (mut app, port, _dir) = start(&jdk, 120.0);
    let rt = runtime();
    let refused = rt.block_on(async {
        let mut client = client::connect(Some(&port), Duration::from_secs(10))
            .await
            .expect("connect");
        client
            .subscribe(memcity_proto::v1::SubscribeRequest {
                protocol_version: memcity_proto::PROTOCOL_VERSION + 1,
                client: "memcity-record 9.0.0".into(),
            })
            .await
            .expect_err("a newer protocol is refused")
    });
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        refused.message(),
        format!(
            "this agent is memcity {} (protocol {}); the viewer (memcity-record 9.0.0) speaks protocol {}: upgrade the agent (libmemcity.so) to the viewer's version, or connect with memcity {}",
            env!("CARGO_PKG_VERSION"),
            memcity_proto::PROTOCOL_VERSION,
            memcity_proto::PROTOCOL_VERSION + 1,
            env!("CARGO_PKG_VERSION")
        )
    );
    still_served(&port);
    app.kill();
}
