//! Lifetimes of the tracked samples (`memcity.proto` `Lifetimes`): what each sampled object's
//! birth, death and last holder were, gathered from what the tracker already knows, with no
//! work on the application's threads beyond the clocks a sample records at birth.
//!
//! A death is seen when the estimate's sweep finds a sample's weak reference cleared; it is
//! dated by the newest GC then (the tracker's [`Moment`] of that GC). Between two snapshots the
//! deaths are held here, at most [`MAX_DEATHS`] of them: past that an even choice is kept
//! (reservoir sampling), and their weights are scaled to stand for all, so the counts the
//! viewer adds up stay unbiased and the memory stays bounded however fast the application
//! allocates. The survivors are the other half of a survival curve: each sweep counts the
//! live samples by allocation site, type and age in GCs.

use std::collections::HashMap;

use crate::sampling::tracker::{Moment, Sample};

/// Deaths kept between two snapshots at most.
pub const MAX_DEATHS: usize = 2_000;
/// Age buckets in GCs survived: 0, 1, 2-3, 4-7, 8-15, 16-31, 32 or more.
pub const AGE_BUCKETS: usize = 7;
/// Survivor groups (allocation site and type) a snapshot carries at most, the largest; the
/// rest go as one (`Taken::other_survivors`). Every snapshot repeats them.
pub const MAX_SURVIVOR_GROUPS: usize = 1_000;

/// A sample that died, when, and by which collectors (a string id; 0: unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct Death {
    pub sample: Sample,
    pub died: Moment,
    pub collectors: u32,
}

/// What the next snapshot carries.
#[derive(Debug, Default)]
pub struct Taken {
    /// Kept deaths, weights already scaled to stand for every booked one.
    pub deaths: Vec<Death>,
    pub booked: u64,
    /// `(class, site)` -> live weight by age bucket, the largest [`MAX_SURVIVOR_GROUPS`].
    pub survivors: Vec<((u32, u32), [f64; AGE_BUCKETS])>,
    /// The other groups' survivors together.
    pub other_survivors: Option<[f64; AGE_BUCKETS]>,
}

