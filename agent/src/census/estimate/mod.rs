//! The live heap estimated from surviving allocation samples, reconciled with the last exact
//! count. The estimator and its error are stated in the proto (`Exactness`); in short, for each
//! class:
//!
//! ```text
//! objects = exact at the anchor + Σ w (samples born since, alive) - Σ w (alive at the anchor, dead since)
//! ```
//!
//! Which samples belong to which term comes from the tracker's generations. The worker bumps the
//! generation before a walk (the walk's generation) and after it, and so does the end of every
//! GC. The walk stamps every sample it reaches with its generation (`seen`). So after the walk,
//! a tracked sample is
//! - in the anchor (alive at the walk): `seen == anchor.generation`;
//! - born since the anchor: `born > anchor.generation` (born after the walk ended), and counted
//!   once a GC has passed over it (`born < last GC's generation`): until then it may be garbage
//!   the GC has yet to meet (floating garbage; an application allocating gigabytes a second
//!   makes hundreds of megabytes of it between two GCs);
//! - *pending*: born since the anchor and since the last GC, so no GC has judged it yet. Left
//!   out, an estimate published long after the last GC (the one at VM death, the periodic
//!   ones, a requested one) showed the heap as that GC left it while dated now: a leak of
//!   20,000 objects a second, its last GC 3.5 s before VM death, came out 35 % low, outside
//!   its stated error. Counted whole, it would add every short-lived object made since. So a
//!   class's pending births count at the share of its judged births still alive
//!   ([`Fates::survival_among`]: about all of a leak's, none of a request's garbage; a class
//!   with few judged samples starts from the share of every class's, [`Fates::pooled`]), with that
//!   share's uncertainty in the error, and as unconfirmed. Where samples carry their
//!   allocation site, each site's own share counts, drawn toward its class's
//!   ([`Fates::survival_within`]): one type made at a leaking line and at a line of garbage
//!   (`LinkedListLeak`'s names and its temporary strings) lives by the line, and by the class
//!   alone the garbage line's pending births counted as live at the class's share;
//! - otherwise garbage at the walk that the GC has not freed yet: in neither term (its death,
//!   when its weak reference tells, changes nothing either).
//!
//! A birth is *unconfirmed* while no marking of the whole heap has met it: born at or after the
//! canaries' confirmation point (`canary.rs`) and after the class's last GC count. It survived
//! a young collection, but if it was promoted and died in the old generation its reference
//! stands until the next old marking. The estimate counts it (a leak's growth shows at once)
//! and states it apart (`Node.objects_unconfirmed`): the truth lies between the estimate less
//! the unconfirmed part and the estimate, each end widened by the sampling error.
//!
//! Where young collections keep what weak references hold (generational ZGC), a standing
//! sample says nothing of its object until a major collection, and the path search is the
//! judge: a class a complete search counted is that count, plus its births since that a search
//! reached, plus its other births since at the share of alive among the births that search
//! judged at their age or older (its births during the search at half the share of all ages,
//! give or take the other half); a class no search counted since the last walk counts its
//! unjudged births at the same shares ([`Estimator::set_search_count`], [`AgedFates`]).

use crate::census::walk::{Pending, RefCount, SampleCount, WalkResult};
use crate::intmap::IntMap;
use crate::sampling::lifetimes::Lifetimes;
use crate::sampling::tracker::{site_of, Tracker};
use crate::sampling::NO_SITE;

mod fates;
mod search_counts;
mod sweep;

pub use fates::*;
use search_counts::{SearchCount, SinceCount};
use sweep::{Sweep, Swept};

/// An exact count the estimates are reconciled with: a walk's result.
pub struct Anchor {
    /// The snapshot that published it.
    pub seq: u64,
    /// The walk's tracker generation (odd).
    pub generation: u32,
    pub objects: Vec<u64>,
    pub bytes: Vec<u64>,
    pub references: IntMap<(u32, u32), RefCount>,
    /// Live objects in all, for predicting the next walk when no estimate is newer.
    pub total_objects: u64,
}

