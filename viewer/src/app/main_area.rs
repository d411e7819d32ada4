//! The main area, drawn for the view shown: the city, the grouping tree as an icicle or a
//! sunburst, the lifetimes' hive plot, or the timeline of small trees.

use macroquad::prelude::clear_background;
use memcity_city::model::NodeId;

use super::window::{now, Size};
use crate::caches::Tree;
use crate::controls::{Area, Screen, ViewKind};
use crate::hive_view;
use crate::hud;
use crate::render::{self, Renderer, View};
use crate::state::ViewerState;
use crate::tree_view;
use crate::views;

/// The city, drawn by the renderer; the HUD's camera set after it.
pub(super) fn city(
    state: &mut ViewerState,
    renderer: &Renderer,
    size: Size,
    hovered: Option<NodeId>,
) {
    let (w, h) = size.pixels;
    state.refresh_scene();
    let view = View {
        width: w,
        height: h,
        lift: state.lift(now()),
        hovered,
        revision: state.scene_revision(),
    };
    renderer.draw(state.scene(), &state.camera, view);
    render::hud_camera(size.w, size.h);
}

/// The icicle or the sunburst of the group drilled into, with the whole heap beside it when
/// that is not the top; returns the breadcrumb's steps as drawn, for clicks.
pub(super) fn tree(
    state: &mut ViewerState,
    screen: &Screen,
    size: Size,
    hovered: Option<NodeId>,
    mouse: (f32, f32),
) -> Vec<(NodeId, Area)> {
    let faded = state.settings.opacity.faded;
    clear_background(render::sky());
    render::hud_camera(size.w, size.h);
    let area = views::main_area(screen);
    hud::layout::view_panel("view", area);
    let rect = views::tree_rect(screen);
    // The breadcrumb is the HUD's: a picture without it is the tree alone.
    let crumbs = if screen.hud {
        tree_view::breadcrumb(area, &state.breadcrumb(), mouse)
    } else {
        Vec::new()
    };
    let icicle = state.view == ViewKind::Icicle;
    let (model, partition) = state.tree(Tree::Main);
    if icicle {
        tree_view::icicle(model, partition, rect, faded, hovered, true);
    } else {
        tree_view::sunburst(model, partition, rect, faded, hovered, true);
    }
    if state.drill != memcity_city::model::ROOT {
        let global = views::global_rect(screen);
        let (model, whole) = state.tree(Tree::Global {
            min_span: 0.5 / global.h,
        });
        let frame = Area::new(
            global.x as f32 - 4.0,
            global.y as f32 - 20.0,
            global.w as f32 + 8.0,
            global.h as f32 + 24.0,
        );
        hud::layout::view_panel("whole heap", frame);
        hud::panel(frame);
        hud::text(
            "whole heap",
            frame.x + 4.0,
            frame.y + 14.0,
            13.0,
            hud::MUTED,
        );
        if icicle {
            tree_view::icicle(model, whole, global, 0.2, hovered, false);
        } else {
            tree_view::sunburst(model, whole, global, 0.2, hovered, false);
        }
    }
    crumbs
}

/// The lifetimes' hive plot, the allocation context kept in focus marked, or why there is none;
/// its dots are contexts, not groups, so it picks the one under the pointer itself.
pub(super) fn lifetimes(state: &mut ViewerState, screen: &Screen, size: Size, mouse: (f32, f32)) {
    clear_background(render::sky());
    render::hud_camera(size.w, size.h);
    let area = views::main_area(screen);
    hud::layout::view_panel("view", area);
    let empty = lifetimes_missing(state);
    let over_panel = screen.hit(mouse.0, mouse.1).is_some();
    let kept = state.context.clone();
    let shown = state.lifetimes();
    let layout = views::lifetimes_layout(area, shown.hive.panels.len());
    let hovered = views::hive_pick(&layout, &shown.hive, mouse).filter(|_| !over_panel);
    hive_view::draw(shown, &layout, hovered, kept.as_deref(), empty.as_deref());
    if let Some(node) = hovered {
        hive_view::tooltip(&shown.hive, node, mouse, area);
    }
}

/// Why the lifetimes view has no curve to draw, if it has none.
fn lifetimes_missing(state: &mut ViewerState) -> Option<String> {
    let len = state.len();
    if state.model().lifetimes().is_empty() {
        return Some(format!(
            "No lifetimes: {}.",
            crate::lifetimes::NoLifetimes::NotRecorded(
                len,
                crate::lifetimes::why_not_recorded(state.model())
            )
        ));
    }
    let min = state.min_gc_age;
    state.lifetimes().hive.edges.is_empty().then(|| {
        if min > 0 {
            format!(
                "No sampled object at least {min} GCs old died in this window (, lowers the age)."
            )
        } else {
            "No sampled object died in this window yet.".to_string()
        }
    })
}

/// The timeline: the session's chart, and a small icicle of each picked snapshot and the
/// current one, side by side.
pub(super) fn timeline(state: &mut ViewerState, screen: &Screen, size: Size) {
    let faded = state.settings.opacity.faded;
    clear_background(render::sky());
    render::hud_camera(size.w, size.h);
    let layout = views::timeline_in(screen, &state.picks, state.travel.index());
    let metric = state.settings.metric;
    let chart = layout
        .chart
        .chart_under_labels(state.model(), metric, hud::CHART_DOT);
    hud::chart(
        &layout.chart,
        &chart,
        state.model(),
        metric,
        state.travel.index(),
        &state.picks,
    );
    hud::layout::view_panel("view", views::main_area(screen));
    for &(index, rect) in &layout.trees {
        let mut small = rect;
        small.y += 20.0;
        small.h -= 20.0;
        let time = state.model().frame(index).map_or(0, |f| f.time_ms);
        let current = index == state.travel.index();
        hud::text(
            &format!(
                "{} t={:.1}s{}",
                index + 1,
                time as f64 / 1000.0,
                if current { " (now)" } else { "" }
            ),
            rect.x as f32 + 2.0,
            rect.y as f32 + 14.0,
            15.0,
            if current { hud::LIVE_RED } else { hud::INK },
        );
        let (model, partition) = state.tree(Tree::At {
            t: index as f64,
            scaled: true,
            min_span: 0.5 / small.h,
        });
        tree_view::icicle(model, partition, small, faded, None, false);
    }
}
