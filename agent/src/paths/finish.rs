//! A search's end: the roots it did not come to noted where their objects are on paths,
//! every reference it holds released, and what it found handed over (`Found`).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::*;
use crate::intmap::IntMap;
use crate::jvmti::RootKind;

impl Search {
    /// The roots a search that ended early (every target found) did not come to: notes those
    /// whose own object is on a path, for `also_roots`. One identity hash per root, at most
    /// [`MAX_ROOTS_NOTED`] of them, outside any stop.
    pub(super) fn note_unvisited_roots(&mut self, env: &mut Env) {
        let jni = env.jni;
        let on_paths: HashSet<(u32, u32)> = self
            .merge
            .nodes
            .iter()
            .map(|n| (n.identity, n.class))
            .collect();
        let end = self.roots.len().min(self.next_root + MAX_ROOTS_NOTED);
        for index in self.next_root..end {
            let object = match self.roots[index].1 {
                RootObject::Held(weak) if !weak.is_null() => jni!(jni, NewLocalRef, weak),
                RootObject::Static(class, field) if !class.is_null() => {
                    jni!(jni, GetStaticObjectField, class, field)
                }
                _ => continue,
            };
            if object.is_null() {
                continue;
            }
            let class = jni!(jni, GetObjectClass, object);
            let info = self.class_info(env, class);
            jni!(jni, DeleteLocalRef, class);
            let identity = env.jvmti.object_hash(object).ok();
            jni!(jni, DeleteLocalRef, object);
            if let (Some((class, _)), Some(identity)) = (info, identity) {
                let key = (identity as u32, class);
                if on_paths.contains(&key) {
                    self.root_objects.insert(index as u32, key);
                }
            }
        }
    }

    /// Notes on each node the other roots whose own object it is (`Node::also`). A root whose
    /// object an earlier root had reached adds no path of its own (the object is met already),
    /// yet it holds that object too: a static list that the request loop also keeps in a local,
    /// or in a lambda's frame. The path names the lasting root (roots are searched in
    /// `RootOrder`); these are the others, for "also reached from". Objects are told apart by
    /// identity hash and type, as the merged paths do.
    pub(super) fn also_roots(&mut self) {
        let mut by_object: HashMap<(u32, u32), Vec<u32>> = HashMap::default();
        for (&root, &(identity, class)) in &self.root_objects {
            by_object.entry((identity, class)).or_default().push(root);
        }
        // Each node's own root: a root's object carries its index in `field`; parents come
        // before their children.
        let mut own_root = vec![0u32; self.merge.nodes.len()];
        for i in 0..self.merge.nodes.len() {
            let node = &self.merge.nodes[i];
            own_root[i] = match node.parent {
                0 => node.field,
                parent => own_root[parent as usize - 1],
            };
            let Some(roots) = by_object.get(&(node.identity, node.class)) else {
                continue;
            };
            let mut also: Vec<u32> = roots
                .iter()
                .copied()
                .filter(|&r| r != own_root[i])
                .collect();
            also.sort_unstable();
            also.truncate(MAX_ALSO_ROOTS);
            self.merge.nodes[i].also = also;
        }
    }

    /// How long listing the roots stopped the JVM (zero without a listing).
    pub fn roots_pause(&self) -> Duration {
        self.roots_pause
    }

    /// How many targets it has reached so far.
    pub fn found_so_far(&self) -> u64 {
        self.found
    }

    /// Says why the search ends before it is done (its finds so far still count).
    pub fn interrupt(&mut self, why: String) {
        if self.incomplete.is_empty() {
            self.incomplete = why;
        }
    }

    /// Releases every reference the search holds and hands over what it found.
    pub fn finish(mut self, env: &mut Env) -> Found {
        let jni = env.jni;
        self.leave_root(jni);
        while let Some(root) = self.deferred.pop_front() {
            self.stack = root.stack;
            self.leave_root(jni);
        }
        self.note_unvisited_roots(env);
        self.release_globals(jni);
        let holders = self
            .targets
            .iter()
            .filter_map(|t| {
                t.holder.map(|(class, field, at)| Held {
                    slot: t.slot,
                    born: t.born,
                    class,
                    field,
                    at,
                })
            })
            .collect();
        let tally = self.tally_targets();
        let mut counted = self.count_reached();
        let top_roots = self.top_roots();
        self.also_roots();
        if self.incomplete.is_empty() && self.too_deep > 0 {
            self.incomplete = format!(
                "{} objects deeper than {MAX_DEPTH} references were not entered",
                self.too_deep
            );
        }
        // Through every root, the counts are of every live object of the class; otherwise of
        // those the search happened to pass, which say nothing of the rest.
        if !self.incomplete.is_empty() || self.stopped_early {
            counted.clear();
        }
        Found {
            counted,
            nodes: self.merge.into_nodes(),
            roots: self.roots.into_iter().map(|(root, _)| root).collect(),
            threads: self.threads,
            first_virtual: self.first_virtual,
            fields: self.fields,
            holders,
            started: Some(self.started),
            finished: Some(Instant::now()),
            targets: self.targets.len() as u64,
            found: self.found,
            visited: self.visited_count,
            cpu: self.cpu,
            roots_pause: self.roots_pause,
            incomplete: self.incomplete,
            transient_locals: self.transient_locals,
            stopped_early: self.stopped_early,
            top_roots,
            focused: self.scope != Scope::Full,
            missed: tally.missed,
            targeted: tally.targeted,
            missed_samples: tally.missed_samples,
            found_samples: tally.found_samples,
        }
    }