#[derive(Default)]
pub struct Estimator {
    anchor: Option<Anchor>,
    /// Whether samples of objects of [`OUTSIDE_TLAB_RISK_BYTES`] or more may under-state what
    /// they stand for (see [`outside_tlab_bound`]; false where the JVM samples them exactly).
    outside_tlab_bias: bool,
    /// Per class: samples alive at the anchor that have died since.
    died: Vec<Moments>,
    /// Per class: corrections from the GC's own counts since the anchor (objects, bytes), and
    /// the variance the estimate had when corrected (churn before it no longer counts).
    shift: Vec<(f64, f64)>,
    variance_offset: Vec<(f64, f64)>,
    /// Per class: the tracker generation of the estimate its last GC count corrected; births
    /// before it are in the count.
    counted_at: Vec<u32>,
    /// Samples born before this generation were met by an old-generation marking since.
    confirmed: u32,
    /// Per class: samples born since the anchor that died (booked once, as their slots are
    /// freed), as [`Fates::dead`] and [`Fates::samples`].
    born_died: Vec<Fates>,
    /// The same per class and allocation site (sampled with one).
    born_died_at: IntMap<(u32, u32), Fates>,
    /// Per class: the fates of its judged births since the anchor at the last estimate, and
    /// (for classes with none since) the last ones known before the anchor, which pending
    /// births fall back on right after a walk.
    fates: Vec<Fates>,
    fates_before: Vec<Fates>,
    /// Per class and site: the fates since the anchor at the last estimate, and those of
    /// earlier anchors, halved at each (a site's objects live alike from one walk to the next,
    /// and walks a few hundred milliseconds apart leave few judged samples per site since).
    fates_at: IntMap<(u32, u32), Fates>,
    fates_at_before: IntMap<(u32, u32), Fates>,
    /// Types corrected by GC counts since the anchor, and when the last count was taken.
    gc_counted: u64,
    gc_count_unix_ms: u64,
    /// Per class, where young collections keep what weak references hold (the tracker's hold
    /// limit is set: see [`Estimator::set_search_count`]): the newest complete path search's count of its objects reachable
    /// from any root, and the tracker generations as that search started and as it ended
    /// (births before the start are in the count, those between perhaps). Cleared by a walk,
    /// which is newer.
    searched: Vec<Option<SearchCount>>,
    /// Per class, there: that search's verdicts on the births since the search before it
    /// (reached: alive; missed: dead) by their age then, the shares births since it count at.
    verdicts: Vec<AgedFates>,
}

fn at<T: Default + Clone>(v: &mut Vec<T>, index: usize) -> &mut T {
    if v.len() <= index {
        v.resize(index + 1, T::default());
    }
    &mut v[index]
}

impl Estimator {
    pub fn anchor(&self) -> Option<&Anchor> {
        self.anchor.as_ref()
    }

    /// Before JDK 25 (JDK-8356372, fixed in 25 and not backported as far as we found), an
    /// allocation outside a TLAB is charged against the sampling countdown with its own size
    /// only, not with what the thread allocated in its TLAB since the last sample, so large
    /// objects are sampled less often than `1 - exp(-s / I)` says (and small ones a little more
    /// often). How much depends on TLAB sizes and on what else the thread allocates; measured
    /// on JDK 17 with arrays made after 2 MB of small allocations each, at the default 512 KiB
    /// interval: 32 KB arrays 1-5 % low, 128 KB up to 18 %, 256 KB up to 42 %, 512 KB up to
    /// 14 %, 1 MB up to 10 %; little is lost when little is allocated between. So each class's
    /// estimate carries an extra systematic error: [`outside_tlab_bound`] of what its large
    /// samples (births and deaths since the anchor) stand for.
    pub fn set_outside_tlab_bias(&mut self, on: bool) {
        self.outside_tlab_bias = on;
    }

