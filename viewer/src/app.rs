//! The window app behind `memcity replay` (a recording or a Memory Cities JSON export) and
//! `memcity view` (a live agent): one model, one loop; the sources differ only in where
//! snapshots come from. `--screenshot` writes one frame to a PNG for scripts, docs and tests.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use macroquad::prelude::{
    draw_line, draw_rectangle, draw_text, is_key_pressed, is_mouse_button_down,
    is_mouse_button_pressed, is_mouse_button_released, mouse_position, mouse_wheel, next_frame,
    screen_height, screen_width, Color, Conf, KeyCode, MouseButton,
};
use memcity_city::camera::OrbitCamera;
use memcity_city::layout::{self, CityLayout, LayoutConfig, LiveLayout, Relayout};
use memcity_city::load;
use memcity_city::model::CityModel;
use memcity_city::scene::{self, ViewSettings};
use memcity_city::timeline::Strip;
use memcity_city::timetravel::TimeTravel;

use memcity_proto::v1::stream_message::Kind;
use memcity_viewer::live::{Event, Status};

use crate::render::{self, Renderer};

/// Where the city comes from.
pub enum Source {
    /// A whole session, known up front.
    Replay(Box<CityModel>),
    /// A live agent, through the network thread.
    Live(crossbeam_channel::Receiver<Event>),
}

/// Seconds a re-layout takes on screen.
const RELAYOUT_SECONDS: f64 = 0.8;
/// Most messages taken from the network per frame, so a backlog cannot stall a frame.
const MESSAGES_PER_FRAME: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CameraView {
    /// From the south-east, above the city
    Overview,
    /// From straight above
    BirdsEye,
}

/// The camera a replay opens with (the window test computes pixels with the same one).
pub fn initial_camera(view: CameraView, size: f32, tallest: f32) -> OrbitCamera {
    match view {
        CameraView::Overview => OrbitCamera::framing(size, tallest),
        CameraView::BirdsEye => OrbitCamera::birds_eye(size, tallest),
    }
}

pub struct WindowOptions {
    pub camera: CameraView,
    pub at: Option<usize>,
    pub screenshot: Option<PathBuf>,
    /// Live: leave (after the screenshot, if any) once this many snapshots arrived.
    pub exit_after: Option<usize>,
    /// Start with this structure selected: its key path, names separated by `/`.
    pub select: Option<String>,
    /// Lots per parent: the N largest children get one (the rest are counted as hidden).
    pub children: usize,
    /// Benchmark: time this many still frames, then as many frames that each step in time, print
    /// the medians and exit.
    pub bench_frames: Option<usize>,
    pub width: u32,
    pub height: u32,
}

