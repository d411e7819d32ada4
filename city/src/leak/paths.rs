//! What the path search found, names resolved: the agent's `PathTree`, a tree of objects from
//! the GC roots down to the sampled objects it looked for (a chain of one type is one node,
//! `LinkedList$Node` x n), with what each sample weighs, when it was taken, and which objects
//! the search counted. The holders' search (`holders.rs`) reads it; so do the verdicts on dead
//! rises (`CityModel::dead_rise_at`), which ask whether a complete search reached a type.

use std::collections::HashMap;

use crate::leak::roots::RootRef;

/// Paths from GC roots to sampled objects, names resolved (see `PathTree` in the proto).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Paths {
    pub started_ms: u64,
    pub finished_ms: u64,
    pub targets: u64,
    pub found: u64,
    pub objects_visited: u64,
    pub search_ns: u64,
    pub roots_pause_ns: u64,
    pub incomplete: String,
    pub stopped_early: bool,
    pub focused: bool,
    pub nodes: Vec<PathNode>,
    /// Children of each node, and the root objects (nodes without a parent).
    pub children: Vec<Vec<usize>>,
    pub tops: Vec<usize>,
    /// Per type, the second from which its samples count (`weigh_growth_from`); others count
    /// all.
    pub growth_from: Vec<(String, u32)>,
    /// Per type, the samples looked for and those no root reached (`PathTree.targeted`,
    /// `unreached`).
    pub targeted: Vec<(String, u64)>,
    pub unreached: Vec<(String, u64)>,
    /// The same, as the objects those samples stand for (their weights summed); empty from an
    /// agent before them (`TypeCount.weight`).
    pub targeted_weight: Vec<(String, f64)>,
    pub unreached_weight: Vec<(String, f64)>,
    /// After a complete search, per targeted type, every object of it the search reached
    /// (`PathTree.counted`); empty otherwise, or from an agent before it.
    pub counted: Vec<(String, u64)>,
}

/// `type_name`'s count (or weight) in per-type `counts` (`Paths::targeted`, `unreached`,
/// `counted` and their weights), `None` when absent.
fn find_count<T: Copy>(counts: &[(String, T)], type_name: &str) -> Option<T> {
    counts.iter().find(|(t, _)| t == type_name).map(|&(_, n)| n)
}

/// The same, 0 when absent.
fn count_of<T: Copy + Default>(counts: &[(String, T)], type_name: &str) -> T {
    find_count(counts, type_name).unwrap_or_default()
}

/// Sampled objects of a type a search looked for, at least this many, all unreached: the
/// type's rise is of dead objects (with fewer, one search's chance).
pub const MIN_UNREACHED: u64 = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct PathNode {
    pub parent: Option<usize>,
    pub type_name: String,
    /// The parent's field referencing it (`[]` for elements); empty for a root's object.
    pub field: String,
    pub root: Option<RootRef>,
    pub chain: u64,
    pub length: u64,
    pub identity: u32,
    /// `(type, samples, weight, born_s)` of the sampled objects whose own node this is, by the
    /// second they were taken in (0: unknown).
    pub targets: Vec<(String, u64, f64, u32)>,
    /// On a root's object: objects of sampled types reached from the root, counted.
    pub reached: Vec<(String, u64)>,
    /// Other roots whose own object this is: the path came from the lasting one, these hold
    /// it too ("also reached from").
    pub also: Vec<RootRef>,
}

/// Where a holder sits: in a field of the object above it, or as a root's own object. What
/// names a leak's place (`Signature`) and what the report says holds it ("the
/// `ConcurrentHashMap` in `DefaultSessionCache._sessions`").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HolderIn {
    /// The type of the object above and the field that references the holder.
    Field { owner_type: String, field: String },
    /// A GC root references the holder itself (the root the trace starts at).
    #[default]
    Root,
}

