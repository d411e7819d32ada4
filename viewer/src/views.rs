//! Where the 2D views sit on screen, without a window: the area the tree gets beside the
//! panels, and the timeline view's chart and row of small trees (paper 5.4). Clicks are
//! resolved here too, so what a click in each view does is tested with `cargo test`.

use memcity_city::hive::Hive;
use memcity_city::model::NodeId;
use memcity_city::timeline::Strip;
use memcity_city::tree2d::{Icicle, Partition, Sunburst};
use memcity_city::treemap::Rect;

use crate::controls::{Area, Screen, ViewKind, DETAILS_WIDTH};
use crate::keys::Action;

/// Room above the tree for the breadcrumb of a drill-down.
pub const CRUMB_HEIGHT: f32 = 24.0;
/// The timeline view's chart height.
pub const CHART_HEIGHT: f32 = 140.0;
/// Space between the small trees.
const GAP: f32 = 12.0;
/// The key-hint bar at the top.
const TOP: f32 = 30.0;

/// Margin around the view in a picture without the HUD.
const BARE_MARGIN: f32 = 10.0;

/// The main area the 2D views draw in: below the hint bar and the view buttons, above the
/// legend and the heap strip, right of the sidebar the details panel and the leak suspects use
/// (kept whether or not they show, so the tree never moves when a cell is selected). The
/// settings panel, opened for a moment, lies over it. Without the HUD, the whole picture.
pub fn main_area(screen: &Screen) -> Area {
    if !screen.hud {
        let (w, h) = screen.size();
        return Area::new(
            BARE_MARGIN,
            BARE_MARGIN,
            (w - 2.0 * BARE_MARGIN).max(40.0),
            (h - 2.0 * BARE_MARGIN).max(40.0),
        );
    }
    let top = screen
        .views
        .iter()
        .map(|(_, a)| a.y + a.h)
        .fold(TOP, f32::max)
        + 6.0;
    let left = 10.0 + DETAILS_WIDTH + 10.0;
    let right = screen.gear.x + screen.gear.w;
    // Above the legend, which spans the lower right.
    let bottom = screen.legend.y.min(screen.strip.y) - 8.0;
    Area::new(
        left,
        top,
        (right - left).max(40.0),
        (bottom - top).max(40.0),
    )
}

/// The tree's own rectangle in the main area: under the breadcrumb, which the HUD draws (a
/// picture without it is the tree's alone, a sunburst in its middle).
pub fn tree_rect(screen: &Screen) -> Rect {
    let area = main_area(screen);
    if !screen.hud {
        return Rect::new(area.x as f64, area.y as f64, area.w as f64, area.h as f64);
    }
    under_crumbs(area)
}

/// `area` less the breadcrumb's room at its top.
fn under_crumbs(area: Area) -> Rect {
    Rect::new(
        area.x as f64,
        (area.y + CRUMB_HEIGHT) as f64,
        area.w as f64,
        (area.h - CRUMB_HEIGHT).max(10.0) as f64,
    )
}

/// Where the global view sits while drilled down (paper 5.3: the whole tree, the drill-down
/// branch highlighted, beside the local view): the lower left of the tree's rectangle.
pub fn global_rect(screen: &Screen) -> Rect {
    let tree = tree_rect(screen);
    let side = (tree.w.min(tree.h) * 0.3).clamp(60.0, 220.0);
    Rect::new(tree.x + 6.0, tree.y + tree.h - side - 6.0, side, side)
}

/// The snapshots the timeline view shows: the picked ones and the current one, in time order.
pub fn shown(picks: &[usize], index: usize) -> Vec<usize> {
    let mut shown = picks.to_vec();
    if let Err(at) = shown.binary_search(&index) {
        shown.insert(at, index);
    }
    shown
}

/// The timeline view: the heap chart across the top, then one small tree per shown snapshot,
/// side by side, aligned at the top (heap-scaled, they grow downward with the heap).
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineLayout {
    pub chart: Strip,
    pub trees: Vec<(usize, Rect)>,
}

