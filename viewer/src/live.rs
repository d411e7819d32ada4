//! The live source: what the viewer is fed ([`Event`]s), what a session's stream means for it
//! ([`Sessions`]), and, natively, the network thread: a named thread (`memcity-net`, its own tokio
//! runtime) subscribes to an agent and feeds the viewer through a bounded channel. The render loop
//! only ever `try_recv`s, so it never waits on the network; when it falls behind, the channel
//! fills, the thread waits, and the agent (which never waits for viewers) drops snapshots for this
//! viewer and says so in a notice. In the browser the page's socket feeds the same events
//! (`bin/memcity-web.rs`).

use std::time::Duration;

use memcity_city::model::CityModel;
use memcity_proto::v1::{stream_message::Kind, StreamMessage};
use memcity_proto::{version_mismatch_hint, Peer};

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
    /// A whole session opened at once (the page's recording, a file dropped on it): it replaces
    /// the city, which is then replayed.
    Open(Box<CityModel>),
    /// A file given to the page could not be opened: shown, and the city stays as it was.
    Refused(String),
    /// The next snapshot message reached this process now (the window's network thread says so,
    /// to time a snapshot from its arrival to the frame that first shows it).
    Arrived(std::time::Instant),
}

/// What a session's stream means for the viewer, wherever it comes from (the network thread,
/// the page's socket): a handshake of another JVM, or of the same JVM started again, begins a
/// new session; the end ends it.
#[derive(Debug, Default)]
pub struct Sessions {
    /// The current session's JVM: its pid and start time.
    current: Option<(u32, u64)>,
}

impl Sessions {
    /// The events `message` makes, in order. After a [`Status::Failed`] (another protocol
    /// version) or [`Status::Ended`] the stream cannot go on.
    pub fn events(&mut self, message: StreamMessage) -> Vec<Event> {
        let mut events = Vec::with_capacity(2);
        if let Some(Kind::Handshake(h)) = &message.kind {
            if let Some(hint) = version_mismatch_hint(Peer::Agent {
                protocol: h.protocol_version,
                version: &h.agent_version,
            }) {
                events.push(Event::Status(Status::Failed(hint)));
                return events;
            }
            let id = (h.pid, h.start_time_unix_ms);
            if self.current != Some(id) {
                self.current = Some(id);
                events.push(Event::Session);
            }
            events.push(Event::Status(Status::Live));
        }
        let end = match &message.kind {
            Some(Kind::End(e)) => Some(e.reason.clone()),
            _ => None,
        };
        events.push(Event::Message(Box::new(message)));
        if let Some(reason) = end {
            events.push(Event::Status(Status::Ended(reason)));
        }
        events
    }
}

/// Whether the stream stops after `event`.
pub fn ends_stream(event: &Event) -> bool {
    matches!(
        event,
        Event::Status(Status::Failed(_)) | Event::Status(Status::Ended(_))
    )
}

#[cfg(not(target_arch = "wasm32"))]
pub use net::{spawn, CHANNEL};

#[cfg(not(target_arch = "wasm32"))]
mod net {
    use std::path::PathBuf;
    use std::time::Duration;

    use crossbeam_channel::{Receiver, Sender};
    use memcity_proto::recording::RecordingWriter;
    use memcity_proto::v1::{stream_message::Kind, SubscribeRequest};
    use memcity_proto::PROTOCOL_VERSION;

    use super::{ends_stream, Event, Sessions, Status};
    use crate::client;

    /// Messages the render loop may lag behind by before the network thread waits.
    pub const CHANNEL: usize = 256;
    /// Reconnect backoff: first wait, and the longest.
    const BACKOFF_START: Duration = Duration::from_millis(500);
    const BACKOFF_MAX: Duration = Duration::from_secs(5);

    /// Starts the network thread.
    pub fn spawn(
        addr: Option<String>,
        record: Option<PathBuf>,
    ) -> std::io::Result<Receiver<Event>> {
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
        let mut sessions = Sessions::default();
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
                .map_err(|s| client::failure(&s))?
                .into_inner();
            loop {
                let message = match stream.message().await {
                    Ok(Some(m)) => m,
                    Ok(None) => return Err("the agent closed the stream".to_string()),
                    Err(s) => return Err(s.message().to_string()),
                };
                let handshake = match &message.kind {
                    Some(Kind::Handshake(h)) => Some(h.clone()),
                    _ => None,
                };
                for event in sessions.events(message) {
                    match &event {
                        Event::Session => {
                            if let (Some(path), Some(h)) = (&record, &handshake) {
                                let header = memcity_proto::recording::header(h, "view");
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
                        Event::Status(Status::Live) => backoff = BACKOFF_START,
                        Event::Message(message) if handshake.is_none() => {
                            if let Some(w) = recorder.as_mut() {
                                if let Err(e) = w.write(message) {
                                    recorder = None;
                                    send(Event::RecordingFailed(format!(
                                        "recording stopped: {e}; what was written before is readable"
                                    )));
                                }
                            }
                        }
                        _ => {}
                    }
                    if matches!(&event, Event::Message(m) if matches!(m.kind, Some(Kind::Snapshot(_))))
                        && !send(Event::Arrived(std::time::Instant::now()))
                    {
                        return Ok(true);
                    }
                    let last = ends_stream(&event);
                    if !send(event) || last {
                        return Ok(true);
                    }
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
}
