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
use crate::sampling::tracker::{site_of, Sample, Tracker};
use crate::sampling::NO_SITE;

/// What became of one class's births since the anchor that a GC has judged: the weight still
/// alive, the weight dead, and how many samples that rests on.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Fates {
    pub alive: f64,
    pub dead: f64,
    pub samples: f64,
}

impl Fates {
    /// The share of these judged births alive, and its variance, or `None` without any
    /// judged sample: the alive weight over the weight, drawn half a sample toward even
    /// (Jeffreys' prior in `samples`), with the Beta posterior's variance `m (1 - m) / (n + 2)`.
    /// For every class's fates together ([`Fates::pooled`]), the share a class with few
    /// judged samples starts from.
    pub fn survival(&self) -> Option<(f64, f64)> {
        let judged = self.alive + self.dead;
        if self.samples < 1.0 || judged <= 0.0 {
            return None;
        }
        let n = self.samples;
        let m = (self.alive / judged * n + 0.5) / (n + 1.0);
        Some((m, m * (1.0 - m) / (n + 2.0)))
    }

    fn plus(&self, other: &Fates) -> Fates {
        Fates {
            alive: self.alive + other.alive,
            dead: self.dead + other.dead,
            samples: self.samples + other.samples,
        }
    }

    fn scaled(&self, by: f64) -> Fates {
        Fates {
            alive: self.alive * by,
            dead: self.dead * by,
            samples: self.samples * by,
        }
    }

    /// These fates' share within a larger group whose share is `outer` (a site's within its
    /// class's): drawn toward `outer` by [`SITE_PRIOR_SAMPLES`] samples instead of toward even,
    /// so a site with few judged samples takes mostly its class's share and one with many its
    /// own. Without a judged sample here, `outer` itself.
    pub fn survival_within(&self, outer: (f64, f64)) -> (f64, f64) {
        self.survival_toward(outer.0, SITE_PRIOR_SAMPLES)
            .unwrap_or(outer)
    }

    /// A class's share, drawn toward `pooled` (the share of every class's judged births,
    /// [`Fates::pooled`]) by [`CLASS_PRIOR_SAMPLES`] samples: a type with one or two judged
    /// samples starts from what the JVM's judged samples say in general (most objects die
    /// young), not from one half, which counted about half of every short-lived type's
    /// pending births as live (a client's connection parameters, +32,777 from one or two
    /// samples). `None` without a judged sample of its own: no evidence, no prediction.
    pub fn survival_among(&self, pooled: f64) -> Option<(f64, f64)> {
        self.survival_toward(pooled, CLASS_PRIOR_SAMPLES)
    }

    /// The judged share drawn toward `prior` by `k` samples, and the variance of its Beta
    /// posterior; `None` without a judged sample.
    fn survival_toward(&self, prior: f64, k: f64) -> Option<(f64, f64)> {
        let judged = self.alive + self.dead;
        if self.samples < 1.0 || judged <= 0.0 {
            return None;
        }
        let n = self.samples;
        let m = (self.alive / judged * n + prior * k) / (n + k);
        Some((m, m * (1.0 - m) / (n + k + 1.0)))
    }

    /// The fates of every class together: what the JVM's judged births say in general.
    pub fn pooled<'a>(all: impl IntoIterator<Item = &'a Fates>) -> Fates {
        all.into_iter().fold(Fates::default(), |sum, f| sum.plus(f))
    }
}

/// Ages, for the searches' verdicts and the births they value ([`AgedFates`]), in bins of
/// seconds: under 1, 1-2, 2-4, 4-8, 8-16, 16 and more.
pub const AGE_BINS: usize = 6;

/// The bin of an age in milliseconds.
pub fn age_bin(ms: u32) -> usize {
    if ms < 1000 {
        0
    } else {
        (1 + (ms / 1000).ilog2() as usize).min(AGE_BINS - 1)
    }
}

/// A class's verdicts by the age its samples had when a search judged them ([`age_bin`]). A
/// birth the searches have not judged yet counts at the share alive among those judged at its
/// age or older: a session's strings live 3 s, and valued at the share of all ages (most of a
/// search's verdicts are on births younger than that) those 12 s old still counted half,
/// +153,364 `String` rising in a steady server.
pub type AgedFates = [Fates; AGE_BINS];

/// The verdicts judged at bin `bin`'s age or older, reaching down to younger bins until they
/// are worth a sample (a birth older than any judged takes the oldest judged share). Bin 0
/// gives every verdict.
fn at_age_or_older(aged: &AgedFates, bin: usize) -> Fates {
    (0..=bin.min(AGE_BINS - 1))
        .rev()
        .map(|from| Fates::pooled(&aged[from..]))
        .find(|f| f.samples >= 1.0)
        .unwrap_or_else(|| Fates::pooled(aged))
}

/// Where the estimates rest on the path search's counts, the share of a count its births
/// since may add before the worker counts again ([`Estimator::births_since_count`]): a leak
/// is counted again each time it grows by a tenth (a logarithm of its growth's worth of
/// searches), a steady type's churn once its share is judged again.
pub const RECOUNT_SHARE: f64 = 0.1;
/// ...among counts of at least this many objects: a type of a few hundred may swing by a
/// tenth with a handful of births.
pub const RECOUNT_MIN_OBJECTS: f64 = 10_000.0;

/// How many samples' worth a class's survival share weighs in each of its sites' shares
/// ([`Fates::survival_within`]).
pub const SITE_PRIOR_SAMPLES: f64 = 2.0;
/// A class's verdicts from one search that stand alone for the share of its births since
/// (`Estimator::set_search_count`): a share of 20 samples is within about ±0.2 at 95 %.
const ENOUGH_VERDICTS: f64 = 20.0;

/// How many samples' worth the pooled share of every class weighs in each class's share
/// ([`Fates::survival_among`]).
pub const CLASS_PRIOR_SAMPLES: f64 = 2.0;

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

/// Sums over samples: what they stand for, the variance of that, and how much the large ones
/// among them may under-state before JDK 25 ([`outside_tlab_bound`]).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Moments {
    pub objects: f64,
    pub bytes: f64,
    pub var_objects: f64,
    pub var_bytes: f64,
    pub outside_tlab_objects: f64,
    pub outside_tlab_bytes: f64,
    /// Sums of `w^2` and `(w s)^2`: the variance of the fates of pending births.
    pub square_objects: f64,
    pub square_bytes: f64,
    /// The samples summed, and `Σ w s²`: how their sizes spread.
    pub samples: u64,
    pub sizes_squared: f64,
}

