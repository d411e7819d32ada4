//! `memcity record`: a live session written to a recording, in the agent's own format.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use memcity_proto::capped::CappedWriter;
use memcity_proto::v1::{
    stream_message::Kind, Handshake, Snapshot, StreamMessage, SubscribeRequest,
};
use memcity_proto::{version_mismatch_hint, Peer, PROTOCOL_VERSION};

use crate::client;
use crate::units;

#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub addr: Option<String>,
    pub output: PathBuf,
    pub snapshots: Option<u64>,
    pub duration: Option<Duration>,
    pub connect_wait: Duration,
    /// Show a progress line (on a terminal).
    pub progress: bool,
    /// Keep the file under this many bytes (`memcity_proto::capped`).
    pub max_size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// `--snapshots` reached.
    Count,
    /// `--duration` passed.
    Duration,
    /// The agent said the session ended (the JVM exited).
    SessionEnd(String),
    /// The connection broke without a goodbye (the JVM was killed).
    Disconnected(String),
    /// Ctrl-C.
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub snapshots: u64,
    pub bytes: u64,
    /// Older snapshots left out to keep under `--max-size`.
    pub thinned: u64,
    pub ended: Ended,
}

/// Records the session of the agent `options` name until it ends or `options` say stop, and
/// says how it went.
pub async fn record(options: RecordOptions) -> anyhow::Result<Summary> {
    let (mut stream, handshake) = subscribe(&options).await?;
    let header = memcity_proto::recording::header(&handshake, "record");
    let max = options.max_size.unwrap_or(u64::MAX);
    let mut writer = CappedWriter::create(&options.output, &header, max)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", options.output.display()))?;
    let progress = options.progress && std::io::stderr().is_terminal();
    let (ended, snapshots) = write_until_end(&mut stream, &mut writer, &options, progress).await?;
    if progress {
        eprintln!();
    }
    end(&mut writer, &ended, snapshots, &options)?;
    let bytes = writer.bytes();
    let thinned = writer.thinned();
    writer
        .finish()
        .map_err(|e| anyhow::anyhow!("cannot finish {}: {e}", options.output.display()))?;
    Ok(Summary {
        snapshots,
        bytes,
        thinned,
        ended,
    })
}

/// The agent's stream, subscribed to, and its handshake, checked for a protocol this
/// recorder speaks.
async fn subscribe(
    options: &RecordOptions,
) -> anyhow::Result<(tonic::Streaming<StreamMessage>, Handshake)> {
    let mut client = client::connect(options.addr.as_deref(), options.connect_wait)
        .await
        .map_err(anyhow::Error::msg)?;
    let mut stream = client
        .subscribe(SubscribeRequest {
            protocol_version: PROTOCOL_VERSION,
            client: format!("memcity record {}", env!("CARGO_PKG_VERSION")),
        })
        .await
        .map_err(|s| {
            anyhow::anyhow!(
                "the agent refused the subscription: {}",
                crate::client::failure(&s)
            )
        })?
        .into_inner();
    let handshake = match stream.message().await {
        Ok(Some(message)) => match message.kind {
            Some(Kind::Handshake(h)) => h,
            _ => {
                anyhow::bail!("the agent did not start with a handshake: is this a memcity agent?")
            }
        },
        Ok(None) => anyhow::bail!("the agent closed the stream before its handshake"),
        Err(s) => anyhow::bail!("the stream failed before its handshake: {}", s.message()),
    };
    if let Some(hint) = version_mismatch_hint(Peer::Agent {
        protocol: handshake.protocol_version,
        version: &handshake.agent_version,
    }) {
        anyhow::bail!(hint);
    }
    Ok((stream, handshake))
}

/// Writes what `stream` brings to `writer` until the session ends, the connection breaks, a
/// limit of `options` is reached or Ctrl-C; why it stopped, and the snapshots written.
async fn write_until_end(
    stream: &mut tonic::Streaming<StreamMessage>,
    writer: &mut CappedWriter,
    options: &RecordOptions,
    progress: bool,
) -> anyhow::Result<(Ended, u64)> {
    let start = Instant::now();
    let deadline = options.duration.map(|d| tokio::time::Instant::now() + d);
    let mut snapshots = 0u64;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let ended = loop {
        let next = async {
            match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, stream.message())
                    .await
                    .ok(),
                None => Some(stream.message().await),
            }
        };
        let message = tokio::select! {
            m = next => m,
            _ = &mut ctrl_c => break Ended::Interrupted,
        };
        let message = match message {
            None => break Ended::Duration,
            Some(Ok(Some(message))) => message,
            Some(Ok(None)) => break Ended::Disconnected("the agent closed the stream".into()),
            Some(Err(status)) => break Ended::Disconnected(status.message().to_string()),
        };
        let end = match &message.kind {
            Some(Kind::End(end)) => Some(end.reason.clone()),
            _ => None,
        };
        if let Err(e) = writer.write(&message) {
            anyhow::bail!(
                "cannot write {}: {e}; the {snapshots} snapshot(s) written before are readable",
                options.output.display()
            );
        }
        if let Some(trouble) = writer.take_trouble() {
            if progress {
                eprintln!();
            }
            eprintln!("memcity: warning: {trouble}");
        }
        if let Some(Kind::Snapshot(s)) = &message.kind {
            snapshots += 1;
            if progress {
                show_progress(s, snapshots, writer, options, start);
            }
            if options.snapshots.is_some_and(|n| snapshots >= n) {
                break Ended::Count;
            }
        }
        if let Some(reason) = end {
            break Ended::SessionEnd(reason);
        }
    };
    Ok((ended, snapshots))
}

/// The progress line, rewritten in place at each snapshot `s`.
fn show_progress(
    s: &Snapshot,
    snapshots: u64,
    writer: &CappedWriter,
    options: &RecordOptions,
    start: Instant,
) {
    let objects = s.root.as_ref().map_or(0, |r| r.objects);
    let pause = s.cost.as_ref().map_or(0, |c| c.pause_ns) / 1_000_000;
    eprint!(
        "\r\x1b[Krecording {}: {snapshots} snapshots, {}, {:.0} s; heap {} objects, last walk {pause} ms",
        options.output.display(),
        units::bytes(writer.bytes()),
        start.elapsed().as_secs_f64(),
        units::count(objects),
    );
}

/// The file says why it ends, so a reader can tell a finished recording from one whose
/// recorder was killed (which has no end): the agent's own end is already in it, any other
/// (`ended` after `snapshots`) is written here.
fn end(
    writer: &mut CappedWriter,
    ended: &Ended,
    snapshots: u64,
    options: &RecordOptions,
) -> anyhow::Result<()> {
    let reason = match ended {
        Ended::SessionEnd(_) => None,
        Ended::Count => Some(format!(
            "recording stopped after {snapshots} snapshots (--snapshots)"
        )),
        Ended::Duration => Some("recording stopped at its --duration".to_string()),
        Ended::Disconnected(why) => Some(format!("the agent went away: {why}")),
        Ended::Interrupted => Some("recording interrupted (Ctrl-C)".to_string()),
    };
    if let Some(reason) = reason {
        let end = memcity_proto::v1::StreamMessage {
            kind: Some(Kind::End(memcity_proto::v1::SessionEnd {
                reason,
                snapshots,
            })),
        };
        writer
            .write(&end)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", options.output.display()))?;
    }
    Ok(())
}
