//! Paths from GC roots to sampled live objects, object by object, found while the application
//! runs: the evidence that names a leak's holder.
//!
//! Why: the walk's per-type edges (`FieldEdge`) make every `LinkedList` one node, so a chain
//! climbed over them can pass from the application's list into JFR's, and the holder it names is
//! a type, not an instance. MAT names holders from sampled objects' own paths to GC roots,
//! merged into a tree (`FindLeaksQuery`); this module finds such paths on a live JVM.
//!
//! How, with one short stop:
//! 1. **Roots** (`Search::start`). One `FollowReferences` whose callback follows nothing: HotSpot
//!    reports every root (threads, stack and JNI locals, JNI globals, monitors) before it visits
//!    any object, so the stop is the roots' enumeration (and, before JDK 19, the restore of
//!    mark words). Each root's object gets a marker tag for the call, is fetched back with
//!    `GetObjectsWithTags`, held by a global reference, and its old tag restored. Static fields
//!    need no stop: they are read through JNI from the loaded, initialized classes.
//! 2. **Search** (`Search::run`), in slices on the worker thread: depth-first through instance
//!    fields and array elements with JNI, root after root, in the order of `RootOrder` (an object
//!    reachable from several roots is credited to the first). It never follows
//!    `Reference.referent` (not a holder), never enters a `Class` (statics are roots of their
//!    own), and enters a `Thread` only as a thread root (every live thread is one). An object of
//!    the frame's own class (the next link of a list) is entered once the frame is done, in its
//!    place, so a list of a million nodes linked both ways is one frame deep. Within a root, an
//!    object met again by a shorter path is entered again (`Visit`), so each target ends on its
//!    shortest path from the first root that holds it, as MAT and LeakCanary report paths.
//! 3. **Targets**: the live allocation samples (at most `MAX_TARGETS`, chosen evenly), each
//!    looked for by the identity hash taken when it was sampled and confirmed with
//!    `IsSameObject` on the tracker's weak reference, which compares without keeping alive.
//!    The search never resolves a target's reference: on a concurrent collector (ZGC,
//!    Shenandoah, G1's concurrent cycle) a weak reference resolved while the marking runs keeps
//!    its object alive through that cycle, with everything it references, so that each search
//!    kept the application's dropped structures one cycle more (on JDK 17's ZGC a service
//!    dropping large maps stalled for them). The worker keeps the tracker's references
//!    undeleted while a search holds them (`Worker::delete_released`). When a target is met,
//!    the stack of frames is its path; paths are merged into a tree of objects as they are
//!    found (`Merge`), so memory is the tree's, not the paths'.
//!
//! Objects are told apart without tags (a tag costs the VM tens of bytes per object): by a key
//! of their identity hash, class and the identity hash of what their first reference field
//! holds (or an array's length). Two objects sharing a key would make the second look visited;
//! with 31-bit hashes alone a million-node list would be cut a dozen times; the key's 50 bits
//! kept (`Visit`) make it about one search in 50 that fills `MAX_VISITED`. The search installs identity hashes in the objects it passes, as
//! `System.identityHashCode` would (with compact object headers, JDK 24+, such an object grows
//! by a word when the GC next moves it).
//!
//! Objects whose reference fields can hold only leaves (primitive arrays, `String`, boxes: a
//! catalog's product with its name and prices) cannot lead back to anything, so the search
//! enters them without keeping a key; entering one twice costs only its few fields (and counts
//! it twice in `Node::reached`).
//!
//! Bounded: at most `MAX_VISITED` keys (the search's memory, 8-9 bytes each),
//! `MAX_DEPTH` frames; the worker runs slices of `SLICE` with rests between them (two thirds of
//! a core while a search runs, and the worker's other duties go between slices), and searches
//! rest between each other so that on average they keep to the `paths=` share of a core
//! (`Schedule`). What a search could not finish is said in `Found::incomplete`.

pub(crate) mod distinct;
mod found;
mod schedule;
mod visit;
pub(crate) mod vthreads;

use found::Merge;
pub use found::*;
pub use schedule::*;
use visit::{visit_key, Met, Visit};

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::ptr;
use std::time::{Duration, Instant};

use jni::sys::{jclass, jfieldID, jint, jlong, jobject, jsize, JNIEnv};

use crate::census::fields::holds_only_leaves;
use crate::intmap::{IntHasher, IntMap};
use crate::jvmti::sys;
use crate::jvmti::{Jvmti, LocalFrame, RootKind};
use crate::sampling::{is_memcity_class, is_memcity_thread};
use distinct::Distinct;

/// Live samples looked for at most (MAT's leak suspects sample up to 10,000 instances).
pub const MAX_TARGETS: usize = 10_000;
/// Objects the search keeps keys for; past it the search stops and says so.
pub const MAX_VISITED: usize = 7 << 20;
/// Frames of the depth-first search (fields of an object's own type are tail calls and do not
/// count); deeper objects are not entered.
pub const MAX_DEPTH: usize = 1 << 16;
/// The roots' enumeration is abandoned (the search then starts from statics and threads only)
/// past this.
const ROOTS_LIMIT: Duration = Duration::from_millis(500);

const NONE: u32 = u32::MAX;
/// Sampled classes counted per root node at most, and the count of one that gives a root with
/// no sampled path a node of its own.
const MAX_REACHED_TYPES: usize = 24;
const REACHED_FLOOR: u64 = 1000;
/// Classes `class_info` remembers by reference.
const RECENT_CLASSES: usize = 4;
/// Field id of array elements.
pub const ELEMENTS_FIELD: u32 = 0;
const ACC_STATIC: jint = 0x0008;

/// Tags of the roots' enumeration, in a JVMTI environment of its own (disposed right after, with
/// its tags): an object's index + 1, or a thread's with `THREAD_MARK`.
const THREAD_MARK: jlong = 1 << 40;
/// The array of virtual threads whose frames the enumeration walks into (`vthreads`).
const VIRTUAL_ARRAY: jlong = 1 << 41;
/// Added to a virtual thread's marker when the enumeration finds it mounted: its frames are
/// then on its carrier's stack, reported as roots already, and its stack chunk is not walked.
const MOUNTED: jlong = 1 << 42;

fn object_marker(index: usize) -> jlong {
    index as jlong + 1
}

fn thread_marker(index: usize) -> jlong {
    THREAD_MARK | index as jlong
}

/// `(thread?, index)` of a marker tag; `None` for an untagged object.
fn marker_index(tag: jlong) -> Option<(bool, usize)> {
    if tag == VIRTUAL_ARRAY {
        None
    } else if tag & THREAD_MARK != 0 {
        Some((true, (tag & (THREAD_MARK - 1)) as usize))
    } else if tag > 0 {
        Some((false, tag as usize - 1))
    } else {
        None
    }
}

/// What the search knows of a class.
struct ClassInfo {
    kind: Kind,
    /// Reference instance fields, fields of the class's own type last: `(id, name index)`.
    fields: Vec<(jfieldID, u32)>,
    /// Every reference field can hold only leaves (see [`crate::census::fields::holds_only_leaves`]): an instance
    /// cannot lead back to anything, so the search enters it without keeping its key.
    terminal: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Instance,
    ObjectArray,
    /// Primitive arrays and instances without reference fields: nothing to follow.
    Leaf,
    /// `java.lang.Class`: its statics are roots of their own.
    Mirror,
    Thread,
}

/// One object on the search's stack (a global reference), or the latest of a chain of objects of
/// one class, each reached from the one before (then `run` counts them).
struct Frame {
    /// A local reference while a slice runs, a weak global one between slices: a global one
    /// would keep what the application dropped meanwhile alive, and a walk would count it.
    object: jobject,
    global: bool,
    /// The next link of the chain, met before the frame's last field: entered (as a tail call)
    /// once the frame is done, so that a list linked both ways (`next`, `prev`) stays one frame.
    pending: jobject,
    pending_global: bool,
    pending_length: u32,
    class: u32,
    cursor: u32,
    length: u32,
    /// Merged node, `NONE` until a target below it is found.
    node: u32,
    run: u64,
    /// Of the chain's first object: its identity hash and the field it was reached through.
    identity: u32,
    field: u32,
    /// Same class as the frame below: part of its chain (and node).
    chained: bool,
    /// For an array reached through a field: that field of the frame below, and its name. A
    /// growing map replaces its table while the search reads it (`HashMap.resize` empties the
    /// old one as it goes), so once the array is done the field is read again, and a new
    /// array there is searched too.
    via: jfieldID,
    via_name: u32,
}

/// A live sample looked for.
struct Target {
    slot: u32,
    born: u64,
    /// What holds it on the path it was found by, `(class, field)`, and when it was found;
    /// `None` for a root.
    holder: Option<(u32, u32, Instant)>,
    /// The tracker's weak reference: never resolved, never deleted by the search.
    weak: jobject,
    class: u32,
    weight: f64,
    born_s: u32,
    recent: bool,
    settled: bool,
    found: bool,
    /// Where it was found: the root, the frames above it, and the merged node it is counted
    /// at (moved if the same root reaches it again by a shorter path).
    root: u32,
    depth: u32,
    node: u32,
}

/// What the worker lends a search: the JVM, and class ids.
pub struct Env {
    pub jvmti: Jvmti,
    pub jni: *mut JNIEnv,
    /// The id of a class (tagging it if it is new).
    pub class_id: Box<dyn FnMut(jclass) -> Option<u32>>,
}

/// A root left gone dry, with its stack (weak global references) to resume from.
struct Deferred {
    root: u32,
    stack: Vec<Frame>,
    revisit_from: usize,
    /// Objects met in the root so far, and up to its last find there.
    met: u64,
    met_at_find: u64,
}

