//! Where the agent's session stands, in one atomic that every callback and the worker read and
//! that a detach, the VM's death, the process's exit and an internal error move on. It holds
//! three facts, each of which only ever becomes true, set by one atomic `fetch_or`, so a reader
//! sees them together, never a half-made move, and no move can undo another made at once:
//!
//! - *stopping*: the VM is dying, the process exiting, or a detach has drained its callbacks:
//!   the worker finishes its step, takes the last snapshot and stops;
//! - *detaching*: a detach began: the sampling callback takes no new sample (so that, once the
//!   callbacks under way are done, every tracked sample's weak reference can be handed back),
//!   and the worker, when it stops, hands back what it holds in the JVM (weak references, the
//!   JFR stream), whatever else happened meanwhile (an internal error included);
//! - *off*: after an internal error, or once the session finished: callbacks return at once,
//!   and the worker leaves its loop.

use std::sync::atomic::{AtomicU8, Ordering};

const STOPPING: u8 = 1;
const DETACHING: u8 = 2;
const OFF: u8 = 4;

/// The session's state as one read saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phase(u8);

impl Phase {
    /// Callbacks act and the worker publishes.
    pub(crate) fn active(self) -> bool {
        self.0 & OFF == 0
    }

    /// The sampling callback takes samples: not once a detach began.
    pub(crate) fn samples(self) -> bool {
        self.active() && self.0 & DETACHING == 0
    }

    /// The VM is going away or a detach stops the worker.
    pub(crate) fn stopping(self) -> bool {
        self.0 & STOPPING != 0
    }

    /// The worker leaves its loop.
    pub(crate) fn worker_stops(self) -> bool {
        self.stopping() || !self.active()
    }

    /// The worker hands back what it holds in the JVM when it stops (a detach's).
    pub(crate) fn releases(self) -> bool {
        self.0 & DETACHING != 0
    }
}

/// The phase, shared.
pub(crate) struct AgentPhase(AtomicU8);

impl AgentPhase {
    pub(crate) fn new() -> AgentPhase {
        AgentPhase(AtomicU8::new(0))
    }

    /// SeqCst throughout: a detach that turned the session off and then saw no callback running
    /// (`IN_CALLBACKS`, also SeqCst) knows that none will use the environment it disposes.
    pub(crate) fn get(&self) -> Phase {
        Phase(self.0.load(Ordering::SeqCst))
    }

    /// A detach begins: sampling stops at once, and the worker hands back what it holds when
    /// it stops.
    pub(crate) fn begin_detach(&self) {
        self.0.fetch_or(DETACHING, Ordering::SeqCst);
    }

    /// The worker is asked to stop.
    pub(crate) fn stop(&self) {
        self.0.fetch_or(STOPPING, Ordering::SeqCst);
    }

    /// Off; whether this call turned it off (an error is reported once).
    pub(crate) fn turn_off(&self) -> bool {
        self.0.fetch_or(OFF, Ordering::SeqCst) & OFF == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detach_first_stops_sampling_then_the_worker_which_hands_back_what_it_holds() {
        let phase = AgentPhase::new();
        assert!(phase.get().samples() && !phase.get().worker_stops());
        phase.begin_detach();
        assert!(!phase.get().samples(), "no new sample once a detach began");
        assert!(
            !phase.get().worker_stops(),
            "the worker runs until callbacks drain"
        );
        phase.stop();
        let now = phase.get();
        assert!(now.worker_stops() && now.releases() && now.active());
        assert!(phase.turn_off());
        assert!(!phase.get().active());
    }

    #[test]
    fn the_vms_death_stops_the_worker_which_keeps_sampling_to_the_end_and_releases_nothing() {
        let phase = AgentPhase::new();
        phase.stop();
        let now = phase.get();
        assert!(now.samples() && now.worker_stops() && now.stopping());
        assert!(!now.releases());
        phase.begin_detach();
        assert!(
            phase.get().releases() && !phase.get().samples(),
            "a detach as the VM dies"
        );
    }

    #[test]
    fn an_error_turns_off_once_and_a_detach_under_way_still_hands_back_what_it_holds() {
        let phase = AgentPhase::new();
        phase.begin_detach();
        assert!(phase.turn_off());
        assert!(!phase.turn_off(), "reported once");
        let now = phase.get();
        assert!(!now.active() && now.worker_stops() && !now.samples());
        assert!(
            now.releases(),
            "an error during a detach keeps the detach's hand-back"
        );
        assert!(!now.stopping(), "off is not the VM going away");
    }

    #[test]
    fn moves_made_at_once_are_all_kept() {
        let phase = std::sync::Arc::new(AgentPhase::new());
        let moves: Vec<_> = [AgentPhase::stop, AgentPhase::begin_detach]
            .into_iter()
            .map(|step| {
                let phase = phase.clone();
                std::thread::spawn(move || step(&phase))
            })
            .collect();
        for m in moves {
            m.join().unwrap();
        }
        let now = phase.get();
        assert!(now.stopping() && now.releases());
    }
}
