//! The snapshots: what one holds (every group's objects and bytes, the estimates' errors and
//! what may be garbage, the references, the walk's graph and the object paths), how much memory
//! it takes, and the model's reads of a group's numbers at a snapshot or between two.

use std::sync::Arc;

use memcity_proto::v1::{Exactness, WalkCost};

use super::{CityModel, Metric, NodeId, ROOT};
use crate::leak::roots::RootRef;

/// A reference count between two groups, by the groups' names (types in memcity sessions, full
/// keys in Memory Cities JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub from: String,
    pub to: String,
    /// Distinct objects of `from` referencing `to`.
    pub referrers: u64,
    /// References from `from` to `to` (upper bound of distinct targets).
    pub references: u64,
}

/// References by field, the GC roots, and what each root holds near it, as one walk found them
/// (names resolved; see `FieldEdge`, `Root` and `OwnedEdge` in the proto).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    pub fields: Vec<FieldRef>,
    pub roots: Vec<RootRef>,
    pub owned: Vec<OwnedRef>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRef {
    pub from: String,
    /// A field name, `[]` for array elements, or `#N`.
    pub field: String,
    pub is_static: bool,
    pub to: String,
    pub referrers: u64,
    pub references: u64,
    pub max_fanout: u64,
    pub max_length: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRef {
    /// Index into `Graph::roots`.
    pub root: usize,
    pub level: u32,
    pub from: String,
    pub field: String,
    pub to: String,
    pub references: u64,
    pub max_fanout: u64,
    pub max_length: u64,
}

/// One point in time.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// The snapshot's sequence number (the agent's; the index for trees pushed directly).
    pub seq: u64,
    pub time_ms: u64,
    /// `Snapshot.trigger` of the protocol (0 when unknown).
    pub trigger: i32,
    /// GCs finished in the JVM when the snapshot was taken (0 when unknown).
    pub gc_count: u64,
    /// The classifier chain of this snapshot.
    pub classifiers: Vec<String>,
    /// What the walk cost, as the agent reported it.
    pub cost: Option<WalkCost>,
    /// Which numbers are exact, as the agent reported it.
    pub exactness: Option<Exactness>,
    /// `(node, objects, bytes)`, sorted by node id, for every node present.
    pub(super) values: Vec<(NodeId, u64, u64)>,
    /// `(node, objects error, bytes error)`, sorted by node id, for every node whose numbers are
    /// estimates in this snapshot (errors are 95 % half-widths, 0 when the agent gave none).
    pub(super) estimates: Vec<(NodeId, u64, u64)>,
    /// `(node, objects, bytes)` no old-generation marking has confirmed (see
    /// `Node.objects_unconfirmed`), sorted by node id, for the nodes that have any.
    pub(super) unconfirmed: Vec<(NodeId, u64, u64)>,
    /// `(node, retained bytes)`, sorted by node id: what each group keeps alive, for snapshots
    /// read from heap dumps (`Node.retained_bytes`); empty otherwise.
    pub(super) retained: Vec<(NodeId, u64, u64)>,
    /// The heap dump this snapshot was read from (`Snapshot.dump`).
    pub dump: Option<std::sync::Arc<super::DumpFacts>>,
    pub references: Vec<Reference>,
    /// The walk's graph; `None` for estimates (theirs is their anchor walk's) and sources
    /// without one.
    pub graph: Option<std::sync::Arc<Graph>>,
    /// Object-level paths to sampled objects, on the snapshot that carried a finished search
    /// (`Snapshot.paths`); `CityModel::paths_at` finds the newest one at a time.
    pub paths: Option<std::sync::Arc<crate::leak::paths::Paths>>,
    /// The Java heap's used and maximum bytes when it was taken (`Snapshot.heap`).
    pub heap: Option<memcity_proto::v1::HeapUsage>,
    /// Set on the snapshot taken when the Java heap ran out (`Snapshot.out_of_memory`).
    pub out_of_memory: Option<memcity_proto::v1::OutOfMemory>,
    /// The live samples by type and allocation site its `Lifetimes` carried (`Survivors`,
    /// summed over ages), as `(type, site, objects)` with string ids of the session's table;
    /// `None` when it carried no lifetimes. Kept per snapshot (at most 1,001 entries, 16
    /// bytes each) because a session grouped without a `site` level has no other record of
    /// where the live objects of a past snapshot were allocated (`pprof.rs`).
    pub(super) survivors: Option<Vec<(u32, u32, f64)>>,
}

/// One leaf group of a snapshot: its path of names below the root, and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub path: Vec<String>,
    pub objects: u64,
    pub bytes: u64,
    pub estimated: bool,
    /// 95 % half-width of `objects` when estimated (0 when exact or not given).
    pub objects_error: u64,
    /// The part of `objects` no old-generation marking has confirmed (possibly garbage).
    pub objects_unconfirmed: u64,
}