/// Where a root's object comes from.
enum RootObject {
    /// Held by a weak global reference since the roots' enumeration (a local that went out of
    /// scope meanwhile is not kept alive for a walk to count).
    Held(jobject),
    /// A static field, read when its turn comes: the class (a global reference) and field.
    Static(jobject, jfieldID),
}

pub struct Search {
    roots: Vec<(PathRoot, RootObject)>,
    next_root: usize,
    threads: Vec<String>,
    first_virtual: usize,
    fields: Vec<String>,
    field_ids: HashMap<String, u32>,
    classes: Vec<Option<ClassInfo>>,
    targets: Vec<Target>,
    by_hash: IntMap<u32, Vec<u32>>,
    visited: HashSet<Visit, BuildHasherDefault<IntHasher>>,
    /// Objects entered again by a shorter path (see `Visit`); at most `visited_count`, so
    /// shortening at most doubles a search's work, and past it the first path stands.
    revisits: u64,
    /// Index of the lowest frame entered again, `usize::MAX` when none: below it objects are
    /// counted once already (`visited_count`, `Node::reached`).
    revisit_from: usize,
    stack: Vec<Frame>,
    current_root: u32,
    merge: Merge,
    found: u64,
    /// Targets that survived a GC (`Sample::settled`), and how many of them it has found.
    settled: u64,
    settled_found: u64,
    /// Objects reached per `(root, class)` (see `Node::reached`), and each root's own object as
    /// `(identity, class)`.
    reached: IntMap<(u32, u32), u64>,
    /// Per sampled class, the distinct objects of it met that have no key in `visited` (leaves
    /// and terminal objects, met once per reference to them): what `Found::counted` says of
    /// such a class, where `reached` would count a string a map's key and its value's field
    /// at once twice.
    distinct: IntMap<u32, Distinct>,
    root_objects: IntMap<u32, (u32, u32)>,
    /// Recent targets (`Sample::recent`) found per root.
    pub found_by_root: IntMap<u32, u64>,
    /// Left roots unsearched (see `Found::stopped_early`).
    stopped_early: bool,
    visited_count: u64,
    /// Objects met (entered or not), how many had been met at the last new find, and at the
    /// current root's start.
    met: u64,
    met_at_find: u64,
    met_at_root: u64,
    /// The current root's allowance past its last find (`gone_dry`'s floor): the scope's, or
    /// twice what a resumed root had met when it was left.
    root_floor: u64,
    /// Roots a search through the statics and threads left gone dry, oldest first, to resume
    /// while it has found too few to name a holder by (see `may_resume`).
    deferred: VecDeque<Deferred>,
    /// For each weak reference of a `RootObject::Held`, the roots not yet come to that share
    /// it: at 0 it is deleted, as the search moves past, not at its end.
    root_holds: HashMap<usize, u32>,
    /// Which roots it goes through: any but `Full` makes a focused search, for the samples
    /// born since the last kept search, walked newest first, each root left once gone dry in
    /// it (`gone_dry`).
    scope: Scope,
    too_deep: u64,
    started: Instant,
    cpu: Duration,
    roots_pause: Duration,
    incomplete: String,
    /// The identities of the objects this search's enumeration found held by frames, JNI
    /// locals and monitors (`None` without an enumeration): the next search's `lasting`.
    pub locals: Option<Identities>,
    /// Such roots left out: their object was held by none at the enumeration before.
    transient_locals: u64,
    /// The field being followed from the top frame (see `Frame::via`), null for elements.
    via: jfieldID,
    /// The classes met last, most recent first: `(mirror, id, kind)` (see `class_info`).
    recent: Vec<(jobject, u32, Kind)>,
    /// Global references to `java.lang.Class`, `Thread` and `Reference`.
    class_class: jobject,
    thread_class: jobject,
    reference_class: jobject,
}

/// A live sample offered as a target: its weak reference (the tracker's; the search makes its
/// own), class and weight.
pub struct Sample {
    /// Its tracker slot and the allocation clock at its birth (which tells it from a later
    /// sample in the same slot), for the holder it is found in (`Found::holders`).
    pub slot: u32,
    pub born: u64,
    /// The tracker's weak reference to the object, valid while the search runs (the worker
    /// defers deleting released ones), and the object's identity hash taken when it was sampled.
    pub weak: usize,
    pub identity: u32,
    pub class: u32,
    pub weight: f64,
    /// When it was taken, whole seconds since the session's start (0: unknown), so that a
    /// viewer can weigh the objects of a growth apart from an older stock of the same type.
    pub born_s: u32,
    /// Taken since the previous search began: where these are found is where the heap grows,
    /// and those roots go first next time (`Found::top_roots`).
    pub recent: bool,
    /// It has survived a GC: most likely alive, where a sample born since the last GC is
    /// often garbage no GC has met yet (see `Search::may_resume`).
    pub settled: bool,
}

/// What the roots' enumeration callback collects.
struct RootsState {
    roots: Vec<RawRoot>,
    /// Objects marked so far.
    objects: usize,
    /// Thread markers from this index on are virtual threads'.
    first_virtual: usize,
    /// The enumeration has reported every root and walks into the virtual threads.
    in_virtual: bool,
    deadline: Instant,
    calls: u64,
    aborted: bool,
}

impl RootsState {
    /// A virtual thread's marker, mounted or not.
    fn is_virtual(&self, tag: jlong) -> bool {
        marker_index(tag).is_some_and(|(thread, i)| thread && i >= self.first_virtual)
    }
}

struct RawRoot {
    kind: RootKind,
    thread: Option<usize>,
    method: usize,
    location: i64,
    /// Object index (into `RootsState::old_tags`), or a thread's index with `is_thread`.
    object: usize,
    is_thread: bool,
}

impl RootsState {
    fn on_root(&mut self, kind: RootKind, frame: (jlong, usize, i64), tag_ptr: *mut jlong) {
        if tag_ptr.is_null() {
            return;
        }
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's tag; the VM stores a
        // changed tag after the callback returns.
        let tag = unsafe { *tag_ptr };
        let (is_thread, object) = match marker_index(tag) {
            Some(marked) => marked,
            None => {
                let index = self.objects;
                self.objects += 1;
                // SAFETY: as above.
                unsafe { *tag_ptr = object_marker(index) };
                (false, index)
            }
        };
        let thread = marker_index(frame.0).filter(|m| m.0).map(|m| m.1);
        self.roots.push(RawRoot {
            kind,
            thread: if kind == RootKind::Thread && is_thread {
                Some(object)
            } else {
                thread
            },
            method: frame.1,
            location: frame.2,
            object,
            is_thread,
        });
    }
}

unsafe extern "C" fn roots_callback(
    kind: sys::jvmtiHeapReferenceKind,
    info: *const sys::jvmtiHeapReferenceInfo,
    _class_tag: jlong,
    _referrer_class_tag: jlong,
    _size: jlong,
    tag_ptr: *mut jlong,
    referrer_tag_ptr: *mut jlong,
    _length: jint,
    user_data: *mut c_void,
) -> jint {
    // SAFETY: `user_data` is the `RootsState` that `Search::start` passed to
    // `follow_references`; the VM calls us from one thread at a time.
    let state = unsafe { &mut *user_data.cast::<RootsState>() };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        state.calls += 1;
        if state.calls & 0x3ff == 0 && Instant::now() > state.deadline {
            state.aborted = true;
            return sys::JVMTI_VISIT_ABORT as jint;
        }
        // SAFETY: JVMTI passes valid pointers to the tags, or null.
        let tag = unsafe { tag_ptr.as_ref() }.copied().unwrap_or(0);
        // The walk goes into the array of virtual threads and, from it, into each parked one,
        // whose frames HotSpot then reports as stack locals; into nothing else.
        match kind {
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_JNI_GLOBAL if tag == VIRTUAL_ARRAY => {
                state.in_virtual = true;
                return sys::JVMTI_VISIT_OBJECTS as jint;
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT => {
                // SAFETY: as above.
                let referrer = unsafe { referrer_tag_ptr.as_ref() }.copied().unwrap_or(0);
                let parked = state.is_virtual(tag) && tag & MOUNTED == 0;
                return if referrer == VIRTUAL_ARRAY && parked {
                    sys::JVMTI_VISIT_OBJECTS as jint
                } else {
                    0
                };
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_OTHER if state.is_virtual(tag) => {
                // A mounted virtual thread, reported before its frames on its carrier's stack.
                // SAFETY: `tag` came from this pointer, so it is not null.
                unsafe { *tag_ptr = tag | MOUNTED };
                return 0;
            }
            _ => {}
        }
        // System classes (their statics are read through JNI) and, were anything followed,
        // object references: not roots.
        let Some(root) = crate::jvmti::root_kind(kind) else {
            return 0;
        };
        let frame = match root {
            RootKind::StackLocal if !info.is_null() => {
                // SAFETY: for stack locals JVMTI passes the `stack_local` member.
                let local = unsafe { (*info).stack_local.as_ref() };
                (local.thread_tag, local.method as usize, local.location)
            }
            RootKind::JniLocal if !info.is_null() => {
                // SAFETY: for JNI locals JVMTI passes the `jni_local` member.
                let local = unsafe { (*info).jni_local.as_ref() };
                (local.thread_tag, local.method as usize, 0)
            }
            _ => (0, 0, 0),
        };
        state.on_root(root, frame, tag_ptr);
        // No JVMTI_VISIT_OBJECTS: nothing is followed, so the stop is the roots' enumeration.
        0
    }));
    outcome.unwrap_or_else(|_| {
        state.aborted = true;
        sys::JVMTI_VISIT_ABORT as jint
    })
}

use std::ffi::c_void;

/// A JVMTI environment disposed when dropped.
struct TempEnv(Jvmti);

impl Drop for TempEnv {
    fn drop(&mut self) {
        let _ = self.0.dispose();
    }
}