    /// Deletes the roots' references (each shared one once), the class cache's and the search's
    /// own classes'.
    fn release_globals(&mut self, jni: *mut JNIEnv) {
        let mut released: HashSet<usize> = HashSet::new();
        for (_, object) in &self.roots {
            match *object {
                RootObject::Held(weak) if !weak.is_null() && released.insert(weak as usize) => {
                    jni!(jni, DeleteWeakGlobalRef, weak);
                }
                RootObject::Static(class, _)
                    if !class.is_null() && released.insert(class as usize) =>
                {
                    jni!(jni, DeleteGlobalRef, class);
                }
                _ => {}
            }
        }
        for (mirror, _, _) in self.recent.drain(..) {
            jni!(jni, DeleteGlobalRef, mirror);
        }
        for global in [self.class_class, self.thread_class, self.reference_class] {
            if !global.is_null() {
                jni!(jni, DeleteGlobalRef, global);
            }
        }
    }

    /// The targets by class, and those it missed, with the samples missed (only a complete
    /// search's misses judge them) and found.
    fn tally_targets(&self) -> Tally {
        let mut missed: IntMap<u32, (u64, f64)> = IntMap::default();
        let mut targeted: IntMap<u32, (u64, f64)> = IntMap::default();
        let complete = self.incomplete.is_empty() && !self.stopped_early;
        let mut missed_samples = Vec::new();
        let mut found_samples = Vec::new();
        let add = |counts: &mut IntMap<u32, (u64, f64)>, target: &Target| {
            let entry = counts.entry(target.class).or_default();
            entry.0 += 1;
            entry.1 += target.weight;
        };
        for target in &self.targets {
            add(&mut targeted, target);
            if target.found {
                found_samples.push((target.slot, target.born));
            } else {
                add(&mut missed, target);
                if complete {
                    missed_samples.push((target.slot, target.born));
                }
            }
        }
        let by_count = |counts: IntMap<u32, (u64, f64)>| {
            let mut counts: Vec<(u32, u64, f64)> = counts
                .into_iter()
                .map(|(class, (n, weight))| (class, n, weight))
                .collect();
            counts.sort_by_key(|&(class, n, _)| (std::cmp::Reverse(n), class));
            counts
        };
        Tally {
            missed: by_count(missed),
            targeted: by_count(targeted),
            missed_samples,
            found_samples,
        }
    }

    /// Each sampled class's objects the search reached, and per root the counts of the
    /// classes sampled: on its node, made for a root that holds many of them though no sampled
    /// path went through it.
    fn count_reached(&mut self) -> Vec<(u32, u64, f64)> {
        let sampled: std::collections::HashSet<u32> =
            self.targets.iter().map(|t| t.class).collect();
        let mut by_root: IntMap<u32, Vec<(u32, u64)>> = IntMap::default();
        let mut counted: IntMap<u32, u64> = IntMap::default();
        for (&(root, class), &n) in &self.reached {
            if sampled.contains(&class) {
                by_root.entry(root).or_default().push((class, n));
                *counted.entry(class).or_default() += n;
            }
        }
        // Objects with no key were counted once per reference to them: their distinct
        // number instead, and its variance.
        let mut counted: Vec<(u32, u64, f64)> = counted
            .into_iter()
            .map(|(class, n)| match self.distinct.get(&class) {
                Some(distinct) if !distinct.is_empty() => {
                    let n = distinct.count();
                    (class, n, distinct::variance(n))
                }
                _ => (class, n, 0.0),
            })
            .collect();
        counted.sort_unstable_by_key(|&(class, n, _)| (class, n));
        for (root, mut counts) in by_root {
            let Some(&(identity, class)) = self.root_objects.get(&root) else {
                continue;
            };
            counts.sort_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
            counts.truncate(MAX_REACHED_TYPES);
            let key = (0, identity, class, root);
            let node = match self.merge.index.get(&key) {
                Some(&node) => node,
                None if counts[0].1 >= REACHED_FLOOR => self.merge.node(0, identity, class, root),
                None => continue,
            };
            self.merge.nodes[node as usize].reached = counts;
        }
        counted
    }

    /// The roots the next search prefers: where a tenth or more of the recent targets were
    /// found. A root that the roots' enumeration alone finds (a frame's local) holds a growth
    /// no search without that stop can see: named among the preferred roots with a growth's
    /// own evidence (`ENOUGH_TO_KEEP` finds), not only with a tenth of them, or the focused
    /// searches after it look through the statics and threads for it in vain until the next
    /// full search (a leak in `main`'s local beside a bigger static history filled at
    /// start-up, whose finds outnumber it). Not with fewer: a server's request frames each
    /// hold a session or two for a moment, and made the stops many and their roots first.
    fn top_roots(&self) -> Vec<RootKey> {
        let total_recent: u64 = self.found_by_root.values().sum();
        let mut by_root: Vec<(u32, u64)> =
            self.found_by_root.iter().map(|(&r, &n)| (r, n)).collect();
        by_root.sort_by_key(|&(r, n)| (std::cmp::Reverse(n), r));
        by_root
            .iter()
            .filter_map(|&(r, n)| Some((self.roots.get(r as usize)?, n)))
            .map(|((root, _), n)| {
                let enumerated = !matches!(root.kind, RootKind::StaticField | RootKind::Thread);
                (root, n, enumerated)
            })
            .filter(|&(_, n, enumerated)| {
                n * 10 >= total_recent.max(1) || (enumerated && n >= ENOUGH_TO_KEEP)
            })
            .map(|(root, _, enumerated)| RootKey {
                key: root.key(&self.threads),
                enumerated,
            })
            .collect()
    }
}

/// The search's targets by class, as `Found` reports them.
struct Tally {
    missed: Vec<(u32, u64, f64)>,
    targeted: Vec<(u32, u64, f64)>,
    missed_samples: Vec<(u32, u64)>,
    found_samples: Vec<(u32, u64)>,
}
