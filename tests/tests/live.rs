//! The live path over real gRPC on loopback: `memcity record` against a running agent, a late
//! subscriber that still gets the session from its start, a subscriber that never reads, the
//! snapshot and classifier RPCs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memcity_city::model::Metric;
use memcity_e2e::*;
use memcity_proto::v1::{
    stream_message::Kind, SetClassifiersRequest, Snapshot, SnapshotRequest, StreamMessage,
    SubscribeRequest,
};
use memcity_proto::PROTOCOL_VERSION;
use memcity_viewer::client;

/// Starts `main` with the gRPC server on a free port; returns the app and its port.
fn start_live(
    jdk: &Jdk,
    main: &str,
    seconds: f64,
    extra: &str,
) -> (JavaApp, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let portfile: PathBuf = dir.path().join("port");
    let app = AppSpec::new(jdk, main, seconds)
        .agent(format!("port=0,portfile={}{extra}", portfile.display()))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    (app, port, dir)
}

/// Asks for a walk until the budget has earned one (even at `budget=100` a walk predicted at
/// a few hundred ms may wait a moment for its credit); returns its seq.
async fn walk_when_earned(rpc: &mut client::Client) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match rpc.request_snapshot(SnapshotRequest { force: false }).await {
            Ok(reply) => return reply.into_inner().seq,
            Err(status)
                if status.code() == tonic::Code::FailedPrecondition
                    && Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(status) => panic!("{status}"),
        }
    }
}

/// Reads until `n` snapshots arrived (or the timeout); returns all messages read.
async fn read_snapshots(
    stream: &mut tonic::Streaming<StreamMessage>,
    n: usize,
    timeout: Duration,
) -> Vec<StreamMessage> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut out = Vec::new();
    let mut seen = 0;
    while seen < n {
        let message = tokio::time::timeout_at(deadline, stream.message())
            .await
            .unwrap_or_else(|_| panic!("only {seen} of {n} snapshots within {timeout:?}"))
            .expect("stream error")
            .expect("stream ended");
        if matches!(message.kind, Some(Kind::Snapshot(_))) {
            seen += 1;
        }
        out.push(message);
    }
    out
}

fn snapshots(messages: &[StreamMessage]) -> Vec<&Snapshot> {
    messages
        .iter()
        .filter_map(|m| match &m.kind {
            Some(Kind::Snapshot(s)) => Some(s),
            _ => None,
        })
        .collect()
}

