//! One heap walk: `FollowReferences` from the GC roots, so only live objects are counted.
//!
//! HotSpot visits each reachable object exactly once, and a visit of an instance or array starts
//! by reporting the object's reference to its class (`JVMTI_HEAP_REFERENCE_CLASS`), followed by
//! its field or element references (jvmtiTagMap.cpp, `iterate_over_object` / `iterate_over_array`).
//! So a CLASS reference marks "one more live object of the referrer's class", and the references
//! that follow until the next CLASS reference all belong to that object: that gives exact object
//! counts and exact distinct-referrer counts without tagging every object.
//!
//! Sizes: an instance's size is fixed per class and learned from any report of an instance as a
//! referee; primitive arrays report their size once, through the array-primitive-value callback;
//! object arrays are sized when first reported as a referee, deduplicated with the walk epoch in
//! their tag. Class mirrors (`java.lang.Class` instances) are not visited through a CLASS
//! reference, so they are counted from the class table instead.
//!
//! Field level: every reference is also counted per (referrer class, slot, referee class), a slot
//! being an instance field's JVMTI index, `ELEMENTS` for array elements, or `STATIC | index` for
//! a static field (then the referrer is the declaring class, not `java.lang.Class`). Roots are
//! counted per (kind, thread, frame). And since per-class counts mix the one collection that
//! grows with every other of its class, the objects a root holds directly and the few below them
//! are *owned*: their tag carries the root's number (`tags::owner`), so their visits are counted
//! per root too, with the largest array and fan-out each holds. A tag per owned object is the
//! cost, and only objects near roots get one (see `Root::start_depth`).
//!
//! memcity's own objects (its JFR stream's metadata, parser and buffers, which the application
//! shares types with: `HashMap$Node`, `String`, `Object[]`) are counted apart, so that they never
//! read as the application's growth: objects of memcity's classes (`ClassFacts::memcity`), and
//! what they reach first, through fields and elements, are tagged memcity's (`tags::with_memcity`)
//! and counted in `WalkResult::memcity`. Marks do not pass into class mirrors, class loaders or
//! threads, which are the application's whoever refers to them. An object the application also
//! holds is memcity's when memcity's reference to it came first: only the few objects both share.
//!
//! The callbacks run inside a safepoint on the VM thread: they must not allocate much, lock, or
//! call JNI. They only update the state below; everything else happens after the walk.

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::BuildHasherDefault;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use jni::sys::{jint, jlong};

use crate::intmap::{IntHasher, IntMap};
use crate::jvmti::sys;
use crate::jvmti::tags;
use crate::jvmti::{self, root_kind, Jvmti, RootKind};
use crate::sampling::tracker::Tracker;

/// The part of a class's estimate that stands for its pending births (see the module head):
/// objects, bytes, their variance and their outside-TLAB bound. Kept apart so that what the
/// GC's own count is compared with is the heap that GC saw (`worker/counts.rs`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Pending {
    pub objects: f64,
    pub bytes: f64,
    pub variance: (f64, f64),
    pub outside_tlab: (f64, f64),
}

/// Reference counts between two classes (see `Reference` in the proto).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RefCount {
    pub referrers: u64,
    pub references: u64,
}

/// Slot of array elements in field-level edges.
pub const ELEMENTS: u32 = u32::MAX;
/// Bit of a static field's slot (the JVMTI field index below it).
pub const STATIC: u32 = 1 << 31;

/// References through one slot (see `FieldEdge` in the proto).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SlotCount {
    /// Distinct referring objects.
    pub referrers: u64,
    pub references: u64,
    /// The most references one referring object holds through the slot (an array's non-null
    /// elements of that class; 1 for a field).
    pub max_fanout: u64,
    /// Referrers for which this was the first slot to its class in their visit: summed over
    /// slots, the distinct referrers of the class pair (see `references_by_class`).
    pub first_referrers: u64,
    /// The longest array referenced through the slot (0 when the referee is not an array).
    pub max_length: u64,
}

impl SlotCount {
    fn add(&mut self, references: u64, length: u64) {
        self.referrers += 1;
        self.references += references;
        self.max_fanout = self.max_fanout.max(references);
        self.max_length = self.max_length.max(length);
    }
}

/// One GC root, as far as the walk can tell roots apart. Field numbers are the walk's; the worker
/// names them afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Root {
    pub kind: RootKind,
    /// Owner number of the thread (threads are the first owners, see `ClassFacts::threads`); 0
    /// when unknown or not a thread's.
    pub thread: u32,
    /// Stack and JNI locals: the frame's method (a `jmethodID`) and depth.
    pub method: usize,
    pub depth: i32,
    /// Stack locals: the bytecode index.
    pub location: i64,
    /// Static fields: the declaring class and the field's slot (`STATIC | index`).
    pub class: u32,
    pub slot: u32,
}

impl Root {
    fn of(kind: RootKind) -> Self {
        Root {
            kind,
            thread: 0,
            method: 0,
            depth: 0,
            location: 0,
            class: 0,
            slot: 0,
        }
    }

    /// The owned depth of the object this root holds, or `None` for roots whose objects are not
    /// worth a tag: a root owns `MAX_OWNED_DEPTH - start` levels below its object. Threads own
    /// five: a thread-local leak sits at `threadLocals`, its table, an entry, the entry's value
    /// (the growing list or map) and that value's array, whose length is the evidence that this
    /// thread holds the big one (with three, the value was out of reach and any JDK frame
    /// holding a small list of the same type outranked the thread). Application statics own
    /// three (a static map, its table and nodes); stack locals two (the frame's local is often
    /// the manager that holds the map); JDK statics only their object (there are thousands; a
    /// leak into one still shows its table's length). JNI locals own nothing: a native frame's
    /// handles are not where a fix goes, and since an object is owned by the first root the walk
    /// comes from (roots come before class mirrors and their statics), they would take the
    /// static field's objects from it.
    fn start_depth(&self, application_class: bool) -> Option<u8> {
        let levels = match self.kind {
            RootKind::Thread => 5,
            RootKind::StaticField if application_class => 3,
            RootKind::StaticField => 0,
            RootKind::StackLocal => 2,
            _ => return None,
        };
        Some(tags::MAX_OWNED_DEPTH - levels)
    }
}

/// Stack and JNI locals: where the reference sits.
#[derive(Debug, Default, Clone, Copy)]
pub struct FrameRef {
    pub thread_tag: jlong,
    pub depth: jint,
    pub method: usize,
    pub location: jlong,
}

const NO_FRAME: FrameRef = FrameRef {
    thread_tag: 0,
    depth: 0,
    method: 0,
    location: 0,
};

/// Elements of an owned array that are owned in turn.
const OWNED_ELEMENTS: u32 = 64;

/// `(owner, level, from class, slot, to class)`: level 0 is the root's own reference to its
/// object (`from` and `slot` 0); level `d + 1` a reference from an object owned at depth `d`.
pub type OwnedKey = (u32, u8, u32, u32, u32);

