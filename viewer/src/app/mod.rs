//! The window behind `memcity replay` (a recording or a Memory Cities JSON export) and
//! `memcity view` (a live agent): one state, one loop; the sources differ only in where
//! snapshots come from. What the viewer shows and how input changes it is in
//! `memcity_viewer::state`; this module checks what the command asked for and opens the
//! window; `window.rs` reads keys and the mouse, turns them into the state's actions (what
//! they mean is decided in `keys.rs` and `pointer.rs`) and draws the frame (`main_area.rs`,
//! then `overlay.rs`), in three modes (`modes.rs`): interactive, `--screenshot` (one frame to a
//! PNG for scripts, docs and tests), and the hidden FPS benchmark.

mod main_area;
mod modes;
mod overlay;
mod window;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use macroquad::prelude::{mouse_position, Conf};
use memcity_city::load;
use memcity_city::model::{CityModel, NodeId};

use crate::controls::Settings;
pub use crate::controls::ViewKind;
use crate::keys::Action;
use crate::live::Event;
use crate::render::Renderer;
pub use crate::state::CameraView;
use crate::state::ViewerState;

use window::Window;

/// Where the city comes from.
pub enum Source {
    /// A whole session, known up front.
    Replay(Box<CityModel>),
    /// A live agent, through the network thread.
    Live(crossbeam_channel::Receiver<Event>),
}

pub struct WindowOptions {
    pub camera: CameraView,
    /// Heap dumps: the grouping chain asked for (`--group-by`); `None` the default.
    pub group_by: Option<Vec<memcity_dump::Level>>,
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
    /// Hand each frame's layout to the page (the page's `layout=1`; the window writes it where
    /// `MEMCITY_LAYOUT` says instead): measuring every text and writing it out is work no
    /// user's frame should pay for.
    pub page_layout: bool,
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
    let model = memcity_city::load::session_grouped(path, options.group_by.as_deref())?;
    replay_model(path, model, options)
}

/// Opens `model`, loaded from `path` (a series of heap dumps given one by one is loaded by the
/// caller).
pub fn replay_model(path: &Path, model: CityModel, options: WindowOptions) -> anyhow::Result<()> {
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
    if options.settings.metric == memcity_city::model::Metric::Retained && !model.has_retained() {
        anyhow::bail!(
            "--metric retained: {} carries no retained sizes (only heap dumps do: .hprof, .hprof.gz); size by objects or bytes",
            path.display()
        );
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

/// Sets the state up as the options say, then runs the mode they ask for.
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
        layouts: window::Layouts::new(options.page_layout),
    };
    if options.bench_frames.is_some() || options.screenshot.is_some() {
        modes::wait_for_snapshots(&mut window.state, events.as_ref(), &options).await?;
        window.state.settle();
        window.state.frame_camera(options.camera);
        if let Some(n) = options.bench_frames {
            return modes::bench(&renderer, &mut window, n).await;
        }
        if let Some(path) = &options.screenshot {
            // Without the panels, the view has the whole picture.
            window.state.hud = options.hud;
            return modes::screenshot(&renderer, &mut window, path, options.hud).await;
        }
    }
    modes::interactive(&renderer, &mut window, events.as_ref(), &options).await
}