    /// A path search through every root, started at tracker generation `started` and ended
    /// at `generation` (each the first of its own), having
    /// counted `counted` `(class, objects)` reachable, one by one, and judged `verdicts` (per
    /// class, the fates of its samples born since the search before: reached alive, missed
    /// dead). Where young collections keep what weak references hold (generational ZGC, where
    /// the tracker has a hold limit: `Tracker::hold_limited`), a standing sample says nothing
    /// of its object until a major collection (counted whole, a steady ring's dead strings and
    /// arrays made its estimates 80 times the live count: 32 M `byte[]` against 406,458), and
    /// the search is the judge: each counted class is then estimated as its count,
    /// plus its samples born since that are known alive (reached since, or before an old
    /// marking), plus the rest of its births since at the share judged alive among births of
    /// their age or older ([`AgedFates`]), in doubt (unconfirmed). The count splits by allocation site as the samples it reached do.
    /// An object it counted that died since stays counted until the next search's count.
    ///
    /// What was made while the search ran it counted where the search had yet to pass (a
    /// map's bucket ahead of it) and missed where it had (a list's tail it had walked by):
    /// those births count at half their share, with an error that spans none to all of them.
    /// Counted as in the count, a leak into a list came out 6 % low after a 2.5 s search.
    pub fn set_search_count(
        &mut self,
        counted: &[(u32, u64, f64)],
        started: u32,
        generation: u32,
        verdicts: Vec<AgedFates>,
    ) {
        for &(class, objects, variance) in counted {
            *at(&mut self.searched, class as usize) = Some(SearchCount {
                objects,
                variance,
                started,
                generation,
            });
        }
        // A class's new verdicts alone when there are enough of them: what its births do
        // changes (a JIT that compiles the garbage away leaves the leak alone), and the
        // earlier shares lag it. With fewer, the earlier ones too at half weight: two searches
        // may follow each other with no births between to judge, and a few samples are a
        // coin's throw.
        let old = std::mem::take(&mut self.verdicts);
        let n = old.len().max(verdicts.len());
        self.verdicts = (0..n)
            .map(|c| {
                let new = verdicts.get(c).copied().unwrap_or_default();
                if Fates::pooled(&new).samples >= ENOUGH_VERDICTS {
                    new
                } else {
                    let old = old.get(c).copied().unwrap_or_default();
                    std::array::from_fn(|bin| new[bin].plus(&old[bin].scaled(0.5)))
                }
            })
            .collect();
    }

    /// A walk finished: its exact counts are the new anchor. Deaths booked so far belong to
    /// the old one.
    pub fn set_anchor(&mut self, anchor: Anchor) {
        self.anchor = Some(anchor);
        // The walk is newer than any search's count.
        self.searched.clear();
        for (class, fates) in self.fates.drain(..).enumerate() {
            if fates.samples > 0.0 {
                *at(&mut self.fates_before, class) = fates;
            }
        }
        self.fates_at_before.retain(|_, f| {
            *f = f.scaled(0.5);
            f.samples >= 0.25
        });
        for (key, fates) in self.fates_at.drain() {
            let f = self.fates_at_before.entry(key).or_default();
            *f = f.plus(&fates);
        }
        self.born_died.clear();
        self.born_died_at.clear();
        self.died.clear();
        self.shift.clear();
        self.variance_offset.clear();
        self.counted_at.clear();
        self.gc_counted = 0;
    }

    /// The canaries' confirmation point (`canary.rs`): births before `generation` have been
    /// met by a marking of the whole heap. Never goes back.
    pub fn set_confirmed(&mut self, generation: u32) {
        self.confirmed = self.confirmed.max(generation);
    }

    /// The GC counted `class`'s type exactly at a moment when this estimator said `then`: shift
    /// the estimate by the difference (`objects`, `bytes`), so that it equals the count at that
    /// moment and moves with the samples after it. Only the churn since is uncertain now, so the
    /// variance the estimate had then (`variance_then`) no longer counts. (The count and `then`
    /// are up to a coalescing interval apart; the churn in it is the error left.) For a count
    /// covering several class ids of one name (one class name in two loaders) the worker puts
    /// the difference of the whole on one of them. `generation` is the tracker's `last_gc` of
    /// that estimate: births before it are in the count, confirmed by the GC's marking.
    pub fn shift_by(
        &mut self,
        class: u32,
        objects: f64,
        bytes: f64,
        variance_then: (f64, f64),
        generation: u32,
    ) {
        let c = class as usize;
        let counted_at = at(&mut self.counted_at, c);
        *counted_at = (*counted_at).max(generation);
        let shift = at(&mut self.shift, c);
        shift.0 += objects;
        shift.1 += bytes;
        *at(&mut self.variance_offset, c) = variance_then;
        self.gc_counted += 1;
    }

