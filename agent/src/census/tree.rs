//! Turns a walk's per-class counts into the grouping tree of the classifier chain.
//!
//! Package and type totals are the walk's exact counts. Below a `site` or `thread` classifier the
//! exact type total is split by the sampled live objects of that type: each sample stands for
//! `weight` objects; if the samples stand for more than the exact total they are scaled down to
//! it, and what they do not cover goes to an explicit "(unsampled)" group (objects allocated
//! before the agent, or too rare to be sampled). Splits use largest-remainder rounding, so the
//! children of every node add up exactly to it.

use std::collections::HashMap;

use memcity_proto::sampled::apportion;
use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{exactness::Source, Exactness, Node, Reference};

use crate::census::estimate::error95;
use crate::census::walk::{SampleCount, WalkResult};
use crate::jvmti::tags;
use crate::names::{self, UNSAMPLED};
use crate::options::Classifier;

/// Names of the ids a walk reports.
pub trait NameSource {
    /// Java name of a class id (id 0: [`names::UNKNOWN_CLASS`]).
    fn class(&self, id: u32) -> &str;
    fn site(&self, id: u32) -> &str;
    fn thread(&self, id: u32) -> &str;
    /// The package a class id is grouped under: its name's, or a group of its own for ids that
    /// stand for part of a class (memcity's own objects, [`names::MEMCITY`]).
    fn package(&self, id: u32) -> &str {
        names::package_of(self.class(id))
    }
}

#[derive(Default)]
struct Group {
    objects: u64,
    bytes: u64,
    estimated: bool,
    /// Variances of `objects` and `bytes` (independent parts add up).
    variance: (f64, f64),
    /// Unconfirmed parts of `objects` and `bytes` (see `census/estimate/`).
    unconfirmed: (f64, f64),
    children: HashMap<u32, Group>,
}

/// What one leaf contributes.
#[derive(Clone, Copy, Default)]
struct Part {
    objects: u64,
    bytes: u64,
    variance: (f64, f64),
    unconfirmed: (f64, f64),
}

impl Group {
    fn add(&mut self, path: &[(u32, bool)], part: Part) {
        self.objects += part.objects;
        self.bytes += part.bytes;
        self.variance.0 += part.variance.0;
        self.variance.1 += part.variance.1;
        self.unconfirmed.0 += part.unconfirmed.0;
        self.unconfirmed.1 += part.unconfirmed.1;
        if let Some((&(name, estimated), rest)) = path.split_first() {
            let child = self.children.entry(name).or_default();
            child.estimated |= estimated;
            child.add(rest, part);
        }
    }

    fn into_node(self, name: u32) -> Node {
        let mut children: Vec<Node> = self
            .children
            .into_iter()
            .map(|(name, group)| group.into_node(name))
            .collect();
        // Largest first, then by id, so equal inputs give byte-identical snapshots.
        children.sort_by(|a, b| b.objects.cmp(&a.objects).then(a.name.cmp(&b.name)));
        Node {
            name,
            objects: self.objects,
            bytes: self.bytes,
            estimated: self.estimated,
            children,
            objects_error: error95(self.variance.0),
            bytes_error: error95(self.variance.1),
            objects_unconfirmed: (self.unconfirmed.0.round().max(0.0) as u64).min(self.objects),
            bytes_unconfirmed: (self.unconfirmed.1.round().max(0.0) as u64).min(self.bytes),
            // Only heap dumps have a dominator tree.
            retained_bytes: 0,
        }
    }
}

pub struct Built {
    pub root: Node,
    pub references: Vec<Reference>,
    pub exactness: Exactness,
}

