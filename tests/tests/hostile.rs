//! memcity under a hostile local user (issue 29), with real processes of two real users: root's
//! `memcity attach` cannot be made to hand a file of root's to the JVM's user or to overwrite
//! one; the agent's files are never written through a planted link or into a planted file; a
//! squatted run directory does not stop the agent from serving; strangers cannot hold the
//! ports; and a healthy session leaves the application's stderr nearly alone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use memcity_e2e::*;

const CLI: Duration = Duration::from_secs(60);
/// The agent's limit (page/src/conn.rs), restated.
const MAX_CONNECTIONS: usize = 64;

/// The unprivileged local user the attacks come from (`memcity-probe`, made once with
/// `useradd`): a user of its own, so that nothing else on the machine runs as it.
fn probe_user() -> (u32, u32) {
    let id = |flag: &str| {
        Command::new("id")
            .args([flag, "memcity-probe"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
    };
    if id("-u").is_none() {
        let made = Command::new("useradd")
            .args([
                "--system",
                "--user-group",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "memcity-probe",
            ])
            .status()
            .expect("useradd");
        // Another test may have made it meanwhile.
        assert!(
            made.success() || id("-u").is_some(),
            "useradd memcity-probe"
        );
    }
    (id("-u").unwrap(), id("-g").unwrap())
}

/// A command prefix that runs the rest as `uid:gid`, with no other group.
fn as_user(uid: u32, gid: u32) -> Vec<String> {
    vec![
        "setpriv".into(),
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
    ]
}

/// Runs `command` as `uid:gid`; it must succeed.
fn run_as(uid: u32, gid: u32, command: &[&str]) {
    let prefix = as_user(uid, gid);
    let status = Command::new(&prefix[0])
        .args(&prefix[1..])
        .args(command)
        .status()
        .expect("setpriv");
    assert!(status.success(), "as {uid}: {command:?}");
}

/// A file only root may read, in a folder only root may enter: what the attacks aim at.
struct Victim {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

const SECRET: &str = "root's secret";

impl Victim {
    fn new() -> Victim {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, SECRET).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Victim { _dir: dir, path }
    }

    /// Still root's, still 0600, still the same bytes.
    fn untouched(&self, after: &str) {
        let meta = std::fs::symlink_metadata(&self.path).unwrap();
        assert!(meta.is_file(), "{after}: the victim is no longer a file");
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o777),
            (0, 0, 0o600),
            "{after}: the victim's owner or mode changed"
        );
        assert_eq!(
            std::fs::read_to_string(&self.path).unwrap(),
            SECRET,
            "{after}: the victim was overwritten"
        );
    }
}

fn needs_root(what: &str) -> bool {
    if is_root() {
        return true;
    }
    skip(
        "root",
        &format!("{what}: attaching to another user's JVM needs root"),
    );
    false
}

fn cli(args: &[&str]) -> (bool, String) {
    let out = memcity(args, CLI);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn record_and_detach(pid: u32) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.mcrec");
    let (ok, err) = cli(&[
        "record",
        "--pid",
        &pid.to_string(),
        "-o",
        file.to_str().unwrap(),
        "--snapshots",
        "1",
    ]);
    assert!(ok, "record --pid: {err}");
    let (ok, err) = cli(&["detach", &pid.to_string()]);
    assert!(ok, "detach: {err}");
}