/// Deletes a frame's reference, local or weak global (null: nothing).
/// A stack that outlives the slice's local frame (the search's, between slices, or a root left
/// dry) holds its objects by weak global references: a global one would keep what the
/// application dropped meanwhile alive, and a walk would count it. The frame's pop frees the
/// local references.
fn hold_weakly(jni: *mut JNIEnv, stack: &mut [Frame]) {
    for frame in stack {
        if !frame.global && !frame.object.is_null() {
            frame.object = jni!(jni, NewWeakGlobalRef, frame.object);
            frame.global = true;
        }
        if !frame.pending.is_null() && !frame.pending_global {
            frame.pending = jni!(jni, NewWeakGlobalRef, frame.pending);
            frame.pending_global = true;
        }
    }
}

fn release(jni: *mut JNIEnv, object: jobject, global: bool) {
    if object.is_null() {
    } else if global {
        jni!(jni, DeleteWeakGlobalRef, object);
    } else {
        jni!(jni, DeleteLocalRef, object);
    }
}

/// What `Search::start` needs to know of the classes (the worker's class table).
pub struct ClassFacts<'a> {
    pub names: &'a [String],
    pub application: &'a [bool],
}

/// Other roots named per node at most (`Node::also`): enough to say where else a holder is
/// held, few enough for a node on every path.
const MAX_ALSO_ROOTS: usize = 4;
/// Roots a search that ended early looks at for `Node::also`, at most: a JNI call or two each.
const MAX_ROOTS_NOTED: usize = 100_000;

/// Objects by identity hash (see `Search::locals`).
pub type Identities = HashSet<u32, BuildHasherDefault<IntHasher>>;

/// What a search may do about the roots only a stop lists (frames' locals, JNI references,
/// monitors): whether it may stop the JVM to list them at all (the agent's budget for stops
/// decides: JDK 17 and 18 go over the whole heap after the listing), and what such roots held
/// at the last listing.
pub struct Listing<'a> {
    pub allowed: bool,
    pub lasting: &'a Identities,
}

/// Whether a root of this kind holds its object for a moment rather than for the JVM's life:
/// a frame's local, a native method's JNI local, a monitor held.
fn is_transient(kind: RootKind) -> bool {
    matches!(
        kind,
        RootKind::StackLocal | RootKind::JniLocal | RootKind::Monitor
    )
}

