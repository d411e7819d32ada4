//! The details panel of the selected group: a row by row painting of what
//! `controls::details_rows` placed, and the sparkline of its history.

use macroquad::prelude::{draw_line, draw_rectangle, measure_text, Color};
use memcity_city::details::{Accuracy, Details, Sites};
use memcity_city::model::{Metric, Role, Window};
use memcity_city::units;

use super::{
    boxed, button_face, fit, fit_left, panel, text, text_within, ACCENT, HOVER, INK, LINK,
    LIVE_RED, MUTED, WINDOW_TINT,
};
use crate::controls::{Area, DetailsRow, RowKind, SITES_HINT};

/// Where a row's text goes: its area in the panel, the text's left edge, baseline and width.
#[derive(Clone, Copy)]
struct Line {
    area: Area,
    x: f32,
    base: f32,
    width: f32,
}

/// The details panel of the selected group (rows placed by `controls::details_rows`; a click on
/// a reference line is `controls::link_at`).
#[allow(
    clippy::too_many_arguments,
    reason = "the panel, its content and the frame's snapshot, window, metric and pointer, as the overlay holds them"
)]
pub fn details(
    area: Area,
    close: Area,
    d: &Details,
    accuracy: &Accuracy,
    rows: &[DetailsRow],
    index: usize,
    window: Window,
    metric: Metric,
    mouse: (f32, f32),
) {
    super::layout::panel("details", area);
    panel(area);
    button_face(close, close.contains(mouse.0, mouse.1), false);
    let (cx, cy) = close.center();
    draw_line(cx - 5.0, cy - 5.0, cx + 5.0, cy + 5.0, 2.0, INK);
    draw_line(cx - 5.0, cy + 5.0, cx + 5.0, cy - 5.0, 2.0, INK);
    let x = area.x + 10.0;
    let width = area.w - 20.0;
    for row in rows {
        let Some(line) = row.area(area) else {
            break; // the window is too short for the rest
        };
        let top = line.y;
        // Text baselines sit near the bottom of their row.
        let base = top + row.height - 5.0;
        let at = Line {
            area: line,
            x,
            base,
            width,
        };
        match row.kind {
            RowKind::Title => title(d, at),
            RowKind::Path => path(d, at),
            RowKind::Numbers => {
                text_within(&accuracy.numbers(d), x, base, width, &[17.0, 15.0], INK)
            }
            RowKind::Unconfirmed => {
                if let Some(line) = units::unconfirmed_line(d.unconfirmed.0, d.unconfirmed.1) {
                    text_within(&line, x, base, width, &[15.0, 13.0], MUTED)
                }
            }
            RowKind::Growth => growth(d, window, metric, at),
            RowKind::Sparkline => sparkline(
                Area::new(x, top + 3.0, width, row.height - 6.0),
                &d.series,
                index,
                window,
                metric,
            ),
            RowKind::SitesHeading => sites_heading(d, at),
            RowKind::NoSites => text("none sampled here", x + 8.0, base, 15.0, MUTED),
            RowKind::Site(i) => site(d, i, at),
            RowKind::SitesHint(i) => text(SITES_HINT[i], x + 8.0, base, 15.0, MUTED),
            RowKind::IncomingHeading => text_within(
                &accuracy.incoming_heading(),
                x,
                base,
                width,
                &[16.0, 15.0],
                ACCENT,
            ),
            RowKind::OutgoingHeading => text_within(
                &accuracy.outgoing_heading(),
                x,
                base,
                width,
                &[16.0, 15.0],
                ACCENT,
            ),
            RowKind::TraceHeading => trace_heading(d, at),
            RowKind::TraceStep(i) => trace_step(d, i, at, mouse),
            RowKind::Incoming(i) => reference(&d.incoming[i], at, mouse),
            RowKind::Outgoing(i) => reference(&d.outgoing[i], at, mouse),
        }
    }
}

/// The group's name. A type keeps the end that tells it apart; a site reads as
/// Class.method:line (its whole frame is in the sites list below).
fn title(d: &Details, at: Line) {
    let Line { x, base, width, .. } = at;
    let title = if d.role == Role::Type {
        fit_left(&d.name, width - 26.0, 20.0)
    } else {
        fit(&crate::names::short_site(&d.name), width - 26.0, 20.0)
    };
    text(&title, x, base, 20.0, INK)
}

/// Where the group sits: its path from the top of the grouping.
fn path(d: &Details, at: Line) {
    let Line { x, base, width, .. } = at;
    let path = if d.path.is_empty() {
        "the whole heap".to_string()
    } else {
        d.path.join(" > ")
    };
    text(&fit(&path, width, 15.0), x, base, 15.0, MUTED);
}

/// The group's growth over the window, red when it rose.
fn growth(d: &Details, window: Window, metric: Metric, at: Line) {
    let Line { x, base, width, .. } = at;
    let growth = units::signed_amount(d.growth, metric);
    let estimated = if d.estimated { " (estimated)" } else { "" };
    let color = if d.growth > 0 { LIVE_RED } else { INK };
    let line = format!(
        "growth {growth} since snapshot {}{estimated}",
        window.start + 1
    );
    text(&fit(&line, width, 16.0), x, base, 16.0, color);
}

