//! The session model: snapshots in time order, nodes identified by their key path, and the meta
//! data the city is drawn from (Memory Cities IV.B: the *max tree* for the layout, the *growth
//! tree* for colors and opacity).
//!
//! Appending a live snapshot costs time in the size of that snapshot and of the node table, never
//! in the length of the history, so long live sessions stay interactive.
//!
//! The model is a folder by concern: the snapshots and what each one holds (`frame.rs`),
//! applying a stream's messages and building a snapshot (`apply.rs`), the growth window and
//! what grew in it (`growth.rs`), what the object-path searches say of a type (`searches.rs`),
//! and the memory budget that thins the history (`thinning.rs`). The node table and the
//! queries on it are here.

mod apply;
mod dump;
mod frame;
mod growth;
mod searches;
mod thinning;

use std::collections::HashMap;
use std::sync::Arc;

use memcity_proto::strings::StringResolver;
use memcity_proto::v1::{Handshake, SessionEnd};

pub use apply::ProtocolError;
pub use dump::{DumpFacts, Retainer, RetainerStep};
pub use frame::{FieldRef, Frame, Graph, Leaf, OwnedRef, Reference};
pub use growth::Window;
pub use searches::{DeadRise, MIN_JUDGED_SHARE};
pub use thinning::{
    detail_budget_for_new_models, set_detail_budget_for_new_models, DEFAULT_DETAIL_BUDGET,
};

/// A node's identity across snapshots: an index into the model's node table, assigned the first
/// time its key path appears. Never its position in a snapshot.
pub type NodeId = u32;

/// The root ("Heap") is always node 0.
pub const ROOT: NodeId = 0;

/// The package of memcity's own objects (its JFR stream, helper class, canaries), each type's
/// share under the type's name. Never a suspect nor growth: it is not the application's.
pub const MEMCITY: &str = "(memcity)";

pub use crate::units::Metric;

#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    pub parent: Option<NodeId>,
    /// This level's key (a package, a type, a site).
    pub name: String,
    /// The classifier of this level (`Role::Type`, `Role::AllocationSite`);
    /// `Role::Unclassified` for the root.
    pub role: Role,
    pub depth: usize,
    /// Every child seen in any snapshot, in order of first appearance.
    pub children: Vec<NodeId>,
    /// Index of the first snapshot the node appears in.
    pub first_seen: usize,
    /// Largest objects and bytes over the whole session (the max tree).
    pub max_objects: u64,
    pub max_bytes: u64,
    /// The largest retained size over the snapshots that carry one (heap dumps').
    pub max_retained: u64,
    /// Its numbers are estimates in some snapshot (a site or thread level, scaled from samples).
    pub estimated: bool,
    /// memcity's own: in the top-level [`MEMCITY`] group (set once, when the node is made:
    /// its ancestors never change).
    pub own: bool,
}

