//! The agent thread (`memcity-worker`): waits for GCs and requests, decides within the budget
//! whether to walk, walks, names, builds the tree and publishes it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use jni::sys::JNIEnv;
use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{
    root, snapshot::Trigger, stream_message::Kind, FieldEdge, Handshake, HeapUsage, OutOfMemory,
    OwnedEdge, PathNode, PathTarget, PathTree, Root as ProtoRoot, Snapshot, SnapshotReply,
    StreamMessage, TypeCount, WalkCost,
};
use memcity_proto::PROTOCOL_VERSION;

use crate::budget::{Budget, Decision};
use crate::canary::Canaries;
use crate::estimate::{Anchor, Estimator};
use crate::fields::FieldNames;
use crate::gc_counts::{self, GcCount, GcCounts};
use crate::jvmti::{weak, CanaryHeap, Jvmti, LocalFrame};
use crate::log::{debug, info, warning};
use crate::names;
use crate::oom::HeapGauge;
use crate::options::Classifier;
use crate::paths;
use crate::sampling::{MethodNames, Sampler};
use crate::server::Request;
use crate::tags;
use crate::tree::{self, NameSource};
use crate::walk::{self, ClassFacts, RootKind, WalkError, WalkResult};
use crate::Agent;

/// How often the worker looks for requests when no GC wakes it.
const POLL: Duration = Duration::from_millis(50);
/// Primitive type mirrors (`int.class` ... `void.class`): heap objects no class list reports.
const PRIMITIVE_MIRRORS: u64 = 9;

/// What the agent knows about every class it has tagged. Ids start at 1; 0 is "unknown".
struct ClassTable {
    names: Vec<String>,
    object_array: Vec<bool>,
    mirror_size: Vec<u64>,
    class_class: u32,
    /// Mirrors of the classes loaded at the last refresh, and their bytes.
    mirrors: u64,
    mirror_bytes: u64,
    min_mirror: u64,
    /// Whether each id has its class's name (provisional ids may wait for theirs).
    named: Vec<bool>,
    /// Whether each id is a `WeakReference` or `PhantomReference` subclass.
    weak_reference: Vec<bool>,
    /// Whether each id is the application's class rather than the JDK's (see `walk::Root`).
    application: Vec<bool>,
}

