//! One estimate's sweep of the tracker: each sample put in the terms it counts in (see the
//! estimate's module head), deaths booked as their slots are freed.

use super::*;
use crate::census::walk::SampleCount;
use crate::intmap::IntMap;
use crate::sampling::tracker::Sample;
use crate::sampling::NO_SITE;

/// What one sweep of the tracker found for an estimate, per class and sample key.
pub(super) struct Swept {
    /// Births since the anchor that a GC has judged alive.
    pub(super) born: Vec<Moments>,
    /// Births since the anchor and the last GC, added to `sampled` once their survival shares
    /// are known.
    pub(super) pending: IntMap<(u32, u64), Moments>,
    /// Judged births' fates, per class and per class and site.
    pub(super) fates: Vec<Fates>,
    pub(super) fates_at: IntMap<(u32, u32), Fates>,
    /// Judged births alive that no old marking (nor the class's last GC count, nor a search)
    /// has met: `(weight, bytes)`.
    pub(super) unconfirmed: Vec<(f64, f64)>,
    /// The samples' part of the tree, per sample key.
    pub(super) sampled: IntMap<(u32, u64), SampleCount>,
    /// Where a search count is the base: the births since it, by what judged them.
    pub(super) since_count: IntMap<(u32, u64), SinceCount>,
}

impl Swept {
    pub(super) fn new(classes: usize) -> Swept {
        Swept {
            born: vec![Moments::default(); classes],
            pending: IntMap::default(),
            fates: vec![Fates::default(); classes],
            fates_at: IntMap::default(),
            unconfirmed: vec![(0.0, 0.0); classes],
            sampled: IntMap::default(),
            since_count: IntMap::default(),
        }
    }
}

/// One estimate's sweep of the tracker: each sample put in the terms it counts in (see the
/// module's head), deaths booked in the estimator as their slots are freed.
pub(super) struct Sweep<'a> {
    pub(super) anchor_gen: Option<u32>,
    pub(super) last_gc: u32,
    pub(super) confirmed: u32,
    pub(super) counted_at: &'a [u32],
    pub(super) searched: &'a [Option<SearchCount>],
    pub(super) young_keeps: bool,
    pub(super) now_ms: u32,
    pub(super) died: &'a mut Vec<Moments>,
    pub(super) born_died: &'a mut Vec<Fates>,
    pub(super) born_died_at: &'a mut IntMap<(u32, u32), Fates>,
    pub(super) found: Swept,
}

impl Sweep<'_> {
    pub(super) fn take(&mut self, sample: &Sample, dead: bool) {
        // A search reached it and none through every root has missed it since.
        let reached = sample.reached() && !sample.missed;
        if !dead {
            self.since_search_count(sample, reached);
        }
        let in_anchor = self.anchor_gen.is_some_and(|g| sample.seen == g);
        let after_anchor = !in_anchor && self.anchor_gen.is_none_or(|g| sample.born > g);
        let since_anchor = after_anchor && sample.born < self.last_gc;
        if self.judged_by_nothing(sample, dead, after_anchor, reached) {
            if !sample.missed {
                let age = self.age(sample);
                self.found
                    .since_count
                    .entry((sample.class, sample.key()))
                    .or_default()
                    .unjudged[age]
                    .add(sample);
            }
            return;
        }
        if dead {
            self.book_death(sample, in_anchor, after_anchor);
            return;
        }
        if !after_anchor && !in_anchor {
            return; // garbage at the anchor, not yet freed
        }
        if !in_anchor && !since_anchor {
            self.found
                .pending
                .entry((sample.class, sample.key()))
                .or_default()
                .add(sample);
            return;
        }
        self.count_alive(sample, since_anchor);
    }

    pub(super) fn age(&self, sample: &Sample) -> usize {
        age_bin(self.now_ms.saturating_sub(sample.birth.ms))
    }

    /// A live sample of a class a search counted: in the part of the births since that count
    /// that judged it (see [`SinceCount`]).
    pub(super) fn since_search_count(&mut self, sample: &Sample, reached: bool) {
        let Some(&Some(count)) = self.searched.get(sample.class as usize) else {
            return;
        };
        let age = self.age(sample);
        let parts = self
            .found
            .since_count
            .entry((sample.class, sample.key()))
            .or_default();
        if sample.born < count.started {
            if reached {
                parts.reached.add(sample);
            }
        } else if sample.born < count.generation {
            parts.during.add(sample);
        } else if reached || sample.born < self.confirmed {
            parts.known.add(sample);
        } else {
            parts.unjudged[age].add(sample);
        }
    }

    /// Where young collections keep what weak references hold, a class no search counted
    /// since the anchor: its births since (pending ones too) that no search reached and no
    /// old marking met are judged by nothing, and count at the share the searches judged alive
    /// (`apply_search_counts`); one a search through every root missed counts not at all,
    /// unless one reaches it again.
    pub(super) fn judged_by_nothing(
        &self,
        sample: &Sample,
        dead: bool,
        after_anchor: bool,
        reached: bool,
    ) -> bool {
        let class = sample.class as usize;
        self.young_keeps
            && after_anchor
            && !dead
            && self.searched.get(class).is_none_or(Option::is_none)
            && !reached
            && sample.born
                >= self
                    .confirmed
                    .max(self.counted_at.get(class).copied().unwrap_or(0))
    }

    /// A death: of a sample alive at the anchor, subtracted; of a birth since, one fate more.
    pub(super) fn book_death(&mut self, sample: &Sample, in_anchor: bool, after_anchor: bool) {
        let class = sample.class as usize;
        if in_anchor {
            at(self.died, class).add(sample);
        } else if after_anchor {
            let f = at(self.born_died, class);
            f.dead += sample.weight;
            f.samples += 1.0;
            if sample.site != NO_SITE {
                let f = self
                    .born_died_at
                    .entry((sample.class, sample.site))
                    .or_default();
                f.dead += sample.weight;
                f.samples += 1.0;
            }
        }
    }

    /// A live sample in the anchor or born since and judged by a GC: in its key's part of the
    /// tree, and a birth's fate.
    pub(super) fn count_alive(&mut self, sample: &Sample, since_anchor: bool) {
        let class = sample.class as usize;
        let w = sample.weight;
        let found = &mut self.found;
        let entry = found
            .sampled
            .entry((sample.class, sample.key()))
            .or_default();
        entry.objects += 1;
        entry.weight += w;
        entry.variance += w * (w - 1.0);
        if !since_anchor {
            return;
        }
        at(&mut found.born, class).add(sample);
        let f = at(&mut found.fates, class);
        f.alive += w;
        f.samples += 1.0;
        if sample.site != NO_SITE {
            let f = found
                .fates_at
                .entry((sample.class, sample.site))
                .or_default();
            f.alive += w;
            f.samples += 1.0;
        }
        let counted = self.counted_at.get(class).copied().unwrap_or(0);
        // Between markings a weak reference stands whether its object lives or not, but the
        // path search walks from the GC roots: a sample it reached (and named a holder of) was
        // alive then, whatever the old generation says.
        if sample.born >= self.confirmed.max(counted) && !sample.reached() {
            entry.unconfirmed += w;
            let u = at(&mut found.unconfirmed, class);
            u.0 += w;
            u.1 += w * sample.size as f64;
        }
    }
}
