//! A read dump as one of memcity's snapshots: the grouping tree (package, type) with exact
//! counts, inferred sizes and retained sizes, the references per field and per type, the GC
//! roots, and a `PathTree` of exact shortest paths to objects chosen evenly across the heap,
//! so the viewer, the report and the leak analysis take a dump as they take a walk.

use std::collections::HashMap;

/// Maps keyed by objects and types, hashed fast: a snapshot makes one lookup per reference.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{
    exactness::Source, root::Kind, snapshot::Trigger, DumpInfo, Exactness, FieldEdge, HeapUsage,
    Node, PathNode, PathTarget, PathTree, Reference, Retainer, Root as ProtoRoot, Snapshot,
    TypeCount,
};

use crate::dominators::Dominators;
use crate::grouping::{self, Grouping, Level};
use crate::heap::{Heap, Shape, NONE, SLOT_ELEMENT, SLOT_LOADER, SLOT_SUPER};
use crate::paths::{self, Reach, RootKind};
use crate::sizes::Sizes;

/// How a dump is grouped unless asked otherwise: as the agent's default classifiers.
pub const DEFAULT_LEVELS: [Level; 2] = [Level::Package, Level::Type];

/// Objects the paths lead to, at most: as many as the agent's searches look for, chosen in
/// proportion to each type's bytes.
pub const MAX_TARGETS: usize = 10_000;

/// Everything computed from one dump, before it is named into a snapshot.
pub struct Analysis<'h> {
    pub heap: &'h Heap,
    pub sizes: Sizes,
    pub reach: Reach,
    /// Per object: its retained size (0 when no root reaches it).
    pub retained: Vec<u64>,
    pub dominators: Dominators,
    /// Per type name: objects, bytes, and the retained size of those no other object of the
    /// type dominates.
    pub types: Vec<TypeTotals>,
    /// The objects grouped by package and type, each group's retained size MAT's retained heap
    /// of a class (`grouping.rs`).
    pub grouping: Grouping,
    pub type_of_class: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
pub struct TypeTotals {
    pub name: String,
    pub objects: u64,
    pub bytes: u64,
    pub retained: u64,
}

impl<'h> Analysis<'h> {
    pub fn new(heap: &'h Heap) -> Result<Self, crate::DumpError> {
        let mut phases = crate::phases::Phases::start();
        let sizes = Sizes::infer(heap);
        phases.done("sizes");
        let roots = paths::roots(heap, &heap.thread_names);
        let reach = paths::search(heap, roots);
        phases.done("paths");
        let dominators = dominators(heap)?;
        phases.done("dominators");
        let retained = dominators.retained(|o| sizes.of(heap, o));
        phases.done("retained sizes");
        // Types by name: one class name loaded twice (two loaders) is one type, as the agent
        // and the histogram's reader see it.
        let mut type_by_name: HashMap<&str, u32> = HashMap::new();
        let mut types = Vec::new();
        let type_of_class: Vec<u32> = heap
            .classes
            .iter()
            .map(|c| {
                *type_by_name.entry(c.name.as_str()).or_insert_with(|| {
                    types.push(TypeTotals {
                        name: c.name.clone(),
                        ..Default::default()
                    });
                    types.len() as u32 - 1
                })
            })
            .collect();
        let mut analysis = Analysis {
            heap,
            sizes,
            reach,
            retained,
            dominators,
            types,
            grouping: Grouping { nodes: Vec::new() },
            type_of_class,
        };
        analysis.grouping = grouping::group(&analysis.parts(), &DEFAULT_LEVELS);
        // A type's totals are its group's under its package (a name is in one package): the
        // grouping counted every object, and the mirrors the dump lists without describing.
        let index: HashMap<&str, usize> = analysis
            .types
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        let groups = &analysis.grouping.nodes;
        let totals: Vec<(usize, &grouping::Group)> = groups
            .iter()
            .filter(|g| g.parent != 0 && groups[g.parent as usize].parent == 0)
            .filter_map(|g| index.get(g.name.as_str()).map(|&t| (t, g)))
            .collect();
        let totals: Vec<(usize, u64, u64, u64)> = totals
            .into_iter()
            .map(|(t, g)| (t, g.objects, g.bytes, g.retained))
            .collect();
        for (t, objects, bytes, retained) in totals {
            let totals = &mut analysis.types[t];
            totals.objects = objects;
            totals.bytes = bytes;
            totals.retained = retained;
        }
        phases.done("types");
        Ok(analysis)
    }

