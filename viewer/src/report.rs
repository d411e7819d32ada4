//! `memcity report`: the leak suspects, then which groups grew over the window.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::units::{bytes as human_bytes, count, signed_count};
use memcity_city::leak::roots::root_kind_label;
use memcity_city::leak::suspects::suspects;
use memcity_city::leak::Suspect;
use memcity_city::model::{CityModel, DeadRise, Reference};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GroupGrowth {
    /// Node names from below the root down to the leaf group.
    pub path: Vec<String>,
    pub objects_first: u64,
    pub objects_last: u64,
    pub bytes_first: u64,
    pub bytes_last: u64,
    /// Whether the leaf's numbers are estimates (site or thread levels, or an estimated first
    /// or last snapshot).
    pub estimated: bool,
    /// 95 % half-width of `objects_last` when it is an estimate (0 when exact or not given).
    pub objects_last_error: u64,
    /// The part of `objects_last` no old-generation marking has confirmed: it may be garbage
    /// promoted since the last one (0 when exact).
    pub objects_last_unconfirmed: u64,
    /// The rise that continues, what the table ranks by: the line fitted over the window, no
    /// steeper than over its later half, weighed by how well it fits (`Trend::steady`); a
    /// start-up fill that levelled off has a large growth and a `continuing` near 0.
    pub continuing: i64,
    /// A complete path search reached none of the group's type's sampled objects, or too few
    /// to make its rise: dead in the old generation (see `CityModel::dead_rise_at`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<UnreachableJson>,
}

/// What a complete path search said of a group's type: its rise is dead in the old generation
/// (`memcity_city::model::DeadRise`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum UnreachableJson {
    /// Sampled objects it looked for, and those no GC root reached.
    Sampled { unreached: u64, looked_for: u64 },
    /// Every object of the type reachable from a root, counted by the search carried at
    /// `snapshot` (numbered from 1, as the viewer's status bar numbers them), where the
    /// estimates said `estimated`.
    Counted {
        counted: u64,
        estimated: u64,
        snapshot: usize,
    },
}

impl UnreachableJson {
    fn of(dead: Option<DeadRise>) -> Option<Self> {
        dead.map(|dead| match dead {
            DeadRise::Unreached {
                unreached,
                looked_for,
            } => UnreachableJson::Sampled {
                unreached,
                looked_for,
            },
            DeadRise::Counted {
                objects,
                estimated,
                at,
            } => UnreachableJson::Counted {
                counted: objects,
                estimated,
                snapshot: at + 1,
            },
        })
    }

    /// "14 of 14 sampled objects unreachable: dead in the old generation", or, with some
    /// reached, "... the rise is dead ..."; "206,318 reachable at snapshot 19 of 6,887,582
    /// estimated, every root searched: the rise is dead ...".
    fn describe(&self) -> String {
        match *self {
            UnreachableJson::Sampled {
                unreached,
                looked_for,
            } => format!(
                "{} of {} sampled objects unreachable: {}dead in the old generation",
                count(unreached),
                count(looked_for),
                if unreached < looked_for {
                    "the rise is "
                } else {
                    ""
                }
            ),
            UnreachableJson::Counted {
                counted,
                estimated,
                snapshot,
            } => format!(
                "{} reachable at snapshot {snapshot} of {} estimated, every root searched: the rise is dead in the old generation",
                count(counted),
                count(estimated)
            ),
        }
    }
}

impl GroupGrowth {
    pub fn objects_growth(&self) -> i64 {
        memcity_city::units::growth(self.objects_first, self.objects_last)
    }

