//! GC-count reconciliation: the collector's own per-type counts (JFR `jdk.ObjectCountAfterGC`,
//! `gc_counts.rs`) started, switched and stopped as the heap grows or fills, and each count
//! reconciled with the estimate published after its GC. Separate because it is a loop of its
//! own beside the snapshots: it reads JFR's stream, weighs what counting adds to a GC's pause,
//! and feeds the estimator, touching the rest of the worker only to ask for an estimate.

use std::collections::VecDeque;
use std::time::Duration;

use memcity_proto::v1::snapshot::Trigger;

use super::schedule::GC_SETTLE;
use super::Worker;
use crate::aside::Aside;
use crate::census::gc_counts::{self, GcCount, GcCounts};
use crate::census::walk::WalkResult;
use crate::log::{debug, info, warning};

/// One published snapshot's per-class numbers.
pub(super) struct Recent {
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
pub(super) const GC_COUNTS_FROM_WALK: Duration = Duration::from_millis(200);
/// ...and once the heap holds this many objects, so JFR's own stay a few percent of the city
/// even where walks are slow (a loaded machine, a debug build of the agent).
pub(super) const GC_COUNTS_FROM_OBJECTS: u64 = 1_000_000;

/// What became of a GC count.
#[derive(Debug, PartialEq, Eq)]
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
pub(super) const DEFAULT_COUNT_NS_PER_OBJECT: f64 = 7.0;

/// The collector's own type counts: the JFR stream when it runs, its start and switches under
/// way aside, what counting costs a GC, and the snapshots a count is reconciled with.
pub(super) struct GcCountState {
    /// The stream, when running.
    pub(super) stream: Option<GcCounts>,
    /// Whether starting it was tried (once, when the heap grew too large to walk often).
    pub(super) tried: bool,
    /// The stream's start, under way on a thread of its own (`aside.rs`).
    pub(super) starting: Option<Aside<GcCounts>>,
    /// A switch of counting on or off, under way likewise.
    pub(super) switching: Option<(bool, Aside<()>)>,
    /// The collector counts types for JFR (`jvm::gc_counts_types`).
    pub(super) collector_counts_types: bool,
    /// What counting costs the GC per live object: measured from its phase, else assumed.
    pub(super) ns_per_object: f64,
    /// What the last count added to its GC's pause.
    pub(super) last_pause_ns: u64,
    /// Per-class numbers of the last snapshots, to find what the estimate said at a counted GC.
    pub(super) recent: VecDeque<Recent>,
    /// The newest GC count, until a snapshot taken after its GC exists to reconcile it with.
    pub(super) waiting: Option<GcCount>,
}

impl GcCountState {
    /// Keeps a published snapshot's per-class numbers, the last [`RECENT`] of them.
    fn remember(&mut self, counts: &WalkResult, unix_ms: u64) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        // A GC's count is the heap that GC left, without the births since (`census/estimate/`).
        let (objects, bytes, variance) = crate::census::estimate::at_last_gc(counts);
        self.recent.push_back(Recent {
            unix_ms,
            last_gc: counts.last_gc,
            objects,
            bytes,
            variance,
        });
    }

    /// The first snapshot kept that was taken once the counted GC's deaths were in; else
    /// whether to wait for it (the count arrived within the estimates' interval) or give up
    /// (so old that the GC's snapshot went).
    fn snapshot_after(&self, counted_ms: u64, now_ms: u64) -> Result<usize, Reconciled> {
        let settled = counted_ms + GC_SETTLE.as_millis() as u64;
        match self.recent.iter().position(|r| r.unix_ms >= settled) {
            Some(then) => Ok(then),
            None if now_ms.saturating_sub(counted_ms) < COUNT_PATIENCE.as_millis() as u64 => {
                Err(Reconciled::NotYet)
            }
            None => Err(Reconciled::Never),
        }
    }

    /// What the count added to its GC's pause (`phase_ns`, when reported), per live object of
    /// snapshot `then` once that is enough objects to measure by.
    fn measured(&mut self, phase_ns: Option<u64>, then: usize) {
        let Some(ns) = phase_ns else { return };
        self.last_pause_ns = ns;
        let live_then: u64 = self.recent[then].objects.iter().sum();
        if live_then > 100_000 {
            self.ns_per_object = ns as f64 / live_then as f64;
        }
    }

    pub(super) fn new(collector_counts_types: bool) -> GcCountState {
        GcCountState {
            stream: None,
            tried: false,
            starting: None,
            switching: None,
            collector_counts_types,
            ns_per_object: DEFAULT_COUNT_NS_PER_OBJECT,
            last_pause_ns: 0,
            recent: VecDeque::new(),
            waiting: None,
        }
    }
}

