//! How a session met an OutOfMemoryError: seen by the agent, or inferred where the JVM exits
//! before any agent hears of it; and the report's first line about it.

use std::fmt::Write as _;

use serde::Serialize;

use super::SuspectJson;
use memcity_city::model::CityModel;

/// How the session met an OutOfMemoryError (see `out_of_memory`).
#[derive(Debug, Clone, Serialize)]
pub struct OutOfMemoryJson {
    /// The agent saw it (`Snapshot.out_of_memory`); false: inferred (see `reason`).
    pub seen: bool,
    /// When the allocation failed (seen), or the last snapshot's time (inferred).
    pub time_ms: u64,
    /// The JVM's words ("Java heap space", "GC overhead limit exceeded"); empty when inferred.
    pub message: String,
    pub thread: String,
    /// The path search at the error finished within `oom_wait`.
    pub search_finished: bool,
    pub heap_used_bytes: u64,
    pub heap_max_bytes: u64,
    /// Why an unseen error is inferred.
    pub reason: String,
}

/// Share of the maximum heap past which a JVM that exits without shutting down most likely ran
/// out of it.
const LIKELY_OOM_SHARE: f64 = 0.9;

/// The OutOfMemoryError of a session: the agent's own snapshot of it, or, where HotSpot exits
/// before any agent hears of it (`-XX:+ExitOnOutOfMemoryError`, `CrashOnOutOfMemoryError`), the
/// likely one: no VMDeath, and the last snapshot's heap nearly full.
pub(super) fn out_of_memory(session: &CityModel) -> Option<OutOfMemoryJson> {
    if let Some((index, oom)) = session.out_of_memory() {
        let frame = &session.frames()[index];
        let heap = frame.heap.unwrap_or_default();
        return Some(OutOfMemoryJson {
            seen: true,
            time_ms: oom.time_ms,
            message: oom.message.clone(),
            thread: oom.thread.clone(),
            search_finished: oom.search_finished,
            heap_used_bytes: heap.used_bytes,
            heap_max_bytes: heap.max_bytes,
            reason: String::new(),
        });
    }
    let shut_down = session.end.as_ref().is_some_and(|e| e.reason != "exit");
    let command_line = session
        .handshake
        .as_ref()
        .map_or("", |h| h.command_line.as_str());
    let flag = ["ExitOnOutOfMemoryError", "CrashOnOutOfMemoryError"]
        .into_iter()
        .find(|f| command_line.contains(&format!("-XX:+{f}")))?;
    let last = session.frames().last()?;
    let heap = last.heap?;
    let full =
        heap.max_bytes > 0 && heap.used_bytes as f64 >= LIKELY_OOM_SHARE * heap.max_bytes as f64;
    (!shut_down && full).then(|| OutOfMemoryJson {
        seen: false,
        time_ms: last.time_ms,
        message: String::new(),
        thread: String::new(),
        search_finished: false,
        heap_used_bytes: heap.used_bytes,
        heap_max_bytes: heap.max_bytes,
        reason: format!(
            "the session ends without the JVM's shutdown, the heap {:.0} % full at the last snapshot, and -XX:+{flag} ends the JVM before an agent can hear of the error",
            100.0 * heap.used_bytes as f64 / heap.max_bytes as f64
        ),
    })
}

/// The report's first line when the heap ran out: the error and who held the heap.
pub(super) fn render_out_of_memory(
    out: &mut String,
    oom: &OutOfMemoryJson,
    suspects: &[SuspectJson],
    retainers: &[super::RetainerJson],
) {
    // A heap dump at the error names no growth: what keeps most of it alive is the holder.
    let retainer = retainers
        .iter()
        .find(|r| !r.holder.is_empty() && !r.root.is_empty());
    let held = match (suspects.iter().find(|s| !s.holder.is_empty()), retainer) {
        (Some(s), _) => format!("held by {} ({})", s.holder, s.root),
        (None, Some(r)) => format!(
            "held by {} ({}), which keeps {:.0} % of the reachable heap",
            r.holder,
            r.root,
            r.share * 100.0
        ),
        (None, None) => "no holder named (see the suspects below)".to_string(),
    };
    if oom.seen {
        let _ = writeln!(
            out,
            "OutOfMemoryError ({}) at {:.1} s in thread \"{}\": {held}",
            oom.message,
            oom.time_ms as f64 / 1000.0,
            oom.thread
        );
        if !oom.search_finished {
            let _ = writeln!(
                out,
                "   (the path search at the error did not finish within oom_wait: the holder rests on the paths found by then)"
            );
        }
    } else {
        let _ = writeln!(
            out,
            "OutOfMemoryError, most likely, after {:.1} s: {held}",
            oom.time_ms as f64 / 1000.0
        );
        let _ = writeln!(out, "   ({})", oom.reason);
    }
    let _ = writeln!(out);
}