    /// The parts grouping reads.
    pub fn parts(&self) -> grouping::Parts<'_> {
        grouping::Parts {
            heap: self.heap,
            sizes: &self.sizes,
            reach: &self.reach,
            dominators: &self.dominators,
            retained: &self.retained,
        }
    }

    pub fn type_of(&self, o: u32) -> u32 {
        let c = self.heap.class_of[o as usize];
        if c == NONE {
            NONE
        } else {
            self.type_of_class[c as usize]
        }
    }

    /// Bytes of the objects no root reaches.
    pub fn unreachable(&self) -> (u64, u64) {
        let mut objects = 0;
        let mut bytes = 0;
        for o in 0..self.heap.objects() as u32 {
            if self.dominators.idom(o) == crate::dominators::UNREACHED {
                objects += 1;
                bytes += self.sizes.of(self.heap, o);
            }
        }
        (objects, bytes)
    }
}

/// The dominator tree as MAT builds it: a virtual root over every GC root, and every reference
/// followed, weak referents included (a referent is retained by its reference until a GC
/// clears it), plus each instance's reference to its class and a thread's to its locals.
fn dominators(heap: &Heap) -> Result<Dominators, crate::DumpError> {
    let mut roots: Vec<u32> = Vec::new();
    let mut locals: HashMap<u32, Vec<u32>> = HashMap::new();
    for root in &heap.roots {
        use crate::records::RootRecord::*;
        match root.kind {
            JavaFrame { thread, .. } | JniLocal { thread, .. } => {
                match heap.thread_objects.get(&thread) {
                    Some(&t) => locals.entry(t).or_default().push(root.object),
                    None => roots.push(root.object),
                }
            }
            _ => roots.push(root.object),
        }
    }
    if !heap
        .roots
        .iter()
        .any(|r| matches!(r.kind, crate::records::RootRecord::StickyClass))
    {
        // A dump without system classes (cut short before its roots, JDK 11/17 write them
        // last): every class is a root, as MAT does, so statics still hold what they hold.
        roots.extend(
            heap.classes
                .iter()
                .filter(|c| c.object != NONE)
                .map(|c| c.object),
        );
    }
    Dominators::compute(heap.objects(), &roots, |v, push| {
        let (targets, _) = heap.references(v);
        for &t in targets {
            push(t);
        }
        if !heap.is_mirror(v) {
            let c = heap.class_of[v as usize];
            if c != NONE && heap.classes[c as usize].object != NONE {
                push(heap.classes[c as usize].object);
            }
        }
        if let Some(locals) = locals.get(&v) {
            for &l in locals {
                push(l);
            }
        }
    })
    .map_err(|e| crate::DumpError::TooBig { objects: e.objects })
}

/// Names one analysed dump into a snapshot; new names go to `strings`.
pub fn snapshot(
    analysis: &Analysis,
    strings: &mut StringInterner,
    seq: u64,
    time_ms: u64,
    info: DumpInfo,
    levels: &[Level],
) -> Snapshot {
    let mut phases = crate::phases::Phases::start();
    let root = tree(analysis, levels, strings);
    phases.done("snapshot: tree");
    let (fields, references) = edges(analysis, strings);
    phases.done("snapshot: references");
    let roots = analysis
        .reach
        .roots
        .iter()
        .map(|r| root_proto(&r.kind, strings))
        .collect();
    let used: u64 = analysis.types.iter().map(|t| t.bytes).sum();
    let paths = path_tree(analysis, strings, time_ms);
    phases.done("snapshot: paths");
    Snapshot {
        seq,
        time_ms,
        gc_count: 0,
        trigger: Trigger::Dump as i32,
        classifiers: levels.iter().map(|l| l.name().to_owned()).collect(),
        root: Some(root),
        references,
        cost: None,
        exactness: Some(Exactness {
            types_exact: true,
            source: Source::Dump as i32,
            ..Default::default()
        }),
        fields,
        roots,
        owned: Vec::new(),
        paths: Some(paths),
        heap: Some(HeapUsage {
            used_bytes: used,
            max_bytes: 0,
        }),
        out_of_memory: out_of_memory(analysis.heap, time_ms),
        lifetimes: None,
        dump: Some(info),
    }
}

