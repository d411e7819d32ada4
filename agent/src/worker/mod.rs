//! The agent thread (`memcity-worker`): waits for GCs and requests, decides within the budget
//! whether to walk, walks, names, builds the tree and publishes it.
//!
//! The worker is its loop (`run`: `Worker::new`, `start`, a `turn` at a time, `stop`) over
//! state that each concern keeps in a struct of its own, beside the code that moves it:
//! `clock` (snapshot numbers, what is pending, the pause budget), `schedule` (each turn's
//! walk/estimate/wait decision, pure), `markings` (when the old generation was last marked),
//! `counts` (the collector's own type counts, reconciled with estimates), `search` (driving
//! the path search), `classes` (the class and thread tables, memcity's own objects), `naming`
//! (ids to names), `jvm` (facts about the JVM) and `snapshot` (a walk, an estimate, and the
//! one step that assembles and publishes a snapshot).

mod classes;
mod clock;
mod counts;
mod jvm;
mod markings;
mod naming;
mod schedule;
mod search;
mod snapshot;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use jni::sys::JNIEnv;
use memcity_proto::v1::{snapshot::Trigger, OutOfMemory};

use crate::census::collectors::Collectors;
use crate::census::estimate::Estimator;
use crate::census::walk::WalkResult;
use crate::jvmti::tags;
use crate::jvmti::{weak, CanaryHeap};
use crate::log::{debug, info, warning};
use crate::names;
use crate::oom::HeapGauge;
use crate::options::Classifier;
use crate::ports::server::Request;
use crate::sampling::lifetimes::Lifetimes;
use crate::sampling::Sampler;
use crate::Agent;
use classes::{ClassTable, MemcityShare};
use clock::Clock;
use counts::GcCountState;
pub use jvm::handshake;
use jvm::{gc_counts_types, JvmFacts, FIRST_EXACT_OUTSIDE_TLAB_SAMPLING};
use markings::Markings;
use naming::Naming;
use schedule::POLL;
use search::Searches;

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
    /// The JVM, for the Java calls made aside.
    vm: Option<jni::JavaVM>,
    /// The classifier chain the viewers asked for.
    chain: Vec<Classifier>,
    /// The class and thread tables, and the JVM's own classes the walk needs.
    classes: ClassTable,
    /// Memcity's own objects, apart from the application's (`classes.rs`).
    memcity: MemcityShare,
    /// Ids to names for snapshots: strings, sites, threads, fields (`naming.rs`).
    naming: Naming,
    /// Snapshot numbers, what is pending, when things last happened, and the pause budget
    /// (`clock.rs`).
    clock: Clock,
    estimator: Estimator,
    /// When the old generation was last marked (`markings.rs`).
    markings: Markings,
    /// The collector's own type counts (`counts.rs`).
    gc_counts: GcCountState,
    /// The path search and what it found (`search.rs`).
    searches: Searches,
    /// The samples' lifetimes since the last snapshot (`lifetimes` option; needs samples).
    lifetimes: Option<Lifetimes>,
    /// The walks' epoch (`tags::next_epoch`).
    epoch: u64,
    /// Live bytes at the last snapshot (bounds how fine sampling may get).
    live_bytes: u64,
    /// Live objects at the last snapshot.
    live_objects_published: u64,
    /// Attached to a running JVM: the class id of [`names::BEFORE_ATTACH`], and the least of
    /// its bytes seen so far (the objects allocated before the attach only ever die).
    before_attach: Option<(u32, u64)>,
    /// The Java heap's size (`oom.rs`), read after GCs and with each snapshot.
    heap: Option<HeapGauge>,
    /// The Java heap's `(used, max)` read right after the last GCs (what survived, and what
    /// the GC left).
    heap_after_gc: Option<(u64, u64)>,
    /// For the snapshot taken when the heap ran out.
    out_of_memory: Option<OutOfMemory>,
    /// The JVM's command line (its flags decide what memcity may change: `oom.rs`, JFR).
    command_line: String,
    /// The JVM's lines memcity would cause on stdout are off (`oom::quiet_the_jvms_lines`).
    quieted: bool,
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
    // SAFETY: per contract.
    let mut worker = unsafe { Worker::new(agent, jni) };
    worker.start();
    while !agent.phase.get().worker_stops() {
        let wait = worker.turn(&requests);
        if let Ok(guard) = agent.monitor.enter() {
            // Re-check under the monitor so a GC that finished meanwhile is not slept through.
            if agent.gc_finished.load(Ordering::Acquire) == worker.clock.gc_seen
                && !agent.phase.get().stopping()
            {
                let _ = guard.wait(wait.as_millis().max(1) as i64);
            }
        }
    }
    worker.stop();
}

