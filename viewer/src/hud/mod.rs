//! Drawing the controls, panels and charts over the city. Where they sit and what a click on
//! them means is decided in `memcity_viewer::controls`; this module only paints.

mod details;
pub mod layout;

pub use details::{details, sparkline};

use crate::controls::{Area, Screen, SettingRow, Settings, Transport, ViewKind};
use macroquad::prelude::{
    draw_circle, draw_circle_lines, draw_line, draw_rectangle, draw_rectangle_lines, draw_text,
    draw_triangle, measure_text, Color, Vec2,
};
use memcity_city::mapping;
use memcity_city::model::{Metric, Window};
use memcity_city::timeline::{Chart, Strip, LABEL_BAND};
use memcity_city::units;

pub const INK: Color = Color::new(0.08, 0.09, 0.13, 1.0);
pub const MUTED: Color = Color::new(0.35, 0.37, 0.45, 1.0);
pub const PANEL: Color = Color::new(1.0, 1.0, 1.0, 0.88);
/// The panels opened for a moment over everything (the settings, a tooltip): opaque, so what
/// they cover is hidden, not overprinted.
pub const POPOVER: Color = Color::new(1.0, 1.0, 1.0, 1.0);
pub const EDGE: Color = Color::new(0.55, 0.6, 0.7, 1.0);
pub const BUTTON: Color = Color::new(0.9, 0.92, 0.96, 1.0);
pub const HOVER: Color = Color::new(0.78, 0.85, 1.0, 1.0);
pub const ACCENT: Color = Color::new(0.1, 0.25, 0.6, 1.0);
pub const LIVE_RED: Color = Color::new(0.86, 0.08, 0.06, 1.0);
pub const WINDOW_TINT: Color = Color::new(1.0, 0.55, 0.0, 0.18);
pub const LINK: Color = Color::new(0.05, 0.3, 0.75, 1.0);

pub fn panel(area: Area) {
    boxed(area, PANEL);
}

/// `area` filled with `fill`, edged.
fn boxed(area: Area, fill: Color) {
    draw_rectangle(area.x, area.y, area.w, area.h, fill);
    draw_rectangle_lines(area.x, area.y, area.w, area.h, 1.0, EDGE);
}

pub fn text(s: &str, x: f32, y: f32, size: f32, color: Color) {
    draw_text(s, x, y, size, color);
    layout::text(s, x, y, size);
}

/// `s` at the first of `sizes` it fits `width` at, else cut to fit at the last: estimates carry
/// errors that make a line longer, and a smaller line reads better than a cut one.
pub fn text_within(s: &str, x: f32, y: f32, width: f32, sizes: &[f32], color: Color) {
    let size = sizes
        .iter()
        .copied()
        .find(|&size| measure_text(s, None, size as u16, 1.0).width <= width)
        .unwrap_or(sizes[sizes.len() - 1]);
    text(&fit(s, width, size), x, y, size, color);
}

/// `s` cut to fit `width` pixels at `size`, with "..." where it was cut.
/// `lines` in a panel beside the pointer at `mouse`, kept inside `bounds`.
pub fn tooltip(lines: &[String], mouse: (f32, f32), bounds: Area, size: f32) {
    let width = lines
        .iter()
        .map(|l| measure_text(l, None, size as u16, 1.0).width)
        .fold(0.0, f32::max);
    let x = (mouse.0 + 14.0)
        .min(bounds.x + bounds.w - width - 16.0)
        .max(4.0);
    let y = (mouse.1 + 10.0).min(bounds.y + bounds.h - 19.0 * lines.len() as f32 - 8.0);
    let area = Area::new(x - 6.0, y, width + 12.0, lines.len() as f32 * 19.0 + 8.0);
    layout::panel("tooltip", area);
    boxed(area, POPOVER);
    for (i, line) in lines.iter().enumerate() {
        text(line, x, y + 17.0 + i as f32 * 19.0, size, INK);
    }
}

pub fn fit(s: &str, width: f32, size: f32) -> String {
    cut(s, width, size, |chars, n| {
        chars[..n].iter().collect::<String>() + "..."
    })
}

/// `s` cut from the left to fit `width` pixels at `size`: a title keeps its end, where names
/// differ (`...ConcurrentHashMap$Node` against `...ConcurrentHashMap$Node[]`).
pub fn fit_left(s: &str, width: f32, size: f32) -> String {
    cut(s, width, size, |chars, n| {
        "...".to_string() + &chars[chars.len() - n..].iter().collect::<String>()
    })
}

