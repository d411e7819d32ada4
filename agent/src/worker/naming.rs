//! Naming: turns the ids a walk or search counts by (classes, sites, threads, field slots,
//! roots) into the names and interned strings a snapshot carries. Separate because it runs
//! after the counting, on what the counting produced (asking the JVM only for method frames
//! and field names), and the tree builder sees it only through `NameSource`.

use std::collections::HashMap;
use std::time::Instant;

use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{
    root, FieldEdge, OwnedEdge, PathNode, PathTarget, PathTree, Root as ProtoRoot, TypeCount,
};

use super::Worker;
use crate::census::fields::FieldNames;
use crate::census::tree::NameSource;
use crate::census::walk::{self, WalkResult};
use crate::jvmti::tags;
use crate::jvmti::LocalFrame;
use crate::jvmti::RootKind;
use crate::names;
use crate::paths;
use crate::sampling::MethodNames;

/// Field edges kept per pair of types in a snapshot: a class with more reference fields to one
/// type is rare, and the rest are counted in `Reference` anyway.
const MAX_SLOTS_PER_PAIR: usize = 16;

/// What the worker names ids with, learned as the session goes: the snapshot's string table,
/// the methods of allocation sites, the sites' and threads' names by id, the walk's field
/// names, and the threads the last walk tagged as first owners.
pub(super) struct Naming {
    pub(super) strings: StringInterner,
    pub(super) methods: MethodNames,
    /// Index = site id; [0] is what a sample without a recorded site stands for.
    pub(super) site_names: Vec<String>,
    /// Index = thread id; [0] unused.
    pub(super) thread_names: Vec<String>,
    /// Names of the walk's field numbers, per class.
    pub(super) fields: FieldNames,
    /// Names of the threads tagged as the walk's first owners (`tag_threads`), in owner order.
    pub(super) walk_threads: Vec<String>,
}

impl Naming {
    pub(super) fn new() -> Naming {
        Naming {
            strings: StringInterner::new(),
            methods: MethodNames::new(),
            site_names: vec![names::SITE_NOT_RECORDED.to_string()],
            thread_names: vec![String::new()],
            fields: FieldNames::default(),
            walk_threads: Vec::new(),
        }
    }
}

pub(super) struct Names<'a> {
    pub(super) classes: &'a [String],
    pub(super) sites: &'a [String],
    pub(super) threads: &'a [String],
    /// Ids standing for memcity's share of a class (`Worker::split_memcity`).
    pub(super) memcity: &'a HashMap<u32, u32>,
}

impl NameSource for Names<'_> {
    fn class(&self, id: u32) -> &str {
        self.classes
            .get(id as usize)
            .map_or(names::UNKNOWN_CLASS, String::as_str)
    }
    fn site(&self, id: u32) -> &str {
        self.sites
            .get(id as usize)
            .map_or("(other sites)", String::as_str)
    }
    fn thread(&self, id: u32) -> &str {
        self.threads
            .get(id as usize)
            .map_or("(other threads)", String::as_str)
    }
    fn package(&self, id: u32) -> &str {
        if self.memcity.contains_key(&id) {
            names::MEMCITY
        } else {
            names::package_of(self.class(id))
        }
    }
}

fn root_kind(kind: RootKind) -> root::Kind {
    match kind {
        RootKind::StaticField => root::Kind::StaticField,
        RootKind::Thread => root::Kind::Thread,
        RootKind::StackLocal => root::Kind::StackLocal,
        RootKind::JniLocal => root::Kind::JniLocal,
        RootKind::JniGlobal => root::Kind::JniGlobal,
        RootKind::Monitor => root::Kind::Monitor,
        RootKind::Other => root::Kind::Other,
    }
}

