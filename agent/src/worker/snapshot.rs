//! Taking a snapshot: an exact walk (at a GC, asked for, or forced), an estimate from the
//! samples, and the one assembly step both end in (`publish`), which reads as the list of what
//! a snapshot is made of.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use memcity_proto::v1::{
    snapshot::Trigger, stream_message::Kind, Exactness, FieldEdge, HeapUsage, OwnedEdge, Root,
    Snapshot, SnapshotReply, StreamMessage, WalkCost,
};

use super::classes::unsplit_memcity;
use super::clock::FORCED_WALK_EVERY;
use super::counts::{GC_COUNTS_FROM_OBJECTS, GC_COUNTS_FROM_WALK};
use super::naming::Names;
use super::{Basis, Worker, BYTES_PER_OBJECT_AT_LEAST};
use crate::census::estimate::Anchor;
use crate::census::gc_counts::GcCounts;
use crate::census::tree;
use crate::census::walk::{self, ClassFacts, WalkError, WalkResult};
use crate::jvmti::tags;
use crate::log::debug;
use crate::ports::server::WalkRefused;

/// Why an exact walk did not happen.
pub(super) enum WalkFailure {
    Aborted,
    /// The VM is shutting down, or JVMTI failed (logged).
    Failed,
}

/// A walk requested with `force` is aborted only past this, or twice `max_pause` if larger.
const FORCED_WALK_LIMIT: Duration = Duration::from_secs(30);
/// Longest an estimate goes without refreshing the class table (to count class mirrors) when
/// no new class was sampled.
const ESTIMATE_REFRESH: Duration = Duration::from_secs(10);

impl Worker {
    /// A snapshot asked for over gRPC: an exact walk when it fits `max_pause` and the budget,
    /// or when forced.
    pub(super) fn requested(&mut self, force: bool) -> Result<SnapshotReply, WalkRefused> {
        let predicted = self.predicted_walk();
        let max_pause = self.agent.options.max_pause;
        if !force {
            if !self.clock.budget.fits(predicted) {
                return Err(WalkRefused::PastMaxPause {
                    predicted_ms: predicted.as_millis(),
                    live_objects: self.live_objects(),
                    ns_per_object: self.clock.budget.ns_per_object(),
                    max_pause_ms: max_pause.as_millis(),
                });
            }
            let wait = self.clock.budget.wait_for_credit(Instant::now(), predicted);
            if !wait.is_zero() {
                return Err(WalkRefused::NotEarned {
                    budget_percent: self.agent.options.budget * 100.0,
                    predicted_ms: predicted.as_millis(),
                    retry_s: wait.as_secs_f64(),
                });
            }
        }
        if force {
            if let Err(since) = self.clock.force_walk(Instant::now()) {
                return Err(WalkRefused::ForcedTooSoon {
                    since_s: since.as_secs_f64(),
                    every_s: FORCED_WALK_EVERY.as_secs(),
                    retry_s: (FORCED_WALK_EVERY - since).as_secs_f64(),
                });
            }
        }
        let limit = if force {
            (max_pause * 2).max(FORCED_WALK_LIMIT)
        } else {
            max_pause
        };
        self.walk_snapshot(Trigger::Request, limit)
            .map_err(|failure| match failure {
                WalkFailure::Aborted => WalkRefused::Aborted,
                WalkFailure::Failed => WalkRefused::Failed,
            })
    }

    /// The last snapshot, at VM death: an estimate from the last walk and the samples since. Not
    /// a walk: by VMDeath the application's threads are gone and with them the roots that held
    /// its data (a walk there found the JDK's start-up heap), and the exit need not wait for one.
    pub(super) fn final_snapshot(&mut self) {
        if self.can_estimate() && self.agent.options.estimates.is_some() {
            self.estimate_snapshot(Trigger::End);
        }
    }