/// Attack 1: probe plants a link to a root-only file where root's attach creates its trigger
/// (the JVM's working directory, probe's own). The trigger is made as probe, never through the
/// link: the file stays root's, the attach goes through /tmp, and nothing is left there.
#[test]
fn a_planted_trigger_link_does_not_hand_a_root_file_to_the_jvm_user() {
    if !needs_root("the trigger link") {
        return;
    }
    let (uid, gid) = probe_user();
    let victim = Victim::new();
    let classes = public_classes();
    let home = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(home.path(), Some(uid), Some(gid)).unwrap();
    let prefix = as_user(uid, gid);
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let app = Wrapped::spawn_in(&prefix, classes.path(), 40, home.path());
    let pid = app.child.id();
    let link = home.path().join(format!(".attach_pid{pid}"));
    run_as(
        uid,
        gid,
        &[
            "ln",
            "-s",
            victim.path.to_str().unwrap(),
            link.to_str().unwrap(),
        ],
    );
    let (ok, err) = cli(&["attach", &pid.to_string(), "port=0"]);
    assert!(ok, "{err}\nJVM: {}", app.stderr());
    victim.untouched("after the attach");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "probe's link was replaced, not refused"
    );
    assert!(!Path::new(&format!("/tmp/.attach_pid{pid}")).exists());
    record_and_detach(pid);
    victim.untouched("after the detach");
}

/// A file of another user at the JVM's socket name (a socket left by a killed JVM that had this
/// pid, or one put there to block attaching): the JVM cannot rename its socket over it in the
/// sticky /tmp. Its own user's memcity says what to remove, at once and with no signal sent;
/// root's removes it and attaches.
#[test]
fn a_file_of_another_user_at_the_socket_name_is_named_or_cleared() {
    if !needs_root("a root file at the socket name") {
        return;
    }
    let (uid, gid) = probe_user();
    let classes = public_classes();
    let prefix = as_user(uid, gid);
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let app = Wrapped::spawn(&prefix, classes.path(), 40);
    let pid = app.child.id();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let _ = std::fs::remove_file(&socket);
    // A socket of root's, as a root JVM killed with this pid would have left.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());

    let out = Command::new(prefix[0])
        .args(&prefix[1..])
        .arg(memcity_bin())
        .args(["attach", &pid.to_string(), "port=0"])
        .output()
        .expect("setpriv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("/tmp/.java_pid{pid} belongs to uid 0"))
            && err.contains(&format!("sudo rm /tmp/.java_pid{pid}")),
        "{err}\nJVM: {}",
        app.stderr()
    );
    assert!(
        !Path::new(&format!("/tmp/.attach_pid{pid}")).exists(),
        "no trigger was made"
    );

    let (ok, err) = cli(&["attach", &pid.to_string(), "port=0"]);
    assert!(ok, "{err}\nJVM: {}", app.stderr());
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert_eq!(meta.uid(), uid, "the JVM's own socket is in place");
    record_and_detach(pid);
    assert!(
        !app.stderr().contains("Full thread dump"),
        "a signal reached the JVM without its trigger: {}",
        app.stderr()
    );
}

