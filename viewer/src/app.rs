//! The window behind `memcity replay` (a recording or a Memory Cities JSON export) and
//! `memcity view` (a live agent): one state, one loop; the sources differ only in where
//! snapshots come from. What the viewer shows and how input changes it is in
//! `memcity_viewer::state`; this module reads keys and the mouse, turns them into its actions
//! (what they mean is decided in `keys.rs` and `pointer.rs`) and draws it, in three modes:
//! interactive, `--screenshot` (one frame to a PNG for scripts, docs and tests), and the hidden
//! FPS benchmark.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use macroquad::prelude::{
    clear_background, draw_line, draw_rectangle, draw_rectangle_lines, is_key_down, is_key_pressed,
    is_mouse_button_down, is_mouse_button_pressed, is_mouse_button_released, measure_text,
    mouse_position, mouse_wheel, next_frame, screen_height, screen_width, set_default_camera,
    Color, Conf, MouseButton,
};
use memcity_city::load;
use memcity_city::model::{CityModel, NodeId};
use memcity_city::scene;
use memcity_city::timeline;
use memcity_city::tree2d::{Icicle, Sunburst};

use crate::caches::Tree;
pub use crate::controls::ViewKind;
use crate::controls::{ui_scale, Area, Screen, Settings, HINTS_HEIGHT};
use crate::keys::{self, key_hints, Action, BINDINGS};
use crate::live::{Event, Status};
use crate::pointer::{self, Drag, Effect, Pointer};
pub use crate::state::CameraView;
use crate::state::ViewerState;
use crate::views::{self, LabelWish};

use crate::hive_view;
use crate::hud;
use crate::render::{self, Renderer, View};
use crate::tree_view;

/// Where the city comes from.
pub enum Source {
    /// A whole session, known up front.
    Replay(Box<CityModel>),
    /// A live agent, through the network thread.
    Live(crossbeam_channel::Receiver<Event>),
}

/// Most messages taken from the network per frame, so a backlog cannot stall a frame.
const MESSAGES_PER_FRAME: usize = 2000;

pub struct WindowOptions {
    pub camera: CameraView,
    /// What the main area shows first.
    pub view: ViewKind,
    /// The snapshot to open at, counted from 1 as the status bar counts.
    pub at: Option<usize>,
    pub screenshot: Option<PathBuf>,
    /// Live: leave (after the screenshot, if any) once this many snapshots arrived.
    pub exit_after: Option<usize>,
    /// Live, with a screenshot: how long to wait for those snapshots before giving up.
    pub wait: std::time::Duration,
    /// Start with this structure selected: its key path, names separated by `/`.
    pub select: Option<String>,
    /// Start drilled down into this structure (the 2D views' local root).
    pub drill: Option<String>,
    /// The lifetimes view: start with this allocation context kept in focus.
    pub context: Option<String>,
    /// Metric, scaling, tiling, lots per parent, opacity, colors, play period.
    pub settings: Settings,
    /// Open with the settings panel shown.
    pub settings_open: bool,
    /// The 2D views heap-scaled.
    pub scaled: bool,
    /// The timeline view's picked snapshots, counted from 1.
    pub picks: Vec<usize>,
    /// Screenshots: draw the panels and bars too, as a user sees the window.
    pub hud: bool,
    /// Benchmark: time this many still frames, then as many frames that each step in time, print
    /// the medians and exit.
    pub bench_frames: Option<usize>,
    pub width: u32,
    pub height: u32,
}

/// Loads a recording, or a Memory Cities JSON export when `source` is a directory.
pub fn load_city(source: &Path) -> anyhow::Result<CityModel> {
    Ok(load::session(source)?)
}

/// Whether a window can be opened here; the error says what to do instead.
pub fn check_display() -> anyhow::Result<()> {
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        anyhow::bail!(
            "no display to open a window on (DISPLAY is not set). Run it on a desktop or under `xvfb-run`; \
             without a window, `memcity record` and `memcity report` show the same session as text"
        );
    }
    Ok(())
}

