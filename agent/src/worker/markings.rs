//! When the old generation was last marked: what tells a standing sample from a live one
//! between markings (`census/canary.rs`: canaries the worker makes and watches; `census/
//! collectors.rs`: the collectors' own cycle counts). The estimator trusts a sample's death or
//! survival only up to the last marking these confirm.

use crate::census::canary::{Canaries, HOLD_GCS};
use crate::census::collectors::{Collectors, GcGenerations, MarkingClock};
use crate::jvmti::CanaryHeap;
use crate::sampling::tracker::Tracker;

#[derive(Default)]
pub(super) struct Markings {
    pub(super) canaries: Canaries,
    /// The JVM's collectors, to say which reclaimed a lifetime's object and when the old
    /// generation was marked (`None`: unknown).
    pub(super) collectors: Option<Collectors>,
    /// When the old generation was last marked, from the collectors' counts.
    pub(super) clock: MarkingClock,
    /// The tracker generation at each GC, to date a marking in samples' generations.
    pub(super) generations: GcGenerations,
}

impl Markings {
    /// The tracker generation up to which samples were judged by an old marking: the later of
    /// what the canaries confirm and what the collectors' counts say. Polls the canaries first
    /// (see `Canaries::poll`).
    pub(super) fn confirmed(&mut self, heap: &mut CanaryHeap, tracker: &Tracker) -> u32 {
        let confirmed = self.canaries.poll(heap);
        let counted = match &self.collectors {
            Some(c) => self.clock.look(c.look(), tracker.generation()),
            None => 0,
        };
        let point = confirmed.max(counted);
        self.generations
            .note(tracker.last_gc_moment().gcs, tracker.generation());
        // A major collection of generational ZGC runs a young one inside it, which marks
        // through every weak reference: a sample still young then survives it dead or alive.
        // Only samples born a canary's tenure (in GCs) before the point were old by then, and
        // judged by the old marking (the rest wait for a later one, or a search). The hold
        // limit is set exactly there (`say_collector`).
        if tracker.hold_limited() {
            self.generations.back(point, HOLD_GCS as u32)
        } else {
            point
        }
    }

    /// The collectors that ran since the last look, named (`Collectors::ran`); empty when
    /// unknown or none did (references a concurrent collector cleared after its pauses).
    pub(super) fn collectors_ran(&mut self) -> String {
        self.collectors
            .as_mut()
            .map(Collectors::ran)
            .unwrap_or_default()
    }
}