impl Worker {
    /// With the heap nearly full, memcity's JFR stream goes: its threads allocate, and at an
    /// OutOfMemoryError they would fail and force full GCs one after another while the worker
    /// searches the paths at the error (seen on G1: the search then reached nothing in 5 s).
    /// Closing it is a Java call that may wait as long as the heap stays full (`aside.rs`), so
    /// it is made aside, and logs what came of it there.
    pub(super) fn stop_gc_counts_when_tight(&mut self) {
        let (Some(counts), Some(vm)) = (self.gc_counts.stream.take(), &self.vm) else {
            return;
        };
        self.gc_counts.switching = None;
        let _ = crate::aside::spawn(vm, "jfr-stop", move |env| {
            let mut counts = counts;
            match counts.stop(env) {
                Ok(()) => info!("the Java heap is nearly full: memcity's JFR stream (GC counts) stops, so that it does not compete for the rest"),
                Err(e) => warning!("{e}"),
            }
            Ok(())
        });
    }

    /// Starts the collector's own type counts (JFR), if asked for and possible; tried once. The
    /// start (JFR loads its classes, some hundreds of milliseconds) runs aside, and
    /// [`take_gc_counts`](Self::take_gc_counts) takes the stream when it is up.
    pub(super) fn start_gc_counts(&mut self) {
        if self.agent.options.gc_counts.is_none() || !self.gc_counts.collector_counts_types {
            return;
        }
        if self.heap_is_tight() {
            return; // JFR makes objects of its own (`oom.rs`); tried again at a later snapshot
        }
        if std::mem::replace(&mut self.gc_counts.tried, true) {
            return;
        }
        let Some(vm) = &self.vm else {
            return;
        };
        gc_counts::claim_jfr_threads(&self.command_line);
        self.gc_counts.starting = Some(crate::aside::spawn(vm, "jfr-start", |env| {
            GcCounts::start(env)
        }));
    }

    /// Takes the stream once its start is done, and a switch once made.
    fn follow_gc_counts_calls(&mut self) {
        if let Some(started) = self.gc_counts.starting.as_ref().and_then(|s| s.poll()) {
            self.gc_counts.starting = None;
            match started {
                Ok(counts) => {
                    info!(
                        "GC counts on: full GCs count live objects per type, and G1 remarks bound them (JFR jdk.ObjectCountAfterGC), while that adds under {} ms",
                        self.agent.options.gc_counts.unwrap_or_default().as_millis()
                    );
                    self.gc_counts.stream = Some(counts);
                    if self.heap_is_tight() {
                        self.stop_gc_counts_when_tight(); // filled up while JFR started
                    }
                }
                Err(why) => {
                    info!("no GC counts ({why}); estimates rest on walks and samples alone")
                }
            }
        }
        if let Some((on, switched)) = self
            .gc_counts
            .switching
            .as_ref()
            .and_then(|(on, call)| Some((*on, call.poll()?)))
        {
            self.gc_counts.switching = None;
            match switched {
                Ok(()) => {
                    if let Some(counts) = &mut self.gc_counts.stream {
                        counts.switched(on);
                    }
                }
                Err(why) => warning!("{why}"),
            }
        }
    }

    /// Reconciles the estimates with the newest complete GC count, and publishes the result.
    pub(super) fn take_gc_counts(&mut self) {
        self.follow_gc_counts_calls();
        if self.gc_counts.stream.is_none() {
            return;
        }
        if let Some(count) = gc_counts::take_ready()
            .into_iter()
            .rfind(|c| !c.classes.is_empty())
        {
            self.gc_counts.waiting = Some(count);
        }
        let Some(count) = self.gc_counts.waiting.take() else {
            return;
        };
        match self.reconcile(&count) {
            Reconciled::Done => {
                if self.agent.options.estimates.is_some() && self.can_estimate() {
                    self.estimate_snapshot(Trigger::Gc);
                }
            }
            Reconciled::NotYet => self.gc_counts.waiting = Some(count),
            Reconciled::Never => {}
        }
    }