/// The group named by `path` (names from the top level down, separated by `/`; a name may hold
/// `/` itself), or an error that says how to name one.
fn find_group(model: &CityModel, option: &str, path: &str) -> anyhow::Result<NodeId> {
    model.find_str(path).ok_or_else(|| {
        anyhow::anyhow!(
            "{option} {path}: no such group (give its names from the top level down, separated by '/'; \
             `memcity report FILE` lists them)"
        )
    })
}

/// `--context NAME`: an allocation context of the session's lifetimes.
fn find_context(model: &CityModel, name: &str) -> anyhow::Result<()> {
    let filter = memcity_city::lifetimes::Filter::default();
    let contexts = model.lifetimes().allocation_contexts(&filter);
    if contexts.iter().any(|c| c.name == name) {
        return Ok(());
    }
    let mut known: Vec<&str> = contexts.iter().map(|c| c.name.as_str()).take(8).collect();
    if known.is_empty() {
        known.push("none: the session carries no lifetimes (`memcity lifetimes FILE` says why)");
    }
    anyhow::bail!(
        "--context {name}: no allocation context of that name in the session's lifetimes (a class, as `memcity lifetimes FILE` shows them; some: {})",
        known.join(", ")
    )
}

/// `--at N`, counted from 1 as the status bar counts, as an index.
fn at_index(at: usize, len: usize, source: &Path) -> anyhow::Result<usize> {
    if at == 0 || at > len {
        anyhow::bail!(
            "--at {at}: {} holds snapshots 1 to {len} (counted from 1, as the status bar shows)",
            source.display()
        );
    }
    Ok(at - 1)
}

/// Opens a recording or JSON export.
pub fn replay(path: &Path, options: WindowOptions) -> anyhow::Result<()> {
    let model = load_city(path)?;
    for warning in &model.warnings {
        eprintln!("memcity: warning: {warning}");
    }
    if model.is_empty() {
        anyhow::bail!("{} holds no snapshot to show", path.display());
    }
    // Checked before a window opens, so a typo is one clear line, not a flash.
    if let Some(at) = options.at {
        at_index(at, model.len(), path)?;
    }
    for &pick in &options.picks {
        if pick == 0 || pick > model.len() {
            anyhow::bail!(
                "--pick {pick}: {} holds snapshots 1 to {} (counted from 1, as the status bar shows)",
                path.display(),
                model.len()
            );
        }
    }
    if let Some(select) = &options.select {
        find_group(&model, "--select", select)?;
    }
    if let Some(drill) = &options.drill {
        find_group(&model, "--drill", drill)?;
    }
    if let Some(context) = &options.context {
        find_context(&model, context)?;
    }
    check_display()?;
    run(Source::Replay(Box::new(model)), options)
}

/// Follows a live agent.
#[cfg(not(target_arch = "wasm32"))]
pub fn view(
    addr: Option<String>,
    record: Option<PathBuf>,
    options: WindowOptions,
) -> anyhow::Result<()> {
    // A bad address is refused before a window opens (it would retry it forever).
    crate::client::endpoint_uri(addr.as_deref()).map_err(anyhow::Error::msg)?;
    check_display()?;
    let events = crate::live::spawn(addr, record)
        .map_err(|e| anyhow::anyhow!("cannot start the network thread: {e}"))?;
    run(Source::Live(events), options)
}