impl Frame {
    /// About what this snapshot takes in memory: its groups' values, errors and doubts, its
    /// survivors, its type references, and the walk's graph and object paths it carried (by
    /// their entries, at a typical entry's size with its names).
    pub(super) fn detail_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(NodeId, u64, u64)>();
        let graph = self.graph.as_ref().map_or(0, |g| {
            g.fields.len() * (std::mem::size_of::<FieldRef>() + 64)
                + g.roots.len() * (std::mem::size_of::<RootRef>() + 96)
                + g.owned.len() * (std::mem::size_of::<OwnedRef>() + 64)
        });
        let paths = self.paths.as_ref().map_or(0, |p| {
            p.nodes.len() * (std::mem::size_of::<crate::leak::paths::PathNode>() + 128)
        });
        graph
            + paths
            + std::mem::size_of::<Frame>()
            + (self.values.capacity() + self.estimates.capacity() + self.unconfirmed.capacity())
                * entry
            + self.retained.capacity() * entry
            + self.survivors.as_ref().map_or(0, |s| s.capacity() * 16)
            + self
                .references
                .iter()
                .map(|r| std::mem::size_of::<Reference>() + r.from.len() + r.to.len())
                .sum::<usize>()
    }

    pub(super) fn get(&self, node: NodeId) -> Option<(u64, u64)> {
        self.values
            .binary_search_by_key(&node, |v| v.0)
            .ok()
            .map(|i| (self.values[i].1, self.values[i].2))
    }

    /// `(node, objects, bytes)` of every node present, in node order.
    pub(crate) fn values(&self) -> &[(NodeId, u64, u64)] {
        &self.values
    }

    /// `Some((objects error, bytes error))` when `node`'s numbers are estimates here.
    pub fn estimate(&self, node: NodeId) -> Option<(u64, u64)> {
        self.estimates
            .binary_search_by_key(&node, |v| v.0)
            .ok()
            .map(|i| (self.estimates[i].1, self.estimates[i].2))
    }

    /// `(objects, bytes)` of `node`'s numbers that no old-generation marking has confirmed:
    /// possibly garbage promoted and dead since the last one (0 when exact).
    pub fn unconfirmed(&self, node: NodeId) -> (u64, u64) {
        self.unconfirmed
            .binary_search_by_key(&node, |v| v.0)
            .ok()
            .map_or((0, 0), |i| (self.unconfirmed[i].1, self.unconfirmed[i].2))
    }

    /// What `node` keeps alive (its retained bytes), for a snapshot read from a heap dump.
    pub fn retained(&self, node: NodeId) -> Option<u64> {
        self.retained
            .binary_search_by_key(&node, |v| v.0)
            .ok()
            .map(|i| self.retained[i].2)
    }

    /// Whether this snapshot carries retained sizes (a heap dump's).
    pub fn has_retained(&self) -> bool {
        !self.retained.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn set_unconfirmed_for_tests(&mut self, node: NodeId, objects: u64, bytes: u64) {
        self.unconfirmed.retain(|v| v.0 != node);
        self.unconfirmed.push((node, objects, bytes));
        self.unconfirmed.sort_by_key(|v| v.0);
    }

    /// Whether the agent estimated this snapshot from samples instead of walking the heap
    /// (`Exactness.source`).
    pub fn is_estimated(&self) -> bool {
        self.exactness
            .as_ref()
            .is_some_and(|e| e.source() == memcity_proto::v1::exactness::Source::Estimate)
    }
}

impl CityModel {
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn frame(&self, index: usize) -> Option<&Frame> {
        self.frames.get(index).map(|f| &**f)
    }

    /// The snapshots, each shared: a copy of the model (`Clone`) shares them, as the viewer's
    /// suspects worked out beside the drawing do, and a change to one copies only it.
    pub fn frames(&self) -> &[Arc<Frame>] {
        &self.frames
    }

    /// Value of a node in snapshot `index`; a node missing there is zero.
    pub fn value(&self, node: NodeId, index: usize, metric: Metric) -> u64 {
        let Some(frame) = self.frames.get(index) else {
            return 0;
        };
        match metric {
            Metric::Retained => frame.retained(node).unwrap_or(0),
            _ => frame.get(node).map_or(0, |(objects, bytes)| match metric {
                Metric::Objects => objects,
                _ => bytes,
            }),
        }
    }

    /// Value at fractional time `t` (snapshot index plus fraction), linearly between the two
    /// snapshots around it, for smooth growing and shrinking between snapshots.
    pub fn value_at(&self, node: NodeId, t: f64, metric: Metric) -> f64 {
        if self.frames.is_empty() {
            return 0.0;
        }
        let t = t.clamp(0.0, (self.frames.len() - 1) as f64);
        let i = t.floor() as usize;
        let a = self.value(node, i, metric) as f64;
        if i + 1 >= self.frames.len() {
            return a;
        }
        let b = self.value(node, i + 1, metric) as f64;
        a + (b - a) * (t - i as f64)
    }

    /// What the numbers cannot back of `node`'s value at fractional time `t`, tweened as
    /// `value_at`: its 95 % error plus what may be garbage no old marking has met (0 when exact).
    pub fn doubt_at(&self, node: NodeId, t: f64, metric: Metric) -> f64 {
        if self.frames.is_empty() {
            return 0.0;
        }
        let t = t.clamp(0.0, (self.frames.len() - 1) as f64);
        let i = t.floor() as usize;
        let at = |i: usize| {
            self.error(node, i, metric)
                .saturating_add(self.unconfirmed(node, i, metric)) as f64
        };
        let a = at(i);
        if i + 1 >= self.frames.len() {
            return a;
        }
        a + (at(i + 1) - a) * (t - i as f64)
    }