#[test]
fn record_cli_writes_n_live_snapshots_that_report_reads() {
    let jdk = jdk17();
    let (mut app, port, dir) = start_live(
        &jdk,
        "LinkedListLeak",
        60.0,
        ",min_interval=200ms,budget=50,period=300ms",
    );
    let file = dir.path().join("live.mcrec");
    let out = memcity(
        &[
            "record",
            &port,
            "-o",
            file.to_str().unwrap(),
            "--snapshots",
            "4",
        ],
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote 4 snapshots"));
    let session = load_recording(&file).unwrap();
    assert_eq!(session.len(), 4);
    assert_eq!(
        session.frames()[0].seq,
        0,
        "recording starts with the session's first snapshot"
    );
    assert_eq!(session.handshake.as_ref().unwrap().pid, app.pid());
    let report = report_json(&file);
    assert_eq!(report["snapshots"], 4);
    assert!(growth(&report, "LinkedListLeak$Person") > 0);
    app.kill();
}

#[test]
fn late_subscriber_gets_first_snapshot_then_live_ones() {
    let jdk = jdk17();
    let (mut app, port, _dir) = start_live(
        &jdk,
        "LinkedListLeak",
        60.0,
        ",min_interval=200ms,budget=50,period=300ms",
    );
    let rt = runtime();
    rt.block_on(async {
        // An early subscriber waits until the session has a few snapshots.
        let mut early = subscribe(&port).await;
        read_snapshots(&mut early, 3, Duration::from_secs(60)).await;
        // A late one gets the handshake, all names, the history from snapshot 0, then live.
        let mut late = subscribe(&port).await;
        let messages = read_snapshots(&mut late, 5, Duration::from_secs(60)).await;
        let hello = match &messages[0].kind {
            Some(Kind::Handshake(h)) => h,
            other => panic!("first message is not the handshake: {other:?}"),
        };
        assert_eq!(hello.protocol_version, PROTOCOL_VERSION);
        assert_eq!(hello.pid, app.pid());
        assert!(hello.jvm_version.starts_with("17"));
        assert_eq!(hello.classifiers, ["package", "type"]);
        assert!(matches!(messages[1].kind, Some(Kind::Strings(_))));
        let seqs: Vec<u64> = snapshots(&messages).iter().map(|s| s.seq).collect();
        assert_eq!(
            seqs,
            (0..5).collect::<Vec<_>>(),
            "history then live, in order, no gap"
        );
        assert_eq!(
            snapshots(&messages)[0].trigger,
            memcity_proto::v1::snapshot::Trigger::Start as i32
        );
    });
    app.kill();
}

#[test]
fn a_client_that_never_reads_does_not_slow_the_jvm() {
    let jdk = jdk17();
    // 30 s: the 61 walks take 5-10 s here, more on a loaded machine, and the app must still be
    // running when the last is asked for.
    let (mut app, port, _dir) = start_live(
        &jdk,
        "SteadyState",
        30.0,
        ",budget=100,min_interval=10ms,period=off",
    );
    let rt = runtime();
    rt.block_on(async {
        // Subscribes, then never reads. A small HTTP/2 window (hyper's default is 2 MB) makes
        // flow control stop the server's writes to it after a few snapshots.
        let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .initial_stream_window_size(Some(16 * 1024))
            .initial_connection_window_size(Some(16 * 1024))
            .connect()
            .await
            .unwrap();
        // The agent's token, as a local client finds it.
        let token: tonic::metadata::MetadataValue<_> =
            memcity_proto::registry::token_for_port(port.parse().unwrap())
                .expect("the agent registered its token")
                .parse()
                .unwrap();
        let _stuck = memcity_proto::v1::mem_city_client::MemCityClient::with_interceptor(
            channel,
            move |mut request: tonic::Request<()>| {
                request
                    .metadata_mut()
                    .insert(memcity_proto::registry::TOKEN_HEADER, token.clone());
                Ok(request)
            },
        )
        .subscribe(SubscribeRequest {
            protocol_version: PROTOCOL_VERSION,
            client: "stuck".into(),
        })
        .await
        .unwrap()
        .into_inner();
        let mut reader = subscribe(&port).await;
        let mut rpc = client::connect(Some(&port), Duration::from_secs(10))
            .await
            .unwrap();
        // Far more snapshots than the stuck client's queue and windows hold.
        let start = Instant::now();
        let mut last_seq = 0;
        for _ in 0..60 {
            last_seq = walk_when_earned(&mut rpc).await;
            // The reading client keeps up.
            read_snapshots(&mut reader, 1, Duration::from_secs(30)).await;
        }
        assert!(last_seq >= 60);
        // The agent counted the stuck client's losses and says so in later snapshots.
        let seq = walk_when_earned(&mut rpc).await;
        let mut session = CityModel::new();
        let index = read_until(&mut reader, &mut session, seq, Duration::from_secs(30)).await;
        let last = &session.frames()[index];
        let dropped = last.cost.unwrap().dropped_snapshots;
        assert!(dropped > 0, "dropped snapshots were not counted");
        eprintln!(
            "60 snapshots with a stuck client in {:?}; {dropped} dropped for it",
            start.elapsed()
        );
    });
    // The app finishes its fixed run on time: nothing blocked it.
    let (status, stdout) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "{}", app.stderr());
    assert!(stdout.last().unwrap().starts_with("DONE"));
}