impl HolderIn {
    /// As the report names it: `Type.field`, or `root` (the root's name) for a root's own
    /// object.
    pub fn name(&self, root: &str) -> String {
        match self {
            HolderIn::Field { owner_type, field } => format!("{owner_type}.{field}"),
            HolderIn::Root => root.to_string(),
        }
    }
}

impl Paths {
    /// Whether the search went through every root: then a sample it did not reach is garbage.
    pub fn complete(&self) -> bool {
        self.incomplete.is_empty() && !self.stopped_early
    }

    /// `(unreached, looked for)` of `type_name`'s samples when a complete search reached none
    /// of at least [`MIN_UNREACHED`]: the type's live count rises with objects no root reaches,
    /// dead in the old generation until a marking frees them.
    pub fn all_unreachable(&self, type_name: &str) -> Option<(u64, u64)> {
        self.unreachable(type_name)
            .filter(|&(unreached, targeted)| unreached == targeted)
    }

    /// `(unreached, looked for)` of `type_name`'s samples when a complete search looked for
    /// at least [`MIN_UNREACHED`] and missed some.
    pub fn unreachable(&self, type_name: &str) -> Option<(u64, u64)> {
        if !self.complete() {
            return None;
        }
        let of = |counts: &[(String, u64)]| count_of(counts, type_name);
        let (unreached, targeted) = (of(&self.unreached), of(&self.targeted));
        (targeted >= MIN_UNREACHED && unreached > 0).then_some((unreached, targeted))
    }

    /// The share of the objects `type_name`'s looked-for samples stand for that the search
    /// reached: by weight, as sampling by bytes picks a type's big objects far more often than
    /// its small ones (a leak's small names among big garbage arrays, both `byte[]`). `None`
    /// without weights (an older agent) or targets of the type.
    pub fn reached_weight_share(&self, type_name: &str) -> Option<f64> {
        let of = |weights: &[(String, f64)]| count_of(weights, type_name);
        let targeted = of(&self.targeted_weight);
        (targeted > 0.0).then(|| (1.0 - of(&self.unreached_weight) / targeted).clamp(0.0, 1.0))
    }

    /// Every object of `type_name` the search reached from any root, when it went through
    /// every root and counted the type (`PathTree.counted`).
    pub fn counted_of(&self, type_name: &str) -> Option<u64> {
        if !self.complete() {
            return None;
        }
        find_count(&self.counted, type_name)
    }

    /// Whether this search reached any of `type_name`'s samples it looked for.
    pub fn reached_any(&self, type_name: &str) -> bool {
        let of = |counts: &[(String, u64)]| count_of(counts, type_name);
        of(&self.targeted) > of(&self.unreached)
    }

    /// Builds the child lists; nodes whose parent is out of range (a damaged file) become tops.
    pub fn new(mut nodes: Vec<PathNode>) -> Paths {
        let n = nodes.len();
        let mut children = vec![Vec::new(); n];
        let mut tops = Vec::new();
        for (i, node) in nodes.iter_mut().enumerate() {
            // Parents come first: anything else is damage, and would allow a cycle.
            match node.parent.filter(|&p| p < i) {
                Some(p) => children[p].push(i),
                None => {
                    node.parent = None;
                    tops.push(i);
                }
            }
        }
        Paths {
            nodes,
            children,
            tops,
            ..Default::default()
        }
    }

    /// The nodes from a root's object down to `node`.
    pub fn chain_to(&self, node: usize) -> Vec<usize> {
        let mut chain = vec![node];
        let mut at = node;
        while let Some(p) = self.nodes[at].parent {
            chain.push(p);
            at = p;
        }
        chain.reverse();
        chain
    }

    /// Where `node`'s object sits: the field of its parent's object, or a root's own object.
    pub fn holder_in(&self, node: usize) -> HolderIn {
        let n = &self.nodes[node];
        match n.parent {
            Some(p) => HolderIn::Field {
                owner_type: self.nodes[p].type_name.clone(),
                field: n.field.clone(),
            },
            None => HolderIn::Root,
        }
    }