    /// A count that bounds `class`'s type from above (a G1 remark's) found the estimate `objects`
    /// and `bytes` (both ≤ 0) over it: lowered by that much. Unlike [`shift_by`](Self::shift_by)
    /// the estimate keeps its variance and its unconfirmed births, as the count did not say
    /// which of them lived.
    pub fn lower_by(&mut self, class: u32, objects: f64, bytes: f64) {
        let shift = at(&mut self.shift, class as usize);
        shift.0 += objects.min(0.0);
        shift.1 += bytes.min(0.0);
        self.gc_counted += 1;
    }

    pub fn note_gc_count(&mut self, unix_ms: u64) {
        self.gc_count_unix_ms = unix_ms;
    }

    /// Types corrected by GC counts since the last walk, and when the last count was taken
    /// (milliseconds since the Unix epoch; 0: never).
    pub fn gc_counted(&self) -> (u64, u64) {
        (self.gc_counted, self.gc_count_unix_ms)
    }

    /// Books the deaths the tracker knows of since the last call (freeing their slots) and
    /// estimates every class now. `classes` is the number of class ids known. The result has the
    /// shape the tree builder takes: per-class counts with their `variance`, and the live samples
    /// the estimate rests on in `sampled`. `lifetimes`, when kept, counts the samples still
    /// alive (their deaths it hears of when they are polled, dated by the GC then).
    pub fn estimate(
        &mut self,
        tracker: &Tracker,
        classes: usize,
        mut lifetimes: Option<&mut Lifetimes>,
    ) -> WalkResult {
        let last_gc = tracker.last_gc();
        let young_keeps = tracker.hold_limited();
        let gcs = tracker.last_gc_moment().gcs;
        let mut sweep = Sweep {
            anchor_gen: self.anchor.as_ref().map(|a| a.generation),
            last_gc,
            confirmed: self.confirmed,
            counted_at: &self.counted_at,
            // Classes a complete search counted, where that count is the estimate's base.
            searched: if young_keeps { &self.searched } else { &[] },
            young_keeps,
            // What unjudged births are valued at depends on their age (`AgedFates`).
            now_ms: tracker.ms(),
            died: &mut self.died,
            born_died: &mut self.born_died,
            born_died_at: &mut self.born_died_at,
            found: Swept::new(classes),
        };
        if let Some(l) = lifetimes.as_deref_mut() {
            l.begin_sweep();
        }
        tracker.sweep(|_, sample, dead| {
            if let (Some(l), false) = (lifetimes.as_deref_mut(), dead) {
                l.alive(sample, gcs);
            }
            sweep.take(sample, dead);
        });
        let Swept {
            born,
            pending,
            fates,
            fates_at,
            unconfirmed,
            mut sampled,
            since_count,
        } = sweep.found;
        self.keep_fates(fates, fates_at);
        let shares = self.survival_shares();
        // Each sample key's pending births at their site's share: its weight `m Σw`, and the
        // variance of sampling (`m Σ w (w - 1)`) and of their fates (`m (1 - m) Σ w^2`).
        let mut by_site: IntMap<(u32, u32), Moments> = IntMap::default();
        for (&(class, key), p) in &pending {
            let site = site_of(key);
            by_site.entry((class, site)).or_default().merge(p);
            if let Some((m, _)) = shares.at(class, site) {
                add_at_share(sampled.entry((class, key)).or_default(), m, p);
            }
        }
        // Each class's pending births at their sites' shares, each share's own uncertainty
        // over its whole site (`var_m P^2`).
        let mut predicted_by_class: Vec<Pending> = Vec::new();
        for (&(class, site), p) in &by_site {
            if let Some((m, var_m)) = shares.at(class, site) {
                at(&mut predicted_by_class, class as usize).add(&Pending::predicted(m, var_m, p));
            }
        }
        if let Some(l) = lifetimes {
            // The lifetimes' survivors born since the last GC, at the same shares.
            l.expect_pending(|class, site| shares.at(class, site).map_or(0.0, |(m, _)| m));
        }
        let mut counts = self.totals(classes, &born, &predicted_by_class, &unconfirmed);
        counts.last_gc = last_gc;
        if young_keeps {
            self.apply_search_counts(&mut counts, &mut sampled, &since_count);
        }
        counts.sampled = sampled;
        if let Some(anchor) = &self.anchor {
            counts.references = anchor.references.clone();
        }
        counts
    }

