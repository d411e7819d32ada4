//! The `memcity` command, run as a user runs it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::workspace::{ensure_built, memcity_bin};

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
