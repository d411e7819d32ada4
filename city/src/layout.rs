//! The city plan: a lot for every district and building, reserved from the max tree so every
//! building fits even if all reach their maximum at once (static position animation, Memory
//! Cities V.B); pruning to the N largest children per parent (V.C, default 20 as in the thesis
//! 3.3); value scaling before layout (thesis 3.3: sqrt, linear, quadratic).
//!
//! Live sessions go beyond the papers, which laid out once, offline: the max tree changes while
//! the city grows. [`LiveLayout`] reserves headroom, re-lays out only when a building outgrows its
//! lot or a new group earns one, at most once per interval, and keeps sibling order, so buildings
//! do not jump around every second; each re-layout returns old and new lots for animation.

use std::collections::HashMap;

use crate::model::{CityModel, Metric, NodeId, ROOT};
use crate::treemap::{self, Rect, Tiling, GOLDEN_RATIO};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scaling {
    #[default]
    Sqrt,
    Linear,
    Quadratic,
}

impl Scaling {
    pub fn apply(self, value: f64) -> f64 {
        let v = value.max(0.0);
        match self {
            Scaling::Sqrt => v.sqrt(),
            Scaling::Linear => v,
            Scaling::Quadratic => v * v,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayoutConfig {
    pub tiling: Tiling,
    /// Target aspect ratio for squarify.
    pub ratio: f64,
    pub scaling: Scaling,
    pub metric: Metric,
    /// Lots per parent: the N largest children (by max value) get one.
    pub children_per_parent: usize,
    /// Side of the (square) city.
    pub size: f64,
    /// Gap inside each district, around its children, so levels stay visible.
    pub padding: f64,
}

impl Default for LayoutConfig {
    fn default() -> Self {
        Self {
            tiling: Tiling::Squarify,
            ratio: GOLDEN_RATIO,
            scaling: Scaling::Sqrt,
            metric: Metric::Objects,
            children_per_parent: 20,
            size: 1000.0,
            padding: 4.0,
        }
    }
}

/// A value for some of a model's nodes, kept by node id (ids are dense from 0): looked up
/// without hashing, and walked in node order, the order the scene build reads snapshots in. A
/// time-travel step at 50,000 buildings spent half its time hashing node ids before this.
#[derive(Debug, Clone)]
pub struct NodeMap<V> {
    slots: Vec<Option<V>>,
    len: usize,
}

impl<V> Default for NodeMap<V> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<V: PartialEq> PartialEq for NodeMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<V> NodeMap<V> {
    pub fn get(&self, node: &NodeId) -> Option<&V> {
        self.slots.get(*node as usize)?.as_ref()
    }

    pub fn contains_key(&self, node: &NodeId) -> bool {
        self.get(node).is_some()
    }

    /// Sets `node`'s value; returns the one it replaces.
    pub fn insert(&mut self, node: NodeId, value: V) -> Option<V> {
        let at = node as usize;
        if at >= self.slots.len() {
            self.slots.resize_with(at + 1, || None);
        }
        let old = self.slots[at].replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The nodes with a value and their values, in node order.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &V)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i as NodeId, v.as_ref()?)))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut V)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, v)| Some((i as NodeId, v.as_mut()?)))
    }
}

impl<V> std::ops::Index<&NodeId> for NodeMap<V> {
    type Output = V;

    fn index(&self, node: &NodeId) -> &V {
        self.get(node).expect("a node with a value")
    }
}

/// Where everything stands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CityLayout {
    /// Lot of each node that has one.
    pub lots: NodeMap<Rect>,
    /// The value (unscaled) each lot was reserved for.
    pub reserved: NodeMap<f64>,
    /// Children per parent left without a lot by pruning (the UI says how many are hidden).
    pub hidden: HashMap<NodeId, usize>,
}

impl CityLayout {
    pub fn lot(&self, node: NodeId) -> Option<Rect> {
        self.lots.get(&node).copied()
    }

