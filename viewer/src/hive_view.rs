//! Draws the lifetimes view that `memcity_city::hive` and `views::lifetimes_layout` lay out: the
//! hive plot's axes, curves and context dots, the survival panel of one allocation context and
//! the caption. Nothing here decides a place or a colour.

use macroquad::prelude::{
    draw_circle, draw_circle_lines, draw_line, draw_rectangle, measure_text, Color,
};
use memcity_city::hive::{axis_point, edge_curve, package_color, Axis, Hive, Role};
use memcity_city::lifetimes::{gc_age_label, Lives, DEATH_CONTEXT_NOTE, GC_AGE_BUCKETS};
use memcity_city::units::count;

use crate::caches::LifetimesShown;
use crate::controls::Area;
use crate::hud;
use crate::views::{hive_point, LifetimesLayout};

/// Radius of a context's dot, in pixels.
pub const DOT: f32 = 5.0;
/// Pieces of one curve: smooth at the sizes a plot gets.
const SEGMENTS: usize = 24;

fn rgb(c: [f32; 3], alpha: f32) -> Color {
    Color::new(c[0], c[1], c[2], alpha)
}

fn objects(n: f64) -> String {
    count(n.round().max(0.0) as u64)
}

/// The whole view. `hovered` is the context under the pointer, `kept` the one clicked last;
/// the survival panel shows the first of them, and their curves are drawn strong.
pub fn draw(
    shown: &LifetimesShown,
    layout: &LifetimesLayout,
    hovered: Option<usize>,
    kept: Option<&str>,
    empty: Option<&str>,
) {
    let hive = &shown.hive;
    let kept = kept.and_then(|name| hive.nodes.iter().position(|n| n.name == name));
    let focus = hovered.or(kept);
    for (panel, &plot) in layout.plots.iter().enumerate() {
        draw_plot(hive, panel, plot, focus);
    }
    if let Some(why) = empty {
        let plot = layout.plots[0];
        hud::text_within(
            why,
            plot.x as f32 + 10.0,
            (plot.y + plot.h / 2.0) as f32,
            (layout.survival.x - plot.x as f32 - 20.0).max(40.0),
            &[16.0, 13.0],
            hud::MUTED,
        );
    }
    survival_panel(
        shown,
        layout.survival,
        focus.map(|i| &hive.nodes[i].name[..]),
    );
    let caption = layout.caption;
    hud::layout::view_panel("caption", caption);
    hud::text_within(
        "north: only allocates   west: objects only die there   south, cloned east: both   \
         green: died in the class that made it",
        caption.x,
        caption.y + 14.0,
        caption.w,
        &[14.0, 12.0],
        hud::MUTED,
    );
    for (i, part) in DEATH_CONTEXT_NOTE.split("; ").enumerate() {
        hud::text_within(
            part,
            caption.x,
            caption.y + 31.0 + i as f32 * 17.0,
            caption.w,
            &[14.0, 12.0],
            hud::MUTED,
        );
    }
}

