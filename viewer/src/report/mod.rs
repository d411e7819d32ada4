//! `memcity report`: the leak suspects, then which groups grew over the window.
//!
//! [`build`] gathers a [`Report`] from a session: its groups ranked by growth (`groups.rs`),
//! its leak suspects (`suspects.rs`), how it met an OutOfMemoryError (`oom.rs`) and the window
//! it measures over (`window.rs`). Scripts read it as JSON; [`render_text`] (`text.rs`) writes
//! it as a table for people.

mod dumps;
mod groups;
mod oom;
mod suspects;
mod text;
mod window;

use serde::Serialize;

use memcity_city::leak::suspects::suspects;
use memcity_city::leak::Suspect;
use memcity_city::model::{CityModel, Reference};

pub use dumps::{ContentJson, DumpJson, RetainerJson};
pub use groups::{GroupGrowth, UnreachableJson};
pub use oom::OutOfMemoryJson;
pub use suspects::{EvidenceJson, HeldJson, SiteJson, StepJson, SuspectJson};
pub use text::render_text;
pub use window::{snapshot_at, At, WindowJson};

#[derive(Debug, Clone, Serialize)]
pub struct ReferenceJson {
    pub from: String,
    pub to: String,
    pub referrers: u64,
    pub references: u64,
}

