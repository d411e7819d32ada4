//! The stopped-time budget: whether a heap walk may run, what it will cost, and when a running
//! one must give up.
//!
//! A token bucket: credit accrues at `fraction` of wall time (2 % by default) from a small
//! initial allowance, every walk (requested ones too) spends its measured pause, and a GC-driven
//! walk starts only when the credit covers its predicted cost and the minimum interval has
//! passed. So over any stretch the JVM is stopped at most `fraction` of the time plus one walk,
//! and a GC storm cannot turn into a snapshot storm.
//!
//! The cost of a walk is predicted before it starts, from the walks' time per object and the
//! live objects now (the latest estimate): a walk predicted past `max_pause` is never started,
//! so an aborted walk is a rare misprediction, not the routine on a large heap. The time per
//! object is the slowest of the last few walks', not the last one's: the same heap walks
//! half as fast on a loaded machine (an attach-time walk predicted at 18 ms from a quiet
//! measurement ran 28 ms beside two busy processes and was aborted), and a prediction that
//! held for the slowest recent walk leaves that much margin.

use std::time::{Duration, Instant};

/// Credit a session starts with, so the first walks (on a small, young heap) need not wait.
pub const INITIAL_CREDIT: Duration = Duration::from_millis(50);
/// A walk is "far over budget" at this multiple of its expected cost...
pub const ABORT_FACTOR: u32 = 5;
/// ...but never below this, so small heaps with noisy timings are not aborted.
pub const ABORT_FLOOR: Duration = Duration::from_millis(500);

/// Time per live object assumed before any walk measured it: the ~190 ns measured on JDK 17
/// (BENCHMARKS.md) with a margin for slower machines.
pub const DEFAULT_NS_PER_OBJECT: f64 = 250.0;
/// Walks smaller than this measure mostly fixed costs (the safepoint, cold caches), so they may
/// lower the per-object figure but never raise it.
const MIN_OBJECTS_TO_MEASURE: u64 = 100_000;
/// Walks whose time per object the prediction takes the slowest of.
const RECENT_RATES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Walk,
    /// Not before this instant.
    WaitUntil(Instant),
}

#[derive(Debug, Clone)]
pub struct Budget {
    fraction: f64,
    min_interval: Duration,
    max_pause: Duration,
    start: Instant,
    spent: Duration,
    last_end: Option<Instant>,
    /// Time per object of the last walks large enough to measure it, and the shortest walk: a
    /// walk costs at least its fixed part (the safepoint, tagging the threads, the class
    /// table), whatever the heap.
    rates: StopRates,
    /// Before any such walk: the default, lowered by what small walks measured.
    small_rate: f64,
}

/// What a stop's prediction rests on: the time per unit (a live object for walks, a byte in use
/// for the roots' listing) of the last few stops that measured it, of which the slowest is
/// taken (the same heap walks half as fast on a loaded machine), and the shortest stop so far
/// (a stop costs at least its fixed part).
#[derive(Debug, Clone, Default)]
struct StopRates {
    recent: std::collections::VecDeque<f64>,
    shortest: Option<Duration>,
}

impl StopRates {
    fn note_stop(&mut self, pause: Duration) {
        self.shortest = Some(self.shortest.map_or(pause, |s| s.min(pause)));
    }

    fn push(&mut self, rate: f64) {
        if self.recent.len() == RECENT_RATES {
            self.recent.pop_front();
        }
        self.recent.push_back(rate);
    }

    fn slowest(&self) -> Option<f64> {
        self.recent.iter().copied().reduce(f64::max)
    }

    /// `units` at `ns_per_unit`, never less than the shortest stop so far.
    fn predict(&self, units: u64, ns_per_unit: f64) -> Duration {
        let by_rate = Duration::from_secs_f64(units as f64 * ns_per_unit / 1e9);
        by_rate.max(self.shortest.unwrap_or(Duration::ZERO))
    }
}

