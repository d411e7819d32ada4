//! Pushes the live heap to a continuous profiler (`pyroscope=URL`): every `pyroscope_every`,
//! the latest snapshot as a pprof profile (`inuse_objects`, `inuse_space` by allocation stack,
//! what `memcity export --pprof` writes) to Pyroscope's `POST /ingest?format=pprof`, named by
//! the service and labelled with the JVM's pid. Pyroscope has no in-use heap for Java; this is
//! memcity's, estimated at every GC, with its errors in the profile's comment.
//!
//! The push runs on the agent's server thread, never on an application thread: building the
//! profile takes the metrics' model for a moment, the request goes out asynchronously with a
//! time limit, and a failed push is said once and retried at the next interval.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::log::{info, warning};
use crate::ports::metrics::Shared;
use memcity_proto::options::PushUrl;

/// Longest a push may take, connection included: a slow server must not pile pushes up.
const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Pyroscope's application name with labels, `service{pid=123}`: its name syntax reserves
/// `{`, `}`, `,` and `=`, so they become `_` in what memcity puts there.
pub fn application_name(service: &str, pid: u32) -> String {
    let clean: String = service
        .chars()
        .map(|c| if "{},= ".contains(c) { '_' } else { c })
        .collect();
    format!("{clean}{{pid={pid}}}")
}

/// The ingest request's path and query for a profile of `from..until` (Unix seconds).
pub fn ingest_path(target: &PushUrl, name: &str, from: u64, until: u64) -> String {
    format!(
        "{}/ingest?name={}&from={from}&until={until}&format=pprof&spyName=memcity",
        target.prefix,
        percent_encode(name)
    )
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How Pyroscope should read the profile's two sample types: live heap sizes are averaged
/// over time, not summed, and not scaled by a sampling rate (memcity already scaled them).
pub const SAMPLE_TYPE_CONFIG: &str = r#"{"inuse_objects":{"units":"objects","aggregation":"average","display-name":"inuse_objects","sampled":false},"inuse_space":{"units":"bytes","aggregation":"average","display-name":"inuse_space","sampled":false}}"#;

/// The request body: the gzipped profile in the form field `profile` and the sample types'
/// configuration in `sample_type_config`, as Pyroscope's ingest takes a pprof with its own
/// types.
pub fn multipart(boundary: &str, profile: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(profile.len() + 1024);
    let mut part = |name: &str, file: &str, content_type: &str, data: &[u8]| {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    };
    part(
        "profile",
        "profile.pb.gz",
        "application/octet-stream",
        profile,
    );
    part(
        "sample_type_config",
        "sample_type_config.json",
        "application/json",
        SAMPLE_TYPE_CONFIG.as_bytes(),
    );
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

/// Why a push got no answer.
#[derive(Debug, thiserror::Error)]
enum PushError {
    #[error("cannot connect to {host}:{port}: {source}")]
    Connect {
        host: String,
        port: u16,
        source: std::io::Error,
    },
    #[error("sending: {0}")]
    Send(std::io::Error),
    #[error("reading the answer: {0}")]
    Read(std::io::Error),
    #[error("not an HTTP answer: {0:?}")]
    NotHttp(String),
    #[error("no answer within {0:?}")]
    NoAnswer(Duration),
}

/// POSTs `body` and returns the response's status, or why there is none within `limit`.
async fn post(
    target: &PushUrl,
    path: &str,
    boundary: &str,
    body: &[u8],
    limit: Duration,
) -> Result<u16, PushError> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|source| PushError::Connect {
                host: target.host.clone(),
                port: target.port,
                source,
            })?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: memcity/{}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            target.authority(),
            env!("CARGO_PKG_VERSION"),
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(PushError::Send)?;
        stream.write_all(body).await.map_err(PushError::Send)?;
        // The status line is all memcity reads of the answer.
        let mut answer = Vec::new();
        let mut buf = [0u8; 1024];
        while !answer.contains(&b'\n') && answer.len() < 4096 {
            let n = stream.read(&mut buf).await.map_err(PushError::Read)?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
        let line = String::from_utf8_lossy(&answer);
        line.split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| PushError::NotHttp(line.lines().next().unwrap_or("").to_string()))
    };
    tokio::time::timeout(limit, exchange)
        .await
        .map_err(|_| PushError::NoAnswer(limit))?
}