#[test]
fn classifier_chain_changes_while_running_and_sites_are_estimated() {
    let jdk = jdk17();
    // A budget that earns a walk every few hundred ms: the test asks for one that often.
    let (mut app, port, _dir) = start_live(
        &jdk,
        "LinkedListLeak",
        60.0,
        ",sampling=4k,budget=50,min_interval=100ms",
    );
    let rt = runtime();
    rt.block_on(async {
        let mut rpc = client::connect(Some(&port), Duration::from_secs(10))
            .await
            .unwrap();
        let bad = rpc
            .set_classifiers(SetClassifiersRequest {
                classifiers: vec!["type".into(), "colour".into()],
            })
            .await
            .unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        assert!(bad.message().contains("valid: package, type, site, thread"));
        let reply = rpc
            .set_classifiers(SetClassifiersRequest {
                classifiers: vec!["type".into(), "site".into(), "thread".into()],
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(reply.classifiers, ["type", "site", "thread"]);
        let mut stream = subscribe(&port).await;
        let mut session = CityModel::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        // Ask until the leak is large enough that sampling at 4 KiB has certainly seen Persons.
        let seq = loop {
            let seq = match rpc.request_snapshot(SnapshotRequest { force: false }).await {
                Ok(reply) => reply.into_inner().seq,
                // Not yet earned: ask again shortly.
                Err(status) if status.code() == tonic::Code::FailedPrecondition => {
                    assert!(Instant::now() < deadline, "no walk earned: {status}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                Err(status) => panic!("{status}"),
            };
            let index = read_until(&mut stream, &mut session, seq, Duration::from_secs(60)).await;
            let persons: u64 = session
                .leaves(index)
                .iter()
                .filter(|l| l.path[0] == "LinkedListLeak$Person")
                .map(|l| l.objects)
                .sum();
            if persons > 20_000 {
                break seq;
            }
            assert!(Instant::now() < deadline, "the leak did not grow");
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        let snapshot = session.frames().iter().find(|s| s.seq == seq).unwrap();
        assert_eq!(snapshot.classifiers, ["type", "site", "thread"]);
        assert!(snapshot.exactness.unwrap().sites_estimated);
        let index = session.frames().iter().position(|s| s.seq == seq).unwrap();
        let leaves = session.leaves(index);
        let person: Vec<_> = leaves
            .iter()
            .filter(|l| l.path[0] == "LinkedListLeak$Person")
            .collect();
        assert!(
            person.iter().any(|l| l.path[1]
                .starts_with("LinkedListLeak.main(LinkedListLeak.java:")
                && l.path[2] == "main"),
            "Person objects are attributed to their allocation site and thread: {person:?}"
        );
        // The estimate splits the exact type total of the walk: the leaves add up to it.
        let person_node = session.find(&["LinkedListLeak$Person"]).unwrap();
        assert!(session.frames()[index].estimate(person_node).is_none());
        let sum: u64 = person.iter().map(|l| l.objects).sum();
        assert_eq!(sum, session.value(person_node, index, Metric::Objects));
    });
    app.kill();
}

#[test]
fn record_reports_an_agent_that_disappears_mid_stream() {
    let jdk = jdk17();
    let (mut app, port, dir) = start_live(
        &jdk,
        "LinkedListLeak",
        60.0,
        ",min_interval=200ms,budget=50,period=300ms",
    );
    let file = dir.path().join("cut.mcrec");
    let mut recorder = std::process::Command::new(memcity_bin())
        .args(["record", &port, "-o", file.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once two snapshots are on disk, kill the JVM under the recorder.
    let deadline = Instant::now() + Duration::from_secs(60);
    while load_recording(&file).map(|s| s.len()).unwrap_or(0) < 2 {
        assert!(Instant::now() < deadline, "recorder wrote no snapshots");
        std::thread::sleep(Duration::from_millis(50));
    }
    app.kill();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = recorder.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = recorder.kill();
            panic!("memcity record did not notice the agent went away");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(recorder.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("the agent went away"), "{stderr}");
    let session = load_recording(&file).unwrap();
    assert!(session.len() >= 2);
    assert!(
        session.warnings.is_empty(),
        "the recorder finished the file cleanly"
    );
}

#[test]
fn record_without_an_agent_says_what_to_check() {
    ensure_built();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = memcity(
        &[
            "record",
            &port.to_string(),
            "-o",
            "/tmp/never.mcrec",
            "--wait",
            "0.5",
        ],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot connect to a memcity agent"), "{err}");
    assert!(err.contains("-agentpath"), "{err}");
}