    pub fn bytes_growth(&self) -> i64 {
        memcity_city::units::growth(self.bytes_first, self.bytes_last)
    }
}

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
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

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
fn out_of_memory(session: &CityModel) -> Option<OutOfMemoryJson> {
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
fn render_out_of_memory(out: &mut String, oom: &OutOfMemoryJson, suspects: &[SuspectJson]) {
    let held = match suspects.iter().find(|s| !s.holder.is_empty()) {
        Some(s) => format!("held by {} ({})", s.holder, s.root),
        None => "no holder named (see the suspects below)".to_string(),
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

#[derive(Debug, Clone, Serialize)]
pub struct WindowJson {
    pub from: usize,
    pub to: usize,
    pub from_ms: u64,
    pub to_ms: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SuspectJson {
    pub root_kind: String,
    pub root: String,
    pub holder: String,
    pub suspect_reference: String,
    pub leaking: Vec<String>,
    pub growth: i64,
    /// What the numbers back of `growth` (less the estimates' error and what may be garbage no
    /// old-generation marking has met), and whether that is a leak's worth.
    pub backed_growth: i64,
    pub confirmed: bool,
    /// Listed among the leak suspects: a holder named, or `confirmed`.
    pub backed: bool,
    pub confidence: String,
    /// Other threads holding the same thread-local (a pool's), see `Suspect::co_holders`.
    pub co_holders: Vec<String>,
    /// Other roots that hold the holder (or an object on its path) too, see
    /// `Suspect::also_reached_from`.
    pub also_reached_from: Vec<String>,
    pub signature: String,
    /// The walk (snapshot seq) the trace comes from, and how much older than the window's end.
    pub walk_seq: u64,
    pub walk_age_ms: u64,
    pub steps: Vec<StepJson>,
    /// Where the first leaking type is allocated (when the grouping has a `site` level).
    pub sites: Vec<SiteJson>,
    /// The object-level paths the holder rests on; absent when it comes from per-type edges
    /// only (a recording without paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceJson>,
    /// The growth the holder keeps alive, summed over `holds` (what suspects are ranked by).
    pub held_objects: i64,
    pub held_bytes: i64,
    /// Per growing type (see `memcity_city::leak::Held`), most bytes first.
    pub holds: Vec<HeldJson>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct HeldJson {
    #[serde(rename = "type")]
    pub type_name: String,
    pub objects: i64,
    pub bytes: i64,
    /// The estimates' 95 % error on that rise (0 between exact snapshots).
    pub objects_error: i64,
    pub bytes_error: i64,
}

/// See `memcity_city::leak::evidence::Evidence`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvidenceJson {
    pub samples: u64,
    pub through_holder: u64,
    pub share: f64,
    pub split: String,
    pub witnessed_ms: u64,
    pub age_ms: u64,
    pub growth_since: i64,
    pub stale: bool,
    pub counted: u64,
    pub counted_through: u64,
    pub holder_identity: String,
    pub holder_in: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SiteJson {
    pub site: String,
    pub objects: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepJson {
    #[serde(rename = "type")]
    pub type_name: String,
    pub field: String,
    pub objects: u64,
    pub growth: i64,
    pub content: bool,
    pub suspect: bool,
    pub size: u64,
}

impl From<Suspect> for SuspectJson {
    fn from(s: Suspect) -> Self {
        let (held_objects, held_bytes) = s.held();
        let backed = s.is_backed();
        let root_kind = s
            .root
            .as_ref()
            .map_or_else(String::new, |r| root_kind_label(r.kind).to_string());
        let root = s.root_name().to_string();
        let evidence = s.evidence.map(|e| EvidenceJson {
            samples: e.samples,
            through_holder: e.through_holder,
            share: e.share,
            split: e.split,
            witnessed_ms: e.witnessed_ms,
            age_ms: e.age_ms,
            growth_since: e.growth_since,
            stale: e.stale,
            counted: e.counted,
            counted_through: e.counted_through,
            holder_identity: format!("{:08x}", e.holder_identity),
            holder_in: e.holder_in.name(&root),
        });
        SuspectJson {
            backed,
            held_objects,
            held_bytes,
            holds: s
                .holds
                .into_iter()
                .map(|h| HeldJson {
                    type_name: h.type_name,
                    objects: h.objects,
                    bytes: h.bytes,
                    objects_error: h.objects_error,
                    bytes_error: h.bytes_error,
                })
                .collect(),
            root_kind,
            root,
            holder: s.holder,
            suspect_reference: s.suspect_reference,
            leaking: s.leaking,
            growth: s.growth,
            backed_growth: s.backed_growth,
            confirmed: s.confirmed,
            confidence: s.confidence.label().to_string(),
            co_holders: s.co_holders,
            also_reached_from: s.also_reached_from,
            signature: s.signature.to_string(),
            walk_seq: s.walk_seq,
            walk_age_ms: s.walk_age_ms,
            evidence,
            sites: s
                .sites
                .into_iter()
                .map(|(site, objects)| SiteJson { site, objects })
                .collect(),
            steps: s
                .steps
                .into_iter()
                .map(|t| StepJson {
                    type_name: t.type_name,
                    field: t.field,
                    objects: t.objects,
                    growth: t.growth,
                    content: t.content,
                    suspect: t.suspect,
                    size: t.size,
                })
                .collect(),
        }
    }
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
    let last_index = window.end;
    let first = session.leaves(window.start);
    let last = session.leaves(last_index);
    let mut merged: BTreeMap<Vec<String>, GroupGrowth> = BTreeMap::new();
    for (leaf, is_first) in first
        .iter()
        .map(|l| (l, true))
        .chain(last.iter().map(|l| (l, false)))
    {
        let entry = merged
            .entry(leaf.path.clone())
            .or_insert_with(|| GroupGrowth {
                path: leaf.path.clone(),
                objects_first: 0,
                objects_last: 0,
                bytes_first: 0,
                bytes_last: 0,
                estimated: false,
                objects_last_error: 0,
                objects_last_unconfirmed: 0,
                continuing: 0,
                unreachable: None,
            });
        entry.estimated |= leaf.estimated;
        if is_first {
            entry.objects_first = leaf.objects;
            entry.bytes_first = leaf.bytes;
        } else {
            entry.objects_last = leaf.objects;
            entry.bytes_last = leaf.bytes;
            entry.objects_last_error = leaf.objects_error;
            entry.objects_last_unconfirmed = leaf.objects_unconfirmed;
        }
    }
    let mut groups: Vec<GroupGrowth> = merged.into_values().collect();
    // Steady growth first: the fitted rise over the window weighed by how well a line fits it
    // (the suspects' trend), so a catalog built in the first seconds and flat since does not
    // outrank the steady leak beside it. memcity's own group last: it is not the application's.
    // A rise within what the estimates leave in doubt (their errors at the trend's ends, and
    // what may be garbage at the last) ranks as none.
    // Every group's trend in one pass over the snapshots.
    let ids: Vec<Option<u32>> = groups
        .iter()
        .map(|g| {
            let names: Vec<&str> = g.path.iter().map(String::as_str).collect();
            session.find(&names)
        })
        .collect();
    let rows: Vec<&[u32]> = ids
        .iter()
        .map(|id| id.as_ref().map_or(&[][..], std::slice::from_ref))
        .collect();
    let trends = memcity_city::leak::trends::trends_of_rows(
        session,
        &rows,
        memcity_city::model::Metric::Objects,
    );
    let steady_of: Vec<f64> = trends
        .into_iter()
        .map(|trend| match trend {
            Some(trend) if !trend.within_doubt(true) => trend.steady(),
            _ => 0.0,
        })
        .collect();
    // Each group's type dead in the old generation, by the last full search (and no focused
    // one since finding it alive): its rise goes on only as garbage, and ranks as none.
    let searched = session.paths_at(last_index).is_some();
    for g in groups.iter_mut().filter(|_| searched) {
        // The type the group is of: the first level of its path that names types. Its
        // verdict is the type's, on the type's own counts (a group below it, one allocation
        // site, may rise where the type does not).
        let type_node = (1..=g.path.len()).find_map(|depth| {
            let names: Vec<&str> = g.path[..depth].iter().map(String::as_str).collect();
            session
                .find(&names)
                .filter(|&id| session.node(id).role == memcity_city::model::Role::Type)
        });
        g.unreachable = UnreachableJson::of(type_node.and_then(|id| {
            let objects = |index| session.value(id, index, memcity_city::model::Metric::Objects);
            session.dead_rise_at(window.start, window.end, &session.node(id).name, objects)
        }));
    }
    let mut keyed: Vec<(bool, f64, GroupGrowth)> = groups
        .drain(..)
        .zip(steady_of)
        .map(|(mut g, steady_of)| {
            let ours = g
                .path
                .first()
                .is_some_and(|p| p == memcity_city::model::MEMCITY);
            let steady = match g.unreachable {
                Some(_) => 0.0,
                None => steady_of,
            };
            g.continuing = steady.round() as i64;
            (ours, steady, g)
        })
        .collect();
    keyed.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(b.2.objects_growth().cmp(&a.2.objects_growth()))
            .then(a.2.path.cmp(&b.2.path))
    });
    groups = keyed.into_iter().map(|(_, _, g)| g).collect();
    groups.truncate(top);
    let first_snap = &session.frames()[window.start];
    let last_snap = &session.frames()[last_index];
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
    let unsampled_bound_bytes = unsampled_bound(session, &groups, unfollowed_samples);
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
        last_anchor: match memcity_city::timeline::basis(session, session.len() - 1) {
            Some(memcity_city::timeline::Basis::Estimate(
                memcity_city::timeline::Anchor::Snapshot(index),
            )) => Some(index + 1),
            _ => None,
        },
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
        warnings: {
            let mut warnings = session.warnings.clone();
            if unfollowed_samples > 0 {
                warnings.push(format!(
                    "{unfollowed_samples} allocation samples were not followed: this collector (generational ZGC) keeps what a weak reference holds until a major collection, so the agent follows only sampled objects that reference nothing more there (arrays of primitives, strings, boxes, objects without reference fields), within a bound; the other types stand at their last walk's count between walks"
                ));
            }
            warnings
        },
        window: WindowJson {
            from: window.start,
            to: window.end,
            from_ms: first_snap.time_ms,
            to_ms: last_snap.time_ms,
        },
        suspects: backed.into_iter().map(SuspectJson::from).collect(),
        rising: rising.into_iter().map(SuspectJson::from).collect(),
        walks_in_window: memcity_city::leak::suspects::walks_in_window(session),
        out_of_memory: out_of_memory(session),
        compared: session.is_comparison(),
        unsampled_bound_bytes,
        unfollowed_samples,
    })
}

/// Allocations this many sampling intervals long go unsampled with chance below 5 %
/// (`exp(-3)`).
const UNSAMPLED_INTERVALS: u64 = 3;

/// `Report::unsampled_bound_bytes`: three sampling intervals, when the last snapshot is an
/// estimate in which some group of objects stands at its walk's count (no error, nothing
/// unconfirmed). None when `unfollowed` samples were taken and not followed: such a group
/// may have had any number since.
fn unsampled_bound(session: &CityModel, groups: &[GroupGrowth], unfollowed: u64) -> Option<u64> {
    let last = session.frame(session.window().end)?;
    if !last.is_estimated() || unfollowed > 0 {
        return None;
    }
    let carried = groups.iter().any(|g| {
        g.estimated
            && g.objects_last > 0
            && g.objects_last_error == 0
            && g.objects_last_unconfirmed == 0
    });
    let interval = memcity_city::pprof::sampling_interval(session, session.window().end)?;
    (carried && interval > 0).then(|| interval.saturating_mul(UNSAMPLED_INTERVALS))
}

/// A point of a session as `--from`/`--to` name it: a snapshot number counted from 1 as the
/// viewer's status bar counts (`3`), or seconds since the session started (`12s`). Parsed where
/// the command line is read, so a typo fails before any file is loaded; whether the snapshot
/// exists is [`snapshot_at`]'s to say, as only the session knows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum At {
    Number(usize),
    Seconds(f64),
}

impl std::str::FromStr for At {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(seconds) = text.strip_suffix('s') {
            return seconds.trim().parse().map(At::Seconds).map_err(|_| {
                "not a time: give seconds like `12s` or a snapshot number like `3`".to_string()
            });
        }
        text.trim().parse().map(At::Number).map_err(|_| {
            "not a snapshot: give a number like `3` (the first is 1) or seconds like `12s`"
                .to_string()
        })
    }
}