impl Worker {
    /// The worker with its state at the JVM's start or the attach: what the JVM is (its
    /// version, collector and flags decide how samples are judged) and every concern's state.
    ///
    /// # Safety
    /// `jni` must be the calling agent thread's JNIEnv.
    unsafe fn new(agent: &'static Agent, jni: *mut JNIEnv) -> Worker {
        let options = &agent.options;
        let jvm = JvmFacts::read(agent);
        let (gc, major) = (&jvm.gc, jvm.major);
        let collector_counts_types = gc_counts_types(gc);
        if !collector_counts_types && options.gc_counts.is_some() {
            debug!("{gc}: no GC counts (its collections count no types); estimates rest on walks and samples alone");
        }
        let mut markings = Markings::default();
        if jvm.every_gc_marks_all() {
            markings.canaries.every_gc_marks_all();
            debug!("{gc}: every GC marks the whole heap; canaries are let go at once");
        }
        let mut estimator = Estimator::default();
        if major.is_some_and(|m| m < FIRST_EXACT_OUTSIDE_TLAB_SAMPLING) {
            estimator.set_outside_tlab_bias(true);
            debug!(
                "JDK {}: estimates of objects over {} KB carry the sampler's outside-TLAB bias in their error",
                major.unwrap_or(0),
                crate::census::estimate::OUTSIDE_TLAB_RISK_BYTES / 1024,
            );
        }
        Worker {
            agent,
            jni,
            // SAFETY: per contract.
            vm: unsafe { jni::JNIEnv::from_raw(jni) }
                .ok()
                .and_then(|env| env.get_java_vm().ok()),
            chain: options.classifiers.clone(),
            classes: ClassTable::new(),
            memcity: MemcityShare::default(),
            naming: Naming::new(),
            clock: Clock::new(options, agent.start, Instant::now()),
            estimator,
            markings,
            gc_counts: GcCountState::new(collector_counts_types),
            searches: Searches::new(options.paths.unwrap_or(1.0)),
            lifetimes: (options.lifetimes && agent.sampler.is_some()).then(Lifetimes::default),
            epoch: 0,
            live_bytes: 0,
            live_objects_published: 0,
            before_attach: None,
            // SAFETY: `jni` is this thread's JNIEnv.
            heap: unsafe { HeapGauge::new(jni) },
            heap_after_gc: None,
            out_of_memory: None,
            command_line: jvm.command_line,
            quieted: false,
        }
    }

    /// The session's first snapshot: the first anchor. At VM start the heap is small, so the
    /// walk is short; attached to a running JVM, the heap may be anything: walk only if it fits.
    fn start(&mut self) {
        let agent = self.agent;
        info!(
            "started: classifiers {}, sampling {}, budget {}% of wall time, estimates {}",
            self.chain
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
            match (self.can_estimate(), agent.options.estimates) {
                (true, Some(every)) => format!("at GCs, at most every {} ms", every.as_millis()),
                _ => "off".to_string(),
            }
        );
        self.sync_site_recording();
        if agent.attached {
            let id = agent.next_class.fetch_add(1, Ordering::AcqRel);
            self.classes.reserve(id as usize + 1);
            self.classes.names[id as usize] = names::BEFORE_ATTACH.to_string();
            self.classes.named[id as usize] = true;
            self.before_attach = Some((id, u64::MAX));
        }
        let predicted = self.predicted_walk();
        if !agent.attached || self.clock.budget.fits(predicted) {
            let _ = self.walk_snapshot(Trigger::Start, agent.options.max_pause);
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
                if self.lifetimes.is_some() || agent.options.estimates.is_some() {
                    self.markings.collectors = Some(collectors);
                }
            }
            Err(e) => info!(
                "old-generation markings are learned from canaries alone, and lifetimes name no collector: {e}"
            ),
        }
    }

    /// One turn of the loop: requests, the heap running out, GC counts, the GCs since the last
    /// turn, sampling's cost, then a snapshot or a search step if one is due. Returns how long
    /// to sleep at most.
    fn turn(&mut self, requests: &std::sync::mpsc::Receiver<Request>) -> Duration {
        let agent = self.agent;
        // Requests first: a viewer waiting for an answer beats a GC-driven walk.
        while let Ok(request) = requests.try_recv() {
            match request {
                Request::Snapshot { force, reply } => {
                    let _ = reply.send(self.requested(force));
                }
                Request::Classifiers(chain) => {
                    info!(
                        "classifiers changed to {}",
                        chain.iter().map(|c| c.name()).collect::<Vec<_>>().join(":")
                    );
                    self.chain = chain;
                    self.sync_site_recording();
                }
            }
        }
        if agent.oom_state.load(Ordering::Acquire) == crate::oom::OOM_ASKED {
            self.out_of_memory();
        }
        self.take_gc_counts();
        let gcs = agent.gc_finished.load(Ordering::Acquire);
        if gcs != self.clock.gc_seen {
            // At a GC rather than at a walk: a loaded machine may defer walks past a short run.
            crate::failpoint(crate::Failpoint::Worker);
            self.clock.gc_seen = gcs;
            self.after_gcs(gcs);
            self.clock.gcs_pending(Instant::now());
        }
        self.adapt_sampling();
        if let Some(sampler) = &agent.sampler {
            self.searches
                .born_at
                .note(sampler.tracker.generation(), agent.start.elapsed());
        }
        self.step().min(self.search_step())
    }

    /// The worker's end: the heap's last snapshot (at an OutOfMemoryError the JVM exits with,
    /// that error's), the sampling's cost, and at a detach what the session holds in the JVM
    /// handed back.
    fn stop(&mut self) {
        let agent = self.agent;
        // The JVM exits while a thread waits in its OutOfMemoryError (another thread's error
        // went uncaught, the launcher shuts down): that error's snapshot, with the paths found
        // so far, is the one the session must end with.
        let oom_pending = agent.oom_state.load(Ordering::Acquire) == crate::oom::OOM_ASKED;
        if oom_pending && agent.phase.get().active() {
            self.out_of_memory();
        }
        self.end_search();
        if agent.phase.get().active() && !oom_pending {
            self.final_snapshot();
        }
        if let Some(sampler) = &agent.sampler {
            log_sampling_cost(sampler);
        }
        if agent.phase.get().releases() {
            self.release();
        }
        debug!("worker stopped after {} snapshots", self.clock.seq);
    }
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

