//! A real browser for the page's tests: Debian's headless Chromium, driven over its DevTools
//! protocol (a WebSocket of JSON calls). WebGL runs on its software renderer (SwiftShader), as
//! the window runs on Mesa's llvmpipe. The browser is killed on drop.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// Where Chromium is, if installed (`scripts/setup.sh` installs Debian's).
pub fn chromium_path() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        })
}

pub struct Browser {
    child: Child,
    socket: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// The DevTools session on the page, once attached; calls before it go to the browser.
    session: Option<String>,
    _profile: tempfile::TempDir,
    /// Chromium's stderr lines, for a failure's message.
    log: mpsc::Receiver<String>,
}

impl Browser {
    /// Opens `url` in a fresh headless Chromium with a `width`x`height` viewport.
    pub fn open(url: &str, width: u32, height: u32) -> Browser {
        Self::open_with(url, width, height, &[])
    }

    /// As [`Browser::open`], with more command-line flags.
    pub fn open_with(url: &str, width: u32, height: u32, flags: &[&str]) -> Browser {
        let chromium = chromium_path().expect("chromium is installed (scripts/setup.sh)");
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                // WebGL on the CPU: newer Chromium asks for this to fall back to SwiftShader.
                "--enable-unsafe-swiftshader",
                "--use-angle=swiftshader",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
            ])
            .args(flags)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--window-size={width},{height}"))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        let address = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match log.recv_timeout(left) {
                Ok(line) => {
                    if let Some(at) = line.find("ws://") {
                        break line[at..].trim().to_string();
                    }
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("chromium printed no DevTools address in 60 s: {seen:#?}");
                }
            }
        };
        let (socket, _) = tungstenite::connect(address.as_str()).expect("DevTools socket");
        let mut browser = Browser {
            child,
            socket,
            next_id: 1,
            session: None,
            _profile: profile,
            log,
        };
        // The page the command line opened, and a session on it for the calls that follow.
        let page = loop {
            let targets = browser.call("Target.getTargets", json!({}));
            let page = targets["targetInfos"].as_array().and_then(|t| {
                t.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["targetId"].as_str().map(str::to_owned))
            });
            if let Some(page) = page {
                break page;
            }
            assert!(
                Instant::now() < deadline,
                "chromium opened no page: {targets}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let attached = browser.call(
            "Target.attachToTarget",
            json!({ "targetId": page, "flatten": true }),
        );
        browser.session = attached["sessionId"].as_str().map(str::to_owned);
        assert!(
            browser.session.is_some(),
            "no session on the page: {attached}"
        );
        // The viewport itself, not the window: headless Chromium keeps some of the window for
        // its (invisible) frame.
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        browser
    }

    /// Calls a DevTools method and returns its result (events in between are passed over).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = &self.session {
            request["sessionId"] = json!(session);
        }
        self.socket
            .send(tungstenite::Message::Text(request.to_string().into()))
            .expect("DevTools send");
        loop {
            let message = self.socket.read().expect("DevTools read");
            let tungstenite::Message::Text(text) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).expect("DevTools JSON");
            if value["id"].as_u64() == Some(id) {
                if let Some(error) = value.get("error") {
                    panic!("{method}: {error}");
                }
                return value["result"].clone();
            }
        }
    }

    /// The peak resident memory (VmHWM, KiB) of Chromium's renderer processes together: what
    /// the page costs, its WebAssembly memory and its JavaScript heap. The renderers are
    /// Chromium's descendants (through its zygote) started with `--type=renderer`.
    pub fn renderers_peak_kib(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return 0;
        };
        let mut parent_of = std::collections::HashMap::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // "pid (comm) state ppid ...": the command may hold spaces, the ')' ends it.
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parent_of.insert(pid, ppid);
            }
        }
        let root = self.child.id();
        let descends = |mut pid: u32| {
            for _ in 0..16 {
                match parent_of.get(&pid) {
                    Some(&p) if p == root => return true,
                    Some(&p) if p > 1 => pid = p,
                    _ => return false,
                }
            }
            false
        };
        parent_of
            .keys()
            .filter(|&&pid| descends(pid))
            .filter(|&&pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.windows(15).any(|w| w == b"--type=renderer"))
            })
            .filter_map(|pid| {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .sum()
    }

    /// The value of a JavaScript expression in the page (JSON-able).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page, polling; panics with `what` and the page's
    /// state after `timeout`.
    pub fn wait_for(&mut self, expression: &str, timeout: Duration, what: &str) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.eval(expression) == Value::Bool(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let state = self.eval("JSON.stringify(window.memcity_page)");
        let log: Vec<String> = self.log.try_iter().collect();
        panic!("{what}: not within {timeout:?}; the page: {state}; chromium: {log:#?}");
    }

    /// The page as drawn now: width, height and RGBA rows, top first.
    pub fn screenshot(&mut self) -> (u32, u32, Vec<u8>) {
        let result = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let data = base64::engine::general_purpose::STANDARD
            .decode(result["data"].as_str().expect("screenshot data"))
            .expect("base64");
        let decoder = png::Decoder::new(std::io::Cursor::new(data));
        let mut reader = decoder.read_info().expect("png");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("png frame");
        buf.truncate(info.buffer_size());
        let rgba = match info.color_type {
            png::ColorType::Rgba => buf,
            png::ColorType::Rgb => buf
                .chunks(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            other => panic!("screenshot in {other:?}"),
        };
        (info.width, info.height, rgba)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response to [`http_get`].
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    pub body: String,
}

/// A plain HTTP/1.0 GET on loopback with these header lines (`Name: value`).
pub fn http_get(port: u16, path: &str, headers: &[&str]) -> Option<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    for header in headers {
        request.push_str(&format!("{header}\r\n"));
    }
    write!(stream, "{request}\r\n").ok()?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).ok()?;
    // Bodies may be binary (a recording): what tests read of them is text.
    let response = String::from_utf8_lossy(&bytes);
    let (head, body) = response.split_once("\r\n\r\n")?;
    Some(HttpResponse {
        status: head.split_whitespace().nth(1)?.parse().ok()?,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}
