//! The groups a report ranks: each leaf group at the window's two ends, ordered by the rise
//! that goes on, with what a complete path search said of its type.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::units::count;
use memcity_city::model::{CityModel, DeadRise};

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
    /// What the group keeps alive at the window's end (its retained bytes), for sessions read
    /// from heap dumps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained_last: Option<u64>,
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
    pub(super) fn describe(&self) -> String {
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

/// Every leaf group of the session ranked by growth over its window (see `rank`), the first
/// `top` of them.
pub(super) fn ranked(session: &CityModel, top: usize) -> Vec<GroupGrowth> {
    let window = session.window();
    let mut groups = at_ends(session, window.start, window.end);
    for g in &mut groups {
        let names: Vec<&str> = g.path.iter().map(String::as_str).collect();
        g.retained_last = session
            .find(&names)
            .and_then(|id| session.retained(id, window.end));
    }
    let steady_of = steady_rises(session, &groups);
    mark_dead_rises(session, window.start, window.end, &mut groups);
    if window.start == window.end && groups.iter().any(|g| g.retained_last.is_some()) {
        // One dump shows no growth: what each group keeps alive ranks it, as MAT's histogram
        // of retained sizes does.
        groups.sort_by(|a, b| {
            b.retained_last
                .cmp(&a.retained_last)
                .then(a.path.cmp(&b.path))
        });
        groups.truncate(top);
        return groups;
    }
    rank(groups, steady_of, top)
}

/// Each leaf group's numbers at snapshots `start` and `end`: a group missing at one end counts
/// as 0 there.
fn at_ends(session: &CityModel, start: usize, end: usize) -> Vec<GroupGrowth> {
    let first = session.leaves(start);
    let last = session.leaves(end);
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
                retained_last: None,
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
    merged.into_values().collect()
}

/// Each group's steady rise: the fitted rise over the window weighed by how well a line fits
/// it (the suspects' trend). A rise within what the estimates leave in doubt (their errors at
/// the trend's ends, and what may be garbage at the last) is none. Every group's trend in one
/// pass over the snapshots.
fn steady_rises(session: &CityModel, groups: &[GroupGrowth]) -> Vec<f64> {
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
    trends
        .into_iter()
        .map(|trend| match trend {
            Some(trend) if !trend.within_doubt(true) => trend.steady(),
            _ => 0.0,
        })
        .collect()
}

/// Each group's type dead in the old generation over snapshots `start` to `end`, by the last
/// full search (and no focused one since finding it alive): its rise goes on only as garbage.
fn mark_dead_rises(session: &CityModel, start: usize, end: usize, groups: &mut [GroupGrowth]) {
    let searched = session.paths_at(end).is_some();
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
            session.dead_rise_at(start, end, &session.node(id).name, objects)
        }));
    }
}

/// Steady growth first (`steady_of`, each group's from `steady_rises`), so a catalog built in
/// the first seconds and flat since does not outrank the steady leak beside it; a rise dead in
/// the old generation ranks as none. memcity's own group last: it is not the application's.
/// The first `top` stay.
fn rank(groups: Vec<GroupGrowth>, steady_of: Vec<f64>, top: usize) -> Vec<GroupGrowth> {
    let mut keyed: Vec<(bool, f64, GroupGrowth)> = groups
        .into_iter()
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
    let mut groups: Vec<GroupGrowth> = keyed.into_iter().map(|(_, _, g)| g).collect();
    groups.truncate(top);
    groups
}

/// Allocations this many sampling intervals long go unsampled with chance below 5 %
/// (`exp(-3)`).
pub(super) const UNSAMPLED_INTERVALS: u64 = 3;

/// `Report::unsampled_bound_bytes`: three sampling intervals, when the last snapshot is an
/// estimate in which some group of objects stands at its walk's count (no error, nothing
/// unconfirmed). None when `unfollowed` samples were taken and not followed: such a group
/// may have had any number since.
pub(super) fn unsampled_bound(
    session: &CityModel,
    groups: &[GroupGrowth],
    unfollowed: u64,
) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::super::tests::session;
    use super::super::{build, render_text};
    use memcity_proto::v1::{stream_message::Kind, Node, Snapshot, StreamMessage};

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
}