impl Moments {
    /// The variance of `mean`, these samples' mean size weighted by what they stand for, as
    /// an estimate of the mean size of the objects they stand for: the sizes' spread over the
    /// samples' effective number, `(Σw)² / Σw²`.
    fn size_variance_of_mean(&self, mean: f64) -> f64 {
        if self.objects <= 0.0 || self.square_objects <= 0.0 {
            return 0.0;
        }
        let spread = (self.sizes_squared / self.objects - mean * mean).max(0.0);
        spread * self.square_objects / (self.objects * self.objects)
    }

    fn merge(&mut self, other: &Moments) {
        self.objects += other.objects;
        self.bytes += other.bytes;
        self.var_objects += other.var_objects;
        self.var_bytes += other.var_bytes;
        self.outside_tlab_objects += other.outside_tlab_objects;
        self.outside_tlab_bytes += other.outside_tlab_bytes;
        self.square_objects += other.square_objects;
        self.square_bytes += other.square_bytes;
        self.samples += other.samples;
        self.sizes_squared += other.sizes_squared;
    }

    fn add(&mut self, sample: &Sample) {
        let w = sample.weight;
        let s = sample.size as f64;
        let var = w * (w - 1.0);
        self.objects += w;
        self.bytes += w * s;
        self.var_objects += var;
        self.var_bytes += var * s * s;
        self.square_objects += w * w;
        self.square_bytes += w * w * s * s;
        self.samples += 1;
        self.sizes_squared += w * s * s;
        if sample.size >= OUTSIDE_TLAB_RISK_BYTES {
            let bound = outside_tlab_bound(w) * w;
            self.outside_tlab_objects += bound;
            self.outside_tlab_bytes += bound * s;
        }
    }
}

/// Objects at least this large may be allocated outside TLABs, where HotSpot's sampler before
/// JDK 25 under-samples them (see [`Estimator::set_outside_tlab_bias`]). (Smaller ones go
/// outside only when they exceed a 64th of their TLAB, which TLABs of busy threads make rare.)
pub const OUTSIDE_TLAB_RISK_BYTES: u64 = 16 * 1024;
/// The largest share of a type's large objects the outside-TLAB bias is taken to hide: 42 %
/// measured at worst (256 KB arrays at a 512 KiB interval), 55 % in a simulation of HotSpot's
/// accounting at its worst TLAB geometry.
const OUTSIDE_TLAB_MAX_LOSS: f64 = 0.6;