    /// The 95 % error of `node`'s value at `index` (0 when exact).
    pub fn error(&self, node: NodeId, index: usize, metric: Metric) -> u64 {
        self.frames
            .get(index)
            .and_then(|f| f.estimate(node))
            .map_or(0, |(objects, bytes)| match metric {
                Metric::Objects => objects,
                Metric::Bytes => bytes,
                // Retained sizes come from dumps, which are exact.
                Metric::Retained => 0,
            })
    }

    /// The part of `node`'s value at `index` no old-generation marking has confirmed (0 when
    /// exact): the value may be that much too high.
    pub fn unconfirmed(&self, node: NodeId, index: usize, metric: Metric) -> u64 {
        self.frames
            .get(index)
            .map_or(0, |f| match (f.unconfirmed(node), metric) {
                ((objects, _), Metric::Objects) => objects,
                ((_, bytes), Metric::Bytes) => bytes,
                (_, Metric::Retained) => 0,
            })
    }

    /// What `node` keeps alive at snapshot `index` (retained bytes), where that snapshot was
    /// read from a heap dump; `None` otherwise.
    pub fn retained(&self, node: NodeId, index: usize) -> Option<u64> {
        self.frames.get(index).and_then(|f| f.retained(node))
    }

    /// Values of snapshot `index` to read in `metric`: `values` for objects and bytes, the
    /// retained sizes as `(node, 0, retained)` for retained (empty where the snapshot has none).
    pub fn values_in(&self, index: usize, metric: Metric) -> &[(NodeId, u64, u64)] {
        match metric {
            Metric::Retained => self.frames.get(index).map_or(&[], |f| &f.retained),
            _ => self.values(index),
        }
    }

    /// Whether any snapshot carries retained sizes (a session read from heap dumps).
    pub fn has_retained(&self) -> bool {
        self.frames.iter().any(|f| f.has_retained())
    }

    /// Values of snapshot `index`, `(node, objects, bytes)` sorted by node (empty past the end).
    pub fn values(&self, index: usize) -> &[(NodeId, u64, u64)] {
        self.frames.get(index).map_or(&[], |f| &f.values)
    }

    /// The 95 % errors of snapshot `index`'s estimated nodes, `(node, objects, bytes)` sorted by
    /// node (see [`error`](Self::error)).
    pub fn errors(&self, index: usize) -> &[(NodeId, u64, u64)] {
        self.frames.get(index).map_or(&[], |f| &f.estimates)
    }

    /// The unconfirmed parts of snapshot `index`'s nodes, `(node, objects, bytes)` sorted by
    /// node (see [`unconfirmed`](Self::unconfirmed)).
    pub fn unconfirmed_values(&self, index: usize) -> &[(NodeId, u64, u64)] {
        self.frames.get(index).map_or(&[], |f| &f.unconfirmed)
    }

    /// The leaf groups of snapshot `index`: nodes present there with no child present.
    pub fn leaves(&self, index: usize) -> Vec<Leaf> {
        let Some(frame) = self.frames.get(index) else {
            return Vec::new();
        };
        let present = |id: NodeId| frame.get(id).is_some();
        frame
            .values
            .iter()
            .filter(|&&(id, _, _)| {
                id != ROOT && !self.nodes[id as usize].children.iter().any(|&c| present(c))
            })
            .map(|&(id, objects, bytes)| {
                let estimate = frame.estimate(id);
                Leaf {
                    path: self.path(id).into_iter().map(str::to_string).collect(),
                    objects,
                    bytes,
                    estimated: estimate.is_some(),
                    objects_error: estimate.map_or(0, |e| e.0),
                    objects_unconfirmed: frame.unconfirmed(id).0,
                }
            })
            .collect()
    }

    /// The live samples of snapshot `index` by type and allocation site, `(type, site,
    /// objects)`, as its `Lifetimes` carried them (site "" where the agent recorded none, type
    /// "(other types and sites)" for the groups past its cap); `None` when it carried no
    /// lifetimes.
    pub fn survivors(&self, index: usize) -> Option<Vec<(&str, &str, f64)>> {
        let survivors = self.frames.get(index)?.survivors.as_ref()?;
        Some(
            survivors
                .iter()
                .map(|&(ty, site, objects)| {
                    (
                        self.strings.resolve(ty),
                        self.strings.resolve(site),
                        objects,
                    )
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::sample;

    #[test]
    fn tweening_interpolates_between_snapshots() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        assert_eq!(m.value_at(a, 0.0, Metric::Objects), 10.0);
        assert_eq!(m.value_at(a, 0.5, Metric::Objects), 255.0);
        assert_eq!(m.value_at(a, 1.75, Metric::Objects), 875.0);
        assert_eq!(m.value_at(a, 9.0, Metric::Objects), 1000.0);
    }
}
