//! Many JVMs on one host (issue 34): the agent given to every JVM at once, the usual way in a
//! container or on a host (`JAVA_TOOL_OPTIONS`), with its default options. Each JVM's agent
//! listens on a free port of its own, registered for `memcity list` and `--pid`; the JDK's own
//! tools (`java -version`, `jcmd`) are left alone, silent and without a port; `only=` names the
//! JVMs it stays in; and a `--pid` command reaches an agent that runs without listening by
//! asking it to listen.

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use memcity_e2e::*;

/// `JAVA_TOOL_OPTIONS` giving the agent under test, with `options` (none: its defaults).
fn tool_options(options: &str) -> String {
    let mut value = format!("-agentpath:{}", agent_path().display());
    if !options.is_empty() {
        value.push('=');
        value.push_str(options);
    }
    value
}

/// A quiet JVM (a small fixed heap, then sleep) given the agent by `JAVA_TOOL_OPTIONS` alone.
fn quiet_jvm(jdk: &Jdk, main: &'static str, java_tool_options: &str) -> JavaApp {
    let mut spec = AppSpec {
        agent: None,
        ..AppSpec::new(jdk, main, 300.0)
    }
    .arg("2000")
    .flag("-Xmx64m");
    spec.env
        .push(("JAVA_TOOL_OPTIONS".into(), java_tool_options.into()));
    spec.spawn()
}

/// `memcity list`'s line for `pid`.
fn listed(pid: u32) -> Option<String> {
    let out = memcity(&["list"], Duration::from_secs(60));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        .map(str::to_string)
}

/// `memcity record --pid PID` for two seconds: it must succeed and record snapshots.
fn record_by_pid(pid: u32, dir: &std::path::Path) -> String {
    let file = dir.join(format!("{pid}.mcrec"));
    let out = memcity(
        &[
            "record",
            "--pid",
            &pid.to_string(),
            "-o",
            file.to_str().unwrap(),
            "--duration",
            "2",
        ],
        Duration::from_secs(90),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "record --pid {pid}: {stderr}");
    let model = load_recording(&file).unwrap_or_else(|e| panic!("{pid}: {e}"));
    assert!(!model.is_empty(), "{pid}: no snapshot recorded: {stderr}");
    stderr
}

fn run(mut command: Command) -> (bool, String, String) {
    let out = command.output().expect("run");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two JVMs, then ten, every one given the agent with its defaults: each listens on a port of
/// its own, is listed, and is recorded by `--pid`; a command given no agent names them all
/// rather than pick one; the JDK's tools under the same variable print nothing of memcity's.
#[test]
fn every_jvm_given_the_agent_by_java_tool_options_listens_on_a_port_of_its_own() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let options = tool_options("");
    let mut jvms: Vec<JavaApp> = Vec::new();
    for count in [2, 10] {
        let started = jvms.len();
        while jvms.len() < count {
            jvms.push(quiet_jvm(&jdk, "QuietHeap", &options));
        }
        for jvm in &jvms[started..] {
            jvm.wait_for_line("READY", Duration::from_secs(120));
        }
        let mut ports: Vec<u16> = jvms
            .iter()
            .map(|j| listening_port(j.pid(), Duration::from_secs(60)))
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), count, "{count} JVMs, ports {ports:?}");
        for jvm in &jvms {
            let log = jvm.stderr();
            assert!(!log.contains("ERROR"), "{}: {log}", jvm.pid());
        }
    }
    for jvm in &jvms {
        record_by_pid(jvm.pid(), dir.path());
    }
    // Viewed by --pid too, in a real window: the first and the last.
    match find_on_path("xvfb-run") {
        Some(xvfb_run) => {
            for jvm in [&jvms[0], &jvms[9]] {
                let shot = dir.path().join(format!("{}.png", jvm.pid()));
                let out = Command::new(&xvfb_run)
                    .args(["-a", "-s", "-screen 0 1280x720x24"])
                    .arg(memcity_bin())
                    .args(["view", "--pid", &jvm.pid().to_string(), "--exit-after", "2"])
                    .arg("--screenshot")
                    .arg(&shot)
                    .output()
                    .expect("run xvfb-run");
                let said = String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "view --pid {}: {said}", jvm.pid());
                // At least two: a late viewer gets the session's history first.
                assert!(
                    said.contains("memcity: received ") && said.contains(" snapshots"),
                    "{said}"
                );
                assert!(shot.is_file(), "no screenshot: {said}");
            }
        }
        None => skip(
            "xvfb",
            "view --pid: no xvfb-run (scripts/setup.sh installs it)",
        ),
    }
    // Given no agent, a command does not guess among ten.
    let out = memcity(&["snapshot"], Duration::from_secs(60));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("memcity agents run on this machine; say which with --pid PID"),
        "{said}"
    );
    for jvm in &jvms {
        assert!(said.contains(&format!("--pid {}", jvm.pid())), "{said}");
    }

    // The JDK's tools under the same variable: the JVM says it picked the variable up, and
    // memcity says nothing and registers nothing.
    let mut version = Command::new(jdk.java());
    version.arg("-version").env("JAVA_TOOL_OPTIONS", &options);
    let (ok, _, stderr) = run(version);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("Picked up JAVA_TOOL_OPTIONS"), "{stderr}");
    assert!(!stderr.contains("[memcity]"), "java -version: {stderr}");
    let mut jcmd = Command::new(jdk.jcmd());
    jcmd.args([&jvms[0].pid().to_string(), "VM.version"])
        .env("JAVA_TOOL_OPTIONS", &options);
    let (ok, stdout, stderr) = run(jcmd);
    assert!(ok, "{stdout}{stderr}");
    assert!(
        !stdout.contains("[memcity]") && !stderr.contains("[memcity]"),
        "jcmd: {stdout}{stderr}"
    );
    // Ten agents registered, the tools none.
    assert_eq!(
        memcity_proto::registry::registrations()
            .iter()
            .filter(|r| jvms.iter().any(|j| j.pid() == r.pid))
            .count(),
        10
    );
    for mut jvm in jvms {
        jvm.kill();
    }
}