impl From<Reference> for ReferenceJson {
    fn from(r: Reference) -> Self {
        Self {
            from: r.from,
            to: r.to,
            referrers: r.referrers,
            references: r.references,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub snapshots: usize,
    /// Snapshots from heap walks (exact type totals).
    pub exact_snapshots: usize,
    /// Snapshots estimated from allocation samples at GCs.
    pub estimated_snapshots: usize,
    /// Whether the last snapshot is an estimate, and if so, the exact snapshot it is
    /// reconciled with (whose references it carries).
    pub last_estimated: bool,
    /// The agent's sequence number of that walk's snapshot.
    pub last_anchor_seq: Option<u64>,
    /// That walk's snapshot as the viewer's status bar and `--at` number it (from 1); `None`
    /// when it is not in this session's history (or there is none).
    pub last_anchor: Option<usize>,
    pub duration_ms: u64,
    pub classifiers: Vec<String>,
    pub jvm: String,
    pub gc: String,
    pub pid: u32,
    /// Leaf groups, strongest growers first.
    pub groups: Vec<GroupGrowth>,
    /// References of the last snapshot, most references first.
    pub references: Vec<ReferenceJson>,
    /// Stopped time of all walks as a fraction of wall time, at the last snapshot.
    pub overhead: f64,
    /// Time the application's threads spent in the sampling callback, as a fraction of one
    /// core's wall time, at the last snapshot.
    pub sampling_overhead: f64,
    pub warnings: Vec<String>,
    /// The window growth is measured over: snapshot indices (0 is the first; the text and the
    /// viewer number them from 1) and their times.
    pub window: WindowJson,
    /// Leak suspects: from the GC root down to the growing group (see `memcity_city::leak`),
    /// those with a holder or a rise the numbers back (`Suspect::is_backed`).
    pub suspects: Vec<SuspectJson>,
    /// Types that rose only within the estimates' doubt and no search explained: rising, not
    /// yet explained, not leaks.
    pub rising: Vec<SuspectJson>,
    /// Heap walks in the window, which suspects are traced from (none: no suspect can be named).
    pub walks_in_window: usize,
    /// The Java heap ran out: seen by the agent, or inferred from how the session ended.
    pub out_of_memory: Option<OutOfMemoryJson>,
    /// Two recordings compared (`report A B`): suspects are what rose from one to the other
    /// beyond its doubt, not steady trends, which two snapshots cannot show.
    pub compared: bool,
    /// Where the last snapshot is an estimate and some of its groups had no allocation sample
    /// since their walk (shown at the walk's counts, with no error): how many bytes those
    /// groups may together have grown by unseen, at 95 %. Sampling is memoryless in bytes, so
    /// allocations of `b` bytes go unsampled with chance `exp(-b / interval)`: below 5 % past
    /// three intervals (the rule of three), however the bytes spread over types.
    pub unsampled_bound_bytes: Option<u64>,
    /// Allocation samples the agent did not follow (generational ZGC: those of types that
    /// reference more, `Cost.unheld_samples`). Then the groups at their walk's count had
    /// samples since, whose fates are unknown: no bound on their growth holds.
    #[serde(skip_serializing_if = "is_zero")]
    pub unfollowed_samples: u64,
    /// The heap dumps of the window, when the session was read from dumps.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dumps: Vec<DumpJson>,
    /// What keeps most of the last dump alive (empty for sessions from an agent).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retainers: Vec<RetainerJson>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("the recording holds no snapshot: it was stopped before the agent's first walk")]
    NoSnapshots,
    /// No snapshot could be read from a damaged file: what the reader found instead.
    #[error("no snapshot could be read: {0}")]
    Damaged(String),
}

/// Ranks every leaf group of the session by growth over its window (by default everything after
/// the VM-start snapshot; see `CityModel::window`), and names the leak suspects.
pub fn build(session: &CityModel, top: usize) -> Result<Report, ReportError> {
    if session.frames().is_empty() {
        return Err(if session.warnings.is_empty() {
            ReportError::NoSnapshots
        } else {
            ReportError::Damaged(session.warnings.join("; "))
        });
    }
    let window = session.window();
    let groups = groups::ranked(session, top);
    let first_snap = &session.frames()[window.start];
    let last_snap = &session.frames()[window.end];
    let handshake = session.handshake.clone().unwrap_or_default();
    // Shares of the wall time so far, at the last snapshot.
    let share_of_wall = |ns: fn(&memcity_proto::v1::WalkCost) -> u64| {
        last_snap
            .cost
            .as_ref()
            .filter(|c| c.wall_ns > 0)
            .map_or(0.0, |c| ns(c) as f64 / c.wall_ns as f64)
    };
    let overhead = share_of_wall(|c| c.total_pause_ns);
    let sampling_overhead = share_of_wall(|c| c.sampling_ns);
    let estimated_snapshots = session.frames().iter().filter(|f| f.is_estimated()).count();
    let (backed, rising): (Vec<Suspect>, Vec<Suspect>) =
        suspects(session).into_iter().partition(Suspect::is_backed);
    let unfollowed_samples = last_snap.cost.as_ref().map_or(0, |c| c.unheld_samples);
    let unsampled_bound_bytes = groups::unsampled_bound(session, &groups, unfollowed_samples);
    Ok(Report {
        snapshots: session.len(),
        exact_snapshots: session.len() - estimated_snapshots,
        estimated_snapshots,
        last_estimated: last_snap.is_estimated(),
        last_anchor_seq: last_snap
            .exactness
            .as_ref()
            .filter(|e| last_snap.is_estimated() && e.anchored)
            .map(|e| e.anchor_seq),
        last_anchor: last_anchor(session),
        duration_ms: last_snap.time_ms.saturating_sub(first_snap.time_ms),
        classifiers: if session.classifiers().is_empty() {
            session.level_roles()
        } else {
            session.classifiers().to_vec()
        },
        jvm: format!("{} {}", handshake.jvm_name, handshake.jvm_version)
            .trim()
            .to_string(),
        gc: handshake.gc_name,
        pid: handshake.pid,
        groups,
        references: last_snap
            .references
            .iter()
            .cloned()
            .map(ReferenceJson::from)
            .collect(),
        overhead,
        sampling_overhead,
        warnings: warnings(session, unfollowed_samples),
        window: WindowJson {
            from: window.start,
            to: window.end,
            from_ms: first_snap.time_ms,
            to_ms: last_snap.time_ms,
        },
        suspects: backed
            .into_iter()
            .map(|s| dumps::checked_in_dumps(session, window.start, window.end, s.into()))
            .collect(),
        rising: rising.into_iter().map(SuspectJson::from).collect(),
        walks_in_window: memcity_city::leak::suspects::walks_in_window(session),
        out_of_memory: oom::out_of_memory(session),
        compared: session.is_comparison(),
        unsampled_bound_bytes,
        unfollowed_samples,
        dumps: dumps::dumps(session, window.start, window.end),
        retainers: dumps::retainers(session, window.start, window.end),
    })
}

/// `Report::last_anchor`: the walk the session's last snapshot is reconciled with, numbered
/// from 1, when it is in the session's history.
fn last_anchor(session: &CityModel) -> Option<usize> {
    match memcity_city::timeline::basis(session, session.len() - 1) {
        Some(memcity_city::timeline::Basis::Estimate(
            memcity_city::timeline::Anchor::Snapshot(index),
        )) => Some(index + 1),
        _ => None,
    }
}

/// The session's warnings, and what `unfollowed_samples` samples the agent did not follow mean
/// for the rows.
fn warnings(session: &CityModel, unfollowed_samples: u64) -> Vec<String> {
    let mut warnings = session.warnings.clone();
    if unfollowed_samples > 0 {
        warnings.push(format!(
            "{unfollowed_samples} allocation samples were not followed: this collector (generational ZGC) keeps what a weak reference holds until a major collection, so the agent follows only sampled objects that reference nothing more there (arrays of primitives, strings, boxes, objects without reference fields), within a bound; the other types stand at their last walk's count between walks"
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_proto::v1::{stream_message::Kind, Node, Snapshot, StreamMessage, StringTable};

    pub(super) fn session() -> CityModel {
        let mut s = CityModel::new();
        s.apply(&StreamMessage {
            kind: Some(Kind::Strings(StringTable {
                sites: Vec::new(),
                first_id: 1,
                names: ["p", "A", "B", "C"].map(String::from).to_vec(),
            })),
        })
        .unwrap();
        let leaf = |name, objects| Node {
            name,
            objects,
            bytes: objects * 16,
            estimated: false,
            children: vec![],
            ..Default::default()
        };
        for (seq, (a, b, c)) in [(10, 50, 0), (1000, 40, 5)].into_iter().enumerate() {
            let mut children = vec![leaf(2, a), leaf(3, b)];
            if c > 0 {
                children.push(leaf(4, c));
            }
            s.apply(&StreamMessage {
                kind: Some(Kind::Snapshot(Snapshot {
                    seq: seq as u64,
                    time_ms: seq as u64 * 1500,
                    root: Some(Node {
                        name: 0,
                        objects: a + b + c,
                        bytes: 0,
                        estimated: false,
                        children: vec![Node {
                            name: 1,
                            objects: a + b + c,
                            bytes: 0,
                            estimated: false,
                            children,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                    ..Default::default()
                })),
            })
            .unwrap();
        }
        s
    }

    #[test]
    fn empty_session_is_an_error() {
        assert!(matches!(
            build(&CityModel::new(), 5),
            Err(ReportError::NoSnapshots)
        ));
    }
}