impl Search {
    /// Enumerates the roots (the one stop), reads the threads' names and the statics, and
    /// makes the targets. `None` when the JVM refused the roots' enumeration.
    /// `live_objects` sizes the search's memory up front (growing it costs more than it).
    /// `preferred`: roots to search first, in that order: where the last search found the
    /// growing objects, so that a focused search finds them again early. `scope`: which roots
    /// are searched; any but `Full` makes a focused search (see `gone_dry`). `listing`: whether
    /// it may list the roots (without, it searches the statics and threads and says what it
    /// left out), and the objects frames, JNI locals and monitors held at the last listing
    /// (its `locals`): such a root is entered only if its object is one of them (see below).
    pub fn start(
        env: &mut Env,
        facts: &ClassFacts<'_>,
        samples: &[Sample],
        live_objects: u64,
        preferred: &[RootKey],
        scope: Scope,
        listing: Listing<'_>,
    ) -> Option<Search> {
        let lasting = listing.lasting;
        let started = Instant::now();
        let jni = env.jni;
        let jvmti = env.jvmti;
        let global = |local: jobject| -> jobject {
            if local.is_null() {
                ptr::null_mut()
            } else {
                jni!(jni, NewGlobalRef, local)
            }
        };
        let weak = |local: jobject| -> jobject {
            if local.is_null() {
                ptr::null_mut()
            } else {
                jni!(jni, NewWeakGlobalRef, local)
            }
        };
        let find = |name: &std::ffi::CStr| -> jobject {
            let local = jni!(jni, FindClass, name.as_ptr());
            if local.is_null() {
                jni!(jni, ExceptionClear);
                return ptr::null_mut();
            }
            let g = global(local);
            jni!(jni, DeleteLocalRef, local);
            g
        };
        let class_class = find(c"java/lang/Class");
        let thread_class = find(c"java/lang/Thread");
        let reference_class = find(c"java/lang/ref/Reference");
        let mut search = Search {
            roots: Vec::new(),
            next_root: 0,
            threads: Vec::new(),
            first_virtual: 0,
            fields: vec!["[]".to_string()],
            field_ids: HashMap::new(),
            classes: Vec::new(),
            targets: Vec::new(),
            by_hash: IntMap::default(),
            visited: HashSet::with_capacity_and_hasher(
                (live_objects as usize / 2).clamp(1 << 16, MAX_VISITED),
                BuildHasherDefault::default(),
            ),
            stack: Vec::new(),
            current_root: 0,
            merge: Merge::default(),
            found: 0,
            settled: 0,
            settled_found: 0,
            reached: IntMap::default(),
            distinct: IntMap::default(),
            root_objects: IntMap::default(),
            found_by_root: IntMap::default(),
            stopped_early: false,
            visited_count: 0,
            met: 0,
            met_at_find: 0,
            met_at_root: 0,
            root_floor: DRY_FLOOR,
            deferred: VecDeque::new(),
            root_holds: HashMap::new(),
            scope: Scope::Full,
            revisits: 0,
            revisit_from: usize::MAX,
            too_deep: 0,
            started,
            cpu: Duration::ZERO,
            roots_pause: Duration::ZERO,
            incomplete: String::new(),
            locals: None,
            transient_locals: 0,
            via: ptr::null_mut(),
            recent: Vec::with_capacity(RECENT_CLASSES),
            class_class,
            thread_class,
            reference_class,
        };
        // SAFETY: the worker's own JNIEnv; the frame frees every local reference made here.
        let _frame = unsafe { LocalFrame::push(jni, 256) }?;
        let is_app = |id: u32| facts.application.get(id as usize).copied().unwrap_or(false);
        let name_of = |id: u32| facts.names.get(id as usize).map_or("", String::as_str);

        let wants_listing = match scope {
            Scope::Full => true,
            Scope::Preferred => preferred.iter().any(|root| root.enumerated),
            Scope::StaticsAndThreads => false,
        };
        let enumerate = wants_listing && listing.allowed;
        if wants_listing && !listing.allowed {
            search.incomplete = "the GC roots were not listed (the stop to list them, predicted from the last, would pass the agent's budget for stops): locals and JNI references were not searched".into();
        }
        // The enumeration's markers go in an environment of its own, disposed with its tags
        // right after: the agent's own tags (classes, samples, walks) are never touched, and
        // nothing needs restoring.
        let marks = if enumerate {
            let mut vm: *mut jni::sys::JavaVM = ptr::null_mut();
            if jni!(jni, GetJavaVM, &mut vm) != 0 || vm.is_null() {
                return None;
            }
            // SAFETY: `vm` is this process's JavaVM, from the worker's JNIEnv.
            let marks = TempEnv(unsafe { crate::jvmti::get_env(vm) }?);
            let mut caps = crate::jvmti::empty_capabilities();
            caps.set_can_tag_objects(1);
            marks.0.add_capabilities(&caps).ok()?;
            Some(marks)
        } else {
            None
        };
        // Threads: marked so that the enumeration tells whose stack a local is on.
        let threads = jvmti.all_threads().ok()?;
        for (i, &thread) in threads.as_slice().iter().enumerate() {
            let name = jvmti
                .thread_info(thread)
                .map(|info| info.name)
                .unwrap_or_else(|_| "(unnamed thread)".into());
            search.threads.push(name);
            if let Some(marks) = &marks {
                let _ = marks.0.set_tag(thread, thread_marker(i));
            }
        }
        // Virtual threads: their own markers, and an array of them the enumeration walks into.
        let first_virtual = search.threads.len();
        let (virtuals, more_virtual) = if enumerate {
            // SAFETY: the worker's own JNIEnv, on a Java thread that may run Java code.
            unsafe { vthreads::list(jni) }
        } else {
            (Vec::new(), false)
        };
        for (i, &thread) in virtuals.iter().enumerate() {
            let name = jvmti
                .thread_info(thread)
                .map(|info| info.name)
                .ok()
                .filter(|name| !name.is_empty())
                // SAFETY: as above; `thread` is a global reference.
                .or_else(|| unsafe { vthreads::id(jni, thread) }.map(|id| format!("#{id}")))
                .unwrap_or_else(|| "(unnamed)".into());
            search.threads.push(name);
            if let Some(marks) = &marks {
                let _ = marks.0.set_tag(thread, thread_marker(first_virtual + i));
            }
        }
        search.first_virtual = first_virtual;
        let mut state = RootsState {
            roots: Vec::new(),
            objects: 0,
            first_virtual,
            in_virtual: false,
            deadline: Instant::now() + ROOTS_LIMIT,
            calls: 0,
            aborted: false,
        };
        let mut objects: Vec<jobject> = Vec::new();
        let mut identities: Vec<u32> = Vec::new();
        let mut failed = false;
        if let Some(marks) = marks {
            // SAFETY: as above.
            let virtual_array = unsafe { vthreads::as_array(jni, &virtuals) };
            if !virtual_array.is_null() {
                let _ = marks.0.set_tag(virtual_array, VIRTUAL_ARRAY);
            }
            // SAFETY: the struct is all optional function pointers, for which zero means `None`.
            let mut callbacks: sys::jvmtiHeapCallbacks = unsafe { std::mem::zeroed() };
            callbacks.heap_reference_callback = Some(roots_callback);
            let stop = Instant::now();
            // SAFETY: the callback takes `RootsState` as user data, which outlives the call.
            failed = unsafe {
                marks
                    .0
                    .follow_references(&callbacks, (&mut state as *mut RootsState).cast::<c_void>())
            }
            .is_err();
            search.roots_pause = stop.elapsed();
            let markers: Vec<jlong> = (0..state.objects).map(object_marker).collect();
            objects = vec![ptr::null_mut(); state.objects];
            identities = vec![0; state.objects];
            for chunk in markers.chunks(1024) {
                if let Ok((found, found_tags)) = marks.0.objects_with_tags(chunk) {
                    for (&object, &tag) in found.as_slice().iter().zip(found_tags.as_slice()) {
                        if let Some((false, index)) = marker_index(tag) {
                            if let Some(slot) = objects.get_mut(index) {
                                *slot = weak(object);
                                identities[index] =
                                    env.jvmti.object_hash(object).unwrap_or(0) as u32;
                            }
                        }
                        jni!(jni, DeleteLocalRef, object);
                    }
                }
            }
            drop(marks);
            if !virtual_array.is_null() {
                jni!(jni, DeleteGlobalRef, virtual_array);
            }
        }
        for &global in &virtuals {
            if !global.is_null() {
                jni!(jni, DeleteGlobalRef, global);
            }
        }
        if enumerate && !failed && !state.aborted {
            search.locals = Some(Identities::default());
        }
        if failed || state.aborted {
            search.incomplete = format!(
                "the GC roots' enumeration {} after {} ms: {} not searched",
                if state.aborted {
                    "was abandoned"
                } else {
                    "failed"
                },
                search.roots_pause.as_millis(),
                if state.in_virtual {
                    "some virtual threads' frames were"
                } else {
                    "locals and JNI references were"
                }
            );
        } else if more_virtual {
            search.incomplete = format!(
                "the frames of {} virtual threads were searched, not of the others",
                virtuals.len()
            );
        }
        let memcity_thread = |t: Option<usize>| {
            t.and_then(|i| search.threads.get(i))
                .is_some_and(|n| is_memcity_thread(n))
        };
        let wanted = |root: &PathRoot| match scope {
            Scope::Full => true,
            Scope::Preferred => {
                let key = root.key(&search.threads);
                preferred.iter().any(|p| p.key == key)
            }
            // The application's statics and the threads: the JDK's statics hold a growth
            // rarely, and a few new samples in their lazily filled caches would be taken for
            // where the growth is (the full search still goes through them).
            Scope::StaticsAndThreads => {
                matches!(root.order, RootOrder::ApplicationStatic | RootOrder::Thread)
            }
        };
        let mut roots: Vec<(PathRoot, RootObject)> = Vec::new();
        // Threads in full, whether or not the enumeration reported them.
        for (i, &thread) in threads.as_slice().iter().enumerate() {
            let order = if memcity_thread(Some(i)) {
                RootOrder::Memcity
            } else {
                RootOrder::Thread
            };
            let root = PathRoot {
                kind: RootKind::Thread,
                order,
                thread: Some(i),
                method: 0,
                location: 0,
                class: 0,
                field: String::new(),
            };
            if wanted(&root) {
                roots.push((root, RootObject::Held(weak(thread))));
            }
        }
        // The enumeration's objects that a root keeps: the others' references go at once.
        let mut kept = vec![false; objects.len()];
        for raw in &state.roots {
            if raw.is_thread || raw.kind == RootKind::Thread {
                continue; // every thread is a root above
            }
            let object = objects.get(raw.object).copied().unwrap_or(ptr::null_mut());
            if object.is_null() {
                continue;
            }
            let application_frame = raw.method != 0
                && jvmti
                    .method_declaring_class(raw.method as jni::sys::jmethodID)
                    .ok()
                    .and_then(|class| {
                        let id = (env.class_id)(class);
                        jni!(jni, DeleteLocalRef, class);
                        id
                    })
                    .is_some_and(is_app);
            let order = if memcity_thread(raw.thread) {
                RootOrder::Memcity
            } else {
                match raw.kind {
                    RootKind::StackLocal if application_frame => RootOrder::ApplicationLocal,
                    RootKind::StackLocal | RootKind::JniLocal | RootKind::Monitor => {
                        RootOrder::OtherLocal
                    }
                    _ => RootOrder::JniGlobal,
                }
            };
            // A frame's local that held another object at the last enumeration (seconds ago)
            // is a moment's: a request's objects, a map just built and dropped again. A leak
            // lasts, and so does a frame that holds one (a loop that never returns): that
            // object was there the last time too. Entered, a moment's graph stays in the heap
            // while the search is inside it (its local references are roots to the GC, and
            // ZGC, Shenandoah and G1 keep what a weak one yields while they mark): a
            // million-entry map the application dropped, for seconds.
            if is_transient(raw.kind) && order != RootOrder::Memcity {
                let identity = identities.get(raw.object).copied().unwrap_or(0);
                if let Some(locals) = search.locals.as_mut() {
                    if locals.len() < MAX_ROOTS_NOTED {
                        locals.insert(identity);
                    }
                }
                if !lasting.contains(&identity) {
                    search.transient_locals += 1;
                    continue;
                }
            }
            let root = PathRoot {
                kind: raw.kind,
                order,
                thread: raw.thread,
                method: raw.method,
                location: raw.location,
                class: 0,
                field: String::new(),
            };
            if wanted(&root) {
                kept[raw.object] = true;
                // Shared with other roots of the same object: released once, when the search
                // has come to the last of them (`let_go_of_root`) or at its end.
                roots.push((root, RootObject::Held(object)));
            }
        }
        for (object, kept) in objects.iter().zip(&kept) {
            if !kept && !object.is_null() {
                jni!(jni, DeleteWeakGlobalRef, *object);
            }
        }
        // Static fields of the loaded, initialized classes.
        if let Ok(classes) = jvmti.loaded_classes() {
            for &class in classes.as_slice() {
                let initialized = jvmti
                    .class_status(class)
                    .is_ok_and(|s| s & sys::JVMTI_CLASS_STATUS_INITIALIZED as jint != 0);
                let Some(id) = (initialized).then(|| (env.class_id)(class)).flatten() else {
                    continue;
                };
                let Ok(fields) = jvmti.class_fields(class) else {
                    continue;
                };
                let name = name_of(id);
                let order = if is_memcity_class(name) {
                    RootOrder::Memcity
                } else if is_app(id) {
                    RootOrder::ApplicationStatic
                } else {
                    RootOrder::JdkStatic
                };
                let mut held: jobject = ptr::null_mut();
                for &field in fields.as_slice() {
                    let statik = jvmti
                        .field_modifiers(class, field)
                        .is_ok_and(|m| m & ACC_STATIC != 0);
                    if !statik {
                        continue;
                    }
                    let Ok((field_name, signature)) = jvmti.field_name(class, field) else {
                        continue;
                    };
                    let signature = signature.to_string_lossy();
                    if !(signature.starts_with('L') || signature.starts_with('[')) {
                        continue;
                    }
                    let root = PathRoot {
                        kind: RootKind::StaticField,
                        order,
                        thread: None,
                        method: 0,
                        location: 0,
                        class: id,
                        field: field_name.to_string_lossy(),
                    };
                    if !wanted(&root) {
                        continue;
                    }
                    if held.is_null() {
                        held = global(class);
                    }
                    roots.push((root, RootObject::Static(held, field)));
                }
                jni!(jni, DeleteLocalRef, class);
            }
        }
        // Stable: within an order, the JVM's own order (threads as listed, locals top frame
        // first, classes as loaded). Preferred roots first within their order, never before a
        // root of an earlier one: what a root finds first it is credited with, and a frame's
        // local that held the leak once (a request loop touching a static deque) must not
        // claim it from the static field in every later search.
        let threads = &search.threads;
        roots.sort_by_cached_key(|(root, _)| {
            let key = root.key(threads);
            (
                root.order,
                preferred
                    .iter()
                    .position(|p| p.key == key)
                    .unwrap_or(usize::MAX),
            )
        });
        search.roots = roots;
        // A focused search (the caller gives it the samples born since the last search) left
        // the other roots by design: its misses judge nothing (`Found::missed_samples`).
        search.scope = scope;
        search.stopped_early = search.focused();

        // Targets: every live sample, or an even selection of them, with weights scaled to
        // stand for all.
        let step = samples.len().div_ceil(MAX_TARGETS).max(1);
        let scale = step as f64;
        for sample in samples.iter().step_by(step) {
            let weak = sample.weak as jobject;
            // Compared with null, not resolved (see the module's head).
            let died = jni!(jni, IsSameObject, weak, std::ptr::null_mut()) == jni::sys::JNI_TRUE;
            if sample.identity == 0 || died {
                continue;
            }
            let index = search.targets.len() as u32;
            search.distinct.entry(sample.class).or_default();
            search.targets.push(Target {
                slot: sample.slot,
                born: sample.born,
                holder: None,
                weak,
                class: sample.class,
                weight: sample.weight * scale,
                born_s: sample.born_s,
                recent: sample.recent,
                settled: sample.settled,
                found: false,
                root: 0,
                depth: 0,
                node: NONE,
            });
            search
                .by_hash
                .entry(sample.identity)
                .or_default()
                .push(index);
            search.settled += u64::from(sample.settled);
        }
        for (_, object) in &search.roots {
            if let RootObject::Held(weak) = *object {
                if !weak.is_null() {
                    *search.root_holds.entry(weak as usize).or_default() += 1;
                }
            }
        }
        search.cpu = started.elapsed();
        Some(search)
    }

    fn field_id(&mut self, name: String) -> u32 {
        if let Some(&id) = self.field_ids.get(&name) {
            return id;
        }
        let id = self.fields.len() as u32;
        self.fields.push(name.clone());
        self.field_ids.insert(name, id);
        id
    }