    /// A building's base at a value: centered in its lot, the lot's area times
    /// scaled(value) / scaled(reserved) (thesis 5.3), same aspect as the lot.
    pub fn base(&self, node: NodeId, value: f64, scaling: Scaling) -> Option<Rect> {
        let lot = self.lot(node)?;
        let reserved = scaling.apply(*self.reserved.get(&node)?);
        let fraction = if reserved > 0.0 {
            scaling.apply(value) / reserved
        } else {
            0.0
        };
        Some(lot.scaled_area(fraction))
    }
}

/// Lays the city out for the given reserved value of every node (leaves; districts sum their
/// children). `order` gives each parent's children in the order to tile them.
pub fn layout_with(
    model: &CityModel,
    config: &LayoutConfig,
    reserve: &dyn Fn(NodeId) -> f64,
    order: &dyn Fn(NodeId) -> Vec<NodeId>,
) -> CityLayout {
    let mut layout = CityLayout::default();
    // Scaled weights bottom-up over the kept children only.
    let mut weight: HashMap<NodeId, f64> = HashMap::new();
    let mut kept: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    if model.is_empty() {
        return layout;
    }
    // Weights bottom-up, without recursion: a crafted Memory Cities file with a key path
    // 100,000 levels deep must not overflow the stack. A pre-order pass decides which children
    // keep a lot; its reverse visits every child before its parent.
    let mut visited = Vec::new();
    let mut stack = vec![ROOT];
    while let Some(node) = stack.pop() {
        visited.push(node);
        let info = model.node(node);
        if info.is_leaf() {
            continue;
        }
        // Pruning: the N largest children by max value keep a lot (V.C).
        let mut by_size: Vec<NodeId> = info.children.clone();
        by_size.sort_by_key(|&c| (std::cmp::Reverse(model.node(c).max(config.metric)), c));
        by_size.truncate(config.children_per_parent);
        let hidden = info.children.len() - by_size.len();
        if hidden > 0 {
            layout.hidden.insert(node, hidden);
        }
        let lot_holders: std::collections::HashSet<NodeId> = by_size.into_iter().collect();
        let keep: Vec<NodeId> = order(node)
            .into_iter()
            .filter(|c| lot_holders.contains(c))
            .collect();
        stack.extend(keep.iter().copied());
        kept.insert(node, keep);
    }
    for &node in visited.iter().rev() {
        match kept.get(&node) {
            Some(keep) => {
                let total = keep.iter().map(|c| weight[c]).sum();
                let reserved = keep.iter().map(|c| layout.reserved[c]).sum();
                layout.reserved.insert(node, reserved);
                weight.insert(node, total);
            }
            None => {
                let value = reserve(node);
                layout.reserved.insert(node, value);
                weight.insert(node, config.scaling.apply(value));
            }
        }
    }
    let city = Rect::new(0.0, 0.0, config.size, config.size);
    let mut stack = vec![(ROOT, city)];
    while let Some((node, rect)) = stack.pop() {
        layout.lots.insert(node, rect);
        let Some(children) = kept.get(&node) else {
            continue;
        };
        let inner = rect.inset(config.padding);
        let weights: Vec<f64> = children.iter().map(|c| weight[c]).collect();
        let depth = model.node(node).depth;
        let rects = treemap::tile(config.tiling, inner, &weights, depth, config.ratio);
        for (&child, r) in children.iter().zip(rects) {
            if weight[&child] > 0.0 {
                stack.push((child, r));
            }
        }
    }
    layout
}

/// The papers' layout: lots for the max tree, children largest first.
pub fn layout(model: &CityModel, config: &LayoutConfig) -> CityLayout {
    layout_with(
        model,
        config,
        &|n| model.node(n).max(config.metric) as f64,
        &|n| {
            let mut c = model.node(n).children.clone();
            c.sort_by_key(|&c| (std::cmp::Reverse(model.node(c).max(config.metric)), c));
            c
        },
    )
}

