//! What a walk counts: per class, per reference and field, per root and owner, and the samples
//! it reached; the pending part of an estimate that the same result carries.

use std::time::Duration;

use jni::sys::{jint, jlong};

use crate::intmap::IntMap;
use crate::jvmti::tags;
use crate::jvmti::RootKind;

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
    pub(super) fn add(&mut self, references: u64, length: u64) {
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
    pub(super) fn of(kind: RootKind) -> Self {
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
    pub(super) fn start_depth(&self, application_class: bool) -> Option<u8> {
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

pub(super) const NO_FRAME: FrameRef = FrameRef {
    thread_tag: 0,
    depth: 0,
    method: 0,
    location: 0,
};

/// Elements of an owned array that are owned in turn.
pub(super) const OWNED_ELEMENTS: u32 = 64;

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
