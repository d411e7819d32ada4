//! The worker's clock and budget: which snapshot is next, which GCs no snapshot covers yet, when
//! things last happened, and the pause budget that walks and searches spend. Plain values moved
//! by a few rules, tested here without a JVM.

use std::time::{Duration, Instant};

use memcity_proto::v1::snapshot::Trigger;

use super::schedule::Turn;
use super::Basis;
use crate::census::budget::{Budget, RootsStop};
use crate::options::Options;

/// Forced walks (past the budget) start at most this often.
pub(super) const FORCED_WALK_EVERY: Duration = Duration::from_secs(10);

pub(super) struct Clock {
    pub(super) budget: Budget,
    /// The path search's stop to list the roots, predicted (it spends `budget` too).
    pub(super) roots_stop: RootsStop,
    /// The next snapshot's number.
    pub(super) seq: u64,
    /// GCs finished as last seen.
    pub(super) gc_seen: u64,
    /// GC count at the last snapshot.
    pub(super) gc_at_snapshot: u64,
    pub(super) aborted_since: u64,
    /// Walks not started since the last snapshot because their predicted stop was past
    /// `max_pause`.
    pub(super) refused_since: u64,
    /// A GC happened that no walk covers yet.
    pub(super) walk_pending: bool,
    /// A GC happened that no snapshot (walk or estimate) covers yet.
    pub(super) estimate_pending: bool,
    /// When the first GC not covered by a snapshot was seen (see `GC_SETTLE`; not every later
    /// GC's: under a GC storm an estimate would never start).
    pub(super) gc_seen_at: Instant,
    /// When the last snapshot of any kind was published, for `period` and `estimates`.
    pub(super) last_snapshot: Instant,
    /// When the class table was last refreshed for an estimate.
    pub(super) last_refresh: Instant,
    /// Sampling time and wall time at the last sampling-cost check.
    pub(super) cost_check: (u64, Instant),
    /// When the last forced walk (`memcity snapshot --force`) started.
    pub(super) last_forced: Option<Instant>,
}

impl Clock {
    pub(super) fn new(options: &Options, start: Instant, now: Instant) -> Clock {
        Clock {
            budget: Budget::new(
                options.budget,
                options.min_interval,
                options.max_pause,
                start,
            ),
            roots_stop: RootsStop::default(),
            seq: 0,
            gc_seen: 0,
            gc_at_snapshot: 0,
            aborted_since: 0,
            refused_since: 0,
            walk_pending: false,
            estimate_pending: false,
            gc_seen_at: now,
            last_snapshot: now,
            last_refresh: now,
            cost_check: (0, now),
            last_forced: None,
        }
    }

    /// GCs finished that no snapshot covers: a walk and an estimate are due, the estimate
    /// dated from the first of them.
    pub(super) fn gcs_pending(&mut self, now: Instant) {
        if !self.estimate_pending {
            self.gc_seen_at = now;
        }
        self.walk_pending = true;
        self.estimate_pending = true;
    }

    /// This turn's inputs to the schedule (`Turn::plan`).
    pub(super) fn turn(
        &self,
        now: Instant,
        options: &Options,
        can_estimate: bool,
        filling: bool,
    ) -> Turn {
        Turn {
            now,
            walk_pending: self.walk_pending,
            estimate_pending: self.estimate_pending,
            period: options.period,
            estimates: options.estimates,
            can_estimate,
            last_snapshot: self.last_snapshot,
            gc_seen_at: self.gc_seen_at,
            filling,
        }
    }

    /// A snapshot resting on `basis` is published at `now`, with `gc_now` GCs finished: it
    /// covers what was pending. Returns the GCs that went without a snapshot of their own
    /// since the last (the GC that triggered this one is not skipped).
    pub(super) fn published(
        &mut self,
        trigger: Trigger,
        basis: Basis,
        gc_now: u64,
        now: Instant,
    ) -> u64 {
        let skipped = gc_now
            .saturating_sub(self.gc_at_snapshot)
            .saturating_sub(u64::from(trigger == Trigger::Gc));
        self.gc_at_snapshot = gc_now;
        self.last_snapshot = now;
        self.estimate_pending = false;
        if basis == Basis::Walk {
            self.walk_pending = false;
        }
        skipped
    }

    /// A forced walk may start at `now` (and is then counted), or the time since the last one
    /// when that was under [`FORCED_WALK_EVERY`] ago: forced walks pass the budget by design,
    /// and this keeps any client (or a script in a loop) from stopping the application over
    /// and over with them.
    pub(super) fn force_walk(&mut self, now: Instant) -> Result<(), Duration> {
        if let Some(since) = self.last_forced.map(|t| now.saturating_duration_since(t)) {
            if since < FORCED_WALK_EVERY {
                return Err(since);
            }
        }
        self.last_forced = Some(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn clock(now: Instant) -> Clock {
        Clock::new(&Options::default(), now, now)
    }

    #[test]
    fn gcs_pending_are_dated_from_the_first_that_no_snapshot_covers() {
        let t0 = Instant::now();
        let mut c = clock(t0);
        c.gcs_pending(t0 + 10 * MS);
        c.gcs_pending(t0 + 30 * MS);
        assert!(c.walk_pending && c.estimate_pending);
        assert_eq!(
            c.gc_seen_at,
            t0 + 10 * MS,
            "a GC storm does not push the estimate away"
        );
        c.published(
            Trigger::Gc,
            Basis::Estimate { anchor: None },
            2,
            t0 + 80 * MS,
        );
        assert!(!c.estimate_pending);
        assert!(c.walk_pending, "an estimate covers no walk");
        c.gcs_pending(t0 + 90 * MS);
        assert_eq!(c.gc_seen_at, t0 + 90 * MS);
        c.published(Trigger::Gc, Basis::Walk, 3, t0 + 95 * MS);
        assert!(!c.walk_pending && !c.estimate_pending);
        assert_eq!(c.last_snapshot, t0 + 95 * MS);
    }

    #[test]
    fn skipped_gcs_leave_out_the_gc_that_triggered_the_snapshot() {
        let t0 = Instant::now();
        let mut c = clock(t0);
        assert_eq!(c.published(Trigger::Start, Basis::Walk, 0, t0), 0);
        assert_eq!(c.published(Trigger::Gc, Basis::Walk, 5, t0), 4);
        assert_eq!(c.published(Trigger::Periodic, Basis::Walk, 7, t0), 2);
        assert_eq!(
            c.published(Trigger::Gc, Basis::Walk, 7, t0),
            0,
            "never below zero"
        );
    }

    #[test]
    fn forced_walks_start_at_most_once_in_their_interval() {
        let t0 = Instant::now();
        let mut c = clock(t0);
        assert_eq!(c.force_walk(t0), Ok(()));
        assert_eq!(c.force_walk(t0 + 4 * MS), Err(4 * MS));
        assert_eq!(c.force_walk(t0 + FORCED_WALK_EVERY), Ok(()));
        assert!(c.force_walk(t0 + FORCED_WALK_EVERY + MS).is_err());
    }

    #[test]
    fn a_turn_reads_the_clock_and_the_options_as_they_stand() {
        let t0 = Instant::now();
        let mut c = clock(t0);
        c.gcs_pending(t0 + MS);
        let options = Options::default();
        let turn = c.turn(t0 + 2 * MS, &options, true, false);
        assert!(turn.walk_pending && turn.estimate_pending && turn.can_estimate);
        assert_eq!(turn.gc_seen_at, t0 + MS);
        assert_eq!(turn.period, options.period);
        assert_eq!(turn.estimates, options.estimates);
    }
}
