//! The session model: snapshots in time order, nodes identified by their key path, and the meta
//! data the city is drawn from (Memory Cities IV.B: the *max tree* for the layout, the *growth
//! tree* for colors and opacity).
//!
//! Appending a live snapshot costs time in the size of that snapshot and of the node table, never
//! in the length of the history, so long live sessions stay interactive.

use std::collections::HashMap;
use std::sync::Arc;

use memcity_proto::strings::StringResolver;
use memcity_proto::thinning;
use memcity_proto::v1::{
    stream_message::Kind, Exactness, Handshake, Node, SessionEnd, StreamMessage, WalkCost,
};
use memcity_proto::version_mismatch_hint;

use crate::leak::roots::RootRef;

/// A node's identity across snapshots: an index into the model's node table, assigned the first
/// time its key path appears. Never its position in a snapshot.
pub type NodeId = u32;

/// The root ("Heap") is always node 0.
pub const ROOT: NodeId = 0;

/// The trigger of the snapshot the growth window leaves out as warm-up (the VM's start).
const WARM_UP: i32 = memcity_proto::v1::snapshot::Trigger::Start as i32;

/// Sampled objects of a type a complete search looked for, at least this many, for the share
/// it reached to judge the type's rise (`CityModel::dead_rise_at`).
pub const MIN_JUDGED_SHARE: u64 = 20;

/// Why a type's rise is of dead objects (`CityModel::dead_rise_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadRise {
    /// A complete search looked for `looked_for` of the type's sampled objects and reached too
    /// few to make the rise (none, or `looked_for - unreached`).
    Unreached { unreached: u64, looked_for: u64 },
    /// A complete search carried at snapshot `at` counted `objects` of the type reachable from
    /// any root where the estimates said `estimated`: a quarter of their rise at most.
    Counted {
        objects: u64,
        estimated: u64,
        at: usize,
    },
}

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
        }
    }
}

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
    values: Vec<(NodeId, u64, u64)>,
    /// `(node, objects error, bytes error)`, sorted by node id, for every node whose numbers are
    /// estimates in this snapshot (errors are 95 % half-widths, 0 when the agent gave none).
    estimates: Vec<(NodeId, u64, u64)>,
    /// `(node, objects, bytes)` no old-generation marking has confirmed (see
    /// `Node.objects_unconfirmed`), sorted by node id, for the nodes that have any.
    unconfirmed: Vec<(NodeId, u64, u64)>,
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
    survivors: Option<Vec<(u32, u32, f64)>>,
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

/// A stream this model cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

impl Frame {
    /// About what this snapshot takes in memory: its groups' values, errors and doubts, its
    /// survivors, its type references, and the walk's graph and object paths it carried (by
    /// their entries, at a typical entry's size with its names).
    fn detail_bytes(&self) -> usize {
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
            + self.survivors.as_ref().map_or(0, |s| s.capacity() * 16)
            + self
                .references
                .iter()
                .map(|r| std::mem::size_of::<Reference>() + r.from.len() + r.to.len())
                .sum::<usize>()
    }