impl ClassTable {
    fn new() -> Self {
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
        self.application[index] = !crate::sampling::is_library_frame(&name);
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
    fn reserve(&mut self, len: usize) {
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

/// Undoes [`Worker::split_memcity`].
fn unsplit_memcity(counts: &mut WalkResult, moved: &[(u32, u32, u64, u64)]) {
    for &(class, id, objects, bytes) in moved {
        let (c, m) = (class as usize, id as usize);
        counts.objects[c] += objects;
        counts.bytes[c] += bytes;
        counts.objects[m] -= objects;
        counts.bytes[m] -= bytes;
    }
}

/// Focused path searches between two full ones (`Worker::start_search`).
const FOCUSED_PER_FULL: u32 = 4;

/// Class ids for the path search: the mirror's tag, tagging a class no refresh has seen yet.
fn class_ids(agent: &'static Agent) -> impl FnMut(jni::sys::jclass) -> Option<u32> {
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

struct Names<'a> {
    classes: &'a [String],
    sites: &'a [String],
    threads: &'a [String],
    /// Ids standing for memcity's share of a class (`Worker::split_memcity`).
    memcity: &'a HashMap<u32, u32>,
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

struct Worker {
    agent: &'static Agent,
    jni: *mut JNIEnv,
    classes: ClassTable,
    strings: StringInterner,
    methods: MethodNames,
    /// Index = site id; [0] unused.
    site_names: Vec<String>,
    thread_names: Vec<String>,
    chain: Vec<Classifier>,
    budget: Budget,
    estimator: Estimator,
    /// When the old generation was last marked (`canary.rs`).
    canaries: Canaries,
    epoch: u64,
    seq: u64,
    gc_seen: u64,
    /// GC count at the last snapshot.
    gc_at_snapshot: u64,
    aborted_since: u64,
    /// Walks not started since the last snapshot because their predicted stop was past
    /// `max_pause`.
    refused_since: u64,
    /// A GC happened that no walk covers yet.
    walk_pending: bool,
    /// A GC happened that no snapshot (walk or estimate) covers yet.
    estimate_pending: bool,
    /// When the first GC not covered by a snapshot was seen (see `GC_SETTLE`; not every later
    /// GC's: under a GC storm an estimate would never start).
    gc_seen_at: Instant,
    /// When the last snapshot of any kind was published, for `period` and `estimates`.
    last_snapshot: Instant,
    /// When the class table was last refreshed for an estimate.
    last_refresh: Instant,
    /// Sampling time and wall time at the last sampling-cost check.
    cost_check: (u64, Instant),
    /// Live bytes at the last snapshot (bounds how fine sampling may get).
    live_bytes: u64,
    /// Live objects at the last snapshot.
    live_objects_published: u64,
    /// The collector's own type counts (JFR), when running.
    gc_counts: Option<GcCounts>,
    /// Whether starting them was tried (once, when the heap grew too large to walk often).
    gc_counts_tried: bool,
    /// What counting costs the GC per live object: measured from its phase, else assumed.
    count_ns_per_object: f64,
    /// What the last count added to its GC's pause.
    last_count_pause_ns: u64,
    /// Per-class numbers of the last snapshots, to find what the estimate said at a counted GC.
    recent: std::collections::VecDeque<Recent>,
    /// The newest GC count, until a snapshot taken after its GC exists to reconcile it with.
    waiting_count: Option<GcCount>,
    /// Names of the walk's field numbers, per class.
    fields: FieldNames,
    /// Names of the threads tagged as the walk's first owners (`tag_threads`), in owner order.
    walk_threads: Vec<String>,
    /// When the last forced walk (`memcity snapshot --force`) started.
    last_forced: Option<Instant>,
    /// Attached to a running JVM: the class id of [`names::BEFORE_ATTACH`], and the least of
    /// its bytes seen so far (the objects allocated before the attach only ever die).
    before_attach: Option<(u32, u64)>,
    /// The path search under way (`paths.rs`), when it runs, and the last one finished, until a
    /// snapshot carries it.
    search: Option<paths::Search>,
    search_schedule: paths::Schedule,
    paths_found: Option<paths::Found>,
    /// When each tracker generation began, to date samples (`paths::Sample::born_s`).
    born_at: paths::Births,
    /// Per class with memcity's objects among its own, the id standing for memcity's share
    /// (named as the class, grouped under [`names::MEMCITY`]), and back; and which sampled
    /// threads are memcity's own.
    memcity_ids: HashMap<u32, u32>,
    memcity_of: HashMap<u32, u32>,
    memcity_threads: HashMap<u32, bool>,
    /// For focused searches: the generation the last search started at, the roots its finds
    /// were under, and the focused searches since the last full one.
    search_from_gen: u32,
    preferred_roots: Vec<String>,
    focused_since_full: u32,
    /// The Java heap's size (`oom.rs`), read after GCs and with each snapshot.
    heap: Option<HeapGauge>,
    /// For the snapshot taken when the heap ran out.
    out_of_memory: Option<OutOfMemory>,
    /// The JVM's command line (its flags decide what memcity may change: `oom.rs`, JFR).
    command_line: String,
    /// The JVM's lines memcity would cause on stdout are off (`oom::quiet_the_jvms_lines`).
    quieted: bool,
}

/// One published snapshot's per-class numbers.
struct Recent {
    unix_ms: u64,
    /// The estimate's tracker `last_gc`: births before it are in its numbers.
    last_gc: u32,
    objects: Vec<u64>,
    bytes: Vec<u64>,
    variance: Vec<(f64, f64)>,
}

/// GC counts start once a walk is predicted to stop the JVM this long (about 1 M live objects).
/// Below, walks (exact, with references) come at least every 10 s within a 2 % budget, and JFR's
/// own objects in the application's heap (some 50,000 of its metadata and parser) would stand
/// out in a small city; above, walks grow rare and the counts are what keeps estimates exact.
const GC_COUNTS_FROM_WALK: Duration = Duration::from_millis(200);
/// ...and once the heap holds this many objects, so JFR's own stay a few percent of the city
/// even where walks are slow (a loaded machine, a debug build of the agent).
const GC_COUNTS_FROM_OBJECTS: u64 = 1_000_000;

/// What became of a GC count.
enum Reconciled {
    Done,
    /// No snapshot after its GC yet: try again.
    NotYet,
    /// Too old, or nothing to reconcile with.
    Never,
}

/// How long a GC count may wait for a snapshot after its GC.
const COUNT_PATIENCE: Duration = Duration::from_secs(10);

/// Snapshots kept in `Worker::recent`: enough to cover the JFR stream's delay (about a second)
/// at two estimates a second.
const RECENT: usize = 16;
/// Time per live object a GC's count is assumed to add until one is measured: what the agent
/// measured on JDK 17 and 25 here, 4-7 ns (BENCHMARKS.md), taken at its upper end.
const DEFAULT_COUNT_NS_PER_OBJECT: f64 = 7.0;

/// Forced walks (past the budget) start at most this often.
const FORCED_WALK_EVERY: Duration = Duration::from_secs(10);

/// Field edges kept per pair of types in a snapshot: a class with more reference fields to one
/// type is rare, and the rest are counted in `Reference` anyway.
const MAX_SLOTS_PER_PAIR: usize = 16;

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

/// This process's command line, arguments joined by spaces.
fn command_line() -> String {
    std::fs::read("/proc/self/cmdline")
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

pub fn handshake(agent: &Agent) -> Handshake {
    let property = |name| agent.jvmti.system_property(name).unwrap_or_default();
    let command_line = command_line();
    Handshake {
        protocol_version: PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
        jvm_version: property("java.vm.version"),
        jvm_vendor: property("java.vm.vendor"),
        jvm_name: property("java.vm.name"),
        gc_name: gc_name(&command_line),
        command_line,
        classifiers: agent
            .options
            .classifiers
            .iter()
            .map(|c| c.name().to_string())
            .collect(),
        sampling_interval: agent.sampler.as_ref().map_or(0, |s| s.interval()),
        start_time_unix_ms: agent.start_unix_ms,
        pause_budget: agent.options.budget,
    }
}

/// The first JDK whose sampler charges allocations outside TLABs correctly (JDK-8356372).
const FIRST_EXACT_OUTSIDE_TLAB_SAMPLING: u32 = 25;

/// The feature release of `java.vm.specification.version` ("17", "1.8" is 8); `None` if
/// unreadable.
fn java_major(version: &str) -> Option<u32> {
    let version = version.strip_prefix("1.").unwrap_or(version);
    version.split('.').next()?.parse().ok()
}

/// The command line and the environment variables the launcher reads flags from.
fn jvm_flags(command_line: &str) -> String {
    let env = ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .collect::<Vec<_>>()
        .join(" ");
    format!("{command_line} {env}")
}

/// Whether every GC of this collector marks the whole heap (one generation): ZGC before its
/// generational mode (the default from JDK 23, the only mode from 24) and Shenandoah outside
/// its generational mode. Where in doubt, no: the canaries then age as for a generational
/// collector, which is only slower to confirm.
fn every_gc_marks_all(gc: &str, major: Option<u32>, flags: &str) -> bool {
    let last = |on: &str, off: &str| match (flags.rfind(on), flags.rfind(off)) {
        (Some(a), Some(b)) => Some(a > b),
        (a, b) => a.map(|_| true).or(b.map(|_| false)),
    };
    match (gc, major) {
        ("Z", Some(m)) if m < 21 => true,
        ("Z", Some(m)) if m < 23 => last("-XX:+ZGenerational", "-XX:-ZGenerational") != Some(true),
        ("Z", Some(23)) => last("-XX:+ZGenerational", "-XX:-ZGenerational") == Some(false),
        ("Shenandoah", Some(_)) => !flags.contains("ShenandoahGCMode=generational"),
        _ => false,
    }
}

/// The collector, from the flags that choose it (command line, then the environment variables
/// the launcher reads). Without a flag the JVM picks G1 on server-class machines.
fn gc_name(command_line: &str) -> String {
    let flags = jvm_flags(command_line);
    let chosen = [
        ("-XX:+UseZGC", "Z"),
        ("-XX:+UseShenandoahGC", "Shenandoah"),
        ("-XX:+UseParallelGC", "Parallel"),
        ("-XX:+UseSerialGC", "Serial"),
        ("-XX:+UseEpsilonGC", "Epsilon"),
        ("-XX:+UseG1GC", "G1"),
    ]
    .iter()
    .filter_map(|(flag, name)| flags.rfind(flag).map(|at| (at, *name)))
    .max_by_key(|(at, _)| *at);
    match chosen {
        Some((_, name)) => name.to_string(),
        None => "G1 (default)".to_string(),
    }
}

/// The worker's main loop.
///
/// # Safety
/// `jni` must be the calling agent thread's JNIEnv.
pub unsafe fn run(agent: &'static Agent, jni: *mut JNIEnv) {
    let Some(requests) = agent
        .requests_rx
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    else {
        return;
    };
    let now = Instant::now();
    let mut worker = Worker {
        agent,
        jni,
        classes: ClassTable::new(),
        strings: StringInterner::new(),
        methods: MethodNames::new(),
        site_names: vec![names::SITE_NOT_RECORDED.to_string()],
        thread_names: vec![String::new()],
        chain: agent.options.classifiers.clone(),
        budget: Budget::new(
            agent.options.budget,
            agent.options.min_interval,
            agent.options.max_pause,
            agent.start,
        ),
        estimator: Estimator::default(),
        canaries: Canaries::default(),
        epoch: 0,
        seq: 0,
        gc_seen: 0,
        gc_at_snapshot: 0,
        aborted_since: 0,
        refused_since: 0,
        walk_pending: false,
        estimate_pending: false,
        gc_seen_at: now,
        last_snapshot: now,
        last_refresh: now,
        cost_check: (0, now),
        fields: FieldNames::default(),
        walk_threads: Vec::new(),
        last_forced: None,
        before_attach: None,
        live_bytes: 0,
        live_objects_published: 0,
        gc_counts: None,
        gc_counts_tried: false,
        count_ns_per_object: DEFAULT_COUNT_NS_PER_OBJECT,
        last_count_pause_ns: 0,
        recent: std::collections::VecDeque::new(),
        waiting_count: None,
        search: None,
        search_schedule: paths::Schedule::new(agent.options.paths.unwrap_or(1.0)),
        paths_found: None,
        born_at: paths::Births::default(),
        search_from_gen: 0,
        preferred_roots: Vec::new(),
        focused_since_full: 0,
        memcity_ids: HashMap::new(),
        memcity_of: HashMap::new(),
        memcity_threads: HashMap::new(),
        // SAFETY: `jni` is this thread's JNIEnv.
        heap: unsafe { HeapGauge::new(jni) },
        out_of_memory: None,
        command_line: String::new(),
        quieted: false,
    };
    let major = java_major(
        &agent
            .jvmti
            // A VM property, so JVMTI has it (`java.specification.version` is the library's).
            .system_property("java.vm.specification.version")
            .unwrap_or_default(),
    );
    worker.command_line = command_line();
    let command_line = worker.command_line.clone();
    let gc = gc_name(&command_line);
    if every_gc_marks_all(&gc, major, &jvm_flags(&command_line)) {
        worker.canaries.every_gc_marks_all();
        debug!("{gc}: every GC marks the whole heap; canaries are let go at once");
    }
    if major.is_some_and(|m| m < FIRST_EXACT_OUTSIDE_TLAB_SAMPLING) {
        worker.estimator.set_outside_tlab_bias(true);
        debug!(
            "JDK {}: estimates of objects over {} KB carry the sampler's outside-TLAB bias in their error",
            major.unwrap_or(0),
            crate::estimate::OUTSIDE_TLAB_RISK_BYTES / 1024,
        );
    }
    info!(
        "started: classifiers {}, sampling {}, budget {}% of wall time, estimates {}",
        worker
            .chain
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(":"),
        agent
            .sampler
            .as_ref()
            .map_or("off".to_string(), |s| format!(
                "every {} bytes",
                s.interval()
            )),
        agent.options.budget * 100.0,
        match (worker.can_estimate(), agent.options.estimates) {
            (true, Some(every)) => format!("at GCs, at most every {} ms", every.as_millis()),
            _ => "off".to_string(),
        }
    );
    // The start snapshot is the first anchor: at VM start the heap is small, so the walk is
    // short. Attached to a running JVM, the heap may be anything: walk only if it fits.
    worker.sync_site_recording();
    if agent.attached {
        let id = agent.next_class.fetch_add(1, Ordering::AcqRel);
        worker.classes.reserve(id as usize + 1);
        worker.classes.names[id as usize] = names::BEFORE_ATTACH.to_string();
        worker.classes.named[id as usize] = true;
        worker.before_attach = Some((id, u64::MAX));
    }
    let predicted = worker.predicted_walk();
    if !agent.attached || worker.budget.fits(predicted) {
        let _ = worker.walk_snapshot(Trigger::Start, agent.options.max_pause);
    } else {
        warning!(
            "attached to a heap too large to walk now (about {} ms predicted, max_pause {} ms): estimates count what is allocated from now on; the objects allocated before the attach are counted once a walk fits (memcity snapshot --force walks now)",
            predicted.as_millis(),
            agent.options.max_pause.as_millis()
        );
    }
    loop {
        if agent.stopping.load(Ordering::Acquire) || !agent.active.load(Ordering::Acquire) {
            break;
        }
        // Requests first: a viewer waiting for an answer beats a GC-driven walk.
        while let Ok(request) = requests.try_recv() {
            match request {
                Request::Snapshot { force, reply } => {
                    let _ = reply.send(worker.requested(force));
                }
                Request::Classifiers(chain) => {
                    info!(
                        "classifiers changed to {}",
                        chain.iter().map(|c| c.name()).collect::<Vec<_>>().join(":")
                    );
                    worker.chain = chain;
                    worker.sync_site_recording();
                }
            }
        }
        if agent.oom_state.load(Ordering::Acquire) == crate::oom::OOM_ASKED {
            worker.out_of_memory();
        }
        worker.take_gc_counts();
        let gcs = agent.gc_finished.load(Ordering::Acquire);
        if gcs != worker.gc_seen {
            worker.gc_seen = gcs;
            worker.after_gcs(gcs);
            if !worker.estimate_pending {
                worker.gc_seen_at = Instant::now();
            }
            worker.walk_pending = true;
            worker.estimate_pending = true;
        }
        worker.adapt_sampling();
        if let Some(sampler) = &agent.sampler {
            worker
                .born_at
                .note(sampler.tracker.generation(), agent.start.elapsed());
        }
        let wait = worker.step().min(worker.search_step());
        if let Ok(guard) = agent.monitor.enter() {
            // Re-check under the monitor so a GC that finished meanwhile is not slept through.
            if agent.gc_finished.load(Ordering::Acquire) == worker.gc_seen
                && !agent.stopping.load(Ordering::Acquire)
            {
                let _ = guard.wait(wait.as_millis().max(1) as i64);
            }
        }
    }
    worker.end_search();
    if agent.active.load(Ordering::Acquire) {
        worker.final_snapshot();
    }
    if let Some(sampler) = &agent.sampler {
        log_sampling_cost(sampler);
    }
    if agent.detaching.load(Ordering::SeqCst) {
        worker.release();
    }
    debug!("worker stopped after {} snapshots", worker.seq);
}

/// Where the sampling callback's time went, per sample: the measurement behind `sampling_cost`.
fn log_sampling_cost(sampler: &Sampler) {
    let (samples, total) = sampler.cost();
    if samples == 0 {
        return;
    }
    let c = sampler.step_costs();
    let per = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) / samples;
    info!(
        "sampling: {samples} samples, {:.1} ms in all, {} ns each (stack {}, site {}, thread {}, class {}, slot and reference {})",
        total as f64 / 1e6,
        total / samples,
        per(&c.stack),
        per(&c.site),
        per(&c.thread),
        per(&c.class),
        per(&c.track)
    );
}

/// Why an exact walk did not happen.
enum WalkFailure {
    Aborted,
    /// The VM is shutting down, or JVMTI failed (logged).
    Failed,
}

impl WalkFailure {
    fn message(self) -> String {
        match self {
            WalkFailure::Aborted => {
                "the walk ran past its limit and was aborted (the heap grew faster than predicted); retry, or raise max_pause=".to_string()
            }
            WalkFailure::Failed => "the walk failed (see the JVM's stderr)".to_string(),
        }
    }
}

/// A walk requested with `force` is aborted only past this, or twice `max_pause` if larger.
const FORCED_WALK_LIMIT: Duration = Duration::from_secs(30);
/// The least average object size assumed when only the heap's used bytes are known: Java
/// objects average 30-60 bytes, so this overestimates a count (and a walk's stop), never the
/// other way.
const BYTES_PER_OBJECT_AT_LEAST: u64 = 32;

/// How long an estimate waits after a GC: a stop-the-world collector has cleared the weak
/// references of what it freed by GarbageCollectionFinish, but ZGC and Shenandoah post that
/// event at each pause of a cycle and clear weak references concurrently between them.
const GC_SETTLE: Duration = Duration::from_millis(50);
/// Longest an estimate goes without refreshing the class table (to count class mirrors) when
/// no new class was sampled.
const ESTIMATE_REFRESH: Duration = Duration::from_secs(10);
/// How often the sampling cost is checked against `sampling_cost`.
const COST_CHECK: Duration = Duration::from_secs(1);

impl Worker {
    fn sampler(&self) -> Option<&'static Sampler> {
        self.agent.sampler.as_ref()
    }

    /// Samples record their site only while the chain has a site level (see `Sampler`).
    fn sync_site_recording(&self) {
        if let Some(sampler) = self.sampler() {
            sampler.record_sites(self.chain.contains(&Classifier::Site));
        }
    }

    /// Estimates need samples (their deaths come from their weak references).
    fn can_estimate(&self) -> bool {
        self.agent.sampler.is_some()
    }

    /// Estimates every class now from the surviving samples: asks the samples' weak references
    /// which objects the GCs freed (unless `poll` is false), books those deaths, and deletes the
    /// freed references.
    fn estimate_now(&mut self, poll: bool) -> WalkResult {
        let Some(sampler) = self.sampler() else {
            return WalkResult::default();
        };
        let jni = self.jni;
        if poll {
            // Canaries first (see `Canaries::poll`).
            let confirmed = self.canaries.poll(&mut CanaryHeap(jni));
            self.estimator.set_confirmed(confirmed);
            // SAFETY: `jni` is the worker thread's JNIEnv; the tracker's references are live
            // until it hands them back with `take_released`.
            sampler
                .tracker
                .poll_deaths(|reference| unsafe { weak::cleared(jni, reference) });
        }
        let counts = self
            .estimator
            .estimate(&sampler.tracker, self.classes.names.len());
        for reference in sampler.tracker.take_released() {
            // SAFETY: as above; the tracker no longer holds it.
            unsafe { weak::delete(jni, reference) };
        }
        counts
    }

    /// GCs have finished: ages the canaries that tell when the old generation was marked (only
    /// estimates need them).
    fn after_gcs(&mut self, gcs: u64) {
        let Some(sampler) = self.sampler() else {
            return;
        };
        if let Some((used, max)) = self.read_heap() {
            if !self.quieted && used as f64 >= crate::oom::QUIET_SHARE * max as f64 {
                self.quieted = true;
                // SAFETY: the worker's own JNIEnv.
                unsafe {
                    crate::oom::quiet_the_jvms_lines(self.agent, self.jni, &self.command_line)
                };
            }
        }
        if self.heap_is_tight() {
            // A canary is a Java object: with the heap nearly full it would wait for a GC with
            // the application's allocations, or be the one that fails (`oom.rs`). Confirmation
            // waits for the next canary made with room.
            self.stop_gc_counts_when_tight();
            return;
        }
        let generation = sampler.tracker.generation();
        self.canaries
            .after_gcs(&mut CanaryHeap(self.jni), gcs, generation);
    }

    /// At detach: hands back what the session holds in the JVM beyond its JVMTI environment
    /// (which the detach disposes, tags and all): the samples', canaries' and class cache's
    /// weak references, and the JFR stream of GC counts.
    fn release(&mut self) {
        self.canaries.release(&mut CanaryHeap(self.jni));
        if let Some(mut counts) = self.gc_counts.take() {
            // SAFETY: the worker's own JNIEnv.
            if let Ok(mut env) = unsafe { jni::JNIEnv::from_raw(self.jni) } {
                if let Err(e) = counts.stop(&mut env) {
                    warning!("detach: {e}");
                }
            }
        }
        if let Some(sampler) = self.sampler() {
            let jni = self.jni;
            // SAFETY: the worker's JNIEnv; no sample is tracked any more (detaching), so each
            // reference is deleted once.
            sampler.release_references(|reference| unsafe { weak::delete(jni, reference) });
        }
    }

    /// Tags the live samples the walk would not recognize otherwise (the walk sees objects only
    /// through their tags): the ones taken since the last walk. A walked object keeps the bits
    /// the walks set (epoch, owner); a class mirror keeps its class tag and stops being a sample.
    fn tag_samples(&self) {
        let Some(sampler) = self.sampler() else {
            return;
        };
        let jvmti = self.agent.jvmti;
        sampler.tracker.for_untagged(|slot, reference| {
            let object = reference as jni::sys::jobject;
            // A cleared reference is an invalid object to JVMTI: the sample died.
            match jvmti.tag(object) {
                Ok(tag) => match tags::with_sample(tag, slot) {
                    Some(tag) => jvmti.set_tag(object, tag).is_ok(),
                    None => false,
                },
                Err(_) => false,
            }
        });
    }

    fn refresh_classes(&mut self) {
        let jvmti = self.agent.jvmti;
        self.classes
            .refresh(&jvmti, self.jni, &self.agent.next_class, self.sampler());
        self.last_refresh = Instant::now();
    }

    /// Live objects now: the estimate when there is one, else the last walk's count. Attached
    /// to a running JVM and not yet walked, the samples know nothing of the objects allocated
    /// before: then the heap's used bytes bound the count too (at `BYTES_PER_OBJECT_AT_LEAST`),
    /// so that a walk of a large heap is predicted large and not started, not aborted.
    fn live_objects(&mut self) -> u64 {
        let counted = if self.can_estimate() {
            self.estimate_now(true).objects.iter().sum()
        } else {
            self.estimator.anchor().map_or(0, |a| a.total_objects)
        };
        if self.agent.attached && self.estimator.anchor().is_none() {
            let used = self.heap_used().unwrap_or(0);
            return counted.max(used / BYTES_PER_OBJECT_AT_LEAST);
        }
        counted
    }

    /// The heap's used bytes (`Runtime.totalMemory() - freeMemory()`), garbage included.
    fn heap_used(&self) -> Option<u64> {
        self.read_heap().map(|(used, _)| used)
    }

    /// `(used, max)` bytes of the Java heap now (see [`HeapGauge`]).
    fn read_heap(&self) -> Option<(u64, u64)> {
        // SAFETY: the gauge was made on this thread with this JNIEnv.
        self.heap.as_ref().and_then(|g| unsafe { g.read(self.jni) })
    }

    /// The heap is nearly full (after the last reading), or has run out: the worker makes no
    /// Java objects then.
    fn heap_is_tight(&self) -> bool {
        self.agent.oom_state.load(Ordering::Acquire) != crate::oom::OOM_NONE
            || self.heap.as_ref().is_some_and(HeapGauge::tight)
    }

    /// The Java heap ran out (`oom.rs`): the failing thread waits while this takes the heap's
    /// last snapshot. The path search under way, or a new one, runs to the deadline without
    /// rests (the paths at the moment of the error are the answer the user needs most); then
    /// an estimate carries its paths and the error.
    fn out_of_memory(&mut self) {
        let request = self
            .agent
            .oom
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(request) = request else {
            return;
        };
        let deadline = request.at + request.wait.mul_f64(crate::oom::SEARCH_SHARE_OF_WAIT);
        let mut search_finished = false;
        if let (Some(sampler), Some(_)) = (self.sampler(), self.agent.options.paths) {
            if self.search.is_none() {
                self.refresh_classes();
                self.search = self.start_search(sampler);
            }
            let mut env = self.search_env();
            if let Some(mut search) = self.search.take() {
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        search.interrupt(format!(
                            "the search stopped at the OutOfMemoryError's deadline (oom_wait={} ms)",
                            request.wait.as_millis()
                        ));
                        break;
                    }
                    if search.run(&mut env, left.min(paths::SLICE * 10)) {
                        search_finished = true;
                        break;
                    }
                }
                let found = search.finish(&mut env);
                self.search_schedule.ended(Instant::now(), found.cpu);
                // Threads failing to allocate force full GCs one after another, and each JNI
                // read waits for them: a search at the error may reach nothing. Then the last
                // finished search's paths stay the newest, rather than an empty tree.
                let keep = search_finished || found.found > 0;
                debug!(
                    "path search at the OutOfMemoryError: {} of {} samples reached through {} objects in {} ms",
                    found.found,
                    found.targets,
                    found.visited,
                    found.cpu.as_millis()
                );
                if keep {
                    self.preferred_roots = found.top_roots.clone();
                    self.paths_found = Some(found);
                }
            }
        }
        self.out_of_memory = Some(OutOfMemory {
            message: request.message,
            thread: request.thread,
            search_finished,
            time_ms: request.at.duration_since(self.agent.start).as_millis() as u64,
        });
        self.estimate_snapshot(Trigger::OutOfMemory);
        self.agent
            .oom_state
            .store(crate::oom::OOM_DONE, Ordering::Release);
    }

    /// What an exact walk would stop the JVM now.
    fn predicted_walk(&mut self) -> Duration {
        let objects = self.live_objects();
        self.budget.predict(objects)
    }

    /// One turn of the loop after requests: walk if a walk is due and fits, else estimate if one
    /// is due. Returns how long to sleep at most.
    fn step(&mut self) -> Duration {
        let mut wait = POLL;
        let now = Instant::now();
        let quiet_too_long = self
            .agent
            .options
            .period
            .is_some_and(|period| self.last_snapshot.elapsed() >= period);
        let trigger = if self.estimate_pending || self.walk_pending {
            Trigger::Gc
        } else {
            Trigger::Periodic
        };
        if self.walk_pending || quiet_too_long {
            let predicted = self.predicted_walk();
            if !self.budget.fits(predicted) {
                if self.walk_pending {
                    self.refused_since += 1;
                    debug!(
                        "no walk: predicted {} ms, max_pause {} ms",
                        predicted.as_millis(),
                        self.agent.options.max_pause.as_millis()
                    );
                }
                self.walk_pending = false;
            } else {
                match self.budget.decide(now, predicted) {
                    Decision::Walk => {
                        let limit = self.budget.abort_after(predicted);
                        if self.walk_snapshot(trigger, limit).is_ok() {
                            return wait;
                        }
                    }
                    Decision::WaitUntil(when) => {
                        wait = wait.min(when.saturating_duration_since(now));
                    }
                }
            }
        }
        let Some(every) = self.agent.options.estimates else {
            return wait;
        };
        if !self.can_estimate() || !(self.estimate_pending || quiet_too_long) {
            return wait;
        }
        let ready = (self.last_snapshot + every).max(self.gc_seen_at + GC_SETTLE);
        if ready <= now {
            self.estimate_snapshot(trigger);
        } else {
            wait = wait.min(ready - now);
        }
        wait
    }

    /// A snapshot asked for over gRPC: an exact walk when it fits `max_pause` and the budget,
    /// or when forced.
    fn requested(&mut self, force: bool) -> Result<SnapshotReply, String> {
        let predicted = self.predicted_walk();
        let max_pause = self.agent.options.max_pause;
        if !force {
            if !self.budget.fits(predicted) {
                return Err(format!(
                    "an exact walk would stop the application for about {} ms ({} live objects at {:.0} ns each), past max_pause={} ms; estimates continue at every GC. Pass --force to walk anyway",
                    predicted.as_millis(),
                    self.live_objects(),
                    self.budget.ns_per_object(),
                    max_pause.as_millis()
                ));
            }
            let wait = self.budget.wait_for_credit(Instant::now(), predicted);
            if !wait.is_zero() {
                return Err(format!(
                    "the pause budget ({}% of wall time) has not yet earned this walk's predicted {} ms; retry in {:.1} s, or pass --force",
                    self.agent.options.budget * 100.0,
                    predicted.as_millis(),
                    wait.as_secs_f64()
                ));
            }
        }
        if force {
            // Forced walks pass the budget by design; this keeps any client (or a script in a
            // loop) from stopping the application over and over with them.
            if let Some(since) = self.last_forced.map(|t| t.elapsed()) {
                if since < FORCED_WALK_EVERY {
                    return Err(format!(
                        "a forced walk ran {:.1} s ago: forced walks are limited to one every {} s so that no client can keep the application stopped; retry in {:.1} s",
                        since.as_secs_f64(),
                        FORCED_WALK_EVERY.as_secs(),
                        (FORCED_WALK_EVERY - since).as_secs_f64()
                    ));
                }
            }
            self.last_forced = Some(Instant::now());
        }
        let limit = if force {
            (max_pause * 2).max(FORCED_WALK_LIMIT)
        } else {
            max_pause
        };
        self.walk_snapshot(Trigger::Request, limit)
            .map_err(WalkFailure::message)
    }

    /// The last snapshot, at VM death: an estimate from the last walk and the samples since. Not
    /// a walk: by VMDeath the application's threads are gone and with them the roots that held
    /// its data (a walk there found the JDK's start-up heap), and the exit need not wait for one.
    fn final_snapshot(&mut self) {
        if self.can_estimate() && self.agent.options.estimates.is_some() {
            self.estimate_snapshot(Trigger::End);
        }
    }

    /// Walks the heap and publishes the exact snapshot; the walk becomes the estimates' anchor.
    fn walk_snapshot(
        &mut self,
        trigger: Trigger,
        abort_after: Duration,
    ) -> Result<SnapshotReply, WalkFailure> {
        if trigger != Trigger::Start {
            crate::failpoint(crate::Failpoint::Worker);
        }
        let jvmti = self.agent.jvmti;
        let predicted = self.predicted_walk();
        self.refresh_classes();
        self.epoch = tags::next_epoch(self.epoch);
        let tracker = self.sampler().map(|s| &s.tracker);
        // The walk's generation: samples born from here on and not reached were garbage at the
        // walk (see estimate.rs).
        let generation = tracker.map_or(0, |t| t.advance());
        self.tag_samples();
        let threads = self.tag_threads();
        let facts = ClassFacts {
            object_array: &self.classes.object_array,
            class_class: self.classes.class_class,
            weak_reference: &self.classes.weak_reference,
            next_class: &self.agent.next_class,
            tracker,
            application: &self.classes.application,
            threads,
        };
        let outcome = walk::walk(
            &jvmti,
            facts,
            self.classes.names.len(),
            self.epoch,
            abort_after,
        );
        if let Some(t) = tracker {
            t.advance();
        }
        let now = Instant::now();
        let mut result = match outcome {
            Ok(result) => {
                self.budget.record(result.pause, result.visited, now);
                result
            }
            Err(WalkError::Aborted { pause, visited }) => {
                self.budget.record(pause, visited, now);
                self.aborted_since += 1;
                self.walk_pending = false;
                warning!(
                    "heap walk aborted after {} ms (limit {} ms, predicted {} ms): the heap grew faster than predicted; estimates continue",
                    pause.as_millis(),
                    abort_after.as_millis(),
                    predicted.as_millis()
                );
                return Err(WalkFailure::Aborted);
            }
            Err(WalkError::Jvmti(e)) => {
                self.walk_pending = false;
                if e.code != crate::jvmti::ERR_WRONG_PHASE {
                    warning!("heap walk failed: {e}");
                }
                return Err(WalkFailure::Failed);
            }
            Err(WalkError::Panicked) => {
                self.agent.disable("internal error during the heap walk");
                return Err(WalkFailure::Failed);
            }
        };
        if let Some(t) = tracker {
            for &slot in &result.seen_slots {
                t.mark_seen(slot, generation);
            }
        }
        if result.objects.len() > result.first_new_class as usize {
            // Keep the ids the walk handed out, then name their classes (their mirrors are counted
            // from the next walk on).
            self.classes.reserve(result.objects.len());
            self.refresh_classes();
        }
        self.count_mirrors(&mut result);
        let seq = self.seq;
        self.estimator.set_anchor(Anchor {
            seq,
            generation,
            objects: result.objects.clone(),
            bytes: result.bytes.clone(),
            references: result.references.clone(),
            total_objects: result.objects.iter().sum(),
        });
        let pause = result.pause;
        self.publish(trigger, &mut result, predicted, None);
        Ok(SnapshotReply {
            seq,
            pause_ns: pause.as_nanos() as u64,
            predicted_pause_ns: predicted.as_nanos() as u64,
        })
    }

    /// Estimates the heap from the surviving samples and publishes it. No stop.
    fn estimate_snapshot(&mut self, trigger: Trigger) {
        if self.sampler().is_none() {
            return;
        }
        let new_classes =
            self.agent.next_class.load(Ordering::Acquire) as usize > self.classes.names.len();
        if new_classes || self.last_refresh.elapsed() >= ESTIMATE_REFRESH {
            self.refresh_classes();
        }
        // At VM death the application's threads have ended: what their stacks held (a leak in
        // a local of `main`) is garbage now, and a GC finishing during the shutdown clears it.
        // The last snapshot is the application's last state, so it books no deaths the
        // shutdown may have caused: the samples stand as the last GC-time poll left them.
        let mut counts = self.estimate_now(trigger != Trigger::End);
        self.classes.reserve(counts.objects.len());
        self.count_mirrors(&mut counts);
        self.add_before_attach(&mut counts);
        if let Some(v) = counts.variance.get_mut(self.classes.class_class as usize) {
            *v = (0.0, 0.0); // counted from the class list, not estimated
        }
        let predicted = self.budget.predict(counts.objects.iter().sum());
        let anchor = self.estimator.anchor().map(|a| a.seq);
        self.publish(trigger, &mut counts, predicted, Some(anchor));
    }

    /// Moves memcity's own objects under [`names::MEMCITY`]: of each class, the share of its
    /// live samples' weight that memcity's threads allocated (its JFR stream and helper class,
    /// the worker's canaries) goes to an id of its own, named as the class and grouped under
    /// `(memcity)`, so a type's total over both groups is still the JVM's count. Returns what
    /// moved, `(class, id, objects, bytes)`, for [`unsplit_memcity`].
    fn split_memcity(&mut self, counts: &mut WalkResult) -> Vec<(u32, u32, u64, u64)> {
        let Some(sampler) = self.sampler() else {
            return Vec::new();
        };
        let mut weights: HashMap<u32, (f64, f64)> = HashMap::new();
        let threads = &mut self.memcity_threads;
        sampler.tracker.for_each_live(|sample, _| {
            let ours = *threads.entry(sample.thread).or_insert_with(|| {
                sampler
                    .thread_name(sample.thread)
                    .is_some_and(|n| paths::is_memcity_thread(&n))
            });
            let w = weights.entry(sample.class).or_default();
            w.0 += sample.weight;
            if ours {
                w.1 += sample.weight;
            }
        });
        // JFR's own objects are memcity's whole once memcity started its stream, when that is
        // the JVM's only JFR: at the default interval they carry a handful of samples, and a
        // type of them that got none would otherwise count as the application's growth.
        if self.gc_counts_tried && !gc_counts::application_uses_jfr(&self.command_line) {
            for (class, name) in self.classes.names.iter().enumerate() {
                if name.starts_with("jdk.jfr.") && counts.objects.get(class).is_some_and(|&n| n > 0)
                {
                    weights.insert(class as u32, (1.0, 1.0));
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

    /// Attached and not yet walked, the objects allocated before the attach were never sampled:
    /// rather than drop them, an estimate shows them as one group ([`names::BEFORE_ATTACH`]),
    /// sized by the heap's used bytes that the estimate does not explain (at the low end of the
    /// estimate's range). That is an upper bound (used bytes include garbage not yet collected,
    /// and the estimate may be higher than its low end), and it only ever shrinks, since
    /// no object joins the group; its objects are its bytes at the estimate's average object
    /// size. Its stated error is the whole value: the group says where memory is unaccounted
    /// for, not what it is. The first walk counts these objects by class, and the group empties.
    fn add_before_attach(&mut self, counts: &mut WalkResult) {
        let Some((id, least)) = self.before_attach else {
            return;
        };
        let index = id as usize;
        if self.estimator.anchor().is_some() || index >= counts.objects.len() {
            return;
        }
        let Some(used) = self.heap_used() else { return };
        let (objects, bytes): (u64, u64) = (counts.objects.iter().sum(), counts.bytes.iter().sum());
        // What the samples explain is itself an estimate: subtract the low end of its 95 %
        // range, not its middle. Subtracting the middle, one high estimate (a few samples on a
        // coarse interval) would exceed the used bytes, and since the group only ever shrinks,
        // it would vanish for good while the objects are still there.
        // The same for what no old marking has confirmed: it may be garbage the used bytes hold.
        let sigma_bytes: f64 = counts.variance.iter().map(|v| v.1).sum::<f64>().sqrt();
        let unconfirmed: f64 = counts.unconfirmed.iter().map(|u| u.1).sum();
        let explained = (bytes as f64 - unconfirmed - 1.96 * sigma_bytes).max(0.0) as u64;
        let rest = used.saturating_sub(explained).min(least);
        self.before_attach = Some((id, rest));
        let average = bytes
            .checked_div(objects)
            .map_or(BYTES_PER_OBJECT_AT_LEAST, |a| a.max(1));
        counts.objects[index] = rest / average;
        counts.bytes[index] = rest;
        if counts.variance.len() <= index {
            counts.variance.resize(index + 1, (0.0, 0.0));
        }
        // A 95 % half-width of the whole value (1.96 sigma).
        let sigma = |v: u64| (v as f64 / 1.96).powi(2);
        counts.variance[index] = (sigma(counts.objects[index]), sigma(rest));
    }

    /// Class mirrors are not visited through a CLASS reference; count them from the class list
    /// (plus the primitive mirrors, which no list reports).
    fn count_mirrors(&self, counts: &mut WalkResult) {
        let class_class = self.classes.class_class as usize;
        if class_class != 0 && class_class < counts.objects.len() {
            counts.objects[class_class] = self.classes.mirrors + PRIMITIVE_MIRRORS;
            counts.bytes[class_class] =
                self.classes.mirror_bytes + PRIMITIVE_MIRRORS * self.classes.min_mirror;
        }
    }

    /// Builds the tree of `counts` and publishes the snapshot. `estimate_of`: `None` for a
    /// walk, `Some(anchor seq)` for an estimate.
    fn publish(
        &mut self,
        trigger: Trigger,
        counts: &mut WalkResult,
        predicted: Duration,
        estimate_of: Option<Option<u64>>,
    ) {
        self.resolve_names();
        let moved = self.split_memcity(counts);
        let built = tree::build(
            counts,
            &self.chain,
            &Names {
                classes: &self.classes.names,
                sites: &self.site_names,
                threads: &self.thread_names,
                memcity: &self.memcity_of,
            },
            &mut self.strings,
        );
        // The published tree has memcity's group; the numbers kept for estimates and GC counts
        // are per class, as the JVM counts them.
        unsplit_memcity(counts, &moved);
        let now = Instant::now();
        let gc_now = self.agent.gc_finished.load(Ordering::Acquire);
        let skipped = gc_now
            .saturating_sub(self.gc_at_snapshot)
            .saturating_sub(u64::from(trigger == Trigger::Gc));
        self.gc_at_snapshot = gc_now;
        self.last_snapshot = now;
        self.estimate_pending = false;
        if estimate_of.is_none() {
            self.walk_pending = false;
        }
        let sampler = self.sampler();
        let (samples, sampling_ns) = sampler.map_or((0, 0), |s| s.cost());
        let (agent_bytes, mut jvm_bytes) = sampler.map_or((0, 0), |s| s.tracker.memory());
        let (held, let_go) = self.canaries.held();
        jvm_bytes += (held + let_go) as u64 * crate::canary::JVM_BYTES_PER_CANARY;
        let interval = sampler.map_or(0, |s| s.current_interval());
        let mut exactness = built.exactness;
        if let Some(anchor) = estimate_of {
            exactness.anchor_seq = anchor.unwrap_or(0);
            exactness.anchored = anchor.is_some();
            // A type kept since the anchor with B bytes goes unsampled with chance exp(-B / I).
            exactness.detection_bytes = interval.saturating_mul(3);
            let (types, at_ms) = self.estimator.gc_counted();
            exactness.gc_counted_types = types;
            exactness.gc_count_time_ms = at_ms.saturating_sub(self.agent.start_unix_ms);
        }
        let (fields, roots, owned) = if estimate_of.is_none() {
            if counts.unowned_roots > 0 {
                debug!(
                    "{} roots met after the walk's {} owner numbers ran out",
                    counts.unowned_roots,
                    tags::MAX_OWNER
                );
            }
            self.graph(counts)
        } else {
            Default::default()
        };
        self.remember(counts);
        self.switch_gc_counts(built.root.objects);
        self.live_bytes = built.root.bytes;
        self.live_objects_published = built.root.objects;
        let snapshot = Snapshot {
            seq: self.seq,
            time_ms: self.agent.start.elapsed().as_millis() as u64,
            gc_count: gc_now,
            trigger: trigger as i32,
            classifiers: self.chain.iter().map(|c| c.name().to_string()).collect(),
            root: Some(built.root),
            references: built.references,
            cost: Some(WalkCost {
                pause_ns: counts.pause.as_nanos() as u64,
                objects_visited: counts.visited,
                skipped_gcs: skipped,
                aborted_walks: std::mem::take(&mut self.aborted_since),
                total_pause_ns: self.budget.spent().as_nanos() as u64,
                wall_ns: self.budget.wall(now).as_nanos() as u64,
                dropped_snapshots: self.agent.hub.dropped_total(),
                samples,
                sampling_ns,
                sampling_interval: interval,
                tracked_samples: sampler.map_or(0, |s| s.tracker.in_use()),
                untracked_samples: sampler.map_or(0, |s| s.tracker.untracked()),
                tracking_agent_bytes: agent_bytes,
                tracking_jvm_bytes: jvm_bytes,
                predicted_walk_ns: predicted.as_nanos() as u64,
                refused_walks: std::mem::take(&mut self.refused_since),
                gc_counts_on: self.gc_counts.as_ref().is_some_and(GcCounts::enabled),
                gc_count_pause_ns: self.last_count_pause_ns,
            }),
            exactness: Some(exactness),
            fields,
            roots,
            owned,
            paths: self
                .paths_found
                .take()
                .map(|found| self.paths_proto(&found)),
            heap: self.read_heap().map(|(used_bytes, max_bytes)| HeapUsage {
                used_bytes,
                max_bytes,
            }),
            out_of_memory: self.out_of_memory.take(),
        };
        if let Some(table) = self.strings.take_new() {
            self.agent.publish(StreamMessage {
                kind: Some(Kind::Strings(table)),
            });
        }
        debug!(
            "snapshot {} ({:?}, {}): {} objects, pause {} ms",
            self.seq,
            trigger,
            if estimate_of.is_some() {
                "estimated"
            } else {
                "walk"
            },
            snapshot.root.as_ref().map_or(0, |r| r.objects),
            counts.pause.as_millis()
        );
        self.agent.publish(StreamMessage {
            kind: Some(Kind::Snapshot(snapshot)),
        });
        self.agent.snapshots.fetch_add(1, Ordering::Relaxed);
        self.seq += 1;
        // After publishing: starting JFR takes the worker a moment.
        if predicted >= GC_COUNTS_FROM_WALK && self.live_objects_published >= GC_COUNTS_FROM_OBJECTS
        {
            self.start_gc_counts();
        }
    }

    /// With the heap nearly full, memcity's JFR stream goes: its threads allocate, and at an
    /// OutOfMemoryError they would fail and force full GCs one after another while the worker
    /// searches the paths at the error (seen on G1: the search then reached nothing in 5 s).
    /// Closing the stream is itself a call into Java, made while some room is left.
    fn stop_gc_counts_when_tight(&mut self) {
        let Some(mut counts) = self.gc_counts.take() else {
            return;
        };
        // SAFETY: the worker's own JNIEnv.
        if let Ok(mut env) = unsafe { jni::JNIEnv::from_raw(self.jni) } {
            match counts.stop(&mut env) {
                Ok(()) => info!("the Java heap is nearly full: memcity's JFR stream (GC counts) stops, so that it does not compete for the rest"),
                Err(e) => warning!("{e}"),
            }
        }
    }

    /// Starts the collector's own type counts (JFR), if asked for and possible; tried once.
    fn start_gc_counts(&mut self) {
        let Some(limit) = self.agent.options.gc_counts else {
            return;
        };
        if self.heap_is_tight() {
            return; // JFR makes objects of its own (`oom.rs`); tried again at a later snapshot
        }
        if std::mem::replace(&mut self.gc_counts_tried, true) {
            return;
        }
        // SAFETY: the worker's own JNIEnv, valid for this thread's life.
        let Ok(mut env) = (unsafe { jni::JNIEnv::from_raw(self.jni) }) else {
            return;
        };
        match GcCounts::start(&mut env) {
            Ok(counts) => {
                info!(
                    "GC counts on: full GCs and G1 remarks count live objects per type (JFR jdk.ObjectCountAfterGC) while that adds under {} ms",
                    limit.as_millis()
                );
                self.gc_counts = Some(counts);
            }
            Err(why) => info!("no GC counts ({why}); estimates rest on walks and samples alone"),
        }
    }

    /// Reconciles the estimates with the newest complete GC count, and publishes the result.
    fn take_gc_counts(&mut self) {
        if self.gc_counts.is_none() {
            return;
        }
        if let Some(count) = gc_counts::take_ready()
            .into_iter()
            .rfind(|c| !c.classes.is_empty())
        {
            self.waiting_count = Some(count);
        }
        let Some(count) = self.waiting_count.take() else {
            return;
        };
        match self.reconcile(&count) {
            Reconciled::Done => {
                if self.agent.options.estimates.is_some() && self.can_estimate() {
                    self.estimate_snapshot(Trigger::Gc);
                }
            }
            Reconciled::NotYet => self.waiting_count = Some(count),
            Reconciled::Never => {}
        }
    }

    /// Shifts each counted type's estimate so that it equals the GC's count at that GC (see
    /// `Estimator::reconcile`), comparing with the first snapshot published after the GC.
    fn reconcile(&mut self, count: &GcCount) -> Reconciled {
        // The first snapshot taken once that GC's ObjectFree events were in.
        let settled = count.time_unix_ms + GC_SETTLE.as_millis() as u64;
        let Some(then) = self.recent.iter().position(|r| r.unix_ms >= settled) else {
            // The estimate after that GC is still to come (the count arrived within the
            // coalescing interval), unless it is so old that the GC's snapshot was dropped.
            let now = crate::unix_ms(std::time::SystemTime::now());
            return if now.saturating_sub(count.time_unix_ms) < COUNT_PATIENCE.as_millis() as u64 {
                Reconciled::NotYet
            } else {
                Reconciled::Never
            };
        };
        let live_then: u64 = self.recent[then].objects.iter().sum();
        if let Some(ns) = count.phase_ns {
            self.last_count_pause_ns = ns;
            if live_then > 100_000 {
                self.count_ns_per_object = ns as f64 / live_then as f64;
            }
        }
        if self.estimator.anchor().is_none() || !self.can_estimate() {
            return Reconciled::Never;
        }
        let mut by_name: std::collections::HashMap<&str, Vec<u32>> =
            std::collections::HashMap::new();
        for (id, name) in self.classes.names.iter().enumerate() {
            // memcity's share of a class carries its name but no GC counts it apart.
            let ours = self.memcity_of.contains_key(&(id as u32));
            if self.classes.named.get(id).copied().unwrap_or(false) && !ours {
                by_name.entry(name.as_str()).or_default().push(id as u32);
            }
        }
        let recent = &self.recent[then];
        let get = |v: &Vec<u64>, id: u32| v.get(id as usize).copied().unwrap_or(0);
        let mut shifts = Vec::new();
        for (name, objects, bytes) in &count.classes {
            let java = gc_counts::java_name(name);
            let Some(ids) = by_name.get(java.as_str()) else {
                continue;
            };
            if ids.contains(&self.classes.class_class) {
                continue; // class mirrors are counted from the class list
            }
            let then_objects: u64 = ids.iter().map(|&id| get(&recent.objects, id)).sum();
            let then_bytes: u64 = ids.iter().map(|&id| get(&recent.bytes, id)).sum();
            // The difference goes to the id holding most of the type.
            let target = *ids
                .iter()
                .max_by_key(|&&id| get(&recent.objects, id))
                .expect("ids are never empty");
            let variance = recent
                .variance
                .get(target as usize)
                .copied()
                .unwrap_or_default();
            debug!(
                "GC count {java}: {objects} objects, {then_objects} estimated then (ids {ids:?})"
            );
            shifts.push((
                target,
                *objects as f64 - then_objects as f64,
                *bytes as f64 - then_bytes as f64,
                variance,
                recent.last_gc,
            ));
        }
        debug!(
            "GC {} counted {} types ({} matched), counting took {} us",
            count.gc_id,
            count.classes.len(),
            shifts.len(),
            count.phase_ns.unwrap_or(0) / 1000
        );
        for (class, objects, bytes, variance, generation) in shifts {
            self.estimator
                .shift_by(class, objects, bytes, variance, generation);
        }
        self.estimator.note_gc_count(count.time_unix_ms);
        Reconciled::Done
    }

    /// Keeps a snapshot's per-class numbers for [`reconcile`](Self::reconcile).
    fn remember(&mut self, counts: &WalkResult) {
        if self.gc_counts.is_none() {
            return;
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(Recent {
            unix_ms: crate::unix_ms(std::time::SystemTime::now()),
            last_gc: counts.last_gc,
            objects: counts.objects.clone(),
            bytes: counts.bytes.clone(),
            variance: counts.variance.clone(),
        });
    }

    /// Turns the GC's counting off while it is predicted to add more than `gc_counts` to a
    /// pause, and on again once it fits with a margin (so it does not flip at the border).
    fn switch_gc_counts(&mut self, live_objects: u64) {
        let (Some(counts), Some(limit)) = (self.gc_counts.as_mut(), self.agent.options.gc_counts)
        else {
            return;
        };
        let predicted =
            Duration::from_secs_f64(live_objects as f64 * self.count_ns_per_object / 1e9);
        let on = if counts.enabled() {
            predicted <= limit
        } else {
            predicted <= limit.mul_f64(0.8)
        };
        if on == counts.enabled() {
            return;
        }
        // SAFETY: the worker's own JNIEnv.
        let Ok(mut env) = (unsafe { jni::JNIEnv::from_raw(self.jni) }) else {
            return;
        };
        match counts.set_enabled(&mut env, on) {
            Ok(()) => info!(
                "GC counts {}: a count of {live_objects} objects would add about {} ms to a pause (limit {} ms)",
                if on { "on again" } else { "off" },
                predicted.as_millis(),
                limit.as_millis()
            ),
            Err(why) => warning!("{why}"),
        }
    }

    /// Once a second, holds sampling's measured cost under `sampling_cost` (see
    /// `Sampler::adapt`).
    fn adapt_sampling(&mut self) {
        let (Some(sampler), Some(max)) = (self.sampler(), self.agent.options.sampling_cost) else {
            return;
        };
        let elapsed = self.cost_check.1.elapsed();
        if elapsed < COST_CHECK {
            return;
        }
        let spent = sampler.cost().1;
        let fraction = (spent - self.cost_check.0) as f64 / elapsed.as_nanos() as f64;
        self.cost_check = (spent, Instant::now());
        if let Some(interval) = sampler.adapt(fraction, max, self.live_bytes) {
            match self.agent.jvmti.set_heap_sampling_interval(interval as i32) {
                Ok(()) => debug!(
                    "sampling took {:.2}% of a core: interval now {interval} bytes",
                    fraction * 100.0
                ),
                Err(e) => warning!("cannot change the sampling interval: {e}"),
            }
        }
    }

    /// Tags the live platform threads as the walk's first owners (1, 2, ...), with the coming
    /// walk's epoch, and notes their names: the walk then knows whose stack a local is on, and
    /// which thread's `ThreadLocal`s hold what. Returns how many.
    fn tag_threads(&mut self) -> u32 {
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

    /// Learns the field names of the classes a walk's field edges come from.
    fn learn_fields(&mut self, counts: &WalkResult) {
        let wanted: std::collections::HashSet<u32> = counts
            .fields
            .keys()
            .filter(|(from, slot, _)| *slot != walk::ELEMENTS && !self.fields.has(*from))
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
            if wanted.contains(&id) && !self.fields.has(id) {
                // SAFETY: the worker's JNIEnv; an inner frame frees the hierarchy's references.
                unsafe {
                    if let Some(_inner) = LocalFrame::push(self.jni, 64) {
                        self.fields.learn(&jvmti, self.jni, id, class);
                    }
                }
            }
        }
    }

    /// A slot's name: a field, `[]` for elements; statics as `Class.FIELD` elsewhere.
    fn slot_name(&self, from: u32, slot: u32) -> String {
        if slot == walk::ELEMENTS {
            "[]".to_string()
        } else {
            self.fields.name(from, slot & !walk::STATIC)
        }
    }

    /// The walk's field edges, roots and owned edges, named, for the snapshot. At most
    /// `MAX_SLOTS_PER_PAIR` slots are kept per pair of types (the most referencing).
    fn graph(&mut self, counts: &WalkResult) -> (Vec<FieldEdge>, Vec<ProtoRoot>, Vec<OwnedEdge>) {
        self.learn_fields(counts);
        let class = |s: &Self, id: u32| -> String {
            s.classes
                .names
                .get(id as usize)
                .cloned()
                .unwrap_or_else(|| names::UNKNOWN_CLASS.to_string())
        };
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
                from_type: self.strings.intern(&class(self, from)),
                field: self.strings.intern(&field),
                is_static: slot != walk::ELEMENTS && slot & walk::STATIC != 0,
                to_type: self.strings.intern(&class(self, to)),
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
                .and_then(|i| self.walk_threads.get(i))
                .cloned();
            let field = if root.kind == RootKind::StaticField {
                self.slot_name(root.class, root.slot)
            } else {
                String::new()
            };
            let out = self.root_proto(
                root.kind,
                thread.as_deref(),
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
                    self.strings.intern(&class(self, from))
                },
                field: if level == 0 {
                    0
                } else {
                    self.strings.intern(&self.slot_name(from, slot))
                },
                to_type: self.strings.intern(&class(self, to)),
                referrers: c.referrers,
                references: c.references,
                max_fanout: c.max_fanout,
                max_length: c.max_length,
            })
            .collect();
        owned.sort_unstable_by_key(|e| (e.root, e.level, e.from_type, e.field, e.to_type));
        (fields, roots, owned)
    }

    /// Runs the path search's next slice, or starts a search when one is due; returns how long
    /// the worker may sleep as far as the search is concerned.
    fn search_step(&mut self) -> Duration {
        let Some(sampler) = self.sampler() else {
            return POLL;
        };
        if self.agent.options.paths.is_none() {
            return POLL;
        }
        let now = Instant::now();
        if self.search.is_none() {
            let live = sampler.tracker.in_use() as usize;
            if !self
                .search_schedule
                .due(now, live, self.live_objects_published)
            {
                return self
                    .search_schedule
                    .next_in(now)
                    .unwrap_or(POLL)
                    .clamp(Duration::from_millis(1), POLL);
            }
            self.refresh_classes();
            self.search_schedule.started(self.live_objects_published);
            self.search = self.start_search(sampler);
            self.search_schedule.sliced(Instant::now());
            if self.search.is_none() {
                self.search_schedule.ended(Instant::now(), Duration::ZERO);
            }
            return paths::SLICE_REST;
        }
        if let Some(wait) = self.search_schedule.slice_wait(now) {
            return wait;
        }
        let mut env = self.search_env();
        let search = self.search.as_mut().expect("a search under way");
        if search.run(&mut env, paths::SLICE) {
            if crate::log::enabled(crate::log::Level::Debug) {
                let mut by: Vec<(u32, u64)> =
                    search.found_by_root.iter().map(|(&r, &n)| (r, n)).collect();
                by.sort_by_key(|&(r, _)| r);
                debug!("path search: found per root (in search order): {by:?}");
            }
            let found = self
                .search
                .take()
                .expect("a search under way")
                .finish(&mut env);
            self.search_schedule.ended(Instant::now(), found.cpu);
            debug!(
                "path search: {} of {} samples reached through {} objects in {} ms on the worker ({} ms stopped for the roots){}",
                found.found,
                found.targets,
                found.visited,
                found.cpu.as_millis(),
                found.roots_pause.as_millis(),
                if found.incomplete.is_empty() { String::new() } else { format!("; {}", found.incomplete) }
            );
            if crate::log::enabled(crate::log::Level::Debug) {
                let missed: Vec<String> = found
                    .missed
                    .iter()
                    .take(6)
                    .map(|&(c, n)| {
                        format!(
                            "{n} {}",
                            self.classes
                                .names
                                .get(c as usize)
                                .map_or("?", String::as_str)
                        )
                    })
                    .collect();
                debug!("path search: not reached: {}", missed.join(", "));
            }
            self.preferred_roots = found.top_roots.clone();
            self.paths_found = Some(found);
            // Published with the next snapshot: an estimate soon, when estimates run.
            self.estimate_pending = true;
            POLL
        } else {
            self.search_schedule.sliced(Instant::now());
            paths::SLICE_REST
        }
    }

    /// What a path search borrows of the JVM: the worker's JNIEnv and class ids.
    fn search_env(&self) -> paths::Env {
        paths::Env {
            jvmti: self.agent.jvmti,
            jni: self.jni,
            class_id: Box::new(class_ids(self.agent)),
        }
    }

    /// Starts a search for the live samples not allocated by memcity's own threads: all that
    /// survived a GC (a full search), or, between full ones, only those born since the last
    /// search started (a focused search: the growth's objects, found first under the roots
    /// that held the last search's finds, so it stops early and costs the leak's size rather
    /// than the heap's).
    fn start_search(&mut self, sampler: &'static Sampler) -> Option<paths::Search> {
        let mut ours: HashMap<u32, bool> = HashMap::new();
        let (mut young, mut survivors, mut recent) = (Vec::new(), Vec::new(), Vec::new());
        let last_gc = sampler.tracker.last_gc();
        let from_gen = self.search_from_gen;
        sampler.tracker.for_each_live(|sample, weak| {
            let memcity = *ours.entry(sample.thread).or_insert_with(|| {
                sampler
                    .thread_name(sample.thread)
                    .is_some_and(|n| paths::is_memcity_thread(&n))
            });
            if memcity {
                return;
            }
            let target = paths::Sample {
                weak,
                class: sample.class,
                weight: sample.weight,
                born_s: self.born_at.seconds(sample.born),
                recent: sample.born >= from_gen,
            };
            // Samples born since the last GC are often garbage no GC has met yet, which no
            // path reaches and which would keep the search from stopping early.
            if sample.born >= last_gc {
                young.push(target);
            } else if sample.born >= from_gen {
                recent.push(target);
            } else {
                survivors.push(target);
            }
        });
        let focused = !self.preferred_roots.is_empty()
            && self.focused_since_full < FOCUSED_PER_FULL
            && recent.len() >= paths::MIN_TARGETS;
        let (samples, preferred): (Vec<paths::Sample>, &[String]) = if focused {
            self.focused_since_full += 1;
            (recent, &self.preferred_roots)
        } else {
            self.focused_since_full = 0;
            survivors.extend(recent);
            if survivors.len() < paths::MIN_TARGETS {
                survivors.extend(young);
            }
            (survivors, &[])
        };
        if crate::log::enabled(crate::log::Level::Debug) {
            let mut by: std::collections::BTreeMap<u32, u32> = Default::default();
            for t in &samples {
                *by.entry(t.born_s).or_default() += 1;
            }
            debug!(
                "path search: {} targets ({}), by second taken: {by:?}; generation {} last GC {}",
                samples.len(),
                if focused { "focused" } else { "full" },
                sampler.tracker.generation(),
                last_gc
            );
        }
        self.search_from_gen = sampler.tracker.generation();
        let mut env = self.search_env();
        let facts = paths::ClassFacts {
            names: &self.classes.names,
            application: &self.classes.application,
        };
        let search = paths::Search::start(
            &mut env,
            &facts,
            &samples,
            self.live_objects_published,
            preferred,
        );
        search.map(|s| s.focused(focused))
    }

    /// Ends a search under way (the session ends): its references go, its findings too.
    fn end_search(&mut self) {
        if let Some(search) = self.search.take() {
            let mut env = self.search_env();
            drop(search.finish(&mut env));
        }
    }

    /// A finished search, named for the snapshot.
    fn paths_proto(&mut self, found: &paths::Found) -> PathTree {
        if found
            .nodes
            .iter()
            .any(|n| self.classes.names.len() <= n.class as usize)
        {
            self.refresh_classes(); // classes the search tagged
        }
        let class = |s: &Self, id: u32| -> String {
            s.classes
                .names
                .get(id as usize)
                .cloned()
                .unwrap_or_else(|| names::UNKNOWN_CLASS.to_string())
        };
        let ms = |t: Option<Instant>| {
            t.map_or(0, |t| {
                t.saturating_duration_since(self.agent.start).as_millis() as u64
            })
        };
        let mut nodes = Vec::with_capacity(found.nodes.len());
        let mut named_roots: HashMap<u32, ProtoRoot> = HashMap::new();
        for node in &found.nodes {
            let (field, root) = if node.parent == 0 {
                let root = match named_roots.get(&node.field) {
                    Some(root) => *root,
                    None => {
                        let r = &found.roots[node.field as usize];
                        let thread = r.thread.and_then(|t| found.threads.get(t)).cloned();
                        let named = self.root_proto(
                            r.kind,
                            thread.as_deref(),
                            r.class,
                            &r.field,
                            (r.method, r.location),
                        );
                        named_roots.insert(node.field, named);
                        named
                    }
                };
                (0, Some(root))
            } else {
                let name = found
                    .fields
                    .get(node.field as usize)
                    .map_or("?", String::as_str);
                (self.strings.intern(name), None)
            };
            let type_name = class(self, node.class);
            nodes.push(PathNode {
                parent: node.parent,
                r#type: self.strings.intern(&type_name),
                field,
                root,
                chain: node.chain,
                length: node.length,
                reached: node
                    .reached
                    .iter()
                    .map(|&(c, objects)| {
                        let name = class(self, c);
                        TypeCount {
                            r#type: self.strings.intern(&name),
                            objects,
                        }
                    })
                    .collect(),
                identity: node.identity,
                targets: node
                    .targets
                    .iter()
                    .map(|&(c, samples, weight, born_s)| {
                        let name = class(self, c);
                        PathTarget {
                            r#type: self.strings.intern(&name),
                            samples,
                            weight,
                            born_s,
                        }
                    })
                    .collect(),
            });
        }
        PathTree {
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

    /// A GC root, named for the snapshot: `static LinkedListLeak.PEOPLE`, `thread "main"`,
    /// `local in HostPoolLeak.main(HostPoolLeak.java:67) of thread "main"`.
    fn root_proto(
        &mut self,
        kind: RootKind,
        thread: Option<&str>,
        class: u32,
        field: &str,
        frame: (usize, i64),
    ) -> ProtoRoot {
        let quoted = thread.map(|t| format!("thread \"{t}\""));
        let mut out = ProtoRoot {
            kind: root_kind(kind) as i32,
            thread: thread.map_or(0, |t| self.strings.intern(t)),
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
                out.holder_type = self.strings.intern(&holder);
                out.field = self.strings.intern(field);
                format!("static {holder}.{field}")
            }
            RootKind::Thread => quoted.unwrap_or_else(|| "a thread".into()),
            RootKind::StackLocal | RootKind::JniLocal => {
                let jvmti = self.agent.jvmti;
                // SAFETY: the worker's own JNIEnv; frees the frame's declaring-class reference.
                let _frame = unsafe { LocalFrame::push(self.jni, 16) };
                let name = self.methods.frame(&jvmti, frame);
                out.frame = self.strings.intern(&name);
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
        out.name = self.strings.intern(&name);
        out
    }

    /// Names sites and threads sampled since the last snapshot.
    fn resolve_names(&mut self) {
        let Some(sampler) = &self.agent.sampler else {
            return;
        };
        let jvmti = self.agent.jvmti;
        let new_sites = sampler.sites_from(self.site_names.len() as u32);
        if !new_sites.is_empty() {
            // SAFETY: the worker's own JNIEnv; frees the declaring-class references.
            let _frame = unsafe { LocalFrame::push(self.jni, 64) };
            for (id, frames) in new_sites {
                debug_assert_eq!(id as usize, self.site_names.len());
                let named: Vec<String> = frames
                    .iter()
                    .map(|&frame| self.methods.frame(&jvmti, frame))
                    .collect();
                self.site_names
                    .push(crate::sampling::site_name(&named, sampler.naming_frames()));
            }
        }
        while let Some(name) = sampler.thread_name(self.thread_names.len() as u32) {
            self.thread_names.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_generation_collectors_are_told_from_their_flags_and_version() {
        assert!(every_gc_marks_all("Z", Some(17), ""));
        assert!(every_gc_marks_all("Z", Some(21), "-XX:+UseZGC"));
        assert!(!every_gc_marks_all(
            "Z",
            Some(21),
            "-XX:+UseZGC -XX:+ZGenerational"
        ));
        assert!(every_gc_marks_all(
            "Z",
            Some(21),
            "-XX:+ZGenerational -XX:-ZGenerational"
        ));
        assert!(!every_gc_marks_all("Z", Some(23), "-XX:+UseZGC"));
        assert!(every_gc_marks_all("Z", Some(23), "-XX:-ZGenerational"));
        assert!(!every_gc_marks_all("Z", Some(25), "-XX:-ZGenerational"));
        assert!(every_gc_marks_all("Shenandoah", Some(17), ""));
        assert!(!every_gc_marks_all(
            "Shenandoah",
            Some(21),
            "-XX:ShenandoahGCMode=generational"
        ));
        assert!(!every_gc_marks_all("G1", Some(17), ""));
        assert!(
            !every_gc_marks_all("Z", None, ""),
            "in doubt, age the canaries"
        );
    }

    #[test]
    fn java_major_reads_old_and_new_version_schemes() {
        assert_eq!(java_major("17"), Some(17));
        assert_eq!(java_major("25"), Some(25));
        assert_eq!(java_major("1.8"), Some(8));
        assert_eq!(java_major("26.0.1"), Some(26));
        assert_eq!(java_major(""), None);
    }

    #[test]
    fn gc_name_follows_the_last_flag() {
        assert_eq!(gc_name("java -XX:+UseZGC -jar app.jar"), "Z");
        assert_eq!(
            gc_name("java -XX:+UseSerialGC -XX:+UseParallelGC x"),
            "Parallel"
        );
        assert_eq!(gc_name("java -XX:+UseShenandoahGC x"), "Shenandoah");
    }
}
