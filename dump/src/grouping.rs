//! A dump's objects grouped by a chain of levels, as the agent groups a walk's by its
//! classifiers: package and type (the default), and what only a dump can tell: the class
//! loader of an object's class, and the thread whose root holds it. A dump has no allocation
//! sites; a `site` level is one group that says so.
//!
//! Levels that depend on the class alone are worked out once per class; only `thread` is
//! asked of each object. Each group's retained size follows MAT's rule for a class, for any
//! group: the retained sizes of its objects with no object of the same group above them in the
//! dominator tree.

use std::collections::HashMap;

use memcity_proto::names;

use crate::dominators::Dominators;
use crate::heap::Heap;
use crate::heap::NONE;
use crate::paths::Reach;
use crate::paths::RootKind;
use crate::sizes::Sizes;

/// What grouping reads of an analysed dump (the analysis's own parts, lent).
pub struct Parts<'a> {
    pub heap: &'a Heap,
    pub sizes: &'a Sizes,
    pub reach: &'a Reach,
    pub dominators: &'a Dominators,
    /// Per object, its retained size.
    pub retained: &'a [u64],
}

/// One level of a grouping chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Package,
    Type,
    /// The class loader that defined the object's class.
    Loader,
    /// The thread whose root (the thread, or a local of one of its frames) reaches the object
    /// first, in the paths' order of roots.
    Thread,
    /// Allocation sites: none in a dump.
    Site,
}

/// The levels a chain may name, as the error for another names them.
const NAMES: &str = "package, type, loader, thread (site is accepted and says a dump has none)";

/// The group of objects no root reaches.
pub const UNREACHABLE: &str = "(unreachable)";
/// The group of objects held by no thread: statics, JNI globals, the VM.
pub const NO_THREAD: &str = "(no thread)";
/// The one group of a `site` level.
pub const NO_SITE: &str = "(no allocation site: heap dumps record none)";
/// The boot loader's group.
pub const BOOT_LOADER: &str = "(boot loader)";

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Package => "package",
            Level::Type => "type",
            Level::Loader => "loader",
            Level::Thread => "thread",
            Level::Site => "site",
        }
    }
}

/// Parses `package:type:thread`; the error says which names there are.
pub fn parse(chain: &str) -> Result<Vec<Level>, String> {
    let mut levels = Vec::new();
    for part in chain.split(':') {
        let level = match part.trim().to_ascii_lowercase().as_str() {
            "package" | "pkg" => Level::Package,
            "type" | "class" => Level::Type,
            "loader" | "classloader" => Level::Loader,
            "thread" => Level::Thread,
            "site" => Level::Site,
            other => {
                return Err(format!(
                    "{other:?} is no level a heap dump can be grouped by: {NAMES}, separated by ':'"
                ))
            }
        };
        if levels.contains(&level) {
            return Err(format!("{} is named twice in {chain:?}", level.name()));
        }
        levels.push(level);
    }
    Ok(levels)
}

/// The grouping tree: node 0 is the heap; every other node's parent comes before it.
pub struct Grouping {
    pub nodes: Vec<Group>,
}

#[derive(Clone, Debug, Default)]
pub struct Group {
    pub name: String,
    pub parent: u32,
    pub objects: u64,
    pub bytes: u64,
    pub retained: u64,
}

/// Groups `analysis`'s objects by `levels`.
pub fn group(analysis: &Parts, levels: &[Level]) -> Grouping {
    let heap = analysis.heap;
    let labels = Labels::new(analysis);
    let mut nodes = vec![Group::default()];
    let mut child: HashMap<(u32, String), u32> = HashMap::new();
    let mut descend = |nodes: &mut Vec<Group>, parent: u32, name: &str| -> u32 {
        *child.entry((parent, name.to_owned())).or_insert_with(|| {
            nodes.push(Group {
                name: name.to_owned(),
                parent,
                ..Default::default()
            });
            nodes.len() as u32 - 1
        })
    };
    // The levels above the first per-object one, per class, walked once.
    let split = levels
        .iter()
        .position(|&l| l == Level::Thread)
        .unwrap_or(levels.len());
    let class_node: Vec<u32> = (0..heap.classes.len() as u32)
        .map(|c| {
            let mut at = 0;
            for &level in &levels[..split] {
                at = descend(&mut nodes, at, &labels.of_class(c, level));
            }
            at
        })
        .collect();
    let mut leaf = vec![NONE; heap.objects()];
    let mut by_class_and_thread: HashMap<(u32, u32), u32> = HashMap::new();
    for o in 0..heap.objects() as u32 {
        let c = heap.class_of[o as usize];
        if c == NONE {
            continue;
        }
        let node = if split == levels.len() {
            class_node[c as usize]
        } else {
            let thread = labels.thread_of(o);
            *by_class_and_thread.entry((c, thread)).or_insert_with(|| {
                let mut at = descend(
                    &mut nodes,
                    class_node[c as usize],
                    labels.thread_name(thread),
                );
                for &level in &levels[split + 1..] {
                    at = descend(&mut nodes, at, &labels.of_class(c, level));
                }
                at
            })
        };
        leaf[o as usize] = node;
        let size = analysis.sizes.of(heap, o);
        let mut at = node;
        loop {
            let g = &mut nodes[at as usize];
            g.objects += 1;
            g.bytes += size;
            if at == 0 {
                break;
            }
            at = g.parent;
        }
    }
    // Mirrors of classes the dump lists but does not describe: counted with the others.
    if heap.undumped_classes > 0 && split == levels.len() {
        let mut at = class_node[heap.class_class as usize];
        loop {
            let g = &mut nodes[at as usize];
            g.objects += heap.undumped_classes;
            g.bytes += heap.undumped_classes * analysis.sizes.bare_mirror();
            if at == 0 {
                break;
            }
            at = g.parent;
        }
    }
    retained(analysis, &leaf, &mut nodes);
    Grouping { nodes }
}

