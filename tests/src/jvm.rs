//! Test JVMs: one started with the agent (or without) as a spec says, one started by another
//! command; the lines and files they signal with, waited for with a timeout; each killed on
//! drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::jdks::{jdk17, Jdk};
use crate::workspace::{agent_path, classes_dir, ensure_built, release_agent_path};

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

/// The app's last line, which must be its `DONE` line.
pub fn done_line(stdout: &[String], app: &JavaApp) -> String {
    stdout
        .last()
        .filter(|l| l.starts_with("DONE"))
        .unwrap_or_else(|| panic!("no DONE line: {stdout:?}; stderr: {}", app.stderr()))
        .clone()
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

    /// The JVM's pid when the prefix forks it (`unshare -f`): the prefix's first child.
    pub fn forked_pid(&self) -> u32 {
        let prefix = self.child.id();
        std::fs::read_to_string(format!("/proc/{prefix}/task/{prefix}/children"))
            .ok()
            .and_then(|c| c.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no child of {prefix}"))
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