    /// The class id and what the search knows of `class` (learned on first sight).
    fn class_info(&mut self, env: &mut Env, class: jclass) -> Option<(u32, Kind)> {
        // The classes met last: a list's nodes, a map's entries, an array's elements come in
        // runs, and `IsSameObject` is cheaper than the tag map's lock and lookup.
        let jni = env.jni;
        for i in 0..self.recent.len() {
            let (mirror, id, kind) = self.recent[i];
            if jni!(jni, IsSameObject, mirror, class) == jni::sys::JNI_TRUE {
                self.recent[..=i].rotate_right(1);
                return Some((id, kind));
            }
        }
        let (id, kind) = self.class_info_slow(env, class)?;
        let evicted = if self.recent.len() == RECENT_CLASSES {
            self.recent.pop().map(|r| r.0)
        } else {
            None
        };
        if let Some(mirror) = evicted {
            jni!(jni, DeleteGlobalRef, mirror);
        }
        let mirror = jni!(jni, NewGlobalRef, class);
        if !mirror.is_null() {
            self.recent.insert(0, (mirror, id, kind));
        }
        Some((id, kind))
    }

    fn class_info_slow(&mut self, env: &mut Env, class: jclass) -> Option<(u32, Kind)> {
        let id = (env.class_id)(class)?;
        if let Some(Some(info)) = self.classes.get(id as usize) {
            return Some((id, info.kind));
        }
        let info = self.learn(env, class);
        let kind = info.kind;
        if self.classes.len() <= id as usize {
            self.classes.resize_with(id as usize + 1, || None);
        }
        self.classes[id as usize] = Some(info);
        Some((id, kind))
    }

    fn learn(&mut self, env: &mut Env, class: jclass) -> ClassInfo {
        let jni = env.jni;
        let jvmti = env.jvmti;
        let leaf = ClassInfo {
            kind: Kind::Leaf,
            fields: Vec::new(),
            terminal: true,
        };
        let Ok(signature) = jvmti.class_signature(class) else {
            return leaf;
        };
        let signature = signature.to_string_lossy();
        if let Some(element) = signature.strip_prefix('[') {
            return ClassInfo {
                kind: if element.starts_with('L') || element.starts_with('[') {
                    Kind::ObjectArray
                } else {
                    Kind::Leaf
                },
                fields: Vec::new(),
                // An array of Strings may hold the same String twice, but an array of arrays
                // or objects may hold itself: only primitive arrays are leaves.
                terminal: !(element.starts_with('L') || element.starts_with('[')),
            };
        }
        if jni!(jni, IsSameObject, class, self.class_class) == jni::sys::JNI_TRUE {
            return ClassInfo {
                kind: Kind::Mirror,
                fields: Vec::new(),
                terminal: false,
            };
        }
        let is_thread = !self.thread_class.is_null()
            && jni!(jni, IsAssignableFrom, class, self.thread_class) == jni::sys::JNI_TRUE;
        let mut own = Vec::new();
        let mut other = Vec::new();
        let mut terminal = true;
        // SAFETY: the worker's JNIEnv; the frame frees the superclass references.
        let Some(_frame) = (unsafe { LocalFrame::push(jni, 16) }) else {
            return leaf;
        };
        let mut current = jni!(jni, NewLocalRef, class);
        while !current.is_null() {
            let is_reference =
                jni!(jni, IsSameObject, current, self.reference_class) == jni::sys::JNI_TRUE;
            if let Ok(fields) = jvmti.class_fields(current) {
                for &field in fields.as_slice() {
                    if jvmti
                        .field_modifiers(current, field)
                        .is_ok_and(|m| m & ACC_STATIC != 0)
                    {
                        continue;
                    }
                    let Ok((name, field_signature)) = jvmti.field_name(current, field) else {
                        continue;
                    };
                    let field_signature = field_signature.to_string_lossy();
                    if !(field_signature.starts_with('L') || field_signature.starts_with('[')) {
                        continue;
                    }
                    let name = name.to_string_lossy();
                    // A referent is not held by its reference (weak, soft, phantom: the GC
                    // clears it; final: the finalizer queue only runs it).
                    if is_reference && name == "referent" {
                        continue;
                    }
                    terminal &= holds_only_leaves(&field_signature);
                    let id = self.field_id(name);
                    if field_signature == signature {
                        own.push((field, id));
                    } else {
                        other.push((field, id));
                    }
                }
            }
            current = jni!(jni, GetSuperclass, current);
        }
        other.extend(own);
        ClassInfo {
            kind: if is_thread {
                Kind::Thread
            } else if other.is_empty() {
                Kind::Leaf
            } else {
                Kind::Instance
            },
            fields: other,
            terminal: terminal && !is_thread,
        }
    }

    /// Runs the search for about `slice`; true when it is done.
    pub fn run(&mut self, env: &mut Env, slice: Duration) -> bool {
        let start = Instant::now();
        let deadline = start + slice;
        // SAFETY: the worker's own JNIEnv; the frame frees the slice's local references.
        let Some(_frame) = (unsafe { LocalFrame::push(env.jni, 64) }) else {
            self.incomplete = "no JNI local frame".into();
            return true;
        };
        // Frames come back from their weak references; one whose object the GC freed meanwhile
        // (the application dropped it) has nothing left to search.
        let jni = env.jni;
        if self.stack.is_empty() && self.next_root >= self.roots.len() && self.may_resume() {
            self.resume_deferred();
        }
        jni!(
            jni,
            EnsureLocalCapacity,
            (2 * self.stack.len() + 64) as jint
        );
        for frame in &mut self.stack {
            for (object, global) in [
                (&mut frame.object, &mut frame.global),
                (&mut frame.pending, &mut frame.pending_global),
            ] {
                if *global && !object.is_null() {
                    let local = jni!(jni, NewLocalRef, *object);
                    jni!(jni, DeleteWeakGlobalRef, *object);
                    *object = local;
                    *global = false;
                }
            }
            if frame.object.is_null() {
                frame.cursor = frame.length;
            }
        }
        // An array its holder has replaced since the last slice (a list or map that grew) is
        // garbage: searching on through it would keep it alive, since ZGC and Shenandoah keep
        // what a weak reference yields during their marking, and the estimates would count it.
        // It is finished now; popping it reads the field again and searches the new array.
        for i in 1..self.stack.len() {
            let (below, above) = self.stack.split_at_mut(i);
            let (parent, frame) = (&below[i - 1], &mut above[0]);
            if frame.via.is_null() || parent.object.is_null() || frame.object.is_null() {
                continue;
            }
            let now = jni!(jni, GetObjectField, parent.object, frame.via);
            if jni!(jni, IsSameObject, now, frame.object) == jni::sys::JNI_FALSE {
                frame.cursor = frame.length;
            }
            if !now.is_null() {
                jni!(jni, DeleteLocalRef, now);
            }
        }
        let mut steps = 0u32;
        let done = loop {
            steps += 1;
            if steps & 0xff == 0 && Instant::now() >= deadline {
                break false;
            }
            // Between roots only: the rest of a root may still shorten paths found in it. A
            // search through every static and thread is after where the growth is, not yet
            // its shortest paths (see `PREFERRED_DRY_FLOOR`).
            let enough = self.found as f64 >= ENOUGH_FOUND * self.targets.len() as f64;
            if enough && (self.stack.is_empty() || self.scope == Scope::StaticsAndThreads) {
                self.stopped_early = true;
                break true;
            }
            if self.focused()
                && !self.stack.is_empty()
                && gone_dry(
                    self.met - self.met_at_root,
                    self.met_at_find.max(self.met_at_root) - self.met_at_root,
                    self.root_floor,
                )
            {
                self.defer_root(jni);
            }
            // A root left dry resumes at the next slice's start, where the stack's references
            // become local ones again.
            if self.stack.is_empty() && self.next_root >= self.roots.len() && self.may_resume() {
                break false;
            }
            if !self.step(env) {
                // The last roots may have entered nothing (a static holding null, a thread
                // gone): the ones left dry are still to come back to.
                break !self.may_resume();
            }
        };
        if jni!(env.jni, ExceptionCheck) == jni::sys::JNI_TRUE {
            jni!(env.jni, ExceptionClear);
        }
        hold_weakly(jni, &mut self.stack);
        self.cpu += start.elapsed();
        done
    }

    /// One reference of the search; false when there is nothing left to do.
    fn step(&mut self, env: &mut Env) -> bool {
        let jni = env.jni;
        let Some(top) = self.stack.last_mut() else {
            return self.next_root(env);
        };
        if top.cursor >= top.length {
            if top.pending.is_null() {
                let frame = self.stack.pop().expect("a top frame");
                if self.revisit_from == self.stack.len() {
                    self.revisit_from = usize::MAX;
                }
                let replaced = match self.stack.last() {
                    // A parent the GC freed between slices (its weak reference came back null)
                    // has no field to read again: JNI would dereference null and crash the JVM.
                    Some(parent) if !frame.via.is_null() && !parent.object.is_null() => {
                        let now = jni!(jni, GetObjectField, parent.object, frame.via);
                        if !now.is_null()
                            && jni!(jni, IsSameObject, now, frame.object) == jni::sys::JNI_FALSE
                        {
                            Some(now)
                        } else {
                            if !now.is_null() {
                                jni!(jni, DeleteLocalRef, now);
                            }
                            None
                        }
                    }
                    _ => None,
                };
                release(jni, frame.object, frame.global);
                if let Some(now) = replaced {
                    if !self.reach(env, now, frame.via_name, true) {
                        jni!(jni, DeleteLocalRef, now);
                    }
                }
            } else {
                release(jni, top.object, top.global);
                // The chain's next link takes the frame's place (a tail call).
                top.object = std::mem::replace(&mut top.pending, ptr::null_mut());
                top.global = top.pending_global;
                top.length = top.pending_length;
                top.cursor = 0;
                top.run += 1;
            }
            return true;
        }
        // Newest first in a focused search (see `gone_dry`).
        let cursor = if self.scope != Scope::Full {
            top.length - 1 - top.cursor
        } else {
            top.cursor
        };
        top.cursor += 1;
        let (object, field) = match self.classes[top.class as usize].as_ref().map(|c| c.kind) {
            Some(Kind::ObjectArray) => (
                jni!(jni, GetObjectArrayElement, top.object, cursor as jsize),
                ELEMENTS_FIELD,
            ),
            _ => {
                let info = self.classes[top.class as usize]
                    .as_ref()
                    .expect("a known class");
                let (id, name) = info.fields[cursor as usize];
                self.via = id;
                (jni!(jni, GetObjectField, top.object, id), name)
            }
        };
        if !object.is_null() && !self.reach(env, object, field, true) {
            jni!(jni, DeleteLocalRef, object);
        }
        self.via = ptr::null_mut();
        true
    }