    /// Keeps the judged births' fates of this estimate, with the deaths booked so far.
    fn keep_fates(&mut self, mut fates: Vec<Fates>, mut fates_at: IntMap<(u32, u32), Fates>) {
        for (class, died) in self.born_died.iter().enumerate() {
            let f = at(&mut fates, class);
            f.dead += died.dead;
            f.samples += died.samples;
        }
        for (&key, died) in &self.born_died_at {
            let f = fates_at.entry(key).or_default();
            f.dead += died.dead;
            f.samples += died.samples;
        }
        self.fates = fates;
        self.fates_at = fates_at;
    }

    /// Each class's survival share: its fates since the anchor or, with none judged since, the
    /// last ones before, drawn toward the share of them all.
    fn survival_shares(&self) -> Shares<'_> {
        let judged: Vec<Option<&Fates>> = (0..self.fates.len().max(self.fates_before.len()))
            .map(|c| match self.fates.get(c) {
                Some(f) if f.samples > 0.0 => Some(f),
                _ => self.fates_before.get(c),
            })
            .collect();
        let pooled = Fates::pooled(judged.iter().flatten().copied())
            .survival()
            .map_or(0.5, |(m, _)| m);
        Shares {
            by_class: judged
                .iter()
                .map(|f| f.and_then(|f| f.survival_among(pooled)))
                .collect(),
            fates_at: &self.fates_at,
            before: &self.fates_at_before,
        }
    }

    /// Each class's estimate: the anchor's count, plus what GC counts shifted, plus the births
    /// judged alive, less the anchor's samples dead since, plus the pending births predicted;
    /// with the variance of each term and what no marking has met.
    fn totals(
        &self,
        classes: usize,
        born: &[Moments],
        predicted_by_class: &[Pending],
        unconfirmed: &[(f64, f64)],
    ) -> WalkResult {
        let classes = classes
            .max(born.len())
            // Pending births widen the table only where they predict something.
            .max(predicted_by_class.len())
            .max(self.died.len())
            .max(self.shift.len())
            .max(self.anchor.as_ref().map_or(0, |a| a.objects.len()));
        let mut counts = WalkResult {
            objects: vec![0; classes],
            bytes: vec![0; classes],
            variance: vec![(0.0, 0.0); classes],
            unconfirmed: vec![(0.0, 0.0); classes],
            pending: vec![Default::default(); classes],
            ..Default::default()
        };
        let zero = Moments::default();
        for class in 0..classes {
            let (exact_objects, exact_bytes) = self.anchor.as_ref().map_or((0, 0), |a| {
                (
                    a.objects.get(class).copied().unwrap_or(0),
                    a.bytes.get(class).copied().unwrap_or(0),
                )
            });
            let b = born.get(class).unwrap_or(&zero);
            let d = self.died.get(class).unwrap_or(&zero);
            let (shift_objects, shift_bytes) = self.shift.get(class).copied().unwrap_or_default();
            let (offset_objects, offset_bytes) =
                self.variance_offset.get(class).copied().unwrap_or_default();
            let predicted = predicted_by_class.get(class).copied().unwrap_or_default();
            let objects =
                exact_objects as f64 + shift_objects + b.objects - d.objects + predicted.objects;
            let bytes = exact_bytes as f64 + shift_bytes + b.bytes - d.bytes + predicted.bytes;
            counts.objects[class] = objects.max(0.0).round() as u64;
            counts.bytes[class] = bytes.max(0.0).round() as u64;
            // The outside-TLAB bias is systematic: its bound is added as the variance of an
            // error whose 95 % half-width is that bound (births' and deaths' bounds add up).
            let bias = |born: f64, died: f64| {
                if self.outside_tlab_bias {
                    ((born + died) / 1.96).powi(2)
                } else {
                    0.0
                }
            };
            counts.variance[class] = (
                (b.var_objects + d.var_objects - offset_objects).max(0.0)
                    + predicted.variance.0
                    + bias(
                        b.outside_tlab_objects + predicted.outside_tlab.0,
                        d.outside_tlab_objects,
                    ),
                (b.var_bytes + d.var_bytes - offset_bytes).max(0.0)
                    + predicted.variance.1
                    + bias(
                        b.outside_tlab_bytes + predicted.outside_tlab.1,
                        d.outside_tlab_bytes,
                    ),
            );
            // No marking has met a pending birth either.
            let (u_objects, u_bytes) = unconfirmed.get(class).copied().unwrap_or_default();
            let (u_objects, u_bytes) = (u_objects + predicted.objects, u_bytes + predicted.bytes);
            counts.pending[class] = predicted;
            // Never more than the estimate itself (deaths of anchor samples may have lowered it).
            counts.unconfirmed[class] = (
                u_objects.min(counts.objects[class] as f64),
                u_bytes.min(counts.bytes[class] as f64),
            );
        }
        counts
    }
}

