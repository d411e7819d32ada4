//! The class and thread tables: the ids the agent tags classes with (shared with the sampling
//! callback, the walk and the path search), what it knows of each class, memcity's own share of
//! a class, and the threads tagged as a walk's first owners. Separate because every other part
//! reads these tables, which are filled here from the JVM's class and thread lists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use jni::sys::JNIEnv;

use super::Worker;
use crate::census::gc_counts;
use crate::census::walk::WalkResult;
use crate::jvmti::tags;
use crate::jvmti::{Jvmti, LocalFrame};
use crate::log::debug;
use crate::names;
use crate::sampling::Sampler;
use crate::Agent;

/// Primitive type mirrors (`int.class` ... `void.class`): heap objects no class list reports.
const PRIMITIVE_MIRRORS: u64 = 9;

/// What the agent knows about every class it has tagged. Ids start at 1; 0 is "unknown".
/// Memcity's own objects among a class's (its threads' allocations, its classes' instances),
/// counted apart from the application's so the city shows them in a group of their own.
#[derive(Default)]
pub(super) struct MemcityShare {
    /// Per class with memcity's objects among its own, the id standing for memcity's share
    /// (named as the class, grouped under [`names::MEMCITY`]), and back.
    pub(super) ids: HashMap<u32, u32>,
    pub(super) of: HashMap<u32, u32>,
    /// Per class, the share of its `(objects, bytes)` that the last walk found memcity's
    /// (`WalkResult::memcity`), for that walk and the estimates after it.
    pub(super) share: HashMap<u32, (f64, f64)>,
}

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
    /// Whether each id is a class loader or a thread (`walk::ClassFacts::shared`).
    pub(super) shared: Vec<bool>,
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
            shared: vec![false],
            application: vec![false],
        }
    }

    /// Records class `id`; ids past the end (provisional tags from a walk) extend the table.
    fn add(
        &mut self,
        id: u32,
        signature: &str,
        mirror_size: crate::jvmti::Result<i64>,
        kind: Kind,
    ) {
        let index = id as usize;
        self.reserve(index + 1);
        self.named[index] = true;
        self.weak_reference[index] = kind.weak_reference;
        self.shared[index] = kind.shared;
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
            self.shared.resize(len, false);
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
        let weak_kinds = unsafe {
            classes_named(
                jni,
                &[
                    c"java/lang/ref/WeakReference",
                    c"java/lang/ref/PhantomReference",
                ],
            )
        };
        // SAFETY: as above.
        let shared_kinds =
            unsafe { classes_named(jni, &[c"java/lang/ClassLoader", c"java/lang/Thread"]) };
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
                let kind = unsafe {
                    Kind {
                        weak_reference: is_subclass_of_any(jni, class, &weak_kinds),
                        shared: is_subclass_of_any(jni, class, &shared_kinds),
                    }
                };
                self.add(
                    id,
                    &signature.to_string_lossy(),
                    jvmti.object_size(class),
                    kind,
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

/// What a class is a subclass of, for the walk.
struct Kind {
    /// `java.lang.ref.WeakReference` or `PhantomReference`: the kinds whose referent a GC
    /// clears (soft referents stay until memory runs short, so they count as live).
    weak_reference: bool,
    /// `java.lang.ClassLoader` or `java.lang.Thread`.
    shared: bool,
}

/// The classes of these JNI names as local references (those not found left out).
///
/// # Safety
/// `jni` must be the current thread's JNIEnv, inside a local frame.
unsafe fn classes_named(jni: *mut JNIEnv, names: &[&std::ffi::CStr]) -> Vec<jni::sys::jclass> {
    let mut out = Vec::new();
    for name in names {
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
/// As for [`classes_named`]; `class` a live class reference.
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
        self.clock.last_refresh = Instant::now();
    }

    /// Tags the live platform threads as the walk's first owners (1, 2, ...), with the coming
    /// walk's epoch, and notes their names: the walk then knows whose stack a local is on, and
    /// which thread's `ThreadLocal`s hold what. Returns how many.
    pub(super) fn tag_threads(&mut self) -> u32 {
        self.naming.walk_threads.clear();
        let jvmti = self.agent.jvmti;
        // SAFETY: the worker's own JNIEnv; the frame frees the thread references.
        let Some(_frame) = (unsafe { LocalFrame::push(self.jni, 16) }) else {
            return 0;
        };
        let Ok(threads) = jvmti.all_threads() else {
            return 0;
        };
        for &thread in threads.as_slice() {
            if self.naming.walk_threads.len() as u32 >= tags::MAX_OWNER / 2 {
                break;
            }
            let Ok(tag) = jvmti.tag(thread) else { continue };
            let owner = self.naming.walk_threads.len() as u32 + 1;
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
            self.naming.walk_threads.push(name);
        }
        self.naming.walk_threads.len() as u32
    }

    /// Whether each class id's objects are memcity's own for the walk (`ClassFacts::memcity`):
    /// its helper's, and JFR's once memcity started the JVM's only JFR.
    pub(super) fn memcity_classes(&self) -> Vec<bool> {
        let jfr_is_ours =
            self.gc_counts.tried && !gc_counts::application_uses_jfr(&self.command_line);
        self.classes
            .names
            .iter()
            .map(|name| {
                crate::sampling::is_memcity_class(name)
                    || (jfr_is_ours && name.starts_with("jdk.jfr."))
            })
            .collect()
    }

    /// Keeps the share of each class that a walk found memcity's (`WalkResult::memcity`).
    pub(super) fn note_memcity_share(&mut self, walk: &WalkResult) {
        self.memcity.share.clear();
        if !walk.memcity.is_empty() {
            let (objects, bytes) = walk
                .memcity
                .iter()
                .fold((0, 0), |(o, b), &(_, objects, bytes)| {
                    (o + objects, b + bytes)
                });
            debug!("walk: {objects} of memcity's own objects, {bytes} bytes");
        }
        for &(class, objects, bytes) in &walk.memcity {
            let all = |v: &Vec<u64>| v.get(class as usize).copied().unwrap_or(0);
            let share = |part: u64, all: u64| match all {
                0 => 0.0,
                all => (part as f64 / all as f64).min(1.0),
            };
            let (all_objects, all_bytes) = (all(&walk.objects), all(&walk.bytes));
            self.memcity.share.insert(
                class,
                (share(objects, all_objects), share(bytes, all_bytes)),
            );
        }
    }

    /// Moves memcity's own objects under [`names::MEMCITY`]: of each class, the share the last
    /// walk found memcity's (its JFR stream's metadata and parser, its helper's), or, when
    /// larger, the share of its live samples' weight that memcity's threads allocated (the
    /// worker's canaries, JFR's buffers since the walk), goes to an id of its own, named as
    /// the class and grouped under `(memcity)`, so a type's total over both groups is still
    /// the JVM's count. Returns what moved, `(class, id, objects, bytes)`, for
    /// [`unsplit_memcity`].
    pub(super) fn split_memcity(&mut self, counts: &mut WalkResult) -> Vec<(u32, u32, u64, u64)> {
        let mut weights: HashMap<u32, (f64, f64)> = HashMap::new();
        if let Some(sampler) = self.sampler() {
            let threads = sampler.memcity_threads();
            sampler.tracker.for_each_live(|_, sample, _| {
                let ours = crate::sampling::is_memcity(&threads, sample.thread);
                let w = weights.entry(sample.class).or_default();
                w.0 += sample.weight;
                if ours {
                    w.1 += sample.weight;
                }
            });
        }
        // Per class, memcity's share of its objects and of its bytes.
        let mut shares: HashMap<u32, (f64, f64)> = weights
            .into_iter()
            .filter(|&(_, (all, ours))| all > 0.0 && ours > 0.0)
            .map(|(class, (all, ours))| {
                let share = (ours / all).min(1.0);
                (class, (share, share))
            })
            .collect();
        for (&class, &(objects, bytes)) in &self.memcity.share {
            let s = shares.entry(class).or_default();
            *s = (s.0.max(objects), s.1.max(bytes));
        }
        let mut moved = Vec::new();
        for (&class, &(objects_share, bytes_share)) in &shares {
            let c = class as usize;
            if c >= counts.objects.len() || self.memcity.of.contains_key(&class) {
                continue;
            }
            let id = match self.memcity.ids.get(&class) {
                Some(&id) => id,
                None => {
                    let id = self.agent.next_class.fetch_add(1, Ordering::AcqRel);
                    self.classes.reserve(id as usize + 1);
                    self.classes.names[id as usize] = self.classes.names[c].clone();
                    self.classes.named[id as usize] = true;
                    self.memcity.ids.insert(class, id);
                    self.memcity.of.insert(id, class);
                    id
                }
            };
            let m = id as usize;
            if counts.objects.len() <= m {
                counts.objects.resize(m + 1, 0);
                counts.bytes.resize(m + 1, 0);
            }
            let objects = (counts.objects[c] as f64 * objects_share).round() as u64;
            let bytes = (counts.bytes[c] as f64 * bytes_share).round() as u64;
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