    /// Not through every root (see `scope`).
    fn focused(&self) -> bool {
        self.scope != Scope::Full
    }

    /// Leaves the rest of the current root unsearched (a focused search gone dry in it), or
    /// the search's stack (its end).
    fn leave_root(&mut self, jni: *mut JNIEnv) {
        for frame in self.stack.drain(..) {
            release(jni, frame.object, frame.global);
            release(jni, frame.pending, frame.pending_global);
        }
        self.revisit_from = usize::MAX;
    }

    /// Leaves the current root gone dry: for good through the preferred roots (where the
    /// growth was, its newest objects come first), or, through every static and thread, for
    /// now. A growth no search has placed yet may lie past a root's first `DRY_FLOOR`
    /// objects (a server's sessions, deep in the server's graph behind its connectors, pools
    /// and handlers), and a search that finds too few of its samples elsewhere comes back for
    /// it (`may_resume`).
    fn defer_root(&mut self, jni: *mut JNIEnv) {
        if self.scope != Scope::StaticsAndThreads {
            self.leave_root(jni);
            return;
        }
        let mut stack = std::mem::take(&mut self.stack);
        hold_weakly(jni, &mut stack);
        self.deferred.push_back(Deferred {
            root: self.current_root,
            stack,
            revisit_from: std::mem::replace(&mut self.revisit_from, usize::MAX),
            met: self.met - self.met_at_root,
            met_at_find: self.met_at_find.max(self.met_at_root) - self.met_at_root,
        });
    }

    /// Whether the search, past its last root, goes back to a root it left dry: while it has
    /// found fewer than `ENOUGH_TO_SHOW` (too few to be kept: the worker's `keep_found`), or
    /// fewer than half of its targets that survived a GC. Those are mostly alive, so the
    /// roots it has been through so far hold a growth of them only if it found them there;
    /// a few new objects in some static's cache are not where the heap grows. Its youngest
    /// targets are not counted: many are garbage, which no root reaches.
    fn may_resume(&self) -> bool {
        !self.deferred.is_empty()
            && self.visited.len() < MAX_VISITED
            && self.incomplete.is_empty()
            && (self.found < ENOUGH_TO_SHOW || 2 * self.settled_found < self.settled)
    }

    /// Resumes the root left dry longest ago where it was left, its allowance past its last
    /// find raised to twice the objects it had met: each round costs a few times what the
    /// search had spent on it at most.
    fn resume_deferred(&mut self) {
        let Some(root) = self.deferred.pop_front() else {
            return;
        };
        self.current_root = root.root;
        self.stack = root.stack;
        self.revisit_from = root.revisit_from;
        self.met_at_root = self.met - root.met;
        self.met_at_find = self.met_at_root + root.met_at_find;
        self.root_floor = 2 * root.met;
    }

    /// Starts the next root's frame; false when none is left.
    fn next_root(&mut self, env: &mut Env) -> bool {
        let jni = env.jni;
        while self.next_root < self.roots.len() {
            let index = self.next_root;
            self.next_root += 1;
            self.current_root = index as u32;
            self.met_at_root = self.met;
            self.root_floor = self.scope.dry_floor();
            let object = match self.roots[index].1 {
                RootObject::Held(weak) => {
                    let object = jni!(jni, NewLocalRef, weak);
                    self.let_go_of_root(jni, index);
                    object
                }
                RootObject::Static(class, field) => {
                    jni!(jni, GetStaticObjectField, class, field)
                }
            };
            if object.is_null() {
                continue; // a static holding nothing, or a local's object gone since
            }
            if !self.reach(env, object, index as u32, true) {
                jni!(jni, DeleteLocalRef, object);
            }
            if !self.stack.is_empty() || self.visited.len() >= MAX_VISITED {
                return self.visited.len() <= MAX_VISITED;
            }
        }
        false
    }

    /// Root `index` is being come to: its weak reference is no longer the search's to keep
    /// (the root's frame holds the object from here on, as long as it is searched). Deleted
    /// once no root still to come shares it. Held to the search's end, every local of every
    /// thread at the enumeration stayed in the heap that long on generational ZGC, whose young
    /// collections keep what a weak reference holds: a map of a million entries the
    /// application had dropped, for seconds.
    fn let_go_of_root(&mut self, jni: *mut JNIEnv, index: usize) {
        let RootObject::Held(weak) =
            std::mem::replace(&mut self.roots[index].1, RootObject::Held(ptr::null_mut()))
        else {
            return;
        };
        if weak.is_null() {
            return;
        }
        let holds = self.root_holds.entry(weak as usize).or_insert(1);
        *holds -= 1;
        if *holds == 0 {
            self.root_holds.remove(&(weak as usize));
            jni!(jni, DeleteWeakGlobalRef, weak);
        }
    }

    /// `object` is referenced by the top frame through `field` (or is a root's object, `field`
    /// then the root's index): count it if it is a target, and enter it if it is new. An `owned`
    /// local reference is kept by a frame it enters (returns true) instead of copied.
    fn reach(&mut self, env: &mut Env, object: jobject, field: u32, owned: bool) -> bool {
        let jni = env.jni;
        self.met += 1;
        let class = jni!(jni, GetObjectClass, object);
        let info = self.class_info(env, class);
        jni!(jni, DeleteLocalRef, class);
        let Some((class, kind)) = info else {
            return false;
        };
        if kind == Kind::Mirror {
            return false;
        }
        let Ok(identity) = env.jvmti.object_hash(object) else {
            return false;
        };
        let identity = identity as u32;
        let depth = self.stack.len();
        if let Some(candidates) = self.by_hash.get(&identity) {
            let root = self.current_root;
            let hit = candidates.iter().copied().find(|&t| {
                let target = &self.targets[t as usize];
                // Found already, it moves only to a shorter path from its own root.
                (!target.found || (target.root == root && (depth as u32) < target.depth))
                    && jni!(jni, IsSameObject, target.weak, object) == jni::sys::JNI_TRUE
            });
            if let Some(t) = hit {
                self.found_target(t, identity, class, field);
            }
        }
        if self.stack.is_empty() {
            self.root_objects
                .insert(self.current_root, (identity, class));
        }
        let revisiting = self.revisit_from != usize::MAX;
        let entering = match kind {
            Kind::Leaf | Kind::Mirror => {
                if !revisiting {
                    *self.reached.entry((self.current_root, class)).or_default() += 1;
                }
                if let Some(distinct) = self.distinct.get_mut(&class) {
                    distinct.insert(identity);
                }
                false
            }
            // A live thread is a root of its own; enter it only as that (not from another
            // root, nor as a local's object: `main` holding a worker's `Thread` does not hold
            // the worker's thread-locals).
            Kind::Thread => {
                self.stack.is_empty()
                    && self
                        .roots
                        .get(self.current_root as usize)
                        .is_some_and(|r| r.0.kind == RootKind::Thread)
            }
            Kind::Instance | Kind::ObjectArray => true,
        };
        if !entering {
            return false;
        }
        let terminal = self.classes[class as usize]
            .as_ref()
            .is_some_and(|c| c.terminal);
        let (length, second) = if kind == Kind::ObjectArray {
            let length = jni!(jni, GetArrayLength, object).max(0) as u32;
            (length, length)
        } else if terminal {
            // No key: entering it twice costs its few fields, and nothing below it can lead
            // back (a catalog's millions of products would otherwise fill `MAX_VISITED`).
            let info = self.classes[class as usize]
                .as_ref()
                .expect("a known class");
            (info.fields.len() as u32, 0)
        } else {
            let info = self.classes[class as usize]
                .as_ref()
                .expect("a known class");
            let length = info.fields.len() as u32;
            let second = info
                .fields
                .first()
                .map(|&(id, _)| jni!(jni, GetObjectField, object, id))
                .filter(|o| !o.is_null())
                .map_or(0, |o| {
                    let h = env.jvmti.object_hash(o).unwrap_or(0) as u32;
                    jni!(jni, DeleteLocalRef, o);
                    h
                });
            (length, second)
        };
        let met = if terminal {
            Met::New
        } else {
            self.visit(visit_key(identity, class, second), depth)
        };
        // Below a frame entered again everything was counted once; a terminal object has no
        // key to tell, an object new even there (the application linked it since) has.
        let counted = match met {
            Met::Seen => return false,
            Met::Shorter => false,
            Met::New => !(terminal && revisiting),
        };
        if counted {
            self.visited_count += 1;
            *self.reached.entry((self.current_root, class)).or_default() += 1;
        }
        if terminal {
            if let Some(distinct) = self.distinct.get_mut(&class) {
                distinct.insert(identity);
            }
        }
        if self.visited.len() >= MAX_VISITED {
            self.incomplete =
                format!("the search kept track of {MAX_VISITED} objects, its limit, and stopped");
            self.next_root = self.roots.len();
            return false;
        }
        let chained = self.stack.last().is_some_and(|top| top.class == class);
        if chained {
            let top = self.stack.last_mut().expect("a top frame");
            if top.pending.is_null() {
                // The chain's next link: entered once this frame is done (see `Frame::pending`).
                top.pending = if owned {
                    object
                } else {
                    jni!(jni, NewLocalRef, object)
                };
                top.pending_global = false;
                top.pending_length = length;
                if met == Met::Shorter {
                    self.revisit_from = self.revisit_from.min(self.stack.len() - 1);
                }
                return owned;
            }
        }
        if self.stack.len() >= MAX_DEPTH {
            self.too_deep += 1;
            return false;
        }
        let (run, first_identity, first_field) = match self.stack.last() {
            Some(top) if chained => (top.run + 1, top.identity, top.field),
            _ => (1, identity, field),
        };
        if met == Met::Shorter {
            self.revisit_from = self.revisit_from.min(self.stack.len());
        }
        if self.stack.len() % 64 == 63 {
            // Room for the slice's local references (a frame each; -Xcheck:jni counts them).
            jni!(jni, EnsureLocalCapacity, (self.stack.len() + 128) as jint);
        }
        self.stack.push(Frame {
            object: if owned {
                object
            } else {
                jni!(jni, NewLocalRef, object)
            },
            global: false,
            pending: ptr::null_mut(),
            pending_global: false,
            pending_length: 0,
            class,
            cursor: 0,
            length,
            node: NONE,
            run,
            identity: first_identity,
            field: first_field,
            chained,
            via: if kind == Kind::ObjectArray {
                self.via
            } else {
                ptr::null_mut()
            },
            via_name: field,
        });
        owned
    }