/// Sampled live objects of one (class, site, thread).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SampleCount {
    /// Live objects carrying this sample key.
    pub objects: u64,
    /// Sum of their sampling weights: the estimated live objects they stand for.
    pub weight: f64,
    /// Sum of `w * (w - 1)`: the variance of `weight` as an estimate (see `Exactness`).
    pub variance: f64,
    /// The part of `weight` no old-generation marking has confirmed (see `estimate.rs`).
    pub unconfirmed: f64,
}

/// What one walk found, indexed by class id (0 = objects of an untagged class).
#[derive(Debug, Default, Clone)]
pub struct WalkResult {
    pub objects: Vec<u64>,
    pub bytes: Vec<u64>,
    /// `(class id, sample key)` -> sampled live objects.
    pub sampled: IntMap<(u32, u64), SampleCount>,
    /// `(from class, to class)` -> counts.
    pub references: IntMap<(u32, u32), RefCount>,
    /// `(from class, slot, to class)` -> counts (see `ELEMENTS`, `STATIC`).
    pub fields: IntMap<(u32, u32, u32), SlotCount>,
    /// The roots met, by owner number - 1 (the first `ClassFacts::threads` are the threads).
    pub roots: Vec<Root>,
    /// What each root owns, level by level (see `OwnedKey`).
    pub owned: IntMap<OwnedKey, SlotCount>,
    /// Roots met after the owner numbers ran out: counted nowhere by root.
    pub unowned_roots: u64,
    pub visited: u64,
    pub pause: Duration,
    /// First class id past the class table's: ids from here were tagged during the walk.
    pub first_new_class: u32,
    /// Per class, the variance of `(objects, bytes)` when they are estimates; empty for a
    /// walk's exact counts.
    pub variance: Vec<(f64, f64)>,
    /// Per class, the part of `(objects, bytes)` estimated from samples no old-generation
    /// marking has confirmed yet (see `estimate.rs`); empty for a walk.
    pub unconfirmed: Vec<(f64, f64)>,
    /// Per class, the part of an estimate that stands for births no GC has judged yet (see
    /// `estimate.rs`); empty for a walk.
    pub pending: Vec<Pending>,
    /// For estimates: the tracker's `last_gc` they were made at (births before it counted).
    pub last_gc: u32,
    /// Tracker slots of the sampled objects the walk reached (alive at the walk). Stamped only
    /// once the walk succeeded, so an aborted walk changes nothing.
    pub seen_slots: Vec<u32>,
    /// What held each sampled object the walk reached through a field or an array: tracker
    /// slot -> `(class, walk slot)` of a referrer (the last one reported), for its lifetime's
    /// death context (`memcity.proto` `Death.holder_type`).
    pub holders: IntMap<u32, (u32, u32)>,
    /// memcity's own objects the walk met: `(class, objects, bytes)` (see the module's doc).
    pub memcity: Vec<(u32, u64, u64)>,
}

/// JVMTI's field index of `java.lang.ref.Reference.referent` in every subclass: it is the first
/// field `Reference` declares, `Object` has none, and the JDK's reference classes implement no
/// interface with constants (see fields.rs for how the numbers are made).
pub const REFERENT_FIELD: jint = 0;

/// Per-class facts the walk needs, prepared by the class table before the walk.
pub struct ClassFacts<'a> {
    /// Whether each class id is an array of references.
    pub object_array: &'a [bool],
    /// Id of `java.lang.Class`, whose instances are counted from the class table.
    pub class_class: u32,
    /// Whether each class id is a `WeakReference` or `PhantomReference` subclass: the walk does not
    /// follow their `referent` (a GC clears it; a soft referent is kept, so it is followed).
    pub weak_reference: &'a [bool],
    /// Hands out class ids (shared with the class table and the sampler): a class loaded after
    /// the class table's refresh (between that and the safepoint) gets one as a provisional tag
    /// when the walk first meets one of its objects, and the class table names it after the walk.
    pub next_class: &'a AtomicU32,
    /// Where sampled objects' slots live; the walk lists each one it reaches.
    pub tracker: Option<&'a Tracker>,
    /// Whether to note what holds each sampled object (`WalkResult::holders`; for lifetimes).
    pub holders: bool,
    /// Whether each class id is the application's (not the JDK's): its statics own more.
    pub application: &'a [bool],
    /// Threads the worker tagged as owners 1..=threads before the walk (`tag_threads`).
    pub threads: u32,
    /// Whether each class id's objects are memcity's own (its helper; JFR's, when memcity runs
    /// the JVM's only JFR): what they reach is memcity's too.
    pub memcity: &'a [bool],
    /// Whether each class id is a class loader or a thread: the application's, whoever refers
    /// to it, so memcity's marks stop there.
    pub shared: &'a [bool],
}

struct State<'a> {
    facts: ClassFacts<'a>,
    epoch: u64,
    deadline: Instant,
    calls: u64,
    aborted: bool,
    panicked: bool,
    objects: Vec<u64>,
    array_bytes: Vec<u64>,
    instance_size: Vec<u64>,
    sampled: IntMap<(u32, u64), SampleCount>,
    /// The object being visited: its class, or `None` between visits.
    current: Option<u32>,
    /// For static-field visits of class mirrors: the mirror's tag, to tell mirrors apart.
    current_mirror: Option<jlong>,
    /// The current visit's references by slot: `(slot, to, references, longest array, first
    /// slot to that class)`. Fields are reported once per slot; elements are merged by class.
    slots: Vec<(u32, u32, u64, u64, bool)>,
    /// The referrer of field-level edges: the visited object's class, or for static fields the
    /// declaring class.
    slot_owner: u32,
    /// The current visit's owner and depth, if owned; and whether it is an array (whose
    /// elements are counted but not owned: there may be millions).
    current_owned: Option<(u32, u8)>,
    current_array: bool,
    /// Elements of the current (owned) array made owned so far.
    elements_owned: u32,
    fields: IntMap<(u32, u32, u32), SlotCount>,
    roots: Vec<Root>,
    /// Per root (owner number - 1), the depth its own object is owned at.
    start_depths: Vec<u8>,
    root_ids: HashMap<Root, u32, BuildHasherDefault<IntHasher>>,
    owned: IntMap<OwnedKey, SlotCount>,
    unowned_roots: u64,
    visited: u64,
    /// Tracker slots of the sampled objects reached.
    seen_slots: Vec<u32>,
    holders: IntMap<u32, (u32, u32)>,
    /// Whether the object being visited is memcity's.
    current_memcity: bool,
    /// Per class, memcity's objects and its arrays' bytes.
    memcity_objects: Vec<u64>,
    memcity_array_bytes: Vec<u64>,
}

