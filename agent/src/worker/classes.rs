//! The class and thread tables: the ids the agent tags classes with (shared with the sampling
//! callback, the walk and the path search), what it knows of each class, memcity's own share of
//! a class, and the threads tagged as a walk's first owners. Separate because every other part
//! reads these tables, which are filled here from the JVM's class and thread lists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use jni::sys::JNIEnv;

use super::Worker;
use crate::gc_counts;
use crate::jvmti::{Jvmti, LocalFrame};
use crate::names;
use crate::sampling::Sampler;
use crate::tags;
use crate::walk::WalkResult;
use crate::Agent;

/// Primitive type mirrors (`int.class` ... `void.class`): heap objects no class list reports.
const PRIMITIVE_MIRRORS: u64 = 9;

/// What the agent knows about every class it has tagged. Ids start at 1; 0 is "unknown".
pub(super) struct ClassTable {
    pub(super) names: Vec<String>,
    pub(super) object_array: Vec<bool>,
    mirror_size: Vec<u64>,
    pub(super) class_class: u32,
    /// Mirrors of the classes loaded at the last refresh, and their bytes.
    mirrors: u64,
    mirror_bytes: u64,
    min_mirror: u64,
    /// Whether each id has its class's name (provisional ids may wait for theirs).
    pub(super) named: Vec<bool>,
    /// Whether each id is a `WeakReference` or `PhantomReference` subclass.
    pub(super) weak_reference: Vec<bool>,
    /// Whether each id is the application's class rather than the JDK's (see `walk::Root`).
    pub(super) application: Vec<bool>,
}

impl ClassTable {
    pub(super) fn new() -> Self {
        Self {
            names: vec![names::UNKNOWN_CLASS.to_string()],
            object_array: vec![false],
            mirror_size: vec![0],
            class_class: 0,
            mirrors: 0,
            mirror_bytes: 0,
            min_mirror: 0,
            named: vec![true],
            weak_reference: vec![false],
            application: vec![false],
        }
    }

    /// Records class `id`; ids past the end (provisional tags from a walk) extend the table.
    fn add(
        &mut self,
        id: u32,
        signature: &str,
        mirror_size: crate::jvmti::Result<i64>,
        weak_reference: bool,
    ) {
        let index = id as usize;
        self.reserve(index + 1);
        self.named[index] = true;
        self.weak_reference[index] = weak_reference;
        let name = names::java_name(signature);
        self.application[index] = !memcity_proto::frames::is_library_frame(&name);
        if name == "java.lang.Class" {
            self.class_class = id;
        }
        self.names[index] = name;
        self.object_array[index] = names::is_object_array(signature);
        self.mirror_size[index] = mirror_size.unwrap_or(0).max(0) as u64;
    }

    /// Makes ids below `len` taken: a walk hands out provisional ids, and their classes may not be
    /// in the loaded-class list yet (loaded, not yet prepared), so those ids stay reserved, unnamed,
    /// until the class shows up; a new class must never get one of them.
    pub(super) fn reserve(&mut self, len: usize) {
        if self.names.len() < len {
            self.names.resize(len, names::UNKNOWN_CLASS.to_string());
            self.object_array.resize(len, false);
            self.mirror_size.resize(len, 0);
            self.named.resize(len, false);
            self.weak_reference.resize(len, false);
            self.application.resize(len, false);
        }
    }

    /// Tags classes loaded since the last refresh. Array classes get no ClassPrepare event, so
    /// the loaded-class list, not events, is the source of truth. New ids come from `next`,
    /// shared with the sampling callback and the walk; `sampler` (when sampling) serializes
    /// tagging with the callback and learns of class mirrors that had been sampled.
    fn refresh(
        &mut self,
        jvmti: &Jvmti,
        jni: *mut JNIEnv,
        next: &AtomicU32,
        sampler: Option<&Sampler>,
    ) {
        // SAFETY: `jni` is the worker thread's JNIEnv; the frame frees the class references.
        let Some(_frame) = (unsafe { LocalFrame::push(jni, 64) }) else {
            return;
        };
        let Ok(classes) = jvmti.loaded_classes() else {
            return;
        };
        // SAFETY: `jni` is this thread's JNIEnv; the class references die with the frame.
        let weak_kinds = unsafe { reference_classes(jni) };
        let (mut mirrors, mut bytes, mut min) = (0u64, 0u64, u64::MAX);
        for &class in classes.as_slice() {
            let Ok(tag) = jvmti.tag(class) else { continue };
            let tagged = tags::class_id(tag);
            let id = if tagged == 0 {
                match tag_class(jvmti, class, next, sampler) {
                    Some(id) => id,
                    None => continue,
                }
            } else {
                tagged
            };
            // Taken from now on, even if its name has to wait for the next refresh.
            self.reserve(id as usize + 1);
            // New, or tagged provisionally by a walk: learn its name and kind now.
            if !self.named.get(id as usize).copied().unwrap_or(false) {
                let Ok(signature) = jvmti.class_signature(class) else {
                    continue;
                };
                // SAFETY: as above.
                let weak = unsafe { is_subclass_of_any(jni, class, &weak_kinds) };
                self.add(
                    id,
                    &signature.to_string_lossy(),
                    jvmti.object_size(class),
                    weak,
                );
            }
            mirrors += 1;
            let size = self.mirror_size[id as usize];
            bytes += size;
            min = min.min(size);
        }
        self.mirrors = mirrors;
        self.mirror_bytes = bytes;
        self.min_mirror = if min == u64::MAX { 0 } else { min };
    }
}

