//! The agent thread (`memcity-worker`): waits for GCs and requests, decides within the budget
//! whether to walk, walks, names, builds the tree and publishes it.
//!
//! This module holds the worker's state, its loop, requests and snapshots; each other concern
//! has a submodule: `schedule` (each turn's walk/estimate/wait decision, pure), `classes` (the
//! class and thread tables), `jvm` (facts about the JVM), `counts` (reconciling estimates with
//! the GC's own counts), `naming` (ids to names for a snapshot) and `search` (driving the path
//! search).

mod classes;
mod counts;
mod jvm;
mod naming;
mod schedule;
mod search;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use jni::sys::JNIEnv;
use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{
    snapshot::Trigger, stream_message::Kind, HeapUsage, OutOfMemory, Snapshot, SnapshotReply,
    StreamMessage, WalkCost,
};

use crate::aside::Aside;
use crate::census::budget::Budget;
use crate::census::canary::Canaries;
use crate::census::collectors::{Collectors, GcGenerations, MarkingClock};
use crate::census::estimate::{Anchor, Estimator};
use crate::census::fields::FieldNames;
use crate::census::gc_counts::{GcCount, GcCounts};
use crate::census::tree;
use crate::census::walk::{self, ClassFacts, WalkError, WalkResult};
use crate::jvmti::tags;
use crate::jvmti::{weak, CanaryHeap};
use crate::log::{debug, info, warning};
use crate::names;
use crate::oom::HeapGauge;
use crate::options::Classifier;
use crate::paths;
use crate::ports::server::Request;
use crate::sampling::lifetimes::Lifetimes;
use crate::sampling::{MethodNames, Sampler};
use crate::Agent;
use classes::{unsplit_memcity, ClassTable};
use counts::{Recent, DEFAULT_COUNT_NS_PER_OBJECT, GC_COUNTS_FROM_OBJECTS, GC_COUNTS_FROM_WALK};
pub use jvm::handshake;
use jvm::{
    command_line, every_gc_marks_all, gc_counts_types, gc_name, java_major, jvm_flags,
    FIRST_EXACT_OUTSIDE_TLAB_SAMPLING,
};
use naming::Names;
use schedule::{Turn, POLL};