/// How much a large sample of weight `w` may under-state what it stands for before JDK 25, as a
/// share of its weight. The sampler charges an object allocated outside a TLAB of `s` bytes
/// without the `a` bytes its thread allocated in the TLAB since the last sample, so it samples
/// it with `1 - exp(-(s - a) / I)` instead of `1 - exp(-s / I)`. With `a` as long as a sampling
/// gap (exponential, mean `I`), the share lost is `u / (e^u - 1)` with `u = s / I`: all but
/// nothing for objects of many intervals (u = 8: 0.3 %), large near and below one interval,
/// where it is capped at [`OUTSIDE_TLAB_MAX_LOSS`] (what was measured, with a margin; objects
/// that small mostly stay in their TLABs). A loss `L` of the truth is `L / (1 - L)` of the
/// estimate. `u` comes from the weight: `w = 1 / (1 - exp(-u))`.
pub fn outside_tlab_bound(weight: f64) -> f64 {
    if weight <= 1.0 {
        return 0.0; // sampled for certain: s is many intervals
    }
    let u = -(1.0 - 1.0 / weight).ln();
    let loss = (u / u.exp_m1()).min(OUTSIDE_TLAB_MAX_LOSS);
    loss / (1.0 - loss)
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

/// A complete path search's count of a class's reachable objects (see `Estimator::searched`).
#[derive(Debug, Clone, Copy)]
struct SearchCount {
    objects: u64,
    /// 0 for objects the search kept keys for; for the rest, met once per reference, the
    /// variance of the sketch that counted them (`distinct.rs`).
    variance: f64,
    /// Tracker generations as the search started and as it ended.
    started: u32,
    generation: u32,
}

/// A sample key's samples of a class with a search count (see [`Estimator::set_search_count`]):
/// born before the search and reached by one (how the count splits by site); born while it
/// ran, which it may or may not have counted; born since and known alive (reached since, or
/// met by an old marking); born since and judged by nothing.
#[derive(Debug, Default, Clone, Copy)]
struct SinceCount {
    reached: Moments,
    during: Moments,
    known: Moments,
    /// By age now ([`age_bin`]).
    unjudged: [Moments; AGE_BINS],
}

impl SinceCount {
    fn merge(&mut self, other: &SinceCount) {
        self.reached.merge(&other.reached);
        self.during.merge(&other.during);
        self.known.merge(&other.known);
        for (mine, theirs) in self.unjudged.iter_mut().zip(&other.unjudged) {
            mine.merge(theirs);
        }
    }

    fn unjudged_samples(&self) -> u64 {
        self.unjudged.iter().map(|m| m.samples).sum()
    }

    /// The unjudged births at `shares` (by age bin) added to their sample key's part.
    fn add_unjudged(&self, entry: &mut SampleCount, shares: &[(f64, f64); AGE_BINS]) {
        for (births, &(m, _)) in self.unjudged.iter().zip(shares) {
            add_at_share(entry, m, births);
        }
    }

    /// The unjudged births at `shares` (by age bin).
    fn unjudged_predicted(&self, shares: &[(f64, f64); AGE_BINS]) -> Pending {
        let mut predicted = Pending::default();
        for (births, &(m, var_m)) in self.unjudged.iter().zip(shares) {
            if births.samples > 0 {
                predicted.add(&Pending::predicted(m, var_m, births));
            }
        }
        predicted
    }
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
        let anchor_gen = self.anchor.as_ref().map(|a| a.generation);
        let last_gc = tracker.last_gc();
        let mut born = vec![Moments::default(); classes];
        // Pending births by class and sample key (site and thread), added to `sampled` once
        // their survival shares are known.
        let mut pending: IntMap<(u32, u64), Moments> = IntMap::default();
        let mut fates = vec![Fates::default(); classes];
        let mut fates_at: IntMap<(u32, u32), Fates> = IntMap::default();
        let born_died = &mut self.born_died;
        let born_died_at = &mut self.born_died_at;
        let mut unconfirmed = vec![(0.0, 0.0); classes];
        let confirmed = self.confirmed;
        let counted_at = &self.counted_at;
        let mut sampled: IntMap<(u32, u64), SampleCount> = IntMap::default();
        let died = &mut self.died;
        // Classes a complete search counted, where that count is the estimate's base.
        let young_keeps = tracker.hold_limited();
        let searched: &[Option<SearchCount>] = if young_keeps { &self.searched } else { &[] };
        let mut since_count: IntMap<(u32, u64), SinceCount> = IntMap::default();
        let gcs = tracker.last_gc_moment().gcs;
        // What unjudged births are valued at depends on their age (`AgedFates`).
        let now_ms = tracker.ms();
        let age = |sample: &Sample| age_bin(now_ms.saturating_sub(sample.birth.ms));
        if let Some(l) = lifetimes.as_deref_mut() {
            l.begin_sweep();
        }
        tracker.sweep(|_, sample, dead| {
            if let (Some(l), false) = (lifetimes.as_deref_mut(), dead) {
                l.alive(sample, gcs);
            }
            let class = sample.class as usize;
            // A search reached it and none through every root has missed it since.
            let reached = sample.reached() && !sample.missed;
            if let (Some(&Some(count)), false) = (searched.get(class), dead) {
                let (started, counted_gen) = (count.started, count.generation);
                let parts = since_count.entry((sample.class, sample.key())).or_default();
                if sample.born < started {
                    if reached {
                        parts.reached.add(sample);
                    }
                } else if sample.born < counted_gen {
                    parts.during.add(sample);
                } else if reached || sample.born < confirmed {
                    parts.known.add(sample);
                } else {
                    parts.unjudged[age(sample)].add(sample);
                }
            }
            let in_anchor = anchor_gen.is_some_and(|g| sample.seen == g);
            let after_anchor = !in_anchor && anchor_gen.is_none_or(|g| sample.born > g);
            let since_anchor = after_anchor && sample.born < last_gc;
            // Where young collections keep what weak references hold, a class no search
            // counted since the anchor: its births since (pending ones too) that no search
            // reached and no old marking met are judged by nothing, and count at the share
            // the searches judged alive (`apply_search_counts`); one a search through every
            // root missed counts not at all, unless one reaches it again.
            if young_keeps
                && after_anchor
                && !dead
                && searched.get(class).is_none_or(Option::is_none)
                && !reached
                && sample.born >= confirmed.max(counted_at.get(class).copied().unwrap_or(0))
            {
                if !sample.missed {
                    since_count
                        .entry((sample.class, sample.key()))
                        .or_default()
                        .unjudged[age(sample)]
                    .add(sample);
                }
                return;
            }
            if dead {
                if in_anchor {
                    at(died, class).add(sample);
                } else if after_anchor {
                    let f = at(born_died, class);
                    f.dead += sample.weight;
                    f.samples += 1.0;
                    if sample.site != NO_SITE {
                        let f = born_died_at.entry((sample.class, sample.site)).or_default();
                        f.dead += sample.weight;
                        f.samples += 1.0;
                    }
                }
                return;
            }
            if !after_anchor && !in_anchor {
                return; // garbage at the anchor, not yet freed
            }
            if !in_anchor && !since_anchor {
                pending
                    .entry((sample.class, sample.key()))
                    .or_default()
                    .add(sample);
                return;
            }
            let w = sample.weight;
            let entry = sampled.entry((sample.class, sample.key())).or_default();
            entry.objects += 1;
            entry.weight += w;
            entry.variance += w * (w - 1.0);
            if since_anchor {
                at(&mut born, class).add(sample);
                let f = at(&mut fates, class);
                f.alive += w;
                f.samples += 1.0;
                if sample.site != NO_SITE {
                    let f = fates_at.entry((sample.class, sample.site)).or_default();
                    f.alive += w;
                    f.samples += 1.0;
                }
                let counted = counted_at.get(class).copied().unwrap_or(0);
                // Between markings a weak reference stands whether its object lives or not,
                // but the path search walks from the GC roots: a sample it reached (and
                // named a holder of) was alive then, whatever the old generation says.
                let reached = sample.reached();
                if sample.born >= confirmed.max(counted) && !reached {
                    entry.unconfirmed += w;
                    let u = at(&mut unconfirmed, class);
                    u.0 += w;
                    u.1 += w * sample.size as f64;
                }
            }
        });
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
        let (fates_at, before) = (&self.fates_at, &self.fates_at_before);
        // Each class's fates since the anchor or, with none judged since, the last ones before;
        // its survival share drawn toward the share of them all.
        let judged: Vec<Option<&Fates>> = (0..self.fates.len().max(self.fates_before.len()))
            .map(|c| match self.fates.get(c) {
                Some(f) if f.samples > 0.0 => Some(f),
                _ => self.fates_before.get(c),
            })
            .collect();
        let pooled = Fates::pooled(judged.iter().flatten().copied())
            .survival()
            .map_or(0.5, |(m, _)| m);
        let survival: Vec<Option<(f64, f64)>> = judged
            .iter()
            .map(|f| f.and_then(|f| f.survival_among(pooled)))
            .collect();
        let share = |class: usize| survival.get(class).copied().flatten();
        // A site's share within its class's (samples without a site take the class's).
        let share_at = |class: u32, site: u32| -> Option<(f64, f64)> {
            let outer = share(class as usize)?;
            if site == NO_SITE {
                return Some(outer);
            }
            let f = fates_at.get(&(class, site)).copied().unwrap_or_default();
            let earlier = before.get(&(class, site)).copied().unwrap_or_default();
            Some(f.plus(&earlier).survival_within(outer))
        };
        // Each sample key's pending births at their site's share: its weight `m Σw`, and the
        // variance of sampling (`m Σ w (w - 1)`) and of their fates (`m (1 - m) Σ w^2`).
        let mut by_site: IntMap<(u32, u32), Moments> = IntMap::default();
        for (&(class, key), p) in &pending {
            let site = site_of(key);
            by_site.entry((class, site)).or_default().merge(p);
            if let Some((m, _)) = share_at(class, site) {
                add_at_share(sampled.entry((class, key)).or_default(), m, p);
            }
        }
        // Each class's pending births at their sites' shares, each share's own uncertainty
        // over its whole site (`var_m P^2`).
        let mut predicted_by_class: Vec<Pending> = Vec::new();
        for (&(class, site), p) in &by_site {
            if let Some((m, var_m)) = share_at(class, site) {
                at(&mut predicted_by_class, class as usize).add(&Pending::predicted(m, var_m, p));
            }
        }
        if let Some(l) = lifetimes {
            // The lifetimes' survivors born since the last GC, at the same shares.
            l.expect_pending(|class, site| share_at(class, site).map_or(0.0, |(m, _)| m));
        }
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
            last_gc,
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
        if young_keeps {
            self.apply_search_counts(&mut counts, &mut sampled, &since_count);
        }
        counts.sampled = sampled;
        if let Some(anchor) = &self.anchor {
            counts.references = anchor.references.clone();
        }
        counts
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

impl Estimator {
    /// Per class, the shares its births since a count are valued at, by age bin (bin 0: of
    /// every age), and their variance: from its verdicts drawn toward every class's, every
    /// class's without its own, whole without any verdict (in doubt, as elsewhere).
    fn shares(&self) -> impl Fn(usize) -> [(f64, f64); AGE_BINS] + '_ {
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
    fn apply_search_counts(
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
            let Some(SearchCount {
                objects: counted,
                variance: count_variance,
                ..
            }) = *searched
            else {
                continue;
            };
            if class >= counts.objects.len() {
                continue;
            }
            let parts = by_class.get(&(class as u32)).copied().unwrap_or_default();
            let shares = shares(class);
            let (m, var_m) = shares[0];
            let mut predicted = parts.unjudged_predicted(&shares);
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
            let counted = counted as f64;
            let objects = counted + parts.known.objects + predicted.objects;
            let bytes = counted * size + parts.known.bytes + predicted.bytes;
            counts.objects[class] = objects.round() as u64;
            counts.bytes[class] = bytes.round() as u64;
            // The count is exact, or a sketch's (`count_variance`); what it is in bytes is
            // not, nor what came since.
            counts.variance[class] = (
                count_variance + parts.known.var_objects + predicted.variance.0,
                count_variance * size * size
                    + counted * counted * size_var
                    + parts.known.var_bytes
                    + predicted.variance.1,
            );
            counts.unconfirmed[class] =
                (predicted.objects.min(objects), predicted.bytes.min(bytes));
            counts.pending[class] = predicted;
            rebuilt.push((
                class as u32,
                shares,
                counted / parts.reached.objects.max(1.0),
            ));
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
            let c = class as usize;
            if c >= counts.objects.len() {
                let n = c + 1;
                counts.objects.resize(n, 0);
                counts.bytes.resize(n, 0);
                counts.variance.resize(n, (0.0, 0.0));
                counts.unconfirmed.resize(n, (0.0, 0.0));
                counts.pending.resize(n, Pending::default());
            }
            let shares = shares(c);
            let predicted = parts.unjudged_predicted(&shares);
            counts.objects[c] += predicted.objects.round() as u64;
            counts.bytes[c] += predicted.bytes.round() as u64;
            counts.variance[c].0 += predicted.variance.0;
            counts.variance[c].1 += predicted.variance.1;
            counts.unconfirmed[c].0 += predicted.objects;
            counts.unconfirmed[c].1 += predicted.bytes;
            counts.pending[c].add(&predicted);
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
                parts.add_unjudged(entry, &shares);
                add_at_share(entry, m / 2.0, &parts.during);
                entry.variance += either_way(m / 2.0 * parts.during.objects);
            }
        }
    }
}

