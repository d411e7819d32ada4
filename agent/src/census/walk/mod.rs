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

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use jni::sys::{jint, jlong};

use crate::intmap::IntMap;
use crate::jvmti::sys;
use crate::jvmti::tags;
use crate::jvmti::{self, Jvmti};
use crate::sampling::tracker::Tracker;

mod result;
mod state;

pub use result::*;
use state::State;

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
mod tests;
