//! The growth window and what grew in it: the window (after the VM's start, up to the heap
//! running out), each group's growth over it, what of that growth the numbers back beyond the
//! estimates' errors and what may be garbage (`significant_growth`, what colours and growth are
//! painted by), and the strongest growers. The largest growth, which colours divide by, is
//! worked out when first asked for after a change.

use std::sync::Arc;

use super::{CityModel, Metric, NodeId, ROOT};

/// The trigger of the snapshot the growth window leaves out as warm-up (the VM's start).
const WARM_UP: i32 = memcity_proto::v1::snapshot::Trigger::Start as i32;

/// The growth window ("suspicious time window"): snapshot indices `start..=end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub end: usize,
}

impl CityModel {
    /// The window growth and colors use. By default the whole session after its warm-up: the
    /// snapshot the agent takes as the VM starts holds none of the application's objects yet, so
    /// growth from it is start-up, not a trend (a steady application would look like a leak).
    pub fn window(&self) -> Window {
        self.window.unwrap_or_else(|| {
            // A session the heap ran out in: the leak is the growth up to the error, not the
            // flat tail of a dying JVM after it.
            let end = self
                .out_of_memory()
                .map_or(self.frames.len().saturating_sub(1), |(index, _)| index);
            Window {
                start: self.warm_start().min(end),
                end,
            }
        })
    }

    /// The snapshot taken when the Java heap ran out, if the session has one: its index and
    /// the error.
    pub fn out_of_memory(&self) -> Option<(usize, &memcity_proto::v1::OutOfMemory)> {
        let i = self.out_of_memory_at?;
        self.frames[i].out_of_memory.as_ref().map(|o| (i, o))
    }

    /// The first snapshot after start-up: past the VM-start snapshot, when at least two remain.
    pub fn warm_start(&self) -> usize {
        let start = WARM_UP;
        self.frames
            .iter()
            .position(|f| f.trigger != start)
            .filter(|&i| i + 1 < self.frames.len())
            .unwrap_or(0)
    }

    /// Whether snapshot `index` is the VM's start, which the growth window leaves out as
    /// warm-up (`warm_start`).
    pub fn is_warm_up(&self, index: usize) -> bool {
        self.frames.get(index).is_some_and(|f| f.trigger == WARM_UP)
    }

    /// Marks snapshot `index` as the VM's start (an import of an export that says so).
    pub fn set_warm_up(&mut self, index: usize) {
        if let Some(frame) = self.frames.get_mut(index).map(Arc::make_mut) {
            frame.trigger = WARM_UP;
        }
        self.update_growth();
    }

    /// Restricts growth and colors to `start..=end` (clamped); `None` goes back to the whole
    /// session, following new snapshots.
    pub fn set_window(&mut self, window: Option<Window>) {
        let last = self.frames.len().saturating_sub(1);
        self.window = window.map(|w| {
            let start = w.start.min(last);
            Window {
                start,
                end: w.end.clamp(start, last),
            }
        });
        self.update_growth();
    }

    /// First value in the window.
    pub fn first(&self, node: NodeId, metric: Metric) -> u64 {
        self.value(node, self.window().start, metric)
    }

    /// Absolute growth: first to last snapshot of the window (negative when shrinking).
    pub fn absolute_growth(&self, node: NodeId, metric: Metric) -> i64 {
        let w = self.window();
        crate::units::growth(
            self.value(node, w.start, metric),
            self.value(node, w.end, metric),
        )
    }

    /// Relative growth: first snapshot of the window to `index`.
    pub fn relative_growth(&self, node: NodeId, index: usize, metric: Metric) -> i64 {
        crate::units::growth(self.first(node, metric), self.value(node, index, metric))
    }