/// What a snapshot's numbers rest on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Basis {
    /// An exact walk of the heap.
    Walk,
    /// An estimate from the tracked samples, since the walk whose snapshot is `anchor` (its
    /// `seq`), if any walk has been.
    Estimate { anchor: Option<u64> },
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
    /// The path search's stop to list the roots, predicted (it spends `budget` too).
    roots_stop: crate::census::budget::RootsStop,
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
    /// The stream's start, under way on a thread of its own (`aside.rs`).
    gc_counts_starting: Option<Aside<GcCounts>>,
    /// A switch of counting on or off, under way likewise.
    gc_counts_switching: Option<(bool, Aside<()>)>,
    /// The JVM, for the Java calls made aside.
    vm: Option<jni::JavaVM>,
    /// The Java heap's `(used, max)` read right after the last GCs (what survived, and what
    /// the GC left).
    heap_after_gc: Option<(u64, u64)>,
    /// The collector counts types for JFR (`jvm::gc_counts_types`).
    collector_counts_types: bool,
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
    /// The samples' lifetimes since the last snapshot (`lifetimes` option; needs samples).
    lifetimes: Option<Lifetimes>,
    /// The JVM's collectors, to say which reclaimed a lifetime's object and when the old
    /// generation was marked (`None`: unknown).
    collectors: Option<Collectors>,
    /// When the old generation was last marked, from the collectors' counts.
    markings: MarkingClock,
    gc_generations: GcGenerations,
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
    /// Weak references of samples the tracker freed while a search held them as targets:
    /// deleted when no search does (`delete_released`).
    released_later: Vec<usize>,
    /// The search being started is a count out of turn (`search_step`): its targets include
    /// the samples born since the last GC.
    recounting: bool,
    search_schedule: paths::Schedule,
    paths_found: Option<paths::Found>,
    /// When each tracker generation began, to date samples (`paths::Sample::born_s`).
    born_at: paths::Births,
    /// Per class with memcity's objects among its own, the id standing for memcity's share
    /// (named as the class, grouped under [`names::MEMCITY`]), and back.
    memcity_ids: HashMap<u32, u32>,
    memcity_of: HashMap<u32, u32>,
    /// Per class, the share of its `(objects, bytes)` that the last walk found memcity's
    /// (`WalkResult::memcity`), for that walk and the estimates after it.
    memcity_share: HashMap<u32, (f64, f64)>,
    /// For focused searches: the first generation the last kept search (`keep_found`) did not
    /// look at (the last GC's as it started: younger samples are left out), the same of the
    /// search under way, and the roots the last kept one's finds were under.
    search_from_gen: u32,
    search_started_gen: u32,
    preferred_roots: Vec<paths::RootKey>,
    /// What frames, JNI locals and monitors held at the last enumeration of the roots: the
    /// next search enters such a root only if its object is one of these (`Search::start`).
    lasting_locals: paths::Identities,
    /// The next search lists the roots again (`keep_found`), and the one under way is that.
    relist: bool,
    relisting: bool,
    /// The tracker generation the last complete search ended at: the births since are the
    /// next one's verdicts for the estimates (`Estimator::set_search_count`).
    counted_gen: u32,
    /// The tracker generation the search under way started at.
    search_gen: u32,
    /// A focused search through the preferred roots found too few there: the growth went
    /// elsewhere, and a focused search through the statics and threads starts next, without
    /// waiting for its turn (a full search of a big heap may be a minute away).
    refocus: bool,
    /// The Java heap's size (`oom.rs`), read after GCs and with each snapshot.
    heap: Option<HeapGauge>,
    /// For the snapshot taken when the heap ran out.
    out_of_memory: Option<OutOfMemory>,
    /// The JVM's command line (its flags decide what memcity may change: `oom.rs`, JFR).
    command_line: String,
    /// The JVM's lines memcity would cause on stdout are off (`oom::quiet_the_jvms_lines`).
    quieted: bool,
}