impl NodeInfo {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    pub fn max(&self, metric: Metric) -> u64 {
        match metric {
            Metric::Objects => self.max_objects,
            Metric::Bytes => self.max_bytes,
            Metric::Retained => self.max_retained,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CityModel {
    pub handshake: Option<Handshake>,
    /// How the session ended, if it did (the JVM exited, or the agent turned itself off).
    pub end: Option<SessionEnd>,
    /// Snapshots the agent said this client lost (a slow reader).
    pub dropped: u64,
    /// Snapshots trimmed from the agent's history before this client joined.
    pub trimmed: u64,
    /// What the source said about itself for the user (a damaged recording's tail).
    pub warnings: Vec<String>,
    nodes: Vec<NodeInfo>,
    index: HashMap<(NodeId, String), NodeId>,
    /// The same by the session's string id of the name: a snapshot's node is found without
    /// resolving and copying its name (the ids of a session's string table never change).
    by_string: HashMap<(NodeId, u32), NodeId, foldhash::fast::RandomState>,
    frames: Vec<Arc<Frame>>,
    /// The first snapshot that carries an `OutOfMemory`, kept as frames come and go: the
    /// default window ends there, and the window is asked for per node.
    out_of_memory_at: Option<usize>,
    /// `None`: the whole session, following new snapshots.
    window: Option<Window>,
    strings: StringResolver,
    classifiers: Vec<String>,
    /// Largest absolute growth of any building in the window, per metric (objects, bytes).
    /// Worked out when first asked for after a change (`max_growth`), not at every snapshot: a
    /// recording's load pushes thousands and asks once. With the nodes it looked at: the work
    /// of a new snapshot, for the tests that hold it to the snapshot's own size however long
    /// the session.
    max_growth: std::sync::OnceLock<((u64, u64, u64), usize)>,
    /// Memory the snapshots' numbers take (`Frame::detail_bytes`), and what it may reach
    /// before older snapshots are thinned (`thin`); `None`: never thinned.
    detail_bytes: usize,
    detail_budget: Option<usize>,
    /// `detail_bytes` at which the next thinning runs: past the budget, and past what the last
    /// one left by a share of it, so that each thinning pays for many snapshots.
    thin_at: usize,
    /// Snapshots thinned out so far, and the last thinning's map from old indices to new ones
    /// (for a viewer's position in time: [`CityModel::take_thinning`]).
    thinned: u64,
    last_thinning: Option<Vec<usize>>,
    /// Where the sampled objects were born and died, over the whole session.
    lifetimes: crate::lifetimes::Lifetimes,
    /// `gather_lifetimes(false)`.
    skip_lifetimes: bool,
    /// Two snapshots of two recordings (`CityModel::comparison`): what grew from one to the
    /// other is the question, and two points tell a rise, not its trend.
    compared: bool,
}

/// What a level of the grouping is: the classifier that made it. Code asks "is this a type, a
/// site" by matching it; the text tooltips and the details panel show is `label`, so what they
/// say and what code decides on no longer share a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// No classifier: the heap (the root), and the levels above a node whose tree gave them no
    /// role of their own (`push_tree`), or deeper than the classifier chain.
    #[default]
    Unclassified,
    Package,
    Type,
    AllocationSite,
    Thread,
    /// A classifier memcity does not know (a Memory Cities export names its own, a newer agent
    /// may add some), by the name it came with. Never the label of a variant above, nor empty:
    /// `from_label` gives those their variant, so two roles are equal exactly when their labels
    /// are.
    Other(String),
}

impl Role {
    /// The role of a protocol classifier (`package`, `type`, `site`, `thread`, as the handshake
    /// and snapshots name them); another name is taken as a label.
    pub fn of_classifier(classifier: &str) -> Role {
        match classifier {
            "package" => Role::Package,
            "type" => Role::Type,
            "site" => Role::AllocationSite,
            "thread" => Role::Thread,
            other => Role::from_label(other),
        }
    }

    /// The role a label names: the inverse of `label` (Memory Cities exports and trees pushed
    /// directly name their classifiers the way tooltips show them).
    pub fn from_label(label: &str) -> Role {
        match label {
            "" => Role::Unclassified,
            "Package" => Role::Package,
            "Type" => Role::Type,
            "Allocation Site" => Role::AllocationSite,
            "Thread" => Role::Thread,
            other => Role::Other(other.to_string()),
        }
    }