impl<'a> State<'a> {
    fn new(facts: ClassFacts<'a>, class_count: usize, epoch: u64, deadline: Instant) -> Self {
        let facts_threads = facts.threads.min(tags::MAX_OWNER);
        State {
            facts,
            epoch,
            deadline,
            calls: 0,
            aborted: false,
            panicked: false,
            objects: vec![0; class_count],
            array_bytes: vec![0; class_count],
            instance_size: vec![0; class_count],
            sampled: IntMap::default(),
            current: None,
            current_mirror: None,
            slots: Vec::with_capacity(16),
            slot_owner: 0,
            current_owned: None,
            current_array: false,
            elements_owned: 0,
            fields: IntMap::default(),
            roots: (1..=facts_threads)
                .map(|thread| Root {
                    thread,
                    ..Root::of(RootKind::Thread)
                })
                .collect(),
            start_depths: vec![0; facts_threads as usize],
            root_ids: HashMap::default(),
            owned: IntMap::default(),
            unowned_roots: 0,
            visited: 0,
            seen_slots: Vec::new(),
            holders: IntMap::default(),
            current_memcity: false,
            memcity_objects: vec![0; class_count],
            memcity_array_bytes: vec![0; class_count],
        }
    }

    #[inline]
    fn class(&mut self, tag: jlong) -> u32 {
        let id = tags::class_id(tag);
        if (id as usize) < self.objects.len() {
            id
        } else if id != 0 && id < self.facts.next_class.load(Ordering::Acquire) {
            // Tagged by a sampling thread after the class table's refresh: one of ours.
            self.grow(id);
            id
        } else {
            0
        }
    }

    fn grow(&mut self, id: u32) {
        let len = id as usize + 1;
        if self.objects.len() < len {
            self.objects.resize(len, 0);
            self.array_bytes.resize(len, 0);
            self.instance_size.resize(len, 0);
            self.memcity_objects.resize(len, 0);
            self.memcity_array_bytes.resize(len, 0);
        }
    }

