//! What became of sampled births, and the sums over samples the estimate is made of: fates
//! and survival shares, ages, moments, the outside-TLAB bound, and pending births predicted.

use crate::census::walk::Pending;
use crate::sampling::tracker::Sample;

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

    pub(super) fn plus(&self, other: &Fates) -> Fates {
        Fates {
            alive: self.alive + other.alive,
            dead: self.dead + other.dead,
            samples: self.samples + other.samples,
        }
    }

    pub(super) fn scaled(&self, by: f64) -> Fates {
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
    pub(super) fn survival_toward(&self, prior: f64, k: f64) -> Option<(f64, f64)> {
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
pub(super) fn at_age_or_older(aged: &AgedFates, bin: usize) -> Fates {
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
pub(super) const ENOUGH_VERDICTS: f64 = 20.0;

/// How many samples' worth the pooled share of every class weighs in each class's share
/// ([`Fates::survival_among`]).
pub const CLASS_PRIOR_SAMPLES: f64 = 2.0;

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
    pub(super) fn size_variance_of_mean(&self, mean: f64) -> f64 {
        if self.objects <= 0.0 || self.square_objects <= 0.0 {
            return 0.0;
        }
        let spread = (self.sizes_squared / self.objects - mean * mean).max(0.0);
        spread * self.square_objects / (self.objects * self.objects)
    }

    pub(super) fn merge(&mut self, other: &Moments) {
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

    pub(super) fn add(&mut self, sample: &Sample) {
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
pub(super) const OUTSIDE_TLAB_MAX_LOSS: f64 = 0.6;

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

// `Pending` is carried by a walk's result (`walk.rs`); how it is predicted is the estimates'.
impl Pending {
    /// Pending births `p` at survival share `m`: each one's fate is a coin of that share
    /// (`m (1 - m) w^2`), and the share itself is uncertain (`var_m P^2`).
    pub(super) fn predicted(m: f64, var_m: f64, p: &Moments) -> Pending {
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

    pub(super) fn add(&mut self, other: &Pending) {
        self.objects += other.objects;
        self.bytes += other.bytes;
        self.variance.0 += other.variance.0;
        self.variance.1 += other.variance.1;
        self.outside_tlab.0 += other.outside_tlab.0;
        self.outside_tlab.1 += other.outside_tlab.1;
    }
}
