//! The agent thread (`memcity-worker`): waits for GCs and requests, decides within the budget
//! whether to walk, walks, names, builds the tree and publishes it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use jni::sys::JNIEnv;
use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{
    snapshot::Trigger, stream_message::Kind, Handshake, Snapshot, SnapshotReply, StreamMessage,
    WalkCost,
};
use memcity_proto::PROTOCOL_VERSION;

use crate::budget::{Budget, Decision};
use crate::jvmti::{Jvmti, LocalFrame};
use crate::log::{debug, info, warning};
use crate::names;
use crate::options::Classifier;
use crate::sampling::MethodNames;
use crate::server::Request;
use crate::tags;
use crate::tree::{self, NameSource};
use crate::walk::{self, ClassFacts, WalkError};
use crate::Agent;

/// How often the sampling rate is checked against `max_samples`.
const RATE_CHECK: Duration = Duration::from_secs(1);
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
        }
    }

    /// Tags classes loaded since the last refresh. Array classes get no ClassPrepare event, so
    /// the loaded-class list, not events, is the source of truth.
    fn refresh(&mut self, jvmti: &Jvmti, jni: *mut JNIEnv) {
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
                // New since the last refresh: the next free id.
                let id = self.names.len() as u32;
                if jvmti.set_tag(class, tags::class_tag(id)).is_err() {
                    continue;
                }
                // Taken from now on, even if its name has to wait for the next refresh.
                self.reserve(id as usize + 1);
                id
            } else {
                tagged
            };
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
    epoch: u64,
    seq: u64,
    gc_seen: u64,
    /// GC count at the last snapshot.
    gc_at_snapshot: u64,
    aborted_since: u64,
    /// A GC happened that no snapshot covers yet.
    pending: bool,
    /// When the last walk (successful or not) ended, for the `period` option.
    last_snapshot: Instant,
    /// Sample count and time at the last sampling-rate check.
    rate_check: (u64, Instant),
}