/// Each group's retained size, in one walk of the dominator tree with, per group, the number of
/// its objects on the branch walked.
fn retained(analysis: &Parts, leaf: &[u32], nodes: &mut [Group]) {
    let children = analysis.dominators.children();
    let mut open = vec![0u32; nodes.len()];
    let mut kept = vec![0u64; nodes.len()];
    let step = |v: u32, enter: bool, open: &mut [u32], kept: &mut [u64]| {
        let mut at = leaf[v as usize];
        if at == NONE {
            return;
        }
        loop {
            if enter {
                if open[at as usize] == 0 {
                    kept[at as usize] += analysis.retained[v as usize];
                }
                open[at as usize] += 1;
            } else {
                open[at as usize] -= 1;
            }
            if at == 0 {
                break;
            }
            at = nodes[at as usize].parent;
        }
    };
    // Iterative: the tree of a long linked list is as deep as the list.
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for &top in children.top() {
        step(top, true, &mut open, &mut kept);
        stack.push((top, 0));
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            let kids = children.of(v);
            if *next < kids.len() {
                let child = kids[*next];
                *next += 1;
                step(child, true, &mut open, &mut kept);
                stack.push((child, 0));
            } else {
                stack.pop();
                step(v, false, &mut open, &mut kept);
            }
        }
    }
    for (g, k) in nodes.iter_mut().zip(kept) {
        g.retained = k;
    }
}

/// The names of a dump's groups.
struct Labels<'a> {
    analysis: &'a Parts<'a>,
    /// Loader id -> its label.
    loaders: HashMap<u64, String>,
    /// Root index -> its thread's label index in `threads`; per object through `reach.root`.
    root_thread: Vec<u32>,
    threads: Vec<String>,
}

impl<'a> Labels<'a> {
    fn new(analysis: &'a Parts<'a>) -> Self {
        let heap = analysis.heap;
        // Loaders by their class's name; two loaders of one class are told apart by order.
        let mut ids: Vec<u64> = heap.classes.iter().map(|c| c.loader).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut seen: HashMap<String, u32> = HashMap::new();
        let loaders = ids
            .into_iter()
            .map(|id| {
                if id == 0 {
                    return (id, BOOT_LOADER.to_owned());
                }
                let class = heap
                    .index_of(id)
                    .map(|o| heap.class_of[o as usize])
                    .filter(|&c| c != NONE)
                    .map(|c| heap.classes[c as usize].name.clone())
                    .unwrap_or_else(|| "(a loader the dump does not hold)".into());
                let n = seen.entry(class.clone()).or_default();
                *n += 1;
                let label = if *n == 1 {
                    class
                } else {
                    format!("{class} #{n}")
                };
                (id, label)
            })
            .collect();
        let mut threads = vec![UNREACHABLE.to_owned(), NO_THREAD.to_owned()];
        let mut index: HashMap<String, u32> = HashMap::new();
        let root_thread = analysis
            .reach
            .roots
            .iter()
            .map(|r| match &r.kind {
                RootKind::Thread { thread } | RootKind::Local { thread, .. } => {
                    let name = format!("thread \"{}\"", thread.as_deref().unwrap_or("?"));
                    *index.entry(name.clone()).or_insert_with(|| {
                        threads.push(name);
                        threads.len() as u32 - 1
                    })
                }
                _ => 1,
            })
            .collect();
        Labels {
            analysis,
            loaders,
            root_thread,
            threads,
        }
    }

    fn of_class(&self, c: u32, level: Level) -> String {
        let class = &self.analysis.heap.classes[c as usize];
        match level {
            Level::Package => names::package_of(&class.name).to_owned(),
            Level::Type => class.name.clone(),
            Level::Loader => self.loaders.get(&class.loader).cloned().unwrap_or_default(),
            Level::Site => NO_SITE.to_owned(),
            Level::Thread => unreachable!("threads are per object"),
        }
    }

    /// The thread label of object `o`: the thread its root belongs to.
    fn thread_of(&self, o: u32) -> u32 {
        let root = self.analysis.reach.root[o as usize];
        if root != NONE {
            return self.root_thread[root as usize];
        }
        if self.analysis.dominators.idom(o) == crate::dominators::UNREACHED {
            0
        } else {
            // Reached only through what the paths do not follow (a referent, a class).
            1
        }
    }

    fn thread_name(&self, label: u32) -> &str {
        &self.threads[label as usize]
    }
}