/// One panel: its axes, its edges (gray first, green over them, the focused context's last)
/// and the dots of the contexts its edges touch.
fn draw_plot(hive: &Hive, panel: usize, plot: memcity_city::treemap::Rect, focus: Option<usize>) {
    let at = |p: (f32, f32)| hive_point(plot, p);
    for axis in [Axis::North, Axis::West, Axis::South, Axis::East] {
        let (a, b) = (at(axis_point(axis, 0.0)), at(axis_point(axis, 1.0)));
        draw_line(a.0, a.1, b.0, b.1, 2.0, hud::EDGE);
    }
    // Past each axis's outer end, clear of the contexts' names along it.
    let label = |axis: Axis, text: &str, dx: f32, dy: f32| {
        let (x, y) = at(axis_point(axis, 1.0));
        let width = measure_text(text, None, 13, 1.0).width;
        hud::text(text, x - width * dx, y + dy, 13.0, hud::MUTED);
    };
    label(Axis::North, "allocated", 0.5, -4.0);
    label(Axis::West, "died ", 1.0, 4.0);
    label(Axis::South, "both: allocated", 0.5, 14.0);
    label(Axis::East, " both: died", 0.0, 4.0);
    if hive.panels.len() > 1 {
        hud::text(
            &hive.panels[panel].label(),
            plot.x as f32 + 4.0,
            plot.y as f32 + 14.0,
            14.0,
            hud::INK,
        );
    }
    let edges: Vec<_> = hive.edges.iter().filter(|e| e.panel == panel).collect();
    let most = edges.iter().map(|e| e.objects).fold(0.0, f64::max);
    let touches = |e: &&&memcity_city::hive::Edge| focus.is_some_and(|f| e.from == f || e.to == f);
    let mut order: Vec<_> = edges.iter().collect();
    order.sort_by_key(|e| (touches(e), e.is_self()));
    for edge in order {
        let weight = if most > 0.0 {
            (edge.objects / most).sqrt() as f32
        } else {
            0.0
        };
        let alpha = if focus.is_some() && !touches(&edge) {
            0.15
        } else {
            0.35 + 0.65 * weight
        };
        let color = rgb(edge.color(), alpha);
        let points = edge_curve(hive.source(edge), hive.target(edge), SEGMENTS);
        for pair in points.windows(2) {
            let (a, b) = (at(pair[0]), at(pair[1]));
            draw_line(a.0, a.1, b.0, b.1, 1.0 + 3.0 * weight, color);
        }
    }
    let shown: Vec<usize> = (0..hive.nodes.len())
        .filter(|&i| hive.panels.len() <= 1 || edges.iter().any(|e| e.from == i || e.to == i))
        .collect();
    // The biggest contexts, and the one in focus, are named beside their first dot: the rest
    // say who they are under the pointer.
    let mut biggest = shown.clone();
    let size = |i: usize| hive.nodes[i].out_objects + hive.nodes[i].in_objects;
    biggest.sort_by(|&a, &b| size(b).total_cmp(&size(a)));
    biggest.truncate(NAMED_NODES);
    for &i in &shown {
        let node = &hive.nodes[i];
        for &axis in node.role.axes() {
            let (x, y) = at(axis_point(axis, node.t));
            draw_circle(x, y, DOT, rgb(package_color(node.package), 1.0));
            if focus == Some(i) {
                draw_circle_lines(x, y, DOT + 3.0, 2.0, hud::INK);
            }
        }
        if let (true, Some(&axis)) = (
            focus == Some(i) || biggest.contains(&i),
            node.role.axes().first(),
        ) {
            let (x, y) = at(axis_point(axis, node.t));
            let name = short_name(&node.name);
            // Beside a vertical axis; below a horizontal one, or above it for every other name
            // along it, so that neighbours do not write over each other.
            let below = horizontal_rank(hive, &biggest, i, axis).is_multiple_of(2);
            let (dx, dy) = match axis {
                Axis::North | Axis::South => (DOT + 4.0, 4.0),
                Axis::West | Axis::East => (
                    -measure_text(name, None, 12, 1.0).width / 2.0,
                    if below { DOT + 12.0 } else { -DOT - 4.0 },
                ),
            };
            hud::text(name, x + dx, y + dy, 12.0, hud::INK);
        }
    }
}

/// Where node `i` comes along `axis` among the named nodes whose first axis it is.
fn horizontal_rank(hive: &Hive, named: &[usize], i: usize, axis: Axis) -> usize {
    let t = hive.nodes[i].t;
    named
        .iter()
        .filter(|&&n| hive.nodes[n].role.axes().first() == Some(&axis) && hive.nodes[n].t < t)
        .count()
}

/// Contexts named beside their dot at most, the biggest first.
const NAMED_NODES: usize = 6;

/// A class's name without its package (`Lifetimes$Cache$Entry` for
/// `com.x.Lifetimes$Cache$Entry`); other contexts (`(died unseen)`) as they are.
fn short_name(name: &str) -> &str {
    if name.starts_with('(') {
        return name;
    }
    name.rsplit('.').next().unwrap_or(name)
}

