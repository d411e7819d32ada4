//! The `memcity` command and the JDK's tools, run as a user runs them, each within a timeout.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::workspace::{ensure_built, memcity_bin};

/// Runs the `memcity` CLI with a timeout (see [`output_within`]).
pub fn memcity(args: &[&str], timeout: Duration) -> Output {
    ensure_built();
    let mut command = Command::new(memcity_bin());
    command.args(args);
    output_within(&mut command, timeout)
}

/// Runs `command` to its end, or kills it and fails past `timeout`. Both pipes are drained
/// while it runs, so a large output cannot fill a pipe and stall the child.
pub fn output_within(command: &mut Command, timeout: Duration) -> Output {
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::Builder::new()
            .name("command-output".into())
            .spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
            .expect("a thread to drain a pipe")
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
                "{what} did not finish within {timeout:?}; stderr: {}",
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

/// The port `memcity list` shows the agent in `pid` listening on, once it does.
pub fn listening_port(pid: u32, timeout: Duration) -> u16 {
    let deadline = Instant::now() + timeout;
    loop {
        let out = memcity(&["list"], Duration::from_secs(60));
        let list = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = list
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&pid.to_string()));
        if let Some(port) = line.and_then(|l| {
            let rest = l.split("listening on ").nth(1)?;
            rest.split_whitespace().next()?.parse().ok()
        }) {
            return port;
        }
        assert!(
            Instant::now() < deadline,
            "{pid} not listed as listening within {timeout:?}: {list}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
