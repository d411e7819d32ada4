//! `memcity replay`: a recording or a Memory Cities JSON export in a window, or one frame of it
//! written to a PNG (`--screenshot`) for scripts, docs and the window test.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use macroquad::prelude::{
    draw_rectangle, draw_text, is_key_pressed, is_mouse_button_down, is_mouse_button_pressed,
    mouse_position, mouse_wheel, next_frame, screen_height, screen_width, Color, Conf, KeyCode,
    MouseButton,
};
use memcity_city::camera::OrbitCamera;
use memcity_city::layout::{self, LayoutConfig};
use memcity_city::load;
use memcity_city::model::CityModel;
use memcity_city::scene::{self, ViewSettings};
use memcity_city::timetravel::TimeTravel;

use crate::render::{self, Renderer};

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

pub struct ReplayOptions {
    pub camera: CameraView,
    pub source: PathBuf,
    pub at: Option<usize>,
    pub screenshot: Option<PathBuf>,
    pub width: u32,
    pub height: u32,
}

/// Loads a recording, or a Memory Cities JSON export when `source` is a directory.
pub fn load_city(source: &Path) -> anyhow::Result<(CityModel, Vec<String>)> {
    if source.is_dir() {
        Ok((load::memory_cities_json(source)?, Vec::new()))
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

pub fn run(options: ReplayOptions) -> anyhow::Result<()> {
    let (model, warnings) = load_city(&options.source)?;
    for warning in &warnings {
        eprintln!("memcity: warning: {warning}");
    }
    if model.is_empty() {
        anyhow::bail!("{} holds no snapshot to show", options.source.display());
    }
    if let Some(at) = options.at {
        if at >= model.len() {
            anyhow::bail!(
                "--at {at} is past the end: {} holds snapshots 0 to {}",
                options.source.display(),
                model.len() - 1
            );
        }
    }
    check_display()?;
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
        draw_call_vertex_capacity: crate::render::MESH_VERTICES,
        draw_call_index_capacity: crate::render::MESH_VERTICES * 3 / 2,
    };
    let outcome: Arc<Mutex<Option<anyhow::Error>>> = Arc::default();
    let report = outcome.clone();
    macroquad::Window::from_config(conf, async move {
        if let Err(e) = app(model, options).await {
            *report.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    });
    let error = outcome.lock().unwrap_or_else(|p| p.into_inner()).take();
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn app(model: CityModel, options: ReplayOptions) -> anyhow::Result<()> {
    let renderer = Renderer::new()?;
    let config = LayoutConfig::default();
    let city = layout::layout(&model, &config);
    let mut view = ViewSettings::default();
    let mut travel = TimeTravel::new();
    travel.jump(options.at.unwrap_or(model.len() - 1), model.len());
    travel.tick(60.0, model.len()); // arrive at once: no tween into the first frame
    let first = scene::build(&model, &city, travel.t(), &view, None);
    let tallest = first.tallest() as f32;
    let mut camera = initial_camera(options.camera, config.size as f32, tallest);
    let mut selected = None;

    if let Some(path) = &options.screenshot {
        let scene = first;
        // The first frame after the window opens may not be presented yet: draw twice.
        for _ in 0..2 {
            renderer.draw(&scene, &camera, screen_width(), screen_height());
            next_frame().await;
        }
        renderer.draw(&scene, &camera, screen_width(), screen_height());
        return render::screenshot(path).await;
    }

    let mut last_mouse = mouse_position();
    loop {
        let len = model.len();
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
        if is_key_pressed(KeyCode::B) {
            camera = OrbitCamera::birds_eye(config.size as f32, tallest);
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
        travel.tick(macroquad::time::get_frame_time() as f64, len);

        let (w, h) = (screen_width(), screen_height());
        let frame = scene::build(&model, &city, travel.t(), &view, selected);
        renderer.draw(&frame, &camera, w, h);
        let (origin, dir) = camera.ray(mouse.0, mouse.1, w, h);
        let hovered = scene::pick(&frame, origin, dir);
        if is_mouse_button_pressed(MouseButton::Left) {
            selected = hovered;
        }
        let index = travel.index();
        let time = model.frame(index).map_or(0, |f| f.time_ms);
        let status = format!(
            "snapshot {}/{}  t={:.1}s  {}   arrows: step  space: play  B: bird's eye  R: references  right-drag: orbit  wheel: zoom",
            index + 1,
            len,
            time as f64 / 1000.0,
            if travel.playing { "playing" } else { "paused" }
        );
        draw_rectangle(0.0, h - 26.0, w, 26.0, Color::new(0.1, 0.12, 0.18, 0.85));
        draw_text(&status, 8.0, h - 8.0, 18.0, Color::new(1.0, 1.0, 1.0, 1.0));
        if let Some(node) = hovered {
            let text = scene::tooltip(&model, node, index, view.metric);
            for (i, line) in text.lines().enumerate() {
                draw_text(
                    line,
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
