//! Where young collections keep what weak references hold (generational ZGC): a complete path
//! search's count of a class as the estimate's base, and the births since it at the shares the
//! searches judged alive by age.

use super::*;
use crate::census::walk::{Pending, SampleCount, WalkResult};
use crate::intmap::IntMap;
use crate::sampling::tracker::Tracker;

/// A complete path search's count of a class's reachable objects (see `Estimator::searched`).
#[derive(Debug, Clone, Copy)]
pub(super) struct SearchCount {
    pub(super) objects: u64,
    /// 0 for objects the search kept keys for; for the rest, met once per reference, the
    /// variance of the sketch that counted them (`distinct.rs`).
    pub(super) variance: f64,
    /// Tracker generations as the search started and as it ended.
    pub(super) started: u32,
    pub(super) generation: u32,
}

/// A sample key's samples of a class with a search count (see [`Estimator::set_search_count`]):
/// born before the search and reached by one (how the count splits by site); born while it
/// ran, which it may or may not have counted; born since and known alive (reached since, or
/// met by an old marking); born since and judged by nothing.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct SinceCount {
    pub(super) reached: Moments,
    pub(super) during: Moments,
    pub(super) known: Moments,
    /// By age now ([`age_bin`]).
    pub(super) unjudged: [Moments; AGE_BINS],
}

impl SinceCount {
    pub(super) fn merge(&mut self, other: &SinceCount) {
        self.reached.merge(&other.reached);
        self.during.merge(&other.during);
        self.known.merge(&other.known);
        for (mine, theirs) in self.unjudged.iter_mut().zip(&other.unjudged) {
            mine.merge(theirs);
        }
    }

    pub(super) fn unjudged_samples(&self) -> u64 {
        self.unjudged.iter().map(|m| m.samples).sum()
    }

    /// The unjudged births at `shares` (by age bin) added to their sample key's part.
    pub(super) fn add_unjudged(&self, entry: &mut SampleCount, shares: &[(f64, f64); AGE_BINS]) {
        for (births, &(m, _)) in self.unjudged.iter().zip(shares) {
            add_at_share(entry, m, births);
        }
    }

    /// The unjudged births at `shares` (by age bin).
    pub(super) fn unjudged_predicted(&self, shares: &[(f64, f64); AGE_BINS]) -> Pending {
        let mut predicted = Pending::default();
        for (births, &(m, var_m)) in self.unjudged.iter().zip(shares) {
            if births.samples > 0 {
                predicted.add(&Pending::predicted(m, var_m, births));
            }
        }
        predicted
    }
}

