//! A fleet's monitoring, for real: Debian's Prometheus scrapes two JVMs with the agent, one
//! leaking (over TLS with a bearer token, with the scrape config the docs give) and one
//! steady (plain, on loopback), and evaluates the alert rule the docs give. Prometheus's HTTP
//! API must then show the leak's suspect rising on the leaking JVM alone, and the alert pending
//! for it alone.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memcity_e2e::*;
use serde_json::Value;

/// A Prometheus server on a loopback port, killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(binary: &Path, dir: &Path, config: &str) -> Prometheus {
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        // Prometheus cannot report a port it picked: take a free one and hand it over.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.join("prometheus.log");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start prometheus");
        let mut server = Prometheus { child, port, log };
        server.wait_until("ready", Duration::from_secs(60), |server| {
            server.get("/-/ready").map(|(status, _)| status == 200)
        });
        server
    }

    /// `(status, body)` of a GET, or `None` while nothing answers.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.port, path)
    }

    fn query(&self, promql: &str) -> Vec<Value> {
        let path = format!("/api/v1/query?query={}", encode(promql));
        let (status, body) = self.get(&path).expect("prometheus answers");
        let json: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status, 200, "{promql}: {body}");
        json["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn wait_until(
        &mut self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&Self) -> Option<bool>,
    ) {
        let deadline = Instant::now() + timeout;
        while done(self) != Some(true) {
            let exited = self.child.try_wait().ok().flatten();
            assert!(
                Instant::now() < deadline && exited.is_none(),
                "Prometheus: {what} not within {timeout:?} ({exited:?}); its log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// A plain HTTP/1.1 GET on loopback (enough for Prometheus's API; no client crate needed).
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encodes a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The agent's metrics address, from the registry entry it writes once it serves.
fn metrics_target(app: &JavaApp) -> String {
    let file = memcity_proto::registry::run_dir().join(app.pid().to_string());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(url) = memcity_proto::registry::read(&file).and_then(|r| r.metrics) {
            // `http(s)://127.0.0.1:PORT/metrics`
            let host = url.split("://").nth(1).unwrap();
            return host.trim_end_matches("/metrics").to_string();
        }
        assert!(
            Instant::now() < deadline,
            "the agent registered no metrics address in {}; stderr: {}",
            file.display(),
            app.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn label<'a>(series: &'a Value, name: &str) -> &'a str {
    series["metric"][name].as_str().unwrap_or("")
}

/// The port of a metrics target, `host:port`.
fn steady_port(target: &str) -> u16 {
    target.rsplit(':').next().unwrap().parse().unwrap()
}

fn number(series: &Value) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn prometheus_finds_the_leaking_jvm_and_the_docs_rule_alerts_on_it_alone() {
    let Some(prometheus) = find_on_path("prometheus") else {
        skip(
            "prometheus",
            "Debian's prometheus is not installed (scripts/setup.sh installs it)",
        );
        return;
    };
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let token = dir.path().join("token");
    std::fs::write(&token, "fleet-secret-42\n").unwrap();
    // 5,000 people a second for at most 300 s fit its heap; the test kills it sooner.
    let leak = AppSpec::new(&jdk, "LinkedListLeak", 300.0)
        .arg("5000")
        .agent(format!(
            "port=0,metrics=0,metrics_token={},tls_cert={},tls_key={},service=checkout",
            token.display(),
            certs.cert.display(),
            certs.key.display()
        ))
        .spawn();
    // The steady JVM serves its page too: its address reaches the metrics, for a dashboard's
    // link. It exports 3 series per family at most: the JDK's dozens of packages must fold.
    // It records its session too: a suspect named on it fails with the report of what it saw.
    let steady_recording = dir.path().join("steady.mcrec");
    let steady = AppSpec::new(&jdk, "SteadyState", 300.0)
        .agent(format!(
            "port=0,metrics=0,http=0,metrics_top=3,record={}",
            steady_recording.display()
        ))
        .spawn();
    leak.wait_for_line("READY", Duration::from_secs(60));
    steady.wait_for_line("READY", Duration::from_secs(60));
    let (leak_target, steady_target) = (metrics_target(&leak), metrics_target(&steady));
    // `memcity list` names both endpoints.
    let list = memcity(&["list"], Duration::from_secs(60));
    let listed = String::from_utf8_lossy(&list.stdout);
    for (app, target, scheme) in [
        (&leak, &leak_target, "https"),
        (&steady, &steady_target, "http"),
    ] {
        let line = format!("metrics of {}: {scheme}://{target}/metrics", app.pid());
        assert!(listed.contains(&line), "no '{line}' in:\n{listed}");
    }

    let root = root();
    let docs = root.join("docs/prometheus");
    let example = std::fs::read_to_string(docs.join("prometheus.yml")).unwrap();
    // The documented scrape config, pointed at this test's files and JVMs, scraping every
    // second; the steady JVM is a second, plain job; a third scrapes the leaking JVM over TLS
    // without the token, and must be refused.
    let config = example
        .replace(
            "/etc/prometheus/memcity-token",
            &token.display().to_string(),
        )
        .replace(
            "/etc/prometheus/memcity-ca.pem",
            &certs.ca.display().to_string(),
        )
        .replace(
            r#"["checkout-1.internal:9404", "checkout-2.internal:9404"]"#,
            &format!(r#"["{leak_target}"]"#),
        )
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace(
            "memcity-rules.yml",
            &docs.join("memcity-rules.yml").display().to_string(),
        );
    assert_ne!(
        config, example,
        "the docs' example changed: update this test"
    );
    let jobs = format!(
        "  - job_name: steady
    scrape_interval: 1s
    static_configs:
      - targets: [\"{steady_target}\"]
  - job_name: no-token
    scrape_interval: 1s
    scheme: https
    tls_config:
      ca_file: {ca}
    static_configs:
      - targets: [\"{leak_target}\"]

rule_files:",
        ca = certs.ca.display()
    );
    let config = format!(
        "global:\n  evaluation_interval: 1s\n{}",
        config.replacen("\nrule_files:", &format!("\n{jobs}"), 1)
    );
    let mut server = Prometheus::start(&prometheus, dir.path(), &config);

    // Both JVMs up: the TLS scrape with the bearer token and the plain one; without the
    // token, refused.
    server.wait_until("the targets scraped", Duration::from_secs(60), |server| {
        let up = server.query("up");
        Some(up.len() == 3)
    });
    let up = |job: &str| {
        server
            .query(&format!(r#"up{{job="{job}"}}"#))
            .first()
            .map(number)
    };
    assert_eq!(up("memcity"), Some(1.0));
    assert_eq!(up("steady"), Some(1.0));
    assert_eq!(up("no-token"), Some(0.0));
    let (_, targets) = server.get("/api/v1/targets").unwrap();
    assert!(targets.contains("401 Unauthorized"), "{targets}");
    // The leak, named by its holder, on the leaking JVM alone.
    let mut first = None;
    server.wait_until(
        "the leak's suspect growing, confirmed, and rising",
        Duration::from_secs(90),
        |server| {
            let growth = server.query(
                r#"memcity_leak_suspect_growth_bytes_per_second{root="static LinkedListLeak.PEOPLE"} > 0 and memcity_leak_suspect_confirmed == 1"#,
            );
            let people = server.query(
                r#"memcity_growing_type_live_objects{job="memcity",type="LinkedListLeak$Person"}"#,
            );
            let now = people.first().map(number)?;
            let start = *first.get_or_insert(now);
            Some(growth.len() == 1 && now > start * 1.5)
        },
    );
    let growth = server.query("memcity_leak_suspect_growth_bytes_per_second");
    if let Some(series) = growth.iter().find(|s| label(s, "job") != "memcity") {
        let metrics = http_get(steady_port(&steady_target), "/metrics").map(|(_, text)| text);
        drop(steady);
        let report = memcity(
            &["report", &steady_recording.display().to_string()],
            Duration::from_secs(120),
        );
        panic!(
            "a suspect on the steady JVM: {series}\nits metrics: {metrics:?}\nthe report of its recording:\n{}{}",
            String::from_utf8_lossy(&report.stdout),
            String::from_utf8_lossy(&report.stderr)
        );
    }
    let leak_series = &growth[0];
    assert_eq!(label(leak_series, "holder"), "java.util.LinkedList");
    assert_eq!(label(leak_series, "suspect").len(), 16);
    let agent = label(leak_series, "agent");
    assert!(agent.starts_with("127.0.0.1:"), "{agent}");
    // The steady JVM: watched (its heap is there) and flat, with nothing named.
    let steady_heap = server.query(r#"memcity_heap_live_bytes{job="steady"}"#);
    assert_eq!(steady_heap.len(), 1, "{steady_heap:?}");
    let suspects = server.query(r#"memcity_leak_suspects{job="steady"}"#);
    assert_eq!(suspects.first().map(number), Some(0.0), "{suspects:?}");
    // A client that does not ask for OpenMetrics gets Prometheus's text format, which
    // Prometheus's own linter passes.
    let (status, text) = http_get(steady_port(&steady_target), "/metrics").unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains("# EOF"), "{text}");
    let promtool = prometheus.with_file_name("promtool");
    let mut lint = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool beside prometheus");
    {
        use std::io::Write;
        lint.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let linted = lint.wait_with_output().unwrap();
    assert!(
        linted.status.success() && linted.stdout.is_empty() && linted.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&linted.stdout),
        String::from_utf8_lossy(&linted.stderr)
    );
    let families = server.query(r#"count by (__name__) ({job="steady", __name__=~"memcity_.+"})"#);
    assert!(families.len() > 20, "{families:?}");
    for family in &families {
        assert!(number(family) <= 3.0, "over metrics_top=3: {family}");
    }
    let groups = server.query(r#"memcity_group_live_bytes{job="steady"}"#);
    assert_eq!(groups.len(), 3, "{groups:?}");
    assert!(
        groups.iter().any(|g| label(g, "group") == "(others)"),
        "{groups:?}"
    );
    let info = server.query("memcity_agent_info");
    let page_of = |job: &str| {
        info.iter()
            .find(|s| label(s, "job") == job)
            .map(|s| label(s, "page").to_string())
    };
    assert!(
        page_of("steady").is_some_and(|p| p.starts_with("http://127.0.0.1:")),
        "{info:?}"
    );
    assert_eq!(page_of("memcity").as_deref(), Some(""), "{info:?}");

    // The docs' alert rule: pending (it fires after 10 minutes) for the leaking JVM only,
    // with the labels its annotations use.
    server.wait_until(
        "the docs' alert pending",
        Duration::from_secs(60),
        |server| {
            let (_, body) = server.get("/api/v1/alerts")?;
            let json: Value = serde_json::from_str(&body).ok()?;
            let alerts = json["data"]["alerts"].as_array()?.clone();
            Some(!alerts.is_empty())
        },
    );
    let (_, body) = server.get("/api/v1/alerts").unwrap();
    let json: Value = serde_json::from_str(&body).unwrap();
    let alerts = json["data"]["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{body}");
    let alert = &alerts[0];
    assert_eq!(alert["state"], "pending", "{alert}");
    assert_eq!(alert["labels"]["alertname"], "JavaHeapLeak");
    assert_eq!(alert["labels"]["service"], "checkout");
    assert_eq!(alert["labels"]["pid"], leak.pid().to_string());
    assert_eq!(alert["labels"]["job"], "memcity");
    let summary = alert["annotations"]["summary"].as_str().unwrap();
    assert_eq!(
        summary,
        "checkout leaks: static LinkedListLeak.PEOPLE holds a growing java.util.LinkedList"
    );
    let description = alert["annotations"]["description"].as_str().unwrap();
    assert!(
        description.contains(&format!("memcity view {agent}")),
        "{description}"
    );
}

/// One request as a Pyroscope server gets it.
struct Ingest {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// A stand-in for Pyroscope's ingest endpoint on a loopback port: it reads each request whole,
/// answers `statuses` in turn (then 200), and hands the requests over.
fn pyroscope_stand_in(statuses: Vec<u16>) -> (u16, std::sync::mpsc::Receiver<Ingest>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut statuses = statuses.into_iter();
        // A connection that breaks off is dropped, and the next one served: what reaches the
        // test is whole requests only.
        let mut read_one = |stream: &mut std::net::TcpStream| -> std::io::Result<Ingest> {
            let mut reader = BufReader::new(stream.try_clone()?);
            let mut request_line = String::new();
            reader.read_line(&mut request_line)?;
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line)?;
                if line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
                }
            }
            let header = |name: &str| {
                headers
                    .iter()
                    .find(|h| h.0 == name)
                    .map(|h| h.1.clone())
                    .unwrap_or_default()
            };
            let mut body = vec![0; header("content-length").parse().unwrap_or(0)];
            reader.read_exact(&mut body)?;
            let status = statuses.next().unwrap_or(200);
            write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
            Ok(Ingest {
                path: request_line.split(' ').nth(1).unwrap_or("").to_string(),
                content_type: header("content-type"),
                body,
            })
        };
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(ingest) = read_one(&mut stream) else {
                continue;
            };
            if tx.send(ingest).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

/// The parts of a `multipart/form-data` body, by field name.
fn form_parts(content_type: &str, body: &[u8]) -> std::collections::HashMap<String, Vec<u8>> {
    let boundary = content_type
        .split("boundary=")
        .nth(1)
        .expect("a multipart boundary");
    let delimiter = format!("--{boundary}");
    let mut parts = std::collections::HashMap::new();
    let mut rest = body;
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let head_end = find(rest, b"\r\n\r\n").expect("part headers");
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        let name = head
            .split("name=\"")
            .nth(1)
            .and_then(|n| n.split('"').next())
            .expect("a part's name")
            .to_string();
        let data = &rest[head_end + 4..];
        let end = find(data, format!("\r\n{delimiter}").as_bytes()).expect("part end");
        parts.insert(name, data[..end].to_vec());
        rest = &data[end + 2..];
    }
    parts
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The live objects of `type_name` in a profile (its `inuse_objects`), and those of them whose
/// stack runs through the app's `main` (the rest no sample with a site stands for yet).
fn objects_of(profile: &memcity_proto::pprof::Profile, type_name: &str) -> (i64, i64) {
    let text = |i: i64| profile.string_table[i as usize].as_str();
    let function_of = |location_id: u64| {
        let location = profile
            .location
            .iter()
            .find(|l| l.id == location_id)
            .unwrap();
        let function_id = location.line.first().map_or(0, |l| l.function_id);
        let function = profile.function.iter().find(|f| f.id == function_id);
        function.map_or("", |f| text(f.name))
    };
    let (mut objects, mut from_main) = (0, 0);
    for sample in &profile.sample {
        let of_type = sample
            .label
            .iter()
            .any(|l| text(l.key) == "type" && text(l.str) == type_name);
        if of_type {
            objects += sample.value[0];
            if sample
                .location_id
                .iter()
                .any(|&id| function_of(id) == "LinkedListLeak.main")
            {
                from_main += sample.value[0];
            }
        }
    }
    (objects, from_main)
}

#[test]
fn the_live_heap_reaches_pyroscope_as_pprof_with_its_labels() {
    use prost::Message;
    use std::io::Read;
    // The stand-in refuses the first push: the agent says so once and pushes again.
    let (port, pushes) = pyroscope_stand_in(vec![503]);
    let jdk = jdk17();
    let leak = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!(
            "port=0,pyroscope=http://127.0.0.1:{port}/,pyroscope_every=1s,service=checkout"
        ))
        .spawn();
    leak.wait_for_line("READY", Duration::from_secs(60));
    let mut people = Vec::new();
    let (mut first_until, mut last_until) = (0, 0);
    // Pushes over at least 6 s: the leak's rise (20,000 people a second) then dwarfs the
    // estimates' error.
    while people.len() < 4 || last_until < first_until + 6 {
        let ingest = pushes
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no push within 60 s; stderr: {}", leak.stderr()));
        // What Pyroscope's ingest API takes: the name with the pid label, a time range, pprof.
        let (route, query) = ingest.path.split_once('?').unwrap();
        assert_eq!(route, "/ingest");
        let params: std::collections::HashMap<&str, &str> = query
            .split('&')
            .map(|p| p.split_once('=').unwrap())
            .collect();
        assert_eq!(
            params["name"],
            format!("checkout%7Bpid%3D{}%7D", leak.pid()),
            "{query}"
        );
        assert_eq!(params["format"], "pprof");
        let (from, until): (u64, u64) = (
            params["from"].parse().unwrap(),
            params["until"].parse().unwrap(),
        );
        assert!(from < until && until >= last_until, "{query}");
        if first_until == 0 {
            first_until = until;
        }
        last_until = until;
        assert!(ingest
            .content_type
            .starts_with("multipart/form-data; boundary="));
        let parts = form_parts(&ingest.content_type, &ingest.body);
        let config: Value = serde_json::from_slice(&parts["sample_type_config"]).unwrap();
        assert_eq!(config["inuse_objects"]["units"], "objects");
        assert_eq!(config["inuse_space"]["sampled"], false);
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&parts["profile"][..])
            .read_to_end(&mut raw)
            .expect("a gzipped profile");
        let profile = memcity_proto::pprof::Profile::decode(&raw[..]).expect("a pprof profile");
        let types: Vec<(&str, &str)> = profile
            .sample_type
            .iter()
            .map(|t| {
                (
                    profile.string_table[t.r#type as usize].as_str(),
                    profile.string_table[t.unit as usize].as_str(),
                )
            })
            .collect();
        assert_eq!(
            types,
            [("inuse_objects", "count"), ("inuse_space", "bytes")]
        );
        people.push(objects_of(&profile, "LinkedListLeak$Person"));
    }
    // The leak grows from push to push, and its site shows: the people are allocated in main.
    let (first, last) = (people[0], people[people.len() - 1]);
    assert!(last.0 > first.0, "{people:?}");
    assert!(last.1 > 0, "{people:?}");
    let stderr = leak.stderr();
    let refused = stderr
        .matches("cannot push the live heap to Pyroscope")
        .count();
    assert_eq!(refused, 1, "{stderr}");
    assert!(
        stderr.contains("Pyroscope takes the pushes again"),
        "{stderr}"
    );
}

/// Slow clients cannot take the metrics from Prometheus: 70 connections that send their
/// request a byte every 2 s (more than the port serves at once) are closed once the server has
/// waited 10 s for a request to answer, and a scrape gets through.
#[test]
fn clients_that_dribble_their_requests_do_not_hold_the_metrics_port() {
    use std::io::{Read, Write};
    let jdk = jdk17();
    let app = AppSpec::new(&jdk, "SteadyState", 120.0)
        .agent("port=0,metrics=0")
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let target = metrics_target(&app);
    let port: u16 = target.rsplit(':').next().unwrap().parse().unwrap();
    let opened = Instant::now();
    let mut slow: Vec<std::net::TcpStream> = (0..70)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    assert!(slow.len() >= 64, "{} connected", slow.len());
    for stream in &mut slow {
        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\n");
        stream
            .set_read_timeout(Some(Duration::from_millis(10)))
            .unwrap();
    }
    // Dribble until every slow connection is closed by the agent (a read sees the end).
    let mut open: Vec<bool> = vec![true; slow.len()];
    let deadline = opened + Duration::from_secs(40);
    while open.iter().any(|&o| o) {
        assert!(
            Instant::now() < deadline,
            "{} slow connections still open after 40 s",
            open.iter().filter(|&&o| o).count()
        );
        for (stream, open) in slow.iter_mut().zip(open.iter_mut()) {
            if !*open {
                continue;
            }
            let _ = stream.write_all(b"X");
            let mut buf = [0u8; 64];
            match stream.read(&mut buf) {
                Ok(0) => *open = false,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => *open = false,
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(2000));
    }
    // Not before the server's patience ran out: they were closed for dribbling.
    assert!(
        opened.elapsed() >= Duration::from_secs(9),
        "{:?}",
        opened.elapsed()
    );
    let (status, body) = http_get(port, "/metrics").expect("the metrics answer");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("memcity_heap_live_bytes"), "{body}");
}