/// Tags a class the table has not seen with a fresh id (under the sampler's tagging lock, so a
/// sampling thread cannot give it a second one), returning its id.
fn tag_class(
    jvmti: &Jvmti,
    class: jni::sys::jclass,
    next: &AtomicU32,
    sampler: Option<&Sampler>,
) -> Option<u32> {
    let _tagging = sampler.map(Sampler::class_tagging);
    let tag = jvmti.tag(class).ok()?;
    if tags::class_id(tag) != 0 {
        return Some(tags::class_id(tag)); // a sampling thread was first
    }
    if let (Some(slot), Some(sampler)) = (tags::sample_slot(tag), sampler) {
        // The mirror itself was sampled (a class defined at run time). It is counted as a class
        // from now on, and its sample ends here: no ObjectFree will ever carry that tag.
        sampler.tracker.died(slot);
    }
    let id = next.fetch_add(1, Ordering::AcqRel);
    jvmti.set_tag(class, tags::class_tag(id)).ok()?;
    Some(id)
}

/// Levels below the wholly held classes that [`held_by`] follows.
const HELD_LEVELS: usize = 3;

/// The share of each class's objects that objects of the `whole` classes hold (those classes
/// themselves at 1), from a walk's class references: every reference from a wholly held class
/// holds its referee; below that, a class's held share passes on only through references of
/// one per referrer (a list's array, a string's bytes), where a share of the referrers is that
/// share of the referees. Through fan-outs it does not: one of the application's arrays may
/// hold a million strings, and a share of `Object[]` says nothing of which. `java.lang.Class`
/// is never held: a mirror is its class's, whoever refers to it.
pub(super) fn held_by(whole: &[bool], counts: &WalkResult, class_class: u32) -> Vec<(u32, f64)> {
    let count = |c: u32| counts.objects.get(c as usize).copied().unwrap_or(0) as f64;
    let is_whole = |c: u32| whole.get(c as usize) == Some(&true);
    let mut share: HashMap<u32, f64> = HashMap::new();
    for (c, _) in whole.iter().enumerate().filter(|(_, &w)| w) {
        if count(c as u32) > 0.0 {
            share.insert(c as u32, 1.0);
        }
    }
    // The classes reached at the last level, whose share may pass on.
    let mut frontier: HashMap<u32, f64> = share.clone();
    for level in 0..HELD_LEVELS {
        let mut held: HashMap<u32, f64> = HashMap::new();
        for (&(from, to), r) in &counts.references {
            let Some(&s) = frontier.get(&from) else {
                continue;
            };
            if to == class_class || is_whole(to) || count(to) <= 0.0 {
                continue;
            }
            if level == 0 || r.references == r.referrers {
                *held.entry(to).or_default() += s * r.references as f64;
            }
        }
        frontier.clear();
        for (to, objects) in held {
            let before = share.get(&to).copied().unwrap_or(0.0);
            let after = (before + objects / count(to)).min(1.0);
            if after > before {
                share.insert(to, after);
                frontier.insert(to, after);
            }
        }
    }
    share.into_iter().collect()
}

/// Undoes [`Worker::split_memcity`].
pub(super) fn unsplit_memcity(counts: &mut WalkResult, moved: &[(u32, u32, u64, u64)]) {
    for &(class, id, objects, bytes) in moved {
        let (c, m) = (class as usize, id as usize);
        counts.objects[c] += objects;
        counts.bytes[c] += bytes;
        counts.objects[m] -= objects;
        counts.bytes[m] -= bytes;
    }
}