// `Pending` is carried by a walk's result (`walk.rs`); how it is predicted is the estimates'.
impl Pending {
    /// Pending births `p` at survival share `m`: each one's fate is a coin of that share
    /// (`m (1 - m) w^2`), and the share itself is uncertain (`var_m P^2`).
    fn predicted(m: f64, var_m: f64, p: &Moments) -> Pending {
        Pending {
            objects: m * p.objects,
            bytes: m * p.bytes,
            variance: (
                m * p.var_objects
                    + m * (1.0 - m) * p.square_objects
                    + var_m * p.objects * p.objects,
                m * p.var_bytes + m * (1.0 - m) * p.square_bytes + var_m * p.bytes * p.bytes,
            ),
            outside_tlab: (m * p.outside_tlab_objects, m * p.outside_tlab_bytes),
        }
    }

    fn add(&mut self, other: &Pending) {
        self.objects += other.objects;
        self.bytes += other.bytes;
        self.variance.0 += other.variance.0;
        self.variance.1 += other.variance.1;
        self.outside_tlab.0 += other.outside_tlab.0;
        self.outside_tlab.1 += other.outside_tlab.1;
    }
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
mod tests {
    use super::*;

    fn anchor(tracker: &Tracker, objects: Vec<u64>, bytes: Vec<u64>) -> Anchor {
        Anchor {
            seq: 0,
            generation: tracker.generation(),
            total_objects: objects.iter().sum(),
            objects,
            bytes,
            references: IntMap::default(),
        }
    }

    #[test]
    fn without_change_the_estimate_is_the_anchor() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.advance(); // the walk's generation
        let a = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.mark_seen(a, t.generation());
        e.set_anchor(anchor(&t, vec![0, 50, 7], vec![0, 400, 70]));
        t.advance();
        let est = e.estimate(&t, 3, None);
        assert_eq!(est.objects, [0, 50, 7]);
        assert_eq!(est.bytes, [0, 400, 70]);
        assert_eq!(est.variance[1], (0.0, 0.0), "no churn, no error");
        assert_eq!(
            est.sampled.values().map(|c| c.objects).sum::<u64>(),
            1,
            "the anchor's sample still splits sites"
        );
    }

