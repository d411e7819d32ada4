//! The stopped-time budget: when a heap walk may run and when a running one must give up.
//!
//! A token bucket: credit accrues at `fraction` of wall time (2 % by default) from a small
//! initial allowance, every walk (requested ones too) spends its measured pause, and a GC-driven
//! walk starts only when the credit covers the expected cost (the last walk's) and the minimum
//! interval has passed. So over any stretch the JVM is stopped at most `fraction` of the time plus
//! one walk, and a GC storm cannot turn into a snapshot storm.

use std::time::{Duration, Instant};

/// Credit a session starts with, so the first walks (on a small, young heap) need not wait.
pub const INITIAL_CREDIT: Duration = Duration::from_millis(50);
/// A walk is "far over budget" at this multiple of its expected cost...
pub const ABORT_FACTOR: u32 = 5;
/// ...but never below this, so small heaps with noisy timings are not aborted.
pub const ABORT_FLOOR: Duration = Duration::from_millis(500);

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
    last_cost: Option<Duration>,
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
            last_cost: None,
        }
    }

    /// Credit at `now` in seconds; negative after requested walks overspent it.
    fn credit(&self, now: Instant) -> f64 {
        let earned = now.saturating_duration_since(self.start).as_secs_f64() * self.fraction;
        INITIAL_CREDIT.as_secs_f64() + earned - self.spent.as_secs_f64()
    }

    pub fn expected_cost(&self) -> Duration {
        self.last_cost.unwrap_or(Duration::ZERO)
    }

    /// May a GC-driven walk start at `now`?
    pub fn decide(&self, now: Instant) -> Decision {
        let mut not_before = now;
        if let Some(end) = self.last_end {
            not_before = not_before.max(end + self.min_interval);
        }
        let missing = self.expected_cost().as_secs_f64() - self.credit(now);
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

    /// How long the next walk may stop the JVM before it is aborted.
    pub fn abort_after(&self) -> Duration {
        match self.last_cost {
            None => self.max_pause,
            Some(cost) => (cost * ABORT_FACTOR).max(ABORT_FLOOR).min(self.max_pause),
        }
    }

    /// Books a finished (or aborted) walk.
    pub fn record(&mut self, pause: Duration, end: Instant) {
        self.spent += pause;
        self.last_end = Some(end);
        // An aborted walk's pause is a lower bound of its real cost, which is what we want: the
        // next attempt waits at least that long for credit.
        self.last_cost = Some(pause);
    }

    pub fn spent(&self) -> Duration {
        self.spent
    }

    pub fn wall(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
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
    fn first_walk_may_run_at_once_with_the_hard_cap() {
        let t0 = Instant::now();
        let b = budget(t0);
        assert_eq!(b.decide(t0), Decision::Walk);
        assert_eq!(b.abort_after(), Duration::from_secs(2));
    }

    #[test]
    fn minimum_interval_holds_even_with_credit() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        b.record(MS, t0);
        assert_eq!(b.decide(t0 + 500 * MS), Decision::WaitUntil(t0 + 1000 * MS));
        assert_eq!(b.decide(t0 + 1000 * MS), Decision::Walk);
    }

    #[test]
    fn expensive_walks_are_spaced_to_the_budget() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        // A 400 ms walk spends the 50 ms start credit and 350 ms more: at 2 % that is 17.5 s of
        // wall time, plus 20 s to earn the next 400 ms: 37.5 s after the walk.
        b.record(400 * MS, t0);
        match b.decide(t0 + 1000 * MS) {
            Decision::WaitUntil(t) => {
                let wait = t.duration_since(t0);
                assert!(
                    wait > Duration::from_millis(37_400) && wait < Duration::from_millis(37_600),
                    "{wait:?}"
                )
            }
            Decision::Walk => panic!("walked over budget"),
        }
        assert_eq!(b.decide(t0 + Duration::from_millis(37_600)), Decision::Walk);
    }

    #[test]
    fn long_run_stays_within_fraction() {
        // Simulate a GC every 10 ms for 10 minutes with walks of 30 ms.
        let t0 = Instant::now();
        let mut b = budget(t0);
        let mut now = t0;
        let mut walks = 0;
        while now < t0 + Duration::from_secs(600) {
            if b.decide(now) == Decision::Walk {
                b.record(30 * MS, now + 30 * MS);
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
    fn abort_threshold_follows_last_cost_within_floor_and_cap() {
        let t0 = Instant::now();
        let mut b = budget(t0);
        b.record(10 * MS, t0);
        assert_eq!(b.abort_after(), ABORT_FLOOR);
        b.record(200 * MS, t0);
        assert_eq!(b.abort_after(), 1000 * MS);
        b.record(1500 * MS, t0);
        assert_eq!(b.abort_after(), Duration::from_secs(2));
    }
}