/// Loads a recording, or a Memory Cities JSON export when `source` is a directory.
pub fn load_city(source: &Path) -> anyhow::Result<CityModel> {
    if source.is_dir() {
        Ok(load::memory_cities_json(source)?)
    } else {
        Ok(load::recording(source)?)
    }
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

/// Opens a recording or JSON export.
pub fn replay(path: &Path, options: WindowOptions) -> anyhow::Result<()> {
    let model = load_city(path)?;
    for warning in &model.warnings {
        eprintln!("memcity: warning: {warning}");
    }
    if model.is_empty() {
        anyhow::bail!("{} holds no snapshot to show", path.display());
    }
    if let Some(at) = options.at {
        if at >= model.len() {
            anyhow::bail!(
                "--at {at} is past the end: {} holds snapshots 0 to {}",
                path.display(),
                model.len() - 1
            );
        }
    }
    check_display()?;
    run(Source::Replay(Box::new(model)), options)
}

/// Follows a live agent.
pub fn view(
    addr: Option<String>,
    record: Option<PathBuf>,
    options: WindowOptions,
) -> anyhow::Result<()> {
    check_display()?;
    let events = memcity_viewer::live::spawn(addr, record)
        .map_err(|e| anyhow::anyhow!("cannot start the network thread: {e}"))?;
    run(Source::Live(events), options)
}

fn run(source: Source, options: WindowOptions) -> anyhow::Result<()> {
    let conf = macroquad::conf::Conf {
        miniquad_conf: Conf {
            window_title: "memcity".to_string(),
            window_width: options.width as i32,
            window_height: options.height as i32,
            window_resizable: options.screenshot.is_none(),
            high_dpi: false,
            sample_count: 1,
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

/// The city being shown, and how it is laid out.
struct City {
    model: CityModel,
    /// Replay: the papers' static plan. Live: the stable live plan.
    plan: Plan,
}

enum Plan {
    Static(CityLayout),
    Live {
        live: Box<LiveLayout>,
        animation: Option<(Relayout, f64)>,
    },
}

impl City {
    /// The plan to draw now: borrowed, except mid-animation, when the in-between plan is built
    /// (each frame draws from it, so the still case must not copy every lot).
    fn layout(&self) -> Cow<'_, CityLayout> {
        match &self.plan {
            Plan::Static(layout) => Cow::Borrowed(layout),
            Plan::Live { live, animation } => match animation {
                Some((relayout, progress)) => Cow::Owned(relayout.at(*progress)),
                None => Cow::Borrowed(live.layout()),
            },
        }
    }
}

async fn app(source: Source, options: WindowOptions) -> anyhow::Result<()> {
    let renderer = Renderer::new()?;
    let config = LayoutConfig {
        children_per_parent: options.children.max(1),
        ..Default::default()
    };
    let mut view = ViewSettings::default();
    let mut travel = TimeTravel::new();
    let (mut city, events) = match source {
        Source::Replay(model) => {
            let model = *model;
            let plan = Plan::Static(layout::layout(&model, &config));
            travel.jump(options.at.unwrap_or(model.len() - 1), model.len());
            travel.tick(60.0, model.len()); // arrive at once: no tween into the first frame
            (City { model, plan }, None)
        }
        Source::Live(events) => {
            let plan = Plan::Live {
                live: Box::new(LiveLayout::new(config)),
                animation: None,
            };
            (
                City {
                    model: CityModel::new(),
                    plan,
                },
                Some(events),
            )
        }
    };
    let mut status = if events.is_some() {
        Status::Connecting
    } else {
        Status::Ended("replay".into())
    };
    let mut received = 0usize;
    let mut dropped = 0u64;
    let mut last_pause_ms = 0.0;
    let mut overhead = 0.0;
    let mut notes: Vec<String> = Vec::new();
    let mut camera = initial_camera(options.camera, config.size as f32, 0.0);
    let mut framed = false;
    let mut selected = None;
    if let Some(path) = &options.select {
        let names: Vec<&str> = path.split('/').collect();
        selected = city.model.find(&names);
        if selected.is_none() {
            return Err(anyhow::anyhow!("--select {path}: no such group (give its names from the top level down, separated by '/')"));
        }
    }
    let mut last_mouse = mouse_position();
    // Where a drag on the timeline started, and the last click there (for double clicks).
    let mut timeline_drag: Option<f32> = None;
    let mut last_timeline_click = -1.0f64;
    loop {
        // Take what the network thread has, without waiting for more.
        if let Some(events) = &events {
            let mut appended = false;
            for event in events.try_iter().take(MESSAGES_PER_FRAME) {
                match event {
                    Event::Status(s) => {
                        if let Status::Failed(why) = &s {
                            return Err(anyhow::anyhow!("{why}"));
                        }
                        status = s;
                    }
                    Event::Session => {
                        city.model = CityModel::new();
                        city.plan = Plan::Live {
                            live: Box::new(LiveLayout::new(config)),
                            animation: None,
                        };
                        travel = TimeTravel::new();
                        received = 0;
                    }
                    Event::RecordingFailed(why) => notes.push(why),
                    Event::Message(message) => {
                        match &message.kind {
                            Some(Kind::Snapshot(s)) => {
                                received += 1;
                                appended = true;
                                if let Some(cost) = &s.cost {
                                    last_pause_ms = cost.pause_ns as f64 / 1e6;
                                    overhead =
                                        cost.total_pause_ns as f64 / cost.wall_ns.max(1) as f64;
                                }
                            }
                            Some(Kind::Notice(n)) => dropped += n.dropped_snapshots,
                            _ => {}
                        }
                        // The network thread already refused another protocol version.
                        city.model.apply(&message)?;
                    }
                }
            }
            if appended {
                let len = city.model.len();
                let now = city.model.frame(len - 1).map_or(0, |f| f.time_ms);
                if let Plan::Live { live, animation } = &mut city.plan {
                    if let Some(change) = live.update(&city.model, now) {
                        *animation = Some((change, 0.0));
                    }
                }
                travel.on_append(len);
            }
        }
        let len = city.model.len();
        if len > 0 && !framed {
            let first = scene::build(&city.model, &city.layout(), (len - 1) as f64, &view, None);
            camera = initial_camera(options.camera, config.size as f32, first.tallest() as f32);
            framed = true;
        }

        if let (Some(n), true) = (options.bench_frames, len > 0) {
            return bench(&renderer, &city, &view, &camera, n, len).await;
        }
        if let Some(path) = &options.screenshot {
            let ready = match options.exit_after {
                Some(n) => received >= n,
                None => len > 0,
            };
            if ready {
                if let Plan::Live { animation, .. } = &mut city.plan {
                    *animation = None;
                }
                travel.tick(60.0, len);
                let frame = scene::build(&city.model, &city.layout(), travel.t(), &view, selected);
                let tallest = frame.tallest() as f32;
                camera = initial_camera(options.camera, config.size as f32, tallest);
                for _ in 0..2 {
                    renderer.draw(&frame, &camera, screen_width(), screen_height(), 0.0);
                    next_frame().await;
                }
                renderer.draw(&frame, &camera, screen_width(), screen_height(), 0.0);
                render::screenshot(path).await?;
                if events.is_some() {
                    eprintln!("memcity: received {received} snapshots");
                }
                return Ok(());
            }
        } else if options.exit_after.is_some_and(|n| received >= n) {
            eprintln!("memcity: received {received} snapshots");
            return Ok(());
        }

        if is_key_pressed(KeyCode::Escape) || is_key_pressed(KeyCode::Q) {
            return Ok(());
        }
        if is_key_pressed(KeyCode::Right) {
            travel.step_forward(len);
        }
        if is_key_pressed(KeyCode::Left) {
            travel.step_back(len);
        }
        if is_key_pressed(KeyCode::Space) {
            travel.toggle_play(len);
        }
        if is_key_pressed(KeyCode::Home) {
            travel.jump(0, len);
        }
        if is_key_pressed(KeyCode::End) || is_key_pressed(KeyCode::L) {
            travel.follow_live(len);
        }
        if is_key_pressed(KeyCode::R) {
            view.references = !view.references;
        }
        let mouse = mouse_position();
        let (dx, dy) = (mouse.0 - last_mouse.0, mouse.1 - last_mouse.1);
        last_mouse = mouse;
        if is_mouse_button_down(MouseButton::Right) {
            camera.orbit(dx * 0.005, dy * 0.005);
        }
        if is_mouse_button_down(MouseButton::Middle) {
            camera.pan(-dx * camera.distance / 800.0, dy * camera.distance / 800.0);
        }
        let wheel = mouse_wheel().1;
        if wheel != 0.0 {
            camera.zoom(if wheel > 0.0 { 0.9 } else { 1.1 });
        }
        let dt = macroquad::time::get_frame_time() as f64;
        travel.tick(dt, len);
        if let Plan::Live { animation, .. } = &mut city.plan {
            if let Some((_, progress)) = animation {
                *progress += dt / RELAYOUT_SECONDS;
                if *progress >= 1.0 {
                    *animation = None;
                }
            }
        }

        let (w, h) = (screen_width(), screen_height());
        let plan = city.layout();
        let frame = scene::build(&city.model, &plan, travel.t(), &view, selected);
        if is_key_pressed(KeyCode::B) {
            camera = OrbitCamera::birds_eye(config.size as f32, frame.tallest() as f32);
        }
        renderer.draw(&frame, &camera, w, h, 0.0);
        // The heap timeline: click to jump, drag to choose the growth window, double-click to
        // reset the window to the whole session.
        let strip = Strip {
            x: 10.0,
            y: h - 26.0 - 58.0,
            w: w - 20.0,
            h: 50.0,
        };
        let on_strip = strip.contains(mouse.0, mouse.1);
        if is_mouse_button_pressed(MouseButton::Left) && on_strip && len > 0 {
            let now = macroquad::time::get_time();
            if now - last_timeline_click < 0.35 {
                city.model.set_window(None);
            }
            last_timeline_click = now;
            timeline_drag = Some(mouse.0);
            travel.jump(strip.index_at(mouse.0, len), len);
        }
        if let Some(from) = timeline_drag {
            if is_mouse_button_released(MouseButton::Left) {
                timeline_drag = None;
                if (mouse.0 - from).abs() > 6.0 {
                    city.model
                        .set_window(Some(strip.window_between(from, mouse.0, len)));
                }
            }
        }
        let (origin, dir) = camera.ray(mouse.0, mouse.1, w, h);
        let hovered = if on_strip {
            None
        } else {
            scene::pick(&frame, origin, dir)
        };
        if is_mouse_button_pressed(MouseButton::Left) && !on_strip {
            selected = hovered;
        }
        let index = travel.index();
        let time = city.model.frame(index).map_or(0, |f| f.time_ms);
        let connection = match &status {
            Status::Connecting => "connecting...".to_string(),
            Status::Live if travel.is_live() => "LIVE (following the newest snapshot)".to_string(),
            Status::Live => "live session, viewing the past (L returns to live)".to_string(),
            Status::Disconnected { retry_in, why } => format!(
                "disconnected ({why}); retrying in {:.1} s",
                retry_in.as_secs_f64()
            ),
            Status::Ended(why) if events.is_some() => {
                format!("session ended ({why}); the city stays for replay")
            }
            Status::Ended(_) => "replay".to_string(),
            Status::Failed(why) => why.clone(),
        };
        let mut line = format!(
            "{connection} | snapshot {}/{} t={:.1}s {}",
            if len == 0 { 0 } else { index + 1 },
            len,
            time as f64 / 1000.0,
            if travel.playing { "playing" } else { "" }
        );
        if events.is_some() {
            line.push_str(&format!(
                " | received {received}, dropped {dropped} | agent stop {last_pause_ms:.0} ms, {:.2}% of wall time",
                overhead * 100.0
            ));
        }
        if len > 0 {
            draw_rectangle(
                strip.x,
                strip.y,
                strip.w,
                strip.h,
                Color::new(1.0, 1.0, 1.0, 0.75),
            );
            let window = city.model.window();
            let (wx0, wx1) = (strip.x_of(window.start, len), strip.x_of(window.end, len));
            draw_rectangle(
                wx0,
                strip.y,
                (wx1 - wx0).max(2.0),
                strip.h,
                Color::new(1.0, 0.55, 0.0, 0.18),
            );
            let points = strip.points(&city.model, view.metric);
            for pair in points.windows(2) {
                draw_line(
                    pair[0].0,
                    pair[0].1,
                    pair[1].0,
                    pair[1].1,
                    2.0,
                    Color::new(0.1, 0.25, 0.6, 1.0),
                );
            }
            let cx = strip.x_of(index, len);
            draw_line(
                cx,
                strip.y,
                cx,
                strip.y + strip.h,
                2.0,
                Color::new(0.86, 0.08, 0.06, 1.0),
            );
            if let Some(from) = timeline_drag {
                draw_rectangle(
                    from.min(mouse.0),
                    strip.y,
                    (mouse.0 - from).abs(),
                    strip.h,
                    Color::new(1.0, 0.55, 0.0, 0.25),
                );
            }
        }
        draw_rectangle(0.0, h - 26.0, w, 26.0, Color::new(0.1, 0.12, 0.18, 0.85));
        draw_text(&line, 8.0, h - 8.0, 18.0, Color::new(1.0, 1.0, 1.0, 1.0));
        draw_text(
            "arrows: step  space: play  L: live  B: bird's eye  R: references  right-drag: orbit  middle-drag: pan  wheel: zoom  click: select",
            8.0,
            18.0,
            16.0,
            Color::new(0.15, 0.15, 0.2, 1.0),
        );
        for (i, note) in notes.iter().enumerate() {
            draw_text(
                note,
                8.0,
                38.0 + i as f32 * 18.0,
                16.0,
                Color::new(0.7, 0.1, 0.1, 1.0),
            );
        }
        if let Some(node) = hovered {
            let text = scene::tooltip(&city.model, node, index, view.metric);
            for (i, text_line) in text.lines().enumerate() {
                draw_text(
                    text_line,
                    mouse.0 + 14.0,
                    mouse.1 + 18.0 + i as f32 * 18.0,
                    18.0,
                    Color::new(0.05, 0.05, 0.1, 1.0),
                );
            }
        }
        next_frame().await;
    }
}

/// Times `n` still frames, then `n` frames that each step to the next snapshot (scene, geometry
/// and drawing), and prints medians.
async fn bench(
    renderer: &Renderer,
    city: &City,
    view: &ViewSettings,
    camera: &OrbitCamera,
    n: usize,
    len: usize,
) -> anyhow::Result<()> {
    let plan = city.layout();
    let (w, h) = (screen_width(), screen_height());
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let buildings = scene::build(&city.model, &plan, (len - 1) as f64, view, None)
        .buildings
        .len();
    let mut still = Vec::with_capacity(n);
    let frame = scene::build(&city.model, &plan, (len - 1) as f64, view, None);
    for _ in 0..n {
        let start = std::time::Instant::now();
        renderer.draw(&frame, camera, w, h, 0.0);
        next_frame().await;
        still.push(start.elapsed().as_secs_f64());
    }
    let mut stepping = Vec::with_capacity(n);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let start = std::time::Instant::now();
        let frame = scene::build(&city.model, &plan, (i % len) as f64, view, None);
        steps.push(start.elapsed().as_secs_f64());
        renderer.draw(&frame, camera, w, h, 0.0);
        next_frame().await;
        stepping.push(start.elapsed().as_secs_f64());
    }
    let (still, stepping, step) = (median(still), median(stepping), median(steps));
    println!(
        "{buildings} buildings at {w}x{h}: {:.1} FPS still ({:.1} ms/frame), {:.1} FPS while stepping in time ({:.1} ms/frame; the step itself {:.2} ms)",
        1.0 / still,
        still * 1e3,
        1.0 / stepping,
        stepping * 1e3,
        step * 1e3
    );
    Ok(())
}