/// Attack 2: probe prepares the folder where root stages a library probe's JVM cannot read,
/// with a link at the staged copy's name (predictable: the library's CRC) and links at the
/// temporary names older memcity used. The copy is written as probe, beside the links and
/// renamed over them: the root file is untouched, and the JVM loads the real library. A
/// folder open to others is refused with a message.
#[test]
fn a_prepared_staging_folder_cannot_overwrite_a_root_file() {
    if !needs_root("the staging folder") {
        return;
    }
    let (uid, gid) = probe_user();
    let victim = Victim::new();
    let classes = public_classes();
    let prefix = as_user(uid, gid);
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let app = Wrapped::spawn(&prefix, classes.path(), 40);
    let pid = app.child.id();
    // The library where probe cannot read it.
    let private = tempfile::tempdir().unwrap();
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let lib = private.path().join("libmemcity.so");
    std::fs::copy(release_agent_path(), &lib).unwrap();
    let name = format!(
        "libmemcity-{:08x}.so",
        crc32fast::hash(&std::fs::read(&lib).unwrap())
    );
    let staging = PathBuf::from(format!("/tmp/.memcity-{uid}"));
    let _ = std::fs::remove_dir_all(&staging);
    let attach = || {
        let out = memcity(
            &[
                "attach",
                &pid.to_string(),
                "port=0",
                "--lib",
                lib.to_str().unwrap(),
            ],
            CLI,
        );
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // A folder others may write: refused, nothing written.
    run_as(uid, gid, &["mkdir", "-m", "777", staging.to_str().unwrap()]);
    run_as(uid, gid, &["chmod", "777", staging.to_str().unwrap()]);
    let (ok, err) = attach();
    assert!(!ok, "attached through a folder open to all");
    assert!(
        err.contains("open to others") && err.contains("remove it"),
        "{err}\nJVM: {}",
        app.stderr()
    );
    assert!(std::fs::read_dir(&staging).unwrap().next().is_none());

    // A private folder of probe's, with links at every name probe could guess.
    run_as(uid, gid, &["chmod", "700", staging.to_str().unwrap()]);
    let target = victim.path.to_str().unwrap();
    let staged = staging.join(&name);
    run_as(uid, gid, &["ln", "-s", target, staged.to_str().unwrap()]);
    let me = std::process::id();
    let mut script = String::new();
    for next in me..me + 400 {
        script.push_str(&format!(
            "ln -s {target} {}/.{name}.{next}\n",
            staging.display()
        ));
    }
    run_as(uid, gid, &["sh", "-c", &script]);
    let (ok, err) = attach();
    assert!(ok, "{err}\nJVM: {}", app.stderr());
    victim.untouched("after the attach");
    let meta = std::fs::symlink_metadata(&staged).unwrap();
    assert!(
        meta.is_file(),
        "the staged copy is a file, not probe's link"
    );
    assert_eq!(meta.uid(), uid, "the staged copy is probe's, made as probe");
    assert_eq!(
        std::fs::read(&staged).unwrap(),
        std::fs::read(&lib).unwrap(),
        "the staged copy is the library"
    );
    assert!(
        memcity_viewer::attach::loaded_libraries(pid)
            .iter()
            .any(|l| Path::new(l) == staged),
        "the JVM loaded another library"
    );
    record_and_detach(pid);
    victim.untouched("after the detach");
    let _ = std::fs::remove_dir_all(&staging);
}

/// Attack 4: the agent's port file, recording and registration in folders others write. A
/// link planted at the port file's name (and at the temporary name older agents used) is
/// replaced, not written through; a recording file someone made open to all, and holds open
/// to read, is replaced by a private one that reader never sees; a run directory someone
/// else made gives way to a private folder of the agent's, which `memcity list` and `--pid`
/// find.
#[test]
fn agent_files_are_private_and_never_written_through_links() {
    let me = memcity_proto::files::effective_uid();
    // The planter: probe where this is root, this user otherwise (the links are as real).
    let (uid, gid) = if is_root() { probe_user() } else { (me, me) };
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    // A shared folder such as /tmp: anyone writes, the sticky bit keeps each one's files.
    let shared = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let portfile = shared.path().join("port");
    let recording = shared.path().join("app.mcrec");
    let plant = |command: &[&str]| {
        if is_root() {
            run_as(uid, gid, command)
        } else {
            assert!(Command::new(command[0])
                .args(&command[1..])
                .status()
                .unwrap()
                .success());
        }
    };
    let victim_s = victim.to_str().unwrap();
    plant(&["ln", "-s", victim_s, portfile.to_str().unwrap()]);
    plant(&[
        "ln",
        "-s",
        victim_s,
        shared.path().join("port.tmp-memcity").to_str().unwrap(),
    ]);
    plant(&["touch", recording.to_str().unwrap()]);
    plant(&["chmod", "666", recording.to_str().unwrap()]);
    let planted_recording = std::fs::File::open(&recording).unwrap();
    // The JVM's temporary folder, its run directory's name taken by a folder open to all.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let squat = tmp.path().join(format!("memcity-{me}"));
    plant(&["mkdir", "-m", "777", squat.to_str().unwrap()]);
    plant(&["chmod", "777", squat.to_str().unwrap()]);

    let jdk = jdk17();
    let mut spec = AppSpec::new(&jdk, "LinkedListLeak", 30.0).agent(format!(
        "port=0,portfile={},record={}",
        portfile.display(),
        recording.display()
    ));
    spec.env
        .push(("TMPDIR".into(), tmp.path().display().to_string()));
    let mut app = spec.spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    // The planted link reads as the victim's text until the agent replaces it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::symlink_metadata(&portfile)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        assert!(Instant::now() < deadline, "no port file: {}", app.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let port = std::fs::read_to_string(&portfile)
        .unwrap()
        .trim()
        .to_string();
    assert!(port.parse::<u16>().is_ok(), "{port:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let private = |path: &Path| {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert!(meta.is_file(), "{} is not a file", path.display());
        assert_eq!(meta.uid(), me, "{}", path.display());
        assert_eq!(meta.mode() & 0o777, 0o600, "{}", path.display());
    };
    private(&portfile);
    private(&recording);
    // The planted recording file was replaced: its reader sees nothing of the session.
    assert_ne!(
        planted_recording.metadata().unwrap().ino(),
        std::fs::metadata(&recording).unwrap().ino()
    );
    // The squatted folder is left alone; the agent registered in one of its own.
    assert!(std::fs::read_dir(&squat).unwrap().next().is_none());
    let own: Vec<PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("memcity-{me}."))
        })
        .collect();
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(std::fs::metadata(&own[0]).unwrap().mode() & 0o777, 0o700);
    private(&own[0].join(app.pid().to_string()));
    assert!(
        app.stderr().contains("memcity list finds it there"),
        "{}",
        app.stderr()
    );
    // `memcity list` (with the same temporary folder) and `--pid` find it.
    let list = Command::new(memcity_bin())
        .arg("list")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.trim_start().starts_with(&app.pid().to_string())
                && l.contains(&format!("listening on {port}"))),
        "{listed}"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let (ok, err) = cli(&[
        "record",
        "--pid",
        &app.pid().to_string(),
        "-o",
        out_dir.path().join("by-pid.mcrec").to_str().unwrap(),
        "--snapshots",
        "1",
    ]);
    assert!(ok, "{err}");
    app.kill();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}