/// The survival shares of one estimate: per class, and per site within its class.
struct Shares<'a> {
    by_class: Vec<Option<(f64, f64)>>,
    fates_at: &'a IntMap<(u32, u32), Fates>,
    before: &'a IntMap<(u32, u32), Fates>,
}

impl Shares<'_> {
    /// A site's share within its class's (samples without a site take the class's).
    fn at(&self, class: u32, site: u32) -> Option<(f64, f64)> {
        let outer = self.by_class.get(class as usize).copied().flatten()?;
        if site == NO_SITE {
            return Some(outer);
        }
        let f = self
            .fates_at
            .get(&(class, site))
            .copied()
            .unwrap_or_default();
        let earlier = self.before.get(&(class, site)).copied().unwrap_or_default();
        Some(f.plus(&earlier).survival_within(outer))
    }
}

/// Births `p` of one sample key at survival share `m`, added to its part of the tree: each
/// one's fate is a coin of that share (see [`Pending::predicted`], which is the same for a
/// class with its share's own uncertainty), and none is confirmed.
fn add_at_share(entry: &mut SampleCount, m: f64, p: &Moments) {
    entry.weight += m * p.objects;
    entry.variance += m * p.var_objects + m * (1.0 - m) * p.square_objects;
    entry.unconfirmed += m * p.objects;
}

/// The 95 % half-width, as a variance, of a part that may be anywhere from none to twice
/// `value` (births made while a search ran, counted at half: see
/// [`Estimator::set_search_count`]).
fn either_way(value: f64) -> f64 {
    (value / 1.96).powi(2)
}

/// An estimate's per-class objects, bytes and variance less its pending births: the heap as
/// its last GC left it, which is what that GC's own count is compared with (the correction
/// settles that part, not the births since).
pub fn at_last_gc(counts: &WalkResult) -> (Vec<u64>, Vec<u64>, Vec<(f64, f64)>) {
    let pending = |class: usize| counts.pending.get(class).copied().unwrap_or_default();
    let less = |values: &[u64], part: fn(&Pending) -> f64| -> Vec<u64> {
        values
            .iter()
            .enumerate()
            .map(|(c, &v)| (v as f64 - part(&pending(c))).max(0.0).round() as u64)
            .collect()
    };
    let variance = counts
        .variance
        .iter()
        .enumerate()
        .map(|(c, v)| {
            let p = pending(c).variance;
            ((v.0 - p.0).max(0.0), (v.1 - p.1).max(0.0))
        })
        .collect();
    (
        less(&counts.objects, |p| p.objects),
        less(&counts.bytes, |p| p.bytes),
        variance,
    )
}

/// 95 % half-width from a variance.
pub fn error95(variance: f64) -> u64 {
    (1.96 * variance.max(0.0).sqrt()).round() as u64
}

#[cfg(test)]
mod tests;
