//! `memcity serve` run as a user runs it: its URL read from what it prints.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::browser::{http_get, HttpResponse};
use crate::workspace::{ensure_built, memcity_bin};

/// `memcity serve ARGS --port 0`, killed on drop; its URL.
pub struct Serve {
    pub child: Child,
    pub url: String,
    port: u16,
    pub token: String,
}

impl Serve {
    pub fn start(args: &[&str]) -> Serve {
        ensure_built();
        Serve::start_with(&memcity_bin(), args)
    }

    /// The same with the `memcity` binary `binary` (a release archive's).
    pub fn start_with(binary: &Path, args: &[&str]) -> Serve {
        let mut child = Command::new(binary)
            .arg("serve")
            .args(args)
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start memcity serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "memcity serve printed no URL: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        };
        // What the README shows it print.
        assert!(line.starts_with("memcity: serving "), "{line}");
        assert!(
            line.ends_with(" (open it in a browser; Ctrl-C stops)"),
            "{line}"
        );
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http"))
            .expect("a URL")
            .to_string();
        let (address, token) = url
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("{url}: the URL carries the token"));
        assert_eq!(token.len(), 32, "{url}");
        let port = address.rsplit(':').next().unwrap().parse().unwrap();
        let token = token.to_string();
        Serve {
            child,
            url,
            port,
            token,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// GET with the token, as a script would send it.
    pub fn get(&self, path: &str) -> HttpResponse {
        http_get(
            self.port,
            path,
            &[&format!("Authorization: Bearer {}", self.token)],
        )
        .unwrap_or_else(|| panic!("GET {path}: no answer"))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