/// Builds the tree for `chain` from `walk` (a walk's exact counts, or estimates when
/// `walk.variance` is set: then every group is marked estimated and carries its error).
pub fn build(
    walk: &WalkResult,
    chain: &[Classifier],
    names: &dyn NameSource,
    strings: &mut StringInterner,
) -> Built {
    let sampled_chain = chain.iter().any(|c| c.is_sampled());
    let estimated_types = !walk.variance.is_empty();
    // Samples grouped by class, in a stable order.
    let mut samples_by_class: HashMap<u32, Vec<(u64, SampleCount)>> = HashMap::new();
    let mut sampled_live = 0;
    for (&(class, key), &count) in &walk.sampled {
        sampled_live += count.objects;
        if sampled_chain {
            samples_by_class
                .entry(class)
                .or_default()
                .push((key, count));
        }
    }
    let mut root = Group::default();
    let mut namer = Namer {
        chain,
        names,
        estimated_types,
        path: Vec::with_capacity(chain.len()),
    };
    for (class, &objects) in walk.objects.iter().enumerate() {
        if objects == 0 {
            continue;
        }
        let whole = Part {
            objects,
            bytes: walk.bytes[class],
            variance: walk.variance.get(class).copied().unwrap_or_default(),
            unconfirmed: walk.unconfirmed.get(class).copied().unwrap_or_default(),
        };
        let class = class as u32;
        match samples_by_class.get_mut(&class) {
            Some(samples) if !samples.is_empty() => {
                samples.sort_by_key(|(key, _)| *key);
                add_split(&mut root, &mut namer, strings, class, whole, samples);
            }
            _ => root.add(&namer.path_of(class, None, None, strings), whole),
        }
    }
    Built {
        root: root.into_node(0),
        references: references(walk, names, strings),
        exactness: Exactness {
            types_exact: !estimated_types,
            sites_estimated: sampled_chain,
            sampled_live_objects: sampled_live,
            source: if estimated_types {
                Source::Estimate
            } else {
                Source::Walk
            } as i32,
            ..Default::default()
        },
    }
}

/// Names a class's groups down the classifier chain, each level marked estimated from the
/// first sampled classifier on (or all of them, when the types are estimated).
struct Namer<'a> {
    chain: &'a [Classifier],
    names: &'a dyn NameSource,
    estimated_types: bool,
    path: Vec<(u32, bool)>,
}

impl Namer<'_> {
    fn path_of(
        &mut self,
        class: u32,
        site: Option<u32>,
        thread: Option<u32>,
        strings: &mut StringInterner,
    ) -> Vec<(u32, bool)> {
        self.path.clear();
        let mut estimated = self.estimated_types;
        for classifier in self.chain {
            estimated |= classifier.is_sampled();
            let name = match classifier {
                Classifier::Package => self.names.package(class),
                Classifier::Type => self.names.class(class),
                Classifier::Site => site.map_or(UNSAMPLED, |s| self.names.site(s)),
                Classifier::Thread => thread.map_or(UNSAMPLED, |t| self.names.thread(t)),
            };
            self.path.push((strings.intern(name), estimated));
        }
        self.path.clone()
    }
}

/// A sampled class split by its samples' sites and threads: each sample key's share of the
/// class's objects (its samples' weight, at most the whole), bytes following objects, and the
/// rest the samples do not cover as one unsampled group.
fn add_split(
    root: &mut Group,
    namer: &mut Namer<'_>,
    strings: &mut StringInterner,
    class: u32,
    whole: Part,
    samples: &[(u64, SampleCount)],
) {
    let objects = whole.objects;
    let estimate: f64 = samples.iter().map(|(_, c)| c.weight).sum();
    let covered = (estimate.round() as u64).min(objects);
    let weights: Vec<f64> = samples.iter().map(|(_, c)| c.weight).collect();
    let object_parts = apportion(covered, &weights);
    // Bytes follow objects: the same split with the unsampled rest as one more part.
    let mut byte_weights: Vec<f64> = object_parts.iter().map(|&o| o as f64).collect();
    byte_weights.push((objects - covered) as f64);
    let byte_parts = apportion(whole.bytes, &byte_weights);
    for (i, (key, count)) in samples.iter().enumerate() {
        if object_parts[i] == 0 {
            continue;
        }
        let p = namer.path_of(
            class,
            Some(tags::key_site(*key)),
            Some(tags::key_thread(*key)),
            strings,
        );
        // A split's variance is its samples' (scaled like its count); bytes follow objects.
        let scale = object_parts[i] as f64 / count.weight.max(1.0);
        let var_objects = count.variance * scale * scale;
        let per_object = byte_parts[i] as f64 / object_parts[i] as f64;
        root.add(
            &p,
            Part {
                objects: object_parts[i],
                bytes: byte_parts[i],
                variance: (var_objects, var_objects * per_object * per_object),
                unconfirmed: (
                    count.unconfirmed * scale,
                    count.unconfirmed * scale * per_object,
                ),
            },
        );
    }
    if objects > covered {
        let p = namer.path_of(class, None, None, strings);
        // The rest carries the type's own uncertainty.
        root.add(
            &p,
            Part {
                objects: objects - covered,
                bytes: byte_parts[samples.len()],
                variance: whole.variance,
                // Every unconfirmed object is a sample's, counted in the splits above.
                unconfirmed: (0.0, 0.0),
            },
        );
    }
}