impl Worker {
    /// Learns the field names of the classes a walk's field edges come from.
    fn learn_fields(&mut self, counts: &WalkResult) {
        let wanted: std::collections::HashSet<u32> = counts
            .fields
            .keys()
            .filter(|(from, slot, _)| *slot != walk::ELEMENTS && !self.naming.fields.has(*from))
            .map(|(from, _, _)| *from)
            .collect();
        if wanted.is_empty() {
            return;
        }
        let jvmti = self.agent.jvmti;
        // SAFETY: the worker's own JNIEnv; the frame frees the class references.
        let Some(_frame) = (unsafe { LocalFrame::push(self.jni, 64) }) else {
            return;
        };
        let Ok(classes) = jvmti.loaded_classes() else {
            return;
        };
        for &class in classes.as_slice() {
            let Ok(tag) = jvmti.tag(class) else { continue };
            let id = tags::class_id(tag);
            if wanted.contains(&id) && !self.naming.fields.has(id) {
                // SAFETY: the worker's JNIEnv; an inner frame frees the hierarchy's references.
                unsafe {
                    if let Some(_inner) = LocalFrame::push(self.jni, 64) {
                        self.naming.fields.learn(&jvmti, self.jni, id, class);
                    }
                }
            }
        }
    }

    /// A slot's name: a field, `[]` for elements; statics as `Class.FIELD` elsewhere.
    pub(super) fn slot_name(&self, from: u32, slot: u32) -> String {
        if slot == walk::ELEMENTS {
            "[]".to_string()
        } else {
            self.naming.fields.name(from, slot & !walk::STATIC)
        }
    }