    fn get(&self, node: NodeId) -> Option<(u64, u64)> {
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

/// What one snapshot's tree gives a frame: values of every node, errors of the estimated ones.
struct Collected {
    values: Vec<(NodeId, u64, u64)>,
    estimates: Vec<(NodeId, u64, u64)>,
    unconfirmed: Vec<(NodeId, u64, u64)>,
}

/// The growth window ("suspicious time window"): snapshot indices `start..=end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub end: usize,
}

/// Memory a model's snapshots' numbers may take before its older history is thinned (see
/// `CityModel::thin`): some 2,000 snapshots of 3,000 groups in full, however long the session.
pub const DEFAULT_DETAIL_BUDGET: usize = 384 << 20;

/// The budget new models start with: [`DEFAULT_DETAIL_BUDGET`], or what the process was told
/// (`memcity --memory`), for every session it opens.
static DETAIL_BUDGET: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(DEFAULT_DETAIL_BUDGET);

/// Sets the budget of the models this process makes from now on (see [`DETAIL_BUDGET`]).
pub fn set_detail_budget_for_new_models(bytes: usize) {
    DETAIL_BUDGET.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The budget of the models this process makes (see [`DETAIL_BUDGET`]).
pub fn detail_budget_for_new_models() -> usize {
    DETAIL_BUDGET.load(std::sync::atomic::Ordering::Relaxed)
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
    max_growth: std::sync::OnceLock<((u64, u64), usize)>,
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
    pub fn new() -> Self {
        let budget = DETAIL_BUDGET.load(std::sync::atomic::Ordering::Relaxed);
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

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn frame(&self, index: usize) -> Option<&Frame> {
        self.frames.get(index).map(|f| &**f)
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
            estimated: false,
            own,
        });
        self.nodes[parent as usize].children.push(id);
        self.index.insert((parent, name.to_string()), id);
        id
    }

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

    /// Sets the memory the snapshots' numbers may take before the older ones are thinned
    /// (`None`: never; a model that thins its history itself, as the agent's metrics do).
    pub fn set_detail_budget(&mut self, bytes: Option<usize>) {
        self.detail_budget = bytes;
        self.thin_at = bytes.unwrap_or(usize::MAX);
        if bytes.is_some_and(|b| self.detail_bytes > b) {
            self.thin();
        }
    }

    /// Snapshots thinned out of the session's history so far, to keep its memory bounded (or
    /// its recording under a size: [`CityModel::add_thinned`]).
    pub fn thinned(&self) -> u64 {
        self.thinned
    }

    /// Counts `n` snapshots its source left out (a recording kept under `--max-size`).
    pub fn add_thinned(&mut self, n: u64) {
        self.thinned += n;
    }

    /// The map from snapshot indices before the last thinning to those after it, once: a
    /// viewer moves its position in time, its picks and its window by it.
    pub fn take_thinning(&mut self) -> Option<Vec<usize>> {
        self.last_thinning.take()
    }

    /// Halves the history older than the newest snapshots (those within a quarter of the
    /// budget) on an even grid in time (`memcity_proto::thinning`: of each step, the snapshot
    /// carrying object paths, then a walk, then the earliest). Never thinned: the first
    /// snapshot, the warm-up's end, the one the heap ran out in, a window's ends set by hand,
    /// and the newest snapshots. Work: one pass over the snapshots, and the next thinning is
    /// `budget / 4` bytes of new snapshots away.
    fn thin(&mut self) {
        let Some(budget) = self.detail_budget else {
            return;
        };
        let n = self.frames.len();
        // The newest snapshots, within a quarter of the budget (at least 16), stay whole.
        let entries: Vec<(u64, bool)> = self
            .frames
            .iter()
            .map(|f| (f.detail_bytes() as u64, true))
            .collect();
        let recent_from = thinning::newest_from(&entries, budget as u64);
        let mut protected = vec![0, self.warm_start()];
        protected.extend(self.out_of_memory_at);
        if let Some(w) = self.window {
            protected.extend([w.start, w.end]);
        }
        let older: Vec<thinning::Candidate> = self.frames[..recent_from]
            .iter()
            .enumerate()
            .map(|(i, f)| thinning::Candidate {
                time_ms: f.time_ms,
                rank: thinning::rank(f.paths.is_some(), !f.is_estimated()),
                protected: protected.contains(&i),
            })
            .collect();
        let mut keep = thinning::keep_evenly(&older);
        keep.resize(n, true);
        let dropped = keep.iter().filter(|&&k| !k).count();
        if dropped > 0 {
            let map = self.retain_frames(|i, _| keep[i]);
            self.last_thinning = Some(match self.last_thinning.take() {
                // Two thinnings before the viewer looked: one map after the other.
                Some(earlier) => earlier.iter().map(|&i| map[i]).collect(),
                None => map,
            });
            self.thinned += dropped as u64;
        }
        self.thin_at = budget.max(self.detail_bytes + budget / 4);
    }

    /// Forgets the snapshots before `index`, for a model that follows a session for days in a
    /// bounded memory (the agent's metrics look back a fixed span): see [`Self::retain_frames`].
    pub fn forget_before(&mut self, index: usize) {
        let _ = self.retain_frames(|i, _| i >= index);
    }

    /// Keeps only the snapshots `keep` accepts (called with each one's index, oldest first):
    /// a model that follows a session for days forgets the old ones and thins the rest.
    /// Later snapshots' indices shift down, and a window set by hand maps onto what is left
    /// (clamped). Nodes stay (a type that was once live keeps its id), with their session
    /// maxima; `first_seen` becomes the first kept snapshot at or after it. Returns each old
    /// index's new one (a dropped snapshot's is the next kept one's, or the last's).
    pub fn retain_frames(&mut self, mut keep: impl FnMut(usize, &Frame) -> bool) -> Vec<usize> {
        let kept: Vec<bool> = self
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| keep(i, f))
            .collect();
        if kept.iter().all(|&k| k) {
            return (0..kept.len()).collect();
        }
        // new_index[i]: how many kept snapshots come before old index i.
        let mut new_index = Vec::with_capacity(kept.len() + 1);
        let mut count = 0;
        for &k in &kept {
            new_index.push(count);
            count += usize::from(k);
        }
        new_index.push(count);
        let mut flags = kept.iter();
        self.frames.retain(|_| *flags.next().unwrap_or(&true));
        let last = self.frames.len().saturating_sub(1);
        let map = |i: usize| new_index[i.min(kept.len())].min(last);
        for node in &mut self.nodes {
            node.first_seen = map(node.first_seen);
        }
        self.window = self.window.map(|w| Window {
            start: map(w.start),
            end: map(w.end),
        });
        self.out_of_memory_at = self.frames.iter().position(|f| f.out_of_memory.is_some());
        self.detail_bytes = self.frames.iter().map(|f| f.detail_bytes()).sum();
        self.update_growth();
        (0..kept.len()).map(map).collect()
    }