impl Budget {
    pub fn new(fraction: f64, min_interval: Duration, max_pause: Duration, start: Instant) -> Self {
        Self {
            fraction,
            min_interval,
            max_pause,
            start,
            spent: Duration::ZERO,
            last_end: None,
            rates: StopRates::default(),
            small_rate: DEFAULT_NS_PER_OBJECT,
        }
    }

    /// Credit at `now` in seconds; negative after requested walks overspent it.
    fn credit(&self, now: Instant) -> f64 {
        let earned = now.saturating_duration_since(self.start).as_secs_f64() * self.fraction;
        INITIAL_CREDIT.as_secs_f64() + earned - self.spent.as_secs_f64()
    }

    /// What a walk of `objects` live objects is predicted to stop the JVM: its time per object,
    /// and never less than the shortest walk so far (a small heap's walk is mostly fixed
    /// costs: a debug build's walk of 20,000 objects, predicted at 1 ms from a rate, took 15).
    pub fn predict(&self, objects: u64) -> Duration {
        self.rates.predict(objects, self.ns_per_object())
    }

    /// Whether a walk predicted at `cost` may run at all.
    pub fn fits(&self, cost: Duration) -> bool {
        cost <= self.max_pause
    }

    /// How long until the budget has earned `cost`, zero if it has.
    pub fn wait_for_credit(&self, now: Instant, cost: Duration) -> Duration {
        let missing = cost.as_secs_f64() - self.credit(now);
        if missing > 0.0 {
            Duration::from_secs_f64(missing / self.fraction)
        } else {
            Duration::ZERO
        }
    }

    /// May a GC-driven walk predicted at `cost` start at `now`? (The caller first checks that
    /// it [`fits`](Self::fits) at all.)
    pub fn decide(&self, now: Instant, cost: Duration) -> Decision {
        let mut not_before = now;
        if let Some(end) = self.last_end {
            not_before = not_before.max(end + self.min_interval);
        }
        let missing = cost.as_secs_f64() - self.credit(now);
        if missing > 0.0 {
            let wait = Duration::from_secs_f64(missing / self.fraction);
            not_before = not_before.max(now + wait);
        }
        if not_before <= now {
            Decision::Walk
        } else {
            Decision::WaitUntil(not_before)
        }
    }

    /// How long a walk predicted at `cost` may stop the JVM before it is aborted: far past its
    /// prediction, and never past `max_pause`.
    pub fn abort_after(&self, cost: Duration) -> Duration {
        (cost * ABORT_FACTOR).max(ABORT_FLOOR).min(self.max_pause)
    }

    /// Books a finished (or aborted) walk that visited `objects` in `pause`.
    pub fn record(&mut self, pause: Duration, objects: u64, end: Instant) {
        self.spent += pause;
        self.last_end = Some(end);
        self.rates.note_stop(pause);
        if objects > 0 {
            let measured = pause.as_nanos() as f64 / objects as f64;
            if objects >= MIN_OBJECTS_TO_MEASURE {
                self.rates.push(measured);
            } else {
                self.small_rate = self.small_rate.min(measured);
            }
        }
    }

    /// The time per object predictions use: the slowest of the recent measuring walks, or
    /// before any, the default lowered by small walks.
    pub fn ns_per_object(&self) -> f64 {
        self.rates.slowest().unwrap_or(self.small_rate)
    }

    /// Books a stop that is no walk (the path search's listing of the roots): it spends the
    /// credit as a walk does, and says nothing of a walk's time per object.
    pub fn spend(&mut self, pause: Duration) {
        self.spent += pause;
    }

    /// Whether a stop that is no walk, predicted at `cost`, may come now: within `max_pause`,
    /// and while the credit is not spent (it may then overspend by this one stop, which the
    /// walks after it wait out: waiting for its whole cost instead, a listing would never
    /// come beside walks that spend the credit as it accrues, and a leak held by a frame
    /// would never be seen). No minimum interval: it is no snapshot.
    pub fn affords(&self, now: Instant, cost: Duration) -> bool {
        self.fits(cost) && self.credit(now) >= 0.0
    }

    pub fn spent(&self) -> Duration {
        self.spent
    }

