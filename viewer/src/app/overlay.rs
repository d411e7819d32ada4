//! What the window draws over the view: the city's labels, the timeline strip and its
//! transport, the status bar, the key hints, the panels (details, suspects, settings) and the
//! tooltip.

use macroquad::prelude::{draw_line, draw_rectangle, draw_rectangle_lines, measure_text, Color};
use memcity_city::model::NodeId;
use memcity_city::scene;
use memcity_city::timeline;

use super::window::Size;
use crate::controls::{Area, Screen, ViewKind, HINTS_HEIGHT};
use crate::hud;
use crate::keys::key_hints;
use crate::live::Status;
use crate::pointer::Drag;
use crate::render;
use crate::state::ViewerState;
use crate::views::{self, LabelWish};

/// The status bar's line: the connection, the snapshot shown and what it rests on, the growth
/// window, and what the view leaves out or the live session counts.
fn status_line(s: &ViewerState) -> String {
    let len = s.len();
    let index = s.travel.index();
    let time = s.model().frame(index).map_or(0, |f| f.time_ms);
    let connection = match &s.status {
        Status::Connecting => "connecting...".to_string(),
        Status::Live if s.travel.is_live() => "LIVE (following the newest snapshot)".into(),
        Status::Live => "live session, viewing the past (L returns to live)".to_string(),
        Status::Disconnected { retry_in, why } => format!(
            "disconnected ({why}); retrying in {:.1} s",
            retry_in.as_secs_f64()
        ),
        Status::Ended(why) if s.live => {
            format!("session ended ({why}); the city stays for replay")
        }
        Status::Ended(_) => "replay".to_string(),
        Status::Failed(why) => why.clone(),
    };
    // What the snapshot rests on comes early: a long line is cut at its end.
    let basis = timeline::basis(s.model(), index)
        .map(|b| format!(" | {}", b.label()))
        .unwrap_or_default();
    let mut line = format!(
        "{connection} | snapshot {}/{} t={:.1}s{basis}{}",
        if len == 0 { 0 } else { index + 1 },
        len,
        time as f64 / 1000.0,
        if s.travel.playing {
            format!(" | playing, {} s per snapshot", s.travel.period)
        } else {
            String::new()
        }
    );
    let window = s.model().window();
    if len > 1 {
        line.push_str(&format!(
            " | growth from snapshot {} to {}",
            window.start + 1,
            window.end + 1
        ));
    }
    if s.view == ViewKind::Lifetimes {
        let filter = s.lifetimes_filter();
        let model = s.model();
        line.push_str(&format!(
            " | deaths booked from t={:.1}s to t={:.1}s, at least {} GCs old (, . change)",
            filter.from_ms as f64 / 1000.0,
            filter
                .to_ms
                .min(model.frames().last().map_or(0, |f| f.time_ms)) as f64
                / 1000.0,
            filter.min_gc_age
        ));
    }
    if s.view == ViewKind::City && s.scene().hidden > 0 {
        line.push_str(&format!(" | {} small groups hidden", s.scene().hidden));
    }
    if s.live {
        line.push_str(&format!(
            " | received {}, dropped {} | agent stop {:.0} ms, {:.2}% of wall time",
            s.received,
            s.dropped,
            s.last_pause_ms,
            s.overhead * 100.0
        ));
    }
    line
}