/// A dump HotSpot wrote at an OutOfMemoryError (`-XX:+HeapDumpOnOutOfMemoryError`): the
/// failing thread's stack starts in the error's constructor. The dump keeps no message.
fn out_of_memory(heap: &Heap, time_ms: u64) -> Option<memcity_proto::v1::OutOfMemory> {
    let (serial, _) = heap.stacks.iter().find(|(_, frames)| {
        frames
            .first()
            .is_some_and(|f| f.name.starts_with("java.lang.OutOfMemoryError.<init>"))
    })?;
    let thread = heap
        .thread_objects
        .get(serial)
        .and_then(|o| heap.thread_names.get(o))
        .cloned()
        .unwrap_or_default();
    Some(memcity_proto::v1::OutOfMemory {
        message: "a heap dump taken at the error".into(),
        thread,
        search_finished: true,
        time_ms,
    })
}

/// The grouping tree of `levels` as the protocol's nodes, the biggest first.
fn tree(analysis: &Analysis, levels: &[Level], strings: &mut StringInterner) -> Node {
    let computed;
    let grouping = if levels == DEFAULT_LEVELS {
        &analysis.grouping
    } else {
        computed = grouping::group(&analysis.parts(), levels);
        &computed
    };
    let groups = &grouping.nodes;
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); groups.len()];
    for (i, g) in groups.iter().enumerate().skip(1) {
        children[g.parent as usize].push(i as u32);
    }
    // Built leaves first (every child comes after its parent), so no recursion.
    let mut built: Vec<Option<Node>> = vec![None; groups.len()];
    for i in (0..groups.len()).rev() {
        let g = &groups[i];
        let mut nodes: Vec<Node> = children[i]
            .iter()
            .filter_map(|&c| built[c as usize].take())
            .filter(|n| n.objects > 0)
            .collect();
        nodes.sort_by(|a, b| b.objects.cmp(&a.objects).then(a.name.cmp(&b.name)));
        built[i] = Some(Node {
            name: if i == 0 { 0 } else { strings.intern(&g.name) },
            objects: g.objects,
            bytes: g.bytes,
            retained_bytes: g.retained,
            children: nodes,
            ..Default::default()
        });
    }
    built[0].take().unwrap_or_default()
}

#[derive(Default)]
struct FieldTotals {
    referrers: u64,
    references: u64,
    max_fanout: u64,
    max_length: u64,
}

/// A reference's key: (from type, field name id, static, to type).
type FieldKey = (u32, u32, bool, u32);

/// References by field and by pair of types, every object's counted once per key.
fn edges(analysis: &Analysis, strings: &mut StringInterner) -> (Vec<FieldEdge>, Vec<Reference>) {
    let heap = analysis.heap;
    let mut by_field: FastMap<FieldKey, FieldTotals> = FastMap::default();
    let mut by_type: FastMap<(u32, u32), (u64, u64)> = FastMap::default();
    let mut field_names: FastMap<(u32, u8), u32> = FastMap::default();
    let mut local: Vec<(FieldKey, u64)> = Vec::new();
    let mut pairs: Vec<(u32, u32, u64)> = Vec::new();
    for o in 0..heap.objects() as u32 {
        if !object_keys(analysis, strings, &mut field_names, o, &mut local) {
            continue;
        }
        let length = heap.length[o as usize];
        let is_array = !heap.is_mirror(o)
            && heap.classes[heap.class_of[o as usize] as usize].shape == Shape::ObjectArray;
        pairs.clear();
        for &(key, n) in &local {
            let f = by_field.entry(key).or_default();
            f.referrers += 1;
            f.references += n;
            f.max_fanout = f.max_fanout.max(n);
            if is_array {
                f.max_length = f.max_length.max(length as u64);
            }
            match pairs.iter_mut().find(|p| p.0 == key.0 && p.1 == key.3) {
                Some(p) => p.2 += n,
                None => pairs.push((key.0, key.3, n)),
            }
        }
        for &(a, b, n) in &pairs {
            let r = by_type.entry((a, b)).or_default();
            r.0 += 1;
            r.1 += n;
        }
    }
    edge_protos(analysis, strings, by_field, by_type)
}