    /// Growth from the window's first snapshot to `index` that the numbers can back: the
    /// relative growth less the errors of both ends (toward zero), so an estimate's wobble is
    /// not painted as growth; and less what may be garbage no marking has found yet at the
    /// higher end (a value can only be too high by its unconfirmed part), so an application
    /// promoting short-lived objects is not painted as leaking between old collections.
    pub fn significant_growth(&self, node: NodeId, index: usize, metric: Metric) -> i64 {
        if self.is_own(node) {
            // memcity's own objects (its JFR stream, canaries) are not the application's
            // growth: never coloured, never ranked.
            return 0;
        }
        let start = self.window().start;
        let growth = self.relative_growth(node, index, metric);
        let error = self
            .error(node, index, metric)
            .saturating_add(self.error(node, start, metric));
        let clamp = |v: u64| v.min(i64::MAX as u64) as i64;
        if growth > 0 {
            let doubt = error.saturating_add(self.unconfirmed(node, index, metric));
            growth.saturating_sub(clamp(doubt)).max(0)
        } else {
            let doubt = error.saturating_add(self.unconfirmed(node, start, metric));
            growth.saturating_add(clamp(doubt)).min(0)
        }
    }

    /// Whether `node` is memcity's own: in the top-level [`MEMCITY`] group.
    pub fn is_own(&self, node: NodeId) -> bool {
        self.nodes.get(node as usize).is_some_and(|n| n.own)
    }

    /// The largest absolute growth of any building in the window (at least 1, it divides).
    pub fn max_growth(&self, metric: Metric) -> u64 {
        let ((objects, bytes, retained), _) =
            *self.max_growth.get_or_init(|| self.find_max_growth());
        match metric {
            Metric::Objects => objects,
            Metric::Bytes => bytes,
            Metric::Retained => retained,
        }
        .max(1)
    }

    /// The window or its snapshots changed: the largest growth is worked out again when asked.
    pub(super) fn update_growth(&mut self) {
        self.max_growth = std::sync::OnceLock::new();
    }

    /// Work proportional to the window's last snapshot, whatever the session's length: a
    /// leaf absent from it has 0 there and cannot have grown. Returns the largest growth and
    /// the nodes looked at.
    fn find_max_growth(&self) -> ((u64, u64, u64), usize) {
        // Growth under 2 % of the heap is not worth red: normalizing by the largest growth alone
        // would paint the biggest wobble of a steady heap as red as a leak.
        let end = self.window().end;
        let Some(frame) = self.frames.get(end) else {
            return ((0, 0, 0), 0);
        };
        let heap = frame.get(ROOT).unwrap_or((0, 0));
        let mut best = (heap.0 / 50, heap.1 / 50, heap.1 / 50);
        for &(id, _, _) in frame.values() {
            if self.nodes[id as usize].is_leaf() {
                best.0 = best
                    .0
                    .max(self.significant_growth(id, end, Metric::Objects).max(0) as u64);
                best.1 = best
                    .1
                    .max(self.significant_growth(id, end, Metric::Bytes).max(0) as u64);
                if frame.has_retained() {
                    best.2 = best
                        .2
                        .max(self.significant_growth(id, end, Metric::Retained).max(0) as u64);
                }
            }
        }
        (best, frame.values().len())
    }

    /// Nodes the last working out of the largest growth looked at (0 before one).
    #[cfg(test)]
    fn growth_visits(&self) -> usize {
        self.max_growth.get().map_or(0, |&(_, visits)| visits)
    }

    /// The `n` strongest absolute growers of the window (leaves that grew), strongest first.
    /// Selects before sorting: a frame asks for a handful out of tens of thousands.
    pub fn top_growers(&self, metric: Metric, n: usize) -> Vec<NodeId> {
        if self.frames.is_empty() {
            return Vec::new();
        }
        let w = self.window();
        let (start, end) = (
            self.values_in(w.start.min(w.end), metric),
            self.values_in(w.end, metric),
        );
        let pick = |v: &(NodeId, u64, u64)| match metric {
            Metric::Objects => v.1,
            Metric::Bytes | Metric::Retained => v.2,
        };
        // Both frames are sorted by node: one merge gives every node's growth.
        let mut growth: Vec<(i64, NodeId)> = Vec::new();
        let mut before = start.iter().peekable();
        for v in end {
            while before.next_if(|b| b.0 < v.0).is_some() {}
            let first = before.next_if(|b| b.0 == v.0).map_or(0, pick);
            let g = crate::units::growth(first, pick(v));
            if g > 0 && self.nodes[v.0 as usize].is_leaf() && v.0 != ROOT && !self.is_own(v.0) {
                growth.push((-g, v.0));
            }
        }
        if growth.len() > n && n > 0 {
            growth.select_nth_unstable(n - 1);
        }
        growth.truncate(n);
        growth.sort_unstable();
        growth.into_iter().map(|(_, id)| id).collect()
    }