/// Pushes every `every` until the runtime stops.
pub async fn run(target: PushUrl, every: Duration, service: String, shared: Arc<Shared>) {
    info!("pushing the live heap to Pyroscope at {target} every {every:?}");
    let name = application_name(&service, std::process::id());
    let boundary = format!("memcity-{:016x}", std::process::id() as u64 * 0x9e37_79b9);
    let mut last_pushed = None;
    let mut failing = false;
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let shared_for_build = shared.clone();
        // The profile is made under the model's lock, and encoded after it.
        let built = tokio::task::spawn_blocking(move || {
            let latest =
                crate::ports::metrics::lock(&shared_for_build).latest_profile(last_pushed)?;
            let gzipped = memcity_city::pprof::encode_gzipped(&latest.profile);
            Some((latest.seq, latest.unix_ms, gzipped))
        })
        .await;
        let Ok(Some((seq, unix_ms, gzipped))) = built else {
            continue;
        };
        let until = unix_ms.div_ceil(1000).max(1);
        let from = until.saturating_sub(every.as_secs().max(1));
        let path = ingest_path(&target, &name, from, until);
        let body = multipart(&boundary, &gzipped);
        match post(&target, &path, &boundary, &body, PUSH_TIMEOUT).await {
            Ok(status) if (200..300).contains(&status) => {
                if failing {
                    info!("Pyroscope takes the pushes again");
                }
                failing = false;
                last_pushed = Some(seq);
            }
            outcome => {
                if !failing {
                    let why = match outcome {
                        Ok(status) => format!("it answered HTTP {status}"),
                        Err(e) => e.to_string(),
                    };
                    warning!(
                        "cannot push the live heap to Pyroscope at {target}: {why}; retrying every {every:?}, said once"
                    );
                }
                failing = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_pyroscopes_syntax() {
        assert_eq!(application_name("checkout", 42), "checkout{pid=42}");
        assert_eq!(application_name("a{b}=c,d e", 1), "a_b__c_d_e{pid=1}");
        let target = PushUrl::parse("http://p:4040/x").unwrap();
        assert_eq!(
            ingest_path(&target, "app{pid=1}", 10, 25),
            "/x/ingest?name=app%7Bpid%3D1%7D&from=10&until=25&format=pprof&spyName=memcity"
        );
    }

    #[test]
    fn a_server_that_never_answers_is_given_up_on() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            // Accepts and reads, never answers.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            tokio::spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut sink = Vec::new();
                let _ = conn.read_to_end(&mut sink).await;
            });
            let target = PushUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap();
            let outcome = post(&target, "/ingest", "B", b"x", Duration::from_millis(300)).await;
            assert_eq!(outcome.unwrap_err().to_string(), "no answer within 300ms");
            // Nobody listening: said as such.
            let closed = PushUrl::parse("http://127.0.0.1:1").unwrap();
            let outcome = post(&closed, "/ingest", "B", b"x", Duration::from_secs(5)).await;
            assert!(outcome.unwrap_err().to_string().contains("cannot connect"));
        });
    }

    #[test]
    fn the_body_is_a_form_with_the_profile_and_its_types() {
        let body = multipart("B", b"\x1f\x8bPROFILE");
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with("--B\r\nContent-Disposition: form-data; name=\"profile\""));
        assert!(text.contains("\r\n\r\n\u{1f}\u{fffd}PROFILE\r\n--B\r\n"));
        assert!(text.contains("name=\"sample_type_config\""));
        assert!(text.ends_with("--B--\r\n"));
        let config: serde_json::Value = serde_json::from_str(SAMPLE_TYPE_CONFIG).unwrap();
        assert_eq!(config["inuse_space"]["aggregation"], "average");
    }
}