/// Object `o`'s references by key into `local`, with how many of each; false when it has none
/// that count (no references, or no type).
fn object_keys(
    analysis: &Analysis,
    strings: &mut StringInterner,
    field_names: &mut FastMap<(u32, u8), u32>,
    o: u32,
    local: &mut Vec<(FieldKey, u64)>,
) -> bool {
    let heap = analysis.heap;
    let (targets, slots) = heap.references(o);
    if targets.is_empty() {
        return false;
    }
    // A class's references are its statics, keyed by the class itself.
    let mirror_of = heap.is_mirror(o).then(|| heap.mirror_class(o));
    let from = match mirror_of {
        Some(Some(c)) => analysis.type_of_class[c as usize],
        Some(None) => return false,
        None => analysis.type_of(o),
    };
    if from == NONE {
        return false;
    }
    local.clear();
    for (&t, &slot) in targets.iter().zip(slots) {
        if mirror_of.is_some() && (slot == SLOT_SUPER || slot == SLOT_LOADER) {
            continue;
        }
        let to = analysis.type_of(t);
        if to == NONE {
            continue;
        }
        let field = match mirror_of {
            Some(Some(c)) => {
                let name = heap.classes[c as usize]
                    .statics
                    .iter()
                    .filter(|s| s.1 == crate::records::TYPE_OBJECT)
                    .nth(slot as usize)
                    .map_or("<static>", |s| s.0.as_str());
                strings.intern(name)
            }
            _ => {
                let class = heap.class_of[o as usize];
                *field_names
                    .entry((class, slot))
                    .or_insert_with(|| strings.intern(&heap.field_name(o, slot)))
            }
        };
        let key = (from, field, mirror_of.is_some(), to);
        match local.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => local.push((key, 1)),
        }
    }
    true
}

/// The counted references as the protocol's, the most referenced first, as the agent sends
/// them: the report prints the first few.
fn edge_protos(
    analysis: &Analysis,
    strings: &mut StringInterner,
    by_field: FastMap<FieldKey, FieldTotals>,
    by_type: FastMap<(u32, u32), (u64, u64)>,
) -> (Vec<FieldEdge>, Vec<Reference>) {
    let type_name =
        |strings: &mut StringInterner, t: u32| strings.intern(&analysis.types[t as usize].name);
    let mut fields: Vec<FieldEdge> = by_field
        .into_iter()
        .map(|((from, field, is_static, to), f)| FieldEdge {
            from_type: type_name(strings, from),
            field,
            is_static,
            to_type: type_name(strings, to),
            referrers: f.referrers,
            references: f.references,
            max_fanout: f.max_fanout,
            max_length: f.max_length,
        })
        .collect();
    fields.sort_by_key(|f| {
        (
            std::cmp::Reverse(f.references),
            f.from_type,
            f.field,
            f.to_type,
            f.is_static,
        )
    });
    let mut references: Vec<Reference> = by_type
        .into_iter()
        .map(|((from, to), (referrers, references))| Reference {
            from_type: type_name(strings, from),
            to_type: type_name(strings, to),
            referrers,
            references,
        })
        .collect();
    references.sort_by_key(|r| (std::cmp::Reverse(r.references), r.from_type, r.to_type));
    (fields, references)
}