pub fn timeline_layout(area: Area, shown: &[usize]) -> TimelineLayout {
    let chart = Strip {
        x: area.x,
        y: area.y,
        w: area.w,
        h: CHART_HEIGHT.min(area.h / 3.0),
    };
    let top = chart.y + chart.h + 26.0;
    let n = shown.len().max(1) as f32;
    let width = ((area.w - GAP * (n - 1.0)) / n).max(8.0);
    let height = (area.y + area.h - top).max(10.0);
    let trees = shown
        .iter()
        .enumerate()
        .map(|(i, &index)| {
            let x = area.x + i as f32 * (width + GAP);
            (
                index,
                Rect::new(x as f64, top as f64, width as f64, height as f64),
            )
        })
        .collect();
    TimelineLayout { chart, trees }
}

/// The timeline view as it stands in `screen`: the picked snapshots and the current one,
/// `index`, side by side below the chart (what it draws and where its clicks land).
pub fn timeline_in(screen: &Screen, picks: &[usize], index: usize) -> TimelineLayout {
    timeline_layout(main_area(screen), &shown(picks, index))
}

/// What a click at `(x, y)` in the main area asks, given what each view drew there. A second
/// click on the selected cell drills down into it (a double click needs no timing here: the
/// first click selected it).
pub fn click(
    view: ViewKind,
    tree: Rect,
    partition: &Partition,
    timeline: Option<&TimelineLayout>,
    len: usize,
    selected: Option<NodeId>,
    (x, y): (f32, f32),
) -> Vec<Action> {
    let (px, py) = (x as f64, y as f64);
    let pick_cell = |node: Option<NodeId>| match node {
        Some(node) if selected == Some(node) => vec![Action::DrillTo(node)],
        Some(node) => vec![Action::Select(Some(node))],
        None => Vec::new(),
    };
    match view {
        // The city picks in 3D; the lifetimes view in its plot (`hive_pick`).
        ViewKind::City | ViewKind::Lifetimes => Vec::new(),
        ViewKind::Icicle => pick_cell(Icicle::new(tree, partition).pick(partition, px, py)),
        ViewKind::Sunburst => pick_cell(Sunburst::new(tree, partition).pick(partition, px, py)),
        ViewKind::Timeline => {
            let Some(layout) = timeline else {
                return Vec::new();
            };
            if layout.chart.contains(x, y) && len > 0 {
                return vec![Action::TogglePick(layout.chart.index_at(x, len))];
            }
            match layout.trees.iter().find(|(_, r)| r.contains(px, py)) {
                Some(&(index, _)) => vec![Action::Jump(index), Action::SetView(ViewKind::Icicle)],
                None => Vec::new(),
            }
        }
    }
}

/// Width of the lifetimes view's survival panel, right of its plots.
pub const SURVIVAL_WIDTH: f32 = 300.0;
/// Room under the lifetimes view's plots for its caption.
pub const CAPTION_HEIGHT: f32 = 54.0;
/// How near (pixels) the pointer must be to a context's dot to pick it.
pub const HIVE_PICK: f32 = 10.0;

/// The lifetimes view: one square per hive panel, in the grid that makes them largest, the
/// survival panel on the right and the caption under them.
#[derive(Debug, Clone, PartialEq)]
pub struct LifetimesLayout {
    pub plots: Vec<Rect>,
    pub survival: Area,
    pub caption: Area,
}

/// Room left and right of the hive plots for the names past their axes' ends ("died", "both:
/// died"), which would otherwise run out of the main area or under the survival panel.
const HIVE_LEFT: f32 = 24.0;
const HIVE_RIGHT: f32 = 56.0;