/// The least average object size assumed when only the heap's used bytes are known: Java
/// objects average 30-60 bytes, so this overestimates a count (and a walk's stop), never the
/// other way.
pub(super) const BYTES_PER_OBJECT_AT_LEAST: u64 = 32;
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
            let point = self
                .markings
                .confirmed(&mut CanaryHeap(jni), &sampler.tracker);
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
    /// way holds them as targets (it compares objects with them: `paths/`); then they wait
    /// for its end, which calls this again.
    pub(super) fn delete_released(&mut self, sampler: &Sampler) {
        self.searches
            .released_later
            .extend(sampler.tracker.take_released());
        if self.searches.current.is_some() {
            return;
        }
        let jni = self.jni;
        for reference in self.searches.released_later.drain(..) {
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
        match self.markings.collectors_ran() {
            ran if ran.is_empty() => 0,
            ran => self.naming.strings.intern(&ran),
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
                        self.agent.options.gc_counts.is_some()
                            && self.gc_counts.collector_counts_types,
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
        self.markings
            .canaries
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
        self.markings.canaries.release(&mut CanaryHeap(self.jni));
        if let Some(starting) = self.gc_counts.starting.take() {
            // A stream that started after the detach would run on with no session to stop it.
            match starting.wait(DETACH_WAIT) {
                Some(Ok(counts)) => self.gc_counts.stream = Some(counts),
                Some(Err(_)) => {}
                None => warning!("detach: JFR's start for GC counts did not end within {} s; its stream may run until the JVM exits", DETACH_WAIT.as_secs()),
            }
        }
        if let Some(mut counts) = self.gc_counts.stream.take() {
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
        self.clock.budget.predict(objects)
    }

    /// One turn of the loop after requests: walk if a walk is due and fits, else estimate if one
    /// is due (the decision is [`Turn::plan`]'s). Returns how long to sleep at most.
    fn step(&mut self) -> Duration {
        let turn = self.clock.turn(
            Instant::now(),
            &self.agent.options,
            self.can_estimate(),
            self.filling(),
        );
        // Measured only when a walk is considered: it polls the samples' deaths.
        let predicted = turn.considers_walk().then(|| self.predicted_walk());
        let plan = turn.plan(&self.clock.budget, predicted);
        if let Some(refused) = plan.refused {
            if refused.counted {
                self.clock.refused_since += 1;
                debug!(
                    "no walk: predicted {} ms, max_pause {} ms",
                    refused.predicted.as_millis(),
                    self.agent.options.max_pause.as_millis()
                );
            }
            self.clock.walk_pending = false;
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

    /// Once a second, holds sampling's measured cost under `sampling_cost` (see
    /// `Sampler::adapt`).
    fn adapt_sampling(&mut self) {
        let (Some(sampler), Some(max)) = (self.sampler(), self.agent.options.sampling_cost) else {
            return;
        };
        let elapsed = self.clock.cost_check.1.elapsed();
        if elapsed < COST_CHECK {
            return;
        }
        let spent = sampler.cost().1;
        let fraction = (spent - self.clock.cost_check.0) as f64 / elapsed.as_nanos() as f64;
        self.clock.cost_check = (spent, Instant::now());
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
            let jvm = JvmFacts::read(agent);
            (
                format!("{}, by its flags ({e})", jvm.gc),
                jvm.gc == "Z" && !jvm.every_gc_marks_all(),
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
