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

mod classes;
pub(crate) mod distinct;
mod finish;
mod found;
mod roots;
mod schedule;
mod traverse;
mod visit;
pub(crate) mod vthreads;

use found::Merge;
pub use found::*;
use roots::Wanted;
pub use roots::{ClassFacts, Listing};
pub use schedule::*;
use visit::{visit_key, Met, Visit};

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::ptr;
use std::time::{Duration, Instant};

use jni::sys::{jclass, jfieldID, jint, jlong, jobject, JNIEnv};

use crate::intmap::{IntHasher, IntMap};
use crate::jvmti::{Jvmti, LocalFrame};
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

/// Roots a search that ended early looks at for `Node::also`, at most: a JNI call or two each.
const MAX_ROOTS_NOTED: usize = 100_000;

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

/// Other roots named per node at most (`Node::also`): enough to say where else a holder is
/// held, few enough for a node on every path.
const MAX_ALSO_ROOTS: usize = 4;
/// Objects by identity hash (see `Search::locals`).
pub type Identities = HashSet<u32, BuildHasherDefault<IntHasher>>;

impl Search {
    /// Enumerates the roots (the one stop), reads the threads' names and the statics, and
    /// makes the targets. `None` when the JVM refused the roots' enumeration.
    /// `live_objects` sizes the search's memory up front (growing it costs more than it).
    /// `preferred`: roots to search first, in that order: where the last search found the
    /// growing objects, so that a focused search finds them again early. `scope`: which roots
    /// are searched; any but `Full` makes a focused search (see `gone_dry`). `listing`: whether
    /// it may list the roots (without, it searches the statics and threads and says what it
    /// left out), and the objects frames, JNI locals and monitors held at the last listing
    /// (its `locals`): such a root is entered only if its object is one of them
    /// (`listed_roots`).
    pub fn start(
        env: &mut Env,
        facts: &ClassFacts<'_>,
        samples: &[Sample],
        live_objects: u64,
        preferred: &[RootKey],
        scope: Scope,
        listing: Listing<'_>,
    ) -> Option<Search> {
        let started = Instant::now();
        let jni = env.jni;
        let mut search = Search::new(jni, live_objects, started);
        // SAFETY: the worker's own JNIEnv; the frame frees every local reference made here.
        let _frame = unsafe { LocalFrame::push(jni, 256) }?;
        let wanted = Wanted { scope, preferred };
        let enumerate = wanted.listing() && listing.allowed;
        if wanted.listing() && !listing.allowed {
            search.incomplete = "the GC roots were not listed (the stop to list them, predicted from the last, would pass the agent's budget for stops): locals and JNI references were not searched".into();
        }
        let marks = if enumerate {
            Some(roots::markers_env(jni)?)
        } else {
            None
        };
        let threads = env.jvmti.all_threads().ok()?;
        let (virtuals, more_virtual) = if enumerate {
            // SAFETY: the worker's own JNIEnv, on a Java thread that may run Java code.
            unsafe { vthreads::list(jni) }
        } else {
            (Vec::new(), false)
        };
        search.name_threads(env, threads.as_slice(), &virtuals, marks.as_ref());
        let enumerated = marks.map(|marks| search.enumerate_roots(env, marks, &virtuals));
        for &global in &virtuals {
            if !global.is_null() {
                jni!(jni, DeleteGlobalRef, global);
            }
        }
        search.say_listing(enumerated.as_ref(), (virtuals.len(), more_virtual));
        let mut roots = Vec::new();
        search.thread_roots(jni, threads.as_slice(), &wanted, &mut roots);
        if let Some(enumerated) = &enumerated {
            search.listed_roots(
                env,
                enumerated,
                facts,
                (listing.lasting, &wanted),
                &mut roots,
            );
        }
        search.static_roots(env, facts, &wanted, &mut roots);
        search.order_roots(roots, preferred);
        // A focused search (the caller gives it the samples born since the last search) left
        // the other roots by design: its misses judge nothing (`Found::missed_samples`).
        search.scope = scope;
        search.stopped_early = search.focused();
        search.add_targets(jni, samples);
        search.cpu = started.elapsed();
        Some(search)
    }

    /// A search with nothing listed yet, its memory sized for `live_objects`.
    fn new(jni: *mut JNIEnv, live_objects: u64, started: Instant) -> Search {
        Search {
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
            class_class: roots::find_class(jni, c"java/lang/Class"),
            thread_class: roots::find_class(jni, c"java/lang/Thread"),
            reference_class: roots::find_class(jni, c"java/lang/ref/Reference"),
        }
    }

    /// The targets: every live sample, or an even selection of them, with weights scaled to
    /// stand for all; and how many roots share each held object.
    fn add_targets(&mut self, jni: *mut JNIEnv, samples: &[Sample]) {
        let step = samples.len().div_ceil(MAX_TARGETS).max(1);
        let scale = step as f64;
        for sample in samples.iter().step_by(step) {
            let weak = sample.weak as jobject;
            // Compared with null, not resolved (see the module's head).
            let died = jni!(jni, IsSameObject, weak, std::ptr::null_mut()) == jni::sys::JNI_TRUE;
            if sample.identity == 0 || died {
                continue;
            }
            let index = self.targets.len() as u32;
            self.distinct.entry(sample.class).or_default();
            self.targets.push(Target {
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
            self.by_hash.entry(sample.identity).or_default().push(index);
            self.settled += u64::from(sample.settled);
        }
        for (_, object) in &self.roots {
            if let RootObject::Held(weak) = *object {
                if !weak.is_null() {
                    *self.root_holds.entry(weak as usize).or_default() += 1;
                }
            }
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