    pub fn wall(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }
}

/// The path search's stop to list the GC roots (`paths::Search::start`), predicted from the
/// last ones' time per byte of heap in use: JDK 17 and 18 go over the whole heap after the
/// listing to restore the objects' mark words, so the stop grows with the heap, garbage
/// included (1.3 s on a 1 GB Shenandoah heap full of dropped maps, which held the collector's
/// marking back until it degenerated); JDK 19 and later keep those marks in a bitmap, and it
/// is a few milliseconds. The slowest of the last few, as for walks.
#[derive(Debug, Clone, Default)]
pub struct RootsStop(StopRates);

impl RootsStop {
    /// The stop a listing would take with `used` bytes of heap in use; `None` before any
    /// listing was measured (the first comes as the JVM starts, on a small heap).
    pub fn predict(&self, used: u64) -> Option<Duration> {
        let rate = self.0.slowest()?;
        Some(self.0.predict(used, rate))
    }

    /// Books a listing that stopped the JVM `pause` with `used` bytes in use.
    pub fn record(&mut self, pause: Duration, used: u64) {
        self.0.note_stop(pause);
        if used > 0 {
            self.0.push(pause.as_nanos() as f64 / used as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn budget(start: Instant) -> Budget {
        Budget::new(0.02, Duration::from_secs(1), Duration::from_secs(2), start)
    }

    #[test]
    fn a_roots_listing_is_predicted_from_the_heap_in_use_and_spends_the_credit() {
        let t0 = Instant::now();
        let mut stop = RootsStop::default();
        assert_eq!(stop.predict(1 << 30), None, "nothing measured yet");
        // 5 ms with 100 MB in use, then 1 GB in use (JDK 17's pass over the heap).
        stop.record(5 * MS, 100_000_000);
        let predicted = stop.predict(1_000_000_000).unwrap();
        assert_eq!(predicted, 50 * MS);
        // A listing never takes less than the shortest so far.
        assert_eq!(stop.predict(1_000).unwrap(), 5 * MS);
        let mut b = budget(t0);
        // 50 ms of initial credit: it affords the first listing, and one more that overspends
        // it, not a third at once.
        assert!(b.affords(t0, predicted));
        b.spend(predicted);
        assert!(b.affords(t0, predicted));
        b.spend(predicted);
        assert!(!b.affords(t0, predicted));
        // 2 % of 2.5 s earns back what was overspent; past max_pause, never.
        assert!(b.affords(t0 + 2_500 * MS, predicted));
        assert!(!b.affords(t0 + 1_000_000 * MS, 3_000 * MS));
        // The walks wait for the credit the listings overspent.
        assert_ne!(b.decide(t0 + 100 * MS, MS), Decision::Walk);
    }

    #[test]
    fn first_walk_may_run_at_once_with_the_hard_cap() {
        let t0 = Instant::now();
        let b = budget(t0);
        assert_eq!(b.decide(t0, Duration::ZERO), Decision::Walk);
        assert_eq!(b.abort_after(Duration::ZERO), ABORT_FLOOR);
        assert_eq!(
            b.predict(4_000_000),
            Duration::from_secs(1),
            "250 ns/object before any walk"
        );
    }

    #[test]
    fn minimum_interval_holds_even_with_credit() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        b.record(MS, 10_000, t0);
        assert_eq!(
            b.decide(t0 + 500 * MS, MS),
            Decision::WaitUntil(t0 + 1000 * MS)
        );
        assert_eq!(b.decide(t0 + 1000 * MS, MS), Decision::Walk);
    }

    #[test]
    fn expensive_walks_are_spaced_to_the_budget() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        // A 400 ms walk spends the 50 ms start credit and 350 ms more: at 2 % that is 17.5 s of
        // wall time, plus 20 s to earn the next 400 ms: 37.5 s after the walk.
        b.record(400 * MS, 2_000_000, t0);
        let next = b.predict(2_000_000);
        assert_eq!(next, 400 * MS);
        match b.decide(t0 + 1000 * MS, next) {
            Decision::WaitUntil(t) => {
                let wait = t.duration_since(t0);
                assert!(
                    wait > Duration::from_millis(37_400) && wait < Duration::from_millis(37_600),
                    "{wait:?}"
                )
            }
            Decision::Walk => panic!("walked over budget"),
        }
        assert_eq!(
            b.decide(t0 + Duration::from_millis(37_600), next),
            Decision::Walk
        );
        assert_eq!(
            b.wait_for_credit(t0 + Duration::from_millis(37_600), next),
            Duration::ZERO
        );
    }

    #[test]
    fn long_run_stays_within_fraction() {
        // Simulate a GC every 10 ms for 10 minutes with walks of 30 ms.
        let t0 = Instant::now();
        let mut b = budget(t0);
        let mut now = t0;
        let mut walks = 0;
        while now < t0 + Duration::from_secs(600) {
            if b.decide(now, b.predict(150_000)) == Decision::Walk {
                b.record(30 * MS, 150_000, now + 30 * MS);
                now += 30 * MS;
                walks += 1;
            }
            now += 10 * MS;
        }
        let fraction = b.spent().as_secs_f64() / 600.0;
        assert!(
            fraction <= 0.02 + INITIAL_CREDIT.as_secs_f64() / 600.0,
            "{fraction}"
        );
        // ... and the budget is actually used, not starved.
        assert!(fraction > 0.015, "{fraction}");
        assert!(walks > 200);
    }

    #[test]
    fn abort_threshold_follows_the_prediction_within_floor_and_cap() {
        let t0 = Instant::now();
        let b = budget(t0);
        assert_eq!(b.abort_after(10 * MS), ABORT_FLOOR);
        assert_eq!(b.abort_after(200 * MS), 1000 * MS);
        assert_eq!(b.abort_after(1500 * MS), Duration::from_secs(2));
    }

    #[test]
    fn predictions_follow_measured_walks_and_refuse_what_cannot_fit() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        // A 1 M-object walk at 190 ns/object sets the rate.
        b.record(190 * MS, 1_000_000, t0);
        assert_eq!(b.predict(10_000_000), 1900 * MS);
        assert!(b.fits(b.predict(10_000_000)));
        assert!(!b.fits(b.predict(24_000_000)), "a 4.5 s walk never starts");
        // A tiny walk dominated by fixed costs moves nothing once a large walk measured.
        b.record(5 * MS, 1_000, t0);
        b.record(MS / 10, 1_000, t0);
        assert_eq!(b.predict(1_000_000), 190 * MS);
        // An aborted walk's rate counts like any other measurement.
        b.record(2000 * MS, 8_000_000, t0);
        assert_eq!(b.predict(8_000_000), 2000 * MS);
        // The slowest of the recent walks holds until faster ones push it out.
        for _ in 0..RECENT_RATES - 1 {
            b.record(100 * MS, 1_000_000, t0);
            assert_eq!(b.predict(1_000_000), 250 * MS, "a loaded machine's walk");
        }
        b.record(100 * MS, 1_000_000, t0);
        assert_eq!(b.predict(1_000_000), 100 * MS);
    }

    #[test]
    fn no_walk_is_predicted_shorter_than_the_shortest_so_far() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        b.record(15 * MS, 20_000, t0);
        assert_eq!(
            b.predict(20_000),
            15 * MS,
            "fixed costs, not 20,000 x 250 ns"
        );
        assert_eq!(b.predict(1_000_000), 250 * MS, "the rate rules large heaps");
        b.record(4 * MS, 10_000, t0);
        assert_eq!(b.predict(1_000), 4 * MS);
    }

    #[test]
    fn before_a_large_walk_small_ones_may_lower_the_default_but_not_raise_it() {
        let mut b = budget(Instant::now());
        b.record(5 * MS, 1_000, Instant::now());
        assert_eq!(b.predict(1_000_000), 250 * MS);
        b.record(MS / 10, 1_000, Instant::now());
        assert_eq!(b.predict(1_000_000), 100 * MS);
    }
}
