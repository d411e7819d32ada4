//! Where snapshots come from: a stream's messages (`apply`: the handshake, string tables,
//! snapshots, notices), trees pushed directly (`push_tree`, for exports and tests), and two
//! recordings' snapshots side by side (`comparison`). Each becomes a frame in time order, its
//! groups interned as nodes by their key paths, in time proportional to the snapshot.

use std::collections::HashMap;
use std::sync::Arc;

use memcity_proto::v1::{stream_message::Kind, Node, Snapshot, StreamMessage};
use memcity_proto::{version_mismatch_hint, Peer};

use super::{CityModel, FieldRef, Frame, Graph, NodeId, OwnedRef, Reference, Role, Window, ROOT};
use crate::leak::roots::RootRef;

/// A stream this model cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

/// What one snapshot's tree gives a frame: values of every node, errors of the estimated ones.
struct Collected {
    values: Vec<(NodeId, u64, u64)>,
    estimates: Vec<(NodeId, u64, u64)>,
    unconfirmed: Vec<(NodeId, u64, u64)>,
    retained: Vec<(NodeId, u64, u64)>,
}

impl CityModel {
    /// Appends one snapshot given as a tree of names. `values` are `(path, objects, bytes)` for
    /// every node below the root (inner nodes included); the root's totals are `root`. Each
    /// node's role is given by its label (`Role::from_label`), as Memory Cities exports name
    /// their classifiers.
    pub fn push_tree(
        &mut self,
        time_ms: u64,
        root: (u64, u64),
        nodes: &[(Vec<String>, String, u64, u64)],
        references: Vec<Reference>,
    ) {
        let index = self.frames.len();
        let mut values = vec![(ROOT, root.0, root.1)];
        for (path, role, objects, bytes) in nodes {
            let role = Role::from_label(role);
            let mut at = ROOT;
            for (depth, name) in path.iter().enumerate() {
                let role = if depth + 1 == path.len() {
                    &role
                } else {
                    &Role::Unclassified
                };
                at = self.intern(at, name, role, index);
            }
            values.push((at, *objects, *bytes));
        }
        self.push_frame(Frame {
            seq: index as u64,
            time_ms,
            values,
            references,
            ..Default::default()
        });
    }

    fn push_frame(&mut self, mut frame: Frame) {
        frame.values.sort_by_key(|v| v.0);
        frame.values.dedup_by_key(|v| v.0);
        frame.estimates.sort_by_key(|v| v.0);
        frame.estimates.dedup_by_key(|v| v.0);
        frame.unconfirmed.sort_by_key(|v| v.0);
        frame.unconfirmed.dedup_by_key(|v| v.0);
        // Collected by pushing, they may hold twice their length; a session keeps hundreds.
        frame.values.shrink_to_fit();
        frame.estimates.shrink_to_fit();
        frame.unconfirmed.shrink_to_fit();
        for &(id, objects, bytes) in &frame.values {
            let node = &mut self.nodes[id as usize];
            node.max_objects = node.max_objects.max(objects);
            node.max_bytes = node.max_bytes.max(bytes);
        }
        for &(id, _, retained) in &frame.retained {
            let node = &mut self.nodes[id as usize];
            node.max_retained = node.max_retained.max(retained);
        }
        // Keep frames in time order even if a source delivers one late.
        let at = self.frames.partition_point(|f| f.time_ms <= frame.time_ms);
        let ran_out = frame.out_of_memory.is_some();
        self.out_of_memory_at = match self.out_of_memory_at {
            Some(i) if i >= at => Some(if ran_out { at } else { i + 1 }),
            Some(i) => Some(i),
            None => ran_out.then_some(at),
        };
        self.detail_bytes += frame.detail_bytes();
        self.frames.insert(at, Arc::new(frame));
        self.update_growth();
        if self.detail_budget.is_some() && self.detail_bytes > self.thin_at {
            self.thin();
        }
    }