    /// A class id's name, or `names::UNKNOWN_CLASS` for an id no refresh has named yet.
    fn class_name(&self, id: u32) -> String {
        self.classes
            .names
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| names::UNKNOWN_CLASS.to_string())
    }

    /// The walk's field edges, roots and owned edges, named, for the snapshot. At most
    /// `MAX_SLOTS_PER_PAIR` slots are kept per pair of types (the most referencing).
    pub(super) fn graph(
        &mut self,
        counts: &WalkResult,
    ) -> (Vec<FieldEdge>, Vec<ProtoRoot>, Vec<OwnedEdge>) {
        self.learn_fields(counts);
        let mut edges: Vec<(&(u32, u32, u32), &walk::SlotCount)> = counts.fields.iter().collect();
        edges.sort_unstable_by_key(|((from, slot, to), c)| {
            (*from, *to, std::cmp::Reverse(c.references), *slot)
        });
        let mut fields = Vec::with_capacity(edges.len());
        let mut pair = (u32::MAX, u32::MAX);
        let mut kept = 0;
        for (&(from, slot, to), c) in edges {
            if (from, to) != pair {
                pair = (from, to);
                kept = 0;
            }
            kept += 1;
            if kept > MAX_SLOTS_PER_PAIR {
                continue;
            }
            let field = self.slot_name(from, slot);
            fields.push(FieldEdge {
                from_type: self.naming.strings.intern(&self.class_name(from)),
                field: self.naming.strings.intern(&field),
                is_static: slot != walk::ELEMENTS && slot & walk::STATIC != 0,
                to_type: self.naming.strings.intern(&self.class_name(to)),
                referrers: c.referrers,
                references: c.references,
                max_fanout: c.max_fanout,
                max_length: c.max_length,
            });
        }
        let mut roots = Vec::with_capacity(counts.roots.len());
        for root in &counts.roots {
            let thread = (root.thread as usize)
                .checked_sub(1)
                .and_then(|i| self.naming.walk_threads.get(i))
                .cloned();
            let field = if root.kind == RootKind::StaticField {
                self.slot_name(root.class, root.slot)
            } else {
                String::new()
            };
            let out = self.root_proto(
                root.kind,
                thread.as_deref(),
                false,
                root.class,
                &field,
                (root.method, root.location),
            );
            roots.push(out);
        }
        let mut owned: Vec<OwnedEdge> = counts
            .owned
            .iter()
            .map(|(&(root, level, from, slot, to), c)| OwnedEdge {
                root: root - 1,
                level: u32::from(level),
                from_type: if level == 0 {
                    0
                } else {
                    self.naming.strings.intern(&self.class_name(from))
                },
                field: if level == 0 {
                    0
                } else {
                    self.naming.strings.intern(&self.slot_name(from, slot))
                },
                to_type: self.naming.strings.intern(&self.class_name(to)),
                referrers: c.referrers,
                references: c.references,
                max_fanout: c.max_fanout,
                max_length: c.max_length,
            })
            .collect();
        owned.sort_unstable_by_key(|e| (e.root, e.level, e.from_type, e.field, e.to_type));
        (fields, roots, owned)
    }

    /// A finished search, named for the snapshot.
    pub(super) fn paths_proto(&mut self, found: &paths::Found) -> PathTree {
        if found
            .nodes
            .iter()
            .any(|n| self.classes.names.len() <= n.class as usize)
        {
            self.refresh_classes(); // classes the search tagged
        }
        let ms = |t: Option<Instant>| {
            t.map_or(0, |t| {
                t.saturating_duration_since(self.agent.start).as_millis() as u64
            })
        };
        let mut nodes = Vec::with_capacity(found.nodes.len());
        let mut named_roots: HashMap<u32, ProtoRoot> = HashMap::new();
        let mut name_root = |worker: &mut Self, index: u32| -> Option<ProtoRoot> {
            if let Some(root) = named_roots.get(&index) {
                return Some(*root);
            }
            let r = found.roots.get(index as usize)?;
            let thread = r.thread.and_then(|t| found.threads.get(t)).cloned();
            let named = worker.root_proto(
                r.kind,
                thread.as_deref(),
                r.thread.is_some_and(|t| t >= found.first_virtual),
                r.class,
                &r.field,
                (r.method, r.location),
            );
            named_roots.insert(index, named);
            Some(named)
        };
        for node in &found.nodes {
            let also: Vec<ProtoRoot> = node
                .also
                .iter()
                .filter_map(|&r| name_root(self, r))
                .collect();
            let (field, root) = if node.parent == 0 {
                (0, name_root(self, node.field))
            } else {
                let name = found
                    .fields
                    .get(node.field as usize)
                    .map_or("?", String::as_str);
                (self.naming.strings.intern(name), None)
            };
            let type_name = self.class_name(node.class);
            nodes.push(PathNode {
                parent: node.parent,
                r#type: self.naming.strings.intern(&type_name),
                field,
                root,
                chain: node.chain,
                length: node.length,
                reached: self.type_counts(node.reached.iter().map(|&(c, n)| (c, n, 0.0))),
                also,
                identity: node.identity,
                retained_bytes: 0,
                targets: node
                    .targets
                    .iter()
                    .map(|&(c, samples, weight, born_s)| {
                        let name = self.class_name(c);
                        PathTarget {
                            r#type: self.naming.strings.intern(&name),
                            samples,
                            weight,
                            born_s,
                        }
                    })
                    .collect(),
            });
        }
        PathTree {
            targeted: self.type_counts(found.targeted.iter().copied()),
            unreached: self.type_counts(found.missed.iter().copied()),
            counted: self.type_counts(found.counted.iter().map(|&(c, n, _)| (c, n, 0.0))),
            started_ms: ms(found.started),
            finished_ms: ms(found.finished),
            targets: found.targets,
            found: found.found,
            objects_visited: found.visited,
            search_ns: found.cpu.as_nanos() as u64,
            roots_pause_ns: found.roots_pause.as_nanos() as u64,
            incomplete: found.incomplete.clone(),
            stopped_early: found.stopped_early,
            focused: found.focused,
            nodes,
        }
    }

    /// `(class, count, weight)` triples as the wire's type counts, the classes named (weight 0
    /// where the count is of objects, not samples).
    fn type_counts(&mut self, counts: impl IntoIterator<Item = (u32, u64, f64)>) -> Vec<TypeCount> {
        counts
            .into_iter()
            .map(|(class, objects, weight)| {
                let name = self.class_name(class);
                TypeCount {
                    r#type: self.naming.strings.intern(&name),
                    objects,
                    weight,
                }
            })
            .collect()
    }

    /// A GC root, named for the snapshot: `static LinkedListLeak.PEOPLE`, `thread "main"`,
    /// `local in HostPoolLeak.main(HostPoolLeak.java:67) of thread "main"`, `local in
    /// Events.run(Events.java:40) of virtual thread "events-17"` (`virtual_thread`: a
    /// virtual thread's frame, parked or mounted).
    fn root_proto(
        &mut self,
        kind: RootKind,
        thread: Option<&str>,
        virtual_thread: bool,
        class: u32,
        field: &str,
        frame: (usize, i64),
    ) -> ProtoRoot {
        let kind_of_thread = if virtual_thread {
            "virtual thread"
        } else {
            "thread"
        };
        let quoted = thread.map(|t| format!("{kind_of_thread} \"{t}\""));
        let mut out = ProtoRoot {
            kind: root_kind(kind) as i32,
            thread: thread.map_or(0, |t| self.naming.strings.intern(t)),
            ..Default::default()
        };
        let name = match kind {
            RootKind::StaticField => {
                let holder = self
                    .classes
                    .names
                    .get(class as usize)
                    .cloned()
                    .unwrap_or_else(|| names::UNKNOWN_CLASS.to_string());
                out.holder_type = self.naming.strings.intern(&holder);
                out.field = self.naming.strings.intern(field);
                format!("static {holder}.{field}")
            }
            RootKind::Thread => quoted.unwrap_or_else(|| "a thread".into()),
            RootKind::StackLocal | RootKind::JniLocal => {
                let jvmti = self.agent.jvmti;
                // SAFETY: the worker's own JNIEnv; frees the frame's declaring-class reference.
                let _frame = unsafe { LocalFrame::push(self.jni, 16) };
                let name = self.naming.methods.frame(&jvmti, frame);
                out.frame = self.naming.strings.intern(&name);
                let what = if kind == RootKind::StackLocal {
                    "local"
                } else {
                    "JNI local"
                };
                format!(
                    "{what} in {name} of {}",
                    quoted.unwrap_or_else(|| "a thread".into())
                )
            }
            RootKind::JniGlobal => "JNI global".into(),
            RootKind::Monitor => "monitor".into(),
            RootKind::Other => "VM internal".into(),
        };
        out.name = self.naming.strings.intern(&name);
        out
    }

    /// Names sites and threads sampled since the last snapshot.
    pub(super) fn resolve_names(&mut self) {
        let Some(sampler) = &self.agent.sampler else {
            return;
        };
        let jvmti = self.agent.jvmti;
        let new_sites = sampler.sites_from(self.naming.site_names.len() as u32);
        if !new_sites.is_empty() {
            // SAFETY: the worker's own JNIEnv; frees the declaring-class references.
            let _frame = unsafe { LocalFrame::push(self.jni, 64) };
            for (id, frames) in new_sites {
                debug_assert_eq!(id as usize, self.naming.site_names.len());
                let named: Vec<String> = frames
                    .iter()
                    .map(|&frame| self.naming.methods.frame(&jvmti, frame))
                    .collect();
                // The site's frames travel as ids with the names (`StringTable.sites`).
                let site = crate::sampling::site_of(&named, sampler.naming_frames());
                self.naming.strings.intern_site(&site);
                self.naming.site_names.push(site.name());
            }
        }
        while let Some(name) = sampler.thread_name(self.naming.thread_names.len() as u32) {
            self.naming.thread_names.push(name);
        }
    }
}