    /// Gives every frame of the stack its merged node; returns the top's.
    fn materialize(&mut self) -> u32 {
        for i in 0..self.stack.len() {
            if self.stack[i].node == NONE {
                let node = if self.stack[i].chained {
                    self.stack[i - 1].node
                } else {
                    let parent = if i == 0 {
                        0
                    } else {
                        self.stack[i - 1].node + 1
                    };
                    let f = &self.stack[i];
                    self.merge.node(parent, f.identity, f.class, f.field)
                };
                self.stack[i].node = node;
            }
            let (node, run) = (self.stack[i].node, self.stack[i].run);
            let array = self.classes[self.stack[i].class as usize]
                .as_ref()
                .is_some_and(|c| c.kind == Kind::ObjectArray);
            let merged = &mut self.merge.nodes[node as usize];
            merged.chain = merged.chain.max(run);
            if array {
                merged.length = merged.length.max(u64::from(self.stack[i].length));
            }
        }
        self.stack.last().map_or(NONE, |f| f.node)
    }

    /// Whether to enter an object with this key met at this depth (see `Visit`).
    fn visit(&mut self, key: u64, depth: usize) -> Met {
        let visit = Visit::new(key, self.current_root, depth);
        if self.visited.insert(visit) {
            return Met::New;
        }
        let seen = *self.visited.get(&visit).expect("a visited key");
        if !visit.shortens(seen) {
            return Met::Seen;
        }
        if self.revisits >= self.visited_count {
            if self.revisits == self.visited_count {
                self.revisits += 1;
                crate::log::once!(
                    Info,
                    "path search: {} objects entered again by shorter paths, as many as \
                     entered once; the paths found first stand for the rest",
                    self.visited_count
                );
            }
            return Met::Seen;
        }
        self.revisits += 1;
        self.visited.replace(visit);
        Met::Shorter
    }

    /// Counts a target at the top of the stack, or moves it there from a longer path.
    fn found_target(&mut self, target: u32, identity: u32, class: u32, field: u32) {
        let t = &self.targets[target as usize];
        if t.found {
            let (node, class, weight, born_s) = (t.node, t.class, t.weight, t.born_s);
            self.merge.uncount(node, class, weight, born_s);
        } else {
            if t.recent {
                *self.found_by_root.entry(self.current_root).or_default() += 1;
            }
            self.found += 1;
            if t.settled {
                self.settled_found += 1;
            }
            self.met_at_find = self.met;
        }
        let node = match self.stack.last() {
            None => self.merge.node(0, identity, class, field),
            // An object of the chain's own class is one more link of it: counted at the chain.
            Some(top) if top.class == class => self.materialize(),
            Some(_) => {
                let parent = self.materialize() + 1;
                self.merge.node(parent, identity, class, field)
            }
        };
        let holder = self
            .stack
            .last()
            .map(|top| (top.class, field, Instant::now()));
        let t = &mut self.targets[target as usize];
        t.found = true;
        t.holder = holder;
        t.root = self.current_root;
        t.depth = self.stack.len() as u32;
        t.node = node;
        let (tclass, weight, born_s) = (t.class, t.weight, t.born_s);
        self.merge.count(node, tclass, weight, born_s);
    }

