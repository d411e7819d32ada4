//! What a search found: the roots as it knows them and in what order it credits them, and the
//! paths from them merged into one tree of nodes (`Found`, sent as the proto's `PathTree`).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::{Duration, Instant};

use super::schedule::Due;
use crate::intmap::IntHasher;
use crate::jvmti::RootKind;

/// Where a root stands in the search's order (see `Search::start`): lower is searched first and
/// so is credited with what it shares with later ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RootOrder {
    /// An application class's static field: where a fix usually goes, and what holds longest
    /// (for the class's life).
    ApplicationStatic,
    /// A live thread (its thread-locals, its task): for the thread's life, longer than any of
    /// its frames.
    Thread,
    /// A local in an application method's frame: until the frame returns.
    ApplicationLocal,
    /// Locals of JDK frames, monitors.
    OtherLocal,
    JniGlobal,
    /// A JDK class's static field.
    JdkStatic,
    /// memcity's own threads, their locals and its classes' statics: never credited with
    /// what the application also holds.
    Memcity,
}

/// A GC root as the search knows it.
#[derive(Debug, Clone)]
pub struct PathRoot {
    pub kind: RootKind,
    pub order: RootOrder,
    /// Index into `Found::threads` (threads, stack and JNI locals).
    pub thread: Option<usize>,
    /// Stack and JNI locals: the frame.
    pub method: usize,
    pub location: i64,
    /// Static fields: the declaring class's id and the field's name.
    pub class: u32,
    pub field: String,
}

/// A root as the next search knows it (`Found::top_roots`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootKey {
    /// `PathRoot::key`.
    pub key: String,
    /// Only the GC roots' enumeration (a stop of the JVM) finds it: a local or a JNI
    /// reference, not a static field or a thread.
    pub enumerated: bool,
}

impl PathRoot {
    /// What identifies the root from one search to the next (a frame's method and thread, a
    /// static's class and field, a thread's name).
    pub fn key(&self, threads: &[String]) -> String {
        let thread = self
            .thread
            .and_then(|t| threads.get(t))
            .map_or("", String::as_str);
        format!(
            "{:?}|{}|{}|{}|{thread}",
            self.kind, self.class, self.field, self.method
        )
    }
}

/// One node of the merged paths (see `PathNode` in the proto).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Index + 1 of the parent; 0 for a root's object.
    pub parent: u32,
    pub class: u32,
    /// Index into `Found::fields` (`ELEMENTS_FIELD` for array elements); for a root's object,
    /// the root's index into `Found::roots`.
    pub field: u32,
    pub chain: u64,
    /// An array's length (0 for instances).
    pub length: u64,
    pub identity: u32,
    /// `(class, samples, weight, born_s)` of the targets whose own node this is, by the second
    /// they were taken in.
    pub targets: Vec<(u32, u64, f64, u32)>,
    /// On a root's object: `(class, objects)` of the sampled classes reached from the root.
    pub reached: Vec<(u32, u64)>,
    /// Indexes into `Found::roots` of the other roots whose own object this is (see
    /// `Search::also_roots`).
    pub also: Vec<u32>,
}

/// A target found below an object: its tracker slot and birth (`Sample`), the object's class
/// and the field (in `Found::fields`) it was held in, and when it was found.
#[derive(Debug, Clone)]
pub struct Held {
    pub slot: u32,
    pub born: u64,
    pub class: u32,
    pub field: u32,
    pub at: Instant,
}