/// The type of the survivors past `lifetimes::MAX_SURVIVOR_GROUPS`, sent together.
const OTHER_SURVIVORS: &str = "(other types and sites)";

impl Worker {
    /// Tells the samples a walk reached what held them (for their lifetimes' death context):
    /// after the walk's snapshot, whose field edges named the fields. `walked_ms`: when the
    /// walk ran, by the tracker's clock. (No sweep comes between the walk and this, so each
    /// slot still holds the sample the walk saw.)
    pub(super) fn note_walk_holders(&mut self, result: &WalkResult, walked_ms: u32) {
        let (Some(sampler), true) = (self.sampler(), self.lifetimes.is_some()) else {
            return;
        };
        for (&slot, &(class, walk_slot)) in &result.holders {
            let Some(sample) = sampler.tracker.get(slot) else {
                continue;
            };
            let field = self
                .naming
                .strings
                .intern(&self.slot_name(class, walk_slot));
            sampler
                .tracker
                .set_holder(slot, sample.birth.allocated, class, field, walked_ms);
        }
    }

    /// The same for the samples a path search found below an object: for the lifetimes (what
    /// held an object that died), and for the estimates (a sample reached from a GC root is
    /// alive, marking or not).
    pub(super) fn note_holders(&mut self, found: &paths::Found) {
        let Some(sampler) = self.sampler() else {
            return;
        };
        let now = sampler.tracker.ms();
        for held in &found.holders {
            let name = found
                .fields
                .get(held.field as usize)
                .map_or("?", String::as_str);
            let field = self.naming.strings.intern(name);
            let ms = now.wrapping_sub(held.at.elapsed().as_millis() as u32);
            // A slot freed and taken again while the search ran gets nothing (`set_holder`).
            sampler
                .tracker
                .set_holder(held.slot, held.born, held.class, field, ms);
        }
        // What a search through every root did not reach twice in a row is garbage.
        for &(slot, born) in &found.found_samples {
            sampler.tracker.reached(slot, born);
        }
        for &(slot, born) in &found.missed_samples {
            sampler.tracker.unreached(slot, born);
        }
    }