fn root_proto(kind: &RootKind, strings: &mut StringInterner) -> ProtoRoot {
    let quoted = |t: &Option<String>| match t {
        Some(t) => format!("thread \"{t}\""),
        None => "a thread".to_owned(),
    };
    let mut out = ProtoRoot::default();
    let (kind, name) = match kind {
        RootKind::Static { holder, field } => {
            out.holder_type = strings.intern(holder);
            out.field = strings.intern(field);
            (Kind::StaticField, format!("static {holder}.{field}"))
        }
        RootKind::Thread { thread } => {
            out.thread = thread.as_deref().map_or(0, |t| strings.intern(t));
            (Kind::Thread, quoted(thread))
        }
        RootKind::Local { frame, thread, jni } => {
            out.thread = thread.as_deref().map_or(0, |t| strings.intern(t));
            out.frame = strings.intern(frame);
            let what = if *jni { "JNI local" } else { "local" };
            let kind = if *jni {
                Kind::JniLocal
            } else {
                Kind::StackLocal
            };
            (kind, format!("{what} in {frame} of {}", quoted(thread)))
        }
        RootKind::JniGlobal => (Kind::JniGlobal, "JNI global".to_owned()),
        RootKind::Monitor => (Kind::Monitor, "monitor".to_owned()),
        RootKind::Other => (Kind::Other, "VM internal".to_owned()),
    };
    out.kind = kind as i32;
    out.name = strings.intern(&name);
    out
}

/// A top-level dominator keeping more than this share of the reachable heap is a suspect (MAT's
/// leak suspects report's threshold).
const RETAINER_SHARE: f64 = 0.10;
/// Descend to the biggest part while it keeps at least this share of its parent's (MAT's
/// `big_drop_ratio`).
const BIG_DROP: f64 = 0.7;

/// MAT's leak suspects in one dump: the top-level dominators that keep most, each followed to
/// its accumulation point.
pub fn retainers(analysis: &Analysis, strings: &mut StringInterner) -> Vec<Retainer> {
    let children = analysis.dominators.children();
    let retained = |o: u32| analysis.retained[o as usize];
    let reachable: u64 = children.top().iter().map(|&o| retained(o)).sum();
    let mut tops: Vec<u32> = children
        .top()
        .iter()
        .copied()
        .filter(|&o| retained(o) as f64 > RETAINER_SHARE * reachable as f64)
        .collect();
    tops.sort_by_key(|&o| std::cmp::Reverse(retained(o)));
    let singles: std::collections::HashSet<u32> = tops.iter().copied().collect();
    let mut found: Vec<Retainer> = tops
        .into_iter()
        .map(|top| {
            let mut at = top;
            // Bounded as MAT bounds it; a chain of one type (a singly linked list) ends the
            // descent at its head, which is where its holder's reference enters.
            for _ in 0..1000 {
                let Some(&biggest) = children.of(at).iter().max_by_key(|&&c| retained(c)) else {
                    break;
                };
                if (retained(biggest) as f64) < BIG_DROP * retained(at) as f64
                    || analysis.type_of(biggest) == analysis.type_of(at)
                {
                    break;
                }
                at = biggest;
            }
            retainer(analysis, strings, &children, &[at], reachable)
        })
        .collect();
    found.extend(group_retainers(
        analysis, strings, &children, &singles, reachable,
    ));
    found
}

/// The share of a group's paths that must pass one object for the descent to go on (MAT's
/// `group_suspects_accumulation_ratio`).
const GROUP_SHARE: f64 = 0.8;

/// MAT's group suspects: types whose top-level dominators, none a suspect alone, keep more than
/// a tenth of the reachable heap together; each led to where most of their paths meet.
fn group_retainers(
    analysis: &Analysis,
    strings: &mut StringInterner,
    children: &crate::dominators::Children,
    singles: &std::collections::HashSet<u32>,
    reachable: u64,
) -> Vec<Retainer> {
    let mut by_type: FastMap<u32, (u64, Vec<u32>)> = FastMap::default();
    for &o in children.top() {
        let t = analysis.type_of(o);
        if t == NONE || singles.contains(&o) {
            continue;
        }
        let e = by_type.entry(t).or_default();
        e.0 += analysis.retained[o as usize];
        e.1.push(o);
    }
    let mut groups: Vec<(u32, u64, Vec<u32>)> = by_type
        .into_iter()
        .filter(|(_, (kept, members))| {
            members.len() > 1 && *kept as f64 > RETAINER_SHARE * reachable as f64
        })
        .map(|(t, (kept, members))| (t, kept, members))
        .collect();
    groups.sort_by_key(|g| (std::cmp::Reverse(g.1), g.0));
    groups
        .into_iter()
        .map(|(t, _, members)| {
            // At most as many paths as MAT follows, chosen evenly.
            let step = members.len().div_ceil(MAX_TARGETS).max(1);
            let paths: Vec<Vec<u32>> = members
                .iter()
                .step_by(step)
                .map(|&o| analysis.reach.path(o))
                .filter(|p| p.len() > 1)
                .collect();
            let meet = meeting_point(&paths);
            let mut r = retainer(analysis, strings, children, &members, reachable);
            if let Some(meet) = meet {
                r.path = path_to(analysis, strings, meet);
            } else {
                r.path.clear();
            }
            r.group_type = strings.intern(&analysis.types[t as usize].name);
            r.group_objects = members.len() as u64;
            r
        })
        .collect()
}