/// The snapshot `at` names, as an index; for seconds, the last snapshot at or before that time.
pub fn snapshot_at(session: &CityModel, at: At) -> anyhow::Result<usize> {
    let frames = session.frames();
    let last = frames.len().saturating_sub(1);
    let number = match at {
        At::Seconds(seconds) => {
            let start = frames.first().map_or(0, |f| f.time_ms);
            let ms = start + (seconds.max(0.0) * 1000.0) as u64;
            return Ok(frames
                .partition_point(|f| f.time_ms <= ms)
                .saturating_sub(1)
                .min(last));
        }
        At::Number(number) => number,
    };
    if number == 0 || number > frames.len() {
        anyhow::bail!(
            "snapshot {number} does not exist: the recording holds snapshots 1 to {} (counted from 1, as the viewer's status bar shows)",
            frames.len()
        );
    }
    Ok(number - 1)
}

/// The first `n` types a holder keeps alive, and how many more: `byte[], java.lang.String and
/// 2 more types`.
fn held_types(holds: &[HeldJson], n: usize) -> String {
    let names: Vec<&str> = holds.iter().take(n).map(|h| h.type_name.as_str()).collect();
    match holds.len().saturating_sub(n) {
        0 => names.join(", "),
        1 => format!("{} and 1 more type", names.join(", ")),
        more => format!("{} and {more} more types", names.join(", ")),
    }
}