/// Forced walks (past the budget) start at most this often.
const FORCED_WALK_EVERY: Duration = Duration::from_secs(10);

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
        roots_stop: Default::default(),
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
        lifetimes: (agent.options.lifetimes && agent.sampler.is_some()).then(Lifetimes::default),
        collectors: None,
        markings: MarkingClock::default(),
        gc_generations: GcGenerations::default(),
        walk_threads: Vec::new(),
        last_forced: None,
        before_attach: None,
        live_bytes: 0,
        live_objects_published: 0,
        gc_counts: None,
        gc_counts_tried: false,
        gc_counts_starting: None,
        gc_counts_switching: None,
        // SAFETY: per contract.
        vm: unsafe { jni::JNIEnv::from_raw(jni) }
            .ok()
            .and_then(|env| env.get_java_vm().ok()),
        heap_after_gc: None,
        collector_counts_types: true,
        count_ns_per_object: DEFAULT_COUNT_NS_PER_OBJECT,
        last_count_pause_ns: 0,
        recent: std::collections::VecDeque::new(),
        waiting_count: None,
        search: None,
        released_later: Vec::new(),
        recounting: false,
        search_schedule: paths::Schedule::new(agent.options.paths.unwrap_or(1.0)),
        paths_found: None,
        born_at: paths::Births::default(),
        search_from_gen: 0,
        search_started_gen: 0,
        preferred_roots: Vec::new(),
        lasting_locals: Default::default(),
        relist: false,
        counted_gen: 0,
        search_gen: 0,
        relisting: false,
        refocus: false,
        memcity_ids: HashMap::new(),
        memcity_of: HashMap::new(),
        memcity_share: HashMap::new(),
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
    worker.collector_counts_types = gc_counts_types(&gc);
    if !worker.collector_counts_types && agent.options.gc_counts.is_some() {
        debug!("{gc}: no GC counts (its collections count no types); estimates rest on walks and samples alone");
    }
    if every_gc_marks_all(&gc, major, &jvm_flags(&command_line)) {
        worker.canaries.every_gc_marks_all();
        debug!("{gc}: every GC marks the whole heap; canaries are let go at once");
    }
    if major.is_some_and(|m| m < FIRST_EXACT_OUTSIDE_TLAB_SAMPLING) {
        worker.estimator.set_outside_tlab_bias(true);
        debug!(
            "JDK {}: estimates of objects over {} KB carry the sampler's outside-TLAB bias in their error",
            major.unwrap_or(0),
            crate::census::estimate::OUTSIDE_TLAB_RISK_BYTES / 1024,
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
    crate::arm_failpoints();
    match Collectors::open() {
        Ok(collectors) => {
            if worker.lifetimes.is_some() || agent.options.estimates.is_some() {
                worker.collectors = Some(collectors);
            }
        }
        Err(e) => info!(
            "old-generation markings are learned from canaries alone, and lifetimes name no collector: {e}"
        ),
    }
    loop {
        if agent.phase.get().worker_stops() {
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
            // At a GC rather than at a walk: a loaded machine may defer walks past a short run.
            crate::failpoint(crate::Failpoint::Worker);
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
                && !agent.phase.get().worker_stops()
            {
                let _ = guard.wait(wait.as_millis().max(1) as i64);
            }
        }
    }
    // The JVM exits while a thread waits in its OutOfMemoryError (another thread's error went
    // uncaught, the launcher shuts down): that error's snapshot, with the paths found so far,
    // is the one the session must end with.
    let oom_pending = agent.oom_state.load(Ordering::Acquire) == crate::oom::OOM_ASKED;
    if oom_pending && agent.phase.get().active() {
        worker.out_of_memory();
    }
    worker.end_search();
    if agent.phase.get().active() && !oom_pending {
        worker.final_snapshot();
    }
    if let Some(sampler) = &agent.sampler {
        log_sampling_cost(sampler);
    }
    if agent.phase.get().releases() {
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
/// Longest an estimate goes without refreshing the class table (to count class mirrors) when
/// no new class was sampled.
const ESTIMATE_REFRESH: Duration = Duration::from_secs(10);
/// Longest a detach waits for JFR's start, to stop the stream it makes.
const DETACH_WAIT: Duration = Duration::from_secs(5);
/// How often the sampling cost is checked against `sampling_cost`.
const COST_CHECK: Duration = Duration::from_secs(1);

impl Worker {
    fn sampler(&self) -> Option<&'static Sampler> {
        self.agent.sampler.as_ref()
    }

    /// Samples record their site while the chain has a site level; for lifetimes alone (a
    /// lifetime's allocation context is its site) one in `LIFETIME_SITES_EVERY` does, and
    /// lifetimes follow those (see `Sampler`).
    fn sync_site_recording(&mut self) {
        let Some(sampler) = self.sampler() else {
            return;
        };
        let every = crate::sampling::sites_every(
            self.chain.contains(&Classifier::Site),
            self.lifetimes.is_some(),
        );
        sampler.record_sites(every);
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
            // Canaries and the collectors' counts first (see `Canaries::poll`).
            let confirmed = self.canaries.poll(&mut CanaryHeap(jni));
            let counted = match &self.collectors {
                Some(c) => self.markings.look(c.look(), sampler.tracker.generation()),
                None => 0,
            };
            let mut point = confirmed.max(counted);
            self.gc_generations.note(
                sampler.tracker.last_gc_moment().gcs,
                sampler.tracker.generation(),
            );
            // A major collection of generational ZGC runs a young one inside it, which marks
            // through every weak reference: a sample still young then survives it dead or
            // alive. Only samples born a canary's tenure (in GCs) before the point were old
            // by then, and judged by the old marking (the rest wait for a later one, or a
            // search). The hold limit is set exactly there (`say_collector`).
            if sampler.tracker.hold_limited() {
                point = self
                    .gc_generations
                    .back(point, crate::census::canary::HOLD_GCS as u32);
            }
            self.estimator.set_confirmed(point);
            self.poll_deaths(sampler);
        }
        if let Some(l) = self.lifetimes.as_mut() {
            // The sweep counts survivors: those of threads named since the last deaths
            // (or before any) must be known as memcity's too.
            l.set_memcity_threads(sampler.memcity_threads());
        }
        let counts = self.estimator.estimate(
            &sampler.tracker,
            self.classes.names.len(),
            self.lifetimes.as_mut(),
        );
        self.delete_released(sampler);
        counts
    }

    /// Deletes the weak references of the samples the tracker freed, unless a search under
    /// way holds them as targets (it compares objects with them: `paths.rs`); then they wait
    /// for its end, which calls this again.
    pub(super) fn delete_released(&mut self, sampler: &Sampler) {
        self.released_later.extend(sampler.tracker.take_released());
        if self.search.is_some() {
            return;
        }
        let jni = self.jni;
        for reference in self.released_later.drain(..) {
            // SAFETY: the worker's JNIEnv; the tracker no longer holds it and no search does.
            unsafe { weak::delete(jni, reference) };
        }
    }

    /// Asks the samples' weak references which objects the GCs freed and marks them dead; with
    /// lifetimes kept, books each death dated by the newest GC (so polled right after every GC,
    /// a death's GC is the one that freed it).
    fn poll_deaths(&mut self, sampler: &Sampler) {
        let jni = self.jni;
        let mut dead = Vec::new();
        let keep = self.lifetimes.is_some();
        // SAFETY: `jni` is the worker thread's JNIEnv; the tracker's references are live until
        // it hands them back with `take_released`.
        sampler.tracker.poll_deaths(
            |reference| unsafe { weak::cleared(jni, reference) },
            |sample| {
                if keep {
                    dead.push(*sample);
                }
            },
        );
        if dead.is_empty() {
            return;
        }
        // Read after the poll: a GC that ended during it freed some of these, and a death
        // dated by the GC before would look younger than it was.
        let died = sampler.tracker.last_gc_moment();
        let collectors = self.collectors_ran();
        if let Some(l) = self.lifetimes.as_mut() {
            l.set_memcity_threads(sampler.memcity_threads());
            for sample in &dead {
                l.died(sample, died, collectors);
            }
        }
    }

    /// The collectors that ran since the last look, as a string id; 0 (unknown) when none did
    /// (references a concurrent collector cleared after its pauses).
    fn collectors_ran(&mut self) -> u32 {
        let Some(collectors) = self.collectors.as_mut() else {
            return 0;
        };
        match collectors.ran() {
            ran if ran.is_empty() => 0,
            ran => self.strings.intern(&ran),
        }
    }

    /// GCs have finished: books the deaths they caused (for lifetimes) and ages the canaries
    /// that tell when the old generation was marked (only estimates need them).
    fn after_gcs(&mut self, gcs: u64) {
        let Some(sampler) = self.sampler() else {
            return;
        };
        self.heap_after_gc = self.read_heap();
        if let Some((used, max)) = self.heap_after_gc {
            if !self.quieted && crate::oom::filling(used, max) {
                self.quieted = true;
                if let (Some(command), Some(vm)) = (
                    crate::oom::quiet_command(
                        self.agent,
                        &self.command_line,
                        self.agent.options.gc_counts.is_some() && self.collector_counts_types,
                    ),
                    &self.vm,
                ) {
                    // Nothing to wait for: the call logs what came of it.
                    let _ = crate::aside::spawn(vm, "quiet", move |env| {
                        crate::oom::quiet_the_jvms_lines(env, &command)
                    });
                }
            }
        }
        let tight = self.heap_is_tight();
        if tight {
            self.stop_gc_counts_when_tight();
        }
        // After what a filling heap needs first (quieting the JVM's lines, closing the JFR
        // stream): the poll asks every sample's reference.
        if self.lifetimes.is_some() {
            self.poll_deaths(sampler);
        }
        if tight {
            // A canary is a Java object: with the heap nearly full it would wait for a GC with
            // the application's allocations, or be the one that fails (`oom.rs`). Confirmation
            // waits for the next canary made with room.
            return;
        }
        let generation = sampler.tracker.generation();
        self.canaries
            .after_gcs(&mut CanaryHeap(self.jni), gcs, generation);
    }

    /// Whether the heap was at least three quarters full after the last GC (`oom::filling`).
    fn filling(&self) -> bool {
        self.heap_after_gc
            .is_some_and(|(used, max)| crate::oom::filling(used, max))
    }

    /// At detach: hands back what the session holds in the JVM beyond its JVMTI environment
    /// (which the detach disposes, tags and all): the samples', canaries' and class cache's
    /// weak references, and the JFR stream of GC counts.
    fn release(&mut self) {
        self.canaries.release(&mut CanaryHeap(self.jni));
        if let Some(starting) = self.gc_counts_starting.take() {
            // A stream that started after the detach would run on with no session to stop it.
            match starting.wait(DETACH_WAIT) {
                Some(Ok(counts)) => self.gc_counts = Some(counts),
                Some(Err(_)) => {}
                None => warning!("detach: JFR's start for GC counts did not end within {} s; its stream may run until the JVM exits", DETACH_WAIT.as_secs()),
            }
        }
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

    /// What an exact walk would stop the JVM now.
    fn predicted_walk(&mut self) -> Duration {
        let objects = self.live_objects();
        self.budget.predict(objects)
    }

    /// One turn of the loop after requests: walk if a walk is due and fits, else estimate if one
    /// is due (the decision is [`Turn::plan`]'s). Returns how long to sleep at most.
    fn step(&mut self) -> Duration {
        let turn = Turn {
            now: Instant::now(),
            walk_pending: self.walk_pending,
            estimate_pending: self.estimate_pending,
            period: self.agent.options.period,
            estimates: self.agent.options.estimates,
            can_estimate: self.can_estimate(),
            last_snapshot: self.last_snapshot,
            gc_seen_at: self.gc_seen_at,
            filling: self.filling(),
        };
        // Measured only when a walk is considered: it polls the samples' deaths.
        let predicted = turn.considers_walk().then(|| self.predicted_walk());
        let plan = turn.plan(&self.budget, predicted);
        if let Some(refused) = plan.refused {
            if refused.counted {
                self.refused_since += 1;
                debug!(
                    "no walk: predicted {} ms, max_pause {} ms",
                    refused.predicted.as_millis(),
                    self.agent.options.max_pause.as_millis()
                );
            }
            self.walk_pending = false;
        }
        if let Some(walk) = plan.walk {
            if self.walk_snapshot(walk.trigger, walk.limit).is_ok() {
                return POLL;
            }
            // A failed walk (aborted, or JVMTI failed) falls through to estimating.
        }
        if let Some(trigger) = plan.estimate {
            self.estimate_snapshot(trigger);
        }
        plan.wait
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
        let jvmti = self.agent.jvmti;
        let predicted = self.predicted_walk();
        self.refresh_classes();
        self.epoch = tags::next_epoch(self.epoch);
        let tracker = self.sampler().map(|s| &s.tracker);
        // The walk's generation: samples born from here on and not reached were garbage at the
        // walk (see estimate.rs).
        let generation = tracker.map_or(0, |t| t.advance());
        // Deaths since the last poll first: tagging finds the objects gone and ends their samples,
        // which lifetimes would then never hear of.
        if let (Some(sampler), true) = (self.sampler(), self.lifetimes.is_some()) {
            self.poll_deaths(sampler);
        }
        self.tag_samples();
        let threads = self.tag_threads();
        let memcity = self.memcity_classes();
        let facts = ClassFacts {
            object_array: &self.classes.object_array,
            class_class: self.classes.class_class,
            weak_reference: &self.classes.weak_reference,
            next_class: &self.agent.next_class,
            tracker,
            holders: self.lifetimes.is_some(),
            application: &self.classes.application,
            threads,
            memcity: &memcity,
            shared: &self.classes.shared,
        };
        let outcome = walk::walk(
            &jvmti,
            facts,
            self.classes.names.len(),
            self.epoch,
            abort_after,
        );
        let walked_ms = tracker.map_or(0, |t| t.ms());
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
                crate::log::once!(
                    Warn,
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
                    crate::log::once!(Warn, "heap walk failed: {e}");
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
        self.note_memcity_share(&result);
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
        self.publish(trigger, &mut result, predicted, Basis::Walk);
        // After publishing, which learned the names of the fields the walk met.
        self.note_walk_holders(&result, walked_ms);
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
        self.publish(trigger, &mut counts, predicted, Basis::Estimate { anchor });
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

    /// Builds the tree of `counts` and publishes the snapshot, a walk's or an estimate's.
    fn publish(
        &mut self,
        trigger: Trigger,
        counts: &mut WalkResult,
        predicted: Duration,
        basis: Basis,
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
        if basis == Basis::Walk {
            self.walk_pending = false;
        }
        let sampler = self.sampler();
        let (samples, sampling_ns) = sampler.map_or((0, 0), |s| s.cost());
        let (agent_bytes, mut jvm_bytes) = sampler.map_or((0, 0), |s| s.tracker.memory());
        let (held, let_go) = self.canaries.held();
        jvm_bytes += (held + let_go) as u64 * crate::census::canary::JVM_BYTES_PER_CANARY;
        let interval = sampler.map_or(0, |s| s.current_interval());
        let mut exactness = built.exactness;
        if let Basis::Estimate { anchor } = basis {
            exactness.anchor_seq = anchor.unwrap_or(0);
            exactness.anchored = anchor.is_some();
            // A type kept since the anchor with B bytes goes unsampled with chance exp(-B / I).
            exactness.detection_bytes = interval.saturating_mul(3);
            let (types, at_ms) = self.estimator.gc_counted();
            exactness.gc_counted_types = types;
            exactness.gc_count_time_ms = at_ms.saturating_sub(self.agent.start_unix_ms);
        }
        let (fields, roots, owned) = if basis == Basis::Walk {
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
                unheld_samples: sampler.map_or(0, |s| s.tracker.unheld()),
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
            lifetimes: self.lifetimes_proto(),
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
            match basis {
                Basis::Walk => "walk",
                Basis::Estimate { .. } => "estimated",
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
                Err(e) => crate::log::once!(Warn, "cannot change the sampling interval: {e}"),
            }
        }
    }
}

/// Most bytes of sampled objects followed at a time on generational ZGC (see
/// `Tracker::set_hold_limit`): what the agent may keep in the heap there, until a major
/// collection frees it.
pub const GENERATIONAL_ZGC_HOLD: u64 = 16 << 20;

/// Says how samples are followed on this JVM's collector, and bounds what generational ZGC
/// would keep alive for them.
/// The session's first line: the collector, and how memcity follows its samples there (on
/// generational ZGC, within a hold limit). Read from the JVM's performance data, or, where it
/// publishes none (`-XX:-UsePerfData`), from the flags that chose the collector.
pub(crate) fn say_collector(agent: &Agent) {
    let Some(sampler) = &agent.sampler else {
        return;
    };
    let (names, generational_zgc) = match Collectors::open() {
        Ok(collectors) => (collectors.names().join(", "), collectors.generational_zgc()),
        Err(e) => {
            let command_line = command_line();
            let gc = gc_name(&command_line);
            let major = java_major(
                &agent
                    .jvmti
                    .system_property("java.vm.specification.version")
                    .unwrap_or_default(),
            );
            let one_generation = every_gc_marks_all(&gc, major, &jvm_flags(&command_line));
            (
                format!("{gc}, by its flags ({e})"),
                gc == "Z" && !one_generation,
            )
        }
    };
    let memcity = format!(
        "memcity {}",
        memcity_proto::version_line(env!("CARGO_PKG_VERSION"))
    );
    if generational_zgc {
        sampler.tracker.set_hold_limit(GENERATIONAL_ZGC_HOLD);
        info!(
            "{memcity}; collector: generational ZGC, whose young collections keep what a weak reference holds until a major collection: memcity follows only sampled objects that reference nothing more (arrays of primitives, strings, boxes, objects without reference fields), at most {} MiB of them at a time, none over {} KiB; other samples are counted and left out of estimates",
            GENERATIONAL_ZGC_HOLD >> 20,
            (GENERATIONAL_ZGC_HOLD / 256) >> 10
        );
    } else {
        info!(
            "{memcity}; collector: {names}; samples followed by weak references, which its collections clear"
        );
    }
}