    /// A session of two snapshots, `a`'s snapshot `ia` then `b`'s snapshot `ib`, for comparing
    /// two recordings of one application (before and after a change, two days of a service):
    /// groups are matched by their key paths, and the window spans the two, so growth is what
    /// grew from the first to the second. Both must group by the same classifiers.
    pub fn comparison(
        a: &CityModel,
        ia: usize,
        b: &CityModel,
        ib: usize,
    ) -> Result<CityModel, String> {
        if a.classifiers != b.classifiers {
            return Err(format!(
                "the recordings group by different classifiers ({} against {}): compare \
                 recordings made with the same `classifiers=`",
                a.classifiers.join(":"),
                b.classifiers.join(":")
            ));
        }
        let mut m = CityModel::new();
        m.classifiers = a.classifiers.clone();
        m.handshake = b.handshake.clone();
        let start_ms = a.frames.get(ia).map_or(0, |f| f.time_ms);
        for (index, (source, i)) in [(a, ia), (b, ib)].into_iter().enumerate() {
            let frame = source
                .frames
                .get(i)
                .ok_or_else(|| format!("snapshot {} does not exist", i + 1))?;
            let mut map: HashMap<NodeId, NodeId> = HashMap::from([(ROOT, ROOT)]);
            let mut local = |id: NodeId, m: &mut CityModel| -> NodeId {
                // Ancestors first: a node's path is interned from the top down.
                let mut chain = Vec::new();
                let mut at = id;
                while !map.contains_key(&at) {
                    chain.push(at);
                    at = source.nodes[at as usize].parent.unwrap_or(ROOT);
                }
                let mut mapped = map[&at];
                for &node in chain.iter().rev() {
                    let info = &source.nodes[node as usize];
                    mapped = m.intern(mapped, &info.name, &info.role, index);
                    m.nodes[mapped as usize].estimated |= info.estimated;
                    map.insert(node, mapped);
                }
                mapped
            };
            let values = frame
                .values
                .iter()
                .map(|&(id, objects, bytes)| (local(id, &mut m), objects, bytes))
                .collect();
            let estimates = frame
                .estimates
                .iter()
                .map(|&(id, objects, bytes)| (local(id, &mut m), objects, bytes))
                .collect();
            let unconfirmed = frame
                .unconfirmed
                .iter()
                .map(|&(id, objects, bytes)| (local(id, &mut m), objects, bytes))
                .collect();
            // Times keep the order (the second after the first) though each recording counts
            // from its own start.
            let time_ms = if index == 0 {
                start_ms
            } else {
                frame.time_ms.max(start_ms + 1)
            };
            m.push_frame(Frame {
                seq: index as u64,
                time_ms,
                values,
                estimates,
                unconfirmed,
                // Ids of the other session's string table, meaningless here.
                survivors: None,
                // The second recording's object paths, wherever it carried them (the last
                // snapshot seldom does itself): they name types, not nodes, and say what holds
                // the second's objects. The first's say nothing of that: its snapshot carries
                // the second's last full search instead, which a focused one at the end rests
                // on (what else reaches a holder; which rises are dead).
                paths: if index == 0 {
                    b.full_paths_at(ib)
                        .filter(|_| b.paths_at(ib).is_some_and(|(_, p)| p.focused))
                        .cloned()
                } else {
                    source.paths_at(i).map(|(_, paths)| paths.clone())
                },
                ..(**frame).clone()
            });
        }
        m.set_window(Some(Window { start: 0, end: 1 }));
        m.compared = true;
        Ok(m)
    }

    /// Whether this is two recordings' comparison (`CityModel::comparison`).
    pub fn is_comparison(&self) -> bool {
        self.compared
    }