/// `only=` keeps the agent in the JVMs it names: another JVM given the same variable runs
/// without it, silent and unlisted, until a `--pid` command starts a session there.
#[test]
fn only_names_the_jvms_the_agent_stays_in() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let options = tool_options("only=Quiet*|none.jar");
    let mut kept = quiet_jvm(&jdk, "QuietHeap", &options);
    let mut left = AppSpec {
        agent: None,
        ..AppSpec::new(&jdk, "SteadyState", 300.0)
    };
    left.env.push(("JAVA_TOOL_OPTIONS".into(), options.clone()));
    let mut left = left.spawn();
    kept.wait_for_line("READY", Duration::from_secs(60));
    left.wait_for_line("READY", Duration::from_secs(60));
    listening_port(kept.pid(), Duration::from_secs(60));
    let line = listed(left.pid()).expect("the other JVM is listed");
    assert!(
        line.contains("loaded, not listening") || line.contains(" - "),
        "{line}"
    );
    assert!(!left.stderr().contains("[memcity]"), "{}", left.stderr());
    // Asked for, memcity starts there: the library is loaded, the session is new.
    let said = record_by_pid(left.pid(), dir.path());
    assert!(
        said.contains(&format!("memcity: attached to {}", left.pid())),
        "{said}"
    );
    kept.kill();
    left.kill();
}

/// An agent that runs without listening: `port=off`, or a fixed port another process holds. A
/// `--pid` command asks it to listen, and it does, on a free port.
#[test]
fn a_pid_command_asks_an_agent_that_does_not_listen_to_listen() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().port();
    for options in ["port=off".to_string(), format!("port={taken}")] {
        let mut app = AppSpec::new(&jdk, "QuietHeap", 300.0)
            .arg("2000")
            .agent(&options)
            .spawn();
        app.wait_for_line("READY", Duration::from_secs(60));
        let line = listed(app.pid()).expect("listed");
        assert!(line.contains("loaded, not listening"), "{options}: {line}");
        let said = record_by_pid(app.pid(), dir.path());
        assert!(
            said.contains(&format!(
                "memcity: the agent in {} was not listening; it listens now on 127.0.0.1:",
                app.pid()
            )),
            "{options}: {said}"
        );
        assert!(
            app.stderr()
                .contains("asked to listen: serving on a free port"),
            "{}",
            app.stderr()
        );
        listening_port(app.pid(), Duration::from_secs(10));
        app.kill();
    }
    drop(held);
}

/// A single source file run as a program (`java App.java`, javac's launcher in the JDK's
/// `jdk.compiler` module) is an application, not one of the JDK's tools: the agent stays.
#[test]
fn a_source_file_program_is_an_application() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let mut app = Command::new(jdk.java())
        .arg("-Xmx64m")
        .arg(root().join("jvm-test-apps/src/QuietHeap.java"))
        .args(["300", "2000"])
        .env("JAVA_TOOL_OPTIONS", tool_options(""))
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run java QuietHeap.java");
    let port = std::panic::catch_unwind(|| listening_port(app.id(), Duration::from_secs(90)));
    let _ = app.kill();
    let _ = app.wait();
    let port = port.unwrap_or_else(|_| panic!("the agent left a source-file program alone"));
    eprintln!("java QuietHeap.java: the agent listens on {port}");
}
