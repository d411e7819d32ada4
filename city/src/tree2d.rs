//! The grouping tree in two dimensions: the icicle (root on the left, one column per level) and
//! the sunburst (root in the centre, one ring per level) of the memory-tree evolution paper
//! (Weninger, Makor, Mössenböck 2020), whose studies found both read better than treemaps.
//!
//! Stepping in time must not reshuffle the picture (paper 5.1): siblings keep one order over the
//! whole session, computed once from how much each grew over the window (its "absolute growth
//! sorting", the most useful for leaks), so a node changes its size and position, never its
//! place among its siblings. Values are read at fractional times as the city reads them, so a
//! step tweens. Everything here is window-free: the viewer only draws the cells.

use std::collections::HashSet;
use std::f64::consts::TAU;

use crate::mapping::{self, Rgb};
use crate::model::{CityModel, Metric, NodeId, ROOT};
use crate::treemap::Rect;

/// How siblings are ordered, once for the whole session (paper 5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// Most grown over the window first: a leak sits at the top (or at 12 o'clock).
    #[default]
    Growth,
    /// Largest at the window's first snapshot first.
    Start,
    /// Largest at the window's last snapshot first.
    End,
}

/// The fixed order of every node's children, and each level's largest growth (colours are a
/// cell's growth against the strongest grower of its level: the leaking type is red among the
/// types, its hot allocation site among the sites).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeOrder {
    children: Vec<Vec<NodeId>>,
    level_growth: Vec<u64>,
    metric: Metric,
}

impl TreeOrder {
    pub fn new(model: &CityModel, metric: Metric, sort: SortBy) -> Self {
        let window = model.window();
        let key = |id: NodeId| -> i128 {
            match sort {
                SortBy::Growth => model.absolute_growth(id, metric) as i128,
                SortBy::Start => model.value(id, window.start, metric) as i128,
                SortBy::End => model.value(id, window.end, metric) as i128,
            }
        };
        let children = model
            .nodes()
            .iter()
            .map(|info| {
                let mut kids = info.children.clone();
                // Ties (nothing grew) fall back to the largest ever, then to first appearance:
                // the same inputs give the same picture.
                kids.sort_by_key(|&c| {
                    (
                        std::cmp::Reverse(key(c)),
                        std::cmp::Reverse(model.node(c).max(metric)),
                        c,
                    )
                });
                kids
            })
            .collect();
        let mut level_growth = Vec::new();
        let heap = model.value(ROOT, window.end, metric);
        for (id, info) in model.nodes().iter().enumerate() {
            if level_growth.len() <= info.depth {
                // Growth under 2 % of the heap is not worth red (as `CityModel::max_growth`).
                level_growth.resize(info.depth + 1, (heap / 50).max(1));
            }
            let growth = model
                .significant_growth(id as NodeId, window.end, metric)
                .max(0) as u64;
            level_growth[info.depth] = level_growth[info.depth].max(growth);
        }
        Self {
            children,
            level_growth,
            metric,
        }
    }

    /// `node`'s children in their fixed order.
    pub fn children(&self, node: NodeId) -> &[NodeId] {
        self.children.get(node as usize).map_or(&[], Vec::as_slice)
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The colour input of `node` at snapshot `index`: its growth since the window's start
    /// (less its estimates' errors) over its level's largest, 0 (gray) to 1 (red).
    fn growth_alpha(&self, model: &CityModel, node: NodeId, index: usize) -> f64 {
        let depth = model.node(node).depth;
        let scale = self.level_growth.get(depth).copied().unwrap_or(1).max(1);
        model.significant_growth(node, index, self.metric) as f64 / scale as f64
    }
}

/// One node of the partition: its level below the local root and its span, as fractions of
/// the whole extent (0 to 1), in the fixed order.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub node: NodeId,
    /// 0 for the local root.
    pub level: usize,
    pub start: f64,
    pub end: f64,
    /// The metric's value at the time asked.
    pub value: f64,
    pub color: Rgb,
    /// Opaque: one of the strongest growers, or holds one (the rest is faded, as in the city).
    pub solid: bool,
    pub selected: bool,
    /// The share of the value, 0..1, the numbers cannot back (as `scene::Building::doubt`):
    /// drawn pale at the end of the span.
    pub doubt: f64,
}

