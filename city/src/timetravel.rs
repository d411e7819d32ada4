//! Time travel (Memory Cities VII.B): the current snapshot, stepping, jumping, playing at a
//! period (0.5 s per snapshot by default), and live follow, which stays on the newest snapshot
//! until the user steps back. Moves are tweened: [`TimeTravel::t`] is the fractional time at which
//! the model's interpolated sizes are read, so buildings grow and shrink smoothly.

/// Seconds per snapshot when playing (VII.B: "0.5 seconds by default").
pub const DEFAULT_PERIOD: f64 = 0.5;
/// Seconds a move between two snapshots takes on screen.
pub const TWEEN_SECONDS: f64 = 0.35;

#[derive(Debug, Clone)]
pub struct TimeTravel {
    index: usize,
    from: f64,
    progress: f64,
    pub playing: bool,
    pub period: f64,
    play_clock: f64,
    live: bool,
}

impl Default for TimeTravel {
    fn default() -> Self {
        Self {
            index: 0,
            from: 0.0,
            progress: 1.0,
            playing: false,
            period: DEFAULT_PERIOD,
            play_clock: 0.0,
            live: true,
        }
    }
}

impl TimeTravel {
    pub fn new() -> Self {
        Self::default()
    }

    /// The snapshot shown (where the view is heading).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Following the newest snapshot of a live session.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Fractional snapshot time to draw at: between where the last move started and the index.
    pub fn t(&self) -> f64 {
        let p = self.progress.clamp(0.0, 1.0);
        // Ease out: fast start, gentle arrival.
        let eased = 1.0 - (1.0 - p) * (1.0 - p);
        self.from + (self.index as f64 - self.from) * eased
    }

    fn go(&mut self, index: usize) {
        if index != self.index {
            self.from = self.t();
            self.index = index;
            self.progress = 0.0;
        }
    }

    /// Shows fractional time `t` and stays there until the next move or tick (benchmarks draw
    /// mid-tween frames with it).
    pub fn hold_at(&mut self, t: f64, len: usize) {
        let t = t.clamp(0.0, len.saturating_sub(1) as f64);
        self.index = t.round() as usize;
        self.from = t;
        self.progress = 0.0;
        self.playing = false;
    }

    /// Jumps to `index` (clamped to the session of `len` snapshots). Leaves live mode unless it
    /// lands on the newest snapshot.
    pub fn jump(&mut self, index: usize, len: usize) {
        let last = len.saturating_sub(1);
        let index = index.min(last);
        self.live = index == last && self.live;
        self.go(index);
    }

    pub fn step_back(&mut self, len: usize) {
        self.live = false;
        self.go(self.index.saturating_sub(1).min(len.saturating_sub(1)));
    }

    pub fn step_forward(&mut self, len: usize) {
        let index = (self.index + 1).min(len.saturating_sub(1));
        self.go(index);
    }

    /// Back to following the newest snapshot (the one key that returns to live).
    pub fn follow_live(&mut self, len: usize) {
        self.live = true;
        self.playing = false;
        self.go(len.saturating_sub(1));
    }

    pub fn toggle_play(&mut self, len: usize) {
        self.playing = !self.playing;
        if self.playing {
            self.live = false;
            self.play_clock = 0.0;
            if self.index + 1 >= len {
                self.go(0); // replay from the start
            }
        }
    }

    /// The session's history was thinned (`CityModel::take_thinning`): the same snapshot, or
    /// the next one kept, under its new index; no tween.
    pub fn remap(&mut self, map: &[usize]) {
        self.index = map.get(self.index).or(map.last()).copied().unwrap_or(0);
        self.from = self.index as f64;
        self.progress = 1.0;
    }

    /// A snapshot was appended (live): follow it if in live mode.
    pub fn on_append(&mut self, len: usize) {
        if self.live {
            self.go(len.saturating_sub(1));
        }
    }

    /// Advances the clocks by `dt` seconds.
    pub fn tick(&mut self, dt: f64, len: usize) {
        self.progress = (self.progress + dt / TWEEN_SECONDS).min(1.0);
        if self.playing {
            self.play_clock += dt;
            while self.play_clock >= self.period {
                self.play_clock -= self.period;
                if self.index + 1 >= len {
                    self.playing = false;
                    break;
                }
                self.go(self.index + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_follows_until_the_user_steps_back() {
        let mut tt = TimeTravel::new();
        tt.on_append(1);
        tt.on_append(2);
        assert_eq!(tt.index(), 1);
        assert!(tt.is_live());
        tt.step_back(2);
        assert!(!tt.is_live());
        tt.on_append(3);
        assert_eq!(
            tt.index(),
            0,
            "stepped back: new snapshots do not pull the view"
        );
        tt.follow_live(3);
        assert_eq!(tt.index(), 2);
        assert!(tt.is_live());
    }

    #[test]
    fn steps_and_jumps_clamp() {
        let mut tt = TimeTravel::new();
        tt.jump(7, 5);
        assert_eq!(tt.index(), 4);
        tt.step_forward(5);
        assert_eq!(tt.index(), 4);
        tt.jump(1, 5);
        assert!(!tt.is_live());
        tt.step_back(5);
        tt.step_back(5);
        assert_eq!(tt.index(), 0);
    }

    #[test]
    fn play_advances_one_snapshot_per_period_and_stops_at_the_end() {
        let mut tt = TimeTravel::new();
        tt.jump(0, 4);
        tt.toggle_play(4);
        tt.tick(0.49, 4);
        assert_eq!(tt.index(), 0);
        tt.tick(0.02, 4);
        assert_eq!(tt.index(), 1);
        tt.tick(1.0, 4);
        assert_eq!(tt.index(), 3);
        tt.tick(0.5, 4);
        assert!(!tt.playing);
        // Playing again from the end starts over.
        tt.toggle_play(4);
        assert_eq!(tt.index(), 0);
    }

    #[test]
    fn moves_are_tweened() {
        let mut tt = TimeTravel::new();
        tt.jump(0, 3);
        tt.tick(10.0, 3);
        tt.jump(2, 3);
        assert_eq!(tt.t(), 0.0);
        tt.tick(TWEEN_SECONDS / 2.0, 3);
        assert!((tt.t() - 2.0 * 0.75).abs() < 1e-9, "{}", tt.t());
        tt.tick(TWEEN_SECONDS, 3);
        assert_eq!(tt.t(), 2.0);
    }

    #[test]
    fn a_thinned_history_keeps_the_snapshot_in_view() {
        let mut t = TimeTravel::new();
        t.jump(7, 10);
        t.tick(1.0, 10);
        // Snapshots 1, 3, 5, 7 went: 7 is now the fourth from 0; a dropped one shows the next.
        let map = [0, 1, 1, 2, 2, 3, 3, 4, 5, 6];
        t.remap(&map);
        assert_eq!((t.index(), t.t()), (4, 4.0));
        t.jump(0, 7);
        t.remap(&[0, 0, 0]);
        assert_eq!(t.index(), 0);
    }
}
