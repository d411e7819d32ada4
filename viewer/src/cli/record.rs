//! `memcity record`: a live agent's session written to a recording.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use memcity_viewer::record::{self, Ended, RecordOptions};
use memcity_viewer::units;

use super::agent::Agent;
use super::runtime;
use super::values::seconds;

#[derive(clap::Args)]
pub struct RecordArgs {
    #[command(flatten)]
    agent: Agent,
    /// Recording file to write (conventionally *.mcrec)
    #[arg(short, long)]
    output: PathBuf,
    /// Stop after this many snapshots (a late join counts the history it receives)
    #[arg(long)]
    snapshots: Option<u64>,
    /// Stop after this many seconds
    #[arg(long, value_parser = seconds)]
    duration: Option<Duration>,
    /// Keep trying to connect for this many seconds (the JVM may still be starting)
    #[arg(long, default_value = "10", value_parser = seconds)]
    wait: Duration,
    /// Keep the file under this size (`512m`, `2g`; at least 1m), to record for days: past
    /// it, about half of the older snapshots go, evenly in time (walks and snapshots with
    /// object paths first); the first snapshot and the newest stay, and the report says how
    /// many went
    #[arg(long, value_parser = memcity_proto::options::parse_max_size)]
    max_size: Option<u64>,
}

pub fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let options = RecordOptions {
        addr: args.agent.address()?,
        output: args.output.clone(),
        snapshots: args.snapshots,
        duration: args.duration,
        connect_wait: args.wait,
        progress: true,
        max_size: args.max_size,
    };
    let summary = runtime()?.block_on(record::record(options))?;
    eprintln!(
        "memcity: wrote {} snapshots ({}) to {}: {}",
        summary.snapshots,
        units::bytes(summary.bytes),
        args.output.display(),
        why_ended(&summary.ended)
    );
    if summary.thinned > 0 {
        eprintln!(
            "memcity: {} older snapshots of them were thinned out to stay under --max-size ({}); the first and the newest are whole",
            summary.thinned,
            units::bytes(args.max_size.unwrap_or_default())
        );
    }
    if summary.snapshots == 0 {
        anyhow::bail!("no snapshot was received, so the recording holds only its header");
    }
    Ok(ExitCode::SUCCESS)
}

/// Why a recording stopped, as the summary line says it.
fn why_ended(ended: &Ended) -> String {
    match ended {
        Ended::Count => "snapshot count reached".to_string(),
        Ended::Duration => "duration reached".to_string(),
        Ended::SessionEnd(reason) => format!("the session ended ({reason})"),
        Ended::Disconnected(why) => format!("the agent went away ({why}); the JVM probably exited"),
        Ended::Interrupted => "interrupted".to_string(),
    }
}
