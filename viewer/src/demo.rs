//! `memcity demo`: a bundled leaking app with the agent, watched live. It builds nothing at run
//! time: the app's source is embedded and started with Java's single-file source launcher, and
//! the agent is the `libmemcity.so` beside this binary.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The demo app, compiled by `java` itself when launched.
const LEAK_SOURCE: &str = include_str!("../../jvm-test-apps/src/LinkedListLeak.java");

/// Kills the demo JVM however the viewer ends.
struct Jvm(Child);

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The agent this binary loads: `libmemcity.so` beside it (a build: `target/release/`) or in
/// `../lib` (the release archive's `bin/` and `lib/`).
pub(crate) fn agent_library() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [dir.join("libmemcity.so"), dir.join("../lib/libmemcity.so")];
    match candidates.iter().find(|lib| lib.is_file()) {
        // Resolved: the JVM is handed an absolute path without `..`, as its log shows it.
        Some(lib) => Ok(lib.canonicalize().unwrap_or_else(|_| lib.clone())),
        None => anyhow::bail!(
            "the agent libmemcity.so is missing: looked for {} and {}. Build it with scripts/build.sh (it sits beside the memcity binary), or keep the release archive's bin/ and lib/ together (`memcity attach --lib` takes one from elsewhere)",
            candidates[0].display(),
            candidates[1].display()
        ),
    }
}

/// Starts the leaking app with the agent on a free port; returns it and the port.
fn start(seconds: u64, dir: &Path) -> anyhow::Result<(Jvm, String)> {
    let agent = agent_library()?;
    let source = dir.join("LinkedListLeak.java");
    std::fs::write(&source, LEAK_SOURCE)?;
    let portfile = dir.join("port");
    let log = std::fs::File::create(dir.join("jvm.log"))?;
    let child = Command::new("java")
        .arg("-Xmx1g")
        .arg(format!(
            "-agentpath:{}=port=0,portfile={},min_interval=500ms,period=2s,budget=5%,paths=20%",
            agent.display(),
            portfile.display()
        ))
        .arg(&source)
        .arg(seconds.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!("cannot start java ({e}): a JDK 11 or newer must be on the PATH")
        })?;
    let mut jvm = Jvm(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(port) = std::fs::read_to_string(&portfile) {
            if !port.trim().is_empty() {
                return Ok((jvm, port.trim().to_string()));
            }
        }
        if let Some(status) = jvm.0.try_wait()? {
            let log = std::fs::read_to_string(dir.join("jvm.log")).unwrap_or_default();
            anyhow::bail!("the demo JVM exited ({status}) before the agent listened:\n{log}");
        }
        if Instant::now() > deadline {
            anyhow::bail!("the demo JVM's agent did not listen within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn run(seconds: u64, options: memcity_viewer::app::WindowOptions) -> anyhow::Result<()> {
    memcity_viewer::app::check_display()?;
    let dir = std::env::temp_dir().join(format!("memcity-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let outcome = start(seconds, &dir).and_then(|(jvm, port)| {
        eprintln!(
            "memcity: demo app LinkedListLeak (pid {}) with the agent on port {port}",
            jvm.0.id()
        );
        let result = memcity_viewer::app::view(Some(port), None, options);
        drop(jvm);
        result
    });
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}