/// `s` as it is if it fits, else `keep(chars, n)` for the most characters `n` that fits.
fn cut(s: &str, width: f32, size: f32, keep: impl Fn(&[char], usize) -> String) -> String {
    let fits = |text: &str| measure_text(text, None, size as u16, 1.0).width <= width;
    if fits(s) {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&keep(&chars, mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    keep(&chars, lo)
}

fn button_face(area: Area, hovered: bool, active: bool) {
    let fill = if active {
        ACCENT
    } else if hovered {
        HOVER
    } else {
        BUTTON
    };
    draw_rectangle(area.x, area.y, area.w, area.h, fill);
    draw_rectangle_lines(area.x, area.y, area.w, area.h, 1.0, EDGE);
}

fn triangle(cx: f32, cy: f32, r: f32, left: bool, color: Color) {
    let s = if left { -1.0 } else { 1.0 };
    draw_triangle(
        Vec2::new(cx + s * r, cy),
        Vec2::new(cx - s * r * 0.8, cy - r),
        Vec2::new(cx - s * r * 0.8, cy + r),
        color,
    );
}

/// The transport bar: step and play buttons (icons), live, the period, and the time slider.
pub fn transport(
    screen: &Screen,
    mouse: (f32, f32),
    playing: bool,
    live: bool,
    index: usize,
    len: usize,
) {
    let first = screen.transport.first().map_or(screen.slider, |t| t.1);
    layout::panel(
        "transport",
        Area::new(
            first.x,
            first.y,
            screen.slider.x + screen.slider.w - first.x,
            first.h.max(screen.slider.h),
        ),
    );
    for &(t, area) in &screen.transport {
        let hovered = area.contains(mouse.0, mouse.1);
        let active = (t == Transport::Live && live) || (t == Transport::Play && playing);
        button_face(area, hovered, active);
        let ink = if active {
            Color::new(1.0, 1.0, 1.0, 1.0)
        } else {
            INK
        };
        let (cx, cy) = area.center();
        match t {
            Transport::First => {
                draw_rectangle(cx - 8.0, cy - 7.0, 3.0, 14.0, ink);
                triangle(cx + 1.0, cy, 7.0, true, ink);
            }
            Transport::Back => triangle(cx - 1.0, cy, 8.0, true, ink),
            Transport::Play if playing => {
                draw_rectangle(cx - 6.0, cy - 7.0, 4.0, 14.0, ink);
                draw_rectangle(cx + 2.0, cy - 7.0, 4.0, 14.0, ink);
            }
            Transport::Play => triangle(cx + 1.0, cy, 8.0, false, ink),
            Transport::Forward => triangle(cx + 1.0, cy, 8.0, false, ink),
            Transport::Live => {
                let dot = if live {
                    Color::new(1.0, 0.4, 0.35, 1.0)
                } else {
                    LIVE_RED
                };
                draw_rectangle(cx - 4.0, cy - 4.0, 8.0, 8.0, dot);
            }
            Transport::Slower => draw_rectangle(cx - 7.0, cy - 1.5, 14.0, 3.0, ink),
            Transport::Faster => {
                draw_rectangle(cx - 7.0, cy - 1.5, 14.0, 3.0, ink);
                draw_rectangle(cx - 1.5, cy - 7.0, 3.0, 14.0, ink);
            }
        }
    }
    let s = screen.slider;
    let (a, b) = screen.slider_track();
    draw_rectangle(s.x, s.y, s.w, s.h, Color::new(1.0, 1.0, 1.0, 0.6));
    draw_line(a, s.y + s.h / 2.0, b, s.y + s.h / 2.0, 4.0, EDGE);
    if len > 0 {
        let k = screen.slider_knob(index, len);
        let hovered = (mouse.0 - k).abs() < 10.0 && s.contains(mouse.0, mouse.1);
        button_face(
            Area::new(k - 7.0, s.y + 4.0, 14.0, s.h - 8.0),
            hovered,
            true,
        );
    }
}

/// The heap timeline: totals per snapshot (walks solid, estimates hollow and dashed), the growth
/// window, the position, a drag in progress; its labels in the band over them.
pub fn timeline(
    screen: &Screen,
    chart: &Chart,
    model: &memcity_city::model::CityModel,
    metric: Metric,
    window: Window,
    index: usize,
    dragging: Option<(f32, f32)>,
) {
    let strip = screen.strip;
    let len = model.len();
    layout::panel("strip", Area::new(strip.x, strip.y, strip.w, strip.h));
    draw_rectangle(
        strip.x,
        strip.y,
        strip.w,
        strip.h,
        Color::new(1.0, 1.0, 1.0, 0.75),
    );
    if len == 0 {
        return;
    }
    let (wx0, wx1) = (strip.x_of(window.start, len), strip.x_of(window.end, len));
    draw_rectangle(wx0, strip.y, (wx1 - wx0).max(2.0), strip.h, WINDOW_TINT);
    if let Some((from, to)) = dragging {
        draw_rectangle(
            from.min(to),
            strip.y,
            (to - from).abs(),
            strip.h,
            Color::new(1.0, 0.55, 0.0, 0.25),
        );
    }
    let bottom = strip.y + strip.h;
    for &(x, top, estimated) in &chart.ticks {
        let (width, color) = if estimated {
            (1.0, MUTED)
        } else {
            (2.0, ACCENT)
        };
        mark_line(x, bottom, x, top, width, color);
    }
    line(chart);
    if chart.dot_radius > 0.0 {
        for p in &chart.points {
            if p.estimated {
                draw_circle(p.x, p.y, chart.dot_radius, Color::new(1.0, 1.0, 1.0, 1.0));
                draw_circle_lines(p.x, p.y, chart.dot_radius, 1.5, ACCENT);
            } else {
                draw_circle(p.x, p.y, chart.dot_radius, ACCENT);
            }
            layout::dot(p.x, p.y, chart.dot_radius);
        }
    }
    // The position runs under the labels' band, not through its words.
    let cx = strip.x_of(index, len);
    mark_line(cx, strip.y + LABEL_BAND, cx, bottom, 2.0, LIVE_RED);
    let key = chart
        .any_estimate
        .then_some("solid: heap walk   hollow, dashed: estimate");
    chart_labels(&strip, model, metric, key);
}

/// A line that text must keep clear of (a chart's), drawn and recorded.
fn mark_line(x0: f32, y0: f32, x1: f32, y1: f32, width: f32, color: Color) {
    draw_line(x0, y0, x1, y1, width, color);
    layout::line(x0, y0, x1, y1, width);
}

/// A heap chart's line: solid between walks, dashed where estimates are.
fn line(chart: &Chart) {
    for piece in &chart.pieces {
        mark_line(
            piece.from.0,
            piece.from.1,
            piece.to.0,
            piece.to.1,
            2.0,
            ACCENT,
        );
    }
}

/// The settings panel.
pub fn settings(screen: &Screen, settings: &Settings, mouse: (f32, f32)) {
    let Some((area, rows)) = &screen.settings else {
        return;
    };
    layout::panel("settings", *area);
    boxed(*area, POPOVER);
    text("Settings (Tab)", area.x + 10.0, area.y + 19.0, 18.0, INK);
    for &SettingRow {
        setting,
        row,
        less,
        more,
    } in rows
    {
        if row.contains(mouse.0, mouse.1) {
            draw_rectangle(row.x, row.y, row.w, row.h, Color::new(0.85, 0.9, 1.0, 0.6));
        }
        text(setting.label(), row.x + 4.0, row.y + 16.0, 16.0, INK);
        for (arrow, left) in [(less, true), (more, false)] {
            button_face(arrow, arrow.contains(mouse.0, mouse.1), false);
            let (cx, cy) = arrow.center();
            triangle(cx, cy, 5.0, left, INK);
        }
        let value = fit(
            &setting.value(settings),
            more.x - less.x - less.w - 8.0,
            16.0,
        );
        let width = measure_text(&value, None, 16, 1.0).width;
        let mid = (less.x + less.w + more.x) / 2.0;
        text(&value, mid - width / 2.0, row.y + 16.0, 16.0, ACCENT);
    }
}

/// The gear that opens the settings: three bars, the universal "adjust" sign.
pub fn gear(area: Area, open: bool, mouse: (f32, f32)) {
    layout::panel("gear", area);
    button_face(area, area.contains(mouse.0, mouse.1), open);
    let ink = if open {
        Color::new(1.0, 1.0, 1.0, 1.0)
    } else {
        INK
    };
    for (i, knob) in [0.3f32, 0.65, 0.45].iter().enumerate() {
        let y = area.y + 9.0 + i as f32 * 6.0;
        draw_line(area.x + 7.0, y, area.x + area.w - 7.0, y, 1.5, ink);
        let kx = area.x + 7.0 + (area.w - 14.0) * knob;
        draw_rectangle(kx - 2.0, y - 2.5, 4.0, 5.0, ink);
    }
}

/// The leak-suspects list: its title and one line per suspect, each in the rows its area was
/// laid out for (`controls::suspect_rows`), a link to the growing type (hovered or selected one
/// highlighted). Flying the trace is the city's alone.
pub fn suspects(
    area: Area,
    rows: &[Area],
    lines: &[crate::caches::SuspectLine],
    selected: Option<memcity_city::model::NodeId>,
    mouse: (f32, f32),
    city: bool,
) {
    layout::panel("suspects", area);
    panel(area);
    let title = if city {
        "Leak suspects (N: next, F: fly the trace)"
    } else {
        "Leak suspects (N: next)"
    };
    text(title, area.x + 10.0, area.y + 18.0, 16.0, LIVE_RED);
    for (line, row) in lines.iter().zip(rows) {
        if line.node.is_some() && (row.contains(mouse.0, mouse.1) || line.node == selected) {
            draw_rectangle(row.x, row.y, row.w, row.h, HOVER);
        }
        let color = if line.node.is_some() { LINK } else { INK };
        let parts =
            crate::controls::suspect_rows(&line.text, crate::controls::suspect_text_width(*row));
        for (k, part) in parts.iter().enumerate() {
            let bottom = row.y + (k + 1) as f32 * crate::controls::SUSPECT_LINE;
            text(part, row.x + 2.0, bottom - 4.0, 15.0, color);
        }
    }
}

/// The key hints in the band at the top: `s` (hints apart by two spaces) on one line or two,
/// broken between hints, at the largest size that takes two lines at most; past that, cut.
pub fn hints(s: &str, area: Area) {
    let width = area.w - 16.0;
    for size in [15.0f32, 14.0, 13.0, 12.0] {
        let lines = wrap(s, width, size);
        if lines.len() <= 2 || size <= 12.0 {
            let h = lines.len().min(2) as f32 * (size + 3.0) + 8.0;
            layout::panel("hints", Area::new(area.x, area.y, area.w, h));
            draw_rectangle(area.x, area.y, area.w, h, Color::new(1.0, 1.0, 1.0, 0.82));
            for (i, line) in lines.iter().take(2).enumerate() {
                text(
                    line,
                    area.x + 8.0,
                    area.y + size + 2.0 + i as f32 * (size + 3.0),
                    size,
                    INK,
                );
            }
            return;
        }
    }
}

/// `s` in lines of at most `width` pixels at `size`, broken at double spaces (between hints).
fn wrap(s: &str, width: f32, size: f32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for part in s.split("  ").filter(|p| !p.is_empty()) {
        let candidate = if line.is_empty() {
            part.to_string()
        } else {
            format!("{line}  {part}")
        };
        if measure_text(&candidate, None, size as u16, 1.0).width <= width || line.is_empty() {
            line = candidate;
        } else {
            lines.push(std::mem::take(&mut line));
            line = part.to_string();
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The view buttons: city, icicle, sunburst, timeline.
pub fn views(screen: &Screen, current: ViewKind, mouse: (f32, f32)) {
    for &(view, area) in &screen.views {
        layout::panel(&format!("button:{}", view.label()), area);
        let active = view == current;
        button_face(area, area.contains(mouse.0, mouse.1), active);
        let ink = if active {
            Color::new(1.0, 1.0, 1.0, 1.0)
        } else {
            INK
        };
        let label = view.label();
        let w = measure_text(label, None, 16, 1.0).width;
        text(
            label,
            area.x + (area.w - w) / 2.0,
            area.y + area.h / 2.0 + 5.0,
            16.0,
            ink,
        );
    }
}

/// The legend of colours and opacity: two lines, bottom right above the heap strip.
pub fn legend(screen: &Screen, view: ViewKind, settings: &Settings) {
    let area = screen.legend;
    layout::panel("legend", area);
    panel(area);
    let x = area.x + 8.0;
    let y = area.y + 16.0;
    if view == ViewKind::Lifetimes {
        let lines = [
            "curves: allocation context to death context, thicker for more objects",
            "green: died in the class that made it; dots: one colour per package",
        ];
        for (i, line) in lines.iter().enumerate() {
            text(
                &fit(line, area.w - 16.0, 13.0),
                x,
                y + i as f32 * 18.0,
                13.0,
                INK,
            );
        }
        return;
    }
    let label = "growth:  none";
    text(label, x, y, 13.0, INK);
    let ramp_x = x + measure_text(label, None, 13, 1.0).width + 6.0;
    let most = if view == ViewKind::City {
        "the most"
    } else {
        "its level's most"
    };
    let most_w = measure_text(most, None, 13, 1.0).width;
    let ramp = (area.x + area.w - 8.0 - most_w - 6.0 - ramp_x).max(20.0);
    let steps = 24;
    for i in 0..steps {
        let c = mapping::growth_color(i as f64 / (steps - 1) as f64);
        draw_rectangle(
            ramp_x + ramp * i as f32 / steps as f32,
            y - 10.0,
            ramp / steps as f32 + 0.5,
            11.0,
            Color::new(c[0], c[1], c[2], 1.0),
        );
    }
    text(most, ramp_x + ramp + 6.0, y, 13.0, INK);
    let second = match (view, settings.opacity.enabled) {
        (ViewKind::City, true) => format!(
            "faded: not among the {} strongest growers; districts blue, top level darkest",
            settings.opacity.opaque
        ),
        (ViewKind::City, false) => "districts blue, top level darkest".to_string(),
        (_, true) => format!(
            "faded: holds none of the {} strongest growers; H: heap-scaled",
            settings.opacity.opaque
        ),
        (_, false) => "H: heap-scaled".to_string(),
    };
    text(&fit(&second, area.w - 16.0, 13.0), x, y + 18.0, 13.0, MUTED);
}

/// The timeline view's heap chart: the strip's chart, larger, with its labels, the picked
/// snapshots marked and the current one in red.
pub fn chart(
    strip: &Strip,
    chart: &Chart,
    model: &memcity_city::model::CityModel,
    metric: Metric,
    index: usize,
    picks: &[usize],
) {
    let area = Area::new(strip.x, strip.y, strip.w, strip.h);
    layout::view_panel("chart", area);
    boxed(area, Color::new(1.0, 1.0, 1.0, 0.9));
    if model.is_empty() {
        return;
    }
    line(chart);
    for (i, p) in chart.points.iter().enumerate() {
        let picked = picks.binary_search(&i).is_ok();
        let r = if picked || i == index { CHART_DOT } else { 3.5 };
        let color = if i == index {
            LIVE_RED
        } else if picked {
            Color::new(1.0, 0.55, 0.0, 1.0)
        } else {
            ACCENT
        };
        draw_circle(p.x, p.y, r, color);
        layout::dot(p.x, p.y, r);
    }
    chart_labels(
        strip,
        model,
        metric,
        Some("click a point to show or hide its tree"),
    );
}

/// The largest dot of the timeline view's chart (a picked snapshot, the current one), which its
/// points keep room for under the labels (`Strip::chart_under_labels`).
pub const CHART_DOT: f32 = 6.0;

/// A heap chart's labels, in the band over its plot (`LABEL_BAND`, which no line or dot
/// enters): on the left the largest total, at the top of the scale, and the time the chart
/// spans; on the right, where it fits, `right` (what the marks mean, or what a click does).
fn chart_labels(
    strip: &Strip,
    model: &memcity_city::model::CityModel,
    metric: Metric,
    right: Option<&str>,
) {
    let len = model.len();
    let max = (0..len)
        .map(|i| model.value(memcity_city::model::ROOT, i, metric))
        .max()
        .unwrap_or(0);
    let seconds = |i: usize| model.frame(i).map_or(0.0, |f| f.time_ms as f64 / 1000.0);
    let mut left = units::amount(max, metric);
    if len > 1 {
        left.push_str(&format!(
            " at most, t={:.1} to {:.1} s",
            seconds(0),
            seconds(len - 1)
        ));
    }
    let baseline = strip.y + LABEL_BAND - 3.0;
    let left = fit(&left, strip.w - 8.0, 12.0);
    let left_end = strip.x + 4.0 + measure_text(&left, None, 12, 1.0).width;
    text(&left, strip.x + 4.0, baseline, 12.0, MUTED);
    if let Some(right) = right {
        let w = measure_text(right, None, 13, 1.0).width;
        let x = strip.x + strip.w - w - 4.0;
        if x > left_end + 16.0 {
            text(right, x, baseline, 13.0, MUTED);
        }
    }
}