/// The allocation sites' heading, saying whether they are estimated.
fn sites_heading(d: &Details, at: Line) {
    let Line { x, base, .. } = at;
    let title = match d.sites {
        Sites::Listed {
            estimated: true, ..
        } => "Top allocation sites (estimated from samples)",
        Sites::Listed { .. } => "Top allocation sites",
        _ => "Allocation sites",
    };
    text(title, x, base, 16.0, ACCENT);
}

/// The `i`-th listed allocation site and its share.
fn site(d: &Details, i: usize, at: Line) {
    let Line { x, base, width, .. } = at;
    if let Sites::Listed { sites, of, .. } = &d.sites {
        let (name, value) = &sites[i];
        let share = *value as f64 * 100.0 / (*of).max(1) as f64;
        text(&format!("{share:>3.0}%"), x + 4.0, base, 15.0, INK);
        text(&fit(name, width - 48.0, 15.0), x + 44.0, base, 15.0, INK);
    }
}

/// The leak suspect's heading: its root, its confidence, whether it is confirmed.
fn trace_heading(d: &Details, at: Line) {
    let Line { x, base, width, .. } = at;
    if let Some(trace) = &d.trace {
        let root = if trace.root.is_empty() {
            "no root found".to_string()
        } else {
            trace.root.clone()
        };
        let unconfirmed = if trace.confirmed { "" } else { ", unconfirmed" };
        let line = format!(
            "Leak suspect: held by {root} ({}{unconfirmed})",
            trace.confidence
        );
        text_within(&line, x, base, width, &[16.0, 15.0, 14.0], LIVE_RED);
    }
}

/// Step `i` of the leak suspect's trace: a link where its group is in the city, the suspect
/// reference in red, its growth at the right.
fn trace_step(d: &Details, i: usize, at: Line, mouse: (f32, f32)) {
    let Line {
        area: line,
        x,
        base,
        width,
    } = at;
    if let Some(step) = d.trace.as_ref().and_then(|t| t.steps.get(i)) {
        if step.node.is_some() && line.contains(mouse.0, mouse.1) {
            draw_rectangle(line.x, line.y, line.w, line.h, HOVER);
        }
        let indent = if step.content { 18.0 } else { 4.0 };
        let arrow = if step.suspect { "~>" } else { "->" };
        let color = if step.suspect {
            LIVE_RED
        } else if step.node.is_some() {
            LINK
        } else {
            INK
        };
        text(arrow, x + indent, base, 15.0, color);
        text(
            &fit(&step.label, width - indent - 100.0, 15.0),
            x + indent + 20.0,
            base,
            15.0,
            color,
        );
        let growth = units::signed_amount(step.growth, Metric::Objects);
        let gw = measure_text(&growth, None, 15, 1.0).width;
        text(&growth, x + width - gw - 4.0, base, 15.0, INK);
    }
}

/// A reference into or out of the group: a link where the group at its other end is in the
/// city, its referrers at the right.
fn reference(link: &memcity_city::details::Link, at: Line, mouse: (f32, f32)) {
    let Line {
        area: line,
        x,
        base,
        width,
    } = at;
    if link.node.is_some() && line.contains(mouse.0, mouse.1) {
        draw_rectangle(line.x, line.y, line.w, line.h, HOVER);
    }
    let color = if link.node.is_some() { LINK } else { INK };
    text(
        &fit(&link.name, width - 110.0, 15.0),
        x + 4.0,
        base,
        15.0,
        color,
    );
    let count = units::count(link.referrers);
    let cw = measure_text(&count, None, 15, 1.0).width;
    text(&count, x + width - cw - 4.0, base, 15.0, INK);
}

/// A small chart of `series` with the window shaded and snapshot `index` marked.
pub fn sparkline(area: Area, series: &[u64], index: usize, window: Window, metric: Metric) {
    boxed(area, Color::new(0.96, 0.97, 1.0, 1.0));
    let n = series.len();
    if n == 0 {
        return;
    }
    let x_of = |i: usize| {
        if n <= 1 {
            area.x + area.w / 2.0
        } else {
            area.x + 2.0 + (area.w - 4.0) * i as f32 / (n - 1) as f32
        }
    };
    let (w0, w1) = (x_of(window.start.min(n - 1)), x_of(window.end.min(n - 1)));
    draw_rectangle(w0, area.y, (w1 - w0).max(2.0), area.h, WINDOW_TINT);
    let max = series.iter().copied().max().unwrap_or(0).max(1) as f32;
    let y_of = |v: u64| area.y + area.h - 3.0 - (area.h - 6.0) * v as f32 / max;
    for i in 1..n {
        draw_line(
            x_of(i - 1),
            y_of(series[i - 1]),
            x_of(i),
            y_of(series[i]),
            2.0,
            ACCENT,
        );
    }
    let cx = x_of(index.min(n - 1));
    draw_line(cx, area.y, cx, area.y + area.h, 1.5, LIVE_RED);
    let label = units::amount(series[index.min(n - 1)], metric);
    text(&label, area.x + 4.0, area.y + 14.0, 14.0, MUTED);
}