    /// Buildings (leaves) ranked by absolute growth in the window, strongest first.
    pub fn strongest_growers(&self, metric: Metric) -> Vec<NodeId> {
        let mut leaves: Vec<NodeId> = (0..self.nodes.len() as NodeId)
            .filter(|&id| id != ROOT && self.nodes[id as usize].is_leaf())
            .collect();
        leaves.sort_by_key(|&id| (std::cmp::Reverse(self.absolute_growth(id, metric)), id));
        leaves
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::sample;
    use crate::model::MEMCITY;

    #[test]
    fn a_new_snapshot_costs_its_own_groups_however_long_the_session() {
        let mut m = CityModel::new();
        let push = |m: &mut CityModel, i: u64| {
            let nodes: Vec<(Vec<String>, String, u64, u64)> = (0..50)
                .map(|g| {
                    (
                        vec!["p".to_string(), format!("T{g}")],
                        "Type".to_string(),
                        100 + i * g,
                        1600,
                    )
                })
                .collect();
            m.push_tree(i * 1000, (5000, 80_000), &nodes, vec![]);
        };
        for i in 0..10 {
            push(&mut m, i);
            m.max_growth(Metric::Objects); // a live viewer asks at every frame
        }
        let early = m.growth_visits();
        for i in 10..2000 {
            push(&mut m, i);
            m.max_growth(Metric::Objects);
        }
        assert_eq!(
            m.growth_visits(),
            early,
            "the same work at 2,000 snapshots as at 10"
        );
        assert!(early <= 52, "one root, one package, 50 types: {early}");
        // And the growth it keeps is the window's: T49 rose the most.
        let t49 = m.find(&["p", "T49"]).unwrap();
        assert_eq!(
            m.max_growth(Metric::Objects) as i64,
            m.significant_growth(t49, 1999, Metric::Objects)
        );
    }

    #[test]
    fn meta_data_max_first_growth() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let b = m.find(&["p", "B"]).unwrap();
        assert_eq!(m.node(a).max_objects, 1000);
        assert_eq!(m.node(b).max_objects, 50);
        assert_eq!(m.first(a, Metric::Objects), 10);
        assert_eq!(m.absolute_growth(a, Metric::Objects), 990);
        assert_eq!(m.absolute_growth(b, Metric::Objects), -10);
        assert_eq!(m.relative_growth(a, 1, Metric::Objects), 490);
        assert_eq!(m.max_growth(Metric::Objects), 990);
        assert_eq!(m.strongest_growers(Metric::Objects)[0], a);
    }

    /// memcity's own objects grow as its JFR stream works: never the application's growth,
    /// whatever their type shares with the application's.
    #[test]
    fn memcitys_own_growth_is_never_growth() {
        let mut m = CityModel::new();
        for snapshot in 0..3u64 {
            let rows = vec![
                (
                    vec![MEMCITY.to_string(), "byte[]".to_string()],
                    "Type".to_string(),
                    100 + snapshot * 50_000,
                    1600 + snapshot * 800_000,
                ),
                (
                    vec!["(primitive arrays)".to_string(), "byte[]".to_string()],
                    "Type".to_string(),
                    100 + snapshot * 10_000,
                    1600 + snapshot * 160_000,
                ),
            ];
            m.push_tree(snapshot * 1000, (1, 1), &rows, vec![]);
        }
        let ours = m.node_named(MEMCITY).unwrap();
        let theirs = m.node_named("(primitive arrays)").unwrap();
        let [our_bytes, their_bytes] = [ours, theirs].map(|p| {
            (0..m.nodes().len() as NodeId)
                .find(|&id| m.node(id).parent == Some(p))
                .unwrap()
        });
        assert!(m.is_own(our_bytes) && m.is_own(ours) && !m.is_own(their_bytes));
        assert_eq!(m.significant_growth(our_bytes, 2, Metric::Objects), 0);
        assert_eq!(
            m.significant_growth(their_bytes, 2, Metric::Objects),
            20_000
        );
        assert_eq!(m.top_growers(Metric::Objects, 5), [their_bytes]);
    }