    /// The lifetimes gathered since the last snapshot, named (`None` when none are kept).
    pub(super) fn lifetimes_proto(&mut self) -> Option<memcity_proto::v1::Lifetimes> {
        use memcity_proto::v1::{Death, Lifetimes, Moment, Survivors};
        let taken = self.lifetimes.as_mut()?.take();
        let tracker = &self.sampler()?.tracker;
        let allocated_bytes = tracker.allocated();
        let names = Names {
            classes: &self.classes.names,
            sites: &self.naming.site_names,
            threads: &self.naming.thread_names,
            memcity: &self.memcity.of,
        };
        let strings = &mut self.naming.strings;
        // Id 0 stays "unknown": a sample with no site or thread recorded.
        let mut site = |id: u32| match id {
            crate::sampling::NO_SITE => 0,
            id => strings.intern(names.site(id)),
        };
        let sites: Vec<u32> = taken
            .deaths
            .iter()
            .map(|d| d.sample.site)
            .chain(taken.survivors.iter().map(|((_, s), _)| *s))
            .map(&mut site)
            .collect();
        // The tracker's times wrap at 49 days; a snapshot's are since the start, whole.
        let moment = |m: crate::sampling::tracker::Moment| Moment {
            time_ms: tracker.unwrap_ms(m.ms),
            gc: u64::from(m.gcs),
            allocated_bytes: m.allocated,
        };
        let (death_sites, survivor_sites) = sites.split_at(taken.deaths.len());
        let deaths = taken
            .deaths
            .iter()
            .zip(death_sites)
            .map(|(d, &site)| {
                let s = &d.sample;
                let (holder_type, holder_field) = match s.holder {
                    Some((class, field)) => (strings.intern(names.class(class)), field),
                    None => (0, 0),
                };
                Death {
                    r#type: strings.intern(names.class(s.class)),
                    site,
                    thread: match s.thread {
                        0 => 0,
                        t => strings.intern(names.thread(t)),
                    },
                    weight: s.weight,
                    size: s.size,
                    born: Some(moment(s.birth)),
                    died: Some(moment(d.died)),
                    holder_type,
                    holder_field,
                    seen_ms: match s.holder {
                        Some(_) => tracker.unwrap_ms(s.seen_ms),
                        None => 0,
                    },
                    collectors: d.collectors,
                }
            })
            .collect();
        let mut alive: Vec<Survivors> = taken
            .survivors
            .iter()
            .zip(survivor_sites)
            .map(|(((class, _), ages), &site)| Survivors {
                r#type: strings.intern(names.class(*class)),
                site,
                by_gc_age: ages.to_vec(),
            })
            .collect();
        if let Some(ages) = taken.other_survivors {
            alive.push(Survivors {
                r#type: strings.intern(OTHER_SURVIVORS),
                site: 0,
                by_gc_age: ages.to_vec(),
            });
        }
        Some(Lifetimes {
            deaths,
            deaths_booked: taken.booked,
            alive,
            allocated_bytes,
        })
    }
}