    /// The roots a search that ended early (every target found) did not come to: notes those
    /// whose own object is on a path, for `also_roots`. One identity hash per root, at most
    /// [`MAX_ROOTS_NOTED`] of them, outside any stop.
    fn note_unvisited_roots(&mut self, env: &mut Env) {
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
    fn also_roots(&mut self) {
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

    /// How many targets it has reached so far.
    /// How long listing the roots stopped the JVM (zero without a listing).
    pub fn roots_pause(&self) -> Duration {
        self.roots_pause
    }

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
        let mut missed: IntMap<u32, (u64, f64)> = IntMap::default();
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
        let missed = by_count(missed);
        let targeted = by_count(targeted);
        for (mirror, _, _) in self.recent.drain(..) {
            jni!(jni, DeleteGlobalRef, mirror);
        }
        for global in [self.class_class, self.thread_class, self.reference_class] {
            if !global.is_null() {
                jni!(jni, DeleteGlobalRef, global);
            }
        }
        // Per root, the counts of the classes sampled: on its node, made for a root that holds
        // many of them though no sampled path went through it.
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
        let total_recent: u64 = self.found_by_root.values().sum();
        let mut by_root: Vec<(u32, u64)> =
            self.found_by_root.iter().map(|(&r, &n)| (r, n)).collect();
        by_root.sort_by_key(|&(r, n)| (std::cmp::Reverse(n), r));
        // A root that the roots' enumeration alone finds (a frame's local) holds a growth no
        // search without that stop can see: named among the preferred roots with a growth's
        // own evidence (`ENOUGH_TO_KEEP` finds), not only with a tenth of them, or the focused
        // searches after it look through the statics and threads for it in vain until the
        // next full search (a leak in `main`'s local beside a bigger static history filled at
        // start-up, whose finds outnumber it). Not with fewer: a server's request frames each
        // hold a session or two for a moment, and made the stops many and their roots first.
        let top_roots: Vec<RootKey> = by_root
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
            .collect();
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
            missed,
            targeted,
            missed_samples,
            found_samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leak appended to: its newest samples found in its first 10,000 objects, newest first.
    /// The search goes on while finds come, and for as long again (or `DRY_FLOOR`) after the
    /// last; roots with none of the growth among their first `DRY_FLOOR` objects are left.
    #[test]
    fn a_focused_search_goes_dry_past_as_long_again_as_its_finds_took() {
        assert!(!gone_dry(DRY_FLOOR, 0, DRY_FLOOR));
        assert!(gone_dry(DRY_FLOOR + 1, 0, DRY_FLOOR));
        assert!(!gone_dry(10_000 + DRY_FLOOR, 10_000, DRY_FLOOR));
        assert!(gone_dry(10_001 + DRY_FLOOR, 10_000, DRY_FLOOR));
        // Finds spread to the end (a hash map's table): the gap never grows past them.
        let (mut met, mut at) = (0u64, 0u64);
        for found in 1..=1_000u64 {
            met += 5_000;
            assert!(!gone_dry(met, at, DRY_FLOOR), "dry at find {found}");
            at = met;
        }
        assert!(!gone_dry(2 * at, at, DRY_FLOOR));
        assert!(gone_dry(2 * at + 1, at, DRY_FLOOR));
    }

    #[test]
    fn markers_tell_objects_threads_and_untagged_apart() {
        for index in [0usize, 1, 12345, (1 << 40) - 2] {
            assert_eq!(marker_index(object_marker(index)), Some((false, index)));
            assert_eq!(marker_index(thread_marker(index)), Some((true, index)));
        }
        assert_eq!(marker_index(0), None);
    }

    #[test]
    fn keys_tell_apart_what_hashes_alone_do_not() {
        let a = visit_key(42, 7, 1);
        assert_ne!(a, visit_key(42, 7, 2), "same hash and class, other content");
        assert_ne!(a, visit_key(42, 8, 1), "same hash, other class");
        assert_eq!(a, visit_key(42, 7, 1));
    }

    #[test]
    fn merged_paths_share_their_prefix_and_count_targets_where_they_end() {
        let mut m = Merge::default();
        let root = m.node(0, 11, 1, 0);
        let list = m.node(root + 1, 12, 2, 3);
        let again = m.node(root + 1, 12, 2, 3);
        assert_eq!(list, again);
        let a = m.node(list + 1, 13, 4, 5);
        let b = m.node(list + 1, 14, 4, 5);
        assert_ne!(a, b, "two instances of one type are two nodes");
        m.count(a, 4, 2.0, 7);
        m.count(a, 4, 3.0, 7);
        m.count(a, 4, 1.0, 8);
        m.count(b, 9, 1.0, 7);
        assert_eq!(
            m.nodes[a as usize].targets,
            vec![(4, 2, 5.0, 7), (4, 1, 1.0, 8)]
        );
        assert_eq!(m.nodes[b as usize].targets, vec![(9, 1, 1.0, 7)]);
        assert_eq!(m.nodes.len(), 4);
        assert_eq!(m.nodes[list as usize].parent, root + 1);
    }

    #[test]
    fn a_target_moved_to_a_shorter_path_leaves_no_empty_branch() {
        let mut m = Merge::default();
        // Two roots' objects; under the first, a long path (queue -> task -> timer -> session)
        // and a short one (map -> session), and a reached-only root node.
        let root = m.node(0, 1, 1, 0);
        let queue = m.node(root + 1, 2, 2, 1);
        let task = m.node(queue + 1, 3, 3, 2);
        let timer = m.node(task + 1, 4, 4, 3);
        let long = m.node(timer + 1, 5, 5, 4);
        let map = m.node(root + 1, 6, 6, 5);
        let short = m.node(map + 1, 5, 5, 6);
        let other = m.node(0, 7, 7, 1);
        m.nodes[other as usize].reached = vec![(5, 1000)];
        m.count(long, 5, 2.0, 3);
        m.count(long, 5, 2.0, 4);
        assert_eq!(m.clone_nodes().len(), 8, "nothing moved, nothing pruned");
        m.uncount(long, 5, 2.0, 3);
        m.count(short, 5, 2.0, 3);
        let kept = m.clone_nodes();
        assert_eq!(kept.len(), 8, "the long path still holds one target");
        m.uncount(long, 5, 2.0, 4);
        m.count(short, 5, 2.0, 4);
        let nodes = m.into_nodes();
        let identities: Vec<u32> = nodes.iter().map(|n| n.identity).collect();
        assert_eq!(
            identities,
            vec![1, 6, 5, 7],
            "the long path is gone, parents first"
        );
        assert_eq!(nodes[1].parent, 1);
        assert_eq!(nodes[2].parent, 2);
        assert_eq!(nodes[2].targets, vec![(5, 1, 2.0, 3), (5, 1, 2.0, 4)]);
        assert_eq!(
            nodes[3].reached,
            vec![(5, 1000)],
            "a reached-only root stays"
        );
    }

    #[test]
    fn a_visit_is_shortened_only_from_its_own_root_and_only_by_a_shorter_path() {
        let key = 0xdead_beef_1234_5678;
        let first = Visit::new(key, 3, 9);
        assert_eq!(first, Visit::new(key, 4, 2), "the same object, however met");
        assert_ne!(first, Visit::new(key ^ (1 << 20), 3, 9));
        assert!(Visit::new(key, 3, 8).shortens(first));
        assert!(
            !Visit::new(key, 3, 9).shortens(first),
            "not by a path as long"
        );
        assert!(!Visit::new(key, 3, 10).shortens(first));
        assert!(
            !Visit::new(key, 4, 1).shortens(first),
            "not from another root"
        );
        // Depths past the cap are all as long as the cap: only a path under it shortens them.
        let deep = Visit::new(key, 0, 500);
        assert!(!Visit::new(key, 0, 100).shortens(deep));
        assert!(Visit::new(key, 0, 40).shortens(deep));
        let mut set: HashSet<Visit, BuildHasherDefault<IntHasher>> = HashSet::default();
        assert!(set.insert(first));
        assert!(!set.insert(Visit::new(key, 3, 2)));
        set.replace(Visit::new(key, 3, 2));
        assert!(
            !first.shortens(*set.get(&first).unwrap()),
            "the set keeps the shorter"
        );
    }

    #[test]
    fn searches_keep_to_their_share_of_a_core() {
        let t0 = Instant::now();
        let share = 0.05;
        let mut s = Schedule::new(share);
        assert_eq!(
            s.due(t0, MIN_TARGETS - 1, 1000),
            None,
            "too few samples to merge"
        );
        assert_eq!(
            s.due(t0, MIN_TARGETS, 1000),
            Some(Due::Full),
            "the first search starts at once, in full"
        );
        s.started(t0, 1000, false);
        let later = t0 + MIN_SEARCH_EVERY;
        assert!(
            !s.outgrown(later, 1999, false),
            "a heap that grew less than twice"
        );
        assert!(
            s.outgrown(later, 2000, false),
            "a heap that doubled during a long search ends it"
        );
        assert!(
            !s.outgrown(later - Duration::from_millis(1), 2000, false),
            "not a short one"
        );
        assert!(
            s.outgrown(t0, 1000, true),
            "a heap that began filling during it"
        );
        s.started(t0, 1000, true);
        assert!(!s.outgrown(t0, 1999, true), "not a heap that stays full");
        s.sliced(t0);
        assert_eq!(s.slice_wait(t0), Some(SLICE_REST));
        assert_eq!(s.slice_wait(t0 + SLICE_REST), None);
        // A cheap search: the next one waits the floor.
        s.ended(t0, Duration::from_millis(10), Due::Full);
        let floor = t0 + MIN_SEARCH_EVERY;
        assert_eq!(s.due(floor - Duration::from_millis(1), 100, 1000), None);
        assert_eq!(s.due(floor, 100, 1000), Some(Due::Full));
        // A costly one: the next full one waits until the average of full ones is back at
        // half the share (focused ones have the other half; see the test below).
        s.ended(t0, Duration::from_secs(1), Due::Full);
        let rest = Duration::from_secs(1).div_f64(share / 2.0);
        assert_eq!(s.due(t0 + rest, 100, 1000), Some(Due::Full));
        assert_eq!(s.next_in(t0), Some(MIN_SEARCH_EVERY), "a focused one first");
        // A heap that doubled is searched in full sooner, but not more often than the floor.
        assert_eq!(s.due(floor - Duration::from_millis(1), 100, 2000), None);
        assert_eq!(s.due(floor, 100, 2000), Some(Due::Full));
        assert_eq!(s.due(floor, 100, 1999), Some(Due::Focused));
        // A count asked for out of turn: past its own floor since the last full one ended,
        // whatever that one's rest, and never with too few samples.
        assert!(!s.recount_allowed(t0 + RECOUNT_EVERY - Duration::from_millis(1), 100));
        assert!(s.recount_allowed(t0 + RECOUNT_EVERY, 100));
        assert!(
            t0 + RECOUNT_EVERY < t0 + rest,
            "the premise: before the rest is over"
        );
        assert!(!s.recount_allowed(t0 + RECOUNT_EVERY, MIN_TARGETS - 1));
        s.ended(t0 + RECOUNT_EVERY, Duration::ZERO, Due::Focused);
        assert!(
            s.recount_allowed(t0 + RECOUNT_EVERY, 100),
            "a focused one between does not put it off"
        );
    }

    #[test]
    fn a_costly_full_search_leaves_focused_ones_their_half_of_the_share() {
        let t0 = Instant::now();
        let share = 0.05;
        let mut s = Schedule::new(share);
        // 4 s of a core for the full search of a big heap: the next full one in 160 s.
        s.started(t0, 24_000_000, false);
        s.ended(t0, Duration::from_secs(4), Due::Full);
        let full_rest = Duration::from_secs(4).div_f64(share / 2.0);
        assert_eq!(full_rest, Duration::from_secs(160));
        // Focused searches start after the floor, not after the full one's rest.
        let floor = t0 + MIN_SEARCH_EVERY;
        assert_eq!(
            s.due(floor - Duration::from_millis(1), 100, 24_000_000),
            None
        );
        assert_eq!(s.due(floor, 100, 24_000_000), Some(Due::Focused));
        assert_eq!(s.next_in(t0), Some(MIN_SEARCH_EVERY));
        // A focused search of 200 ms: the next in 8 s, so that focused ones keep to their half.
        let t1 = floor + Duration::from_millis(300);
        s.ended(t1, Duration::from_millis(200), Due::Focused);
        let focused_rest = Duration::from_millis(200).div_f64(share / 2.0);
        assert_eq!(
            s.due(
                t1 + focused_rest - Duration::from_millis(1),
                100,
                24_000_000
            ),
            None
        );
        assert_eq!(
            s.due(t1 + focused_rest, 100, 24_000_000),
            Some(Due::Focused)
        );
        // The full search's turn comes at its own rest, before a focused one then due.
        assert_eq!(s.due(t0 + full_rest, 100, 24_000_000), Some(Due::Full));
        // Over a full search's period, both kinds together keep to the share.
        let focused_searches = (full_rest.as_secs_f64() / focused_rest.as_secs_f64()).ceil();
        let cpu = 4.0 + focused_searches * 0.2;
        assert!(
            cpu / full_rest.as_secs_f64() <= share * 1.05,
            "{cpu} s of a core in {full_rest:?}"
        );
    }

    #[test]
    fn samples_are_dated_by_the_second_their_generation_began() {
        let mut b = Births::default();
        assert_eq!(b.seconds(5), 0);
        b.note(2, Duration::from_millis(300));
        b.note(3, Duration::from_millis(900)); // same second: no mark
        b.note(7, Duration::from_millis(2100));
        b.note(7, Duration::from_millis(3100)); // no new generation: no mark
        assert_eq!(b.seconds(1), 0);
        assert_eq!(b.seconds(2), 0);
        assert_eq!(b.seconds(6), 0);
        assert_eq!(b.seconds(7), 2);
        assert_eq!(b.seconds(100), 2);
    }

    /// The root credited with what several hold is the one that holds longest: a static
    /// field, then a thread, then an application frame's local, then JDK frames (method
    /// handles, lambda forms, reflection) and JNI locals; memcity's own last.
    #[test]
    fn root_order_puts_the_lasting_roots_first_and_memcity_last() {
        let mut orders = [
            RootOrder::Memcity,
            RootOrder::OtherLocal,
            RootOrder::JdkStatic,
            RootOrder::ApplicationLocal,
            RootOrder::Thread,
            RootOrder::JniGlobal,
            RootOrder::ApplicationStatic,
        ];
        orders.sort();
        assert_eq!(
            orders,
            [
                RootOrder::ApplicationStatic,
                RootOrder::Thread,
                RootOrder::ApplicationLocal,
                RootOrder::OtherLocal,
                RootOrder::JniGlobal,
                RootOrder::JdkStatic,
                RootOrder::Memcity,
            ]
        );
    }
}