    #[test]
    fn top_growers_agree_with_the_full_ranking() {
        // 300 leaves in 3 packages; values pseudo-random, some appear late, some vanish.
        let mut m = CityModel::new();
        for snapshot in 0..4u64 {
            let mut nodes = Vec::new();
            for leaf in 0..300u64 {
                let objects =
                    (leaf * 7919 + snapshot * leaf * 31) % 997 * (leaf % 3 + snapshot % 2);
                if objects > 0 {
                    nodes.push((
                        vec![format!("p{}", leaf % 3), format!("T{leaf}")],
                        "Type".to_string(),
                        objects,
                        objects * (8 + leaf % 5),
                    ));
                }
            }
            m.push_tree(snapshot * 1000, (1, 1), &nodes, vec![]);
        }
        for window in [
            None,
            Some(Window { start: 1, end: 3 }),
            Some(Window { start: 2, end: 2 }),
        ] {
            m.set_window(window);
            for metric in [Metric::Objects, Metric::Bytes] {
                let full: Vec<NodeId> = m
                    .strongest_growers(metric)
                    .into_iter()
                    .filter(|&n| m.absolute_growth(n, metric) > 0)
                    .collect();
                // A one-snapshot window has no growth; the others have plenty to rank.
                assert_eq!(full.len() > 50, window.is_none_or(|w| w.start < w.end));
                for n in [0, 1, 20, 299, 1000] {
                    let top = m.top_growers(metric, n);
                    assert_eq!(
                        top,
                        full[..n.min(full.len())],
                        "{window:?} {metric:?} n={n}"
                    );
                }
            }
        }
    }

    #[test]
    fn window_restricts_growth() {
        let mut m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        m.set_window(Some(Window { start: 1, end: 2 }));
        assert_eq!(m.first(a, Metric::Objects), 500);
        assert_eq!(m.absolute_growth(a, Metric::Objects), 500);
        assert_eq!(m.max_growth(Metric::Objects), 500);
        m.set_window(Some(Window { start: 9, end: 1 }));
        assert_eq!(m.window(), Window { start: 2, end: 2 });
        m.set_window(None);
        assert_eq!(m.window(), Window { start: 0, end: 2 });
    }

    #[test]
    fn growth_no_old_marking_has_confirmed_is_not_backed() {
        let mut m = crate::timeline::tests::estimated_session(0);
        m.set_window(Some(Window { start: 0, end: 3 }));
        let leak = m.find(&["app", "Leak"]).unwrap();
        // 100 (walk) to ~260 ±40: 120 backed.
        assert_eq!(m.significant_growth(leak, 3, Metric::Objects), 120);
        // 100 of the 260 may be promoted garbage: only 20 is backed.
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 100, 1600);
        assert_eq!(m.unconfirmed(leak, 3, Metric::Objects), 100);
        assert_eq!(m.significant_growth(leak, 3, Metric::Objects), 20);
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 200, 3200);
        assert_eq!(m.significant_growth(leak, 3, Metric::Bytes), 0);
        // A decline is backed less when its start may have held garbage.
        let mut s = sample();
        let b = s.find(&["p", "B"]).unwrap();
        s.set_window(Some(Window { start: 0, end: 2 }));
        assert_eq!(s.significant_growth(b, 2, Metric::Objects), -10);
        s.frames_mut_for_tests(0)
            .set_unconfirmed_for_tests(b, 4, 64);
        assert_eq!(s.significant_growth(b, 2, Metric::Objects), -6);
        // ...and not at all by the end's (a value can only be too high by it).
        s.frames_mut_for_tests(2)
            .set_unconfirmed_for_tests(b, 30, 480);
        assert_eq!(s.significant_growth(b, 2, Metric::Objects), -6);
        assert_eq!(
            s.leaves(2)
                .iter()
                .find(|l| l.path[1] == "B")
                .unwrap()
                .objects_unconfirmed,
            30
        );
    }
}
