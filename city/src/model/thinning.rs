//! Memory bounded however long the session: a budget for the snapshots' numbers, past which the
//! older history is thinned evenly in time (`memcity_proto::thinning`), and the forgetting of
//! old snapshots for a model that follows a session for days.

use memcity_proto::thinning;

use super::{CityModel, Frame, Window};

/// Memory a model's snapshots' numbers may take before its older history is thinned (see
/// `CityModel::thin`): some 2,000 snapshots of 3,000 groups in full, however long the session.
pub const DEFAULT_DETAIL_BUDGET: usize = 384 << 20;

/// The budget new models start with: [`DEFAULT_DETAIL_BUDGET`], or what the process was told
/// (`memcity --memory`), for every session it opens.
static DETAIL_BUDGET: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(DEFAULT_DETAIL_BUDGET);

/// Sets the budget of the models this process makes from now on (see [`DETAIL_BUDGET`]).
pub fn set_detail_budget_for_new_models(bytes: usize) {
    DETAIL_BUDGET.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The budget of the models this process makes (see [`DETAIL_BUDGET`]).
pub fn detail_budget_for_new_models() -> usize {
    DETAIL_BUDGET.load(std::sync::atomic::Ordering::Relaxed)
}

impl CityModel {
    /// Sets the memory the snapshots' numbers may take before the older ones are thinned
    /// (`None`: never; a model that thins its history itself, as the agent's metrics do).
    pub fn set_detail_budget(&mut self, bytes: Option<usize>) {
        self.detail_budget = bytes;
        self.thin_at = bytes.unwrap_or(usize::MAX);
        if bytes.is_some_and(|b| self.detail_bytes > b) {
            self.thin();
        }
    }

    /// Snapshots thinned out of the session's history so far, to keep its memory bounded (or
    /// its recording under a size: [`CityModel::add_thinned`]).
    pub fn thinned(&self) -> u64 {
        self.thinned
    }

    /// Counts `n` snapshots its source left out (a recording kept under `--max-size`).
    pub fn add_thinned(&mut self, n: u64) {
        self.thinned += n;
    }

    /// The map from snapshot indices before the last thinning to those after it, once: a
    /// viewer moves its position in time, its picks and its window by it.
    pub fn take_thinning(&mut self) -> Option<Vec<usize>> {
        self.last_thinning.take()
    }

    /// Halves the history older than the newest snapshots (those within a quarter of the
    /// budget) on an even grid in time (`memcity_proto::thinning`: of each step, the snapshot
    /// carrying object paths, then a walk, then the earliest). Never thinned: the first
    /// snapshot, the warm-up's end, the one the heap ran out in, a window's ends set by hand,
    /// and the newest snapshots. Work: one pass over the snapshots, and the next thinning is
    /// `budget / 4` bytes of new snapshots away.
    pub(super) fn thin(&mut self) {
        let Some(budget) = self.detail_budget else {
            return;
        };
        let n = self.frames.len();
        // The newest snapshots, within a quarter of the budget (at least 16), stay whole.
        let entries: Vec<(u64, bool)> = self
            .frames
            .iter()
            .map(|f| (f.detail_bytes() as u64, true))
            .collect();
        let recent_from = thinning::newest_from(&entries, budget as u64);
        let mut protected = vec![0, self.warm_start()];
        protected.extend(self.out_of_memory_at);
        if let Some(w) = self.window {
            protected.extend([w.start, w.end]);
        }
        let older: Vec<thinning::Candidate> = self.frames[..recent_from]
            .iter()
            .enumerate()
            .map(|(i, f)| thinning::Candidate {
                time_ms: f.time_ms,
                rank: thinning::rank(f.paths.is_some(), !f.is_estimated()),
                protected: protected.contains(&i),
            })
            .collect();
        let mut keep = thinning::keep_evenly(&older);
        keep.resize(n, true);
        let dropped = keep.iter().filter(|&&k| !k).count();
        if dropped > 0 {
            let map = self.retain_frames(|i, _| keep[i]);
            self.last_thinning = Some(match self.last_thinning.take() {
                // Two thinnings before the viewer looked: one map after the other.
                Some(earlier) => earlier.iter().map(|&i| map[i]).collect(),
                None => map,
            });
            self.thinned += dropped as u64;
        }
        self.thin_at = budget.max(self.detail_bytes + budget / 4);
    }

    /// Forgets the snapshots before `index`, for a model that follows a session for days in a
    /// bounded memory (the agent's metrics look back a fixed span): see [`Self::retain_frames`].
    pub fn forget_before(&mut self, index: usize) {
        let _ = self.retain_frames(|i, _| i >= index);
    }

    /// Keeps only the snapshots `keep` accepts (called with each one's index, oldest first):
    /// a model that follows a session for days forgets the old ones and thins the rest.
    /// Later snapshots' indices shift down, and a window set by hand maps onto what is left
    /// (clamped). Nodes stay (a type that was once live keeps its id), with their session
    /// maxima; `first_seen` becomes the first kept snapshot at or after it. Returns each old
    /// index's new one (a dropped snapshot's is the next kept one's, or the last's).
    pub fn retain_frames(&mut self, mut keep: impl FnMut(usize, &Frame) -> bool) -> Vec<usize> {
        let kept: Vec<bool> = self
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| keep(i, f))
            .collect();
        if kept.iter().all(|&k| k) {
            return (0..kept.len()).collect();
        }
        // new_index[i]: how many kept snapshots come before old index i.
        let mut new_index = Vec::with_capacity(kept.len() + 1);
        let mut count = 0;
        for &k in &kept {
            new_index.push(count);
            count += usize::from(k);
        }
        new_index.push(count);
        let mut flags = kept.iter();
        self.frames.retain(|_| *flags.next().unwrap_or(&true));
        let last = self.frames.len().saturating_sub(1);
        let map = |i: usize| new_index[i.min(kept.len())].min(last);
        for node in &mut self.nodes {
            node.first_seen = map(node.first_seen);
        }
        self.window = self.window.map(|w| Window {
            start: map(w.start),
            end: map(w.end),
        });
        self.out_of_memory_at = self.frames.iter().position(|f| f.out_of_memory.is_some());
        self.detail_bytes = self.frames.iter().map(|f| f.detail_bytes()).sum();
        self.update_growth();
        (0..kept.len()).map(map).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::sample;
    use crate::model::Metric;

    #[test]
    fn forgetting_old_snapshots_shifts_the_rest() {
        let mut m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let c = m.find(&["p", "C"]).unwrap();
        m.set_window(Some(Window { start: 1, end: 2 }));
        m.forget_before(1);
        assert_eq!(m.frames().len(), 2);
        assert_eq!(m.frames()[0].time_ms, 1000);
        assert_eq!(m.window(), Window { start: 0, end: 1 });
        assert_eq!(m.absolute_growth(a, Metric::Objects), 500);
        // C first appeared in the snapshot now first.
        assert_eq!(m.node(c).first_seen, 0);
        m.set_window(None);
        // Thinning keeps the chosen ones in order.
        let mut t = sample();
        t.retain_frames(|i, _| i != 1);
        let times: Vec<u64> = t.frames().iter().map(|f| f.time_ms).collect();
        assert_eq!(times, [0, 2000]);
        assert_eq!(t.node(c).first_seen, 1);
        assert_eq!(t.absolute_growth(a, Metric::Objects), 990);
        m.forget_before(99);
        assert!(m.frames().is_empty());
        assert_eq!(m.window(), Window { start: 0, end: 0 });
    }

    /// A session of `n` snapshots a second apart: a leaking type, a steady one and 18 more,
    /// in a model whose snapshots' numbers may take `budget` bytes.
    fn long_session(n: u64, budget: Option<usize>) -> CityModel {
        let mut m = CityModel::new();
        m.set_detail_budget(budget);
        for i in 0..n {
            let mut nodes = vec![
                (vec!["p".to_string()], "Package".to_string(), 0, 0),
                (
                    vec!["p".into(), "Leak".into()],
                    "Type".into(),
                    100 + 10 * i,
                    0,
                ),
                (
                    vec!["p".into(), "Steady".into()],
                    "Type".into(),
                    500 + i % 7,
                    0,
                ),
            ];
            nodes
                .extend((0..18).map(|t| (vec!["p".into(), format!("T{t}")], "Type".into(), 50, 0)));
            m.push_tree(i * 1000, (1_000 + 10 * i, 0), &nodes, vec![]);
            assert!(
                m.detail_bytes <= budget.unwrap_or(usize::MAX).saturating_add(4096),
                "{} bytes at snapshot {i}",
                m.detail_bytes
            );
        }
        m
    }

    /// Hours of snapshots in a bounded memory: the history older than the newest snapshots is
    /// thinned to an even step in time, the window's ends stay the same snapshots, and growth
    /// says what the whole session says.
    #[test]
    fn a_long_session_is_thinned_evenly_in_time_within_its_budget() {
        let budget = 200 << 10;
        let m = long_session(20_000, Some(budget));
        let whole = long_session(20_000, None);
        assert!(m.thinned() > 15_000, "{}", m.thinned());
        assert_eq!(m.thinned() + m.len() as u64, 20_000);
        assert_eq!(whole.thinned(), 0);
        let times: Vec<u64> = m.frames().iter().map(|f| f.time_ms).collect();
        assert_eq!((times[0], *times.last().unwrap()), (0, 19_999_000));
        // What was thinned (past the first two, which stay, and before the newest, which are
        // whole) is evenly spaced.
        let all: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let newest = all.iter().rev().take_while(|&&g| g == 1_000).count();
        assert!(newest >= 16, "the newest stay whole: {all:?}");
        // Past the first two, up to the step into the newest (which may be shorter).
        let gaps = &all[1..all.len() - newest - 1];
        assert!(gaps.len() > 10, "{all:?}");
        let (least, most) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
        assert!(
            *most <= 3 * *least,
            "gaps from {least} to {most} ms: {gaps:?}"
        );
        let leak = m.find(&["p", "Leak"]).unwrap();
        for metric in [Metric::Objects, Metric::Bytes] {
            assert_eq!(
                m.absolute_growth(leak, metric),
                whole.absolute_growth(whole.find(&["p", "Leak"]).unwrap(), metric)
            );
            assert_eq!(m.max_growth(metric), whole.max_growth(metric));
        }
        assert_eq!(
            crate::leak::suspects::suspects(&m)
                .iter()
                .map(|s| (s.leaking.clone(), s.growth, s.confirmed))
                .collect::<Vec<_>>(),
            crate::leak::suspects::suspects(&whole)
                .iter()
                .map(|s| (s.leaking.clone(), s.growth, s.confirmed))
                .collect::<Vec<_>>(),
        );
        let (thin, full) = (
            crate::leak::trends::trend_of(&m, &[leak], Metric::Objects).unwrap(),
            crate::leak::trends::trend_of(
                &whole,
                &[whole.find(&["p", "Leak"]).unwrap()],
                Metric::Objects,
            )
            .unwrap(),
        );
        assert!(
            (thin.growth - full.growth).abs() < 1e-6 * full.growth,
            "{thin:?} {full:?}"
        );
    }

    /// A window set by hand keeps its two snapshots through thinning, and a viewer is told
    /// where its snapshots went.
    #[test]
    fn thinning_keeps_a_windows_ends_and_says_where_snapshots_went() {
        let mut m = long_session(300, Some(1 << 30));
        m.set_window(Some(Window {
            start: 50,
            end: 120,
        }));
        let _ = m.take_thinning();
        m.set_detail_budget(Some(40 << 10));
        let map = m.take_thinning().expect("thinned");
        assert_eq!(map.len(), 300);
        let w = m.window();
        assert_eq!(
            (m.frames()[w.start].time_ms, m.frames()[w.end].time_ms),
            (50_000, 120_000)
        );
        assert_eq!((map[50], map[120], map[299]), (w.start, w.end, m.len() - 1));
        // A dropped snapshot goes to the next one kept.
        for (old, &new) in map.iter().enumerate() {
            assert!(
                m.frames()[new].time_ms >= old as u64 * 1000,
                "{old} -> {new}"
            );
        }
        assert!(m.take_thinning().is_none(), "said once");
    }
}