/// The object at which, descending from the root, at least `GROUP_SHARE` of `paths` still
/// pass, deepest (never a path's own target).
fn meeting_point(paths: &[Vec<u32>]) -> Option<u32> {
    let mut alive: Vec<&Vec<u32>> = paths.iter().collect();
    let total = alive.len() as f64;
    let mut meet = None;
    for depth in 0.. {
        let mut counts: FastMap<u32, usize> = FastMap::default();
        for p in alive.iter().filter(|p| depth + 1 < p.len()) {
            *counts.entry(p[depth]).or_default() += 1;
        }
        let Some((&best, &n)) = counts
            .iter()
            .max_by_key(|(&o, &n)| (n, std::cmp::Reverse(o)))
        else {
            break;
        };
        if (n as f64) < GROUP_SHARE * total {
            break;
        }
        meet = Some(best);
        alive.retain(|p| depth + 1 < p.len() && p[depth] == best);
    }
    meet
}

/// The path from a root to `o` as retainer steps.
fn path_to(analysis: &Analysis, strings: &mut StringInterner, o: u32) -> Vec<PathNode> {
    let steps = analysis.reach.path(o);
    steps
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let from =
                (i > 0).then(|| (steps[i - 1], slot_between(analysis.heap, steps[i - 1], x)));
            path_node(analysis, strings, from, x, 0)
        })
        .collect()
}

fn retainer(
    analysis: &Analysis,
    strings: &mut StringInterner,
    children: &crate::dominators::Children,
    of: &[u32],
    reachable: u64,
) -> Retainer {
    // What it keeps: its dominator subtree, by type.
    let mut by_type: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut objects = 0u64;
    let mut stack = of.to_vec();
    while let Some(v) = stack.pop() {
        objects += 1;
        let e = by_type.entry(analysis.type_of(v)).or_default();
        e.0 += 1;
        e.1 += analysis.sizes.of(analysis.heap, v);
        stack.extend_from_slice(children.of(v));
    }
    let mut content: Vec<(u32, (u64, u64))> =
        by_type.into_iter().filter(|(t, _)| *t != NONE).collect();
    content.sort_by_key(|&(t, (_, bytes))| (std::cmp::Reverse(bytes), t));
    content.truncate(5);
    let content = content
        .into_iter()
        .map(|(t, (objects, bytes))| TypeCount {
            r#type: strings.intern(&analysis.types[t as usize].name),
            objects,
            weight: bytes as f64,
        })
        .collect();
    let at = of[0];
    let mut path = path_to(analysis, strings, at);
    if path.is_empty() {
        // Reached only through what the paths do not follow (a referent, a class's mirror):
        // the object alone, unnamed root.
        path.push(path_node(analysis, strings, None, at, 0));
    }
    Retainer {
        path,
        retained_bytes: of.iter().map(|&o| analysis.retained[o as usize]).sum(),
        reachable_bytes: reachable,
        objects,
        content,
        group_type: 0,
        group_objects: 0,
    }
}