/// Opens the window (in the browser, the page's canvas) on `source`; returns when it closes.
pub fn run(source: Source, options: WindowOptions) -> anyhow::Result<()> {
    let conf = macroquad::conf::Conf {
        miniquad_conf: Conf {
            window_title: "memcity".to_string(),
            window_width: options.width as i32,
            window_height: options.height as i32,
            window_resizable: options.screenshot.is_none(),
            high_dpi: false,
            sample_count: 1,
            platform: macroquad::miniquad::conf::Platform {
                // In the browser: 32-bit indices (the expanded boxes) are WebGL 2's own.
                webgl_version: macroquad::miniquad::conf::WebGLVersion::WebGL2,
                ..Default::default()
            },
            ..Default::default()
        },
        // Redraw continuously (tweens, play), not only on input.
        update_on: None,
        default_filter_mode: macroquad::prelude::FilterMode::Linear,
        // One draw call must hold a whole mesh batch; macroquad silently cuts past its capacity.
        // (macroquad clamps geometry of `>=` capacity, so leave headroom above a full mesh).
        draw_call_vertex_capacity: crate::render::MESH_VERTICES + 1024,
        draw_call_index_capacity: crate::render::MESH_VERTICES * 3 / 2 + 2048,
    };
    let outcome: Arc<Mutex<Option<anyhow::Error>>> = Arc::default();
    let report = outcome.clone();
    macroquad::Window::from_config(conf, async move {
        if let Err(e) = app(source, options).await {
            *report.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    });
    let error = outcome.lock().unwrap_or_else(|p| p.into_inner()).take();
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The window around the state: input in progress and what the frame drew where.
struct Window {
    state: ViewerState,
    drag: Option<Drag>,
    last_mouse: (f32, f32),
    /// The breadcrumb's steps as last drawn, for clicks.
    crumbs: Vec<(NodeId, Area)>,
}

/// The window's size in pixels, and in the units the HUD and the 2D views are laid out in: they
/// are designed for about 1280x800 and scaled up on larger windows (`ui_scale`), so panels and
/// text keep their share of a 1920x1080 or 4K screen.
#[derive(Debug, Clone, Copy)]
struct Size {
    pixels: (f32, f32),
    scale: f32,
    w: f32,
    h: f32,
}

impl Size {
    fn now() -> Self {
        let pixels = (screen_width(), screen_height());
        let scale = ui_scale(pixels.0, pixels.1);
        Self {
            pixels,
            scale,
            w: pixels.0 / scale,
            h: pixels.1 / scale,
        }
    }

    /// A pixel position in HUD units.
    fn hud(&self, at: (f32, f32)) -> (f32, f32) {
        (at.0 / self.scale, at.1 / self.scale)
    }
}

/// Seconds on the window's clock.
fn now() -> f64 {
    macroquad::time::get_time()
}

impl Window {
    fn screen(&mut self, w: f32, h: f32) -> Screen {
        self.state.screen(w, h)
    }

    /// The group under the pointer (`mouse` in HUD units, `pixel` in the window's) in the
    /// current view; none over a panel.
    fn hovered(
        &mut self,
        screen: &Screen,
        mouse: (f32, f32),
        pixel: (f32, f32),
        size: Size,
    ) -> Option<NodeId> {
        if screen.hit(mouse.0, mouse.1).is_some() {
            return None;
        }
        let (x, y) = (mouse.0 as f64, mouse.1 as f64);
        let rect = views::tree_rect(views::main_area(screen));
        match self.state.view {
            ViewKind::City => {
                let (w, h) = size.pixels;
                let (origin, dir) = self.state.camera.ray(pixel.0, pixel.1, w, h);
                scene::pick(self.state.scene(), origin, dir)
            }
            ViewKind::Icicle => {
                let p = self.state.partition();
                Icicle::new(rect, p).pick(p, x, y)
            }
            ViewKind::Sunburst => {
                let p = self.state.partition();
                Sunburst::new(rect, p).pick(p, x, y)
            }
            // The lifetimes view's dots are contexts, not groups: `draw_view` picks them.
            ViewKind::Timeline | ViewKind::Lifetimes => None,
        }
    }

    /// Keys pressed once are actions; held keys move the city's camera.
    fn keys(&mut self, dt: f32) {
        let t = now();
        for &(key, action, _) in BINDINGS {
            if is_key_pressed(key) {
                self.state.apply(action, t);
            }
        }
        if self.state.view != ViewKind::City {
            return;
        }
        self.state.hold(keys::held(is_key_down), dt);
    }

    /// Mouse: reads the pointer, asks `pointer::frame` what it means (panels first, then the
    /// view: the city drags to orbit, shift-drag or middle-drag to pan, click to select, wheel
    /// to zoom; the 2D views click to select, again to drill down) and does it.
    fn mouse(&mut self, screen: &Screen, mouse: (f32, f32), hovered: Option<NodeId>) {
        let t = now();
        let moved = (mouse.0 - self.last_mouse.0, mouse.1 - self.last_mouse.1);
        self.last_mouse = mouse;
        let pointer = Pointer {
            at: mouse,
            moved,
            pressed: is_mouse_button_pressed(MouseButton::Left),
            released: is_mouse_button_released(MouseButton::Left),
            left: is_mouse_button_down(MouseButton::Left),
            right: is_mouse_button_down(MouseButton::Right),
            middle: is_mouse_button_down(MouseButton::Middle),
            wheel: mouse_wheel().1,
            shift: keys::shift(is_key_down),
            hovered,
        };
        let outcome = pointer::frame(screen, &self.crumbs, &mut self.state, self.drag, &pointer);
        self.drag = outcome.drag;
        for effect in outcome.effects {
            match effect {
                Effect::Apply(action) => self.state.apply(action, t),
                Effect::Camera(change) => change.apply(self.state.take_camera()),
            }
        }
    }

    fn status_line(&self) -> String {
        let s = &self.state;
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

    /// The main area: the city, or a 2D view.
    fn draw_view(
        &mut self,
        renderer: &Renderer,
        screen: &Screen,
        size: Size,
        hovered: Option<NodeId>,
        mouse: (f32, f32),
    ) {
        let (w, h) = size.pixels;
        self.crumbs.clear();
        let faded = self.state.settings.opacity.faded;
        match self.state.view {
            ViewKind::City => {
                self.state.refresh_scene();
                let view = View {
                    width: w,
                    height: h,
                    lift: self.state.lift(now()),
                    hovered,
                    revision: self.state.scene_revision(),
                };
                renderer.draw(self.state.scene(), &self.state.camera, view);
                render::hud_camera(size.w, size.h);
            }
            ViewKind::Icicle | ViewKind::Sunburst => {
                clear_background(render::sky());
                render::hud_camera(size.w, size.h);
                let area = views::main_area(screen);
                let rect = views::tree_rect(area);
                let crumbs = self.state.breadcrumb();
                self.crumbs = tree_view::breadcrumb(area, &crumbs, mouse);
                let icicle = self.state.view == ViewKind::Icicle;
                let (model, partition) = self.state.tree(Tree::Main);
                if icicle {
                    tree_view::icicle(model, partition, rect, faded, hovered, true);
                } else {
                    tree_view::sunburst(model, partition, rect, faded, hovered, true);
                }
                if self.state.drill != memcity_city::model::ROOT {
                    let global = views::global_rect(area);
                    let (model, whole) = self.state.tree(Tree::Global {
                        min_span: 0.5 / global.h,
                    });
                    let frame = Area::new(
                        global.x as f32 - 4.0,
                        global.y as f32 - 20.0,
                        global.w as f32 + 8.0,
                        global.h as f32 + 24.0,
                    );
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
            }
            ViewKind::Lifetimes => {
                clear_background(render::sky());
                render::hud_camera(size.w, size.h);
                let area = views::main_area(screen);
                let empty = self.lifetimes_missing();
                let over_panel = screen.hit(mouse.0, mouse.1).is_some();
                let kept = self.state.context.clone();
                let shown = self.state.lifetimes();
                let layout = views::lifetimes_layout(area, shown.hive.panels.len());
                let hovered = views::hive_pick(&layout, &shown.hive, mouse).filter(|_| !over_panel);
                hive_view::draw(shown, &layout, hovered, kept.as_deref(), empty.as_deref());
                if let Some(node) = hovered {
                    hive_view::tooltip(&shown.hive, node, mouse, area);
                }
            }
            ViewKind::Timeline => {
                clear_background(render::sky());
                render::hud_camera(size.w, size.h);
                let layout =
                    views::timeline_in(screen, &self.state.picks, self.state.travel.index());
                let metric = self.state.settings.metric;
                let chart = layout.chart.chart(self.state.model(), metric);
                hud::chart(
                    &layout.chart,
                    &chart,
                    self.state.model(),
                    metric,
                    self.state.travel.index(),
                    &self.state.picks,
                );
                for &(index, rect) in &layout.trees {
                    let mut small = rect;
                    small.y += 20.0;
                    small.h -= 20.0;
                    let time = self.state.model().frame(index).map_or(0, |f| f.time_ms);
                    let current = index == self.state.travel.index();
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
                    let (model, partition) = self.state.tree(Tree::At {
                        t: index as f64,
                        scaled: true,
                        min_span: 0.5 / small.h,
                    });
                    tree_view::icicle(model, partition, small, faded, None, false);
                }
            }
        }
    }

    /// Why the lifetimes view has no curve to draw, if it has none.
    fn lifetimes_missing(&mut self) -> Option<String> {
        let len = self.state.len();
        if self.state.model().lifetimes().is_empty() {
            return Some(format!(
                "No lifetimes: {}.",
                crate::lifetimes::NoLifetimes::NotRecorded(
                    len,
                    crate::lifetimes::why_not_recorded(self.state.model())
                )
            ));
        }
        let min = self.state.min_gc_age;
        self.state.lifetimes().hive.edges.is_empty().then(|| {
            if min > 0 {
                format!("No sampled object at least {min} GCs old died in this window (, lowers the age).")
            } else {
                "No sampled object died in this window yet.".to_string()
            }
        })
    }

    /// The names of the selection, the tallest buildings and the largest districts, over the
    /// city where they fit.
    fn draw_labels(&self, screen: &Screen, size: Size) {
        let (w, h) = size.pixels;
        let model = self.state.model();
        let mut texts = std::collections::HashMap::new();
        let wishes: Vec<LabelWish> = self
            .state
            .label_points()
            .iter()
            .filter_map(|&(node, point)| {
                let (x, y) = self.state.camera.project(point, w, h)?;
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
            let selected = self.state.selected == Some(node);
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

    /// Everything drawn over the view.
    fn draw_hud(
        &mut self,
        screen: &Screen,
        size: Size,
        mouse: (f32, f32),
        hovered: Option<NodeId>,
    ) {
        if self.state.view == ViewKind::City {
            self.draw_labels(screen, size);
        }
        let len = self.state.len();
        let index = self.state.travel.index();
        let metric = self.state.settings.metric;
        let window = self.state.model().window();
        let chart = screen.strip.chart(self.state.model(), metric);
        let dragging = match self.drag {
            Some(Drag::Timeline(from)) => Some((from, mouse.0)),
            _ => None,
        };
        hud::timeline(screen, &chart, window, index, len, dragging);
        hud::axis(&screen.strip, self.state.model(), metric);
        hud::transport(
            screen,
            mouse,
            self.state.travel.playing,
            self.state.travel.is_live(),
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
        let line = self.status_line();
        hud::text(
            &hud::fit(&line, status.w - 16.0, 18.0),
            8.0,
            status.y + 18.0,
            18.0,
            Color::new(1.0, 1.0, 1.0, 1.0),
        );
        let right = screen.views.first().map_or(screen.gear.x, |v| v.1.x) - 10.0;
        hud::hints(
            &key_hints(self.state.view),
            Area::new(0.0, 0.0, right, 28.0),
        );
        for (i, note) in self.state.notes.iter().enumerate() {
            hud::text(note, 8.0, 46.0 + i as f32 * 18.0, 16.0, hud::LIVE_RED);
        }
        hud::views(screen, self.state.view, mouse);
        if let (Some(d), Some((area, close))) = (self.state.details(), screen.details) {
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
        if let (Some((area, rows)), Some(lines)) =
            (&screen.suspects, self.state.cached_suspect_lines())
        {
            hud::suspects(*area, rows, lines, self.state.selected, mouse);
        }
        hud::settings(screen, &self.state.settings, mouse);
        hud::gear(screen.gear, self.state.settings_open, mouse);
        hud::legend(screen, self.state.view, &self.state.settings);
        if let Some(node) = hovered {
            let text = scene::tooltip(self.state.model(), node, index, metric);
            let (w, h) = (screen.status.w, screen.status.y + screen.status.h);
            let room = (w * 0.6).max(200.0);
            let lines: Vec<String> = text.lines().map(|l| hud::fit(l, room, 17.0)).collect();
            hud::tooltip(&lines, mouse, Area::new(0.0, 0.0, w, h), 17.0);
        }
    }

    /// One whole frame as a user sees it (no input).
    fn draw_frame(&mut self, renderer: &Renderer, hud: bool) {
        let size = Size::now();
        let screen = self.screen(size.w, size.h);
        self.draw_view(renderer, &screen, size, None, (-100.0, -100.0));
        if hud {
            let screen = self.screen(size.w, size.h);
            self.draw_hud(&screen, size, (-100.0, -100.0), None);
        }
        set_default_camera();
    }
}

async fn app(source: Source, mut options: WindowOptions) -> anyhow::Result<()> {
    let renderer = Renderer::new(crate::render::BoxPath::chosen())?;
    let settings = options.settings;
    let (mut state, events) = match source {
        Source::Replay(model) => {
            let at = options.at.map(|at| at.saturating_sub(1));
            (ViewerState::replay(*model, settings, at), None)
        }
        Source::Live(events) => (ViewerState::live(settings), Some(events)),
    };
    state.settings_open = options.settings_open;
    state.view = options.view;
    state.scaled = options.scaled;
    for &pick in &options.picks {
        state.apply(Action::TogglePick(pick.saturating_sub(1)), 0.0);
    }
    if let Some(path) = options.select.take() {
        let node = find_group(state.model(), "--select", &path)?;
        state.apply(Action::Select(Some(node)), f64::NEG_INFINITY);
    }
    if let Some(path) = options.drill.take() {
        let node = find_group(state.model(), "--drill", &path)?;
        state.apply(Action::DrillTo(node), 0.0);
    }
    state.context = options.context.take();
    let mut window = Window {
        state,
        drag: None,
        last_mouse: mouse_position(),
        crumbs: Vec::new(),
    };
    if options.bench_frames.is_some() || options.screenshot.is_some() {
        wait_for_snapshots(&mut window.state, events.as_ref(), &options).await?;
        window.state.settle();
        window.state.frame_camera(options.camera);
        if let Some(n) = options.bench_frames {
            return bench(&renderer, &mut window, n).await;
        }
        if let Some(path) = &options.screenshot {
            return screenshot(&renderer, &mut window, path, options.hud).await;
        }
    }
    interactive(&renderer, &mut window, events.as_ref(), &options).await
}

/// Takes what the network thread has, without waiting for more.
fn take_events(
    state: &mut ViewerState,
    events: Option<&crossbeam_channel::Receiver<Event>>,
) -> anyhow::Result<()> {
    if let Some(events) = events {
        for event in events.try_iter().take(MESSAGES_PER_FRAME) {
            state.take(event)?;
        }
    }
    Ok(())
}

/// For screenshots and benchmarks of a live source: waits (drawing nothing but frames, so the
/// window stays responsive) until the snapshots asked for arrived, or gives up with why.
async fn wait_for_snapshots(
    state: &mut ViewerState,
    events: Option<&crossbeam_channel::Receiver<Event>>,
    options: &WindowOptions,
) -> anyhow::Result<()> {
    let started = now();
    loop {
        take_events(state, events)?;
        let ready = match options.exit_after {
            Some(n) if events.is_some() => state.received >= n,
            _ => !state.is_empty(),
        };
        if ready {
            return Ok(());
        }
        if now() - started > options.wait.as_secs_f64() {
            let why = match &state.status {
                Status::Disconnected { why, .. } => format!(" (last attempt: {why})"),
                Status::Failed(why) | Status::Ended(why) => format!(" ({why})"),
                _ => String::new(),
            };
            anyhow::bail!(
                "no snapshot arrived within {:.0} s{why}: is the JVM running with the agent, and on this address? (`java -agentpath:.../libmemcity.so=port=N`)",
                options.wait.as_secs_f64()
            );
        }
        next_frame().await;
    }
}

/// Writes one frame, as it stands, to a PNG.
async fn screenshot(
    renderer: &Renderer,
    window: &mut Window,
    path: &Path,
    hud: bool,
) -> anyhow::Result<()> {
    // A few frames first, so the window is mapped and sized before the read-back.
    for pass in 0..4 {
        window.draw_frame(renderer, hud);
        if pass == 3 {
            render::screenshot(path).await?;
        } else {
            next_frame().await;
        }
    }
    if window.state.live {
        eprintln!("memcity: received {} snapshots", window.state.received);
    }
    Ok(())
}

async fn interactive(
    renderer: &Renderer,
    window: &mut Window,
    events: Option<&crossbeam_channel::Receiver<Event>>,
    options: &WindowOptions,
) -> anyhow::Result<()> {
    let mut ready_signalled = false;
    let mut latency = Latency::new();
    loop {
        take_events(&mut window.state, events)?;
        if !window.state.is_empty() && !window.state.framed {
            window.state.frame_camera(options.camera);
        }
        if options
            .exit_after
            .is_some_and(|n| window.state.received >= n)
        {
            eprintln!("memcity: received {} snapshots", window.state.received);
            latency.report();
            return Ok(());
        }
        if is_key_pressed(keys::QUIT) {
            return Ok(());
        }
        let size = Size::now();
        let dt = macroquad::time::get_frame_time();
        let screen = window.screen(size.w, size.h);
        let pixel = mouse_position();
        let mouse = size.hud(pixel);
        window.keys(dt);
        // Picking uses last frame's picture: what the pointer is over is what was drawn.
        let hovered = window.hovered(&screen, mouse, pixel, size);
        window.mouse(&screen, mouse, hovered);
        window.state.advance(dt as f64);
        // The panels' layout may have changed with the selection.
        let screen = window.screen(size.w, size.h);
        window.draw_view(renderer, &screen, size, hovered, mouse);
        window.draw_hud(&screen, size, mouse, hovered);
        set_default_camera();
        #[cfg(target_arch = "wasm32")]
        page::drawn(
            window.state.len(),
            window.state.model().handshake.as_ref().map_or(0, |h| h.pid),
            window.state.travel.index(),
            window.state.view,
        );
        if !ready_signalled {
            // Scripts and tests wait for this line before sending input.
            eprintln!("memcity: window ready");
            ready_signalled = true;
        }
        next_frame().await;
        latency.shown(&mut window.state.applied);
    }
}

/// Natively, with `MEMCITY_LATENCY` set (scripts/bench-web.sh): each live snapshot's time from
/// reaching the process to the frame that first showed it, said at `--exit-after`.
struct Latency {
    /// `None` unless asked for (the environment is read once, not every frame).
    ms: Option<Vec<f64>>,
    /// Frames shown, and when the first was.
    frames: usize,
    since: Option<f64>,
}

impl Latency {
    fn new() -> Self {
        #[cfg(not(target_arch = "wasm32"))]
        let asked = std::env::var_os("MEMCITY_LATENCY").is_some();
        #[cfg(target_arch = "wasm32")]
        let asked = false;
        Self {
            ms: asked.then(Vec::new),
            frames: 0,
            since: None,
        }
    }

    /// The frame just shown first showed the snapshots that arrived at `applied`.
    fn shown(&mut self, applied: &mut Vec<std::time::Instant>) {
        self.frames += 1;
        self.since.get_or_insert_with(now);
        if let Some(ms) = self.ms.as_mut() {
            ms.extend(applied.iter().map(|at| at.elapsed().as_secs_f64() * 1e3));
        }
        applied.clear();
    }

    fn report(&self) {
        let Some(mut ms) = self.ms.clone().filter(|ms| !ms.is_empty()) else {
            return;
        };
        ms.sort_by(f64::total_cmp);
        let seconds = self.since.map_or(0.0, |since| now() - since);
        eprintln!(
            "memcity: {} live snapshots from arrival to the first frame showing it: median {:.1} ms, worst {:.1} ms ({:.1} frames a second meanwhile)",
            ms.len(),
            ms[ms.len() / 2],
            ms[ms.len() - 1],
            self.frames as f64 / seconds.max(1e-9)
        );
    }
}

/// The page around the window in the browser (`viewer/web/memcity.js`).
#[cfg(target_arch = "wasm32")]
mod page {
    extern "C" {
        fn memcity_drawn(snapshots: u32, pid: u32, at: u32, view: u32);
        fn memcity_bench(ptr: *const u8, len: usize);
    }

    /// The benchmark's result line (`bench=N` in the page's address), for the page to show.
    pub fn bench(line: &str) {
        // SAFETY: the page's function reads `len` bytes at `ptr` at once, while they are alive.
        unsafe { memcity_bench(line.as_ptr(), line.len()) };
    }

    /// A frame was drawn with `snapshots` in the session of the JVM `pid`, showing snapshot
    /// `at` in `view`: the page's signal that the city is there (tests wait on it as natively
    /// on "window ready"), and what it shows.
    pub fn drawn(snapshots: usize, pid: u32, at: usize, view: super::ViewKind) {
        let view = super::ViewKind::ALL
            .iter()
            .position(|v| *v == view)
            .unwrap_or(0);
        // SAFETY: the page's function takes four numbers and keeps nothing.
        unsafe { memcity_drawn(snapshots as u32, pid, at as u32, view as u32) };
    }
}

/// Times `n` still frames, then `n` frames that each step to the next snapshot (the view's
/// geometry and drawing), in the view asked for, and prints medians.
async fn bench(renderer: &Renderer, window: &mut Window, n: usize) -> anyhow::Result<()> {
    let size = Size::now();
    let (w, h) = size.pixels;
    let len = window.state.len();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let screen = window.screen(size.w, size.h);
    let mut still = Vec::with_capacity(n);
    for _ in 0..n {
        let start = now();
        window.draw_view(renderer, &screen, size, None, (-100.0, -100.0));
        next_frame().await;
        still.push(now() - start);
    }
    let shapes = match window.state.view {
        ViewKind::City => window.state.scene().buildings.len(),
        _ => window.state.partition().cells.len(),
    };
    let mut stepping = Vec::with_capacity(n);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let start = now();
        // Mid-tween times, as a step is drawn: every shape between two sizes. Each frame's time
        // is new, so no cached partition of an earlier frame answers it.
        let t = (i % len.max(2).saturating_sub(1)) as f64 + 0.25 + 0.5 * i as f64 / n as f64;
        window.state.travel.hold_at(t, len);
        match window.state.view {
            ViewKind::City => window.state.refresh_scene(),
            _ => {
                window.state.partition();
            }
        }
        steps.push(now() - start);
        window.draw_view(renderer, &screen, size, None, (-100.0, -100.0));
        next_frame().await;
        stepping.push(now() - start);
    }
    let (still, stepping, step) = (median(still), median(stepping), median(steps));
    let what = match window.state.view {
        ViewKind::City => "buildings".to_string(),
        // Cells thinner than 1/10,000 of the heap (under a twentieth of a pixel) are not drawn.
        view => format!(
            "{} cells (of a {}-group tree)",
            view.label(),
            window.state.model().nodes().len() - 1
        ),
    };
    let line = format!(
        "{shapes} {what} at {w}x{h}: {:.1} FPS still ({:.1} ms/frame), {:.1} FPS while stepping in time ({:.1} ms/frame; the step itself {:.2} ms)",
        1.0 / still,
        still * 1e3,
        1.0 / stepping,
        stepping * 1e3,
        step * 1e3
    );
    #[cfg(target_arch = "wasm32")]
    page::bench(&line);
    #[cfg(not(target_arch = "wasm32"))]
    println!("{line}");
    Ok(())
}
