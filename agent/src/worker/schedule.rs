//! Scheduling: each turn of the worker's loop, whether to walk the heap, estimate it, or only
//! wait, and how long. A pure decision over plain values, with the clock injected
//! ([`Turn::now`]), so its rules are unit-tested without a JVM; `Worker::step` gathers the
//! inputs, asks [`Turn::plan`], and carries the plan out.

use std::time::{Duration, Instant};

use memcity_proto::v1::snapshot::Trigger;

use crate::census::budget::{Budget, Decision};

/// How often the worker looks for requests when no GC wakes it.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// How long an estimate waits after a GC: a stop-the-world collector has cleared the weak
/// references of what it freed by GarbageCollectionFinish, but ZGC and Shenandoah post that
/// event at each pause of a cycle and clear weak references concurrently between them.
pub(super) const GC_SETTLE: Duration = Duration::from_millis(50);

/// What a turn's decision is made from: the worker's state and options at `now`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn {
    /// The clock, read once for the turn.
    pub(super) now: Instant,
    /// A GC happened that no walk covers yet.
    pub(super) walk_pending: bool,
    /// A GC happened that no snapshot (walk or estimate) covers yet (or a path search finished
    /// that no snapshot carries yet).
    pub(super) estimate_pending: bool,
    /// The `period` option: a snapshot at least this often, GCs or not.
    pub(super) period: Option<Duration>,
    /// The `estimates` option: estimates at most this often; `None`, no estimates.
    pub(super) estimates: Option<Duration>,
    /// Estimates need samples (their deaths come from their weak references).
    pub(super) can_estimate: bool,
    /// When the last snapshot of any kind was published.
    pub(super) last_snapshot: Instant,
    /// When the first GC not covered by a snapshot was seen (see `GC_SETTLE`).
    pub(super) gc_seen_at: Instant,
    /// The heap was at least three quarters full after the last GC: the JVM may end at any of
    /// the next GCs, with no warning under `-XX:+ExitOnOutOfMemoryError`, so estimates come at
    /// most every [`FILLING_ESTIMATES`] instead, for the last snapshot to show the heap full.
    pub(super) filling: bool,
}

/// The estimates' interval while the heap is filling (see [`Turn::filling`]): near its end a heap
/// goes through several GCs a second, and the `estimates` default (500 ms) skipped the ones that
/// showed it full (seen: the last snapshot of a JVM that exited on its OutOfMemoryError showed the
/// heap below nine tenths full, so `memcity report` could not infer the error).
pub(super) const FILLING_ESTIMATES: Duration = Duration::from_millis(100);

/// A walk to try now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Walk {
    pub(super) trigger: Trigger,
    /// Aborted if it stops the JVM longer (`Budget::abort_after`).
    pub(super) limit: Duration,
}

/// A walk not started because its predicted stop was past `max_pause`; `walk_pending` is
/// cleared either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refused {
    pub(super) predicted: Duration,
    /// A GC's walk was pending: the refusal counts in the snapshot's `refused_walks` (a walk
    /// considered only because the period passed does not).
    pub(super) counted: bool,
}

/// What a turn does, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Plan {
    /// A walk considered and refused (predicted past `max_pause`).
    pub(super) refused: Option<Refused>,
    /// A walk to try first. Once it succeeds the turn ends, to sleep at most [`POLL`]; if it
    /// fails (aborted, JVMTI failed), the rest of the plan follows.
    pub(super) walk: Option<Walk>,
    /// An estimate to publish.
    pub(super) estimate: Option<Trigger>,
    /// How long to sleep at most once the rest is done.
    pub(super) wait: Duration,
}

impl Turn {
    /// No snapshot for `period`.
    fn quiet_too_long(&self) -> bool {
        self.period
            .is_some_and(|period| self.now.saturating_duration_since(self.last_snapshot) >= period)
    }