/// Class ids for the path search: the mirror's tag, tagging a class no refresh has seen yet.
pub(super) fn class_ids(agent: &'static Agent) -> impl FnMut(jni::sys::jclass) -> Option<u32> {
    move |class| {
        let tag = agent.jvmti.tag(class).ok()?;
        match tags::class_id(tag) {
            0 => tag_class(
                &agent.jvmti,
                class,
                &agent.next_class,
                agent.sampler.as_ref(),
            ),
            id => Some(id),
        }
    }
}

/// `java.lang.ref.WeakReference` and `PhantomReference` as local references: the kinds whose
/// referent a GC clears (soft referents stay until memory runs short, so they count as live).
///
/// # Safety
/// `jni` must be the current thread's JNIEnv, inside a local frame.
unsafe fn reference_classes(jni: *mut JNIEnv) -> Vec<jni::sys::jclass> {
    let mut out = Vec::new();
    for name in [
        c"java/lang/ref/WeakReference",
        c"java/lang/ref/PhantomReference",
    ] {
        // SAFETY: per the contract; FindClass and ExceptionClear are always in the table.
        unsafe {
            if let (Some(find), Some(clear)) = ((**jni).FindClass, (**jni).ExceptionClear) {
                let class = find(jni, name.as_ptr());
                if class.is_null() {
                    clear(jni);
                } else {
                    out.push(class);
                }
            }
        }
    }
    out
}

/// Whether `class` is (a subclass of) one of `kinds`.
///
/// # Safety
/// As for [`reference_classes`]; `class` a live class reference.
unsafe fn is_subclass_of_any(
    jni: *mut JNIEnv,
    class: jni::sys::jclass,
    kinds: &[jni::sys::jclass],
) -> bool {
    // SAFETY: per the contract.
    unsafe {
        match (**jni).IsAssignableFrom {
            Some(assignable) => kinds.iter().any(|&kind| assignable(jni, class, kind) != 0),
            None => false,
        }
    }
}

impl Worker {
    pub(super) fn refresh_classes(&mut self) {
        let jvmti = self.agent.jvmti;
        self.classes
            .refresh(&jvmti, self.jni, &self.agent.next_class, self.sampler());
        self.last_refresh = Instant::now();
    }

    /// Tags the live platform threads as the walk's first owners (1, 2, ...), with the coming
    /// walk's epoch, and notes their names: the walk then knows whose stack a local is on, and
    /// which thread's `ThreadLocal`s hold what. Returns how many.
    pub(super) fn tag_threads(&mut self) -> u32 {
        self.walk_threads.clear();
        let jvmti = self.agent.jvmti;
        // SAFETY: the worker's own JNIEnv; the frame frees the thread references.
        let Some(_frame) = (unsafe { LocalFrame::push(self.jni, 16) }) else {
            return 0;
        };
        let Ok(threads) = jvmti.all_threads() else {
            return 0;
        };
        for &thread in threads.as_slice() {
            if self.walk_threads.len() as u32 >= tags::MAX_OWNER / 2 {
                break;
            }
            let Ok(tag) = jvmti.tag(thread) else { continue };
            let owner = self.walk_threads.len() as u32 + 1;
            if jvmti
                .set_tag(thread, tags::with_owner(tag, owner, 0, self.epoch))
                .is_err()
            {
                continue;
            }
            let name = jvmti
                .thread_info(thread)
                .map(|info| info.name)
                .unwrap_or_else(|_| "(unnamed thread)".into());
            self.walk_threads.push(name);
        }
        self.walk_threads.len() as u32
    }