impl Cell {
    pub fn span(&self) -> f64 {
        self.end - self.start
    }

    /// Where the pale end of the span begins, or `None` when the doubt is too small to draw
    /// (`scene::MIN_DRAWN_DOUBT`, as in the city).
    pub fn doubt_from(&self) -> Option<f64> {
        (self.doubt >= f64::from(crate::scene::MIN_DRAWN_DOUBT))
            .then(|| self.end - self.span() * self.doubt)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartitionOptions {
    /// Levels shown below and including the local root.
    pub levels: usize,
    /// Heap-scaled (paper 5.2): the extent is the local root's value over its largest in the
    /// window, so growth is seen as length; otherwise every snapshot fills the extent.
    pub scaled: bool,
    /// Cells narrower than this fraction of the extent are not listed (they would not show),
    /// nor are their children.
    pub min_span: f64,
    /// Growth colours on; off draws every cell gray.
    pub color: bool,
    /// Fill `Cell::doubt` (else 0).
    pub doubt: bool,
}

impl Default for PartitionOptions {
    fn default() -> Self {
        Self {
            levels: 8,
            scaled: false,
            min_span: 1e-4,
            color: true,
            doubt: true,
        }
    }
}

/// The tree below `root` at fractional time `t`, as spans.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Partition {
    pub root: NodeId,
    /// Parents before their children; siblings in the fixed order.
    pub cells: Vec<Cell>,
    /// Levels that hold a cell (at least 1 when not empty).
    pub levels: usize,
    /// The root's span: 1, or less when heap-scaled.
    pub extent: f64,
    /// Present groups too thin to list.
    pub hidden: usize,
}

impl Partition {
    pub fn cell(&self, node: NodeId) -> Option<&Cell> {
        self.cells.iter().find(|c| c.node == node)
    }
}

/// How much of the view the root spans: all of it, or, `scaled`, its value's share of its
/// largest in the window (so a heap that shrank draws shorter).
fn extent(model: &CityModel, root: NodeId, root_value: f64, metric: Metric, scaled: bool) -> f64 {
    if !scaled {
        return if root_value > 0.0 { 1.0 } else { 0.0 };
    }
    let window = model.window();
    let largest = (window.start..=window.end)
        .map(|i| model.value(root, i, metric))
        .max()
        .unwrap_or(0) as f64;
    if largest > 0.0 {
        (root_value / largest).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Partitions the tree below `root` at time `t` (see `TimeTravel::t`): each child takes the
/// share of its parent's span its value has of the parent's, in the fixed order. A parent may
/// hold more than its children list (groups below the agent's limits): that part stays empty,
/// not stretched over the children.
pub fn partition(
    model: &CityModel,
    order: &TreeOrder,
    root: NodeId,
    t: f64,
    options: &PartitionOptions,
    solid: &HashSet<NodeId>,
    selected: Option<NodeId>,
) -> Partition {
    let mut out = Partition {
        root,
        ..Default::default()
    };
    if model.is_empty() || root as usize >= model.nodes().len() {
        return out;
    }
    let metric = order.metric;
    let index = t.round().clamp(0.0, (model.len() - 1) as f64) as usize;
    let root_value = model.value_at(root, t, metric);
    out.extent = extent(model, root, root_value, metric, options.scaled);
    if root_value <= 0.0 {
        return out;
    }
    let color = |node: NodeId| {
        if node == ROOT {
            // The whole heap: it grows whenever anything does, so its growth tells nothing; it
            // takes the city's darkest district shade.
            mapping::DISTRICT_DARK
        } else if options.color {
            mapping::growth_color(order.growth_alpha(model, node, index))
        } else {
            mapping::GRAY
        }
    };
    let lit = |node: NodeId| solid.is_empty() || solid.contains(&node);
    let doubt = |node: NodeId, value: f64| {
        if options.doubt && value > 0.0 {
            (model.doubt_at(node, t, metric) / value).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    out.cells.push(Cell {
        node: root,
        level: 0,
        start: 0.0,
        end: out.extent,
        value: root_value,
        color: color(root),
        solid: lit(root),
        selected: selected == Some(root),
        doubt: doubt(root, root_value),
    });
    // Breadth-first over the cells already placed: parents are listed before their children.
    let mut next = 0;
    while next < out.cells.len() {
        let parent = out.cells[next].clone();
        next += 1;
        if parent.level + 1 >= options.levels.max(1) {
            continue;
        }
        let mut at = parent.start;
        for &child in order.children(parent.node) {
            let value = model.value_at(child, t, metric);
            if value <= 0.0 {
                continue;
            }
            let span = parent.span() * (value / parent.value).min(1.0);
            let end = (at + span).min(parent.end);
            if span < options.min_span {
                out.hidden += 1;
            } else {
                out.cells.push(Cell {
                    node: child,
                    level: parent.level + 1,
                    start: at,
                    end,
                    value,
                    color: color(child),
                    solid: lit(child),
                    selected: selected == Some(child),
                    doubt: doubt(child, value),
                });
            }
            at = end;
        }
    }
    out.levels = out.cells.iter().map(|c| c.level + 1).max().unwrap_or(0);
    out
}

/// The opaque nodes of the 2D views: the `opaque` strongest growers (as the city's opacity rule)
/// and every group that holds one, so the path to a leak stays solid. Empty when the rule is
/// off or nothing grew (then every cell is drawn solid).
pub fn solid_paths(
    model: &CityModel,
    opacity: &mapping::Opacity,
    metric: Metric,
) -> HashSet<NodeId> {
    let mut solid = HashSet::new();
    if !opacity.enabled {
        return solid;
    }
    for leaf in opacity.solid(model, metric) {
        let mut at = Some(leaf);
        while let Some(node) = at {
            if !solid.insert(node) {
                break;
            }
            at = model.node(node).parent;
        }
    }
    solid
}

/// The icicle in a screen rectangle: the local root a column on the left, each level a column
/// to its right, spans top to bottom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Icicle {
    pub area: Rect,
    pub levels: usize,
}

impl Icicle {
    pub fn new(area: Rect, partition: &Partition) -> Self {
        Self {
            area,
            levels: partition.levels.max(1),
        }
    }

    pub fn column_width(&self) -> f64 {
        self.area.w / self.levels as f64
    }

    /// Where `cell` is drawn.
    pub fn rect(&self, cell: &Cell) -> Rect {
        let w = self.column_width();
        Rect::new(
            self.area.x + cell.level as f64 * w,
            self.area.y + cell.start * self.area.h,
            w,
            cell.span() * self.area.h,
        )
    }

    /// The node drawn at a pixel.
    pub fn pick(&self, partition: &Partition, x: f64, y: f64) -> Option<NodeId> {
        if !self.area.contains(x, y) {
            return None;
        }
        let level = ((x - self.area.x) / self.column_width()).floor() as usize;
        let f = (y - self.area.y) / self.area.h;
        partition
            .cells
            .iter()
            .find(|c| c.level == level && f >= c.start && f < c.end)
            .map(|c| c.node)
    }
}

/// One ring segment of the sunburst: radii in pixels, angles in radians clockwise from 12
/// o'clock (screen y grows downward).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arc {
    pub inner: f64,
    pub outer: f64,
    pub from: f64,
    pub to: f64,
}

impl Arc {
    /// The screen point at `radius` and `angle`.
    pub fn point(center: (f64, f64), radius: f64, angle: f64) -> (f64, f64) {
        (
            center.0 + radius * angle.sin(),
            center.1 - radius * angle.cos(),
        )
    }

    pub fn area(&self) -> f64 {
        (self.to - self.from) * (self.outer * self.outer - self.inner * self.inner) / 2.0
    }
}

/// The sunburst in a screen circle: the local root a disc in the centre, each level a ring
/// around it, spans clockwise from 12 o'clock. Heap-scaled, the radius shrinks with the
/// extent's square root, so the drawn area is proportional to the heap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sunburst {
    pub center: (f64, f64),
    pub radius: f64,
    pub levels: usize,
    /// 1, or the heap-scaled extent.
    pub extent: f64,
}

impl Sunburst {
    /// The largest sunburst that fits `area`, centred in it.
    pub fn new(area: Rect, partition: &Partition) -> Self {
        Self {
            center: area.center(),
            radius: area.w.min(area.h) / 2.0,
            levels: partition.levels.max(1),
            extent: partition.extent,
        }
    }

    fn ring(&self) -> f64 {
        self.radius * self.extent.clamp(0.0, 1.0).sqrt() / self.levels as f64
    }

    /// Where `cell` is drawn: spans are taken relative to the root's extent, so a heap-scaled
    /// sunburst is a whole, smaller disc rather than a partial one.
    pub fn arc(&self, cell: &Cell) -> Arc {
        let ring = self.ring();
        let extent = if self.extent > 0.0 { self.extent } else { 1.0 };
        Arc {
            inner: cell.level as f64 * ring,
            outer: (cell.level + 1) as f64 * ring,
            from: cell.start / extent * TAU,
            to: cell.end / extent * TAU,
        }
    }

    /// The node drawn at a pixel.
    pub fn pick(&self, partition: &Partition, x: f64, y: f64) -> Option<NodeId> {
        let (dx, dy) = (x - self.center.0, y - self.center.1);
        let r = (dx * dx + dy * dy).sqrt();
        let ring = self.ring();
        if ring <= 0.0 {
            return None;
        }
        let level = (r / ring).floor() as usize;
        // Clockwise from 12 o'clock, in 0..TAU.
        let angle = (dx.atan2(-dy) + TAU) % TAU;
        partition
            .cells
            .iter()
            .filter(|c| c.level == level)
            .find(|c| {
                let a = self.arc(c);
                angle >= a.from && angle < a.to
            })
            .map(|c| c.node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::row;

    /// Two snapshots of a package with a leaking `Node`, a steady `String` and a shrinking
    /// `Buf`, with sites under `Node`.
    fn model() -> CityModel {
        let mut m = CityModel::new();
        for (time, node, string, buf) in [(0u64, 100u64, 400u64, 300u64), (1000, 900, 400, 100)] {
            let nodes = vec![
                row(&["app"], "Package", node + string + buf),
                row(&["app", "Buf"], "Type", buf),
                row(&["app", "Node"], "Type", node),
                row(&["app", "Node", "a()"], "Site", node * 3 / 4),
                row(&["app", "Node", "b()"], "Site", node / 4),
                row(&["app", "String"], "Type", string),
            ];
            m.push_tree(
                time,
                (node + string + buf, (node + string + buf) * 24),
                &nodes,
                vec![],
            );
        }
        m.set_window(Some(crate::model::Window { start: 0, end: 1 }));
        m
    }

    fn cells(m: &CityModel, t: f64, options: &PartitionOptions) -> Partition {
        let order = TreeOrder::new(m, Metric::Objects, SortBy::Growth);
        partition(m, &order, ROOT, t, options, &HashSet::new(), None)
    }

    fn name(m: &CityModel, c: &Cell) -> String {
        m.path(c.node).join("/")
    }

    #[test]
    fn a_cells_doubt_is_the_share_the_numbers_cannot_back_at_the_end_of_its_span() {
        // `Leak`: 100 walked, ~150 ±30, 200 walked, ~260 ±40.
        let mut m = crate::timeline::tests::estimated_session(0);
        let leak = m.find(&["app", "Leak"]).unwrap();
        let at = |m: &CityModel, t: f64, options: &PartitionOptions| {
            cells(m, t, options).cell(leak).unwrap().clone()
        };
        let options = PartitionOptions::default();
        let walked = at(&m, 2.0, &options);
        assert_eq!((walked.doubt, walked.doubt_from()), (0.0, None));
        let estimated = at(&m, 3.0, &options);
        assert!((estimated.doubt - 40.0 / 260.0).abs() < 1e-9);
        let from = estimated.doubt_from().unwrap();
        assert!((estimated.end - from - estimated.span() * 40.0 / 260.0).abs() < 1e-12);
        // Tweened as the value: ±20 of 230 halfway.
        assert!((at(&m, 2.5, &options).doubt - 20.0 / 230.0).abs() < 1e-9);
        // What may be garbage counts too; off, nothing.
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 100, 1600);
        assert!((at(&m, 3.0, &options).doubt - 140.0 / 260.0).abs() < 1e-9);
        let off = PartitionOptions {
            doubt: false,
            ..options
        };
        assert_eq!(at(&m, 3.0, &off).doubt, 0.0);
    }

    #[test]
    fn spans_are_proportional_and_nest() {
        let m = model();
        let p = cells(&m, 1.0, &PartitionOptions::default());
        assert_eq!(p.levels, 4);
        let heap = 1400.0;
        for c in &p.cells {
            let want = c.value / heap;
            assert!(
                (c.span() - want).abs() < 1e-9,
                "{}: {}",
                name(&m, c),
                c.span()
            );
            if let Some(parent) = m.node(c.node).parent.and_then(|p2| p.cell(p2)) {
                assert!(c.start >= parent.start - 1e-12 && c.end <= parent.end + 1e-12);
                assert_eq!(c.level, parent.level + 1);
            }
        }
    }

    #[test]
    fn order_is_by_growth_and_stays_put_over_time() {
        let m = model();
        let names = |t: f64| -> Vec<String> {
            cells(&m, t, &PartitionOptions::default())
                .cells
                .iter()
                .filter(|c| c.level == 2)
                .map(|c| name(&m, c))
                .collect()
        };
        // Node grew most, String stayed, Buf shrank: that order at both ends, although at
        // t = 0 Node was the smallest.
        assert_eq!(names(0.0), ["app/Node", "app/String", "app/Buf"]);
        assert_eq!(names(1.0), names(0.0));
        assert_eq!(names(0.5), names(0.0));
    }

    #[test]
    fn halfway_is_a_tween() {
        let m = model();
        let p = cells(&m, 0.5, &PartitionOptions::default());
        let node = p.cells.iter().find(|c| name(&m, c) == "app/Node").unwrap();
        assert!((node.value - 500.0).abs() < 1e-9);
    }

    #[test]
    fn heap_scaled_extent_is_the_heap_against_its_largest() {
        let m = model();
        let scaled = PartitionOptions {
            scaled: true,
            ..Default::default()
        };
        assert!((cells(&m, 0.0, &scaled).extent - 800.0 / 1400.0).abs() < 1e-9);
        assert!((cells(&m, 1.0, &scaled).extent - 1.0).abs() < 1e-9);
        // Unscaled, every snapshot fills the extent.
        assert_eq!(cells(&m, 0.0, &PartitionOptions::default()).extent, 1.0);
        // A scaled child is its value over the largest heap, not over the heap of its time.
        let p = cells(&m, 0.0, &scaled);
        let string = p
            .cells
            .iter()
            .find(|c| name(&m, c) == "app/String")
            .unwrap();
        assert!((string.span() - 400.0 / 1400.0).abs() < 1e-9);
    }

    #[test]
    fn drill_down_makes_a_local_root() {
        let m = model();
        let order = TreeOrder::new(&m, Metric::Objects, SortBy::Growth);
        let node = m.find(&["app", "Node"]).unwrap();
        let p = partition(
            &m,
            &order,
            node,
            1.0,
            &PartitionOptions::default(),
            &HashSet::new(),
            None,
        );
        assert_eq!(p.root, node);
        assert_eq!(p.levels, 2);
        assert_eq!((p.cells[0].start, p.cells[0].end), (0.0, 1.0));
        let sites: Vec<(String, f64)> = p.cells[1..]
            .iter()
            .map(|c| (name(&m, c), c.span()))
            .collect();
        assert_eq!(
            sites,
            [
                ("app/Node/a()".to_string(), 0.75),
                ("app/Node/b()".to_string(), 0.25)
            ]
        );
    }

    #[test]
    fn levels_limit_depth_and_thin_cells_are_counted_hidden() {
        let m = model();
        let two = PartitionOptions {
            levels: 2,
            ..Default::default()
        };
        let p = cells(&m, 1.0, &two);
        assert_eq!(p.levels, 2);
        assert!(p.cells.iter().all(|c| c.level < 2));
        let coarse = PartitionOptions {
            min_span: 0.1,
            ..Default::default()
        };
        let p = cells(&m, 1.0, &coarse);
        // Only Buf (100 of 1,400) is under a tenth of the heap; b() (225) is not.
        assert_eq!(p.hidden, 1);
        assert!(p.cells.iter().all(|c| c.span() >= 0.1));
    }

    #[test]
    fn the_leak_is_red_and_the_shrinking_type_gray() {
        let m = model();
        let p = cells(&m, 1.0, &PartitionOptions::default());
        let color = |n: &str| p.cells.iter().find(|c| name(&m, c) == n).unwrap().color;
        assert_eq!(
            color(""),
            mapping::DISTRICT_DARK,
            "the heap is not a grower"
        );
        assert_eq!(color("app/Node"), mapping::RED);
        assert_eq!(color("app/Buf"), mapping::GRAY);
        assert_eq!(color("app/String"), mapping::GRAY);
        // At the window's start nothing has grown yet.
        let p0 = cells(&m, 0.0, &PartitionOptions::default());
        assert!(p0.cells[1..].iter().all(|c| c.color == mapping::GRAY));
    }

    #[test]
    fn solid_paths_hold_the_growers_and_their_parents() {
        let m = model();
        let solid = solid_paths(&m, &mapping::Opacity::default(), Metric::Objects);
        let names: HashSet<String> = solid.iter().map(|&n| m.path(n).join("/")).collect();
        for n in ["", "app", "app/Node", "app/Node/a()", "app/Node/b()"] {
            assert!(names.contains(n), "{n} not solid: {names:?}");
        }
        assert!(!names.contains("app/Buf"));
    }

    #[test]
    fn icicle_rects_are_columns_with_heights_in_proportion() {
        let m = model();
        let p = cells(&m, 1.0, &PartitionOptions::default());
        let icicle = Icicle::new(Rect::new(10.0, 20.0, 400.0, 700.0), &p);
        for c in &p.cells {
            let r = icicle.rect(c);
            assert!((r.x - (10.0 + 100.0 * c.level as f64)).abs() < 1e-9);
            assert!((r.h - 700.0 * c.value / 1400.0).abs() < 1e-9);
            // The centre of every cell picks that cell.
            let (cx, cy) = r.center();
            assert_eq!(icicle.pick(&p, cx, cy), Some(c.node), "{}", name(&m, c));
        }
        assert_eq!(icicle.pick(&p, 5.0, 30.0), None);
    }

    #[test]
    fn sunburst_angles_are_in_proportion_and_pick_back() {
        let m = model();
        let p = cells(&m, 1.0, &PartitionOptions::default());
        let sun = Sunburst::new(Rect::new(0.0, 0.0, 800.0, 600.0), &p);
        assert_eq!(sun.center, (400.0, 300.0));
        let mut ring_area = vec![0.0; p.levels];
        for c in &p.cells {
            let a = sun.arc(c);
            assert!(((a.to - a.from) - TAU * c.value / 1400.0).abs() < 1e-9);
            ring_area[c.level] += a.area();
            let mid = (a.from + a.to) / 2.0;
            let (x, y) = Arc::point(sun.center, (a.inner + a.outer) / 2.0, mid);
            assert_eq!(sun.pick(&p, x, y), Some(c.node), "{}", name(&m, c));
        }
        // The biggest grower starts at 12 o'clock: straight up from the centre, ring 2.
        let ring = 300.0 / 4.0;
        let up = sun.pick(&p, 400.0, 300.0 - 2.5 * ring);
        assert_eq!(up.map(|n| m.path(n).join("/")), Some("app/Node".into()));
        // The root disc fills its circle; the full ring 1 (the package) its annulus.
        assert!((ring_area[0] - std::f64::consts::PI * ring * ring).abs() < 1e-6);
        assert_eq!(sun.pick(&p, 400.0, 300.0 - 301.0), None);
    }

    #[test]
    fn a_heap_scaled_sunburst_has_area_in_proportion_to_the_heap() {
        let m = model();
        let scaled = PartitionOptions {
            scaled: true,
            ..Default::default()
        };
        let disc = |t: f64| {
            let p = cells(&m, t, &scaled);
            let sun = Sunburst::new(Rect::new(0.0, 0.0, 600.0, 600.0), &p);
            let a = sun.arc(&p.cells[0]);
            assert!((a.to - a.from - TAU).abs() < 1e-9, "a whole disc");
            let outer = sun
                .arc(p.cells.iter().max_by_key(|c| c.level).unwrap())
                .outer;
            outer * outer
        };
        assert!((disc(0.0) / disc(1.0) - 800.0 / 1400.0).abs() < 1e-9);
    }
}