    /// Whether snapshots' lifetimes are gathered (on by default). A model that only needs
    /// the heap's groups (the agent's metrics) turns them off: they accumulate over the
    /// whole session.
    pub fn gather_lifetimes(&mut self, on: bool) {
        self.skip_lifetimes = !on;
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

    /// Feeds one message of a live stream or recording.
    /// Feeds one message of a live stream or recording. A handshake of another protocol version
    /// is an error that says which side to upgrade.
    pub fn apply(&mut self, message: &StreamMessage) -> Result<(), ProtocolError> {
        match &message.kind {
            Some(Kind::Handshake(h)) => {
                if let Some(hint) = version_mismatch_hint(h.protocol_version) {
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
            Some(Kind::Snapshot(snapshot)) => {
                // A snapshot seen twice (a late join overlapping live messages) is kept once.
                if self
                    .frames
                    .last()
                    .is_some_and(|last| snapshot.seq <= last.seq)
                {
                    return Ok(());
                }
                if !snapshot.classifiers.is_empty() {
                    self.classifiers = snapshot.classifiers.clone();
                }
                if let Some(lifetimes) =
                    snapshot.lifetimes.as_ref().filter(|_| !self.skip_lifetimes)
                {
                    let strings = &self.strings;
                    self.lifetimes
                        .add(snapshot.time_ms, lifetimes, |id| strings.resolve(id));
                }
                let Some(root) = &snapshot.root else {
                    return Ok(());
                };
                let survivors = snapshot.lifetimes.as_ref().map(|l| {
                    l.alive
                        .iter()
                        .map(|s| (s.r#type, s.site, s.by_gc_age.iter().sum()))
                        .collect()
                });
                let index = self.frames.len();
                let mut collected = Collected {
                    values: vec![(ROOT, root.objects, root.bytes)],
                    estimates: Vec::new(),
                    unconfirmed: Vec::new(),
                };
                if root.objects_unconfirmed > 0 || root.bytes_unconfirmed > 0 {
                    collected.unconfirmed.push((
                        ROOT,
                        root.objects_unconfirmed,
                        root.bytes_unconfirmed,
                    ));
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
                let Collected {
                    values,
                    mut estimates,
                    unconfirmed,
                } = collected;
                // Estimated snapshots mark every node, the root included.
                let estimated_snapshot = snapshot
                    .exactness
                    .as_ref()
                    .is_some_and(|e| e.source() == memcity_proto::v1::exactness::Source::Estimate);
                if estimated_snapshot && estimates.first().is_none_or(|e| e.0 != ROOT) {
                    estimates.insert(0, (ROOT, root.objects_error, root.bytes_error));
                }
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
                    references,
                    heap: snapshot.heap,
                    out_of_memory: snapshot.out_of_memory.clone(),
                    survivors,
                });
            }
            Some(Kind::Notice(notice)) => {
                self.dropped += notice.dropped_snapshots;
                self.trimmed += notice.trimmed_history;
            }
            Some(Kind::End(end)) => self.end = Some(end.clone()),
            None => {}
        }
        Ok(())
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

    /// Gives snapshot `index` a walk's graph (for sources that carry one beside `push_tree`).
    pub fn set_graph(&mut self, index: usize, graph: Graph) {
        if let Some(frame) = self.frames.get_mut(index).map(Arc::make_mut) {
            let before = frame.detail_bytes();
            frame.graph = Some(std::sync::Arc::new(graph));
            self.detail_bytes = self.detail_bytes - before + frame.detail_bytes();
        }
    }

    fn root_ref(&self, r: &memcity_proto::v1::Root) -> RootRef {
        RootRef::from_proto(r, |id| self.strings.resolve(id).to_string())
    }

    /// The newest paths carried at or before snapshot `index`, with the index that carried them.
    pub fn paths_at(
        &self,
        index: usize,
    ) -> Option<(usize, &std::sync::Arc<crate::leak::paths::Paths>)> {
        self.newest_paths(index, |_| true)
    }

    /// The newest paths at or before `index` from a search of every root (not a focused one,
    /// which goes through the roots that held the last finds alone).
    pub fn full_paths_at(
        &self,
        index: usize,
    ) -> Option<&std::sync::Arc<crate::leak::paths::Paths>> {
        self.newest_paths(index, |p| !p.focused).map(|(_, p)| p)
    }

    /// `(unreached, looked for)` of `type_name`'s samples when the newest full search at or
    /// before `index` reached none of them (`Paths::all_unreachable`) and no focused search
    /// since reached any: a focused search, which leaves roots unsearched, judges no sample
    /// dead, but one it reached is alive.
    pub fn all_unreachable_at(&self, index: usize, type_name: &str) -> Option<(u64, u64)> {
        let end = index.min(self.frames.len().checked_sub(1)?);
        for frame in self.frames[..=end].iter().rev() {
            let Some(paths) = frame.paths.as_ref() else {
                continue;
            };
            if !paths.focused {
                return paths.all_unreachable(type_name);
            }
            if paths.reached_any(type_name) {
                return None;
            }
        }
        None
    }

    /// Why `type_name`'s rise over snapshots `start..=end` is of dead objects, if a complete
    /// search says so; `objects` gives its estimated count at a snapshot. The rest is garbage
    /// awaiting a marking (generational ZGC keeps what a sample's weak reference holds through
    /// its young collections; any collector between old markings), whatever the estimates
    /// count.
    ///
    /// The newest complete search's own count first: it went through every root and counted
    /// the type's objects one by one. After most of the rise the estimates show, and holding a
    /// quarter of what they had risen by then at most, the rise is dead. Else the newest full
    /// search's samples: objects alive at the share it reached, `last` of them at most, would
    /// be no more than the `first` there were (all of them unreached is the same verdict,
    /// `all_unreachable_at`).
    pub fn dead_rise_at(
        &self,
        start: usize,
        end: usize,
        type_name: &str,
        objects: impl Fn(usize) -> u64,
    ) -> Option<DeadRise> {
        let (first, last) = (objects(start), objects(end));
        if let Some((unreached, looked_for)) = self.all_unreachable_at(end, type_name) {
            return Some(DeadRise::Unreached {
                unreached,
                looked_for,
            });
        }
        if last <= first {
            return None;
        }
        // The newest count, from a search that went through every root: the newest full
        // one may have stopped early or had no listing, where an older one counted.
        if let Some((at, counted)) = self
            .newest_paths(end, |p| !p.focused && p.complete())
            .and_then(|(at, p)| Some((at, p.counted_of(type_name)?)))
        {
            // Counted after half the rise or more (a rise made later, a leak begun since the
            // search, waits for the next full search's count), and of the rise estimated then
            // a quarter at most was there: a leak's estimates follow its count.
            let estimated = objects(at);
            let risen = estimated.saturating_sub(first);
            // Saturating: a crafted recording's counts may be anything.
            if at > start
                && risen.saturating_mul(2) >= last - first
                && counted <= first.saturating_add(risen / 4)
            {
                return Some(DeadRise::Counted {
                    objects: counted,
                    estimated,
                    at,
                });
            }
        }
        let paths = self.full_paths_at(end)?;
        let (unreached, looked_for) = paths.unreachable(type_name)?;
        if looked_for < MIN_JUDGED_SHARE {
            return None;
        }
        // The samples reached, or with their weights the objects they stand for as so many
        // samples: a type sampled by bytes has its big objects over-represented, and the
        // share of its objects alive is what a rise is made of.
        let reached = paths
            .reached_weight_share(type_name)
            .map_or(looked_for.saturating_sub(unreached) as f64, |share| {
                share * looked_for as f64
            });
        // The share reached at the top of its likely range (a binomial's two standard
        // deviations, roughly), so that a few samples' chance does not make a rise dead.
        let reached = reached + 1.0;
        let share = ((reached + 2.0 * reached.sqrt()) / looked_for as f64).min(1.0);
        (share * last as f64 <= first as f64).then_some(DeadRise::Unreached {
            unreached,
            looked_for,
        })
    }

    fn newest_paths(
        &self,
        index: usize,
        wanted: impl Fn(&crate::leak::paths::Paths) -> bool,
    ) -> Option<(usize, &std::sync::Arc<crate::leak::paths::Paths>)> {
        let end = index.min(self.frames.len().checked_sub(1)?);
        (0..=end).rev().find_map(|i| {
            self.frames[i]
                .paths
                .as_ref()
                .filter(|p| wanted(p))
                .map(|p| (i, p))
        })
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

    /// The session's lifetimes (empty when no snapshot carried any).
    pub fn lifetimes(&self) -> &crate::lifetimes::Lifetimes {
        &self.lifetimes
    }

    /// The snapshots, each shared: a copy of the model (`Clone`) shares them, as the viewer's
    /// suspects worked out beside the drawing do, and a change to one copies only it.
    pub fn frames(&self) -> &[Arc<Frame>] {
        &self.frames
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

    /// Value of a node in snapshot `index`; a node missing there is zero.
    pub fn value(&self, node: NodeId, index: usize, metric: Metric) -> u64 {
        self.frames.get(index).and_then(|f| f.get(node)).map_or(
            0,
            |(objects, bytes)| match metric {
                Metric::Objects => objects,
                Metric::Bytes => bytes,
            },
        )
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

    /// The window growth and colors use. By default the whole session after its warm-up: the
    /// snapshot the agent takes as the VM starts holds none of the application's objects yet, so
    /// growth from it is start-up, not a trend (a steady application would look like a leak).
    pub fn window(&self) -> Window {
        self.window.unwrap_or_else(|| {
            // A session the heap ran out in: the leak is the growth up to the error, not the
            // flat tail of a dying JVM after it.
            let end = self
                .out_of_memory()
                .map_or(self.frames.len().saturating_sub(1), |(index, _)| index);
            Window {
                start: self.warm_start().min(end),
                end,
            }
        })
    }

    /// The snapshot taken when the Java heap ran out, if the session has one: its index and
    /// the error.
    pub fn out_of_memory(&self) -> Option<(usize, &memcity_proto::v1::OutOfMemory)> {
        let i = self.out_of_memory_at?;
        self.frames[i].out_of_memory.as_ref().map(|o| (i, o))
    }

    /// The first snapshot after start-up: past the VM-start snapshot, when at least two remain.
    pub fn warm_start(&self) -> usize {
        let start = WARM_UP;
        self.frames
            .iter()
            .position(|f| f.trigger != start)
            .filter(|&i| i + 1 < self.frames.len())
            .unwrap_or(0)
    }

    /// Whether snapshot `index` is the VM's start, which the growth window leaves out as
    /// warm-up (`warm_start`).
    pub fn is_warm_up(&self, index: usize) -> bool {
        self.frames.get(index).is_some_and(|f| f.trigger == WARM_UP)
    }

    /// Marks snapshot `index` as the VM's start (an import of an export that says so).
    pub fn set_warm_up(&mut self, index: usize) {
        if let Some(frame) = self.frames.get_mut(index).map(Arc::make_mut) {
            frame.trigger = WARM_UP;
        }
        self.update_growth();
    }

    /// Restricts growth and colors to `start..=end` (clamped); `None` goes back to the whole
    /// session, following new snapshots.
    pub fn set_window(&mut self, window: Option<Window>) {
        let last = self.frames.len().saturating_sub(1);
        self.window = window.map(|w| {
            let start = w.start.min(last);
            Window {
                start,
                end: w.end.clamp(start, last),
            }
        });
        self.update_growth();
    }

    /// First value in the window.
    pub fn first(&self, node: NodeId, metric: Metric) -> u64 {
        self.value(node, self.window().start, metric)
    }

    /// Absolute growth: first to last snapshot of the window (negative when shrinking).
    pub fn absolute_growth(&self, node: NodeId, metric: Metric) -> i64 {
        let w = self.window();
        crate::units::growth(
            self.value(node, w.start, metric),
            self.value(node, w.end, metric),
        )
    }

    /// Relative growth: first snapshot of the window to `index`.
    pub fn relative_growth(&self, node: NodeId, index: usize, metric: Metric) -> i64 {
        crate::units::growth(self.first(node, metric), self.value(node, index, metric))
    }

    /// The 95 % error of `node`'s value at `index` (0 when exact).
    pub fn error(&self, node: NodeId, index: usize, metric: Metric) -> u64 {
        self.frames
            .get(index)
            .and_then(|f| f.estimate(node))
            .map_or(0, |(objects, bytes)| match metric {
                Metric::Objects => objects,
                Metric::Bytes => bytes,
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
            })
    }

    /// Growth from the window's first snapshot to `index` that the numbers can back: the
    /// relative growth less the errors of both ends (toward zero), so an estimate's wobble is
    /// not painted as growth; and less what may be garbage no marking has found yet at the
    /// higher end (a value can only be too high by its unconfirmed part), so an application
    /// promoting short-lived objects is not painted as leaking between old collections.
    pub fn significant_growth(&self, node: NodeId, index: usize, metric: Metric) -> i64 {
        if self.is_own(node) {
            // memcity's own objects (its JFR stream, canaries) are not the application's
            // growth: never coloured, never ranked.
            return 0;
        }
        let start = self.window().start;
        let growth = self.relative_growth(node, index, metric);
        let error = self
            .error(node, index, metric)
            .saturating_add(self.error(node, start, metric));
        let clamp = |v: u64| v.min(i64::MAX as u64) as i64;
        if growth > 0 {
            let doubt = error.saturating_add(self.unconfirmed(node, index, metric));
            growth.saturating_sub(clamp(doubt)).max(0)
        } else {
            let doubt = error.saturating_add(self.unconfirmed(node, start, metric));
            growth.saturating_add(clamp(doubt)).min(0)
        }
    }

    /// Whether `node` is memcity's own: in the top-level [`MEMCITY`] group.
    pub fn is_own(&self, node: NodeId) -> bool {
        self.nodes.get(node as usize).is_some_and(|n| n.own)
    }

    /// The largest absolute growth of any building in the window (at least 1, it divides).
    pub fn max_growth(&self, metric: Metric) -> u64 {
        let ((objects, bytes), _) = *self.max_growth.get_or_init(|| self.find_max_growth());
        match metric {
            Metric::Objects => objects,
            Metric::Bytes => bytes,
        }
        .max(1)
    }

    /// The window or its snapshots changed: the largest growth is worked out again when asked.
    fn update_growth(&mut self) {
        self.max_growth = std::sync::OnceLock::new();
    }

    /// Work proportional to the window's last snapshot, whatever the session's length: a
    /// leaf absent from it has 0 there and cannot have grown. Returns the largest growth and
    /// the nodes looked at.
    fn find_max_growth(&self) -> ((u64, u64), usize) {
        // Growth under 2 % of the heap is not worth red: normalizing by the largest growth alone
        // would paint the biggest wobble of a steady heap as red as a leak.
        let end = self.window().end;
        let Some(frame) = self.frames.get(end) else {
            return ((0, 0), 0);
        };
        let heap = frame.get(ROOT).unwrap_or((0, 0));
        let mut best = (heap.0 / 50, heap.1 / 50);
        for &(id, _, _) in frame.values() {
            if self.nodes[id as usize].is_leaf() {
                best.0 = best
                    .0
                    .max(self.significant_growth(id, end, Metric::Objects).max(0) as u64);
                best.1 = best
                    .1
                    .max(self.significant_growth(id, end, Metric::Bytes).max(0) as u64);
            }
        }
        (best, frame.values().len())
    }

    /// Nodes the last working out of the largest growth looked at (0 before one).
    #[cfg(test)]
    fn growth_visits(&self) -> usize {
        self.max_growth.get().map_or(0, |&(_, visits)| visits)
    }

    /// The `n` strongest absolute growers of the window (leaves that grew), strongest first.
    /// Selects before sorting: a frame asks for a handful out of tens of thousands.
    pub fn top_growers(&self, metric: Metric, n: usize) -> Vec<NodeId> {
        if self.frames.is_empty() {
            return Vec::new();
        }
        let w = self.window();
        let (start, end) = (&self.frames[w.start.min(w.end)], &self.frames[w.end]);
        let pick = |v: &(NodeId, u64, u64)| match metric {
            Metric::Objects => v.1,
            Metric::Bytes => v.2,
        };
        // Both frames are sorted by node: one merge gives every node's growth.
        let mut growth: Vec<(i64, NodeId)> = Vec::new();
        let mut before = start.values.iter().peekable();
        for v in &end.values {
            while before.next_if(|b| b.0 < v.0).is_some() {}
            let first = before.next_if(|b| b.0 == v.0).map_or(0, pick);
            let g = crate::units::growth(first, pick(v));
            if g > 0 && self.nodes[v.0 as usize].is_leaf() && v.0 != ROOT && !self.is_own(v.0) {
                growth.push((-g, v.0));
            }
        }
        if growth.len() > n && n > 0 {
            growth.select_nth_unstable(n - 1);
        }
        growth.truncate(n);
        growth.sort_unstable();
        growth.into_iter().map(|(_, id)| id).collect()
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

    /// Buildings (leaves) ranked by absolute growth in the window, strongest first.
    pub fn strongest_growers(&self, metric: Metric) -> Vec<NodeId> {
        let mut leaves: Vec<NodeId> = (0..self.nodes.len() as NodeId)
            .filter(|&id| id != ROOT && self.nodes[id as usize].is_leaf())
            .collect();
        leaves.sort_by_key(|&id| (std::cmp::Reverse(self.absolute_growth(id, metric)), id));
        leaves
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

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

    fn msg(kind: Kind) -> StreamMessage {
        StreamMessage { kind: Some(kind) }
    }

    fn node(name: u32, objects: u64, children: Vec<Node>) -> Node {
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
    fn snapshots_lifetimes_resolve_through_the_string_table_once() {
        use memcity_proto::v1::{Death, Lifetimes, Snapshot, StringTable};
        let mut s = CityModel::new();
        s.apply(&msg(Kind::Strings(StringTable {
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
    fn a_new_snapshot_costs_its_own_groups_however_long_the_session() {
        let mut m = CityModel::new();
        let push = |m: &mut CityModel, i: u64| {
            let nodes: Vec<(Vec<String>, String, u64, u64)> = (0..50)
                .map(|g| {
                    (
                        vec!["p".to_string(), format!("T{g}")],
                        "Type".to_string(),
                        100 + i * g,
                        1600,
                    )
                })
                .collect();
            m.push_tree(i * 1000, (5000, 80_000), &nodes, vec![]);
        };
        for i in 0..10 {
            push(&mut m, i);
            m.max_growth(Metric::Objects); // a live viewer asks at every frame
        }
        let early = m.growth_visits();
        for i in 10..2000 {
            push(&mut m, i);
            m.max_growth(Metric::Objects);
        }
        assert_eq!(
            m.growth_visits(),
            early,
            "the same work at 2,000 snapshots as at 10"
        );
        assert!(early <= 52, "one root, one package, 50 types: {early}");
        // And the growth it keeps is the window's: T49 rose the most.
        let t49 = m.find(&["p", "T49"]).unwrap();
        assert_eq!(
            m.max_growth(Metric::Objects) as i64,
            m.significant_growth(t49, 1999, Metric::Objects)
        );
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
            err.to_string().contains("upgrade the memcity viewer"),
            "{err}"
        );
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

    #[test]
    fn meta_data_max_first_growth() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let b = m.find(&["p", "B"]).unwrap();
        assert_eq!(m.node(a).max_objects, 1000);
        assert_eq!(m.node(b).max_objects, 50);
        assert_eq!(m.first(a, Metric::Objects), 10);
        assert_eq!(m.absolute_growth(a, Metric::Objects), 990);
        assert_eq!(m.absolute_growth(b, Metric::Objects), -10);
        assert_eq!(m.relative_growth(a, 1, Metric::Objects), 490);
        assert_eq!(m.max_growth(Metric::Objects), 990);
        assert_eq!(m.strongest_growers(Metric::Objects)[0], a);
    }

    /// memcity's own objects grow as its JFR stream works: never the application's growth,
    /// whatever their type shares with the application's.
    #[test]
    fn memcitys_own_growth_is_never_growth() {
        let mut m = CityModel::new();
        for snapshot in 0..3u64 {
            let rows = vec![
                (
                    vec![MEMCITY.to_string(), "byte[]".to_string()],
                    "Type".to_string(),
                    100 + snapshot * 50_000,
                    1600 + snapshot * 800_000,
                ),
                (
                    vec!["(primitive arrays)".to_string(), "byte[]".to_string()],
                    "Type".to_string(),
                    100 + snapshot * 10_000,
                    1600 + snapshot * 160_000,
                ),
            ];
            m.push_tree(snapshot * 1000, (1, 1), &rows, vec![]);
        }
        let ours = m.node_named(MEMCITY).unwrap();
        let theirs = m.node_named("(primitive arrays)").unwrap();
        let [our_bytes, their_bytes] = [ours, theirs].map(|p| {
            (0..m.nodes().len() as NodeId)
                .find(|&id| m.node(id).parent == Some(p))
                .unwrap()
        });
        assert!(m.is_own(our_bytes) && m.is_own(ours) && !m.is_own(their_bytes));
        assert_eq!(m.significant_growth(our_bytes, 2, Metric::Objects), 0);
        assert_eq!(
            m.significant_growth(their_bytes, 2, Metric::Objects),
            20_000
        );
        assert_eq!(m.top_growers(Metric::Objects, 5), [their_bytes]);
    }

    #[test]
    fn top_growers_agree_with_the_full_ranking() {
        // 300 leaves in 3 packages; values pseudo-random, some appear late, some vanish.
        let mut m = CityModel::new();
        for snapshot in 0..4u64 {
            let mut nodes = Vec::new();
            for leaf in 0..300u64 {
                let objects =
                    (leaf * 7919 + snapshot * leaf * 31) % 997 * (leaf % 3 + snapshot % 2);
                if objects > 0 {
                    nodes.push((
                        vec![format!("p{}", leaf % 3), format!("T{leaf}")],
                        "Type".to_string(),
                        objects,
                        objects * (8 + leaf % 5),
                    ));
                }
            }
            m.push_tree(snapshot * 1000, (1, 1), &nodes, vec![]);
        }
        for window in [
            None,
            Some(Window { start: 1, end: 3 }),
            Some(Window { start: 2, end: 2 }),
        ] {
            m.set_window(window);
            for metric in [Metric::Objects, Metric::Bytes] {
                let full: Vec<NodeId> = m
                    .strongest_growers(metric)
                    .into_iter()
                    .filter(|&n| m.absolute_growth(n, metric) > 0)
                    .collect();
                // A one-snapshot window has no growth; the others have plenty to rank.
                assert_eq!(full.len() > 50, window.is_none_or(|w| w.start < w.end));
                for n in [0, 1, 20, 299, 1000] {
                    let top = m.top_growers(metric, n);
                    assert_eq!(
                        top,
                        full[..n.min(full.len())],
                        "{window:?} {metric:?} n={n}"
                    );
                }
            }
        }
    }

    #[test]
    fn window_restricts_growth() {
        let mut m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        m.set_window(Some(Window { start: 1, end: 2 }));
        assert_eq!(m.first(a, Metric::Objects), 500);
        assert_eq!(m.absolute_growth(a, Metric::Objects), 500);
        assert_eq!(m.max_growth(Metric::Objects), 500);
        m.set_window(Some(Window { start: 9, end: 1 }));
        assert_eq!(m.window(), Window { start: 2, end: 2 });
        m.set_window(None);
        assert_eq!(m.window(), Window { start: 0, end: 2 });
    }

    #[test]
    fn forgetting_old_snapshots_shifts_the_rest() {
        let mut m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let c = m.find(&["p", "C"]).unwrap();
        m.set_window(Some(Window { start: 1, end: 2 }));
        m.forget_before(1);
        assert_eq!(m.frames().len(), 2);
        assert_eq!(m.frames()[0].time_ms, 1000);
        assert_eq!(m.window(), Window { start: 0, end: 1 });
        assert_eq!(m.absolute_growth(a, Metric::Objects), 500);
        // C first appeared in the snapshot now first.
        assert_eq!(m.node(c).first_seen, 0);
        m.set_window(None);
        // Thinning keeps the chosen ones in order.
        let mut t = sample();
        t.retain_frames(|i, _| i != 1);
        let times: Vec<u64> = t.frames().iter().map(|f| f.time_ms).collect();
        assert_eq!(times, [0, 2000]);
        assert_eq!(t.node(c).first_seen, 1);
        assert_eq!(t.absolute_growth(a, Metric::Objects), 990);
        m.forget_before(99);
        assert!(m.frames().is_empty());
        assert_eq!(m.window(), Window { start: 0, end: 0 });
    }

    #[test]
    fn tweening_interpolates_between_snapshots() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        assert_eq!(m.value_at(a, 0.0, Metric::Objects), 10.0);
        assert_eq!(m.value_at(a, 0.5, Metric::Objects), 255.0);
        assert_eq!(m.value_at(a, 1.75, Metric::Objects), 875.0);
        assert_eq!(m.value_at(a, 9.0, Metric::Objects), 1000.0);
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

    #[test]
    fn growth_no_old_marking_has_confirmed_is_not_backed() {
        let mut m = crate::timeline::tests::estimated_session(0);
        m.set_window(Some(Window { start: 0, end: 3 }));
        let leak = m.find(&["app", "Leak"]).unwrap();
        // 100 (walk) to ~260 ±40: 120 backed.
        assert_eq!(m.significant_growth(leak, 3, Metric::Objects), 120);
        // 100 of the 260 may be promoted garbage: only 20 is backed.
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 100, 1600);
        assert_eq!(m.unconfirmed(leak, 3, Metric::Objects), 100);
        assert_eq!(m.significant_growth(leak, 3, Metric::Objects), 20);
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 200, 3200);
        assert_eq!(m.significant_growth(leak, 3, Metric::Bytes), 0);
        // A decline is backed less when its start may have held garbage.
        let mut s = sample();
        let b = s.find(&["p", "B"]).unwrap();
        s.set_window(Some(Window { start: 0, end: 2 }));
        assert_eq!(s.significant_growth(b, 2, Metric::Objects), -10);
        s.frames_mut_for_tests(0)
            .set_unconfirmed_for_tests(b, 4, 64);
        assert_eq!(s.significant_growth(b, 2, Metric::Objects), -6);
        // ...and not at all by the end's (a value can only be too high by it).
        s.frames_mut_for_tests(2)
            .set_unconfirmed_for_tests(b, 30, 480);
        assert_eq!(s.significant_growth(b, 2, Metric::Objects), -6);
        assert_eq!(
            s.leaves(2)
                .iter()
                .find(|l| l.path[1] == "B")
                .unwrap()
                .objects_unconfirmed,
            30
        );
    }

    /// A session of `n` snapshots a second apart: a leaking type, a steady one and 18 more,
    /// in a model whose snapshots' numbers may take `budget` bytes.
    fn long_session(n: u64, budget: Option<usize>) -> CityModel {
        let mut m = CityModel::new();
        m.set_detail_budget(budget);
        for i in 0..n {
            let mut nodes = vec![
                (vec!["p".to_string()], "Package".to_string(), 0, 0),
                (
                    vec!["p".into(), "Leak".into()],
                    "Type".into(),
                    100 + 10 * i,
                    0,
                ),
                (
                    vec!["p".into(), "Steady".into()],
                    "Type".into(),
                    500 + i % 7,
                    0,
                ),
            ];
            nodes
                .extend((0..18).map(|t| (vec!["p".into(), format!("T{t}")], "Type".into(), 50, 0)));
            m.push_tree(i * 1000, (1_000 + 10 * i, 0), &nodes, vec![]);
            assert!(
                m.detail_bytes <= budget.unwrap_or(usize::MAX).saturating_add(4096),
                "{} bytes at snapshot {i}",
                m.detail_bytes
            );
        }
        m
    }

    /// Hours of snapshots in a bounded memory: the history older than the newest snapshots is
    /// thinned to an even step in time, the window's ends stay the same snapshots, and growth
    /// says what the whole session says.
    #[test]
    fn a_long_session_is_thinned_evenly_in_time_within_its_budget() {
        let budget = 200 << 10;
        let m = long_session(20_000, Some(budget));
        let whole = long_session(20_000, None);
        assert!(m.thinned() > 15_000, "{}", m.thinned());
        assert_eq!(m.thinned() + m.len() as u64, 20_000);
        assert_eq!(whole.thinned(), 0);
        let times: Vec<u64> = m.frames().iter().map(|f| f.time_ms).collect();
        assert_eq!((times[0], *times.last().unwrap()), (0, 19_999_000));
        // What was thinned (past the first two, which stay, and before the newest, which are
        // whole) is evenly spaced.
        let all: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let newest = all.iter().rev().take_while(|&&g| g == 1_000).count();
        assert!(newest >= 16, "the newest stay whole: {all:?}");
        // Past the first two, up to the step into the newest (which may be shorter).
        let gaps = &all[1..all.len() - newest - 1];
        assert!(gaps.len() > 10, "{all:?}");
        let (least, most) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
        assert!(
            *most <= 3 * *least,
            "gaps from {least} to {most} ms: {gaps:?}"
        );
        let leak = m.find(&["p", "Leak"]).unwrap();
        for metric in [Metric::Objects, Metric::Bytes] {
            assert_eq!(
                m.absolute_growth(leak, metric),
                whole.absolute_growth(whole.find(&["p", "Leak"]).unwrap(), metric)
            );
            assert_eq!(m.max_growth(metric), whole.max_growth(metric));
        }
        assert_eq!(
            crate::leak::suspects::suspects(&m)
                .iter()
                .map(|s| (s.leaking.clone(), s.growth, s.confirmed))
                .collect::<Vec<_>>(),
            crate::leak::suspects::suspects(&whole)
                .iter()
                .map(|s| (s.leaking.clone(), s.growth, s.confirmed))
                .collect::<Vec<_>>(),
        );
        let (thin, full) = (
            crate::leak::trends::trend_of(&m, &[leak], Metric::Objects).unwrap(),
            crate::leak::trends::trend_of(
                &whole,
                &[whole.find(&["p", "Leak"]).unwrap()],
                Metric::Objects,
            )
            .unwrap(),
        );
        assert!(
            (thin.growth - full.growth).abs() < 1e-6 * full.growth,
            "{thin:?} {full:?}"
        );
    }

    /// A window set by hand keeps its two snapshots through thinning, and a viewer is told
    /// where its snapshots went.
    #[test]
    fn thinning_keeps_a_windows_ends_and_says_where_snapshots_went() {
        let mut m = long_session(300, Some(1 << 30));
        m.set_window(Some(Window {
            start: 50,
            end: 120,
        }));
        let _ = m.take_thinning();
        m.set_detail_budget(Some(40 << 10));
        let map = m.take_thinning().expect("thinned");
        assert_eq!(map.len(), 300);
        let w = m.window();
        assert_eq!(
            (m.frames()[w.start].time_ms, m.frames()[w.end].time_ms),
            (50_000, 120_000)
        );
        assert_eq!((map[50], map[120], map[299]), (w.start, w.end, m.len() - 1));
        // A dropped snapshot goes to the next one kept.
        for (old, &new) in map.iter().enumerate() {
            assert!(
                m.frames()[new].time_ms >= old as u64 * 1000,
                "{old} -> {new}"
            );
        }
        assert!(m.take_thinning().is_none(), "said once");
    }
}
