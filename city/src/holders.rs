//! Who holds a growing type, from object-level paths (the agent's `PathTree`), window-free.
//!
//! The agent merges the paths from GC roots to live sampled objects into a tree whose nodes are
//! objects (or chains of one type, `LinkedList$Node` x n). For one growing type this module
//! follows MAT's leak suspects (`FindLeaksQuery` over merged paths): weigh every node by the
//! samples of that type below it, descend from the roots while one child holds
//! `DESCEND_SHARE` of its parent's weight, and name the deepest such node, the accumulation
//! point. A collection's insides (a `HashMap$Node[]`, a chain of `LinkedList$Node`, the
//! `Object[]` of an `ArrayList`) are not where a fix goes: the holder climbs to the collection
//! that owns them. The holder is an instance: two `LinkedList`s are two nodes, so the
//! application's list and JFR's are never joined.
//!
//! Confidence says what the samples back: *exact* when one root's branch holds
//! `DESCEND_SHARE` of the type's paths (and there are `MIN_SAMPLES` of them), *likely* when the
//! paths split and the named branch holds most, else *ambiguous*; a split names the other
//! branches with their shares. Threads of one family holding the same structure (a pool's
//! threads, each with a thread-local list) are co-holders, not rivals.

use std::collections::HashMap;

use crate::model::RootRef;
use crate::suspects::{is_internal, Confidence};

/// One root's branch (and each step below) must hold this share of its parent's weight for the
/// descent to go on (MAT's leak suspects use 80 %).
pub const DESCEND_SHARE: f64 = 0.8;
/// Fewer samples of a type than this name no holder with confidence.
pub const MIN_SAMPLES: u64 = 5;
/// A split's largest branch names the holder as *likely* from this share.
pub const LIKELY_SHARE: f64 = 0.5;

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
    pub nodes: Vec<PathNode>,
    /// Children of each node, and the root objects (nodes without a parent).
    pub children: Vec<Vec<usize>>,
    pub tops: Vec<usize>,
}

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
    /// `(type, samples, weight)` of the sampled objects whose own node this is.
    pub targets: Vec<(String, u64, f64)>,
}

impl Paths {
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

