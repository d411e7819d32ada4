//! What the window draws over the view: the city's labels, the timeline strip and its
//! transport, the status bar, the key hints, the panels (details, suspects, settings) and the
//! tooltip.

use macroquad::prelude::{draw_line, draw_rectangle, draw_rectangle_lines, measure_text, Color};
use memcity_city::model::NodeId;
use memcity_city::scene;

use super::window::Size;
use crate::controls::{Area, Screen, ViewKind, HINTS_HEIGHT};
use crate::hud;
use crate::keys::key_hints;
use crate::pointer::Drag;
use crate::render;
use crate::state::ViewerState;
use crate::status_bar;
use crate::views::{self, LabelWish};

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
        hud::layout::panel("label", area);
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

/// The status bar and its line, said shorter by its parts' ranks where the room is short.
fn status_line(state: &ViewerState, screen: &Screen) {
    let status = screen.status;
    hud::layout::panel("status", status);
    draw_rectangle(
        status.x,
        status.y,
        status.w,
        status.h,
        Color::new(0.1, 0.12, 0.18, 0.85),
    );
    // The room the page's own bar leaves (`Screen::status_text`), less a margin each side.
    let room = screen.status_text().w - 16.0;
    let fits = |line: &str| measure_text(line, None, 18, 1.0).width <= room;
    let line = status_bar::line(&status_bar::parts(state), fits);
    hud::text(
        &hud::fit(&line, room, 18.0),
        8.0,
        status.y + 18.0,
        18.0,
        Color::new(1.0, 1.0, 1.0, 1.0),
    );
}

/// The session's notes (warnings), in red under the hints, in a panel of their own.
fn notes(notes: &[String]) {
    if !notes.is_empty() {
        let widest = notes
            .iter()
            .map(|n| measure_text(n, None, 16, 1.0).width)
            .fold(0.0, f32::max);
        hud::layout::panel(
            "notes",
            Area::new(0.0, 32.0, widest + 16.0, notes.len() as f32 * 18.0 + 18.0),
        );
    }
    for (i, note) in notes.iter().enumerate() {
        hud::text(note, 8.0, 46.0 + i as f32 * 18.0, 16.0, hud::LIVE_RED);
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
    hud::timeline(
        screen,
        &chart,
        state.model(),
        metric,
        window,
        index,
        dragging,
    );
    hud::transport(
        screen,
        mouse,
        state.travel.playing,
        state.travel.is_live(),
        index,
        len,
    );
    status_line(state, screen);
    let right = screen.views.first().map_or(screen.gear.x, |v| v.1.x) - 10.0;
    hud::hints(&key_hints(state.view), Area::new(0.0, 0.0, right, 28.0));
    notes(&state.notes);
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
        let city = state.view == ViewKind::City;
        hud::suspects(*area, rows, lines, state.selected, mouse, city);
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