/// The tooltip of a context under the pointer at `mouse`.
pub fn tooltip(hive: &Hive, node: usize, mouse: (f32, f32), bounds: Area) {
    let n = &hive.nodes[node];
    let mut lines = vec![n.name.clone()];
    if n.role != Role::Death {
        lines.push(format!(
            "allocated {} objects that died (anywhere)",
            objects(n.out_objects)
        ));
    }
    if n.role != Role::Allocation {
        lines.push(format!(
            "{} objects died here, from {} allocation context{}",
            objects(n.in_objects),
            n.in_degree,
            if n.in_degree == 1 { "" } else { "s" }
        ));
    }
    hud::tooltip(&lines, mouse, bounds, 16.0);
}

/// The survival of allocation context `name` (or what died in a context that allocates
/// nothing sampled): its shares, then the Kaplan-Meier curve over age in GCs above the
/// histogram of its deaths' ages.
fn survival_panel(shown: &LifetimesShown, area: Area, name: Option<&str>) {
    hud::layout::view_panel("survival", area);
    hud::panel(area);
    let (x, w) = (area.x + 10.0, area.w - 20.0);
    let mut y = area.y + 20.0;
    let mut line = |text: &str, size: f32, color: Color| {
        hud::text(&hud::fit(text, w, size), x, y, size, color);
        y += size + 5.0;
    };
    let Some(name) = name else {
        line("Survival", 16.0, hud::INK);
        line("hover an allocation context", 14.0, hud::MUTED);
        line("(a dot on the north or south axis)", 14.0, hud::MUTED);
        return;
    };
    line(name, 16.0, hud::INK);
    let Some(lives) = shown.context(name) else {
        line("allocates nothing sampled: objects", 14.0, hud::MUTED);
        line("only die here", 14.0, hud::MUTED);
        return;
    };
    line(
        &format!(
            "{} objects died ({} samples)",
            objects(lives.died),
            lives.samples
        ),
        14.0,
        hud::INK,
    );
    line(
        &format!(
            "{:.0} % escaped the nursery (a GC, then died)",
            lives.escape_share() * 100.0
        ),
        14.0,
        hud::INK,
    );
    line(
        &format!(
            "{:.0} % short-lived (under 8 MiB allocated)",
            lives.short_lived_share() * 100.0
        ),
        14.0,
        hud::INK,
    );
    line(
        &format!("{} alive now", objects(lives.alive.iter().sum())),
        14.0,
        hud::INK,
    );
    let chart = Area::new(
        x,
        y + 6.0,
        w,
        (area.y + area.h - y - 40.0).clamp(40.0, 180.0),
    );
    survival_chart(lives, chart);
}

/// Bars: the deaths by age bucket (scaled to the largest); line: the share still alive past
/// each bucket, from 100 % at the top.
fn survival_chart(lives: &Lives, chart: Area) {
    draw_rectangle(
        chart.x,
        chart.y,
        chart.w,
        chart.h,
        Color::new(1.0, 1.0, 1.0, 0.7),
    );
    let step = chart.w / GC_AGE_BUCKETS as f32;
    let most = lives.ages.by_gc.iter().copied().fold(0.0, f64::max);
    for (k, &died) in lives.ages.by_gc.iter().enumerate() {
        if most > 0.0 {
            let h = (died / most) as f32 * chart.h;
            draw_rectangle(
                chart.x + k as f32 * step + 2.0,
                chart.y + chart.h - h,
                step - 4.0,
                h,
                Color::new(0.75, 0.8, 0.9, 1.0),
            );
        }
        hud::text(
            &gc_age_label(k),
            chart.x + k as f32 * step + 2.0,
            chart.y + chart.h + 14.0,
            12.0,
            hud::MUTED,
        );
    }
    let y_of = |share: f64| chart.y + (1.0 - share as f32) * chart.h;
    let mut before = 1.0;
    for (k, &after) in lives.survival.iter().enumerate() {
        let (x0, x1) = (chart.x + k as f32 * step, chart.x + (k + 1) as f32 * step);
        draw_line(x0, y_of(before), x0, y_of(after), 2.0, hud::ACCENT);
        draw_line(x0, y_of(after), x1, y_of(after), 2.0, hud::ACCENT);
        before = after;
    }
    hud::text("alive", chart.x + 2.0, chart.y + 12.0, 12.0, hud::ACCENT);
    hud::text(
        "age in GCs (bars: deaths)",
        chart.x,
        chart.y + chart.h + 28.0,
        12.0,
        hud::MUTED,
    );
}