    /// Whether a walk is considered this turn: only then does the caller measure the walk's
    /// predicted stop for [`plan`](Self::plan) (measuring polls the samples' deaths).
    pub(super) fn considers_walk(&self) -> bool {
        self.walk_pending || self.quiet_too_long()
    }

    /// Walk if a walk is due and fits, else estimate if one is due; a walk that fails falls
    /// through to the estimate. `predicted`: what a walk would stop the JVM now, measured when
    /// [`considers_walk`](Self::considers_walk) (without it, no walk is considered).
    pub(super) fn plan(&self, budget: &Budget, predicted: Option<Duration>) -> Plan {
        let now = self.now;
        let mut plan = Plan {
            refused: None,
            walk: None,
            estimate: None,
            wait: POLL,
        };
        let quiet_too_long = self.quiet_too_long();
        let trigger = if self.estimate_pending || self.walk_pending {
            Trigger::Gc
        } else {
            Trigger::Periodic
        };
        if let Some(predicted) = predicted.filter(|_| self.walk_pending || quiet_too_long) {
            if !budget.fits(predicted) {
                plan.refused = Some(Refused {
                    predicted,
                    counted: self.walk_pending,
                });
            } else {
                match budget.decide(now, predicted) {
                    Decision::Walk => {
                        plan.walk = Some(Walk {
                            trigger,
                            limit: budget.abort_after(predicted),
                        });
                    }
                    Decision::WaitUntil(when) => {
                        plan.wait = plan.wait.min(when.saturating_duration_since(now));
                    }
                }
            }
        }
        let Some(every) = self.estimates else {
            return plan;
        };
        if !self.can_estimate || !(self.estimate_pending || quiet_too_long) {
            return plan;
        }
        let every = if self.filling {
            every.min(FILLING_ESTIMATES)
        } else {
            every
        };
        let ready = (self.last_snapshot + every).max(self.gc_seen_at + GC_SETTLE);
        if ready <= now {
            plan.estimate = Some(trigger);
        } else {
            plan.wait = plan.wait.min(ready - now);
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const S: Duration = Duration::from_secs(1);

    /// A clock reading far enough from `t0` that instants before it exist.
    fn clock() -> (Instant, Instant) {
        let t0 = Instant::now();
        (t0, t0 + 100 * S)
    }

    /// 2 % of wall time since `t0`, 1 s between walks, `max_pause` 2 s: by `t0 + 100 s` it has
    /// earned 2 s, so any walk that fits may start.
    fn budget(t0: Instant) -> Budget {
        Budget::new(0.02, S, 2 * S, t0)
    }

    /// Nothing pending, estimates at most every 500 ms, no period; the last snapshot and GC a
    /// minute ago.
    fn turn(now: Instant) -> Turn {
        Turn {
            now,
            walk_pending: false,
            estimate_pending: false,
            period: None,
            estimates: Some(500 * MS),
            can_estimate: true,
            last_snapshot: now - 60 * S,
            gc_seen_at: now - 60 * S,
            filling: false,
        }
    }

    /// A turn after a GC: both a walk and an estimate pending.
    fn after_gc(now: Instant) -> Turn {
        Turn {
            walk_pending: true,
            estimate_pending: true,
            ..turn(now)
        }
    }

    #[test]
    fn nothing_pending_waits_a_poll_without_considering_a_walk() {
        let (t0, now) = clock();
        let t = turn(now);
        assert!(!t.considers_walk());
        assert_eq!(
            t.plan(&budget(t0), None),
            Plan {
                refused: None,
                walk: None,
                estimate: None,
                wait: 50 * MS,
            }
        );
    }

    #[test]
    fn a_walk_due_that_fits_runs_with_the_budgets_limit_and_an_estimate_behind_it() {
        let (t0, now) = clock();
        let t = after_gc(now);
        assert!(t.considers_walk());
        // The limit is five times the prediction, at least 500 ms, at most max_pause.
        assert_eq!(
            t.plan(&budget(t0), Some(200 * MS)),
            Plan {
                refused: None,
                walk: Some(Walk {
                    trigger: Trigger::Gc,
                    limit: S,
                }),
                estimate: Some(Trigger::Gc),
                wait: 50 * MS,
            }
        );
        assert_eq!(
            t.plan(&budget(t0), Some(10 * MS)).walk,
            Some(Walk {
                trigger: Trigger::Gc,
                limit: 500 * MS,
            })
        );
        // A walk pending with the estimate already published: the walk alone.
        let walk_only = Turn {
            estimate_pending: false,
            ..after_gc(now)
        };
        assert_eq!(
            walk_only.plan(&budget(t0), Some(10 * MS)),
            Plan {
                refused: None,
                walk: Some(Walk {
                    trigger: Trigger::Gc,
                    limit: 500 * MS,
                }),
                estimate: None,
                wait: 50 * MS,
            }
        );
    }

    #[test]
    fn a_walk_past_max_pause_is_refused_and_counted_only_when_a_walk_was_pending() {
        let (t0, now) = clock();
        assert_eq!(
            after_gc(now).plan(&budget(t0), Some(3 * S)),
            Plan {
                refused: Some(Refused {
                    predicted: 3 * S,
                    counted: true,
                }),
                walk: None,
                estimate: Some(Trigger::Gc),
                wait: 50 * MS,
            }
        );
        // Considered only because the period passed: refused, not counted.
        let quiet = Turn {
            period: Some(10 * S),
            last_snapshot: now - 10 * S,
            ..turn(now)
        };
        assert!(quiet.considers_walk());
        assert_eq!(
            quiet.plan(&budget(t0), Some(3 * S)),
            Plan {
                refused: Some(Refused {
                    predicted: 3 * S,
                    counted: false,
                }),
                walk: None,
                estimate: Some(Trigger::Periodic),
                wait: 50 * MS,
            }
        );
        // Exactly max_pause still fits.
        assert_eq!(after_gc(now).plan(&budget(t0), Some(2 * S)).refused, None);
    }

    #[test]
    fn a_budget_not_ready_shortens_the_wait_to_its_time() {
        let (t0, now) = clock();
        let t = Turn {
            walk_pending: true,
            estimates: None,
            ..turn(now)
        };
        // The last walk ended 980 ms ago: the next may start in 20 ms (min_interval 1 s).
        let mut b = budget(t0);
        b.record(MS, 10_000, now - 980 * MS);
        assert_eq!(
            t.plan(&b, Some(MS)),
            Plan {
                refused: None,
                walk: None,
                estimate: None,
                wait: 20 * MS,
            }
        );
        // Further off than a poll: the poll's wait.
        let mut b = budget(t0);
        b.record(MS, 10_000, now - 500 * MS);
        assert_eq!(t.plan(&b, Some(MS)).wait, 50 * MS);
        assert_eq!(t.plan(&b, Some(MS)).walk, None);
    }

    #[test]
    fn a_filling_heap_is_estimated_after_every_gc_within_a_tenth_of_a_second() {
        let (t0, now) = clock();
        let b = budget(t0);
        let t = Turn {
            estimate_pending: true,
            last_snapshot: now - 100 * MS,
            gc_seen_at: now - 50 * MS,
            ..turn(now)
        };
        assert_eq!(t.plan(&b, None).estimate, None, "500 ms between estimates");
        let filling = Turn { filling: true, ..t };
        assert_eq!(filling.plan(&b, None).estimate, Some(Trigger::Gc));
        let settling = Turn {
            gc_seen_at: now - 10 * MS,
            ..filling
        };
        assert_eq!(
            settling.plan(&b, None).estimate,
            None,
            "the GC settles first"
        );
    }

    #[test]
    fn an_estimate_waits_for_its_interval_and_for_the_gc_to_settle() {
        let (t0, now) = clock();
        let b = budget(t0);
        let pending = |last_snapshot: Instant, gc_seen_at: Instant| Turn {
            estimate_pending: true,
            last_snapshot,
            gc_seen_at,
            ..turn(now)
        };
        // Due: 500 ms since the last snapshot, 50 ms since the GC.
        assert_eq!(
            pending(now - 500 * MS, now - 50 * MS).plan(&b, None),
            Plan {
                refused: None,
                walk: None,
                estimate: Some(Trigger::Gc),
                wait: 50 * MS,
            }
        );
        // The interval is the later: 10 ms to go.
        assert_eq!(
            pending(now - 490 * MS, now - 100 * MS).plan(&b, None),
            Plan {
                refused: None,
                walk: None,
                estimate: None,
                wait: 10 * MS,
            }
        );
        // The GC's settling is the later: 30 ms to go.
        assert_eq!(
            pending(now - S, now - 20 * MS).plan(&b, None),
            Plan {
                refused: None,
                walk: None,
                estimate: None,
                wait: 30 * MS,
            }
        );
        // Further off than a poll: the poll's wait.
        let later = pending(now - 100 * MS, now - S).plan(&b, None);
        assert_eq!((later.estimate, later.wait), (None, 50 * MS));
    }

    #[test]
    fn no_estimate_when_estimates_are_off_or_there_are_no_samples() {
        let (t0, now) = clock();
        let b = budget(t0);
        let off = Turn {
            estimate_pending: true,
            estimates: None,
            ..turn(now)
        };
        let no_samples = Turn {
            estimate_pending: true,
            can_estimate: false,
            ..turn(now)
        };
        for t in [off, no_samples] {
            assert_eq!(
                t.plan(&b, None),
                Plan {
                    refused: None,
                    walk: None,
                    estimate: None,
                    wait: 50 * MS,
                }
            );
        }
        // A walk that fits still runs without estimates.
        let walk = Turn {
            walk_pending: true,
            estimates: None,
            ..turn(now)
        };
        assert_eq!(
            walk.plan(&b, Some(MS)).walk,
            Some(Walk {
                trigger: Trigger::Gc,
                limit: 500 * MS,
            })
        );
        assert_eq!(walk.plan(&b, Some(MS)).estimate, None);
    }

    #[test]
    fn a_quiet_period_triggers_a_periodic_snapshot() {
        let (t0, now) = clock();
        let b = budget(t0);
        let quiet = Turn {
            period: Some(5 * S),
            last_snapshot: now - 5 * S,
            ..turn(now)
        };
        assert!(quiet.considers_walk());
        assert_eq!(
            quiet.plan(&b, Some(MS)),
            Plan {
                refused: None,
                walk: Some(Walk {
                    trigger: Trigger::Periodic,
                    limit: 500 * MS,
                }),
                estimate: Some(Trigger::Periodic),
                wait: 50 * MS,
            }
        );
        // Not quite the period yet: nothing.
        let not_yet = Turn {
            last_snapshot: now - 5 * S + MS,
            ..quiet
        };
        assert!(!not_yet.considers_walk());
        assert_eq!(
            not_yet.plan(&b, None),
            Plan {
                refused: None,
                walk: None,
                estimate: None,
                wait: 50 * MS,
            }
        );
        // A GC pending when the period passes: the snapshot is the GC's.
        let gc_too = Turn {
            estimate_pending: true,
            ..quiet
        };
        assert_eq!(gc_too.plan(&b, Some(3 * S)).estimate, Some(Trigger::Gc));
    }

    #[test]
    fn a_gc_triggers_snapshots_with_the_gc_trigger() {
        let (t0, now) = clock();
        let b = budget(t0);
        let estimate_only = Turn {
            estimate_pending: true,
            ..turn(now)
        };
        assert!(!estimate_only.considers_walk());
        assert_eq!(estimate_only.plan(&b, None).estimate, Some(Trigger::Gc));
        assert_eq!(
            after_gc(now).plan(&b, Some(MS)).walk.map(|w| w.trigger),
            Some(Trigger::Gc)
        );
    }
}