    /// Feeds one message of a live stream or recording. A handshake of another protocol version
    /// is an error that says which side to upgrade.
    pub fn apply(&mut self, message: &StreamMessage) -> Result<(), ProtocolError> {
        match &message.kind {
            Some(Kind::Handshake(h)) => {
                if let Some(hint) = version_mismatch_hint(Peer::Agent {
                    protocol: h.protocol_version,
                    version: &h.agent_version,
                }) {
                    return Err(ProtocolError(hint));
                }
                self.classifiers = h.classifiers.clone();
                self.handshake = Some(h.clone());
            }
            Some(Kind::Strings(table)) => {
                // A table that names ids already known again (a late join's full table, a
                // gap's placeholders filled) may change what an id means.
                if (table.first_id.max(1) as usize) <= self.strings.len() {
                    self.by_string.clear();
                }
                self.strings
                    .apply(table)
                    .map_err(|e| ProtocolError(e.to_string()))?
            }
            Some(Kind::Snapshot(snapshot)) => self.apply_snapshot(snapshot),
            Some(Kind::Notice(notice)) => {
                self.dropped += notice.dropped_snapshots;
                self.trimmed += notice.trimmed_history;
            }
            Some(Kind::End(end)) => self.end = Some(end.clone()),
            None => {}
        }
        Ok(())
    }