    #[test]
    fn births_add_and_anchor_deaths_subtract_with_their_variance() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.advance();
        let old = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        let garbage = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.mark_seen(old, t.generation());
        e.set_anchor(anchor(&t, vec![0, 50], vec![0, 400]));
        t.advance();
        // Born after the walk: two samples of class 1 (weight 10), one of a new class 2.
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.track(2, 2, 1, 4.0, 16, 0, 0, 1).unwrap();
        // The anchor's sample dies, and so does the garbage (which was never counted).
        t.died(old);
        t.died(garbage);
        // Births count once a GC has passed over them.
        let before_gc = e.estimate(&t, 2, None);
        assert_eq!(before_gc.objects, [0, 50 - 10]);
        t.gc_finished();
        let est = e.estimate(&t, 2, None);
        assert_eq!(est.objects, [0, 50 + 20 - 10, 4]);
        assert_eq!(est.bytes, [0, 400 + 160 - 80, 64]);
        // Three samples of weight 10 in the two sums: 3 * 10 * 9.
        assert!((est.variance[1].0 - 270.0).abs() < 1e-9);
        assert!((est.variance[2].0 - 12.0).abs() < 1e-9);
        assert_eq!(est.sampled.values().map(|c| c.objects).sum::<u64>(), 3);
        // Booked once: the dead slots are freed and a second estimate agrees.
        let again = e.estimate(&t, 2, None);
        assert_eq!(again.objects, est.objects);
        assert_eq!(t.in_use(), 3);
    }

    #[test]
    fn estimates_never_go_negative_and_without_an_anchor_count_every_sample() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.track(1, 1, 1, 32.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        let est = e.estimate(&t, 2, None);
        assert_eq!(est.objects, [0, 32]);
        t.advance();
        let s = t.track(1, 1, 1, 1000.0, 8, 0, 0, 1).unwrap();
        t.mark_seen(s, t.generation());
        e.set_anchor(anchor(&t, vec![0, 3], vec![0, 24]));
        t.died(s);
        assert_eq!(e.estimate(&t, 2, None).objects, [0, 0]);
    }

    #[test]
    fn a_gc_count_corrects_the_estimate_and_its_error() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 100], vec![0, 800]));
        t.advance();
        t.track(1, 1, 1, 50.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        let before = e.estimate(&t, 2, None);
        assert_eq!(before.objects[1], 150);
        // The GC counted 130 when the estimate said 150.
        let then = (before.objects[1], before.bytes[1], before.variance[1]);
        assert_eq!(before.unconfirmed[1], (50.0, 400.0));
        e.shift_by(
            1,
            130.0 - then.0 as f64,
            1040.0 - then.1 as f64,
            then.2,
            before.last_gc,
        );
        e.note_gc_count(42);
        let after = e.estimate(&t, 2, None);
        assert_eq!((after.objects[1], after.bytes[1]), (130, 1040));
        assert_eq!(
            after.unconfirmed[1],
            (0.0, 0.0),
            "the count's marking met them"
        );
        assert_eq!(
            after.variance[1],
            (0.0, 0.0),
            "only churn since the count is uncertain"
        );
        assert_eq!(e.gc_counted(), (1, 42));
        // Later births still add, with their variance, once through a GC.
        t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        let later = e.estimate(&t, 2, None);
        assert_eq!(later.objects[1], 140);
        assert!((later.variance[1].0 - 90.0).abs() < 1e-9);
        assert_eq!(later.unconfirmed[1].0, 10.0, "born after the count");
        // A walk starts over.
        e.set_anchor(anchor(&t, vec![0, 7], vec![0, 56]));
        assert_eq!(e.gc_counted().0, 0);
    }

    #[test]
    fn births_no_old_marking_has_met_are_unconfirmed_until_one_has() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.advance();
        let kept = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.mark_seen(kept, t.generation());
        e.set_anchor(anchor(&t, vec![0, 30], vec![0, 240]));
        t.advance();
        // Promoted before a canary was let go: the one that dies stays counted until an old
        // marking clears its reference.
        let promoted = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        let promoted_dead = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        let let_go = t.generation();
        let young = t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        let est = e.estimate(&t, 2, None);
        assert_eq!(est.objects[1], 60);
        assert_eq!(
            est.unconfirmed[1],
            (30.0, 240.0),
            "every birth since the anchor"
        );
        assert_eq!(
            est.sampled.values().map(|c| c.unconfirmed).sum::<f64>(),
            30.0,
            "split by sample key for sites and threads"
        );
        assert_eq!(
            est.variance[1].0, 270.0,
            "the sampling error is stated apart"
        );
        // A marking that began after the canary was let go: it cleared the dead one, and the
        // births before the canary are confirmed; the young one is not.
        t.died(promoted_dead);
        e.set_confirmed(let_go);
        let est = e.estimate(&t, 2, None);
        assert_eq!(est.objects[1], 50);
        assert_eq!(est.unconfirmed[1], (10.0, 80.0));
        // The point never goes back, and the anchor's sample is never unconfirmed.
        e.set_confirmed(0);
        assert_eq!(e.estimate(&t, 2, None).unconfirmed[1].0, 10.0);
        let _ = (promoted, young);
    }

    /// The path search walks from the GC roots: a sample it reached is alive, and its growth
    /// confirmed at once, with no old-generation marking since (`LinkedListLeak` at the
    /// agent's defaults was grey until one came).
    #[test]
    fn a_sample_the_path_search_reached_is_confirmed_without_a_marking() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 0], vec![0, 0]));
        t.advance();
        let reached = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        let unreached = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        t.gc_finished();
        assert_eq!(e.estimate(&t, 2, None).unconfirmed[1], (20.0, 160.0));
        let born = t.get(reached).unwrap().birth.allocated;
        t.set_holder(reached, born, 7, 1, t.ms());
        let est = e.estimate(&t, 2, None);
        assert_eq!(
            est.unconfirmed[1],
            (10.0, 80.0),
            "only the one no search reached"
        );
        assert_eq!(
            est.objects[1], 20,
            "the count is the same, only its doubt changes"
        );
        // A search that missed another sample since taken into the slot does not end this one.
        t.unreached(reached, born + 1);
        assert_eq!(e.estimate(&t, 2, None).objects[1], 20);
        // A later search through every root missed both: perhaps moved under the search (a
        // map's resize), so they stand; missed by the next one too, they are garbage, counted
        // no more, though no marking cleared their weak references.
        let other = t.get(unreached).unwrap().birth.allocated;
        t.unreached(reached, born);
        t.unreached(unreached, other);
        assert_eq!(e.estimate(&t, 2, None).objects[1], 20, "one miss");
        // A search that reaches one between two misses starts its count again.
        t.set_holder(reached, born, 7, 1, t.ms());
        t.unreached(reached, born);
        t.unreached(unreached, other);
        assert_eq!(
            e.estimate(&t, 2, None).objects[1],
            10,
            "missed twice in a row"
        );
        t.unreached(reached, born);
        let est = e.estimate(&t, 2, None);
        assert_eq!((est.objects[1], est.unconfirmed[1]), (0, (0.0, 0.0)));
    }

    /// Generational ZGC: a class a complete search counted is its count, its births since
    /// that a search reached, and its other births since at the share of the births the
    /// search judged alive (a ring's dead arrays stand, their weak references kept, and were
    /// counted whole); the count splits by site as the samples it reached do. A walk, newer,
    /// ends it; elsewhere standing samples count as before.
    #[test]
    fn where_young_collections_keep_referents_a_search_count_is_the_base() {
        let t = Tracker::new(64);
        let mut e = Estimator::default();
        // The hold limit is how the tracker knows young collections keep referents.
        t.set_hold_limit(1 << 30);
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 0, 0], vec![0, 0, 0]));
        t.advance();
        // Ten samples of 8 bytes, each for 10 objects: two a search reached at sites 2 and 3,
        // eight dead but standing.
        let mut before = Vec::new();
        for site in [2, 3, 4, 4, 4, 4, 4, 4, 4, 4] {
            before.push(t.track(1, site, 1, 10.0, 8, 0, 0, 1).unwrap());
        }
        t.gc_finished();
        t.gc_finished();
        for &id in &before[..2] {
            let born = t.get(id).unwrap().birth.allocated;
            t.set_holder(id, born, 7, 1, t.ms());
        }
        assert_eq!(
            e.estimate(&t, 2, None).objects[1],
            100,
            "standing, all of them"
        );
        // The search counted 25 reachable and judged two of ten alive.
        let mut judged = AgedFates::default();
        judged[0] = Fates {
            alive: 20.0,
            dead: 80.0,
            samples: 10.0,
        };
        let verdicts = vec![AgedFates::default(), judged];
        // One made while it ran (site 7): perhaps in its count, perhaps not.
        let started = t.advance();
        t.track(1, 7, 1, 10.0, 8, 0, 0, 1).unwrap();
        e.set_search_count(&[(1, 25, 0.0)], started, t.advance(), verdicts);
        // Since: one birth a search reached, four judged by nothing.
        let known = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        for _ in 0..4 {
            t.track(1, 5, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        t.gc_finished();
        let born = t.get(known).unwrap().birth.allocated;
        t.set_holder(known, born, 7, 1, t.ms());
        let est = e.estimate(&t, 2, None);
        let pooled = (0.2 * 10.0 + 0.5) / 11.0;
        let m = (0.2 * 10.0 + pooled * CLASS_PRIOR_SAMPLES) / (10.0 + CLASS_PRIOR_SAMPLES);
        let since = 10.0 + 40.0 * m + 10.0 * m / 2.0;
        assert_eq!(est.objects[1], (25.0 + since).round() as u64);
        assert_eq!(est.bytes[1], ((25.0 + since) * 8.0).round() as u64);
        assert!((est.unconfirmed[1].0 - 45.0 * m).abs() < 1e-9);
        // Its error spans none to all of the one made during the search.
        assert!(est.variance[1].0 >= (5.0 * m / 1.96).powi(2));
        // By site: the count as the reached split it (12.5 each at sites 2 and 3), the birth
        // reached since at site 2, the unjudged at site 5; the dead at site 4 nowhere.
        let weight = |site: u32| {
            est.sampled
                .iter()
                .filter(|((c, k), _)| *c == 1 && site_of(*k) == site)
                .map(|(_, n)| n.weight)
                .sum::<f64>()
        };
        assert!((weight(2) - 22.5).abs() < 1e-9, "{}", weight(2));
        assert!((weight(3) - 12.5).abs() < 1e-9);
        assert_eq!(weight(4), 0.0);
        assert!((weight(5) - 40.0 * m).abs() < 1e-9);
        assert!((weight(7) - 5.0 * m).abs() < 1e-9);
        // A class no search counted: its births since the anchor that no search reached count
        // at the share the searches judged (its own none: every class's), and one a search
        // through every root missed not at all.
        let other: Vec<_> = (0..3)
            .map(|_| t.track(2, 6, 1, 10.0, 8, 0, 0, 1).unwrap())
            .collect();
        t.gc_finished();
        t.gc_finished();
        let est = e.estimate(&t, 3, None);
        assert_eq!(est.objects[2], (30.0 * pooled).round() as u64);
        assert!((est.unconfirmed[2].0 - 30.0 * pooled).abs() < 1e-9);
        let born = t.get(other[0]).unwrap().birth.allocated;
        t.unreached(other[0], born);
        assert_eq!(
            e.estimate(&t, 3, None).objects[2],
            (20.0 * pooled).round() as u64
        );
        // Elsewhere standing samples count.
        t.set_hold_limit(u64::MAX);
        assert_eq!(e.estimate(&t, 3, None).objects[1], 160);
        assert_eq!(e.estimate(&t, 3, None).objects[2], 30);
        // A walk is newer than the count.
        t.set_hold_limit(1 << 30);
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 30, 0], vec![0, 240, 0]));
        assert_eq!(e.estimate(&t, 3, None).objects[1], 30);
    }

    /// Births since a search's count are valued at the share judged among births of their
    /// age or older: a type whose births live a few seconds (alive when judged at 1-2 s, dead
    /// at 4-8 s) counts its births of 12 s at the share of the oldest judged, next to none,
    /// and its young births at the share of every age.
    #[test]
    fn births_since_a_count_count_at_the_share_judged_at_their_age() {
        let t = Tracker::new(64);
        let mut e = Estimator::default();
        t.set_hold_limit(1 << 30);
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 0], vec![0, 0]));
        t.advance();
        let mut judged = AgedFates::default();
        judged[1] = Fates {
            alive: 100.0,
            dead: 0.0,
            samples: 20.0,
        };
        judged[3] = Fates {
            alive: 0.0,
            dead: 100.0,
            samples: 20.0,
        };
        let started = t.advance();
        e.set_search_count(
            &[(1, 100, 0.0)],
            started,
            t.advance(),
            vec![AgedFates::default(), judged],
        );
        for _ in 0..4 {
            t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        t.pass_ms(12_000);
        for _ in 0..4 {
            t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        t.gc_finished();
        t.gc_finished();
        let est = e.estimate(&t, 2, None);
        // Every class's verdicts are this class's: its own share drawn toward the same.
        let toward = |alive: f64, n: f64| {
            let pooled = (alive * n + 0.5) / (n + 1.0);
            (alive * n + pooled * CLASS_PRIOR_SAMPLES) / (n + CLASS_PRIOR_SAMPLES)
        };
        let (young, old) = (toward(0.5, 40.0), toward(0.0, 20.0));
        assert!(old < 0.01, "{old}");
        let expected = 100.0 + 40.0 * young + 40.0 * old;
        assert_eq!(est.objects[1], expected.round() as u64);
        assert!((est.unconfirmed[1].0 - 40.0 * (young + old)).abs() < 1e-9);
    }

    /// How far the estimate moved from a count, as the live samples say it without an
    /// estimate: the births since it valued at a share, over the count (what the estimate
    /// adds), for counts large enough to say; none where the estimates do not rest on counts.
    #[test]
    fn births_since_a_count_say_how_far_the_estimate_moved_from_it() {
        let t = Tracker::new(1024);
        let mut e = Estimator::default();
        t.set_hold_limit(1 << 30);
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 0, 0], vec![0, 0, 0]));
        t.advance();
        let mut alive = AgedFates::default();
        alive[0] = Fates {
            alive: 100.0,
            dead: 0.0,
            samples: 20.0,
        };
        let started = t.advance();
        e.set_search_count(
            &[(1, 20_000, 0.0), (2, 100, 0.0)],
            started,
            t.advance(),
            vec![AgedFates::default(), alive, alive],
        );
        // 3,000 of class 1 since (a sixth of its count at a share near one), and as many of
        // class 2, whose count is too small to say.
        for _ in 0..300 {
            t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
            t.track(2, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        t.gc_finished();
        t.gc_finished();
        let est = e.estimate(&t, 3, None);
        let moved = e.births_since_count(&t);
        assert!(moved >= RECOUNT_SHARE, "{moved}");
        assert!(
            (moved - (est.objects[1] as f64 - 20_000.0) / 20_000.0).abs() < 1e-4,
            "{moved} {}",
            est.objects[1]
        );
        t.set_hold_limit(u64::MAX);
        assert_eq!(e.births_since_count(&t), 0.0);
    }

    #[test]
    fn before_jdk_25_large_samples_carry_the_outside_tlab_bias_in_their_error() {
        let t = Tracker::new(16);
        let mut e = Estimator::default();
        t.advance();
        let old_large = t.track(2, 1, 1, 2.0, 64 * 1024, 0, 0, 1).unwrap();
        t.mark_seen(old_large, t.generation());
        e.set_anchor(anchor(&t, vec![0, 0, 5], vec![0, 0, 5 * 65536]));
        t.advance();
        // Class 1: small objects; class 2: 64 KB arrays (weight 2 each).
        t.track(1, 1, 1, 10.0, 24, 0, 0, 1).unwrap();
        t.track(2, 1, 1, 2.0, 64 * 1024, 0, 0, 1).unwrap();
        t.track(2, 1, 1, 2.0, 64 * 1024, 0, 0, 1).unwrap();
        t.died(old_large);
        t.gc_finished();
        let exact = e.estimate(&t, 3, None);
        assert_eq!(
            exact.variance[2].0,
            3.0 * 2.0,
            "sampling alone: three samples of w = 2"
        );
        e.set_outside_tlab_bias(true);
        let biased = e.estimate(&t, 3, None);
        assert_eq!(biased.objects, exact.objects, "stated, not corrected");
        // Two births and one death of weight 2 (u = ln 2: a loss of 69 %, capped at 60 %, so
        // 150 % of the estimate): a 95 % bound of 9 objects.
        let bound = 1.96 * (biased.variance[2].0 - exact.variance[2].0).sqrt();
        assert!((bound - 9.0).abs() < 1e-9, "{bound}");
        let bound_bytes = 1.96 * (biased.variance[2].1 - exact.variance[2].1).sqrt();
        assert!((bound_bytes - 9.0 * 65536.0).abs() < 1e-6);
        assert_eq!(
            biased.variance[1], exact.variance[1],
            "small objects are unaffected"
        );
    }

    #[test]
    fn the_outside_tlab_bound_fades_with_objects_of_many_intervals() {
        let weight = |u: f64| 1.0 / (1.0 - (-u).exp());
        assert_eq!(outside_tlab_bound(1.0), 0.0, "sampled for certain");
        assert!(
            (outside_tlab_bound(weight(0.5)) - 1.5).abs() < 1e-9,
            "capped at 60 % lost"
        );
        let at = |u: f64| {
            let loss = u / u.exp_m1();
            loss / (1.0 - loss)
        };
        assert!((outside_tlab_bound(weight(2.0)) - at(2.0)).abs() < 1e-9);
        assert!(outside_tlab_bound(weight(2.0)) < 0.5);
        assert!(outside_tlab_bound(weight(8.0)) < 0.005);
    }

    /// The LinkedListLeak case: a leaking class keeps its births, a garbage class loses them;
    /// births since the last GC count at each class's share, and what the GC's own count is
    /// compared with leaves them out.
    #[test]
    fn pending_births_count_at_their_class_survival_share() {
        let t = Tracker::new(64);
        let mut e = Estimator::default();
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 100, 50], vec![0, 800, 400]));
        t.advance();
        // No GC has judged anything yet: nothing to predict from, so births wait for one.
        t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        let unjudged = e.estimate(&t, 3, None);
        assert_eq!(unjudged.objects, [0, 100, 50]);
        assert_eq!(unjudged.pending[1], Pending::default());
        t.gc_finished();
        // That birth survived; four of class 2 were born and died in the next GC.
        let garbage: Vec<_> = (0..4)
            .map(|_| t.track(2, 1, 1, 10.0, 8, 0, 0, 1).unwrap())
            .collect();
        t.gc_finished();
        for &g in &garbage {
            t.died(g);
        }
        // Two more judged survivors of class 1, then pending births: 4 of class 1, 3 of class 2.
        t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        for _ in 0..4 {
            t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        for _ in 0..3 {
            t.track(2, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        let est = e.estimate(&t, 3, None);
        // Of every judged sample, 30 of 70 weight alive over 7 samples: the pooled share
        // (3 + 0.5) / 8. Class 1: 3 of 3 judged samples alive, drawn two samples toward it;
        // class 2: none of 4.
        let pooled = 3.5 / 8.0;
        let (m1, m2) = ((3.0 + 2.0 * pooled) / 5.0, (2.0 * pooled) / 6.0);
        assert!((est.pending[1].objects - 40.0 * m1).abs() < 1e-9);
        assert!((est.pending[2].objects - 30.0 * m2).abs() < 1e-9);
        assert_eq!(est.objects, [0, 100 + 30 + 31, 50 + 4]);
        assert_eq!(est.bytes, [0, 800 + 240 + 248, 400 + 35]);
        // Sampling (m w (w - 1)), fates (m (1 - m) w^2) and the share (var_m P^2), on top of the
        // three judged births' 3 * 90.
        let var_m1 = m1 * (1.0 - m1) / 6.0;
        let pending_var = 4.0 * (m1 * 90.0 + m1 * (1.0 - m1) * 100.0) + var_m1 * 1600.0;
        assert!((est.variance[1].0 - (270.0 + pending_var)).abs() < 1e-9);
        assert!((est.pending[1].variance.0 - pending_var).abs() < 1e-9);
        assert!(
            (est.unconfirmed[1].0 - (30.0 + 40.0 * m1)).abs() < 1e-9,
            "no marking has met a pending birth"
        );
        assert!(
            (est.sampled.values().map(|c| c.weight).sum::<f64>() - (30.0 + 40.0 * m1 + 30.0 * m2))
                .abs()
                < 1e-9,
            "sites and threads split the prediction too"
        );
        // The GC's count is compared with the heap that GC saw.
        let (objects, bytes, variance) = at_last_gc(&est);
        assert_eq!(objects, [0, 130, 50]);
        assert_eq!(bytes, [0, 1040, 400]);
        assert!((variance[1].0 - 270.0).abs() < 1e-6);
        // Deaths are booked once: a second estimate agrees.
        assert_eq!(e.estimate(&t, 3, None).objects, est.objects);
        // Right after a walk nothing since is judged: the shares from before it still hold.
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 200, 60], vec![0, 1600, 480]));
        t.advance();
        t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
        let after_walk = e.estimate(&t, 3, None);
        assert!((after_walk.pending[1].objects - 10.0 * m1).abs() < 1e-9);
        assert_eq!(after_walk.objects[1], 200 + 8);
        // Once a GC judges births since the walk, those decide: the one born died.
        t.gc_finished();
        let s = t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.gc_finished();
        t.died(s);
        t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
        let judged = e.estimate(&t, 3, None);
        // Judged since the walk: one alive (weight 10), one dead, drawn toward the pooled share
        // of those two and class 2's four dead from before, (10 of 60 * 6 + 0.5) / 7; its
        // site's share (the same two) drawn toward the class's.
        let pooled = 1.5 / 7.0;
        let class = (0.5 * 2.0 + 2.0 * pooled) / 4.0;
        let m = (0.5 * 2.0 + 2.0 * class) / 4.0;
        assert!((judged.pending[1].objects - 10.0 * m).abs() < 1e-9);
        assert_eq!(judged.objects[1], 200 + 10 + 4);
    }

    #[test]
    fn pending_births_count_at_their_sites_share() {
        // One class made at two lines: site 1 keeps what it makes (a leak), site 2 makes
        // garbage. Four of each judged by a GC, then pending births: three at site 1, one at
        // site 2.
        let t = Tracker::new(64);
        let mut e = Estimator::default();
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 100], vec![0, 800]));
        t.advance();
        let garbage: Vec<_> = (0..4)
            .map(|_| {
                t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
                t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap()
            })
            .collect();
        t.gc_finished();
        for &g in &garbage {
            t.died(g);
        }
        for site in [1, 1, 1, 2] {
            t.track(1, site, 1, 10.0, 8, 0, 0, 1).unwrap();
        }
        let est = e.estimate(&t, 2, None);
        // The class: 40 of 80 judged alive over 8 samples, m = (0.5 * 8 + 0.5) / 9 = 0.5. Each
        // site's own, drawn toward it by two samples: (4 + 1) / 6 and (0 + 1) / 6.
        let (m1, m2) = (5.0 / 6.0, 1.0 / 6.0);
        assert!((est.pending[1].objects - (30.0 * m1 + 10.0 * m2)).abs() < 1e-9);
        assert_eq!(est.objects[1], 100 + 40 + 27);
        let var = |m: f64, n: f64, k: f64| {
            n * (m * 90.0 + m * (1.0 - m) * 100.0) + m * (1.0 - m) / 7.0 * (k * k)
        };
        assert!(
            (est.pending[1].variance.0 - (var(m1, 3.0, 30.0) + var(m2, 1.0, 10.0))).abs() < 1e-9
        );
        // The sites' split carries the same shares.
        let at_site = |site: u32| -> f64 {
            est.sampled
                .iter()
                .filter(|((_, key), _)| site_of(*key) == site)
                .map(|(_, c)| c.weight)
                .sum()
        };
        assert!((at_site(1) - (40.0 + 30.0 * m1)).abs() < 1e-9);
        assert!((at_site(2) - 10.0 * m2).abs() < 1e-9);
        // After a walk no birth since is judged: the sites' fates before it still hold, then
        // weigh half at each further walk.
        let walk = |e: &mut Estimator| {
            t.advance();
            e.set_anchor(anchor(&t, vec![0, 200], vec![0, 1600]));
            t.advance();
        };
        walk(&mut e);
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        let after_walk = e.estimate(&t, 2, None);
        assert!((after_walk.pending[1].objects - 10.0 * m2).abs() < 1e-9);
        walk(&mut e);
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        let halved = (0.0 * 2.0 + 0.5 * 2.0) / 4.0;
        assert!((e.estimate(&t, 2, None).pending[1].objects - 10.0 * halved).abs() < 1e-9);
    }

    #[test]
    fn a_sites_share_leans_toward_its_class() {
        let class = (0.3, 0.01);
        assert_eq!(Fates::default().survival_within(class), class);
        let (m, var) = Fates {
            alive: 0.0,
            dead: 20.0,
            samples: 2.0,
        }
        .survival_within(class);
        assert!(
            (m - 0.3 * 2.0 / 4.0).abs() < 1e-12,
            "half its class's, two samples each"
        );
        assert!((var - m * (1.0 - m) / 5.0).abs() < 1e-12);
        let (m, _) = Fates {
            alive: 1_000.0,
            dead: 0.0,
            samples: 998.0,
        }
        .survival_within(class);
        assert!(
            (m - (998.0 + 0.6) / 1_000.0).abs() < 1e-12,
            "many samples: its own"
        );
    }

    #[test]
    fn a_class_with_few_judged_samples_starts_from_the_pooled_share() {
        // What the JVM's judged samples say in general: most die young.
        let pooled = Fates::pooled(&[
            Fates {
                alive: 50.0,
                dead: 950.0,
                samples: 100.0,
            },
            Fates {
                alive: 0.0,
                dead: 0.0,
                samples: 0.0,
            },
        ])
        .survival()
        .unwrap()
        .0;
        assert!((pooled - (5.0 + 0.5) / 101.0).abs() < 1e-12);
        // None judged: no prediction.
        assert_eq!(Fates::default().survival_among(pooled), None);
        // One judged sample that died: near the pooled share's half, not 0.25 as from one half.
        let (m, _) = Fates {
            alive: 0.0,
            dead: 512.0,
            samples: 1.0,
        }
        .survival_among(pooled)
        .unwrap();
        assert!((m - 2.0 * pooled / 3.0).abs() < 1e-12 && m < 0.05, "{m}");
        // One that lived: a third of the way from the pooled share to all.
        let (m, var) = Fates {
            alive: 512.0,
            dead: 0.0,
            samples: 1.0,
        }
        .survival_among(pooled)
        .unwrap();
        assert!((m - (1.0 + 2.0 * pooled) / 3.0).abs() < 1e-12);
        assert!((var - m * (1.0 - m) / 4.0).abs() < 1e-12);
        // Many: its own share, whatever the pool says.
        let (m, _) = Fates {
            alive: 9_990.0,
            dead: 10.0,
            samples: 10_000.0,
        }
        .survival_among(pooled)
        .unwrap();
        assert!((m - 0.999).abs() < 1e-3);
    }

    #[test]
    fn survival_shares_lean_half_a_sample_toward_even() {
        assert_eq!(
            Fates::default().survival(),
            None,
            "no evidence, no prediction"
        );
        let all = Fates {
            alive: 300.0,
            dead: 0.0,
            samples: 3.0,
        };
        let (m, var) = all.survival().unwrap();
        assert!((m - 3.5 / 4.0).abs() < 1e-12);
        assert!((var - m * (1.0 - m) / 5.0).abs() < 1e-12);
        // By weight, not by sample: one large dead sample outweighs three small live ones.
        let (m, _) = Fates {
            alive: 30.0,
            dead: 90.0,
            samples: 4.0,
        }
        .survival()
        .unwrap();
        assert!((m - (0.25 * 4.0 + 0.5) / 5.0).abs() < 1e-12);
        // Many samples: the share is the observed one.
        let (m, var) = Fates {
            alive: 9_900.0,
            dead: 100.0,
            samples: 10_000.0,
        }
        .survival()
        .unwrap();
        assert!((m - 0.99).abs() < 1e-4 && var < 1e-5);
    }

    #[test]
    fn error95_is_two_standard_deviations() {
        assert_eq!(error95(100.0), 20);
        assert_eq!(error95(-1.0), 0);
    }
}