/// Objects chosen evenly in each type, in proportion to its bytes: the paths' targets.
fn targets(analysis: &Analysis) -> Vec<(u32, u32, f64)> {
    let total: u64 = analysis.types.iter().map(|t| t.bytes).sum::<u64>().max(1);
    let quota: Vec<u64> = analysis
        .types
        .iter()
        .map(|t| {
            let share = (MAX_TARGETS as f64 * t.bytes as f64 / total as f64).round() as u64;
            share.max(u64::from(t.objects > 0)).min(t.objects)
        })
        .collect();
    let mut seen = vec![0u64; analysis.types.len()];
    let mut chosen = Vec::new();
    for o in 0..analysis.heap.objects() as u32 {
        let t = analysis.type_of(o);
        if t == NONE || analysis.heap.is_mirror(o) {
            continue;
        }
        let (count, q) = (analysis.types[t as usize].objects, quota[t as usize]);
        let k = seen[t as usize];
        seen[t as usize] += 1;
        // The k-th object is chosen when it crosses the next of q even steps.
        if q > 0 && (k * q) / count != ((k + 1) * q) / count {
            chosen.push((o, t, count as f64 / q as f64));
        }
    }
    chosen
}

/// The paths to the targets, merged: a run of one type through one field is one node.
///
/// Each target's path is climbed only up to the first object an earlier path met, so the work
/// is the union of the paths (a list's nodes once), not each path's length.
fn path_tree(analysis: &Analysis, strings: &mut StringInterner, time_ms: u64) -> PathTree {
    let heap = analysis.heap;
    let reach = &analysis.reach;
    let chosen = targets(analysis);
    let mut merge = Merge::new(heap.objects());
    let mut targeted: HashMap<u32, (u64, f64)> = HashMap::new();
    let mut unreached: HashMap<u32, (u64, f64)> = HashMap::new();
    let mut found = 0;
    for &(o, t, weight) in &chosen {
        let e = targeted.entry(t).or_default();
        e.0 += 1;
        e.1 += weight;
        if reach.parent[o as usize] == NONE {
            let e = unreached.entry(t).or_default();
            e.0 += 1;
            e.1 += weight;
            continue;
        }
        found += 1;
        merge.add(analysis, strings, o, t, weight);
    }
    let mut counted: HashMap<u32, (u64, f64)> = HashMap::new();
    for o in 0..heap.objects() as u32 {
        if reach.parent[o as usize] != NONE && !heap.is_mirror(o) {
            let t = analysis.type_of(o);
            if targeted.contains_key(&t) {
                counted.entry(t).or_default().0 += 1;
            }
        }
    }
    PathTree {
        started_ms: time_ms,
        finished_ms: time_ms,
        targets: chosen.len() as u64,
        found,
        objects_visited: reach.reached,
        search_ns: 0,
        roots_pause_ns: 0,
        incomplete: String::new(),
        nodes: merge.nodes,
        stopped_early: false,
        focused: false,
        targeted: type_counts(analysis, targeted, strings),
        unreached: type_counts(analysis, unreached, strings),
        counted: type_counts(analysis, counted, strings),
    }
}