impl Estimator {
    /// Per class, the shares its births since a count are valued at, by age bin (bin 0: of
    /// every age), and their variance: from its verdicts drawn toward every class's, every
    /// class's without its own, whole without any verdict (in doubt, as elsewhere).
    pub(super) fn shares(&self) -> impl Fn(usize) -> [(f64, f64); AGE_BINS] + '_ {
        let mut every: AgedFates = Default::default();
        for aged in &self.verdicts {
            for (sum, fates) in every.iter_mut().zip(aged) {
                *sum = sum.plus(fates);
            }
        }
        move |class: usize| {
            std::array::from_fn(|bin| match at_age_or_older(&every, bin).survival() {
                Some(pooled) => self
                    .verdicts
                    .get(class)
                    .and_then(|aged| at_age_or_older(aged, bin).survival_among(pooled.0))
                    .unwrap_or(pooled),
                None => (1.0, 0.0),
            })
        }
    }

    /// Where the estimates rest on the path search's counts (generational ZGC), how far they
    /// have moved from them: the most any counted class's births since its count that nothing
    /// has judged, at their shares, add to it, as a share of the count (counts of
    /// [`RECOUNT_MIN_OBJECTS`] or more). Nothing else judges those births before the next
    /// full search, half a minute on, and where no GC comes (a steady server on a large heap:
    /// none in 20 s) no estimate shows them either until the snapshots' period: a server's
    /// session strings were counted at the share its start-up catalog had been judged alive,
    /// all of them, and rose 17 % (the worker counts again past [`RECOUNT_SHARE`]). From the
    /// live samples, as [`Estimator::estimate`] values them. Worker thread.
    pub fn births_since_count(&self, tracker: &Tracker) -> f64 {
        if !tracker.hold_limited() || self.searched.iter().all(Option::is_none) {
            return 0.0;
        }
        let now_ms = tracker.ms();
        let confirmed = self.confirmed;
        let shares = self.shares();
        let mut since: IntMap<u32, [f64; AGE_BINS]> = IntMap::default();
        tracker.for_each_sample(|sample| {
            let Some(Some(count)) = self.searched.get(sample.class as usize) else {
                return;
            };
            let counted_gen = &count.generation;
            let reached = sample.reached() && !sample.missed;
            if sample.born >= *counted_gen && !reached && sample.born >= confirmed {
                let bin = age_bin(now_ms.saturating_sub(sample.birth.ms));
                since.entry(sample.class).or_default()[bin] += sample.weight;
            }
        });
        let mut most = 0.0f64;
        for (class, births) in since {
            let Some(Some(count)) = self.searched.get(class as usize) else {
                continue;
            };
            let counted = count.objects as f64;
            if counted < RECOUNT_MIN_OBJECTS {
                continue;
            }
            let shares = shares(class as usize);
            let valued: f64 = births.iter().zip(&shares).map(|(b, (m, _))| b * m).sum();
            most = most.max(valued / counted);
        }
        most
    }

    /// Each class a complete path search counted, where young collections keep what weak
    /// references hold (see [`Estimator::set_search_count`]): its count, its births since
    /// known alive, and the rest of its births since at its judged share, replacing the
    /// estimate from standing samples; its sample keys' parts to match (the count by the
    /// sites of the samples it reached, each birth since as counted).
    pub(super) fn apply_search_counts(
        &self,
        counts: &mut WalkResult,
        sampled: &mut IntMap<(u32, u64), SampleCount>,
        since_count: &IntMap<(u32, u64), SinceCount>,
    ) {
        let shares = self.shares();
        let mut by_class: IntMap<u32, SinceCount> = IntMap::default();
        for (&(class, _), parts) in since_count {
            by_class.entry(class).or_default().merge(parts);
        }
        let mut rebuilt = Vec::new();
        for (class, searched) in self.searched.iter().enumerate() {
            let Some(count) = *searched else {
                continue;
            };
            if class >= counts.objects.len() {
                continue;
            }
            let parts = by_class.get(&(class as u32)).copied().unwrap_or_default();
            let shares = shares(class);
            let scale = count_class(counts, class, count, &parts, &shares);
            rebuilt.push((class as u32, shares, scale));
        }
        // Classes no search counted: their births judged by nothing at the share.
        for (&class, parts) in &by_class {
            if self
                .searched
                .get(class as usize)
                .is_some_and(Option::is_some)
                || parts.unjudged_samples() == 0
            {
                continue;
            }
            let shares = shares(class as usize);
            add_unjudged_births(counts, class, parts, &shares);
            for (&(c, key), parts) in since_count.iter().filter(|((c, _), _)| *c == class) {
                if parts.unjudged_samples() > 0 {
                    let entry = sampled.entry((c, key)).or_default();
                    entry.objects += parts.unjudged_samples();
                    parts.add_unjudged(entry, &shares);
                }
            }
        }
        sampled.retain(|&(class, _), _| !rebuilt.iter().any(|r| r.0 == class));
        for &(class, shares, scale) in &rebuilt {
            rebuild_parts(sampled, since_count, class, &shares, scale);
        }
    }
}