    /// Per node, the weight of `type_name`'s sampled objects in its subtree, and their count.
    fn weights(&self, type_name: &str) -> (Vec<f64>, Vec<u64>) {
        let n = self.nodes.len();
        let mut weight = vec![0.0; n];
        let mut samples = vec![0u64; n];
        for i in (0..n).rev() {
            for (t, s, w) in &self.nodes[i].targets {
                if t == type_name {
                    weight[i] += w;
                    samples[i] += s;
                }
            }
            if let Some(p) = self.nodes[i].parent {
                weight[p] += weight[i];
                samples[p] += samples[i];
            }
        }
        (weight, samples)
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

    /// The root of the branch `node` is in.
    pub fn root_of(&self, node: usize) -> Option<&RootRef> {
        self.chain_to(node)
            .first()
            .and_then(|&top| self.nodes[top].root.as_ref())
    }

    /// Who holds `type_name`'s sampled objects, or `None` when the paths reached none.
    pub fn holding(&self, type_name: &str) -> Option<Holding> {
        let (weight, samples) = self.weights(type_name);
        let total: f64 = self.tops.iter().map(|&t| weight[t]).sum();
        let total_samples: u64 = self.tops.iter().map(|&t| samples[t]).sum();
        if total <= 0.0 || total_samples == 0 {
            return None;
        }
        let heaviest = |of: &[usize]| -> Option<usize> {
            of.iter()
                .copied()
                .filter(|&c| weight[c] > 0.0)
                .max_by(|&a, &b| weight[a].total_cmp(&weight[b]).then(b.cmp(&a)))
        };
        let top = heaviest(&self.tops)?;
        let top_share = weight[top] / total;
        // Descend while one child holds most of its parent's paths, down to the objects of
        // the type themselves (where paths end: those are the symptom, not a holder).
        let own = |node: usize| self.nodes[node].targets.iter().any(|t| t.0 == type_name);
        let mut deepest = top;
        while let Some(child) = heaviest(&self.children[deepest]) {
            if weight[child] < DESCEND_SHARE * weight[deepest] || own(child) {
                break;
            }
            deepest = child;
        }
        // The holder: the collection owning the insides the descent stopped in.
        let mut holder = deepest;
        while let Some(parent) = self.nodes[holder].parent {
            let node = &self.nodes[holder];
            let array_of_collection = node.type_name.ends_with("[]")
                && self.nodes[parent].type_name.starts_with("java.util.");
            if !(is_internal(&node.type_name) || array_of_collection) {
                break;
            }
            holder = parent;
        }
        // Below the holder, the heaviest route down to a node holding the type itself.
        let mut below = Vec::new();
        let mut at = holder;
        while let Some(child) = heaviest(&self.children[at]) {
            below.push(child);
            if self.nodes[child].targets.iter().any(|t| t.0 == type_name) {
                break;
            }
            at = child;
        }
        // Other roots' branches: a pool's threads with the same structure share the holding,
        // the rest are alternatives.
        let main_root = self.nodes[top].root.as_ref();
        let holder_type = &self.nodes[holder].type_name;
        let mut co_holders = Vec::new();
        let mut alternatives = Vec::new();
        let mut shared = weight[top];
        let mut others: Vec<usize> = self
            .tops
            .iter()
            .copied()
            .filter(|&t| t != top && weight[t] > 0.0)
            .collect();
        others.sort_by(|&a, &b| weight[b].total_cmp(&weight[a]).then(a.cmp(&b)));
        for t in others {
            let root = self.nodes[t].root.as_ref();
            let same_family = match (main_root, root) {
                (Some(a), Some(b)) => {
                    a.kind == b.kind
                        && !a.thread.is_empty()
                        && crate::suspects::thread_family(&a.name)
                            == crate::suspects::thread_family(&b.name)
                }
                _ => false,
            };
            let holds_alike = self
                .chain_below(t, &weight)
                .iter()
                .any(|&n| &self.nodes[n].type_name == holder_type);
            if same_family && holds_alike {
                shared += weight[t];
                co_holders.push(root.map_or(String::new(), |r| r.name.clone()));
            } else {
                alternatives.push(Alternative {
                    root: root.map_or_else(|| "(unknown root)".into(), |r| r.name.clone()),
                    share: weight[t] / total,
                    samples: samples[t],
                });
            }
        }
        let share = shared / total;
        let confidence = if total_samples < MIN_SAMPLES {
            Confidence::Ambiguous
        } else if share >= DESCEND_SHARE {
            Confidence::Exact
        } else if top_share >= LIKELY_SHARE || share >= LIKELY_SHARE {
            Confidence::Likely
        } else {
            Confidence::Ambiguous
        };
        Some(Holding {
            chain: self.chain_to(holder),
            holder,
            below,
            samples: total_samples,
            holder_samples: samples[holder],
            weight: total,
            share: weight[holder] / total,
            co_holders,
            alternatives,
            confidence,
        })
    }

    /// The heaviest route from `node` down (for comparing a pool thread's branch).
    fn chain_below(&self, node: usize, weight: &[f64]) -> Vec<usize> {
        let mut out = vec![node];
        let mut at = node;
        while let Some(&child) = self.children[at]
            .iter()
            .filter(|&&c| weight[c] > 0.0)
            .max_by(|&&a, &&b| weight[a].total_cmp(&weight[b]))
        {
            out.push(child);
            at = child;
            if out.len() > 64 {
                break;
            }
        }
        out
    }
}

/// Where one type's sampled paths lead (see `Paths::holding`).
#[derive(Debug, Clone, PartialEq)]
pub struct Holding {
    /// Nodes from the root's object down to the holder.
    pub chain: Vec<usize>,
    pub holder: usize,
    /// From the holder's content down to a node of the type (the heaviest route).
    pub below: Vec<usize>,
    /// The type's samples the paths reached, those through the holder, and their weight.
    pub samples: u64,
    pub holder_samples: u64,
    pub weight: f64,
    /// Share of the type's weight through the holder.
    pub share: f64,
    /// Roots of the same thread family holding the same structure (a pool).
    pub co_holders: Vec<String>,
    /// Other roots' branches, heaviest first.
    pub alternatives: Vec<Alternative>,
    pub confidence: Confidence,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    pub root: String,
    pub share: f64,
    pub samples: u64,
}

/// A short, stable rendering of how a type's paths split: "83 % through static A.B, 17 %
/// through thread \"w\"".
pub fn describe_split(main_root: &str, main_share: f64, alternatives: &[Alternative]) -> String {
    let mut parts = vec![format!("{:.0} % through {main_root}", main_share * 100.0)];
    for a in alternatives.iter().take(3) {
        parts.push(format!("{:.0} % through {}", a.share * 100.0, a.root));
    }
    if alternatives.len() > 3 {
        let rest: f64 = alternatives[3..].iter().map(|a| a.share).sum();
        parts.push(format!(
            "{:.0} % through {} more roots",
            rest * 100.0,
            alternatives.len() - 3
        ));
    }
    parts.join(", ")
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
                .map(|t| (name(t.r#type), t.samples, t.weight))
                .collect(),
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
    paths
}

/// Per type, the samples the paths reached (for "how many samples the chain rests on").
pub fn samples_by_type(paths: &Paths) -> HashMap<&str, u64> {
    let mut out: HashMap<&str, u64> = HashMap::new();
    for node in &paths.nodes {
        for (t, s, _) in &node.targets {
            *out.entry(t.as_str()).or_default() += s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_proto::v1::root::Kind;

    /// A tree from `(parent, type, field, root, targets)` rows.
    fn tree(rows: &[(Option<usize>, &str, &str, Option<&str>, &[(&str, u64)])]) -> Paths {
        Paths::new(
            rows.iter()
                .map(|&(parent, type_name, field, root, targets)| PathNode {
                    parent,
                    type_name: type_name.into(),
                    field: field.into(),
                    root: root.map(|r| RootRef {
                        kind: if r.starts_with("thread") {
                            Kind::Thread
                        } else {
                            Kind::StaticField
                        },
                        name: r.into(),
                        thread: if r.starts_with("thread") {
                            r.trim_start_matches("thread ").trim_matches('"').into()
                        } else {
                            String::new()
                        },
                    }),
                    chain: 1,
                    length: 0,
                    identity: 0,
                    targets: targets
                        .iter()
                        .map(|&(t, n)| (t.to_string(), n, n as f64 * 10.0))
                        .collect(),
                })
                .collect(),
        )
    }

    fn people_list(
        extra: &[(
            Option<usize>,
            &'static str,
            &'static str,
            Option<&'static str>,
            &'static [(&'static str, u64)],
        )],
    ) -> Paths {
        let mut rows: Vec<(Option<usize>, &str, &str, Option<&str>, &[(&str, u64)])> = vec![
            (
                None,
                "java.util.LinkedList",
                "",
                Some("static App.PEOPLE"),
                &[],
            ),
            (Some(0), "java.util.LinkedList$Node", "first", None, &[]),
            (Some(1), "App$Person", "item", None, &[("App$Person", 1)]),
            (
                Some(2),
                "java.lang.String",
                "name",
                None,
                &[("java.lang.String", 30)],
            ),
            (Some(1), "App$Person", "item", None, &[("App$Person", 1)]),
            (
                Some(4),
                "java.lang.String",
                "name",
                None,
                &[("java.lang.String", 30)],
            ),
        ];
        rows.extend_from_slice(extra);
        tree(&rows)
    }

    #[test]
    fn the_holder_is_the_collection_whose_insides_the_paths_share() {
        let p = people_list(&[]);
        let h = p.holding("java.lang.String").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.LinkedList");
        assert_eq!(h.chain, vec![0]);
        assert_eq!(p.nodes[h.below[0]].type_name, "java.util.LinkedList$Node");
        assert_eq!(
            p.nodes[*h.below.last().unwrap()].type_name,
            "java.lang.String"
        );
        assert_eq!(h.confidence, Confidence::Exact);
        assert_eq!(h.samples, 60);
        assert!(h.alternatives.is_empty());
    }

    #[test]
    fn two_instances_of_one_type_are_two_holders_and_the_bigger_is_named() {
        // JFR's list beside the application's: same types, other instance, other root.
        let p = people_list(&[
            (
                None,
                "java.util.LinkedList",
                "",
                Some("static jdk.jfr.Internal.CHUNKS"),
                &[],
            ),
            (Some(6), "java.util.LinkedList$Node", "first", None, &[]),
            (
                Some(7),
                "java.lang.String",
                "item",
                None,
                &[("java.lang.String", 6)],
            ),
        ]);
        let h = p.holding("java.lang.String").unwrap();
        assert_eq!(p.root_of(h.holder).unwrap().name, "static App.PEOPLE");
        assert_eq!(
            h.confidence,
            Confidence::Exact,
            "60 of 66 samples: over 80 %"
        );
        assert_eq!(h.alternatives.len(), 1);
        assert_eq!(h.alternatives[0].root, "static jdk.jfr.Internal.CHUNKS");
        assert!((h.alternatives[0].share - 6.0 / 66.0).abs() < 1e-9);
    }

    #[test]
    fn a_split_of_80_20_is_exact_and_of_60_40_is_likely_with_the_other_named() {
        let split = |a: u64, b: u64| {
            let rows: Vec<(Option<usize>, &str, &str, Option<&str>, Vec<(&str, u64)>)> = vec![
                (
                    None,
                    "java.util.ArrayList",
                    "",
                    Some("static A.LISTENERS"),
                    vec![],
                ),
                (Some(0), "java.lang.Object[]", "elementData", None, vec![]),
                (Some(1), "Listener", "[]", None, vec![("Listener", a)]),
                (
                    None,
                    "java.util.HashMap",
                    "",
                    Some("thread \"registry-worker\""),
                    vec![],
                ),
                (Some(3), "Listener", "value", None, vec![("Listener", b)]),
            ];
            let rows: Vec<(Option<usize>, &str, &str, Option<&str>, &[(&str, u64)])> = rows
                .iter()
                .map(|(p, t, f, r, x)| (*p, *t, *f, *r, &x[..]))
                .collect();
            tree(&rows)
        };
        let p = split(80, 20);
        let h = p.holding("Listener").unwrap();
        assert_eq!(
            p.nodes[h.holder].type_name, "java.util.ArrayList",
            "the array folds into its list"
        );
        assert_eq!(h.confidence, Confidence::Exact);
        let p = split(60, 40);
        let h = p.holding("Listener").unwrap();
        assert_eq!(h.confidence, Confidence::Likely);
        assert_eq!(
            describe_split("static A.LISTENERS", h.share, &h.alternatives),
            "60 % through static A.LISTENERS, 40 % through thread \"registry-worker\""
        );
        let p = split(40, 60);
        let h = p.holding("Listener").unwrap();
        assert_eq!(
            p.root_of(h.holder).unwrap().name,
            "thread \"registry-worker\""
        );
    }

    #[test]
    fn a_pools_threads_holding_the_same_list_are_co_holders() {
        let mut rows: Vec<(Option<usize>, &str, &str, Option<&str>, &[(&str, u64)])> = Vec::new();
        let names = [
            "thread \"pool-1-thread-1\"",
            "thread \"pool-1-thread-2\"",
            "thread \"pool-1-thread-3\"",
        ];
        for (i, name) in names.iter().enumerate() {
            let base = i * 3;
            rows.push((
                None,
                "java.lang.ThreadLocal$ThreadLocalMap",
                "",
                Some(name),
                &[],
            ));
            rows.push((Some(base), "java.util.ArrayList", "value", None, &[]));
            rows.push((Some(base + 1), "Request", "[]", None, &[("Request", 10)]));
        }
        let p = tree(&rows);
        let h = p.holding("Request").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.ArrayList");
        assert_eq!(h.co_holders.len(), 2, "{h:?}");
        assert!(h.alternatives.is_empty());
        assert_eq!(
            h.confidence,
            Confidence::Exact,
            "the pool together holds it all"
        );
    }

    #[test]
    fn few_samples_name_no_holder_with_confidence() {
        let rows: Vec<(Option<usize>, &str, &str, Option<&str>, &[(&str, u64)])> = vec![
            (None, "java.util.ArrayList", "", Some("static A.L"), &[]),
            (Some(0), "X", "[]", None, &[("X", 2)]),
        ];
        let h = tree(&rows).holding("X").unwrap();
        assert_eq!(h.confidence, Confidence::Ambiguous);
        assert!(tree(&rows).holding("Y").is_none(), "no path reached a Y");
    }

    #[test]
    fn a_damaged_parent_cannot_make_a_cycle() {
        let mut p = people_list(&[]);
        p.nodes[0].parent = Some(3);
        let p = Paths::new(p.nodes);
        assert!(p.tops.contains(&0));
        assert!(p.holding("java.lang.String").is_some());
    }

    #[test]
    fn a_map_shared_by_two_roots_is_credited_to_the_branch_its_paths_took() {
        // The search credits a shared object to the first root that reached it: the tree then
        // has the map under one root only, and the other root's branch holds nothing of it.
        let rows: Vec<(Option<usize>, &str, &str, Option<&str>, &[(&str, u64)])> = vec![
            (None, "Registry", "", Some("static App.REGISTRY"), &[]),
            (Some(0), "java.util.HashMap", "byName", None, &[]),
            (Some(1), "java.util.HashMap$Node[]", "table", None, &[]),
            (Some(2), "java.util.HashMap$Node", "[]", None, &[]),
            (Some(3), "Session", "value", None, &[("Session", 20)]),
            (Some(2), "java.util.HashMap$Node", "[]", None, &[]),
            (Some(5), "Session", "value", None, &[("Session", 20)]),
        ];
        let p = tree(&rows);
        let h = p.holding("Session").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.HashMap");
        assert_eq!(p.nodes[h.holder].field, "byName");
        assert_eq!(h.chain, vec![0, 1]);
        assert_eq!(p.nodes[h.below[0]].type_name, "java.util.HashMap$Node[]");
    }
}
