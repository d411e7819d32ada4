//! Where the agent's session stands, in one atomic: every callback and the worker read it, and a
//! detach, the VM's death, the process's exit and an internal error move it on. One value
//! means no reader can see a mix no writer meant (a session both "stopping" and "off" but not
//! "detaching"), and each move is a compare-and-swap from the phases it may start from.
//!
//! ```text
//!   Running ──detach──▶ Detaching ──callbacks drained, or VM death──▶ StoppingToDetach
//!      │                                                                    ▲
//!      └──VM death, exit──▶ Stopping ──────────────detach───────────────────┘
//!
//!   any phase ──error, or the session finished──▶ Off   (a detach of an agent that is off
//!                                                        stays off: its worker has stopped)
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Sampling, walking, serving.
    Running = 0,
    /// A detach began: the sampling callback takes no new sample (so that, once the callbacks
    /// under way are done, every tracked sample's weak reference can be handed back), and the
    /// worker goes on until the callbacks are drained.
    Detaching = 1,
    /// The VM is dying or the process exiting: the worker finishes its step, takes the last
    /// snapshot and stops.
    Stopping = 2,
    /// A detach with the callbacks drained: the worker stops as at `Stopping`, then hands back
    /// what it holds in the JVM (weak references, the JFR stream).
    StoppingToDetach = 3,
    /// Turned off, after an internal error or once the session finished: callbacks return at
    /// once, and a worker still running takes no further snapshot.
    Off = 4,
}

impl Phase {
    fn from_u8(value: u8) -> Phase {
        match value {
            0 => Phase::Running,
            1 => Phase::Detaching,
            2 => Phase::Stopping,
            3 => Phase::StoppingToDetach,
            _ => Phase::Off,
        }
    }

    /// Callbacks act and the worker publishes.
    pub(crate) fn active(self) -> bool {
        self != Phase::Off
    }

    /// The sampling callback takes samples: not once a detach began.
    pub(crate) fn samples(self) -> bool {
        matches!(self, Phase::Running | Phase::Stopping)
    }

    /// The worker leaves its loop.
    pub(crate) fn worker_stops(self) -> bool {
        matches!(self, Phase::Stopping | Phase::StoppingToDetach | Phase::Off)
    }

    /// The worker hands back what it holds in the JVM when it stops (a detach's).
    pub(crate) fn releases(self) -> bool {
        matches!(self, Phase::Detaching | Phase::StoppingToDetach)
    }
}

/// The phase, shared.
pub(crate) struct AgentPhase(AtomicU8);

impl AgentPhase {
    pub(crate) fn new() -> AgentPhase {
        AgentPhase(AtomicU8::new(Phase::Running as u8))
    }

    /// SeqCst throughout: a detach that turned the phase off and then saw no callback running
    /// (`IN_CALLBACKS`, also SeqCst) knows that none will use the environment it disposes.
    pub(crate) fn get(&self) -> Phase {
        Phase::from_u8(self.0.load(Ordering::SeqCst))
    }

    /// Moves from any of `from` to `to`; whether this call made the move.
    fn advance(&self, from: &[Phase], to: Phase) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                from.contains(&Phase::from_u8(now)).then_some(to as u8)
            })
            .is_ok()
    }

    /// A detach begins: sampling stops at once; a worker already stopping hands back what it
    /// holds when it stops.
    pub(crate) fn begin_detach(&self) {
        self.advance(&[Phase::Running], Phase::Detaching);
        self.advance(&[Phase::Stopping], Phase::StoppingToDetach);
    }

    /// The worker is asked to stop: as a detach's last step when one began, else for good.
    pub(crate) fn stop(&self) {
        self.advance(&[Phase::Detaching], Phase::StoppingToDetach);
        self.advance(&[Phase::Running], Phase::Stopping);
    }

    /// Off; whether this call turned it off (an error is reported once).
    pub(crate) fn turn_off(&self) -> bool {
        self.advance(
            &[
                Phase::Running,
                Phase::Detaching,
                Phase::Stopping,
                Phase::StoppingToDetach,
            ],
            Phase::Off,
        )
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
        assert_eq!(phase.get(), Phase::Detaching);
        assert!(!phase.get().samples(), "no new sample once a detach began");
        assert!(
            !phase.get().worker_stops(),
            "the worker runs until callbacks drain"
        );
        phase.stop();
        assert_eq!(phase.get(), Phase::StoppingToDetach);
        assert!(phase.get().worker_stops() && phase.get().releases() && phase.get().active());
        assert!(phase.turn_off());
        assert!(!phase.get().active());
    }

    #[test]
    fn the_vms_death_stops_the_worker_which_keeps_sampling_to_the_end_and_releases_nothing() {
        let phase = AgentPhase::new();
        phase.stop();
        assert_eq!(phase.get(), Phase::Stopping);
        assert!(phase.get().samples() && phase.get().worker_stops());
        assert!(!phase.get().releases());
        phase.stop();
        assert_eq!(phase.get(), Phase::Stopping, "stopping twice is stopping");
        phase.begin_detach();
        assert_eq!(
            phase.get(),
            Phase::StoppingToDetach,
            "a detach as the VM dies"
        );
        assert!(phase.get().releases() && !phase.get().samples());
    }

    #[test]
    fn an_error_turns_off_once_from_any_phase_and_nothing_turns_it_back_on() {
        for start in [Phase::Running, Phase::Detaching, Phase::Stopping] {
            let phase = AgentPhase::new();
            match start {
                Phase::Detaching => phase.begin_detach(),
                Phase::Stopping => phase.stop(),
                _ => {}
            }
            assert!(phase.turn_off(), "from {start:?}");
            assert!(!phase.turn_off(), "reported once");
            phase.stop();
            phase.begin_detach();
            assert_eq!(phase.get(), Phase::Off);
            assert!(!phase.get().samples() && phase.get().worker_stops());
        }
    }
}