    /// A snapshot: its lifetimes booked, then, if it carries a tree, a frame of what it is made
    /// of (its groups' numbers, the type references, the walk's graph, the object paths, the
    /// live samples by site).
    fn apply_snapshot(&mut self, snapshot: &Snapshot) {
        // A snapshot seen twice (a late join overlapping live messages) is kept once.
        if self
            .frames
            .last()
            .is_some_and(|last| snapshot.seq <= last.seq)
        {
            return;
        }
        if !snapshot.classifiers.is_empty() {
            self.classifiers = snapshot.classifiers.clone();
        }
        if let Some(lifetimes) = snapshot.lifetimes.as_ref().filter(|_| !self.skip_lifetimes) {
            let strings = &self.strings;
            self.lifetimes.add_with_sites(
                snapshot.time_ms,
                lifetimes,
                |id| strings.resolve(id),
                |name| strings.site(name),
            );
        }
        let Some(root) = &snapshot.root else {
            return;
        };
        let survivors = snapshot.lifetimes.as_ref().map(|l| {
            l.alive
                .iter()
                .map(|s| (s.r#type, s.site, s.by_gc_age.iter().sum()))
                .collect()
        });
        let Collected {
            values,
            estimates,
            unconfirmed,
            mut retained,
        } = self.collected(snapshot, root);
        retained.sort_unstable_by_key(|r| r.0);
        let references = snapshot
            .references
            .iter()
            .map(|r| Reference {
                from: self.strings.resolve(r.from_type).to_string(),
                to: self.strings.resolve(r.to_type).to_string(),
                referrers: r.referrers,
                references: r.references,
            })
            .collect();
        let graph = (!snapshot.fields.is_empty() || !snapshot.roots.is_empty())
            .then(|| std::sync::Arc::new(self.graph(snapshot)));
        let paths = snapshot.paths.as_ref().map(|tree| {
            std::sync::Arc::new(crate::leak::paths::from_proto(
                tree,
                |id| self.strings.resolve(id).to_string(),
                |r| self.root_ref(r),
            ))
        });
        self.push_frame(Frame {
            graph,
            paths,
            seq: snapshot.seq,
            time_ms: snapshot.time_ms,
            trigger: snapshot.trigger,
            gc_count: snapshot.gc_count,
            classifiers: self.classifiers.clone(),
            cost: snapshot.cost,
            exactness: snapshot.exactness,
            values,
            estimates,
            unconfirmed,
            retained,
            dump: snapshot.dump.as_ref().map(|d| {
                std::sync::Arc::new(super::DumpFacts::from_proto(
                    d,
                    |id| self.strings.resolve(id).to_string(),
                    |r| self.root_ref(r),
                ))
            }),
            references,
            heap: snapshot.heap,
            out_of_memory: snapshot.out_of_memory.clone(),
            survivors,
        });
    }

    /// The numbers of every group of `snapshot`'s tree (`root`, its own first), the errors of
    /// those estimated and what may be garbage, its groups interned as nodes.
    fn collected(&mut self, snapshot: &Snapshot, root: &Node) -> Collected {
        let index = self.frames.len();
        let mut collected = Collected {
            values: vec![(ROOT, root.objects, root.bytes)],
            estimates: Vec::new(),
            unconfirmed: Vec::new(),
            retained: Vec::new(),
        };
        if root.retained_bytes > 0 {
            collected
                .retained
                .push((ROOT, root.objects, root.retained_bytes));
        }
        if root.objects_unconfirmed > 0 || root.bytes_unconfirmed > 0 {
            collected
                .unconfirmed
                .push((ROOT, root.objects_unconfirmed, root.bytes_unconfirmed));
        }
        if root.estimated || root.objects_error > 0 {
            collected
                .estimates
                .push((ROOT, root.objects_error, root.bytes_error));
        }
        let roles: Vec<Role> = self
            .classifiers
            .iter()
            .map(|c| Role::of_classifier(c))
            .collect();
        self.collect(root, ROOT, 0, &roles, index, &mut collected);
        // Estimated snapshots mark every node, the root included.
        let estimated_snapshot = snapshot
            .exactness
            .as_ref()
            .is_some_and(|e| e.source() == memcity_proto::v1::exactness::Source::Estimate);
        if estimated_snapshot && collected.estimates.first().is_none_or(|e| e.0 != ROOT) {
            collected
                .estimates
                .insert(0, (ROOT, root.objects_error, root.bytes_error));
        }
        collected
    }

    fn collect(
        &mut self,
        node: &Node,
        id: NodeId,
        depth: usize,
        roles: &[Role],
        frame: usize,
        out: &mut Collected,
    ) {
        for child in &node.children {
            let child_id = match self.by_string.get(&(id, child.name)) {
                Some(&known) => known,
                None => {
                    let name = self.strings.resolve(child.name).to_string();
                    let role = roles.get(depth).unwrap_or(&Role::Unclassified);
                    let interned = self.intern(id, &name, role, frame);
                    // A placeholder's node is not kept for the id: a table that names it later
                    // (after a lost frame) gives later snapshots the real one.
                    if self.strings.knows(child.name) {
                        self.by_string.insert((id, child.name), interned);
                    }
                    interned
                }
            };
            self.nodes[child_id as usize].estimated |= child.estimated;
            out.values.push((child_id, child.objects, child.bytes));
            if child.retained_bytes > 0 {
                out.retained
                    .push((child_id, child.objects, child.retained_bytes));
            }
            if child.estimated {
                out.estimates
                    .push((child_id, child.objects_error, child.bytes_error));
            }
            if child.objects_unconfirmed > 0 || child.bytes_unconfirmed > 0 {
                out.unconfirmed.push((
                    child_id,
                    child.objects_unconfirmed,
                    child.bytes_unconfirmed,
                ));
            }
            self.collect(child, child_id, depth + 1, roles, frame, out);
        }
    }

    fn graph(&self, snapshot: &memcity_proto::v1::Snapshot) -> Graph {
        let name = |id: u32| self.strings.resolve(id).to_string();
        Graph {
            fields: snapshot
                .fields
                .iter()
                .map(|f| FieldRef {
                    from: name(f.from_type),
                    field: name(f.field),
                    is_static: f.is_static,
                    to: name(f.to_type),
                    referrers: f.referrers,
                    references: f.references,
                    max_fanout: f.max_fanout,
                    max_length: f.max_length,
                })
                .collect(),
            roots: snapshot.roots.iter().map(|r| self.root_ref(r)).collect(),
            owned: snapshot
                .owned
                .iter()
                .filter(|o| (o.root as usize) < snapshot.roots.len())
                .map(|o| OwnedRef {
                    root: o.root as usize,
                    level: o.level,
                    from: if o.level == 0 {
                        String::new()
                    } else {
                        name(o.from_type)
                    },
                    field: if o.level == 0 {
                        String::new()
                    } else {
                        name(o.field)
                    },
                    to: name(o.to_type),
                    references: o.references,
                    max_fanout: o.max_fanout,
                    max_length: o.max_length,
                })
                .collect(),
        }
    }

    fn root_ref(&self, r: &memcity_proto::v1::Root) -> RootRef {
        RootRef::from_proto(r, |id| self.strings.resolve(id).to_string())
    }

    /// Gives snapshot `index` a walk's graph (for sources that carry one beside `push_tree`).
    pub fn set_graph(&mut self, index: usize, graph: Graph) {
        if let Some(frame) = self.frames.get_mut(index).map(Arc::make_mut) {
            let before = frame.detail_bytes();
            frame.graph = Some(std::sync::Arc::new(graph));
            self.detail_bytes = self.detail_bytes - before + frame.detail_bytes();
        }
    }

    #[cfg(test)]
    pub(crate) fn frames_mut_for_tests(&mut self, index: usize) -> &mut Frame {
        Arc::make_mut(&mut self.frames[index])
    }

    /// Gives node `id` at snapshot `index` an estimate's 95 % error of `objects`.
    #[cfg(test)]
    pub(crate) fn set_error_for_tests(&mut self, index: usize, id: NodeId, objects: u64) {
        Arc::make_mut(&mut self.frames[index]).estimates = vec![(id, objects, objects * 16)];
    }

    /// Marks `objects` of node `id` at snapshot `index` as what may be garbage.
    #[cfg(test)]
    pub(crate) fn set_unconfirmed_for_tests(&mut self, index: usize, id: NodeId, objects: u64) {
        Arc::make_mut(&mut self.frames[index]).unconfirmed = vec![(id, objects, objects * 16)];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::{msg, node, row, sample};
    use crate::model::Metric;
    use memcity_proto::v1::{Handshake, SessionEnd};

    #[test]
    fn two_recordings_compare_by_key_paths() {
        let mut a = CityModel::new();
        a.push_tree(
            0,
            (30, 720),
            &[
                row(&["app"], "Package", 30),
                row(&["app", "Node"], "Type", 10),
                row(&["app", "Old"], "Type", 20),
            ],
            vec![],
        );
        let mut b = CityModel::new();
        // Another session: other node ids, a type the first never saw.
        b.push_tree(
            0,
            (95, 2280),
            &[
                row(&["lib"], "Package", 5),
                row(&["app"], "Package", 90),
                row(&["app", "New"], "Type", 5),
                row(&["app", "Node"], "Type", 85),
            ],
            vec![],
        );
        let m = CityModel::comparison(&a, 0, &b, 0).unwrap();
        assert_eq!(m.len(), 2);
        let node = m.find(&["app", "Node"]).unwrap();
        assert_eq!(m.absolute_growth(node, Metric::Objects), 75);
        let old = m.find(&["app", "Old"]).unwrap();
        assert_eq!(m.absolute_growth(old, Metric::Objects), -20);
        let new = m.find(&["app", "New"]).unwrap();
        assert_eq!(m.value(new, 0, Metric::Objects), 0);
        assert_eq!(m.value(new, 1, Metric::Objects), 5);
        assert_eq!(m.value(ROOT, 1, Metric::Objects), 95);
        assert!(CityModel::comparison(&a, 3, &b, 0)
            .unwrap_err()
            .contains("snapshot 4 does not exist"));
        // Each side keeps the object paths its recording carried up to that snapshot, so a
        // comparison names holders as the recording does.
        assert!(m.paths_at(1).is_none());
        Arc::make_mut(&mut b.frames[0]).paths = Some(std::sync::Arc::new(
            crate::leak::paths::Paths::new(Vec::new()),
        ));
        let m = CityModel::comparison(&a, 0, &b, 0).unwrap();
        assert_eq!(m.paths_at(1).map(|(at, _)| at), Some(1));
        // The first recording's paths say nothing of what holds the second's objects: its
        // full search must not judge the second's rises.
        Arc::make_mut(&mut a.frames[0]).paths = Some(std::sync::Arc::new(
            crate::leak::paths::Paths::new(Vec::new()),
        ));
        let m = CityModel::comparison(&a, 0, &b, 0).unwrap();
        assert!(m.frames[0].paths.is_none());
        // Under a focused search at the second's end, its last full one stands beside it.
        let focused = crate::leak::paths::Paths {
            focused: true,
            ..Default::default()
        };
        b.push_tree(1_000, (95, 2280), &[row(&["app"], "Package", 95)], vec![]);
        Arc::make_mut(&mut b.frames[1]).paths = Some(std::sync::Arc::new(focused));
        let m = CityModel::comparison(&a, 0, &b, 1).unwrap();
        assert!(m.paths_at(1).is_some_and(|(at, p)| at == 1 && p.focused));
        assert!(m.full_paths_at(1).is_some_and(|p| !p.focused));
    }

    #[test]
    fn snapshots_lifetimes_resolve_through_the_string_table_once() {
        use memcity_proto::v1::{Death, Lifetimes, Snapshot, StringTable};
        let mut s = CityModel::new();
        s.apply(&msg(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names: vec!["app.Cache".into(), "app.Loader.load(Loader.java:9)".into()],
        })))
        .unwrap();
        let snapshot = Snapshot {
            seq: 3,
            time_ms: 500,
            root: Some(node(0, 1, vec![])),
            lifetimes: Some(Lifetimes {
                deaths: vec![Death {
                    site: 2,
                    holder_type: 1,
                    weight: 12.0,
                    ..Default::default()
                }],
                deaths_booked: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        s.apply(&msg(Kind::Snapshot(snapshot.clone()))).unwrap();
        // Seen twice (a late join overlapping live messages): booked once.
        s.apply(&msg(Kind::Snapshot(snapshot))).unwrap();
        let pairs = s.lifetimes().pairs(&Default::default());
        assert_eq!(pairs.len(), 1);
        assert_eq!(
            (
                pairs[0].alloc.as_str(),
                pairs[0].death.as_str(),
                pairs[0].objects
            ),
            ("app.Loader", "app.Cache", 12.0)
        );
    }

    #[test]
    fn a_sites_frames_and_context_come_from_its_table_not_its_names_split() {
        use memcity_proto::v1::{Death, Lifetimes, Site, Snapshot, StringTable};
        // The agent's names join frames with " <- "; a frame with that in it would split wrong,
        // so what is read from the table shows the frames were taken from it.
        let (odd, app) = (
            "java.util.Odd.x <- y(Odd.java:1)",
            "app.Loader.load(Loader.java:9)",
        );
        let name = format!("{odd} <- ... <- {app}");
        let mut s = CityModel::new();
        s.apply(&msg(Kind::Strings(StringTable {
            first_id: 1,
            names: vec![odd.into(), app.into(), name.clone(), "app.Cache".into()],
            sites: vec![Site {
                name: 3,
                frames: vec![1, 2],
                skipped: true,
            }],
        })))
        .unwrap();
        let site = s.site(&name);
        assert_eq!(site.frames, [odd, app]);
        assert!(site.skipped);
        assert_eq!(memcity_proto::sites::split(&name).frames.len(), 3);
        let snapshot = Snapshot {
            root: Some(node(0, 1, vec![])),
            lifetimes: Some(Lifetimes {
                deaths: vec![Death {
                    site: 3,
                    holder_type: 4,
                    weight: 1.0,
                    ..Default::default()
                }],
                deaths_booked: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        s.apply(&msg(Kind::Snapshot(snapshot))).unwrap();
        let pairs = s.lifetimes().pairs(&Default::default());
        assert_eq!(
            pairs[0].alloc, "app.Loader",
            "the first application frame's class"
        );
    }

    #[test]
    fn apply_builds_leaves_with_names() {
        use memcity_proto::v1::{Snapshot, StringTable};
        let mut s = CityModel::new();
        s.apply(&msg(Kind::Handshake(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            ..Default::default()
        })))
        .unwrap();
        s.apply(&msg(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names: vec![
                "java.util".into(),
                "java.util.LinkedList$Node".into(),
                "java.lang".into(),
                "java.lang.String".into(),
            ],
        })))
        .unwrap();
        let snapshot = Snapshot {
            seq: 0,
            root: Some(node(
                0,
                30,
                vec![
                    node(1, 10, vec![node(2, 10, vec![])]),
                    node(3, 20, vec![node(4, 20, vec![])]),
                ],
            )),
            ..Default::default()
        };
        s.apply(&msg(Kind::Snapshot(snapshot.clone()))).unwrap();
        let leaves = s.leaves(0);
        assert_eq!(leaves.len(), 2);
        assert_eq!(leaves[0].path, ["java.util", "java.util.LinkedList$Node"]);
        assert_eq!(leaves[1].bytes, 200);
        assert!(s.leaves(5).is_empty());
        // The same snapshot again (a late join overlapping live messages) is kept once.
        s.apply(&msg(Kind::Snapshot(snapshot))).unwrap();
        assert_eq!(s.len(), 1);
        s.apply(&msg(Kind::Notice(memcity_proto::v1::Notice {
            dropped_snapshots: 3,
            trimmed_history: 2,
            message: String::new(),
        })))
        .unwrap();
        assert_eq!((s.dropped, s.trimmed), (3, 2));
        s.apply(&msg(Kind::End(SessionEnd {
            reason: "vm-death".into(),
            snapshots: 1,
        })))
        .unwrap();
        assert_eq!(s.end.as_ref().unwrap().reason, "vm-death");
    }

    #[test]
    fn newer_protocol_is_rejected_with_an_upgrade_hint() {
        let mut s = CityModel::new();
        let err = s
            .apply(&msg(Kind::Handshake(Handshake {
                protocol_version: memcity_proto::PROTOCOL_VERSION + 1,
                ..Default::default()
            })))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("upgrade this memcity to the agent's version"),
            "{err}"
        );
    }

    #[test]
    fn appending_keeps_meta_current_without_history_scans() {
        let mut m = sample();
        let b = m.find(&["p", "B"]).unwrap();
        let nodes = vec![
            (vec!["p".to_string()], "Package".to_string(), 5000, 0),
            (
                vec!["p".to_string(), "B".to_string()],
                "Type".to_string(),
                5000,
                0,
            ),
        ];
        m.push_tree(3000, (5000, 0), &nodes, vec![]);
        assert_eq!(m.len(), 4);
        assert_eq!(m.node(b).max_objects, 5000);
        assert_eq!(m.absolute_growth(b, Metric::Objects), 4950);
        assert_eq!(m.max_growth(Metric::Objects), 4950);
        // A is missing in the new snapshot: zero there.
        let a = m.find(&["p", "A"]).unwrap();
        assert_eq!(m.value(a, 3, Metric::Objects), 0);
    }

    /// The window ends at the first snapshot the heap ran out in, kept as snapshots arrive in
    /// any order and as old ones are forgotten.
    #[test]
    fn the_out_of_memory_snapshot_is_followed_through_late_arrivals_and_forgetting() {
        use memcity_proto::v1::{OutOfMemory, Snapshot};
        let mut s = CityModel::new();
        s.apply(&msg(Kind::Handshake(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            ..Default::default()
        })))
        .unwrap();
        let snap = |seq: u64, time_ms: u64, ran_out: bool| Snapshot {
            seq,
            time_ms,
            root: Some(node(0, 10, vec![])),
            out_of_memory: ran_out.then(OutOfMemory::default),
            ..Default::default()
        };
        for (seq, time, ran_out) in [
            (0, 0, false),
            (1, 1000, false),
            (3, 3000, true),
            (4, 4000, false),
        ] {
            s.apply(&msg(Kind::Snapshot(snap(seq, time, ran_out))))
                .unwrap();
        }
        assert_eq!(s.out_of_memory().map(|(i, _)| i), Some(2));
        // One dated before it (an import's) shifts it; a later one that also ran out does not
        // take its place.
        s.push_tree(2000, (10, 160), &[], vec![]);
        assert_eq!(s.frames()[2].time_ms, 2000);
        assert_eq!(s.out_of_memory().map(|(i, _)| i), Some(3));
        s.apply(&msg(Kind::Snapshot(snap(5, 5000, true)))).unwrap();
        assert_eq!(s.out_of_memory().map(|(i, _)| i), Some(3));
        assert_eq!(s.window().end, 3);
        s.forget_before(4);
        assert_eq!(
            s.out_of_memory().map(|(i, _)| i),
            Some(1),
            "the later one, now second"
        );
        s.forget_before(2);
        assert_eq!(s.out_of_memory(), None);
    }
}