    /// Shifts each counted type's estimate so that it equals a full GC's count at that GC (see
    /// `Estimator::shift_by`), comparing with the first snapshot published after the GC; a count
    /// that is only an upper bound (a G1 remark's) lowers the estimates above it.
    fn reconcile(&mut self, count: &GcCount) -> Reconciled {
        let now = crate::unix_ms(std::time::SystemTime::now());
        let then = match self.gc_counts.snapshot_after(count.time_unix_ms, now) {
            Ok(then) => then,
            Err(not) => return not,
        };
        self.gc_counts.measured(count.phase_ns, then);
        if self.estimator.anchor().is_none() || !self.can_estimate() {
            return Reconciled::Never;
        }
        let mut by_name: std::collections::HashMap<&str, Vec<u32>> =
            std::collections::HashMap::new();
        for (id, name) in self.classes.names.iter().enumerate() {
            // memcity's share of a class carries its name but no GC counts it apart.
            let ours = self.memcity.of.contains_key(&(id as u32));
            if self.classes.named.get(id).copied().unwrap_or(false) && !ours {
                by_name.entry(name.as_str()).or_default().push(id as u32);
            }
        }
        let recent = &self.gc_counts.recent[then];
        let get = |v: &Vec<u64>, id: u32| v.get(id as usize).copied().unwrap_or(0);
        let mut shifts = Vec::new();
        let mut lowered = Vec::new();
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
                "GC count {java}: {objects} objects, {then_objects} estimated then (ids {ids:?}){}",
                if count.exact { "" } else { ", an upper bound" }
            );
            if !count.exact {
                // A remark's count takes the garbage of young regions for live: it can say
                // only that an estimate above it is too high.
                if *objects < then_objects {
                    lowered.push((
                        target,
                        *objects as f64 - then_objects as f64,
                        (*bytes as f64 - then_bytes as f64).min(0.0),
                    ));
                }
                continue;
            }
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
        for (class, objects, bytes) in lowered {
            self.estimator.lower_by(class, objects, bytes);
        }
        self.estimator.note_gc_count(count.time_unix_ms);
        Reconciled::Done
    }

    /// Keeps a snapshot's per-class numbers for [`reconcile`](Self::reconcile).
    pub(super) fn remember(&mut self, counts: &WalkResult) {
        if self.gc_counts.stream.is_some() {
            let now = crate::unix_ms(std::time::SystemTime::now());
            self.gc_counts.remember(counts, now);
        }
    }

    /// Turns the GC's counting off while it is predicted to add more than `gc_counts` to a
    /// pause, and on again once it fits with a margin (so it does not flip at the border).
    pub(super) fn switch_gc_counts(&mut self, live_objects: u64) {
        let (Some(counts), Some(limit)) =
            (self.gc_counts.stream.as_ref(), self.agent.options.gc_counts)
        else {
            return;
        };
        let predicted =
            Duration::from_secs_f64(live_objects as f64 * self.gc_counts.ns_per_object / 1e9);
        let on = if counts.enabled() {
            predicted <= limit
        } else {
            predicted <= limit.mul_f64(0.8)
        };
        if on == counts.enabled() || self.gc_counts.switching.is_some() {
            return;
        }
        let Some(vm) = &self.vm else {
            return;
        };
        crate::log::once!(
            Info,
            "GC counts {}: a count of {live_objects} objects would add about {} ms to a pause (limit {} ms)",
            if on { "on again" } else { "off" },
            predicted.as_millis(),
            limit.as_millis()
        );
        // A JFR setting takes the recorder's lock: aside, like the stream's start and stop.
        let counts = counts.clone();
        let call = crate::aside::spawn(vm, "jfr-switch", move |env| counts.set_enabled(env, on));
        self.gc_counts.switching = Some((on, call));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walked(objects: Vec<u64>) -> WalkResult {
        WalkResult {
            bytes: objects.iter().map(|o| o * 16).collect(),
            objects,
            ..Default::default()
        }
    }

    #[test]
    fn a_count_is_reconciled_with_the_first_snapshot_after_its_gc_settled() {
        let mut state = GcCountState::new(true);
        let settle = GC_SETTLE.as_millis() as u64;
        state.remember(&walked(vec![1]), 1_000);
        state.remember(&walked(vec![2]), 1_000 + settle + 5);
        state.remember(&walked(vec![3]), 1_000 + settle + 50);
        assert_eq!(state.snapshot_after(1_000, 1_100), Ok(1));
        // A count of a GC no snapshot followed yet waits, then is given up.
        let later = 1_000 + settle + 60;
        assert_eq!(state.snapshot_after(later, later), Err(Reconciled::NotYet));
        let patience = COUNT_PATIENCE.as_millis() as u64;
        assert_eq!(
            state.snapshot_after(later, later + patience),
            Err(Reconciled::Never)
        );
    }

    #[test]
    fn only_the_last_snapshots_are_kept() {
        let mut state = GcCountState::new(true);
        for i in 0..RECENT as u64 + 5 {
            state.remember(&walked(vec![i]), i);
        }
        assert_eq!(state.recent.len(), RECENT);
        assert_eq!(state.recent.front().map(|r| r.unix_ms), Some(5));
    }

    #[test]
    fn counting_is_measured_per_live_object_only_on_a_heap_big_enough() {
        let mut state = GcCountState::new(true);
        state.remember(&walked(vec![50_000]), 0);
        state.remember(&walked(vec![400_000, 100_000]), 10);
        state.measured(Some(1_000_000), 0);
        assert_eq!(state.last_pause_ns, 1_000_000);
        assert_eq!(
            state.ns_per_object, DEFAULT_COUNT_NS_PER_OBJECT,
            "too few objects"
        );
        state.measured(Some(2_500_000), 1);
        assert_eq!(state.ns_per_object, 5.0);
        state.measured(None, 1);
        assert_eq!(state.last_pause_ns, 2_500_000, "no phase, nothing learned");
    }
}