/// Per type, objects and weight as the protocol's counts, by type id.
fn type_counts(
    analysis: &Analysis,
    counts: HashMap<u32, (u64, f64)>,
    strings: &mut StringInterner,
) -> Vec<TypeCount> {
    let mut v: Vec<TypeCount> = counts
        .into_iter()
        .map(|(t, (objects, weight))| TypeCount {
            r#type: strings.intern(&analysis.types[t as usize].name),
            objects,
            weight,
        })
        .collect();
    v.sort_by_key(|c| c.r#type);
    v
}

/// The targets' paths merged into `PathNode`s as they are added.
struct Merge {
    nodes: Vec<PathNode>,
    /// Per node: the field its run follows (None until its second object), and whether it is
    /// a root's own object (which never starts a run).
    links: Vec<(Option<u8>, bool)>,
    /// Per object: its node (NONE until a path meets it) and its position in the node's run.
    /// Dense, as a list's every node is met: 8 bytes an object for this phase only.
    node_of: Vec<u32>,
    pos: Vec<u32>,
    children: FastMap<(u32, u32), u32>,
    climb: Vec<u32>,
}

impl Merge {
    fn new(objects: usize) -> Self {
        Merge {
            nodes: Vec::new(),
            links: Vec::new(),
            node_of: vec![NONE; objects],
            pos: vec![0; objects],
            children: FastMap::default(),
            climb: Vec::new(),
        }
    }

    /// Adds the path to target `o` of type `t`, standing for `weight` objects.
    fn add(
        &mut self,
        analysis: &Analysis,
        strings: &mut StringInterner,
        o: u32,
        t: u32,
        weight: f64,
    ) {
        let reach = &analysis.reach;
        self.climb.clear();
        let mut x = o;
        while self.node_of[x as usize] == NONE && reach.parent[x as usize] != x {
            self.climb.push(x);
            x = reach.parent[x as usize];
        }
        if self.node_of[x as usize] == NONE {
            self.nodes.push(path_node(analysis, strings, None, x, 0));
            self.links.push((None, true));
            self.node_of[x as usize] = self.nodes.len() as u32 - 1;
        }
        let mut prev = x;
        for i in (0..self.climb.len()).rev() {
            let y = self.climb[i];
            self.step(analysis, strings, prev, y);
            prev = y;
        }
        let node = &mut self.nodes[self.node_of[o as usize] as usize];
        let name = strings.intern(&analysis.types[t as usize].name);
        match node.targets.iter_mut().find(|x| x.r#type == name) {
            Some(x) => {
                x.samples += 1;
                x.weight += weight;
            }
            None => node.targets.push(PathTarget {
                r#type: name,
                samples: 1,
                weight,
                born_s: 0,
            }),
        }
    }

    /// Object `y`, reached from `prev`: on `prev`'s run when it continues it, else a node below.
    fn step(&mut self, analysis: &Analysis, strings: &mut StringInterner, prev: u32, y: u32) {
        let (at, pos) = (
            self.node_of[prev as usize],
            u64::from(self.pos[prev as usize]),
        );
        let slot = slot_between(analysis.heap, prev, y);
        let same_type = analysis.type_of(y) == analysis.type_of(prev);
        let (link, is_root) = self.links[at as usize];
        if same_type && !is_root && link.is_none_or(|l| l == slot) {
            self.links[at as usize].0 = Some(slot);
            let node = &mut self.nodes[at as usize];
            node.chain = node.chain.max(pos + 2);
            self.node_of[y as usize] = at;
            self.pos[y as usize] = (pos + 1).min(u64::from(u32::MAX)) as u32;
        } else {
            let nodes = &mut self.nodes;
            let links = &mut self.links;
            let child = *self.children.entry((at, y)).or_insert_with(|| {
                nodes.push(path_node(analysis, strings, Some((prev, slot)), y, at + 1));
                links.push((None, false));
                nodes.len() as u32 - 1
            });
            self.node_of[y as usize] = child;
        }
    }
}

/// The slot of the reference from `from` to `to` (the first one, if several).
fn slot_between(heap: &Heap, from: u32, to: u32) -> u8 {
    let (targets, slots) = heap.references(from);
    targets
        .iter()
        .zip(slots)
        .find(|(&t, _)| t == to)
        .map(|(_, &s)| s)
        .unwrap_or(SLOT_ELEMENT)
}

fn path_node(
    analysis: &Analysis,
    strings: &mut StringInterner,
    from: Option<(u32, u8)>,
    o: u32,
    parent: u32,
) -> PathNode {
    let heap = analysis.heap;
    let ty = analysis.type_of(o);
    let mut node = PathNode {
        parent,
        r#type: strings.intern(&analysis.types[ty as usize].name),
        field: from.map_or(0, |(p, slot)| strings.intern(&heap.field_name(p, slot))),
        chain: 1,
        identity: identity(o),
        retained_bytes: analysis.retained[o as usize],
        ..Default::default()
    };
    let shape = heap.classes[heap.class_of[o as usize] as usize].shape;
    if shape != Shape::Instance && !heap.is_mirror(o) {
        node.length = heap.length[o as usize] as u64;
    }
    if from.is_none() {
        let root = analysis.reach.root[o as usize];
        if root != NONE {
            node.root = Some(root_proto(
                &analysis.reach.roots[root as usize].kind,
                strings,
            ));
        }
    }
    node
}

/// A 32-bit stand-in for the identity hash the agent shows: tells two objects of a dump apart
/// (objects move between dumps, so nothing could tell them apart across a series).
fn identity(o: u32) -> u32 {
    (u64::from(o)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> 32) as u32
}