pub fn handshake(agent: &Agent) -> Handshake {
    let property = |name| agent.jvmti.system_property(name).unwrap_or_default();
    let command_line = std::fs::read("/proc/self/cmdline")
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
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

/// The collector, from the flags that choose it (command line, then the environment variables
/// the launcher reads). Without a flag the JVM picks G1 on server-class machines.
fn gc_name(command_line: &str) -> String {
    let env = ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .collect::<Vec<_>>()
        .join(" ");
    let flags = format!("{command_line} {env}");
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
    let mut worker = Worker {
        agent,
        jni,
        classes: ClassTable::new(),
        strings: StringInterner::new(),
        methods: MethodNames::new(),
        site_names: vec![String::new()],
        thread_names: vec![String::new()],
        chain: agent.options.classifiers.clone(),
        budget: Budget::new(
            agent.options.budget,
            agent.options.min_interval,
            agent.options.max_pause,
            agent.start,
        ),
        epoch: 0,
        seq: 0,
        gc_seen: 0,
        gc_at_snapshot: 0,
        aborted_since: 0,
        pending: false,
        last_snapshot: Instant::now(),
        rate_check: (0, Instant::now()),
    };
    info!(
        "started: classifiers {}, sampling {}, budget {}% of wall time",
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
        agent.options.budget * 100.0
    );
    worker.snapshot(Trigger::Start);
    loop {
        if agent.stopping.load(Ordering::Acquire) || !agent.active.load(Ordering::Acquire) {
            break;
        }
        // Requests first: a viewer waiting for an answer beats a GC-driven walk.
        while let Ok(request) = requests.try_recv() {
            match request {
                Request::Snapshot(reply) => {
                    let result = worker.snapshot(Trigger::Request).ok_or_else(|| {
                        "the walk was aborted for running over max_pause; raise max_pause= or retry"
                            .to_string()
                    });
                    let _ = reply.send(result);
                }
                Request::Classifiers(chain) => {
                    info!(
                        "classifiers changed to {}",
                        chain.iter().map(|c| c.name()).collect::<Vec<_>>().join(":")
                    );
                    worker.chain = chain;
                }
            }
        }
        let gcs = agent.gc_finished.load(Ordering::Acquire);
        if gcs != worker.gc_seen {
            worker.gc_seen = gcs;
            worker.pending = true;
        }
        worker.adapt_sampling();
        let mut wait = POLL;
        let quiet_too_long = agent
            .options
            .period
            .is_some_and(|period| worker.last_snapshot.elapsed() >= period);
        if worker.pending || quiet_too_long {
            match worker.budget.decide(Instant::now()) {
                Decision::Walk => {
                    let trigger = if worker.pending {
                        Trigger::Gc
                    } else {
                        Trigger::Periodic
                    };
                    worker.snapshot(trigger);
                }
                Decision::WaitUntil(when) => {
                    wait = wait.min(when.saturating_duration_since(Instant::now()));
                }
            }
        }
        if let Ok(guard) = agent.monitor.enter() {
            // Re-check under the monitor so a GC that finished meanwhile is not slept through.
            if agent.gc_finished.load(Ordering::Acquire) == worker.gc_seen
                && !agent.stopping.load(Ordering::Acquire)
            {
                let _ = guard.wait(wait.as_millis().max(1) as i64);
            }
        }
    }
    if let Some(sampler) = &agent.sampler {
        let (samples, ns) = sampler.cost();
        debug!(
            "sampling: {samples} samples, {:.1} ms in callbacks ({:.0} ns each)",
            ns as f64 / 1e6,
            ns as f64 / samples.max(1) as f64
        );
    }
    debug!("worker stopped after {} snapshots", worker.seq);
}

impl Worker {
    /// Takes and publishes one snapshot; returns the reply for a requester, `None` if the walk
    /// was aborted.
    fn snapshot(&mut self, trigger: Trigger) -> Option<SnapshotReply> {
        if trigger != Trigger::Start {
            crate::failpoint(crate::Failpoint::Worker);
        }
        let jvmti = self.agent.jvmti;
        self.classes.refresh(&jvmti, self.jni);
        self.epoch = tags::next_epoch(self.epoch);
        let gc_now = self.agent.gc_finished.load(Ordering::Acquire);
        let facts = ClassFacts {
            object_array: &self.classes.object_array,
            class_class: self.classes.class_class,
            weak_reference: &self.classes.weak_reference,
            next_class_id: self.classes.names.len() as u32,
        };
        // A requested snapshot is wanted whatever it costs, up to the hard cap; a GC-driven one
        // gives up when it runs far past what the last walk cost.
        let abort_after = if trigger == Trigger::Request {
            self.agent.options.max_pause
        } else {
            self.budget.abort_after()
        };
        let outcome = walk::walk(
            &jvmti,
            facts,
            self.classes.names.len(),
            self.epoch,
            abort_after,
        );
        let now = Instant::now();
        self.last_snapshot = now;
        let mut result = match outcome {
            Ok(result) => {
                self.budget.record(result.pause, now);
                result
            }
            Err(WalkError::Aborted { pause }) => {
                self.budget.record(pause, now);
                self.aborted_since += 1;
                self.pending = false;
                warning!(
                    "heap walk aborted after {} ms (limit {} ms): the heap is too large for max_pause; the next walk waits for budget",
                    pause.as_millis(),
                    abort_after.as_millis()
                );
                return None;
            }
            Err(WalkError::Jvmti(e)) => {
                self.pending = false;
                if e.code == crate::jvmti::ERR_WRONG_PHASE {
                    return None; // the VM is shutting down
                }
                warning!("heap walk failed: {e}");
                return None;
            }
            Err(WalkError::Panicked) => {
                self.agent.disable("internal error during the heap walk");
                return None;
            }
        };
        self.pending = false;
        if result.objects.len() > result.first_new_class as usize {
            // Keep the ids the walk handed out, then name their classes (their mirrors are counted
            // from the next walk on).
            self.classes.reserve(result.objects.len());
            self.classes.refresh(&jvmti, self.jni);
        }
        // Class mirrors are not visited through a CLASS reference; count them from the class
        // list (plus the primitive mirrors, which no list reports).
        let class_class = self.classes.class_class as usize;
        if class_class != 0 {
            result.objects[class_class] = self.classes.mirrors + PRIMITIVE_MIRRORS;
            result.bytes[class_class] =
                self.classes.mirror_bytes + PRIMITIVE_MIRRORS * self.classes.min_mirror;
        }
        self.resolve_names();
        let built = tree::build(
            &result,
            &self.chain,
            &Names {
                classes: &self.classes.names,
                sites: &self.site_names,
                threads: &self.thread_names,
            },
            &mut self.strings,
        );
        let (samples, sampling_ns) = self.agent.sampler.as_ref().map_or((0, 0), |s| s.cost());
        let skipped = gc_now
            .saturating_sub(self.gc_at_snapshot)
            .saturating_sub(u64::from(trigger == Trigger::Gc));
        self.gc_at_snapshot = gc_now;
        let snapshot = Snapshot {
            seq: self.seq,
            time_ms: self.agent.start.elapsed().as_millis() as u64,
            gc_count: gc_now,
            trigger: trigger as i32,
            classifiers: self.chain.iter().map(|c| c.name().to_string()).collect(),
            root: Some(built.root),
            references: built.references,
            cost: Some(WalkCost {
                pause_ns: result.pause.as_nanos() as u64,
                objects_visited: result.visited,
                skipped_gcs: skipped,
                aborted_walks: std::mem::take(&mut self.aborted_since),
                total_pause_ns: self.budget.spent().as_nanos() as u64,
                wall_ns: self.budget.wall(now).as_nanos() as u64,
                dropped_snapshots: self.agent.hub.dropped_total(),
                samples,
                sampling_ns,
                sampling_interval: self
                    .agent
                    .sampler
                    .as_ref()
                    .map_or(0, |s| s.current_interval()),
            }),
            exactness: Some(built.exactness),
        };
        if let Some(table) = self.strings.take_new() {
            self.agent.publish(StreamMessage {
                kind: Some(Kind::Strings(table)),
            });
        }
        debug!(
            "snapshot {} ({:?}): {} objects, pause {} ms",
            self.seq,
            trigger,
            result.visited,
            result.pause.as_millis()
        );
        self.agent.publish(StreamMessage {
            kind: Some(Kind::Snapshot(snapshot)),
        });
        self.agent.snapshots.fetch_add(1, Ordering::Relaxed);
        let reply = SnapshotReply {
            seq: self.seq,
            pause_ns: result.pause.as_nanos() as u64,
        };
        self.seq += 1;
        Some(reply)
    }

    /// Once a second, keeps the allocation sample rate under `max_samples` (see `Sampler::adapt`).
    fn adapt_sampling(&mut self) {
        let (Some(sampler), Some(max)) = (&self.agent.sampler, self.agent.options.max_samples)
        else {
            return;
        };
        let elapsed = self.rate_check.1.elapsed();
        if elapsed < RATE_CHECK {
            return;
        }
        let samples = sampler.cost().0;
        let rate = (samples - self.rate_check.0) as f64 / elapsed.as_secs_f64();
        self.rate_check = (samples, Instant::now());
        if let Some(interval) = sampler.adapt(rate, max as f64) {
            match self.agent.jvmti.set_heap_sampling_interval(interval as i32) {
                Ok(()) => debug!("{rate:.0} samples/s: sampling interval now {interval} bytes"),
                Err(e) => warning!("cannot change the sampling interval: {e}"),
            }
        }
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
    fn gc_name_follows_the_last_flag() {
        assert_eq!(gc_name("java -XX:+UseZGC -jar app.jar"), "Z");
        assert_eq!(
            gc_name("java -XX:+UseSerialGC -XX:+UseParallelGC x"),
            "Parallel"
        );
        assert_eq!(gc_name("java -XX:+UseShenandoahGC x"), "Shenandoah");
    }
}