    /// Moves memcity's own objects under [`names::MEMCITY`]: of each class, the share of its
    /// live samples' weight that memcity's threads allocated (its JFR stream and helper class,
    /// the worker's canaries) goes to an id of its own, named as the class and grouped under
    /// `(memcity)`, so a type's total over both groups is still the JVM's count. Returns what
    /// moved, `(class, id, objects, bytes)`, for [`unsplit_memcity`].
    pub(super) fn split_memcity(&mut self, counts: &mut WalkResult) -> Vec<(u32, u32, u64, u64)> {
        let Some(sampler) = self.sampler() else {
            return Vec::new();
        };
        let mut weights: HashMap<u32, (f64, f64)> = HashMap::new();
        let threads = sampler.memcity_threads();
        sampler.tracker.for_each_live(|_, sample, _| {
            let ours = crate::sampling::is_memcity(&threads, sample.thread);
            let w = weights.entry(sample.class).or_default();
            w.0 += sample.weight;
            if ours {
                w.1 += sample.weight;
            }
        });
        // JFR's own objects are memcity's whole once memcity started its stream, when that is
        // the JVM's only JFR: at the default interval they carry a handful of samples, and a
        // type of them that got none would otherwise count as the application's growth. So are
        // the lists, arrays and strings they hold (its metadata: some 10,000 `ArrayList`s and
        // their arrays), by the class references of the walk.
        if self.gc_counts_tried && !gc_counts::application_uses_jfr(&self.command_line) {
            let jfr: Vec<bool> = self
                .classes
                .names
                .iter()
                .map(|name| name.starts_with("jdk.jfr."))
                .collect();
            let class_class = self.classes.class_class;
            for (class, share) in held_by(&jfr, counts, class_class) {
                let w = weights.entry(class).or_default();
                if w.0 <= 0.0 || w.1 / w.0 < share {
                    *w = (1.0, share);
                }
            }
        }
        let mut moved = Vec::new();
        for (&class, &(all, ours)) in &weights {
            let c = class as usize;
            if ours <= 0.0
                || all <= 0.0
                || c >= counts.objects.len()
                || self.memcity_of.contains_key(&class)
            {
                continue;
            }
            let id = match self.memcity_ids.get(&class) {
                Some(&id) => id,
                None => {
                    let id = self.agent.next_class.fetch_add(1, Ordering::AcqRel);
                    self.classes.reserve(id as usize + 1);
                    self.classes.names[id as usize] = self.classes.names[c].clone();
                    self.classes.named[id as usize] = true;
                    self.memcity_ids.insert(class, id);
                    self.memcity_of.insert(id, class);
                    id
                }
            };
            let m = id as usize;
            if counts.objects.len() <= m {
                counts.objects.resize(m + 1, 0);
                counts.bytes.resize(m + 1, 0);
            }
            let share = (ours / all).min(1.0);
            let objects = (counts.objects[c] as f64 * share).round() as u64;
            let bytes = (counts.bytes[c] as f64 * share).round() as u64;
            counts.objects[c] -= objects;
            counts.bytes[c] -= bytes;
            counts.objects[m] += objects;
            counts.bytes[m] += bytes;
            moved.push((class, id, objects, bytes));
        }
        moved
    }

    /// Class mirrors are not visited through a CLASS reference; count them from the class list
    /// (plus the primitive mirrors, which no list reports).
    pub(super) fn count_mirrors(&self, counts: &mut WalkResult) {
        let class_class = self.classes.class_class as usize;
        if class_class != 0 && class_class < counts.objects.len() {
            counts.objects[class_class] = self.classes.mirrors + PRIMITIVE_MIRRORS;
            counts.bytes[class_class] =
                self.classes.mirror_bytes + PRIMITIVE_MIRRORS * self.classes.min_mirror;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::RefCount;

    #[test]
    fn what_jfr_holds_is_followed_through_one_per_referrer_references_only() {
        // 1 jdk.jfr Element (wholly memcity's), 2 ArrayList, 3 Object[], 4 String, 5 byte[],
        // 6 the application's holder, 7 java.lang.Class.
        let whole = [false, true, false, false, false, false, false, false];
        let mut counts = WalkResult {
            objects: vec![0, 40, 100, 100, 1_000_100, 1_000_100, 1, 500],
            ..Default::default()
        };
        let mut refer = |from: u32, to: u32, referrers: u64, references: u64| {
            counts.references.insert(
                (from, to),
                RefCount {
                    referrers,
                    references,
                },
            );
        };
        refer(1, 2, 40, 80); // each element holds two lists: 80 of the 100
        refer(6, 2, 1, 20);
        refer(2, 3, 100, 100); // a list's array
        refer(3, 4, 100, 1_000_000); // the arrays' strings: a fan-out, mostly the app's
        refer(1, 4, 50, 100); // names and values of the elements
        refer(4, 5, 1_000_100, 1_000_100); // a string's bytes
        refer(1, 7, 40, 40); // event classes' mirrors
        let held: HashMap<u32, f64> = held_by(&whole, &counts, 7).into_iter().collect();
        assert_eq!(held[&1], 1.0);
        assert!((held[&2] - 0.8).abs() < 1e-9, "{held:?}");
        assert!((held[&3] - 0.8).abs() < 1e-9, "{held:?}");
        // The strings: only the 100 the elements hold, not 80 % of the arrays' million.
        let strings = 100.0 / 1_000_100.0;
        assert!((held[&4] - strings).abs() < 1e-12, "{held:?}");
        assert!((held[&5] - strings).abs() < 1e-12, "{held:?}");
        assert!(!held.contains_key(&6) && !held.contains_key(&7), "{held:?}");
        // Never more than the whole class.
        counts.objects[2] = 10;
        let held: HashMap<u32, f64> = held_by(&whole, &counts, 7).into_iter().collect();
        assert_eq!(held[&2], 1.0);
    }
}