    /// The root of the branch `node` is in.
    pub fn root_of(&self, node: usize) -> Option<&RootRef> {
        self.chain_to(node)
            .first()
            .and_then(|&top| self.nodes[top].root.as_ref())
    }
}

/// The nodes of `paths` along the same chain as `chain` (a root's object first): the same
/// root, then at each step the same type through the same field; as far as they agree.
pub fn same_chain<'a>(paths: &'a Paths, chain: &[&PathNode]) -> Vec<&'a PathNode> {
    let Some(first) = chain.first() else {
        return Vec::new();
    };
    let root_name = first.root.as_ref().map(|r| r.name.as_str());
    let mut at = paths.tops.iter().copied().find(|&t| {
        let node = &paths.nodes[t];
        node.type_name == first.type_name
            && root_name.is_some()
            && node.root.as_ref().map(|r| r.name.as_str()) == root_name
    });
    let mut out = Vec::new();
    for step in chain.iter().skip(1) {
        let Some(node) = at else { break };
        out.push(&paths.nodes[node]);
        at = paths.children[node].iter().copied().find(|&c| {
            let child = &paths.nodes[c];
            child.type_name == step.type_name && child.field == step.field
        });
    }
    if let Some(node) = at {
        out.push(&paths.nodes[node]);
    }
    out
}

/// Resolved names of a path tree from the protocol.
pub fn from_proto(
    tree: &memcity_proto::v1::PathTree,
    name: impl Fn(u32) -> String,
    root: impl Fn(&memcity_proto::v1::Root) -> RootRef,
) -> Paths {
    let nodes = tree
        .nodes
        .iter()
        .map(|n| PathNode {
            parent: (n.parent as usize).checked_sub(1),
            type_name: name(n.r#type),
            field: if n.parent == 0 {
                String::new()
            } else {
                name(n.field)
            },
            root: n.root.as_ref().map(&root),
            chain: n.chain,
            length: n.length,
            identity: n.identity,
            targets: n
                .targets
                .iter()
                .map(|t| (name(t.r#type), t.samples, t.weight, t.born_s))
                .collect(),
            reached: n
                .reached
                .iter()
                .map(|r| (name(r.r#type), r.objects))
                .collect(),
            also: n.also.iter().map(&root).collect(),
        })
        .collect();
    let mut paths = Paths::new(nodes);
    paths.started_ms = tree.started_ms;
    paths.finished_ms = tree.finished_ms;
    paths.targets = tree.targets;
    paths.found = tree.found;
    paths.objects_visited = tree.objects_visited;
    paths.search_ns = tree.search_ns;
    paths.roots_pause_ns = tree.roots_pause_ns;
    paths.incomplete = tree.incomplete.clone();
    paths.stopped_early = tree.stopped_early;
    paths.focused = tree.focused;
    let counts = |list: &[memcity_proto::v1::TypeCount]| {
        list.iter()
            .map(|c| (name(c.r#type), c.objects))
            .collect::<Vec<_>>()
    };
    paths.targeted = counts(&tree.targeted);
    paths.unreached = counts(&tree.unreached);
    paths.counted = counts(&tree.counted);
    let weights = |list: &[memcity_proto::v1::TypeCount]| {
        list.iter()
            .filter(|c| c.weight > 0.0)
            .map(|c| (name(c.r#type), c.weight))
            .collect::<Vec<_>>()
    };
    paths.targeted_weight = weights(&tree.targeted);
    paths.unreached_weight = weights(&tree.unreached);
    paths
}

/// Per type, the samples the paths reached (for "how many samples the chain rests on").
pub fn samples_by_type(paths: &Paths) -> HashMap<&str, u64> {
    let mut out: HashMap<&str, u64> = HashMap::new();
    for node in &paths.nodes {
        for (t, s, _, _) in &node.targets {
            *out.entry(t.as_str()).or_default() += s;
        }
    }
    out
}