/// The type-level references, most first.
fn references(
    walk: &WalkResult,
    names: &dyn NameSource,
    strings: &mut StringInterner,
) -> Vec<Reference> {
    let mut references: Vec<Reference> = walk
        .references
        .iter()
        .map(|(&(from, to), count)| Reference {
            from_type: strings.intern(names.class(from)),
            to_type: strings.intern(names.class(to)),
            referrers: count.referrers,
            references: count.references,
        })
        .collect();
    references.sort_by(|a, b| {
        b.references
            .cmp(&a.references)
            .then(a.from_type.cmp(&b.from_type))
            .then(a.to_type.cmp(&b.to_type))
    });
    references
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::census::walk::RefCount;

    struct Fixed;
    impl NameSource for Fixed {
        fn class(&self, id: u32) -> &str {
            [
                "(unknown)",
                "java.util.LinkedList$Node",
                "Person",
                "java.lang.String",
                "byte[]",
            ][id as usize]
        }
        fn site(&self, id: u32) -> &str {
            ["", "Main.a(Main.java:1)", "Main.b(Main.java:2)"][id as usize]
        }
        fn thread(&self, id: u32) -> &str {
            ["", "main", "worker"][id as usize]
        }
    }

    fn walk() -> WalkResult {
        let mut w = WalkResult {
            objects: vec![0, 10, 10, 20, 20],
            bytes: vec![0, 240, 160, 480, 1000],
            ..Default::default()
        };
        w.references.insert(
            (1, 2),
            RefCount {
                referrers: 10,
                references: 10,
            },
        );
        w.references.insert(
            (2, 3),
            RefCount {
                referrers: 10,
                references: 20,
            },
        );
        // Strings: samples standing for 6 + 9 objects, 5 unsampled.
        let key = |site: u64, thread: u64| site | (thread << 22);
        w.sampled.insert(
            (3, key(1, 1)),
            SampleCount {
                objects: 2,
                weight: 6.0,
                variance: 12.0,
                unconfirmed: 6.0,
            },
        );
        w.sampled.insert(
            (3, key(2, 2)),
            SampleCount {
                objects: 1,
                weight: 9.0,
                variance: 72.0,
                unconfirmed: 0.0,
            },
        );
        // byte[]: samples standing for far more than exist: scaled down, nothing unsampled.
        w.sampled.insert(
            (4, key(1, 1)),
            SampleCount {
                objects: 1,
                weight: 300.0,
                variance: 89_700.0,
                unconfirmed: 0.0,
            },
        );
        w.sampled.insert(
            (4, key(2, 1)),
            SampleCount {
                objects: 1,
                weight: 100.0,
                variance: 9_900.0,
                unconfirmed: 0.0,
            },
        );
        w
    }

    fn child<'a>(node: &'a Node, strings: &StringInterner, name: &str) -> &'a Node {
        node.children
            .iter()
            .find(|c| strings.name(c.name) == Some(name))
            .unwrap_or_else(|| panic!("no child {name}"))
    }

    #[test]
    fn package_type_tree_is_exact() {
        let mut strings = StringInterner::new();
        let b = build(
            &walk(),
            &[Classifier::Package, Classifier::Type],
            &Fixed,
            &mut strings,
        );
        assert_eq!(b.root.objects, 60);
        assert_eq!(b.root.bytes, 1880);
        assert!(!b.exactness.sites_estimated);
        assert_eq!(b.exactness.sampled_live_objects, 5);
        let util = child(&b.root, &strings, "java.util");
        assert_eq!(
            child(util, &strings, "java.util.LinkedList$Node").objects,
            10
        );
        assert!(!util.estimated);
        let prim = child(&b.root, &strings, names::PRIMITIVE_ARRAYS);
        assert_eq!(child(prim, &strings, "byte[]").bytes, 1000);
        let person = child(
            child(&b.root, &strings, names::DEFAULT_PACKAGE),
            &strings,
            "Person",
        );
        assert!(person.children.is_empty());
        assert_eq!(b.references.len(), 2);
        assert_eq!(b.references[0].references, 20);
        assert_eq!(strings.name(b.references[0].from_type), Some("Person"));
    }

    #[test]
    fn site_level_is_scaled_to_exact_type_totals() {
        let mut strings = StringInterner::new();
        let b = build(
            &walk(),
            &[Classifier::Type, Classifier::Site],
            &Fixed,
            &mut strings,
        );
        assert!(b.exactness.sites_estimated);
        let string = child(&b.root, &strings, "java.lang.String");
        assert_eq!(string.objects, 20);
        assert!(!string.estimated);
        let a = child(string, &strings, "Main.a(Main.java:1)");
        let bb = child(string, &strings, "Main.b(Main.java:2)");
        let un = child(string, &strings, UNSAMPLED);
        assert_eq!((a.objects, bb.objects, un.objects), (6, 9, 5));
        assert!(a.estimated && un.estimated);
        assert_eq!(a.bytes + bb.bytes + un.bytes, 480);
        let bytes = child(&b.root, &strings, "byte[]");
        let parts: Vec<u64> = bytes.children.iter().map(|c| c.objects).collect();
        assert_eq!(parts, [15, 5]);
        assert!(bytes
            .children
            .iter()
            .all(|c| strings.name(c.name) != Some(UNSAMPLED)));
        // A type with no samples at all is wholly unsampled.
        let node = child(&b.root, &strings, "java.util.LinkedList$Node");
        assert_eq!(child(node, &strings, UNSAMPLED).objects, 10);
    }

    #[test]
    fn thread_above_type_marks_everything_below_estimated() {
        let mut strings = StringInterner::new();
        let b = build(
            &walk(),
            &[Classifier::Thread, Classifier::Type],
            &Fixed,
            &mut strings,
        );
        let main = child(&b.root, &strings, "main");
        assert!(main.estimated);
        assert!(main.children.iter().all(|c| c.estimated));
        let total: u64 = b.root.children.iter().map(|c| c.objects).sum();
        assert_eq!(total, 60);
    }

    #[test]
    fn estimated_counts_mark_every_group_and_carry_errors() {
        let mut strings = StringInterner::new();
        let mut w = walk();
        w.variance = vec![
            (0.0, 0.0),
            (100.0, 10_000.0),
            (0.0, 0.0),
            (0.0, 0.0),
            (0.0, 0.0),
        ];
        let b = build(
            &w,
            &[Classifier::Package, Classifier::Type],
            &Fixed,
            &mut strings,
        );
        assert!(!b.exactness.types_exact);
        assert_eq!(b.exactness.source, Source::Estimate as i32);
        assert!(b.root.children.iter().all(|c| c.estimated));
        let util = child(&b.root, &strings, "java.util");
        let node = child(util, &strings, "java.util.LinkedList$Node");
        assert!(node.estimated);
        assert_eq!((node.objects_error, node.bytes_error), (20, 196));
        assert_eq!(util.objects_error, 20, "variances add up the tree");
        // Unconfirmed parts add up the tree, by type and by the samples below a type.
        w.unconfirmed = vec![(0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (6.0, 144.0), (0.0, 0.0)];
        let b = build(
            &w,
            &[Classifier::Package, Classifier::Type],
            &Fixed,
            &mut strings,
        );
        let string = child(
            child(&b.root, &strings, "java.lang"),
            &strings,
            "java.lang.String",
        );
        assert_eq!(
            (string.objects_unconfirmed, string.bytes_unconfirmed),
            (6, 144)
        );
        assert_eq!(b.root.objects_unconfirmed, 6);
        assert_eq!(node.objects_unconfirmed, 0);
        let b = build(
            &w,
            &[Classifier::Type, Classifier::Site],
            &Fixed,
            &mut strings,
        );
        let string = child(&b.root, &strings, "java.lang.String");
        let a = child(string, &strings, "Main.a(Main.java:1)");
        assert_eq!((a.objects_unconfirmed, a.bytes_unconfirmed), (6, 144));
        let bb = child(string, &strings, "Main.b(Main.java:2)");
        assert_eq!(bb.objects_unconfirmed, 0);
        assert_eq!(child(string, &strings, UNSAMPLED).objects_unconfirmed, 0);
        // The walk's exact tree carries no error.
        let exact = build(&walk(), &[Classifier::Type], &Fixed, &mut strings);
        assert_eq!(exact.exactness.source, Source::Walk as i32);
        assert!(exact
            .root
            .children
            .iter()
            .all(|c| c.objects_error == 0 && !c.estimated));
    }
}