/// A counted class's estimate: the count, its births since known alive, and the rest of its
/// births since at the judged `shares`. Returns what each sample the search reached stands for
/// (the count over their weight), to split the count by sample key.
fn count_class(
    counts: &mut WalkResult,
    class: usize,
    count: SearchCount,
    parts: &SinceCount,
    shares: &[(f64, f64); AGE_BINS],
) -> f64 {
    let (m, var_m) = shares[0];
    let mut predicted = parts.unjudged_predicted(shares);
    // Made during the search: half, give or take the other half (a 95 % half-width).
    let mut during = Pending::predicted(m / 2.0, var_m / 4.0, &parts.during);
    during.variance.0 += either_way(during.objects);
    during.variance.1 += either_way(during.bytes);
    predicted.add(&during);
    // The count is of objects; its bytes at the mean size of what the search reached
    // (weighted: sampling is by bytes), else of the estimate it replaces.
    let (size, size_var) = if parts.reached.objects > 0.0 {
        let mean = parts.reached.bytes / parts.reached.objects;
        (mean, parts.reached.size_variance_of_mean(mean))
    } else if counts.objects[class] > 0 {
        (
            counts.bytes[class] as f64 / counts.objects[class] as f64,
            0.0,
        )
    } else {
        (0.0, 0.0)
    };
    let counted = count.objects as f64;
    let objects = counted + parts.known.objects + predicted.objects;
    let bytes = counted * size + parts.known.bytes + predicted.bytes;
    counts.objects[class] = objects.round() as u64;
    counts.bytes[class] = bytes.round() as u64;
    // The count is exact, or a sketch's (`count.variance`); what it is in bytes is not, nor
    // what came since.
    counts.variance[class] = (
        count.variance + parts.known.var_objects + predicted.variance.0,
        count.variance * size * size
            + counted * counted * size_var
            + parts.known.var_bytes
            + predicted.variance.1,
    );
    counts.unconfirmed[class] = (predicted.objects.min(objects), predicted.bytes.min(bytes));
    counts.pending[class] = predicted;
    counted / parts.reached.objects.max(1.0)
}

/// A class no search counted: its births judged by nothing added at the judged `shares`.
fn add_unjudged_births(
    counts: &mut WalkResult,
    class: u32,
    parts: &SinceCount,
    shares: &[(f64, f64); AGE_BINS],
) {
    let c = class as usize;
    if c >= counts.objects.len() {
        let n = c + 1;
        counts.objects.resize(n, 0);
        counts.bytes.resize(n, 0);
        counts.variance.resize(n, (0.0, 0.0));
        counts.unconfirmed.resize(n, (0.0, 0.0));
        counts.pending.resize(n, Pending::default());
    }
    let predicted = parts.unjudged_predicted(shares);
    counts.objects[c] += predicted.objects.round() as u64;
    counts.bytes[c] += predicted.bytes.round() as u64;
    counts.variance[c].0 += predicted.variance.0;
    counts.variance[c].1 += predicted.variance.1;
    counts.unconfirmed[c].0 += predicted.objects;
    counts.unconfirmed[c].1 += predicted.bytes;
    counts.pending[c].add(&predicted);
}

/// A counted class's sample keys' parts, made anew to match its count: the samples the search
/// reached at `scale` each, the births since as counted.
fn rebuild_parts(
    sampled: &mut IntMap<(u32, u64), SampleCount>,
    since_count: &IntMap<(u32, u64), SinceCount>,
    class: u32,
    shares: &[(f64, f64); AGE_BINS],
    scale: f64,
) {
    let m = shares[0].0;
    for (&(c, key), parts) in since_count.iter().filter(|((c, _), _)| *c == class) {
        let samples = parts.reached.samples
            + parts.during.samples
            + parts.known.samples
            + parts.unjudged_samples();
        if samples == 0 {
            continue;
        }
        // The class's entries were taken out above: this one starts from nothing.
        let entry = sampled.entry((c, key)).or_default();
        entry.objects = samples;
        entry.weight = parts.reached.objects * scale + parts.known.objects;
        entry.variance = parts.known.var_objects;
        parts.add_unjudged(entry, shares);
        add_at_share(entry, m / 2.0, &parts.during);
        entry.variance += either_way(m / 2.0 * parts.during.objects);
    }
}