/// A finished search.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub nodes: Vec<Node>,
    pub roots: Vec<PathRoot>,
    pub threads: Vec<String>,
    /// `threads` from this index on are virtual threads (whose frames the search looked into).
    pub first_virtual: usize,
    pub fields: Vec<String>,
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    pub targets: u64,
    pub found: u64,
    pub visited: u64,
    pub cpu: Duration,
    pub roots_pause: Duration,
    pub incomplete: String,
    /// Roots of frames, JNI locals and monitors left out: their object was none at the last
    /// enumeration (see `Search::start`).
    pub transient_locals: u64,
    /// The search left roots unsearched: it reached `ENOUGH_FOUND` of its targets first, or
    /// it was a focused search of the preferred roots alone.
    pub stopped_early: bool,
    /// The roots under which it found a tenth of its recent finds or more, most first.
    pub top_roots: Vec<RootKey>,
    /// A focused search (see `PathTree.focused`).
    pub focused: bool,
    /// Targets not reached, by class, with the objects they stand for (their weights): most
    /// are garbage no GC has freed yet (a sample counts as live until the GC clears its weak
    /// reference).
    pub missed: Vec<(u32, u64, f64)>,
    /// Targets by class, reached or not, with their weights.
    pub targeted: Vec<(u32, u64, f64)>,
    /// After a search through every root (empty otherwise): per sampled class, the objects
    /// reached from any root, each once (see `PathTree.counted` and `Search::distinct`), and
    /// the count's variance (0 where the search kept a key per object; a sketch's otherwise).
    pub counted: Vec<(u32, u64, f64)>,
    /// `(slot, born)` of the targets not reached, when the search went through every root: a
    /// second such miss in a row ends them (`Tracker::unreached`; a sample counts as live
    /// until the GC clears its weak reference).
    pub missed_samples: Vec<(u32, u64)>,
    /// Every target it reached, `(slot, born)`, a holder seen or not (one that is a root's own
    /// object has none).
    pub found_samples: Vec<(u32, u64)>,
    /// What held each target found below an object.
    pub holders: Vec<Held>,
}

impl Found {
    /// The kind of search it was, for its schedule.
    pub fn kind(&self) -> Due {
        if self.focused {
            Due::Focused
        } else {
            Due::Full
        }
    }
}

/// The merged tree, built as targets are found.
#[derive(Default)]
pub(super) struct Merge {
    pub(super) nodes: Vec<Node>,
    pub(super) index: HashMap<(u32, u32, u32, u32), u32, BuildHasherDefault<IntHasher>>,
    /// A target moved (`uncount`): some nodes may have nothing left below them.
    moved: bool,
}

impl Merge {
    /// The node for `(parent, identity, class, field)`, made if new.
    pub(super) fn node(&mut self, parent: u32, identity: u32, class: u32, field: u32) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self
            .index
            .entry((parent, identity, class, field))
            .or_insert(next);
        if id == next {
            self.nodes.push(Node {
                parent,
                class,
                field,
                chain: 1,
                length: 0,
                identity,
                targets: Vec::new(),
                reached: Vec::new(),
                also: Vec::new(),
            });
        }
        id
    }

    /// Takes back a `count` (its target moved to a shorter path).
    pub(super) fn uncount(&mut self, node: u32, class: u32, weight: f64, born_s: u32) {
        let targets = &mut self.nodes[node as usize].targets;
        if let Some(i) = targets.iter().position(|t| t.0 == class && t.3 == born_s) {
            targets[i].1 -= 1;
            targets[i].2 -= weight;
            if targets[i].1 == 0 {
                targets.swap_remove(i);
            }
        }
        self.moved = true;
    }

    /// The nodes, without those left with no target below them and nothing reached (their
    /// targets all moved to shorter paths); parents keep coming before their children.
    pub(super) fn into_nodes(self) -> Vec<Node> {
        if !self.moved {
            return self.nodes;
        }
        let mut keep: Vec<bool> = self
            .nodes
            .iter()
            .map(|n| !n.targets.is_empty() || !n.reached.is_empty())
            .collect();
        for i in (0..self.nodes.len()).rev() {
            let parent = self.nodes[i].parent;
            if keep[i] && parent > 0 {
                keep[parent as usize - 1] = true;
            }
        }
        let mut index = vec![0u32; self.nodes.len()];
        let mut nodes = Vec::with_capacity(keep.iter().filter(|&&k| k).count());
        for (i, mut node) in self.nodes.into_iter().enumerate() {
            if !keep[i] {
                continue;
            }
            if node.parent > 0 {
                node.parent = index[node.parent as usize - 1] + 1;
            }
            index[i] = nodes.len() as u32;
            nodes.push(node);
        }
        nodes
    }

    #[cfg(test)]
    pub(super) fn clone_nodes(&self) -> Vec<Node> {
        Merge {
            nodes: self.nodes.clone(),
            index: HashMap::default(),
            moved: self.moved,
        }
        .into_nodes()
    }

    pub(super) fn count(&mut self, node: u32, class: u32, weight: f64, born_s: u32) {
        let targets = &mut self.nodes[node as usize].targets;
        match targets.iter_mut().find(|t| t.0 == class && t.3 == born_s) {
            Some(t) => {
                t.1 += 1;
                t.2 += weight;
            }
            None => targets.push((class, 1, weight, born_s)),
        }
    }
}