pub fn lifetimes_layout(area: Area, panels: usize) -> LifetimesLayout {
    let n = panels.max(1);
    let height = (area.h - CAPTION_HEIGHT).max(20.0);
    let survival = Area::new(
        area.x + area.w - SURVIVAL_WIDTH,
        area.y,
        SURVIVAL_WIDTH.min(area.w),
        height,
    );
    let left = area.x + HIVE_LEFT;
    let room = (
        (area.w - SURVIVAL_WIDTH - GAP - HIVE_LEFT - HIVE_RIGHT).max(20.0),
        height,
    );
    let (columns, side) = (1..=n)
        .map(|columns| {
            let rows = n.div_ceil(columns);
            let side = (room.0 / columns as f32).min(room.1 / rows as f32);
            (columns, side)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((1, room.1));
    let plots = (0..n)
        .map(|i| {
            let (column, row) = (i % columns, i / columns);
            Rect::new(
                (left + column as f32 * side) as f64,
                (area.y + row as f32 * side) as f64,
                (side - GAP / 2.0).max(10.0) as f64,
                (side - GAP / 2.0).max(10.0) as f64,
            )
        })
        .collect();
    LifetimesLayout {
        plots,
        survival,
        caption: Area::new(area.x, area.y + height, area.w, CAPTION_HEIGHT),
    }
}

/// A point of the hive's unit square in a plot's square.
pub fn hive_point(plot: Rect, (u, v): (f32, f32)) -> (f32, f32) {
    (
        (plot.x + u as f64 * plot.w) as f32,
        (plot.y + v as f64 * plot.h) as f32,
    )
}

/// The context (an index into `hive.nodes`) whose dot is under `(x, y)`, in the panel there.
pub fn hive_pick(layout: &LifetimesLayout, hive: &Hive, (x, y): (f32, f32)) -> Option<usize> {
    let (panel, plot) = layout
        .plots
        .iter()
        .enumerate()
        .find(|(_, r)| r.contains(x as f64, y as f64))?;
    let u = ((x as f64 - plot.x) / plot.w) as f32;
    let v = ((y as f64 - plot.y) / plot.h) as f32;
    let shown = (hive.panels.len() > 1).then_some(panel);
    hive.pick(u, v, HIVE_PICK / plot.w as f32, shown)
}

/// A name the city wants shown: where it points (HUD units) and how wide its text is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelWish {
    pub node: NodeId,
    pub anchor: (f32, f32),
    pub width: f32,
}

/// Height of a city label.
pub const LABEL_HEIGHT: f32 = 20.0;
/// How far above its anchor a label floats (a leader line joins them).
const LABEL_LIFT: f32 = 26.0;

/// Places labels above their anchors in the order given (most important first), leaving out any
/// that would overlap one already placed, leave `bounds`, or cover a panel: a few readable names
/// rather than a pile. Returns each placed label's box and anchor.
pub fn place_labels(
    wishes: &[LabelWish],
    bounds: Area,
    screen: &Screen,
) -> Vec<(NodeId, Area, (f32, f32))> {
    let mut placed: Vec<(NodeId, Area, (f32, f32))> = Vec::new();
    for wish in wishes {
        if placed.iter().any(|p| p.0 == wish.node) {
            continue;
        }
        let (x, y) = wish.anchor;
        // Above the anchor; below it when there is no room above (the tallest roof near the
        // top of the window).
        let above = Area::new(
            x - wish.width / 2.0,
            y - LABEL_LIFT - LABEL_HEIGHT,
            wish.width,
            LABEL_HEIGHT,
        );
        let below = Area::new(
            x - wish.width / 2.0,
            y + LABEL_LIFT,
            wish.width,
            LABEL_HEIGHT,
        );
        let fits = |area: &Area| {
            let inside = area.x >= bounds.x
                && area.y >= bounds.y
                && area.x + area.w <= bounds.x + bounds.w
                && area.y + area.h <= bounds.y + bounds.h
                && bounds.contains(x, y);
            let overlaps = |a: &Area, b: &Area| {
                a.x < b.x + b.w + 4.0
                    && b.x < a.x + a.w + 4.0
                    && a.y < b.y + b.h + 2.0
                    && b.y < a.y + a.h + 2.0
            };
            let corners = [
                (area.x, area.y),
                (area.x + area.w, area.y),
                (area.x, area.y + area.h),
                (area.x + area.w, area.y + area.h),
                (x, y),
            ];
            let on_panel = corners.iter().any(|&(cx, cy)| screen.hit(cx, cy).is_some());
            inside && !on_panel && !placed.iter().any(|p| overlaps(&p.1, area))
        };
        if let Some(area) = [above, below].into_iter().find(|a| fits(a)) {
            placed.push((wish.node, area, wish.anchor));
        }
    }
    placed
}

#[cfg(test)]
mod tests {

    #[test]
    fn hive_panels_are_squares_in_the_grid_that_makes_them_largest() {
        let area = Area::new(400.0, 50.0, 900.0, 554.0);
        let one = lifetimes_layout(area, 1);
        assert_eq!(one.plots.len(), 1);
        let p = one.plots[0];
        assert_eq!((p.x, p.y, p.w, p.h), (424.0, 50.0, 494.0, 494.0));
        assert_eq!(one.survival, Area::new(1000.0, 50.0, SURVIVAL_WIDTH, 500.0));
        assert_eq!(one.caption.y, 550.0);
        // Room past the axes' ends for their names, before the survival panel.
        assert!(p.x + p.w + HIVE_RIGHT as f64 <= one.survival.x as f64);
        // Four panels in 508 x 500: two by two (side 250) beats four in a row (127).
        let four = lifetimes_layout(area, 4);
        let corners: Vec<(f64, f64)> = four.plots.iter().map(|r| (r.x, r.y)).collect();
        assert_eq!(
            corners,
            [(424.0, 50.0), (674.0, 50.0), (424.0, 300.0), (674.0, 300.0)]
        );
        assert_eq!(hive_point(p, (0.5, 0.25)), (671.0, 173.5));
    }
    use super::*;
    use memcity_city::model::{CityModel, Metric, ROOT};
    use memcity_city::tree2d::{partition, PartitionOptions, SortBy, TreeOrder};
    use std::collections::HashSet;

    fn model() -> CityModel {
        let mut m = CityModel::new();
        for (time, n) in [(0u64, 10u64), (1000, 30)] {
            let row = |path: &[&str], n: u64| {
                (
                    path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                    "Type".to_string(),
                    n,
                    n * 16,
                )
            };
            let nodes = vec![row(&["a"], n), row(&["a", "X"], n), row(&["b"], 10)];
            m.push_tree(time, (n + 10, (n + 10) * 16), &nodes, vec![]);
        }
        m
    }

    fn screen() -> Screen {
        Screen::new(1280.0, 720.0, false, None)
    }

    #[test]
    fn without_the_hud_the_view_has_the_whole_picture() {
        let bare = screen().without_hud();
        let area = main_area(&bare);
        assert_eq!(area, Area::new(10.0, 10.0, 1260.0, 700.0));
        // No breadcrumb: the tree is the area, a sunburst in the picture's middle.
        let tree = tree_rect(&bare);
        assert_eq!(
            (tree.x, tree.y, tree.w, tree.h),
            (10.0, 10.0, 1260.0, 700.0)
        );
        let (cx, cy) = tree.center();
        assert_eq!((cx, cy), (640.0, 360.0));
        assert!(
            tree_rect(&screen()).y > main_area(&screen()).y as f64,
            "under the breadcrumb"
        );
    }

    #[test]
    fn the_main_area_keeps_clear_of_the_panels_and_still() {
        let plain = main_area(&screen());
        assert!(plain.y >= TOP && plain.y + plain.h <= screen().strip.y);
        // Selecting (the details panel) or suspects (the sidebar) do not move the tree.
        let busy =
            Screen::new(1280.0, 720.0, false, Some(300.0)).with_suspects_in_sidebar(&["a"; 5]);
        assert_eq!(main_area(&busy), plain);
        let (details, _) = busy.details.unwrap();
        let (suspects, rows) = busy.suspects.clone().unwrap();
        assert_eq!(rows.len(), 5);
        for panel in [details, suspects] {
            assert!(plain.x >= panel.x + panel.w, "{panel:?} under the tree");
        }
        assert!(
            suspects.y >= details.y + details.h,
            "the list under the details"
        );
        // A long list is cut to the room above the strip.
        let long =
            Screen::new(1280.0, 720.0, false, Some(200.0)).with_suspects_in_sidebar(&["a"; 50]);
        let (list, _) = long.suspects.unwrap();
        assert!(list.y + list.h <= long.strip.y);
    }

    #[test]
    fn timeline_trees_sit_side_by_side_under_the_chart() {
        let area = Area::new(10.0, 40.0, 1000.0, 600.0);
        let layout = timeline_layout(area, &shown(&[0, 3], 1));
        let indices: Vec<usize> = layout.trees.iter().map(|t| t.0).collect();
        assert_eq!(indices, [0, 1, 3]);
        for pair in layout.trees.windows(2) {
            let (a, b) = (pair[0].1, pair[1].1);
            assert!(a.x + a.w < b.x, "overlap");
            assert_eq!((a.y, a.w, a.h), (b.y, b.w, b.h), "aligned, same size");
        }
        let last = layout.trees[2].1;
        assert!(
            (last.x + last.w - 1010.0).abs() < 1e-3,
            "the row fills the width"
        );
        assert!(last.y as f32 > layout.chart.y + layout.chart.h);
    }

    #[test]
    fn clicks_select_then_drill_pick_and_open() {
        let m = model();
        let order = TreeOrder::new(&m, Metric::Objects, SortBy::Growth);
        let p = partition(
            &m,
            &order,
            ROOT,
            1.0,
            &PartitionOptions::default(),
            &HashSet::new(),
            None,
        );
        let area = Area::new(0.0, 0.0, 400.0, 400.0 + CRUMB_HEIGHT);
        let tree = under_crumbs(area);
        let a = m.find(&["a"]).unwrap();
        // The icicle's second column, top: `a` (it grew), 3/4 of the height.
        let (x, y) = (150.0, CRUMB_HEIGHT + 100.0);
        assert_eq!(
            click(ViewKind::Icicle, tree, &p, None, 2, None, (x, y)),
            [Action::Select(Some(a))]
        );
        assert_eq!(
            click(ViewKind::Icicle, tree, &p, None, 2, Some(a), (x, y)),
            [Action::DrillTo(a)]
        );
        // The sunburst: straight up from the centre in ring 1 is `a` too.
        let centre = (200.0, CRUMB_HEIGHT + 200.0);
        assert_eq!(
            click(
                ViewKind::Sunburst,
                tree,
                &p,
                None,
                2,
                None,
                (centre.0, centre.1 - 100.0)
            ),
            [Action::Select(Some(a))]
        );
        let layout = timeline_layout(area, &shown(&[], 1));
        let chart = layout.chart;
        assert_eq!(
            click(
                ViewKind::Timeline,
                tree,
                &p,
                Some(&layout),
                2,
                None,
                (chart.x + 1.0, chart.y + 5.0)
            ),
            [Action::TogglePick(0)]
        );
        let (c, _) = layout.trees[0].1.center();
        assert_eq!(
            click(
                ViewKind::Timeline,
                tree,
                &p,
                Some(&layout),
                2,
                None,
                (c as f32, 300.0)
            ),
            [Action::Jump(1), Action::SetView(ViewKind::Icicle)]
        );
    }

    #[test]
    fn labels_keep_apart_and_off_the_panels() {
        let screen = screen();
        let bounds = Area::new(0.0, 50.0, 1280.0, 500.0);
        let wish = |node, x, y| LabelWish {
            node,
            anchor: (x, y),
            width: 120.0,
        };
        let placed = place_labels(
            &[
                wish(1, 400.0, 300.0),
                // Overlaps the first above it: placed below its anchor.
                wish(2, 450.0, 305.0),
                wish(3, 700.0, 300.0),
                // The first again (selected and tallest): once.
                wish(1, 400.0, 300.0),
                // Both places taken by 1 and 2: left out.
                wish(6, 420.0, 302.0),
                // No room above the main area's top: below its anchor.
                wish(4, 900.0, bounds.y + 10.0),
                // On the heap strip at the bottom.
                wish(5, 600.0, screen.strip.y + 20.0),
            ],
            bounds,
            &screen,
        );
        let nodes: Vec<NodeId> = placed.iter().map(|p| p.0).collect();
        assert_eq!(nodes, [1, 2, 3, 4]);
        for (node, area, anchor) in &placed {
            let above = area.y + area.h < anchor.1;
            assert_eq!(above, [1, 3].contains(node), "label {node}");
        }
        let (_, area, anchor) = placed[0];
        assert!(
            (area.x + area.w / 2.0 - anchor.0).abs() < 1e-3,
            "centred on it"
        );
    }
}