    /// Gives an untagged class mirror (the referee of a CLASS reference) a provisional id. The VM
    /// stores the tag after the callback, so later objects of the class arrive with it.
    fn tag_new_class(&mut self, mirror_tag: *mut jlong) -> u32 {
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's (the mirror's) tag.
        let existing = unsafe { *mirror_tag };
        if existing != 0 {
            return self.class(existing);
        }
        let id = self.facts.next_class.fetch_add(1, Ordering::AcqRel);
        self.grow(id);
        // SAFETY: as above.
        unsafe { *mirror_tag = tags::class_tag(id) };
        id
    }

    /// Ends the current visit: one referrer for each slot, and for each distinct target class
    /// (the first slot to it carries that, see `SlotCount::first_referrers`).
    fn flush_visit(&mut self) {
        if self.current.take().is_some() {
            let owner = self.slot_owner;
            for &(slot, to, count, length, first) in &self.slots {
                let entry = self.fields.entry((owner, slot, to)).or_default();
                entry.add(count, length);
                entry.first_referrers += u64::from(first);
                if let Some((root, depth)) = self.current_owned {
                    // Levels count from the root's own object, whatever depth it started at.
                    let start = self
                        .start_depths
                        .get(root as usize - 1)
                        .copied()
                        .unwrap_or(0);
                    let level = depth.saturating_sub(start) + 1;
                    self.owned
                        .entry((root, level, owner, slot, to))
                        .or_default()
                        .add(count, length);
                }
            }
        }
        self.slots.clear();
        self.current_mirror = None;
        self.current_owned = None;
        self.current_array = false;
        self.current_memcity = false;
        self.elements_owned = 0;
    }

    /// Counts one reference of the current visit to class `to` through `slot`, and makes the
    /// referee owned one level below the visit's object when that is owned.
    #[inline]
    fn add_target(&mut self, slot: u32, to: u32, length: jint, tag_ptr: *mut jlong) {
        let length = length.max(0) as u64;
        // Objects have few slots, so a linear scan beats hashing. Each field is reported once
        // per visit; elements repeat and merge by class. The first slot to a class counts the
        // object once as that class's referrer.
        let mut first = true;
        let mut merged = false;
        for s in self.slots.iter_mut() {
            if s.1 == to {
                first = false;
                if slot == ELEMENTS && s.0 == ELEMENTS {
                    s.2 += 1;
                    s.3 = s.3.max(length);
                    merged = true;
                    break;
                }
            }
        }
        if !merged {
            self.slots.push((slot, to, 1, length, first));
        }
        self.note_holder(slot, tag_ptr);
        if let Some((root, depth)) = self.current_owned {
            // An owned array's first elements are owned too (a thread's `ThreadLocalMap`
            // entries), not all of them: a big array's are the content, and there may be
            // millions.
            if depth < tags::MAX_OWNED_DEPTH
                && (!self.current_array || self.elements_owned < OWNED_ELEMENTS)
            {
                self.elements_owned += u32::from(self.current_array);
                self.own(tag_ptr, to, length, root, depth + 1);
            }
        }
    }

    /// Notes the current object (or class, for a static) as holding the referee through `slot`
    /// when the referee is a sample.
    #[inline]
    fn note_holder(&mut self, slot: u32, tag_ptr: *mut jlong) {
        if self.facts.holders && !tag_ptr.is_null() {
            // SAFETY: JVMTI passes a valid pointer to the referee's tag.
            if let Some(sample) = tags::sample_slot(unsafe { *tag_ptr }) {
                self.holders.insert(sample, (self.slot_owner, slot));
            }
        }
    }

    /// Tags the referee as owned by `root` at `depth`, unless it is owned already in this walk,
    /// a class, or a primitive array (which holds nothing).
    #[inline]
    fn own(&mut self, tag_ptr: *mut jlong, class: u32, length: u64, root: u32, depth: u8) {
        if tag_ptr.is_null() {
            return;
        }
        let is_array = self.facts.object_array.get(class as usize) == Some(&true);
        if length > 0 && !is_array {
            return;
        }
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's tag; the VM stores
        // the new tag after the callback returns.
        let tag = unsafe { *tag_ptr };
        // memcity's objects stay memcity's: a root of the JDK's static fields owns only its
        // object, and JFR's are under such roots.
        if tag & tags::CLASS_BIT != 0
            || tags::owner(tag, self.epoch).is_some()
            || tags::is_memcity(tag, self.epoch)
        {
            return;
        }
        // SAFETY: as above.
        unsafe { *tag_ptr = tags::with_owner(tag, root, depth, self.epoch) };
    }

    /// Counts a root reference and owns its object (see `Root::start_depth`).
    fn root(
        &mut self,
        kind: RootKind,
        frame: &FrameRef,
        class_tag: jlong,
        length: jint,
        tag_ptr: *mut jlong,
    ) {
        let mut root = Root::of(kind);
        match kind {
            RootKind::Thread if !tag_ptr.is_null() => {
                // SAFETY: JVMTI passes a valid pointer to the referee's (the thread's) tag.
                let tag = unsafe { *tag_ptr };
                if let Some((thread, _)) = tags::owner(tag, self.epoch) {
                    if thread <= self.facts.threads {
                        root.thread = thread;
                    }
                }
            }
            RootKind::StackLocal | RootKind::JniLocal => {
                root.thread = tags::owner(frame.thread_tag, self.epoch).map_or(0, |(t, _)| t);
                if root.thread > self.facts.threads {
                    root.thread = 0; // a thread started since the worker tagged them
                }
                root.method = frame.method;
                root.depth = frame.depth;
                root.location = if kind == RootKind::StackLocal {
                    frame.location
                } else {
                    0
                };
            }
            _ => {}
        }
        let class = self.class(class_tag);
        self.count_root(root, class, length, tag_ptr, true);
    }

    /// The owner number of `root`, numbering it if new (`None` once numbers run out).
    fn root_id(&mut self, root: Root) -> Option<u32> {
        if root.kind == RootKind::Thread && root.thread != 0 {
            return Some(root.thread);
        }
        if let Some(&id) = self.root_ids.get(&root) {
            return Some(id);
        }
        if self.roots.len() as u32 >= tags::MAX_OWNER {
            self.unowned_roots += 1;
            return None;
        }
        let application = self.facts.application.get(root.class as usize) == Some(&true);
        self.start_depths.push(
            root.start_depth(application)
                .unwrap_or(tags::MAX_OWNED_DEPTH),
        );
        self.roots.push(root);
        let id = self.roots.len() as u32;
        self.root_ids.insert(root, id);
        Some(id)
    }

    fn count_root(&mut self, root: Root, class: u32, length: jint, tag_ptr: *mut jlong, own: bool) {
        let Some(id) = self.root_id(root) else {
            return;
        };
        let application = self.facts.application.get(root.class as usize) == Some(&true);
        let length = length.max(0) as u64;
        self.owned
            .entry((id, 0, 0, 0, class))
            .or_default()
            .add(1, length);
        if let (true, Some(depth)) = (own, root.start_depth(application)) {
            self.own(tag_ptr, class, length, id, depth);
        }
    }

    /// Learns sizes from a report of an object as a referee (or root). `from_memcity`: the
    /// reference is from one of memcity's objects, which makes the referee memcity's unless
    /// this walk counted or marked it already, or it is the application's whoever refers to it.
    #[inline]
    fn referee(
        &mut self,
        class_tag: jlong,
        size: jlong,
        length: jint,
        tag_ptr: *mut jlong,
        from_memcity: bool,
    ) {
        let class = self.class(class_tag);
        let size = size.max(0) as u64;
        let object_array = self.facts.object_array.get(class as usize) == Some(&true);
        if length < 0 && class != self.facts.class_class {
            self.instance_size[class as usize] = size;
        }
        if tag_ptr.is_null() || !(object_array || from_memcity) {
            return;
        }
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's tag.
        let tag = unsafe { *tag_ptr };
        // Not seen in this walk: an object array's bytes are not counted yet, and no owner or
        // mark of this walk is in the tag.
        let first = tags::epoch(tag) != self.epoch && tag & tags::CLASS_BIT == 0;
        let memcity = from_memcity
            && first
            && class != self.facts.class_class
            && self.facts.shared.get(class as usize) != Some(&true);
        if object_array && first {
            self.array_bytes[class as usize] += size;
            if memcity {
                self.memcity_array_bytes[class as usize] += size;
            }
        }
        if memcity {
            // SAFETY: as above; the VM stores the new tag after the callback returns.
            unsafe { *tag_ptr = tags::with_memcity(tag, self.epoch) };
        } else if object_array && first {
            // SAFETY: as above. An owner from an older walk goes: owner numbers are per walk.
            unsafe { *tag_ptr = tags::with_epoch(tags::without_owner(tag), self.epoch) };
        }
    }

    #[allow(clippy::too_many_arguments)] // mirrors the JVMTI callback signature
    fn on_reference(
        &mut self,
        kind: sys::jvmtiHeapReferenceKind,
        field_index: jint,
        frame: &FrameRef,
        class_tag: jlong,
        referrer_class_tag: jlong,
        size: jlong,
        tag_ptr: *mut jlong,
        referrer_tag_ptr: *mut jlong,
        length: jint,
    ) -> jint {
        self.calls += 1;
        if self.calls & 0xfff == 0 && Instant::now() > self.deadline {
            self.aborted = true;
            return sys::JVMTI_VISIT_ABORT as jint;
        }
        match kind {
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_CLASS => {
                // A new visit starts: `referrer` is one more live object.
                self.flush_visit();
                let mut class = self.class(referrer_class_tag);
                if class == 0 && !tag_ptr.is_null() {
                    class = self.tag_new_class(tag_ptr);
                }
                self.objects[class as usize] += 1;
                self.visited += 1;
                self.current = Some(class);
                self.slot_owner = class;
                self.current_array = self.facts.object_array.get(class as usize) == Some(&true);
                self.current_memcity = self.facts.memcity.get(class as usize) == Some(&true);
                if !referrer_tag_ptr.is_null() {
                    // SAFETY: JVMTI passes a valid pointer to the referrer's tag.
                    let tag = unsafe { *referrer_tag_ptr };
                    self.current_owned = tags::owner(tag, self.epoch);
                    self.current_memcity |= tags::is_memcity(tag, self.epoch);
                    if let (Some(slot), Some(tracker)) =
                        (tags::sample_slot(tag), self.facts.tracker)
                    {
                        if let Some(sample) = tracker.get(slot) {
                            self.seen_slots.push(slot);
                            if sample.class != class {
                                // Sampled before its class had an id, or the sampler and the
                                // walk tagged the class at once: the walk's is the one in use.
                                tracker.set_class(slot, class);
                            }
                            let entry = self.sampled.entry((class, sample.key())).or_default();
                            entry.objects += 1;
                            entry.weight += sample.weight;
                            entry.variance += sample.weight * (sample.weight - 1.0);
                        }
                    }
                }
                if self.current_memcity {
                    self.memcity_objects[class as usize] += 1;
                }
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD
                if field_index == REFERENT_FIELD
                    && self.current.is_some_and(|c| {
                        self.facts.weak_reference.get(c as usize) == Some(&true)
                    }) =>
            {
                // A weak or phantom referent: what only this keeps is garbage the next GC
                // clears, so neither count the edge nor follow it. (The object is still
                // counted if anything else keeps it alive.)
                return 0;
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD => {
                self.referee(class_tag, size, length, tag_ptr, self.current_memcity);
                let to = self.class(class_tag);
                self.add_target(field_index.max(0) as u32 & !STATIC, to, length, tag_ptr);
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT => {
                self.referee(class_tag, size, length, tag_ptr, self.current_memcity);
                let to = self.class(class_tag);
                self.add_target(ELEMENTS, to, length, tag_ptr);
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STATIC_FIELD => {
                let mirror = if referrer_tag_ptr.is_null() {
                    0
                } else {
                    // SAFETY: as above.
                    unsafe { *referrer_tag_ptr }
                };
                // Static fields are reported from the class mirror's visit, which has no CLASS
                // reference to start it; a different mirror tag starts a new visit instead.
                if self.current_mirror != Some(mirror) {
                    self.flush_visit();
                    self.current = Some(self.class(referrer_class_tag));
                    self.current_mirror = Some(mirror);
                    // Field-level edges name the declaring class, not `java.lang.Class`.
                    self.slot_owner = self.class(mirror);
                }
                let from_memcity = self.facts.memcity.get(self.slot_owner as usize) == Some(&true);
                self.referee(class_tag, size, length, tag_ptr, from_memcity);
                let to = self.class(class_tag);
                let slot = STATIC | (field_index.max(0) as u32 & !STATIC);
                // No owner through a static (`add_target` gets no tag), but a sample held
                // there has its holder: the declaring class.
                self.add_target(slot, to, length, std::ptr::null_mut());
                self.note_holder(slot, tag_ptr);
                let root = Root {
                    class: self.slot_owner,
                    slot,
                    ..Root::of(RootKind::StaticField)
                };
                self.count_root(root, to, length, tag_ptr, true);
            }
            _ => {
                // Roots count per root; system classes (their statics are counted as static
                // fields) and class-metadata edges give sizes only.
                self.referee(class_tag, size, length, tag_ptr, false);
                if let Some(root) = root_kind(kind) {
                    self.root(root, frame, class_tag, length, tag_ptr);
                }
            }
        }
        sys::JVMTI_VISIT_OBJECTS as jint
    }
}

unsafe extern "C" fn heap_reference(
    kind: sys::jvmtiHeapReferenceKind,
    info: *const sys::jvmtiHeapReferenceInfo,
    class_tag: jlong,
    referrer_class_tag: jlong,
    size: jlong,
    tag_ptr: *mut jlong,
    referrer_tag_ptr: *mut jlong,
    length: jint,
    user_data: *mut c_void,
) -> jint {
    // SAFETY: `user_data` is the `State` that `walk` passed to FollowReferences; the VM calls us
    // from one thread at a time.
    let state = unsafe { &mut *user_data.cast::<State>() };
    let mut frame = NO_FRAME;
    let field_index = match kind {
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD
        | sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STATIC_FIELD
            if !info.is_null() =>
        {
            // SAFETY: for field references JVMTI passes field info, the `field` member.
            unsafe { (*info).field.as_ref().index }
        }
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STACK_LOCAL if !info.is_null() => {
            // SAFETY: for stack locals JVMTI passes the `stack_local` member.
            let local = unsafe { (*info).stack_local.as_ref() };
            frame = FrameRef {
                thread_tag: local.thread_tag,
                depth: local.depth,
                method: local.method as usize,
                location: local.location,
            };
            -1
        }
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_JNI_LOCAL if !info.is_null() => {
            // SAFETY: for JNI locals JVMTI passes the `jni_local` member.
            let local = unsafe { (*info).jni_local.as_ref() };
            frame = FrameRef {
                thread_tag: local.thread_tag,
                depth: local.depth,
                method: local.method as usize,
                location: 0,
            };
            -1
        }
        _ => -1,
    };
    match catch_unwind(AssertUnwindSafe(|| {
        state.on_reference(
            kind,
            field_index,
            &frame,
            class_tag,
            referrer_class_tag,
            size,
            tag_ptr,
            referrer_tag_ptr,
            length,
        )
    })) {
        Ok(flags) => flags,
        Err(_) => {
            state.panicked = true;
            sys::JVMTI_VISIT_ABORT as jint
        }
    }
}

unsafe extern "C" fn array_primitive_value(
    class_tag: jlong,
    size: jlong,
    tag_ptr: *mut jlong,
    _count: jint,
    _element_type: sys::jvmtiPrimitiveType,
    _elements: *const c_void,
    user_data: *mut c_void,
) -> jint {
    // SAFETY: as in `heap_reference`.
    let state = unsafe { &mut *user_data.cast::<State>() };
    // Plain arithmetic that cannot panic: no unwind guard needed.
    let class = state.class(class_tag) as usize;
    state.array_bytes[class] += size.max(0) as u64;
    // SAFETY: JVMTI passes a valid pointer to the array's tag.
    if !tag_ptr.is_null() && tags::is_memcity(unsafe { *tag_ptr }, state.epoch) {
        state.memcity_array_bytes[class] += size.max(0) as u64;
    }
    0
}

/// Class-level counts from field-level ones (one map update per slot in the walk, not two).
/// Static fields count as references from `java.lang.Class` here, as the class mirrors hold
/// them; `FieldEdge` names the declaring class.
fn references_by_class(
    fields: &IntMap<(u32, u32, u32), SlotCount>,
    class_class: u32,
) -> IntMap<(u32, u32), RefCount> {
    let mut out: IntMap<(u32, u32), RefCount> = IntMap::default();
    for (&(from, slot, to), c) in fields {
        let from = if slot != ELEMENTS && slot & STATIC != 0 {
            class_class
        } else {
            from
        };
        let entry = out.entry((from, to)).or_default();
        entry.referrers += c.first_referrers;
        entry.references += c.references;
    }
    out
}

#[derive(Debug)]
pub enum WalkError {
    /// Ran past `deadline`; the pause so far is booked against the budget.
    Aborted {
        pause: Duration,
        /// Objects visited before the abort: with `pause`, a lower bound of the walk's rate.
        visited: u64,
    },
    Jvmti(jvmti::JvmtiError),
    /// A bug in a callback; the walk stopped and the agent should stop too.
    Panicked,
}

/// Walks the live heap. `class_count` is the number of class ids (including 0).
pub fn walk(
    jvmti: &Jvmti,
    facts: ClassFacts<'_>,
    class_count: usize,
    epoch: u64,
    abort_after: Duration,
) -> Result<WalkResult, WalkError> {
    let start = Instant::now();
    let first_new_class = facts.next_class.load(Ordering::Acquire);
    let mut state = State::new(facts, class_count, epoch, start + abort_after);
    // SAFETY: the struct is all optional function pointers, for which zero means `None`.
    let mut callbacks: sys::jvmtiHeapCallbacks = unsafe { std::mem::zeroed() };
    callbacks.heap_reference_callback = Some(heap_reference);
    callbacks.array_primitive_value_callback = Some(array_primitive_value);
    // SAFETY: the callbacks take `State` as user data, which outlives the call.
    let result =
        unsafe { jvmti.follow_references(&callbacks, (&mut state as *mut State).cast::<c_void>()) };
    let pause = start.elapsed();
    result.map_err(WalkError::Jvmti)?;
    if state.panicked {
        return Err(WalkError::Panicked);
    }
    if state.aborted {
        return Err(WalkError::Aborted {
            pause,
            visited: state.visited,
        });
    }
    state.flush_visit();
    let bytes = (0..state.objects.len())
        .map(|c| state.objects[c] * state.instance_size[c] + state.array_bytes[c])
        .collect();
    let memcity = (0..state.objects.len())
        .filter(|&c| state.memcity_objects[c] > 0)
        .map(|c| {
            let objects = state.memcity_objects[c];
            let bytes = objects * state.instance_size[c] + state.memcity_array_bytes[c];
            (c as u32, objects, bytes)
        })
        .collect();
    Ok(WalkResult {
        objects: state.objects,
        bytes,
        sampled: state.sampled,
        references: references_by_class(&state.fields, state.facts.class_class),
        fields: state.fields,
        roots: state.roots,
        owned: state.owned,
        unowned_roots: state.unowned_roots,
        visited: state.visited,
        pause,
        first_new_class,
        variance: Vec::new(),
        unconfirmed: Vec::new(),
        pending: Vec::new(),
        last_gc: 0,
        seen_slots: state.seen_slots,
        holders: state.holders,
        memcity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLASS: sys::jvmtiHeapReferenceKind =
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_CLASS;
    const FIELD: sys::jvmtiHeapReferenceKind =
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD;
    const ELEMENT: sys::jvmtiHeapReferenceKind =
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT;
    const STATIC_REF: sys::jvmtiHeapReferenceKind =
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STATIC_FIELD;

    fn state(object_array: &[bool]) -> State<'_> {
        state_with(object_array, &[], &[])
    }

    fn state_with<'a>(
        object_array: &'a [bool],
        memcity: &'a [bool],
        shared: &'a [bool],
    ) -> State<'a> {
        let n = object_array.len();
        // Leaked: a test's id source and tracker live as long as its state, which borrows them.
        let next_class: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(n as u32)));
        let tracker: &'static Tracker = Box::leak(Box::new(Tracker::new(16)));
        let facts = ClassFacts {
            object_array,
            class_class: 99,
            weak_reference: &[],
            next_class,
            tracker: Some(tracker),
            holders: true,
            application: &[],
            threads: 0,
            memcity,
            shared,
        };
        State::new(facts, n, 3, Instant::now() + Duration::from_secs(60))
    }

    /// memcity's JFR repository (class 1) holds a map (2) in a static; the map's table (3, an
    /// object array) holds a node (4) and one owned in this walk already, and the map refers
    /// to a thread (6) and a string's bytes (5). The application's own map and table alike.
    /// Everything memcity's object reaches first is memcity's, in objects and bytes, but not
    /// the owned node, the thread, or anything of the application's.
    #[test]
    fn what_memcitys_objects_reach_first_is_counted_as_memcitys() {
        let object_array = [false, false, false, true, false, false, false];
        let memcity = [false, true, false, false, false, false, false];
        let shared = [false, false, false, false, false, false, true];
        let mut s = state_with(&object_array, &memcity, &shared);
        let t = tags::class_tag;
        let (mut map, mut table, mut node, mut thread, mut bytes) = (0i64, 0i64, 0i64, 0i64, 0i64);
        let mut owned = tags::with_owner(0, 5, 1, 3);
        let (mut app_map, mut app_table) = (0i64, 0i64);
        let mut mirror = t(1);
        // `(kind, referee class, referrer class, size, referee tag, referrer tag, length)`, as
        // HotSpot reports them.
        let at = |s: &mut State, kind, to, from, size, tag: &mut i64, referrer: &mut i64, len| {
            s.on_reference(kind, 1, &NO_FRAME, t(to), t(from), size, tag, referrer, len);
        };
        // The repository's static field: the declaring class is memcity's.
        at(&mut s, STATIC_REF, 2, 99, 48, &mut map, &mut mirror, -1);
        // The map's visit: its table, a thread, a byte[].
        at(&mut s, CLASS, 99, 2, 500, &mut 0, &mut map, -1);
        at(&mut s, FIELD, 3, 2, 48, &mut table, &mut map, 2);
        at(&mut s, FIELD, 6, 2, 120, &mut thread, &mut map, -1);
        at(&mut s, FIELD, 5, 2, 24, &mut bytes, &mut map, 8);
        // The table's visit: two nodes, one of them owned in this walk.
        at(&mut s, CLASS, 99, 3, 500, &mut 0, &mut table, -1);
        at(&mut s, ELEMENT, 4, 3, 32, &mut node, &mut table, -1);
        at(&mut s, ELEMENT, 4, 3, 32, &mut owned, &mut table, -1);
        at(&mut s, CLASS, 99, 4, 500, &mut 0, &mut node, -1);
        at(&mut s, CLASS, 99, 4, 500, &mut 0, &mut owned, -1);
        at(&mut s, CLASS, 99, 6, 500, &mut 0, &mut thread, -1);
        // The byte[]'s visit: its size comes through the primitive-array callback.
        at(&mut s, CLASS, 99, 5, 500, &mut 0, &mut bytes, -1);
        let user_data = (&mut s as *mut State).cast::<c_void>();
        // SAFETY: `user_data` is the state, as FollowReferences would pass it.
        unsafe { array_primitive_value(t(5), 24, &mut bytes, 8, 0, std::ptr::null(), user_data) };
        // The application's map and table.
        at(&mut s, CLASS, 99, 2, 500, &mut 0, &mut app_map, -1);
        at(&mut s, FIELD, 3, 2, 80, &mut app_table, &mut app_map, 8);
        at(&mut s, CLASS, 99, 3, 500, &mut 0, &mut app_table, -1);
        s.flush_visit();

        assert_eq!(s.objects, [0, 0, 2, 2, 2, 1, 1]);
        assert_eq!(s.memcity_objects, [0, 0, 1, 1, 1, 1, 0]);
        assert_eq!((s.array_bytes[3], s.memcity_array_bytes[3]), (128, 48));
        assert_eq!((s.array_bytes[5], s.memcity_array_bytes[5]), (24, 24));
        assert!(tags::is_memcity(map, 3) && tags::is_memcity(table, 3));
        assert!(
            !tags::is_memcity(thread, 3),
            "a thread is the application's"
        );
        assert_eq!(tags::owner(owned, 3), Some((5, 1)), "an owner stays");
        assert!(!tags::is_memcity(app_table, 3) && tags::epoch(app_table) == 3);
    }

    /// Replays the callback sequence HotSpot produces for: one Node (class 1) referencing a
    /// Person (2) twice, whose visit references two Strings (3); then a String[] (4, an object
    /// array of 40 bytes) referenced from two places and holding two Strings.
    #[test]
    fn class_references_count_objects_and_group_referrers() {
        let object_array = [false, false, false, false, true];
        let mut s = state(&object_array);
        let t = tags::class_tag;
        let mut tag = 0i64;
        let mut arr_tag = 0i64;
        let tracker = s.facts.tracker.unwrap();
        let slot = tracker.track(1, 5, 1, 10.0, 24, 0, 0, 1).unwrap();
        let mut referrer = tags::sample_tag(slot);
        let p = &mut tag as *mut i64;
        let r = &mut referrer as *mut i64;
        // Visit Node: CLASS, then two fields pointing at the Person.
        s.on_reference(CLASS, 1, &NO_FRAME, t(99), t(1), 500, p, r, -1);
        s.on_reference(FIELD, 1, &NO_FRAME, t(2), t(1), 24, p, r, -1);
        s.on_reference(FIELD, 1, &NO_FRAME, t(2), t(1), 24, p, r, -1);
        // Visit Person: two String fields.
        let mut plain = 0i64;
        let q = &mut plain as *mut i64;
        s.on_reference(CLASS, 1, &NO_FRAME, t(99), t(2), 500, p, q, -1);
        s.on_reference(FIELD, 1, &NO_FRAME, t(3), t(2), 24, p, q, -1);
        s.on_reference(FIELD, 1, &NO_FRAME, t(3), t(2), 24, p, q, -1);
        // The String[] reported twice as a referee: its bytes count once.
        s.on_reference(FIELD, 1, &NO_FRAME, t(4), t(2), 40, &mut arr_tag, q, 6);
        s.on_reference(FIELD, 1, &NO_FRAME, t(4), t(2), 40, &mut arr_tag, q, 6);
        // Visit the array: CLASS, then two elements.
        s.on_reference(CLASS, 1, &NO_FRAME, t(99), t(4), 500, p, q, -1);
        s.on_reference(ELEMENT, 1, &NO_FRAME, t(3), t(4), 24, p, q, -1);
        s.on_reference(ELEMENT, 1, &NO_FRAME, t(3), t(4), 24, p, q, -1);
        s.flush_visit();

        let references = references_by_class(&s.fields, 99);
        assert_eq!(s.objects, [0, 1, 1, 0, 1]);
        assert_eq!(s.instance_size[2], 24);
        assert_eq!(s.array_bytes[4], 40);
        assert_eq!(tags::epoch(arr_tag), 3);
        assert_eq!(
            references[&(1, 2)],
            RefCount {
                referrers: 1,
                references: 2
            }
        );
        assert_eq!(
            references[&(2, 3)],
            RefCount {
                referrers: 1,
                references: 2
            }
        );
        assert_eq!(references[&(2, 4)].references, 2);
        assert_eq!(references[&(4, 3)].referrers, 1);
        let key = tracker.get(slot).unwrap().key();
        let sample = s.sampled[&(1, key)];
        assert_eq!(sample.objects, 1);
        assert!((sample.weight - 10.0).abs() < 0.2);
        assert!((sample.variance - 90.0).abs() < 4.0);
        assert_eq!(
            s.seen_slots,
            [slot],
            "the walk lists the samples it reaches"
        );
        assert_eq!(s.visited, 3);
    }

    /// A sampled object met as a field's referee or an array's element is recorded with what
    /// held it: the referrer's class and the walk's slot in it; plain objects are not.
    #[test]
    fn the_walk_records_what_holds_each_sample() {
        let object_array = [false, false, false, false, true];
        let mut s = state(&object_array);
        let t = tags::class_tag;
        let tracker = s.facts.tracker.unwrap();
        let (a, b) = (
            tracker.track(3, 1, 1, 1.0, 24, 0, 0, 1).unwrap(),
            tracker.track(3, 1, 1, 1.0, 24, 0, 0, 1).unwrap(),
        );
        let (mut a_tag, mut b_tag, mut plain, mut referrer) =
            (tags::sample_tag(a), tags::sample_tag(b), 0i64, 0i64);
        let r = &mut referrer as *mut i64;
        // A Person (2) holds sample a in its field 7 and a plain String.
        s.on_reference(CLASS, 0, &NO_FRAME, t(99), t(2), 500, &mut plain, r, -1);
        s.on_reference(FIELD, 7, &NO_FRAME, t(3), t(2), 24, &mut a_tag, r, -1);
        s.on_reference(FIELD, 8, &NO_FRAME, t(3), t(2), 24, &mut plain, r, -1);
        // A String[] (4) holds sample b.
        s.on_reference(CLASS, 0, &NO_FRAME, t(99), t(4), 500, &mut plain, r, -1);
        s.on_reference(ELEMENT, 0, &NO_FRAME, t(3), t(4), 24, &mut b_tag, r, -1);
        s.flush_visit();
        assert_eq!(s.holders.len(), 2);
        assert_eq!(s.holders[&a], (2, 7));
        assert_eq!(s.holders[&b], (4, ELEMENTS));
    }

    #[test]
    fn classes_loaded_after_the_refresh_get_provisional_ids() {
        let object_array = [false, false];
        let mut s = state(&object_array);
        let mut mirror = 0i64;
        let mut other = 0i64;
        let m = &mut mirror as *mut i64;
        let o = &mut other as *mut i64;
        // The first object of an untagged class tags its mirror with the next id, 2.
        s.on_reference(CLASS, 1, &NO_FRAME, 0, 0, 1, m, o, -1);
        assert_eq!(tags::class_id(mirror), 2);
        // The VM then reports the class with that tag.
        s.on_reference(CLASS, 1, &NO_FRAME, 0, mirror, 1, m, o, -1);
        assert_eq!(s.objects, [0, 0, 2]);
        // A tag beyond every known id (not ours) falls into class 0.
        let mut plain = 5i64;
        s.on_reference(
            CLASS,
            1,
            &NO_FRAME,
            0,
            tags::class_tag(77),
            1,
            &mut plain,
            o,
            -1,
        );
        assert_eq!(s.objects[0], 1);
    }

    #[test]
    fn weak_and_phantom_referents_are_not_followed_but_soft_ones_are() {
        let object_array = [false; 4];
        let weak = [false, true, false, false]; // class 1: a WeakReference subclass
        let mut s = state(&object_array);
        s.facts.weak_reference = &weak;
        let t = tags::class_tag;
        let mut tag = 0i64;
        let p = &mut tag as *mut i64;
        s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(1), 500, p, p, -1);
        // The referent (field 0): not followed, not counted.
        assert_eq!(
            s.on_reference(FIELD, REFERENT_FIELD, &NO_FRAME, t(3), t(1), 24, p, p, -1),
            0
        );
        // Another field (its queue) is an ordinary edge.
        assert_eq!(
            s.on_reference(FIELD, 1, &NO_FRAME, t(2), t(1), 24, p, p, -1),
            sys::JVMTI_VISIT_OBJECTS as jint
        );
        // A soft reference (class 2, not marked) keeps its referent: followed.
        s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(2), 500, p, p, -1);
        assert_eq!(
            s.on_reference(FIELD, REFERENT_FIELD, &NO_FRAME, t(3), t(2), 24, p, p, -1),
            sys::JVMTI_VISIT_OBJECTS as jint
        );
        s.flush_visit();
        let references = references_by_class(&s.fields, 99);
        assert!(!references.contains_key(&(1, 3)));
        assert!(
            !s.fields.keys().any(|&(from, _, to)| from == 1 && to == 3),
            "nor counted per field"
        );
        assert_eq!(references[&(1, 2)].references, 1);
        assert_eq!(references[&(2, 3)].references, 1);
    }

    #[test]
    fn a_walk_past_its_deadline_aborts() {
        let object_array = [false, false];
        let mut s = state(&object_array);
        s.deadline = Instant::now() - Duration::from_millis(1);
        let mut tag = 0i64;
        let p = &mut tag as *mut i64;
        let mut last = 0;
        for _ in 0..0x1000 {
            last = s.on_reference(CLASS, 1, &NO_FRAME, 0, tags::class_tag(1), 1, p, p, -1);
        }
        assert_eq!(last, sys::JVMTI_VISIT_ABORT as jint);
        assert!(s.aborted);
    }

    /// A static field of application class 5 holds a map (class 1), whose table (class 2, an
    /// object array of 16) holds two nodes (class 3): the static is a root, the map is owned at
    /// level 0, the table at 1, the nodes at 2 (their depths in tags start where an application
    /// static's three levels end at `MAX_OWNED_DEPTH`), and each reference is counted per field
    /// too.
    #[test]
    fn statics_own_what_they_hold_and_references_count_per_field() {
        let object_array = [false, false, true, false, false, false];
        let application = [false, false, false, false, false, true];
        let mut s = state(&object_array);
        s.facts.application = &application;
        let t = tags::class_tag;
        let mut mirror = t(5);
        let (mut map, mut table, mut node_a, mut node_b) = (0i64, 0i64, 0i64, 0i64);
        let mut scratch = 0i64;
        let sp = &mut scratch as *mut i64;
        // The mirror's visit reports the static field (index 2) to the map.
        s.on_reference(
            STATIC_REF,
            2,
            &NO_FRAME,
            t(1),
            t(99),
            24,
            &mut map,
            &mut mirror,
            -1,
        );
        let start = tags::MAX_OWNED_DEPTH - 3;
        assert_eq!(tags::owner(map, 3).map(|o| o.1), Some(start));
        // The map's visit: its table field (index 1).
        s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(1), 24, sp, &mut map, -1);
        s.on_reference(
            FIELD,
            1,
            &NO_FRAME,
            t(2),
            t(1),
            80,
            &mut table,
            &mut map,
            16,
        );
        assert_eq!(tags::owner(table, 3).map(|o| o.1), Some(start + 1));
        // The table's visit: two elements.
        s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(2), 80, sp, &mut table, -1);
        s.on_reference(
            ELEMENT,
            0,
            &NO_FRAME,
            t(3),
            t(2),
            32,
            &mut node_a,
            &mut table,
            -1,
        );
        s.on_reference(
            ELEMENT,
            1,
            &NO_FRAME,
            t(3),
            t(2),
            32,
            &mut node_b,
            &mut table,
            -1,
        );
        s.flush_visit();
        assert_eq!(
            tags::owner(node_b, 3).map(|o| o.1),
            Some(start + 2),
            "the table's first elements"
        );

        let root = tags::owner(map, 3).unwrap().0;
        let r = s.roots[root as usize - 1];
        assert_eq!(
            (r.kind, r.class, r.slot),
            (RootKind::StaticField, 5, STATIC | 2)
        );
        assert_eq!(s.owned[&(root, 0, 0, 0, 1)].references, 1);
        assert_eq!(s.owned[&(root, 1, 1, 1, 2)].max_length, 16);
        let nodes = s.owned[&(root, 2, 2, ELEMENTS, 3)];
        assert_eq!((nodes.references, nodes.max_fanout), (2, 2));
        assert_eq!(s.fields[&(5, STATIC | 2, 1)].references, 1);
        assert_eq!(s.fields[&(1, 1, 2)].max_length, 16);
        assert_eq!(s.fields[&(2, ELEMENTS, 3)].referrers, 1);
        // In the next walk (epoch 4) these owners mean nothing.
        assert_eq!(tags::owner(map, 4), None);
    }

    /// A thread (class 1, owner 1 as the worker tags it) holds a thread-local map (2), its table
    /// (3, an object array), an entry (4), the entry's value, a list (5), and the list's array
    /// (6, 1000 long) of records (7): the thread owns down to the list's array, so the array's
    /// length is counted for the thread at level 5, and the records are not owned.
    #[test]
    fn a_thread_owns_its_thread_locals_values_and_their_arrays() {
        let object_array = [false, false, false, true, false, false, true, false];
        let mut s = state(&object_array);
        s.facts.threads = 1;
        s.start_depths = vec![0];
        let t = tags::class_tag;
        let mut scratch = 0i64;
        let sp = &mut scratch as *mut i64;
        let mut objects = [0i64; 8];
        objects[1] = tags::with_owner(0, 1, 0, 3);
        let thread_ref = sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_THREAD;
        s.on_reference(
            thread_ref,
            -1,
            &NO_FRAME,
            t(1),
            0,
            120,
            &mut objects[1],
            std::ptr::null_mut(),
            -1,
        );
        // Each object's visit reports its one reference to the next class.
        for class in 1..7usize {
            let (head, tail) = objects.split_at_mut(class + 1);
            let (referrer, referee) = (&mut head[class], &mut tail[0]);
            s.on_reference(
                CLASS,
                -1,
                &NO_FRAME,
                t(99),
                t(class as u32),
                24,
                sp,
                referrer,
                -1,
            );
            let (kind, length) = match class + 1 {
                4 | 7 => (ELEMENT, -1),
                6 => (FIELD, 1000),
                3 => (FIELD, 16),
                _ => (FIELD, -1),
            };
            s.on_reference(
                kind,
                0,
                &NO_FRAME,
                t(class as u32 + 1),
                t(class as u32),
                24,
                referee,
                referrer,
                length,
            );
        }
        s.flush_visit();
        let depths: Vec<Option<u8>> = objects[1..]
            .iter()
            .map(|&tag| tags::owner(tag, 3).map(|o| o.1))
            .collect();
        assert_eq!(
            depths,
            [Some(0), Some(1), Some(2), Some(3), Some(4), Some(5), None]
        );
        assert_eq!(s.owned[&(1, 5, 5, 0, 6)].max_length, 1000);
        assert_eq!(s.owned[&(1, 6, 6, ELEMENTS, 7)].references, 1);
    }
}