#[derive(Debug)]
pub struct Lifetimes {
    /// By thread id: whether the thread is memcity's own (its samples are left out, as the
    /// city leaves memcity's objects out of the application's).
    memcity: Vec<bool>,
    deaths: Vec<Death>,
    booked: u64,
    survivors: HashMap<(u32, u32), [f64; AGE_BUCKETS]>,
    /// xorshift64 state for the reservoir's choice.
    random: u64,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self {
            memcity: vec![false],
            deaths: Vec::new(),
            booked: 0,
            survivors: HashMap::new(),
            random: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

/// The bucket of an age of `gcs` GCs survived.
pub fn age_bucket(gcs: u32) -> usize {
    match gcs {
        0 => 0,
        n => ((u32::BITS - n.leading_zeros()) as usize).min(AGE_BUCKETS - 1),
    }
}

impl Lifetimes {
    /// Which threads are memcity's own ([`crate::sampling::Sampler::memcity_threads`]).
    pub fn set_memcity_threads(&mut self, memcity: Vec<bool>) {
        self.memcity = memcity;
    }

    /// Whether `sample` is followed, and the weight it stands for: none of memcity's own
    /// threads'; taken while sites were recorded for one sample in `n` (`Sample::one_in`, as
    /// it was at its birth), those with a site, each for `n`.
    fn followed(&self, sample: &Sample) -> Option<f64> {
        if crate::sampling::is_memcity(&self.memcity, sample.thread) {
            return None;
        }
        match sample.one_in {
            1 => Some(sample.weight),
            n if sample.site != crate::sampling::NO_SITE => Some(sample.weight * f64::from(n)),
            _ => None,
        }
    }

    /// A sweep begins: the survivors are counted afresh.
    pub fn begin_sweep(&mut self) {
        self.survivors.clear();
    }

    /// `sample` died by the GC of `died`, one of `collectors`'.
    pub fn died(&mut self, sample: &Sample, died: Moment, collectors: u32) {
        let Some(weight) = self.followed(sample) else {
            return;
        };
        self.booked += 1;
        let death = Death {
            sample: Sample { weight, ..*sample },
            died,
            collectors,
        };
        if self.deaths.len() < MAX_DEATHS {
            self.deaths.push(death);
            return;
        }
        // Algorithm R: the n-th death replaces a kept one with chance MAX_DEATHS / n.
        let pick = self.next_random() % self.booked;
        if let Some(kept) = self.deaths.get_mut(pick as usize) {
            *kept = death;
        }
    }

    /// `sample` is alive after `gcs` GCs have finished.
    pub fn alive(&mut self, sample: &Sample, gcs: u32) {
        let Some(weight) = self.followed(sample) else {
            return;
        };
        let age = gcs.saturating_sub(sample.birth.gcs);
        self.survivors
            .entry((sample.class, sample.site))
            .or_insert([0.0; AGE_BUCKETS])[age_bucket(age)] += weight;
    }

    /// Survivors born since the last GC (age 0) have not been judged by one: each (class,
    /// site) of them counts at `share(class, site)`, the share of such births expected alive
    /// (the estimates' own, `census/estimate/`), not whole, which would count the garbage made since.
    pub fn expect_pending(&mut self, share: impl Fn(u32, u32) -> f64) {
        self.survivors.retain(|&(class, site), ages| {
            ages[0] *= share(class, site);
            ages.iter().any(|&w| w > 0.0)
        });
    }

    /// The deaths since the last call and the survivors of the last sweep.
    pub fn take(&mut self) -> Taken {
        let mut deaths = std::mem::take(&mut self.deaths);
        let booked = std::mem::take(&mut self.booked);
        if booked > deaths.len() as u64 {
            let scale = booked as f64 / deaths.len() as f64;
            for d in &mut deaths {
                d.sample.weight *= scale;
            }
        }
        let mut survivors: Vec<_> = self.survivors.iter().map(|(k, v)| (*k, *v)).collect();
        let total = |ages: &[f64; AGE_BUCKETS]| ages.iter().sum::<f64>();
        survivors.sort_by(|a, b| total(&b.1).total_cmp(&total(&a.1)).then(a.0.cmp(&b.0)));
        let other_survivors = (survivors.len() > MAX_SURVIVOR_GROUPS).then(|| {
            let mut other = [0.0; AGE_BUCKETS];
            for (_, ages) in survivors.drain(MAX_SURVIVOR_GROUPS..) {
                for (o, a) in other.iter_mut().zip(ages) {
                    *o += a;
                }
            }
            other
        });
        survivors.sort_unstable_by_key(|(k, _)| *k);
        Taken {
            deaths,
            booked,
            survivors,
            other_survivors,
        }
    }

    fn next_random(&mut self) -> u64 {
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.random = x;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(class: u32, weight: f64, born_gcs: u32) -> Sample {
        Sample {
            class,
            site: 1,
            thread: 1,
            weight,
            size: 16,
            born: 2,
            seen: 0,
            birth: Moment {
                ms: 0,
                gcs: born_gcs,
                allocated: 0,
            },
            holder: None,
            seen_ms: 0,
            one_in: 1,
            missed: false,
            identity: 0,
        }
    }

    #[test]
    fn ages_fall_in_powers_of_two() {
        let buckets: Vec<usize> = [0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 1000]
            .iter()
            .map(|&a| age_bucket(a))
            .collect();
        assert_eq!(buckets, [0, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6]);
    }

    /// Past the cap an even choice is kept, standing for all: the total weight is the booked
    /// deaths', and each class keeps about its share.
    #[test]
    fn deaths_past_the_cap_are_a_fair_choice_that_stands_for_all() {
        let mut l = Lifetimes::default();
        let died = Moment::default();
        for i in 0..10 * MAX_DEATHS {
            // A quarter are class 1, the rest class 2.
            l.died(&sample(1 + u32::from(i % 4 != 0), 10.0, 0), died, 0);
        }
        let taken = l.take();
        assert_eq!(taken.booked, 10 * MAX_DEATHS as u64);
        assert_eq!(taken.deaths.len(), MAX_DEATHS);
        let total: f64 = taken.deaths.iter().map(|d| d.sample.weight).sum();
        assert!((total - 10.0 * 10.0 * MAX_DEATHS as f64).abs() < 1e-6 * total);
        let ones = taken.deaths.iter().filter(|d| d.sample.class == 1).count() as f64;
        let share = ones / MAX_DEATHS as f64;
        assert!(
            (0.2..0.3).contains(&share),
            "class 1 kept {share}, not about 0.25"
        );
        // Taken: the next snapshot starts from nothing.
        assert_eq!(l.take().booked, 0);
    }

    /// With sites for one sample in four, only those are followed, each for four.
    #[test]
    fn sampled_sites_stand_for_the_samples_without() {
        let mut l = Lifetimes::default();
        let with_site = Sample {
            one_in: 4,
            ..sample(1, 10.0, 0)
        };
        let without = Sample {
            site: crate::sampling::NO_SITE,
            ..with_site
        };
        l.died(&with_site, Moment::default(), 0);
        l.died(&without, Moment::default(), 0);
        l.begin_sweep();
        l.alive(&with_site, 0);
        l.alive(&without, 0);
        let taken = l.take();
        assert_eq!(taken.booked, 1);
        assert_eq!(taken.deaths[0].sample.weight, 40.0);
        assert_eq!(
            taken.survivors,
            [((1, 1), [40.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])]
        );
    }

    #[test]
    fn memcitys_own_threads_are_left_out() {
        let mut l = Lifetimes::default();
        // Thread 1 is memcity's; 2 is not, and 3 was named after the list was taken.
        l.set_memcity_threads(vec![false, true, false]);
        let ours = sample(1, 1.0, 0); // thread 1
        for thread in [1, 2, 3] {
            l.died(&Sample { thread, ..ours }, Moment::default(), 0);
        }
        assert_eq!(l.take().booked, 2);
    }

    #[test]
    fn survivors_are_counted_afresh_by_age_at_each_sweep() {
        let mut l = Lifetimes::default();
        l.begin_sweep();
        l.alive(&sample(1, 5.0, 0), 3);
        l.alive(&sample(1, 5.0, 3), 3);
        l.alive(&sample(2, 1.0, 1), 3);
        let taken = l.take();
        assert_eq!(
            taken.survivors,
            [
                ((1, 1), [5.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0]),
                ((2, 1), [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
            ]
        );
        l.begin_sweep();
        assert!(l.take().survivors.is_empty());
    }

    #[test]
    fn survivors_born_since_the_last_gc_count_at_their_share() {
        let mut l = Lifetimes::default();
        l.begin_sweep();
        let at = |site, born_gcs| Sample {
            site,
            ..sample(7, 10.0, born_gcs)
        };
        l.alive(&at(1, 5), 5);
        l.alive(&at(2, 5), 5);
        l.alive(&at(2, 3), 5);
        l.expect_pending(|class, site| match (class, site) {
            (7, 1) => 0.9,
            _ => 0.0,
        });
        let taken = l.take();
        let ages = |site| {
            taken
                .survivors
                .iter()
                .find(|(k, _)| *k == (7, site))
                .map(|(_, a)| *a)
        };
        assert_eq!(ages(1).unwrap()[0], 9.0);
        // Site 2's newborn is expected dead; its older survivor (two GCs) stays whole.
        let two = ages(2).unwrap();
        assert_eq!((two[0], two[age_bucket(2)]), (0.0, 10.0));
    }

    /// Past the cap the smallest groups go as one, nothing lost.
    #[test]
    fn survivor_groups_past_the_cap_go_as_one() {
        let mut l = Lifetimes::default();
        l.begin_sweep();
        let n = MAX_SURVIVOR_GROUPS as u32 + 10;
        for class in 0..n {
            l.alive(&sample(class, f64::from(class + 1), 0), 0);
        }
        let taken = l.take();
        assert_eq!(taken.survivors.len(), MAX_SURVIVOR_GROUPS);
        assert!(
            taken.survivors.iter().all(|((class, _), _)| *class >= 10),
            "the largest kept"
        );
        let other = taken.other_survivors.unwrap();
        assert_eq!(other[0], (1..=10).sum::<u32>() as f64);
    }
}
