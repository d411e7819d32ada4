//! Exact paths from GC roots to a dump's objects, merged as the agent merges its sampled ones
//! (`PathTree` in memcity.proto), so that the same leak analysis names the holder.
//!
//! The roots and the rules are the agent's: application statics, then application frames'
//! locals, threads, other locals and JNI globals, then the JDK's statics, each object credited
//! to the first root that reaches it; never through `Reference.referent` (a referent is not
//! held by its reference), never into a class (statics are roots of their own) nor, from
//! another root, into a thread (a live thread is a root). Within a tier the search is breadth
//! first, so every path is a shortest one from that tier's roots.

use std::collections::{HashMap, VecDeque};

use memcity_proto::frames::is_library_frame;

use crate::heap::{Heap, RootEntry, Shape, NONE};
use crate::records::RootRecord;

/// A GC root as memcity names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootKind {
    Static {
        holder: String,
        field: String,
    },
    Thread {
        thread: Option<String>,
    },
    Local {
        frame: String,
        thread: Option<String>,
        jni: bool,
    },
    JniGlobal,
    Monitor,
    Other,
}

/// A root: what it is, the object it references, and its tier (searched in order).
#[derive(Clone, Debug)]
pub struct Root {
    pub kind: RootKind,
    pub object: u32,
    pub tier: u8,
}

/// Every object the search reached, by the root that reached it first and the parent it was
/// reached from (a shortest path within that root's tier).
pub struct Reach {
    /// Per object: the object it was reached from, itself for a root's own object, NONE if no
    /// root reaches it.
    pub parent: Vec<u32>,
    /// Per object: the index of its root in `roots` (NONE if unreached).
    pub root: Vec<u32>,
    pub roots: Vec<Root>,
    pub reached: u64,
}

/// The roots of a dump, in search order. `thread_names` names thread objects.
pub fn roots(heap: &Heap, thread_names: &HashMap<u32, String>) -> Vec<Root> {
    let mut out = Vec::new();
    for class in &heap.classes {
        if class.object == NONE {
            continue;
        }
        let application = !is_library_frame(&class.name);
        for (name, ty, value) in &class.statics {
            if *ty != crate::records::TYPE_OBJECT || *value == 0 || name.starts_with('<') {
                continue;
            }
            if let Some(object) = heap.index_of(*value) {
                out.push(Root {
                    kind: RootKind::Static {
                        holder: class.name.clone(),
                        field: name.clone(),
                    },
                    object,
                    tier: if application { 0 } else { 5 },
                });
            }
        }
    }
    let thread_name = |serial: u32| {
        heap.thread_objects
            .get(&serial)
            .and_then(|o| thread_names.get(o))
            .cloned()
    };
    for &RootEntry { kind, object } in &heap.roots {
        let root = match kind {
            RootRecord::Thread { thread, .. } => Root {
                kind: RootKind::Thread {
                    thread: thread_name(thread),
                },
                object,
                tier: 2,
            },
            RootRecord::JavaFrame { thread, frame } | RootRecord::JniLocal { thread, frame } => {
                let name = heap
                    .stacks
                    .get(&thread)
                    .and_then(|s| s.get(frame as usize))
                    .map(|f| f.name.clone())
                    .unwrap_or_else(|| "(unknown frame)".into());
                let application = !is_library_frame(&name) && !name.starts_with('(');
                Root {
                    kind: RootKind::Local {
                        frame: name,
                        thread: thread_name(thread),
                        jni: matches!(kind, RootRecord::JniLocal { .. }),
                    },
                    object,
                    tier: if application { 1 } else { 3 },
                }
            }
            RootRecord::JniGlobal => Root {
                kind: RootKind::JniGlobal,
                object,
                tier: 4,
            },
            RootRecord::MonitorUsed => Root {
                kind: RootKind::Monitor,
                object,
                tier: 4,
            },
            // A class's statics are roots of their own, above; the class itself holds nothing.
            RootRecord::StickyClass => continue,
            _ => Root {
                kind: RootKind::Other,
                object,
                tier: 4,
            },
        };
        out.push(root);
    }
    // Stable: within a tier, the dump's order.
    out.sort_by_key(|r| r.tier);
    out
}

/// Breadth-first from each tier's roots over what no earlier root reached.
pub fn search(heap: &Heap, roots: Vec<Root>) -> Reach {
    let n = heap.objects();
    let mut parent = vec![NONE; n];
    let mut owner = vec![NONE; n];
    let is_thread: Vec<bool> = {
        let mut t = vec![false; n];
        for o in heap.thread_objects.values() {
            t[*o as usize] = true;
        }
        t
    };
    let mut queue = VecDeque::new();
    let mut reached = 0u64;
    let mut at = 0;
    while at < roots.len() {
        let tier = roots[at].tier;
        while at < roots.len() && roots[at].tier == tier {
            let o = roots[at].object;
            // A root's own object is entered even if it is a class: it is the root. A live
            // thread held by a local or a static is not entered from there: it is a root of
            // its own, and what it holds is its.
            let own_thread = matches!(roots[at].kind, RootKind::Thread { .. });
            if parent[o as usize] == NONE && (own_thread || !is_thread[o as usize]) {
                parent[o as usize] = o;
                owner[o as usize] = at as u32;
                reached += 1;
                queue.push_back(o);
            }
            at += 1;
        }
        while let Some(o) = queue.pop_front() {
            if heap.is_mirror(o) {
                // A static holding a class: the class's own statics are roots of their own.
                continue;
            }
            let (targets, slots) = heap.references(o);
            let referent = referent_slot(heap, o);
            for (&t, &slot) in targets.iter().zip(slots) {
                if parent[t as usize] != NONE
                    || Some(slot) == referent
                    || heap.is_mirror(t)
                    || is_thread[t as usize]
                {
                    continue;
                }
                parent[t as usize] = o;
                owner[t as usize] = owner[o as usize];
                reached += 1;
                queue.push_back(t);
            }
        }
    }
    Reach {
        parent,
        root: owner,
        roots,
        reached,
    }
}

/// The slot of `Reference.referent` in `o`'s references, for a `Reference`; mirrors have none.
fn referent_slot(heap: &Heap, o: u32) -> Option<u8> {
    let c = heap.class_of[o as usize];
    if c == NONE || heap.is_mirror(o) {
        return None;
    }
    let class = &heap.classes[c as usize];
    (class.shape == Shape::Instance)
        .then_some(class.referent)
        .flatten()
}

impl Reach {
    /// The path from a root to `o`, root's object first; empty when no root reaches it.
    pub fn path(&self, o: u32) -> Vec<u32> {
        let mut path = Vec::new();
        if self.parent[o as usize] == NONE {
            return path;
        }
        let mut at = o;
        loop {
            path.push(at);
            let up = self.parent[at as usize];
            if up == at {
                break;
            }
            at = up;
        }
        path.reverse();
        path
    }
}