    /// Walks the heap and publishes the exact snapshot; the walk becomes the estimates' anchor.
    pub(super) fn walk_snapshot(
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
        // walk (see census/estimate/).
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
                self.clock.budget.record(result.pause, result.visited, now);
                result
            }
            Err(WalkError::Aborted { pause, visited }) => {
                self.clock.budget.record(pause, visited, now);
                self.clock.aborted_since += 1;
                self.clock.walk_pending = false;
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
                self.clock.walk_pending = false;
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
        let seq = self.clock.seq;
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
    pub(super) fn estimate_snapshot(&mut self, trigger: Trigger) {
        if self.sampler().is_none() {
            return;
        }
        let new_classes =
            self.agent.next_class.load(Ordering::Acquire) as usize > self.classes.names.len();
        if new_classes || self.clock.last_refresh.elapsed() >= ESTIMATE_REFRESH {
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
        let predicted = self.clock.budget.predict(counts.objects.iter().sum());
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
        let built = self.build_tree(counts);
        let now = Instant::now();
        let gc_count = self.agent.gc_finished.load(Ordering::Acquire);
        let skipped = self.clock.published(trigger, basis, gc_count, now);
        let exactness = self.exactness(built.exactness, basis);
        // Read before the graph is named, as the snapshot's moment.
        let tracking = self.tracking();
        let (fields, roots, owned) = self.graph_of(counts, basis);
        self.remember(counts);
        self.switch_gc_counts(built.root.objects);
        self.live_bytes = built.root.bytes;
        self.live_objects_published = built.root.objects;
        let confirmed = (built.root.objects).saturating_sub(built.root.objects_unconfirmed);
        let snapshot = Snapshot {
            seq: self.clock.seq,
            time_ms: self.agent.start.elapsed().as_millis() as u64,
            gc_count,
            trigger: trigger as i32,
            classifiers: self.chain.iter().map(|c| c.name().to_string()).collect(),
            root: Some(built.root),
            references: built.references,
            cost: Some(self.cost(counts, tracking, (predicted, skipped), now)),
            exactness: Some(exactness),
            fields,
            roots,
            owned,
            paths: self
                .searches
                .found
                .take()
                .map(|found| self.paths_proto(&found)),
            heap: self.read_heap().map(|(used_bytes, max_bytes)| HeapUsage {
                used_bytes,
                max_bytes,
            }),
            out_of_memory: self.out_of_memory.take(),
            dump: None,
            lifetimes: self.lifetimes_proto(),
        };
        self.send(snapshot, basis, counts.pause);
        // After publishing: starting JFR takes the worker a moment. Judged by what a marking
        // confirmed: an estimate swollen by promoted garbage (a steady service of 100,000
        // objects estimated at millions between old markings) would otherwise start JFR, and
        // JFR's start grows the JDK's shared caches (thousands of `HashMap$Node`s, held by
        // class mirrors and the JDK's statics, the application's by reachability): a step the
        // steady service's trend then reads as growth.
        if self.clock.budget.predict(confirmed) >= GC_COUNTS_FROM_WALK
            && confirmed >= GC_COUNTS_FROM_OBJECTS
        {
            self.start_gc_counts();
        }
    }

    /// The grouping tree of `counts` by the classifier chain, with memcity's own objects in a
    /// group of their own; `counts` stays per class, as the JVM counts (for estimates and GC
    /// counts).
    fn build_tree(&mut self, counts: &mut WalkResult) -> tree::Built {
        self.resolve_names();
        let moved = self.split_memcity(counts);
        let built = tree::build(
            counts,
            &self.chain,
            &Names {
                classes: &self.classes.names,
                sites: &self.naming.site_names,
                threads: &self.naming.thread_names,
                memcity: &self.memcity.of,
            },
            &mut self.naming.strings,
        );
        unsplit_memcity(counts, &moved);
        built
    }

    /// What the snapshot's numbers rest on: the tree's own exactness, and for an estimate its
    /// anchor, what it can miss, and the GC count it was last reconciled with.
    fn exactness(&self, mut exactness: Exactness, basis: Basis) -> Exactness {
        if let Basis::Estimate { anchor } = basis {
            let interval = self.sampler().map_or(0, |s| s.current_interval());
            exactness.anchor_seq = anchor.unwrap_or(0);
            exactness.anchored = anchor.is_some();
            // A type kept since the anchor with B bytes goes unsampled with chance exp(-B / I).
            exactness.detection_bytes = interval.saturating_mul(3);
            let (types, at_ms) = self.estimator.gc_counted();
            exactness.gc_counted_types = types;
            exactness.gc_count_time_ms = at_ms.saturating_sub(self.agent.start_unix_ms);
        }
        exactness
    }

    /// A walk's reference graph: field edges, roots, and what each root owns; an estimate has
    /// none.
    fn graph_of(
        &mut self,
        counts: &WalkResult,
        basis: Basis,
    ) -> (Vec<FieldEdge>, Vec<Root>, Vec<OwnedEdge>) {
        if basis != Basis::Walk {
            return Default::default();
        }
        if counts.unowned_roots > 0 {
            debug!(
                "{} roots met after the walk's {} owner numbers ran out",
                counts.unowned_roots,
                tags::MAX_OWNER
            );
        }
        self.graph(counts)
    }

    /// What sampling and tracking cost so far, and the interval in force.
    fn tracking(&self) -> Tracking {
        let sampler = self.sampler();
        let (samples, sampling_ns) = sampler.map_or((0, 0), |s| s.cost());
        let (agent_bytes, mut jvm_bytes) = sampler.map_or((0, 0), |s| s.tracker.memory());
        let (held, let_go) = self.markings.canaries.held();
        jvm_bytes += (held + let_go) as u64 * crate::census::canary::JVM_BYTES_PER_CANARY;
        Tracking {
            samples,
            sampling_ns,
            agent_bytes,
            jvm_bytes,
            interval: sampler.map_or(0, |s| s.current_interval()),
        }
    }

    /// What the snapshot cost the JVM and the agent: the stop, the budget, sampling and
    /// tracking, and what was skipped, refused or dropped since the last.
    fn cost(
        &mut self,
        counts: &WalkResult,
        t: Tracking,
        (predicted, skipped): (Duration, u64),
        now: Instant,
    ) -> WalkCost {
        let sampler = self.sampler();
        WalkCost {
            pause_ns: counts.pause.as_nanos() as u64,
            objects_visited: counts.visited,
            skipped_gcs: skipped,
            aborted_walks: std::mem::take(&mut self.clock.aborted_since),
            total_pause_ns: self.clock.budget.spent().as_nanos() as u64,
            wall_ns: self.clock.budget.wall(now).as_nanos() as u64,
            dropped_snapshots: self.agent.hub.dropped_total(),
            samples: t.samples,
            sampling_ns: t.sampling_ns,
            sampling_interval: t.interval,
            tracked_samples: sampler.map_or(0, |s| s.tracker.in_use()),
            untracked_samples: sampler.map_or(0, |s| s.tracker.untracked()),
            unheld_samples: sampler.map_or(0, |s| s.tracker.unheld()),
            tracking_agent_bytes: t.agent_bytes,
            tracking_jvm_bytes: t.jvm_bytes,
            predicted_walk_ns: predicted.as_nanos() as u64,
            refused_walks: std::mem::take(&mut self.clock.refused_since),
            gc_counts_on: self
                .gc_counts
                .stream
                .as_ref()
                .is_some_and(GcCounts::enabled),
            gc_count_pause_ns: self.gc_counts.last_pause_ns,
        }
    }

    /// Sends the snapshot, after the strings it is the first to use.
    fn send(&mut self, snapshot: Snapshot, basis: Basis, pause: Duration) {
        if let Some(table) = self.naming.strings.take_new() {
            self.agent.publish(StreamMessage {
                kind: Some(Kind::Strings(table)),
            });
        }
        debug!(
            "snapshot {} ({:?}, {}): {} objects, pause {} ms",
            self.clock.seq,
            snapshot.trigger(),
            match basis {
                Basis::Walk => "walk",
                Basis::Estimate { .. } => "estimated",
            },
            snapshot.root.as_ref().map_or(0, |r| r.objects),
            pause.as_millis()
        );
        self.agent.publish(StreamMessage {
            kind: Some(Kind::Snapshot(snapshot)),
        });
        self.agent.snapshots.fetch_add(1, Ordering::Relaxed);
        self.clock.seq += 1;
    }
}

/// Sampling's and tracking's figures at a snapshot (`Worker::tracking`).
#[derive(Clone, Copy)]
struct Tracking {
    samples: u64,
    sampling_ns: u64,
    agent_bytes: u64,
    jvm_bytes: u64,
    interval: u64,
}