/// What a re-layout changed, for the view to animate from `old` to `new`.
#[derive(Debug, Clone)]
pub struct Relayout {
    pub old: CityLayout,
    pub new: CityLayout,
}

impl Relayout {
    /// The whole plan `progress` of the way from old to new (for drawing during the animation).
    pub fn at(&self, progress: f64) -> CityLayout {
        let mut plan = self.new.clone();
        for (node, lot) in plan.lots.iter_mut() {
            if let Some(moving) = self.lot_at(node, progress) {
                *lot = moving;
            }
        }
        plan
    }

    /// A node's lot `progress` (0 to 1) of the way from its old place to its new one; a node new
    /// in this layout grows from its new lot's center.
    pub fn lot_at(&self, node: NodeId, progress: f64) -> Option<Rect> {
        let new = self.new.lot(node)?;
        let p = progress.clamp(0.0, 1.0);
        let old = self.old.lot(node).unwrap_or_else(|| new.scaled_area(0.0));
        let mix = |a: f64, b: f64| a * (1.0 - p) + b * p;
        Some(Rect::new(
            mix(old.x, new.x),
            mix(old.y, new.y),
            mix(old.w, new.w),
            mix(old.h, new.h),
        ))
    }
}

/// Layout policy for a growing live session.
#[derive(Debug, Clone)]
pub struct LiveLayout {
    pub config: LayoutConfig,
    /// Extra room reserved above a node's max (0.5 = 50 %).
    pub headroom: f64,
    /// Least time between two re-layouts, milliseconds of session time.
    pub min_interval_ms: u64,
    layout: CityLayout,
    reserved: HashMap<NodeId, f64>,
    /// Children of each parent in the order they first got a lot: tiling keeps this order, so a
    /// re-layout resizes lots but does not reshuffle siblings.
    order: HashMap<NodeId, Vec<NodeId>>,
    last_relayout_ms: Option<u64>,
    relayouts: usize,
}

impl LiveLayout {
    pub fn new(config: LayoutConfig) -> Self {
        Self {
            config,
            headroom: 0.5,
            min_interval_ms: 3000,
            layout: CityLayout::default(),
            reserved: HashMap::new(),
            order: HashMap::new(),
            last_relayout_ms: None,
            relayouts: 0,
        }
    }

    pub fn layout(&self) -> &CityLayout {
        &self.layout
    }

    /// Re-layouts so far (the first layout included).
    pub fn relayouts(&self) -> usize {
        self.relayouts
    }

    /// Whether the current plan no longer fits the model: a building outgrew its lot, or a
    /// group without a lot would now be among the N largest of its parent.
    pub fn needs_relayout(&self, model: &CityModel) -> bool {
        if model.is_empty() {
            return false;
        }
        if self.layout.lots.is_empty() {
            return true;
        }
        let metric = self.config.metric;
        for (id, info) in model.nodes().iter().enumerate() {
            let id = id as NodeId;
            if info.is_leaf() {
                if let Some(&reserved) = self.reserved.get(&id) {
                    if info.max(metric) as f64 > reserved {
                        return true;
                    }
                }
            }
            if !info.is_leaf() && self.layout.lots.contains_key(&id) {
                let mut by_size = info.children.clone();
                by_size.sort_by_key(|&c| (std::cmp::Reverse(model.node(c).max(metric)), c));
                by_size.truncate(self.config.children_per_parent);
                if by_size
                    .iter()
                    .any(|c| !self.layout.lots.contains_key(c) && model.node(*c).max(metric) > 0)
                {
                    return true;
                }
            }
        }
        false
    }

    /// Called after each appended snapshot (with that snapshot's time); re-lays out when needed
    /// and allowed. Returns the change to animate, if any.
    pub fn update(&mut self, model: &CityModel, now_ms: u64) -> Option<Relayout> {
        if !self.needs_relayout(model) {
            return None;
        }
        let first = self.layout.lots.is_empty();
        if !first
            && self
                .last_relayout_ms
                .is_some_and(|t| now_ms < t + self.min_interval_ms)
        {
            return None;
        }
        Some(self.relayout(model, now_ms))
    }