/// One stranger's connection of each kind, to the ports of one agent.
#[allow(dead_code, reason = "held open for the test's length, never read")]
enum Stranger {
    /// Connects and says nothing.
    Silent(TcpStream),
    /// An HTTP/1.1 client kept alive after its request was refused (401).
    KeptAlive(TcpStream),
    /// An HTTP/2 (gRPC) client without the token: its call refused, it stays and answers
    /// the server's pings.
    Pinging(tonic::transport::Channel),
}

fn kept_alive(port: u16, path: &str) -> Option<Stranger> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes())
        .ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).ok()?;
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(
        head.starts_with("HTTP/1.1 401") || head.starts_with("HTTP/1.1 403"),
        "{head}"
    );
    Some(Stranger::KeptAlive(stream))
}

/// `GET path` with the bearer token over a fresh connection; the status line and body.
fn get_with_token(port: u16, path: &str, token: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
}

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Attack 3: strangers hold every port with connections that are not silent (HTTP/2 clients
/// answering pings, HTTP/1.1 clients kept alive after a refusal), then fill every slot with
/// silent ones; a client with the token still gets a snapshot, a scrape and the page. Then,
/// with the strangers still holding their ends, the agent closes them all.
#[test]
fn strangers_cannot_hold_the_ports() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let token_file = dir.path().join("metrics-token");
    std::fs::write(&token_file, "metrics-secret\n").unwrap();
    let mut app = AppSpec::new(&jdk, "QuietHeap", 120.0)
        .agent(format!(
            "port=0,portfile={},http=0,metrics=0,metrics_token={}",
            portfile.display(),
            token_file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let port: u16 = wait_for_file(&portfile, Duration::from_secs(30))
        .trim()
        .parse()
        .unwrap();
    let pid = app.pid();
    let registration = memcity_proto::registry::find(
        &std::env::temp_dir(),
        memcity_proto::files::effective_uid(),
        pid,
    )
    .expect("the agent registered");
    let port_of = |url: &Option<String>| -> Option<u16> {
        url.as_ref()?
            .split("127.0.0.1:")
            .nth(1)?
            .split('/')
            .next()?
            .parse()
            .ok()
    };
    let metrics = port_of(&registration.metrics).expect("metrics served");
    let page = port_of(&registration.page);
    if page.is_none() {
        skip(
            "web",
            "the agent's page is not built: its port is not tried",
        );
    }
    let baseline = descriptors(pid);

    let rt = runtime();
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS + 6 {
        held.extend(kept_alive(metrics, "/metrics"));
        if let Some(page) = page {
            held.extend(kept_alive(page, "/"));
        }
        let channel = rt.block_on(async {
            let channel =
                tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
                    .unwrap()
                    .http2_keep_alive_interval(Duration::from_secs(1))
                    .keep_alive_while_idle(true)
                    .connect()
                    .await
                    .ok()?;
            let refused = memcity_proto::v1::mem_city_client::MemCityClient::new(channel.clone())
                .request_snapshot(memcity_proto::v1::SnapshotRequest { force: false })
                .await
                .expect_err("no token");
            // A port without room drops the connection instead (no longer a stranger held).
            (refused.code() == tonic::Code::Unauthenticated).then_some(channel)
        });
        held.extend(channel.map(Stranger::Pinging));
    }
    // Then, at once, more than every slot of every port: the ports are full of strangers
    // (none of them yet closed for its time) when the client with the token comes.
    for target in [Some(port), Some(metrics), page].into_iter().flatten() {
        for _ in 0..MAX_CONNECTIONS + 16 {
            held.extend(
                TcpStream::connect(("127.0.0.1", target))
                    .ok()
                    .map(Stranger::Silent),
            );
        }
    }
    // The client with the token: a snapshot by the CLI, a scrape, the page.
    let out = dir.path().join("a.mcrec");
    let (ok, err) = cli(&[
        "record",
        &format!("127.0.0.1:{port}"),
        "-o",
        out.to_str().unwrap(),
        "--snapshots",
        "1",
    ]);
    assert!(ok, "record during the flood: {err}");
    let scrape = get_with_token(metrics, "/metrics", "metrics-secret");
    assert!(
        scrape.starts_with("HTTP/1.1 200") && scrape.contains("memcity_heap_live_objects"),
        "{}",
        &scrape[..scrape.len().min(300)]
    );
    if let Some(page) = page {
        let index = get_with_token(page, "/", &registration.token);
        assert!(
            index.starts_with("HTTP/1.1 200"),
            "{}",
            &index[..index.len().min(300)]
        );
    }
    // The strangers keep their ends; the agent closes its own within the time they are given.
    let deadline = Instant::now() + Duration::from_secs(40);
    while descriptors(pid) > baseline + 8 {
        assert!(
            Instant::now() < deadline,
            "strangers' connections still open: {} descriptors against {baseline}",
            descriptors(pid)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(held);
    app.kill();
}

/// Attack 5: a session at the default log level with the path search running the whole time
/// (a leak the search follows) says its start and then nothing; no line is said twice.
#[test]
fn a_healthy_session_keeps_the_applications_stderr_quiet() {
    let jdk = jdk17();
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 60.0)
        .flag("-Xmx1g")
        .agent("port=0")
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, _) = app.wait_exit(Duration::from_secs(180));
    assert!(status.success(), "{}", app.stderr());
    let stderr = app.stderr();
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[memcity]"))
        .collect();
    assert!(
        ours.len() <= 6,
        "{} lines:\n{}",
        ours.len(),
        ours.join("\n")
    );
    // The first says what memcity it is, on what collector the session runs and how it
    // follows samples there.
    assert!(
        ours.first().is_some_and(|l| l.contains("collector: G1")
            && l.contains("samples followed by weak references")
            && l.contains(&format!(
                "(commit {}, memcity protocol {})",
                memcity_proto::COMMIT,
                memcity_proto::PROTOCOL_VERSION
            ))),
        "{}",
        ours.join("\n")
    );
    let mut unique = ours.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ours.len(), "{}", ours.join("\n"));
}