/// Where a session without object paths came from, for what the report says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Recording,
    /// A Memory Cities export: no handshake, and no place in the format for paths.
    Export,
}

/// Leak suspects as traces from the root down, one line per step (LeakCanary's leak trace is
/// the model): the suspect reference marked, collection internals indented as content.
fn render_suspects(
    out: &mut String,
    suspects: &[SuspectJson],
    rising: &[SuspectJson],
    compared: bool,
    source: Source,
) {
    if suspects.is_empty() {
        let doubt = if rising.is_empty() {
            ""
        } else {
            " beyond the estimates' doubt"
        };
        let _ = if compared {
            writeln!(
                out,
                "LEAK SUSPECTS: none (no type rose from one recording to the other{doubt})"
            )
        } else {
            writeln!(
                out,
                "LEAK SUSPECTS: none (no type grows steadily in this window{doubt})"
            )
        };
        render_rising(out, rising);
        let _ = writeln!(out);
        return;
    }
    if compared {
        let _ = writeln!(
            out,
            "LEAK SUSPECTS (what rose from one recording to the other: two snapshots show a rise, not whether it goes on)"
        );
    } else {
        let _ = writeln!(out, "LEAK SUSPECTS");
    }
    // Beside named leaks, a growing type no sampled path reached (a tiny per-session lock,
    // sampled too rarely) is one line at the end, not a numbered suspect of its own.
    let any_named = suspects.iter().any(|s| !s.holder.is_empty());
    let mut unseen: Vec<&SuspectJson> = Vec::new();
    let mut number = 0;
    for s in suspects {
        if s.holder.is_empty() && any_named {
            unseen.push(s);
            continue;
        }
        number += 1;
        let i = number - 1;
        if s.holder.is_empty() {
            let what = s.leaking.first().map(String::as_str).unwrap_or("?");
            let why = match &s.evidence {
                Some(e) => format!(
                    "holder not seen yet: no sampled path from a GC root reached one (the last path search ended {:.1} s before the window's end, {} of them since). The agent searches again as its `paths=` share of a core allows; a longer recording settles it.",
                    e.age_ms as f64 / 1000.0,
                    signed_count(e.growth_since),
                ),
                None if source == Source::Export => "holder unknown: a Memory Cities export carries no object paths, and per-type references cannot tell one instance of a type from another. The memcity recording it was exported from names the holder.".to_string(),
                None => "holder unknown: this recording carries no object paths (an agent from before them, or paths=off), and per-type references cannot tell one instance of a type from another. Record with the current agent to name the holder.".to_string(),
            };
            let _ = writeln!(
                out,
                "{}. {what} grows by {} objects; {why}",
                i + 1,
                signed_count(s.growth),
            );
            let _ = writeln!(out);
            continue;
        }
        // The leak is the accumulation point: what it keeps alive leads, its types follow.
        let _ = writeln!(
            out,
            "{}. {} ({}{}, confidence {}) holds a growth of {} objects, {}: {}",
            i + 1,
            s.holder,
            if s.root.is_empty() {
                "root unknown"
            } else {
                &s.root
            },
            memcity_city::leak::roots::more_threads(&s.root, s.co_holders.len()),
            s.confidence,
            signed_count(s.held_objects),
            memcity_city::units::signed_amount(s.held_bytes, memcity_city::model::Metric::Bytes),
            held_types(&s.holds, 3),
        );
        if !s.confirmed {
            let backed = if s.backed_growth > 0 {
                format!("{} of it backed", signed_count(s.backed_growth))
            } else {
                "none of it backed yet".to_string()
            };
            let _ = writeln!(
                out,
                "   unconfirmed: the rise is in estimates made since the last walk and \
                 old-generation marking ({backed}); objects promoted to the old generation and \
                 dead there rise the same way until a marking frees them. A walk (`memcity \
                 snapshot`) or a full GC settles it."
            );
        }
        let _ = writeln!(
            out,
            "   GC root: {}{}",
            if s.root.is_empty() {
                "(none found)"
            } else {
                &s.root
            },
            if s.root_kind.is_empty() {
                String::new()
            } else {
                format!(" [{}]", s.root_kind)
            }
        );
        if !s.co_holders.is_empty() {
            const NAMED: usize = 5;
            let mut names = s.co_holders[..s.co_holders.len().min(NAMED)].join(", ");
            if s.co_holders.len() > NAMED {
                let _ = write!(names, " and {} more", s.co_holders.len() - NAMED);
            }
            let n = s.co_holders.len();
            let threads = if n == 1 { "thread" } else { "threads" };
            let _ = writeln!(
                out,
                "   held the same way (a thread-local) by {n} more {threads}: {names}"
            );
        }
        if !s.also_reached_from.is_empty() {
            let _ = writeln!(
                out,
                "   also reached from: {}",
                s.also_reached_from.join("; ")
            );
        }
        for step in &s.steps {
            let arrow = if step.suspect { "~~>" } else { "-->" };
            let via = if step.field.is_empty() {
                String::new()
            } else {
                format!(".{} ", step.field)
            };
            let size = if step.size > 1 {
                format!(", largest {}", count(step.size))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "   {}{} {}{}  ({}, {}{}){}",
                if step.content { "    " } else { "" },
                arrow,
                via,
                step.type_name,
                memcity_city::units::amount(step.objects, memcity_city::model::Metric::Objects),
                signed_count(step.growth),
                size,
                if step.suspect {
                    "  <- suspect reference"
                } else {
                    ""
                }
            );
        }
        if s.holds.len() > 1 {
            let each: Vec<String> = s
                .holds
                .iter()
                .map(|h| {
                    format!(
                        "{} {} ({})",
                        h.type_name,
                        signed_count(h.objects),
                        memcity_city::units::signed_amount(
                            h.bytes,
                            memcity_city::model::Metric::Bytes
                        )
                    )
                })
                .collect();
            let _ = writeln!(out, "   the growth it holds: {}", each.join(", "));
        }
        for (i, site) in s.sites.iter().enumerate() {
            let _ = writeln!(
                out,
                "   {} {} (~{})",
                if i == 0 {
                    "allocated at"
                } else {
                    "          and"
                },
                site.site,
                memcity_city::units::amount(site.objects, memcity_city::model::Metric::Objects)
            );
        }
        if let Some(e) = &s.evidence {
            let types = match s.leaking.len() {
                0 | 1 => s.leaking.first().cloned().unwrap_or_default(),
                2 => s.leaking.join(" and "),
                n => format!("{} and {} more types", s.leaking[..2].join(", "), n - 2),
            };
            let _ = writeln!(
                out,
                "   evidence: {} of {} sampled paths to {} pass through this {} ({}@{}){}",
                count(e.through_holder),
                count(e.samples),
                types,
                s.holder,
                e.holder_in,
                e.holder_identity,
                if e.split.is_empty() {
                    String::new()
                } else {
                    format!("; split: {}", e.split)
                }
            );
            if e.counted > 0 {
                let _ = writeln!(
                    out,
                    "   counted: {} of the {} such objects the search went through are reached from this root{}",
                    count(e.counted_through),
                    count(e.counted),
                    if s.co_holders.is_empty() { "" } else { " and its co-holders" }
                );
            }
            if e.stale {
                let _ = writeln!(
                    out,
                    "   holder not seen since {} objects (paths found {:.1} s before the window's end): not confirmed until a search sees the new ones",
                    signed_count(e.growth_since),
                    e.age_ms as f64 / 1000.0
                );
            } else if e.age_ms > 0 {
                let _ = writeln!(
                    out,
                    "   (paths found {:.1} s before the window's end, {} objects since)",
                    e.age_ms as f64 / 1000.0,
                    signed_count(e.growth_since)
                );
            }
        }
        let _ = writeln!(out);
    }
    if !unseen.is_empty() {
        let each: Vec<String> = unseen
            .iter()
            .map(|s| {
                format!(
                    "{} {}",
                    s.leaking.first().map(String::as_str).unwrap_or("?"),
                    signed_count(s.growth)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "Also growing, holder not seen yet (no sampled path from a GC root reached one; the agent searches again as its `paths=` share of a core allows): {}",
            each.join(", ")
        );
        let _ = writeln!(out);
    }
    if !rising.is_empty() {
        render_rising(out, rising);
        let _ = writeln!(out);
    }
}

/// The types that rose only within the estimates' doubt: one line, apart from the suspects,
/// each with its holder where a search named one (the paths reached it, but what it holds is
/// not yet more than the doubt: a short window, or births no marking or search has met).
fn render_rising(out: &mut String, rising: &[SuspectJson]) {
    if rising.is_empty() {
        return;
    }
    let each: Vec<String> = rising
        .iter()
        .map(|s| {
            let held = if s.holder.is_empty() {
                " (holder not seen yet)".to_string()
            } else if s.root.is_empty() {
                format!(" held by {}", s.holder)
            } else {
                format!(" held by {} ({})", s.holder, s.root)
            };
            format!(
                "{} {}{held}",
                s.leaking.first().map(String::as_str).unwrap_or("?"),
                signed_count(s.growth)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "Rising within the estimates' doubt (their error and what may be garbage no marking has freed; a walk, an old-generation marking or the next path search settles it): {}",
        each.join(", ")
    );
}

/// The report as a tree table for people: the top groups under their parents.
pub fn render_text(report: &Report, source: &str, references: usize) -> String {
    let mut out = String::new();
    if report.jvm.is_empty() && report.pid == 0 {
        // No JVM in the handshake: a Memory Cities export (a folder) carries none; a recording
        // that names none was written by something other than the agent (a synthetic one) or
        // lost its header.
        let why = if std::path::Path::new(source).is_dir() {
            "a Memory Cities export carries none"
        } else {
            "its handshake names no JVM"
        };
        let _ = writeln!(
            out,
            "{source}: {} snapshots over {:.1} s; no JVM details ({why})",
            report.snapshots,
            report.duration_ms as f64 / 1000.0,
        );
    } else {
        let _ = writeln!(
        out,
        "{source}: {} snapshots over {:.1} s; {} ({}), pid {}; walks stopped the JVM {:.2}% of the time, sampling took {:.2}% of a core",
        report.snapshots,
        report.duration_ms as f64 / 1000.0,
        if report.jvm.is_empty() { "unknown JVM" } else { &report.jvm },
        if report.gc.is_empty() { "unknown GC" } else { &report.gc },
        report.pid,
        report.overhead * 100.0,
        report.sampling_overhead * 100.0
    );
    }
    let _ = writeln!(
        out,
        "{} exact (heap walks), {} estimated from allocation samples at GCs{}",
        report.exact_snapshots,
        report.estimated_snapshots,
        match (report.last_estimated, report.last_anchor, report.last_anchor_seq) {
            // Numbered as the viewer's status bar numbers snapshots (from 1).
            (true, Some(anchor), _) => format!(
                "; the last is an estimate reconciled with the walk of snapshot {anchor}, whose references it shows"
            ),
            (true, None, Some(_)) => "; the last is an estimate reconciled with an earlier walk, before this recording's history".to_string(),
            (true, None, None) => "; the last is an estimate with no walk to reconcile with".to_string(),
            (false, _, _) => String::new(),
        }
    );
    let _ = writeln!(
        out,
        "grouped by {}; growth over snapshots {} to {} ({:.1} s to {:.1} s)",
        report.classifiers.join(" > "),
        report.window.from + 1,
        report.window.to + 1,
        report.window.from_ms as f64 / 1000.0,
        report.window.to_ms as f64 / 1000.0
    );
    for warning in &report.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    let _ = writeln!(out);
    if let Some(oom) = &report.out_of_memory {
        render_out_of_memory(&mut out, oom, &report.suspects);
    }
    // No handshake: a Memory Cities export (as the header says).
    let source = if report.jvm.is_empty() && report.pid == 0 {
        Source::Export
    } else {
        Source::Recording
    };
    render_suspects(
        &mut out,
        &report.suspects,
        &report.rising,
        report.compared,
        source,
    );
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>9} {:>11} {:>11}  GROUP (strongest growth first; ~ = estimate, ± its 95 % error)",
        "GROWTH", "OBJ FIRST", "OBJ LAST", "±", "BYTES FIRST", "BYTES LAST"
    );
    // Rows are ranked by growth, not grouped by parent, so a parent is printed again whenever
    // the path changes under it: each row then sits under its own ancestors.
    let mut previous: &[String] = &[];
    for group in &report.groups {
        let depth = group.path.len();
        let ancestors = &group.path[..depth.saturating_sub(1)];
        let shared = ancestors
            .iter()
            .zip(previous)
            .take_while(|(a, b)| a == b)
            .count();
        for (level, name) in ancestors.iter().enumerate().skip(shared) {
            let _ = writeln!(out, "{:>73}  {}{}", "", "  ".repeat(level), name);
        }
        previous = ancestors;
        let doubt = if let Some(dead) = group.unreachable {
            format!("  ({})", dead.describe())
        } else if group.objects_last_unconfirmed > 0 {
            format!(
                "  (up to {} may be garbage: no old-gen marking since)",
                count(group.objects_last_unconfirmed)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>9} {:>11} {:>11}  {}{}{}{doubt}",
            signed_count(group.objects_growth()),
            count(group.objects_first),
            count(group.objects_last),
            if group.objects_last_error > 0 {
                format!("±{}", count(group.objects_last_error))
            } else {
                String::new()
            },
            human_bytes(group.bytes_first),
            human_bytes(group.bytes_last),
            "  ".repeat(depth.saturating_sub(1)),
            if group.estimated { "~" } else { "" },
            group.path.last().map(String::as_str).unwrap_or("")
        );
    }
    if report.unfollowed_samples > 0 {
        let _ = writeln!(
            out,
            "{:>73}  ~ rows with no ± stand at their last walk's count: on this collector {} allocation samples of types that reference more were not followed, so what such a type grew by since its walk is not known",
            "",
            count(report.unfollowed_samples)
        );
    }
    if let Some(bound) = report.unsampled_bound_bytes {
        let _ = writeln!(
            out,
            "{:>73}  ~ rows with no ± had no allocation sample since their walk and stand at its count: together they may have grown by up to {} unseen (95 %: {} sampling intervals)",
            "",
            human_bytes(bound),
            UNSAMPLED_INTERVALS
        );
    }
    if references > 0 && !report.references.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:>12} {:>12}  REFERENCES in the last snapshot (referrers = distinct objects holding one)",
            "REFERRERS", "REFERENCES"
        );
        for r in report.references.iter().take(references) {
            let _ = writeln!(
                out,
                "{:>12} {:>12}  {} -> {}",
                count(r.referrers),
                count(r.references),
                r.from,
                r.to
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_proto::v1::{stream_message::Kind, Node, Snapshot, StreamMessage, StringTable};

    fn session() -> CityModel {
        let mut s = CityModel::new();
        s.apply(&StreamMessage {
            kind: Some(Kind::Strings(StringTable {
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

    /// An estimate in which a type had no sample since its walk stands at the walk's count;
    /// the report bounds what such types may have grown by together, unseen: three sampling
    /// intervals. After a walk, or with every type sampled, there is nothing to bound.
    #[test]
    fn types_no_sample_landed_in_are_bounded_together() {
        use memcity_proto::v1::{exactness, Exactness, Handshake, WalkCost};
        let with_unheld = |a_error: u64, b_error: u64, estimate: bool, unheld: u64| {
            let mut s = session();
            s.handshake = Some(Handshake {
                sampling_interval: 512 * 1024,
                ..Default::default()
            });
            let leaf = |name, objects, error| Node {
                name,
                objects,
                bytes: objects * 16,
                estimated: true,
                objects_error: error,
                ..Default::default()
            };
            s.apply(&StreamMessage {
                kind: Some(Kind::Snapshot(Snapshot {
                    seq: 2,
                    time_ms: 3000,
                    cost: Some(WalkCost {
                        unheld_samples: unheld,
                        ..Default::default()
                    }),
                    exactness: estimate.then(|| Exactness {
                        source: exactness::Source::Estimate as i32,
                        ..Default::default()
                    }),
                    root: Some(Node {
                        name: 0,
                        objects: 1045,
                        children: vec![Node {
                            name: 1,
                            objects: 1045,
                            estimated: true,
                            children: vec![leaf(2, 1000, a_error), leaf(3, 45, b_error)],
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                    ..Default::default()
                })),
            })
            .unwrap();
            build(&s, 10).unwrap()
        };
        let with_last = |a_error, b_error, estimate| with_unheld(a_error, b_error, estimate, 0);
        let carried = with_last(30, 0, true);
        assert_eq!(carried.unsampled_bound_bytes, Some(3 * 512 * 1024));
        let text = render_text(&carried, "x", 0);
        assert!(
            text.contains(
                "together they may have grown by up to 1.5 MiB unseen (95 %: 3 sampling intervals)"
            ),
            "{text}"
        );
        assert_eq!(with_last(30, 2, true).unsampled_bound_bytes, None);
        assert_eq!(with_last(0, 0, false).unsampled_bound_bytes, None);
        // Samples not followed (generational ZGC): a type at its walk's count may have had
        // any number since, and the report says so instead of a bound.
        let unfollowed = with_unheld(30, 0, true, 908);
        assert_eq!(unfollowed.unsampled_bound_bytes, None);
        let text = render_text(&unfollowed, "x", 0);
        assert!(
            text.contains("~ rows with no ± stand at their last walk's count: on this collector 908 allocation samples of types that reference more were not followed")
                && !text.contains("unseen (95 %"),
            "{text}"
        );
    }

    #[test]
    fn groups_rank_by_growth_and_missing_counts_as_zero() {
        let r = build(&session(), 100).unwrap();
        let paths: Vec<_> = r.groups.iter().map(|g| g.path.join("/")).collect();
        assert_eq!(paths, ["p/A", "p/C", "p/B"]);
        assert_eq!(r.groups[0].objects_growth(), 990);
        assert_eq!(r.groups[1].objects_first, 0);
        assert_eq!(r.groups[2].bytes_growth(), -160);
        assert_eq!(r.duration_ms, 1500);
        assert_eq!(build(&session(), 1).unwrap().groups.len(), 1);
    }

    #[test]
    fn a_leak_leads_with_its_holder_and_types_not_seen_held_are_one_line_after() {
        let held = |t: &str, objects, bytes| HeldJson {
            type_name: t.into(),
            objects,
            bytes,
            ..Default::default()
        };
        let named = SuspectJson {
            root: "static App.SESSIONS".into(),
            holder: "java.util.HashMap".into(),
            leaking: vec!["Session".into(), "byte[]".into()],
            growth: 5_000,
            confirmed: true,
            confidence: "exact".into(),
            held_objects: 10_000,
            held_bytes: 5_280_000,
            holds: vec![
                held("byte[]", 5_000, 5_120_000),
                held("Session", 5_000, 160_000),
            ],
            ..Default::default()
        };
        let unseen = |t: &str, growth| SuspectJson {
            leaking: vec![t.into()],
            growth,
            evidence: Some(EvidenceJson::default()),
            ..Default::default()
        };
        let mut out = String::new();
        render_suspects(
            &mut out,
            &[
                named.clone(),
                unseen("java.util.concurrent.locks.ReentrantLock", 4_000),
                unseen("Lock$Sync", 3_000),
            ],
            &[],
            false,
            Source::Recording,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "1. java.util.HashMap (static App.SESSIONS, confidence exact) holds a growth of +10,000 objects, +5.0 MiB: byte[], Session",
            "{out}"
        );
        assert!(
            lines.contains(
                &"   the growth it holds: byte[] +5,000 (+4.9 MiB), Session +5,000 (+156.2 KiB)"
            ),
            "{out}"
        );
        assert!(!out.contains("\n2. "), "{out}");
        assert!(out.contains("Also growing, holder not seen yet (no sampled path from a GC root reached one; the agent searches again as its `paths=` share of a core allows): java.util.concurrent.locks.ReentrantLock +4,000, Lock$Sync +3,000"), "{out}");
        // With no named holder, the growing types are the suspects, numbered.
        let mut alone = String::new();
        render_suspects(
            &mut alone,
            &[unseen("A", 4_000), unseen("B", 3_000)],
            &[],
            false,
            Source::Recording,
        );
        assert!(
            alone.contains("\n1. A grows by +4,000 objects; holder not seen yet"),
            "{alone}"
        );
        assert!(alone.contains("\n2. B grows by +3,000 objects"), "{alone}");
        assert!(!alone.contains("Also growing"), "{alone}");
        // A rise within the estimates' doubt that no search explained is no suspect: apart.
        let mut doubtful = String::new();
        render_suspects(
            &mut doubtful,
            &[],
            &[unseen("C", 32_777)],
            false,
            Source::Recording,
        );
        assert!(
            doubtful.starts_with("LEAK SUSPECTS: none (no type grows steadily in this window beyond the estimates' doubt)\nRising within the estimates' doubt (their error and what may be garbage no marking has freed; a walk, an old-generation marking or the next path search settles it): C +32,777 (holder not seen yet)\n"),
            "{doubtful}"
        );
        let mut both = String::new();
        render_suspects(
            &mut both,
            std::slice::from_ref(&named),
            &[unseen("C", 32_777)],
            false,
            Source::Recording,
        );
        assert!(both.contains("\n1. java.util.HashMap"), "{both}");
        assert!(
            both.contains("\nRising within the estimates' doubt ("),
            "{both}"
        );
        assert!(!both.contains("\n2. "), "{both}");
    }

    #[test]
    fn empty_session_is_an_error() {
        assert!(matches!(
            build(&CityModel::new(), 5),
            Err(ReportError::NoSnapshots)
        ));
    }

    #[test]
    fn windows_are_named_by_index_or_seconds() {
        let m = session();
        let last = m.len() - 1;
        let at = |text: &str| snapshot_at(&m, text.parse::<At>().unwrap());
        // Numbers count from 1, as the viewer's status bar does.
        assert_eq!(at("1").unwrap(), 0);
        assert_eq!(at(&(last + 1).to_string()).unwrap(), last);
        for past in ["0".to_string(), (last + 2).to_string()] {
            assert!(at(&past)
                .unwrap_err()
                .to_string()
                .contains("does not exist"));
        }
        // Seconds: the last snapshot at or before that time.
        assert_eq!(at("0s").unwrap(), 0);
        assert_eq!(at("9999s").unwrap(), last);
        assert!("soon".parse::<At>().unwrap_err().contains("not a snapshot"));
        assert!("xs".parse::<At>().unwrap_err().contains("not a time"));
        assert_eq!(" 3 ".parse::<At>(), Ok(At::Number(3)));
        assert_eq!("1.5s".parse::<At>(), Ok(At::Seconds(1.5)));
    }

    #[test]
    fn rows_sit_under_their_own_parents() {
        let report = Report {
            window: WindowJson {
                from: 0,
                to: 1,
                from_ms: 0,
                to_ms: 0,
            },
            suspects: Vec::new(),
            rising: Vec::new(),
            walks_in_window: 0,
            out_of_memory: None,
            compared: false,
            unsampled_bound_bytes: None,
            unfollowed_samples: 0,
            snapshots: 2,
            exact_snapshots: 2,
            estimated_snapshots: 0,
            last_estimated: false,
            last_anchor_seq: None,
            last_anchor: None,
            duration_ms: 0,
            classifiers: vec![],
            jvm: String::new(),
            gc: String::new(),
            pid: 0,
            groups: [["a", "x"], ["b", "y"], ["a", "z"]]
                .iter()
                .map(|p| GroupGrowth {
                    path: p.iter().map(|s| s.to_string()).collect(),
                    objects_first: 0,
                    objects_last: 1,
                    bytes_first: 0,
                    bytes_last: 0,
                    estimated: false,
                    objects_last_error: 0,
                    objects_last_unconfirmed: 0,
                    continuing: 1,
                    unreachable: None,
                })
                .collect(),
            references: vec![],
            overhead: 0.0,
            sampling_overhead: 0.0,
            warnings: vec![],
        };
        let text = render_text(&report, "f", 0);
        let names: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("GROWTH"))
            .skip(1)
            .map(|l| l.trim_end().rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(names, ["a", "x", "b", "y", "a", "z"], "{text}");
        // A recording with no JVM in its handshake is not called an export.
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with("no JVM details (its handshake names no JVM)"),
            "{text}"
        );
        let folder = tempfile::tempdir().unwrap();
        let text = render_text(&report, folder.path().to_str().unwrap(), 0);
        assert!(
            text.contains("(a Memory Cities export carries none)"),
            "{text}"
        );
    }

    #[test]
    fn text_is_a_tree() {
        let text = render_text(&build(&session(), 100).unwrap(), "x.mcrec", 5);
        assert!(text.contains("+990"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let parent = lines
            .iter()
            .position(|l| l.trim_end().ends_with(" p"))
            .unwrap();
        assert!(lines[parent + 1].trim_end().ends_with("  A"), "{text}");
    }
}