/// The names of the selection, the tallest buildings and the largest districts, over the
/// city where they fit.
fn labels(state: &ViewerState, screen: &Screen, size: Size) {
    let (w, h) = size.pixels;
    let model = state.model();
    let mut texts = std::collections::HashMap::new();
    let wishes: Vec<LabelWish> = state
        .label_points()
        .iter()
        .filter_map(|&(node, point)| {
            let (x, y) = state.camera.project(point, w, h)?;
            let text = hud::fit(&crate::names::label(model, node), 240.0, 15.0);
            let width = measure_text(&text, None, 15, 1.0).width + 12.0;
            texts.insert(node, text);
            Some(LabelWish {
                node,
                anchor: (x / size.scale, y / size.scale),
                width,
            })
        })
        .collect();
    let bounds = Area::new(0.0, HINTS_HEIGHT, size.w, screen.strip.y - HINTS_HEIGHT);
    for (node, area, anchor) in views::place_labels(&wishes, bounds, screen) {
        let selected = state.selected == Some(node);
        let edge = if selected {
            let c = render::SELECTED;
            Color::new(c[0], c[1], c[2], 1.0)
        } else {
            hud::EDGE
        };
        // The leader leaves the label's edge nearest its anchor.
        let cx = area.x + area.w / 2.0;
        let edge_y = if area.y > anchor.1 {
            area.y
        } else {
            area.y + area.h
        };
        // It stops short of the roof, which stays visible (and pickable) under it.
        let (dx, dy) = (anchor.0 - cx, anchor.1 - edge_y);
        let length = (dx * dx + dy * dy).sqrt().max(1.0);
        let stop = ((length - 5.0) / length).max(0.0);
        draw_line(cx, edge_y, cx + dx * stop, edge_y + dy * stop, 1.5, edge);
        draw_rectangle(
            area.x,
            area.y,
            area.w,
            area.h,
            Color::new(1.0, 1.0, 1.0, 0.9),
        );
        draw_rectangle_lines(
            area.x,
            area.y,
            area.w,
            area.h,
            if selected { 2.0 } else { 1.0 },
            edge,
        );
        if let Some(text) = texts.get(&node) {
            hud::text(text, area.x + 6.0, area.y + 15.0, 15.0, hud::INK);
        }
    }
}

/// Everything drawn over the view: the labels over the city, the timeline strip, the status
/// bar, the hints and notes, the panels, the tooltip.
pub(super) fn draw(
    state: &ViewerState,
    drag: Option<Drag>,
    screen: &Screen,
    size: Size,
    mouse: (f32, f32),
    hovered: Option<NodeId>,
) {
    if state.view == ViewKind::City {
        labels(state, screen, size);
    }
    let len = state.len();
    let index = state.travel.index();
    let metric = state.settings.metric;
    let window = state.model().window();
    let chart = screen.strip.chart(state.model(), metric);
    let dragging = match drag {
        Some(Drag::Timeline(from)) => Some((from, mouse.0)),
        _ => None,
    };
    hud::timeline(screen, &chart, window, index, len, dragging);
    hud::axis(&screen.strip, state.model(), metric);
    hud::transport(
        screen,
        mouse,
        state.travel.playing,
        state.travel.is_live(),
        index,
        len,
    );
    let status = screen.status;
    draw_rectangle(
        status.x,
        status.y,
        status.w,
        status.h,
        Color::new(0.1, 0.12, 0.18, 0.85),
    );
    let line = status_line(state);
    hud::text(
        &hud::fit(&line, status.w - 16.0, 18.0),
        8.0,
        status.y + 18.0,
        18.0,
        Color::new(1.0, 1.0, 1.0, 1.0),
    );
    let right = screen.views.first().map_or(screen.gear.x, |v| v.1.x) - 10.0;
    hud::hints(&key_hints(state.view), Area::new(0.0, 0.0, right, 28.0));
    for (i, note) in state.notes.iter().enumerate() {
        hud::text(note, 8.0, 46.0 + i as f32 * 18.0, 16.0, hud::LIVE_RED);
    }
    hud::views(screen, state.view, mouse);
    if let (Some(d), Some((area, close))) = (state.details(), screen.details) {
        hud::details(
            area,
            close,
            &d.details,
            &d.accuracy,
            &d.rows,
            index,
            window,
            metric,
            mouse,
        );
    }
    if let (Some((area, rows)), Some(lines)) = (&screen.suspects, state.cached_suspect_lines()) {
        hud::suspects(*area, rows, lines, state.selected, mouse);
    }
    hud::settings(screen, &state.settings, mouse);
    hud::gear(screen.gear, state.settings_open, mouse);
    hud::legend(screen, state.view, &state.settings);
    if let Some(node) = hovered {
        let text = scene::tooltip(state.model(), node, index, metric);
        let (w, h) = (screen.status.w, screen.status.y + screen.status.h);
        let room = (w * 0.6).max(200.0);
        let lines: Vec<String> = text.lines().map(|l| hud::fit(l, room, 17.0)).collect();
        hud::tooltip(&lines, mouse, Area::new(0.0, 0.0, w, h), 17.0);
    }
}