    /// Re-lays out now (also after a settings change).
    pub fn relayout(&mut self, model: &CityModel, now_ms: u64) -> Relayout {
        let metric = self.config.metric;
        let headroom = 1.0 + self.headroom;
        for (id, info) in model.nodes().iter().enumerate() {
            let id = id as NodeId;
            let wanted = info.max(metric) as f64 * headroom;
            // Never shrink a lot while live: shrinking would move neighbours for nothing.
            let entry = self.reserved.entry(id).or_insert(wanted);
            if info.max(metric) as f64 > *entry {
                *entry = wanted;
            }
            if let Some(parent) = info.parent {
                let siblings = self.order.entry(parent).or_default();
                if !siblings.contains(&id) {
                    siblings.push(id);
                }
            }
        }
        let reserved = &self.reserved;
        let order = &self.order;
        let new = layout_with(
            model,
            &self.config,
            &|n| reserved.get(&n).copied().unwrap_or(0.0),
            &|n| order.get(&n).cloned().unwrap_or_default(),
        );
        let old = std::mem::replace(&mut self.layout, new.clone());
        self.last_relayout_ms = Some(now_ms);
        self.relayouts += 1;
        Relayout { old, new }
    }

    /// Changing a layout setting re-lays out at once, from fresh reservations.
    pub fn set_config(&mut self, model: &CityModel, config: LayoutConfig, now_ms: u64) -> Relayout {
        self.config = config;
        self.reserved.clear();
        self.relayout(model, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_map_keeps_values_by_id_and_walks_them_in_node_order() {
        let mut map = NodeMap::default();
        assert!(map.is_empty());
        assert_eq!(map.insert(7, "seven"), None);
        assert_eq!(map.insert(2, "two"), None);
        assert_eq!(map.insert(7, "SEVEN"), Some("seven"));
        assert_eq!(map.len(), 2);
        assert_eq!(map.get(&7), Some(&"SEVEN"));
        assert_eq!(map[&2], "two");
        assert_eq!(map.get(&3), None);
        assert_eq!(map.get(&1000), None);
        assert!(!map.contains_key(&0));
        assert_eq!(
            map.iter().collect::<Vec<_>>(),
            vec![(2, &"two"), (7, &"SEVEN")]
        );
        // Equal by contents, whatever room either keeps.
        let mut other = NodeMap::default();
        other.insert(2, "two");
        other.insert(7, "SEVEN");
        assert_eq!(map, other);
        other.insert(9, "nine");
        assert_ne!(map, other);
    }
    use crate::model::tests::sample;

    const EPS: f64 = 1e-6;

    #[test]
    fn lots_come_from_the_max_tree_and_buildings_fit_at_max() {
        let m = sample();
        let config = LayoutConfig {
            padding: 0.0,
            scaling: Scaling::Linear,
            ..Default::default()
        };
        let l = layout(&m, &config);
        let a = m.find(&["p", "A"]).unwrap();
        let b = m.find(&["p", "B"]).unwrap();
        let c = m.find(&["p", "C"]).unwrap();
        // Linear scaling, no padding: lot areas proportional to max values 1000 : 50 : 5.
        let total = 1000.0 * 1000.0;
        assert!((l.lot(a).unwrap().area() - total * 1000.0 / 1055.0).abs() < EPS * total);
        assert!((l.lot(c).unwrap().area() - total * 5.0 / 1055.0).abs() < EPS * total);
        // At its max a building fills its lot; at a tenth, a tenth of it, centered.
        let full = l.base(a, 1000.0, Scaling::Linear).unwrap();
        assert!((full.area() - l.lot(a).unwrap().area()).abs() < EPS);
        let tenth = l.base(a, 100.0, Scaling::Linear).unwrap();
        assert!((tenth.area() - l.lot(a).unwrap().area() / 10.0).abs() < EPS);
        assert_eq!(tenth.center(), l.lot(a).unwrap().center());
        // sqrt scaling: a quarter of the value is half the area.
        let ls = layout(
            &m,
            &LayoutConfig {
                padding: 0.0,
                ..Default::default()
            },
        );
        let quarter = ls.base(b, 12.5, Scaling::Sqrt).unwrap();
        assert!((quarter.area() - ls.lot(b).unwrap().area() / 2.0).abs() < EPS);
    }

    #[test]
    fn pruning_keeps_the_n_largest_and_counts_the_rest() {
        let m = sample();
        let l = layout(
            &m,
            &LayoutConfig {
                children_per_parent: 2,
                ..Default::default()
            },
        );
        let p = m.find(&["p"]).unwrap();
        assert!(l.lot(m.find(&["p", "A"]).unwrap()).is_some());
        assert!(l.lot(m.find(&["p", "B"]).unwrap()).is_some());
        assert!(l.lot(m.find(&["p", "C"]).unwrap()).is_none());
        assert_eq!(l.hidden.get(&p), Some(&1));
    }

    #[test]
    fn padding_separates_levels_and_scalings_differ() {
        let m = sample();
        let l = layout(&m, &LayoutConfig::default());
        let p = l.lot(m.find(&["p"]).unwrap()).unwrap();
        let a = l.lot(m.find(&["p", "A"]).unwrap()).unwrap();
        assert!(a.x >= p.x + 4.0 - EPS && a.y >= p.y + 4.0 - EPS);
        assert!(p.x >= 4.0 - EPS, "the root pads its districts too");
        assert_eq!(Scaling::Quadratic.apply(3.0), 9.0);
        assert_eq!(Scaling::Sqrt.apply(9.0), 3.0);
        assert_eq!(Scaling::Linear.apply(-1.0), 0.0);
    }

    /// A growing live session: one building grows 100x over 200 snapshots (one a second), the
    /// others hold still, a new group appears halfway. The live layout must re-lay out rarely,
    /// never within its interval, keep positions fixed between re-layouts, and keep siblings in
    /// their order.
    #[test]
    fn live_layout_is_stable_while_the_city_grows() {
        let mut model = CityModel::new();
        let mut live = LiveLayout::new(LayoutConfig::default());
        let mut relayout_times = Vec::new();
        let mut previous: Option<CityLayout> = None;
        let mut moved_between = 0;
        let mut moves: Vec<f64> = Vec::new();
        let mut flips = 0;
        for i in 0..200u64 {
            let mut nodes = vec![];
            let grow = 100 + i * 50;
            let mut push = |name: &str, objects: u64| {
                nodes.push((
                    vec!["app".to_string(), name.to_string()],
                    "Type".to_string(),
                    objects,
                    objects,
                ));
            };
            push("Leaky", grow);
            push("Steady1", 3000);
            push("Steady2", 2000);
            if i >= 100 {
                push("Newcomer", 500 + i);
            }
            let total: u64 = nodes.iter().map(|n| n.2).sum();
            nodes.insert(
                0,
                (vec!["app".to_string()], "Package".to_string(), total, total),
            );
            model.push_tree(i * 1000, (total, total), &nodes, vec![]);
            match live.update(&model, i * 1000) {
                Some(change) => {
                    relayout_times.push(i * 1000);
                    assert_eq!(change.new, *live.layout());
                    // How far the buildings that did not change moved, as a share of the city.
                    let before = moves.len();
                    for name in ["Steady1", "Steady2"] {
                        let id = model.find(&["app", name]).unwrap();
                        if let (Some(old), Some(new)) = (change.old.lot(id), change.new.lot(id)) {
                            let (ox, oy) = old.center();
                            let (nx, ny) = new.center();
                            let moved = ((nx - ox).powi(2) + (ny - oy).powi(2)).sqrt() / 1000.0;
                            moves.push(moved);
                        }
                    }
                    if moves[before..].iter().any(|m| *m > 0.25) {
                        flips += 1;
                    }
                }
                None => {
                    if let Some(prev) = &previous {
                        if prev != live.layout() {
                            moved_between += 1;
                        }
                    }
                }
            }
            previous = Some(live.layout().clone());
            // Every building present has a lot and fits in it at its current value.
            for name in ["Leaky", "Steady1", "Steady2"] {
                let id = model.find(&["app", name]).unwrap();
                let value = model.value(id, model.len() - 1, Metric::Objects) as f64;
                let lot = live.layout().lot(id);
                if let Some(lot) = lot {
                    let base = live.layout().base(id, value, Scaling::Sqrt).unwrap();
                    assert!(
                        base.area() <= lot.area() + EPS,
                        "{name} outgrew its lot at {i}"
                    );
                }
            }
        }
        assert_eq!(moved_between, 0, "nothing moves between re-layouts");
        moves.sort_by(f64::total_cmp);
        let median = moves[moves.len() / 2];
        eprintln!(
            "re-layouts at {relayout_times:?}; steady buildings moved {:.1} % of the city at the median, {:.1} % at most",
            median * 100.0,
            moves.last().unwrap() * 100.0
        );
        // Siblings keep their order, so a re-layout mostly resizes rows: a steady building stays
        // in its part of the city. Squarify may still flip a row's orientation once as the
        // proportions cross over (a known limit: row structure does not yet carry over).
        assert!(median < 0.05, "median move {:.1} %", median * 100.0);
        assert!(
            flips <= 1,
            "{flips} re-layouts moved a steady building over a quarter of the city"
        );
        // 100x growth with 50 % headroom needs about log1.5(100) ~ 11 re-layouts, not 200.
        assert!(
            relayout_times.len() <= 16,
            "{} re-layouts: {relayout_times:?}",
            relayout_times.len()
        );
        assert!(
            relayout_times.windows(2).all(|w| w[1] - w[0] >= 3000),
            "{relayout_times:?}"
        );
        // The newcomer got a lot, and siblings kept their first-seen order.
        let newcomer = model.find(&["app", "Newcomer"]).unwrap();
        assert!(live.layout().lot(newcomer).is_some());
        let app = model.find(&["app"]).unwrap();
        let order: Vec<&str> = live.order[&app]
            .iter()
            .map(|&c| model.node(c).name.as_str())
            .collect();
        assert_eq!(order, ["Leaky", "Steady1", "Steady2", "Newcomer"]);
    }

    #[test]
    fn relayouts_animate_from_old_to_new_lots() {
        let m = sample();
        let mut live = LiveLayout::new(LayoutConfig::default());
        live.update(&m, 0).unwrap();
        let a = m.find(&["p", "A"]).unwrap();
        let change = live.set_config(
            &m,
            LayoutConfig {
                tiling: Tiling::Dice,
                ..Default::default()
            },
            10_000,
        );
        let (old, new) = (change.old.lot(a).unwrap(), change.new.lot(a).unwrap());
        assert_ne!(old, new);
        assert_eq!(change.lot_at(a, 0.0), Some(old));
        assert_eq!(change.lot_at(a, 1.0), Some(new));
        let half = change.lot_at(a, 0.5).unwrap();
        assert!((half.x - (old.x + new.x) / 2.0).abs() < EPS);
    }

    #[test]
    fn lots_of_nodes_lay_out() {
        // 100,000 buildings in 100 districts (the speed goal is a benchmark, not a test).
        let mut model = CityModel::new();
        let mut nodes = Vec::new();
        for d in 0..100 {
            for b in 0..1000u64 {
                nodes.push((
                    vec![format!("d{d}"), format!("b{b}")],
                    "Type".into(),
                    b + 1,
                    b + 1,
                ));
            }
        }
        model.push_tree(0, (1, 1), &nodes, vec![]);
        let l = layout(
            &model,
            &LayoutConfig {
                children_per_parent: 1000,
                ..Default::default()
            },
        );
        assert_eq!(l.lots.len(), 1 + 100 + 100_000);
    }
}