    /// The human name tooltips and the details panel show ("Type", "Allocation Site"); empty
    /// for `Unclassified`.
    pub fn label(&self) -> &str {
        match self {
            Role::Unclassified => "",
            Role::Package => "Package",
            Role::Type => "Type",
            Role::AllocationSite => "Allocation Site",
            Role::Thread => "Thread",
            Role::Other(name) => name,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

impl CityModel {
    /// An allocation site's frames by its name: as the session's string table gave them, else
    /// the name split (a recording from before sites travelled, a name memcity gives).
    pub fn site<'a>(&'a self, name: &'a str) -> memcity_proto::sites::SiteFrames<&'a str> {
        self.strings.site(name)
    }

    pub fn new() -> Self {
        let budget = detail_budget_for_new_models();
        let mut model = Self {
            detail_budget: Some(budget),
            thin_at: budget,
            ..Self::default()
        };
        model.nodes.push(NodeInfo {
            parent: None,
            name: "Heap".into(),
            role: Role::Unclassified,
            depth: 0,
            children: Vec::new(),
            first_seen: 0,
            max_objects: 0,
            max_bytes: 0,
            max_retained: 0,
            estimated: false,
            own: false,
        });
        model
    }

    pub fn node(&self, id: NodeId) -> &NodeInfo {
        &self.nodes[id as usize]
    }

    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// The node with this key path below the root, if it ever appeared.
    pub fn find(&self, path: &[&str]) -> Option<NodeId> {
        let mut at = ROOT;
        for name in path {
            at = *self.index.get(&(at, name.to_string()))?;
        }
        Some(at)
    }

    /// The group named by `path`: names from the top level down, separated by `/`. A name may
    /// hold `/` itself (allocation sites, lambdas, JSON exports' keys): each level takes a child
    /// whose name, followed by `/` or the end, starts what is left, trying each such child.
    pub fn find_str(&self, path: &str) -> Option<NodeId> {
        fn walk(model: &CityModel, at: NodeId, rest: &str) -> Option<NodeId> {
            for &child in &model.nodes[at as usize].children {
                let Some(after) = rest.strip_prefix(model.nodes[child as usize].name.as_str())
                else {
                    continue;
                };
                if after.is_empty() {
                    return Some(child);
                }
                if let Some(found) = after.strip_prefix('/').and_then(|r| walk(model, child, r)) {
                    return Some(found);
                }
            }
            None
        }
        if path.is_empty() {
            return None;
        }
        walk(self, ROOT, path)
    }

    /// Key path of a node (names from below the root down to it).
    pub fn path(&self, id: NodeId) -> Vec<&str> {
        let mut out = Vec::new();
        let mut at = Some(id);
        while let Some(node) = at.filter(|&n| n != ROOT) {
            out.push(self.nodes[node as usize].name.as_str());
            at = self.nodes[node as usize].parent;
        }
        out.reverse();
        out
    }

    /// The nearest `Type` at or above `node` (sites and threads below a type belong to it).
    pub fn nearest_type(&self, node: NodeId) -> Option<NodeId> {
        let mut at = Some(node);
        while let Some(n) = at.filter(|&n| n != ROOT) {
            if self.nodes[n as usize].role == Role::Type {
                return Some(n);
            }
            at = self.nodes[n as usize].parent;
        }
        None
    }

    /// The group name references use for a node: its nearest type's name (sites and threads
    /// below a type belong to it), else its own name.
    pub fn reference_name(&self, node: NodeId) -> &str {
        &self.node(self.nearest_type(node).unwrap_or(node)).name
    }

    /// The node standing for a reference name: a `Type` of that name (the first found), else any
    /// node of that name (Memory Cities JSON names groups by their full keys).
    pub fn node_named(&self, name: &str) -> Option<NodeId> {
        let nodes = &self.nodes;
        let named = |want_type: bool| {
            (1..nodes.len())
                .find(|&i| nodes[i].name == name && (!want_type || nodes[i].role == Role::Type))
                .map(|i| i as NodeId)
        };
        named(true).or_else(|| named(false))
    }

    /// The `n` allocation sites below type nodes `types` holding most at snapshot `index` (those
    /// holding anything), largest first.
    pub fn top_sites(
        &self,
        types: &[NodeId],
        index: usize,
        metric: Metric,
        n: usize,
    ) -> Vec<(String, u64)> {
        let mut sites: Vec<(String, u64)> = types
            .iter()
            .flat_map(|&ty| self.node(ty).children.iter())
            .filter(|&&c| self.node(c).role == Role::AllocationSite)
            .map(|&c| (self.node(c).name.clone(), self.value(c, index, metric)))
            .filter(|s| s.1 > 0)
            .collect();
        sites.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        sites.truncate(n);
        sites
    }

    /// The levels from below the root down to `node`, each as "Role: name" (or the bare name
    /// where the level has no role), as tooltips and the details panel show them.
    pub fn labeled_path(&self, node: NodeId) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = Some(node);
        while let Some(n) = at.filter(|&n| n != ROOT) {
            let info = &self.nodes[n as usize];
            out.push(if info.role == Role::Unclassified {
                info.name.clone()
            } else {
                format!("{}: {}", info.role.label(), info.name)
            });
            at = info.parent;
        }
        out.reverse();
        out
    }

    fn intern(&mut self, parent: NodeId, name: &str, role: &Role, frame: usize) -> NodeId {
        if let Some(&id) = self.index.get(&(parent, name.to_string())) {
            return id;
        }
        let id = self.nodes.len() as NodeId;
        let depth = self.nodes[parent as usize].depth + 1;
        let own = if parent == ROOT {
            name == MEMCITY
        } else {
            self.nodes[parent as usize].own
        };
        self.nodes.push(NodeInfo {
            parent: Some(parent),
            name: name.to_string(),
            role: role.clone(),
            depth,
            children: Vec::new(),
            first_seen: frame,
            max_objects: 0,
            max_bytes: 0,
            max_retained: 0,
            estimated: false,
            own,
        });
        self.nodes[parent as usize].children.push(id);
        self.index.insert((parent, name.to_string()), id);
        id
    }

    /// Whether snapshots' lifetimes are gathered (on by default). A model that only needs
    /// the heap's groups (the agent's metrics) turns them off: they accumulate over the
    /// whole session.
    pub fn gather_lifetimes(&mut self, on: bool) {
        self.skip_lifetimes = !on;
    }

    /// The session's lifetimes (empty when no snapshot carried any).
    pub fn lifetimes(&self) -> &crate::lifetimes::Lifetimes {
        &self.lifetimes
    }

    /// The classifier chain of the newest snapshot (or the handshake's).
    pub fn classifiers(&self) -> &[String] {
        &self.classifiers
    }

    /// The roles of the tree's levels (their labels: "Package", "Type"), in the order they
    /// first appear from the top: the grouping of a session that names no classifier chain (a
    /// Memory Cities export).
    pub fn level_roles(&self) -> Vec<String> {
        let mut by_depth: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
        for node in &self.nodes[1..] {
            if node.role == Role::Unclassified {
                continue;
            }
            let at = by_depth.entry(node.depth).or_default();
            if !at.contains(&node.role.label()) {
                at.push(node.role.label());
            }
        }
        let mut out: Vec<String> = Vec::new();
        for label in by_depth.into_values().flatten() {
            if !out.iter().any(|o| o == label) {
                out.push(label.to_string());
            }
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use memcity_proto::v1::{stream_message::Kind, Node, StreamMessage};

    /// One node of a tree given to `push_tree`: its path, role and objects (24 bytes each).
    pub(crate) fn row(path: &[&str], role: &str, objects: u64) -> (Vec<String>, String, u64, u64) {
        (
            path.iter().map(|p| p.to_string()).collect(),
            role.to_string(),
            objects,
            objects * 24,
        )
    }

    /// A small session: package p with buildings A (grows 10 -> 1000), B (shrinks 50 -> 40)
    /// and C (appears in the second snapshot).
    pub(crate) fn sample() -> CityModel {
        let mut m = CityModel::new();
        let leaf = |name: &str, objects: u64| {
            (
                vec!["p".to_string(), name.to_string()],
                "Type".to_string(),
                objects,
                objects * 16,
            )
        };
        for (time, (a, b, c)) in [
            (0u64, (10u64, 50u64, 0u64)),
            (1000, (500, 45, 5)),
            (2000, (1000, 40, 5)),
        ] {
            let mut nodes = vec![(
                vec!["p".to_string()],
                "Package".to_string(),
                a + b + c,
                (a + b + c) * 16,
            )];
            nodes.push(leaf("A", a));
            nodes.push(leaf("B", b));
            if c > 0 {
                nodes.push(leaf("C", c));
            }
            m.push_tree(time, (a + b + c, (a + b + c) * 16), &nodes, vec![]);
        }
        m
    }

    pub(crate) fn msg(kind: Kind) -> StreamMessage {
        StreamMessage { kind: Some(kind) }
    }

    pub(crate) fn node(name: u32, objects: u64, children: Vec<Node>) -> Node {
        Node {
            name,
            objects,
            bytes: objects * 10,
            estimated: false,
            children,
            ..Default::default()
        }
    }

    #[test]
    fn a_path_string_finds_names_that_hold_slashes() {
        let mut m = CityModel::new();
        let nodes = vec![
            row(&["java.util"], "Package", 3),
            row(&["java.util", "ArrayList"], "Type", 1),
            row(&["java.util", "ArrayList", "a/B.m(B.java:3)"], "Site", 1),
            row(&["java.util", "ArrayList/x"], "Type", 2),
        ];
        m.push_tree(0, (3, 72), &nodes, vec![]);
        let find = |s: &str| m.find_str(s).map(|n| m.path(n).join("|"));
        assert_eq!(
            find("java.util/ArrayList"),
            Some("java.util|ArrayList".into())
        );
        assert_eq!(
            find("java.util/ArrayList/a/B.m(B.java:3)"),
            Some("java.util|ArrayList|a/B.m(B.java:3)".into())
        );
        // `ArrayList` is tried first and has no child `x`: the sibling named with the slash wins.
        assert_eq!(
            find("java.util/ArrayList/x"),
            Some("java.util|ArrayList/x".into())
        );
        assert_eq!(find("java.util/Array"), None);
        assert_eq!(find(""), None);
    }

    #[test]
    fn identity_is_the_key_path_and_missing_is_zero() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let c = m.find(&["p", "C"]).unwrap();
        assert_eq!(m.path(c), ["p", "C"]);
        assert_eq!(m.node(c).first_seen, 1);
        assert_eq!(m.value(c, 0, Metric::Objects), 0);
        assert_eq!(m.value(a, 2, Metric::Bytes), 16000);
        assert_eq!(m.node(a).role, Role::Type);
        assert_eq!(
            m.node(m.find(&["p"]).unwrap()).children,
            [a, m.find(&["p", "B"]).unwrap(), c]
        );
    }
}
