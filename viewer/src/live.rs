//! The live source: a named network thread (`memcity-net`, its own tokio runtime) subscribes to
//! an agent and feeds the viewer through a bounded channel. The render loop only ever
//! `try_recv`s, so it never waits on the network; when it falls behind, the channel fills, the
//! thread waits, and the agent (which never waits for viewers) drops snapshots for this viewer and
//! says so in a notice.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, Sender};
use memcity_proto::recording::RecordingWriter;
use memcity_proto::v1::{stream_message::Kind, RecordingHeader, StreamMessage, SubscribeRequest};
use memcity_proto::{version_mismatch_hint, PROTOCOL_VERSION};

use crate::client;

/// Messages the render loop may lag behind by before the network thread waits.
pub const CHANNEL: usize = 256;
/// Reconnect backoff: first wait, and the longest.
const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Connecting,
    Live,
    /// Lost the agent; retrying in this long.
    Disconnected {
        retry_in: Duration,
        why: String,
    },
    /// The session is over (the JVM exited); the city stays for replay.
    Ended(String),
    /// Cannot go on (a protocol mismatch says what to upgrade).
    Failed(String),
}

#[derive(Debug, Clone)]
pub enum Event {
    Status(Status),
    /// A new session began (first connection, or the agent restarted): start a fresh city.
    Session,
    /// Boxed: a snapshot message is hundreds of bytes, the other events a few words.
    Message(Box<StreamMessage>),
    /// `--record` could not write: recording stopped, viewing goes on.
    RecordingFailed(String),
}

/// Starts the network thread.
pub fn spawn(addr: Option<String>, record: Option<PathBuf>) -> std::io::Result<Receiver<Event>> {
    let (tx, rx) = crossbeam_channel::bounded(CHANNEL);
    std::thread::Builder::new()
        .name("memcity-net".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Event::Status(Status::Failed(format!(
                        "cannot start the network runtime: {e}"
                    ))));
                    return;
                }
            };
            runtime.block_on(run(addr, record, tx));
        })?;
    Ok(rx)
}

async fn run(addr: Option<String>, record: Option<PathBuf>, tx: Sender<Event>) {
    let send = |event| tx.send(event).is_ok();
    let mut backoff = BACKOFF_START;
    let mut session_start: Option<(u32, u64)> = None;
    let mut recorder: Option<RecordingWriter<std::io::BufWriter<std::fs::File>>> = None;
    loop {
        if !send(Event::Status(Status::Connecting)) {
            return; // the window closed
        }
        let outcome = async {
            let mut client = client::connect(addr.as_deref(), Duration::from_secs(2)).await?;
            let mut stream = client
                .subscribe(SubscribeRequest {
                    protocol_version: PROTOCOL_VERSION,
                    client: format!("memcity view {}", env!("CARGO_PKG_VERSION")),
                })
                .await
                .map_err(|s| s.message().to_string())?
                .into_inner();
            loop {
                let message = match stream.message().await {
                    Ok(Some(m)) => m,
                    Ok(None) => return Err("the agent closed the stream".to_string()),
                    Err(s) => return Err(s.message().to_string()),
                };
                if let Some(Kind::Handshake(h)) = &message.kind {
                    if let Some(hint) = version_mismatch_hint(h.protocol_version) {
                        send(Event::Status(Status::Failed(hint)));
                        return Ok(true);
                    }
                    // A different pid or start time is a new session, not a continuation.
                    let id = (h.pid, h.start_time_unix_ms);
                    if session_start != Some(id) {
                        session_start = Some(id);
                        send(Event::Session);
                        if let Some(path) = &record {
                            let header = RecordingHeader {
                                handshake: Some(h.clone()),
                                writer: format!("memcity view {}", env!("CARGO_PKG_VERSION")),
                                recorded_at_unix_ms: SystemTime::now()
                                    .duration_since(UNIX_EPOCH)
                                    .map_or(0, |d| d.as_millis() as u64),
                            };
                            match RecordingWriter::create(path, &header) {
                                Ok(w) => recorder = Some(w),
                                Err(e) => {
                                    send(Event::RecordingFailed(format!(
                                        "cannot write {}: {e}",
                                        path.display()
                                    )));
                                }
                            }
                        }
                    }
                    send(Event::Status(Status::Live));
                    backoff = BACKOFF_START;
                } else if let Some(w) = recorder.as_mut() {
                    let flush =
                        matches!(message.kind, Some(Kind::Snapshot(_)) | Some(Kind::End(_)));
                    let written =
                        w.write(&message)
                            .and_then(|()| if flush { w.flush() } else { Ok(()) });
                    if let Err(e) = written {
                        recorder = None;
                        send(Event::RecordingFailed(format!(
                            "recording stopped: {e}; what was written before is readable"
                        )));
                    }
                }
                let end = match &message.kind {
                    Some(Kind::End(e)) => Some(e.reason.clone()),
                    _ => None,
                };
                if !send(Event::Message(Box::new(message))) {
                    return Ok(true);
                }
                if let Some(reason) = end {
                    send(Event::Status(Status::Ended(reason)));
                    return Ok(true);
                }
            }
        }
        .await;
        match outcome {
            Ok(true) => return,
            Ok(false) => {}
            Err(why) => {
                if !send(Event::Status(Status::Disconnected {
                    retry_in: backoff,
                    why,
                })) {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}
