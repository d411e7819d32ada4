//! The window app behind `memcity replay` (a recording or a Memory Cities JSON export) and
//! `memcity view` (a live agent): one model, one loop; the sources differ only in where
//! snapshots come from. `--screenshot` writes one frame to a PNG for scripts, docs and tests.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use macroquad::prelude::{
    draw_rectangle, is_key_down, is_key_pressed, is_mouse_button_down, is_mouse_button_pressed,
    is_mouse_button_released, measure_text, mouse_position, mouse_wheel, next_frame, screen_height,
    screen_width, Color, Conf, KeyCode, MouseButton,
};
use memcity_city::camera::OrbitCamera;
use memcity_city::details::{self, Accuracy, Details};
use memcity_city::layout::{self, CityLayout, LayoutConfig, LiveLayout, Relayout};
use memcity_city::load;
use memcity_city::model::{CityModel, Metric, NodeId};
use memcity_city::scene::{self, Scene, ViewSettings};
use memcity_city::timeline;
use memcity_city::timetravel::TimeTravel;

use memcity_proto::v1::stream_message::Kind;
use memcity_viewer::controls::{
    details_rows, link_at, slider_index, Change, DetailsRow, Hit, Screen, Setting, Settings,
    Transport,
};
use memcity_viewer::live::{Event, Status};

use crate::hud;
use crate::render::{self, Renderer, View};

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
    /// Live, with a screenshot: how long to wait for those snapshots before giving up.
    pub wait: std::time::Duration,
    /// Start with this structure selected: its key path, names separated by `/`.
    pub select: Option<String>,
    /// Metric, scaling, tiling, lots per parent, opacity, colors, play period.
    pub settings: Settings,
    /// Open with the settings panel shown.
    pub settings_open: bool,
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

fn no_such_group(path: &str) -> String {
    format!(
        "--select {path}: no such group (give its names from the top level down, separated by '/'; \
         `memcity report FILE` lists them)"
    )
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
    if let Some(path) = &options.select {
        // Checked before a window opens, so a typo is one clear line, not a flash.
        let names: Vec<&str> = path.split('/').collect();
        if model.find(&names).is_none() {
            anyhow::bail!("{}", no_such_group(path));
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
    // A bad address is refused before a window opens (it would retry it forever).
    memcity_viewer::client::endpoint_uri(addr.as_deref()).map_err(anyhow::Error::msg)?;
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
    /// Live sessions: the stable live plan. Replays: `None`, and `layout` is the papers' plan.
    live: Option<Box<LiveLayout>>,
    layout: CityLayout,
    /// A change of plan being animated: the change and how far along it is (0 to 1).
    animation: Option<(Relayout, f64)>,
}

impl City {
    fn replay(model: CityModel, config: &LayoutConfig) -> Self {
        let layout = layout::layout(&model, config);
        Self {
            model,
            live: None,
            layout,
            animation: None,
        }
    }

    fn live(config: LayoutConfig) -> Self {
        Self {
            model: CityModel::new(),
            live: Some(Box::new(LiveLayout::new(config))),
            layout: CityLayout::default(),
            animation: None,
        }
    }

    /// The plan to draw now: borrowed, except mid-animation, when the in-between plan is built.
    fn plan(&self) -> Cow<'_, CityLayout> {
        match (&self.animation, &self.live) {
            (Some((relayout, progress)), _) => Cow::Owned(relayout.at(*progress)),
            (None, Some(live)) => Cow::Borrowed(live.layout()),
            (None, None) => Cow::Borrowed(&self.layout),
        }
    }

    fn now_ms(&self) -> u64 {
        self.model.frames().last().map_or(0, |f| f.time_ms)
    }

    /// Lays out again for new layout settings, animating from the plan on screen.
    fn relayout(&mut self, config: LayoutConfig) {
        let now = self.now_ms();
        let on_screen = self.plan().into_owned();
        let mut change = match &mut self.live {
            Some(live) => live.set_config(&self.model, config, now),
            None => {
                let new = layout::layout(&self.model, &config);
                let old = std::mem::replace(&mut self.layout, new.clone());
                Relayout { old, new }
            }
        };
        // Start from where things are drawn, even if a previous animation was under way.
        change.old = on_screen;
        self.animation = Some((change, 0.0));
    }

    /// A snapshot arrived: the live plan may need to grow.
    fn appended(&mut self) {
        let now = self.now_ms();
        if let Some(live) = &mut self.live {
            if let Some(change) = live.update(&self.model, now) {
                self.animation = Some((change, 0.0));
            }
        }
    }

    fn advance(&mut self, dt: f64) {
        if let Some((_, progress)) = &mut self.animation {
            *progress += dt / RELAYOUT_SECONDS;
            if *progress >= 1.0 {
                self.animation = None;
            }
        }
    }
}

/// What a scene depends on: the scene is rebuilt only when one of these changes, so a still city
/// costs no scene work per frame.
#[derive(Debug, Clone, PartialEq)]
struct SceneKey {
    t: f64,
    len: usize,
    window: memcity_city::model::Window,
    view: ViewSettings,
    selected: Option<NodeId>,
    plan: u64,
    animation: Option<f64>,
}

/// The window's leak suspects, computed once per session length and window for the list and
/// the details panel alike (the search scans every type over the window: not per frame).
struct SuspectsCache {
    key: (usize, memcity_city::model::Window),
    all: Vec<memcity_city::suspects::Suspect>,
    lines: Vec<SuspectLine>,
}

/// One line of the leak-suspects list.
pub struct SuspectLine {
    pub text: String,
    /// The growing type's node, to select when the line is clicked.
    pub node: Option<NodeId>,
}

/// A type's name without its package, for a one-line list (`java.util.LinkedList$Node` ->
/// `LinkedList$Node`).
fn short_type(name: &str) -> &str {
    let base = name.split('[').next().unwrap_or(name);
    match base.rfind('.') {
        Some(dot) => &name[dot + 1..],
        None => name,
    }
}

/// Seconds a camera flight takes (`B`, `C`, following a reference).
const FLIGHT_SECONDS: f32 = 0.6;
/// Seconds the selected building's jump takes.
const JUMP_SECONDS: f64 = 0.45;
/// Camera speeds for the keyboard: radians and city sizes per second.
const KEY_ORBIT: f32 = 1.4;
const KEY_PAN: f32 = 0.6;

/// A drag in progress, by what it started on.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Drag {
    /// On the city: orbit (or pan with shift); a press without movement selects.
    City {
        from: (f32, f32),
        moved: bool,
    },
    Slider,
    /// On the timeline strip, from this pixel column.
    Timeline(f32),
}

struct Viewer {
    settings: Settings,
    references: bool,
    city: City,
    travel: TimeTravel,
    camera: OrbitCamera,
    /// A camera flight under way: from, to, progress (0 to 1).
    flight: Option<(OrbitCamera, OrbitCamera, f32)>,
    /// Camera targets still to visit on a tour along a leak trace (`F`), next last.
    tour: Vec<glam::Vec3>,
    framed: bool,
    selected: Option<NodeId>,
    /// When the selection changed (for its jump).
    selected_at: f64,
    settings_open: bool,
    status: Status,
    received: usize,
    dropped: u64,
    last_pause_ms: f64,
    overhead: f64,
    notes: Vec<String>,
    drag: Option<Drag>,
    last_mouse: (f32, f32),
    last_timeline_click: f64,
    /// Bumped whenever the plan changes outside an animation (a new session, a new model).
    plan_version: u64,
    scene: Scene,
    scene_key: Option<SceneKey>,
    details: Option<DetailsPanel>,
    /// The window's leak suspects as listed, and the session length and window they are of
    /// (recomputed when those change, not every frame).
    suspects: Option<SuspectsCache>,
}

type DetailsKey = (NodeId, usize, Metric, memcity_city::model::Window, usize);

/// The selected group's details as the panel shows them, and what they were computed for.
struct DetailsPanel {
    key: DetailsKey,
    details: Details,
    accuracy: Accuracy,
    rows: Vec<DetailsRow>,
    /// The panel's height with every row.
    height: f32,
}

impl Viewer {
    fn view_settings(&self) -> ViewSettings {
        self.settings.view(self.references)
    }

    /// The selected group's details (recomputed when the selection, time, metric or window
    /// change), and the panel height they want.
    fn refresh_details(&mut self) -> Option<f32> {
        let Some(node) = self.selected else {
            self.details = None;
            return None;
        };
        let key = (
            node,
            self.travel.index(),
            self.settings.metric,
            self.city.model.window(),
            self.city.model.len(),
        );
        if self.details.as_ref().map(|d| &d.key) != Some(&key) {
            self.refresh_suspects();
            let suspects = self.suspects.as_ref().map_or(&[][..], |c| &c.all);
            let d = details::details(&self.city.model, node, key.1, key.2, suspects);
            let accuracy = details::accuracy(&self.city.model, node, key.1);
            let (rows, height) = details_rows(&d);
            self.details = Some(DetailsPanel {
                key,
                details: d,
                accuracy,
                rows,
                height,
            });
        }
        self.details.as_ref().map(|d| d.height)
    }

    /// The group a click on the details panel would follow.
    fn link_at(&self, screen: &Screen, mouse: (f32, f32)) -> Option<NodeId> {
        let (panel, _) = screen.details?;
        let d = self.details.as_ref()?;
        link_at(panel, &d.rows, &d.details, mouse.0, mouse.1)
    }

    fn screen(&mut self, w: f32, h: f32) -> Screen {
        let details = self.refresh_details();
        let suspects = self.refresh_suspects().len();
        Screen::new(w, h, self.settings_open, details).with_suspects(suspects)
    }

    /// The leak suspects of the window, one line each (recomputed when the session or the
    /// window changed).
    fn refresh_suspects(&mut self) -> &[SuspectLine] {
        let key = (self.city.model.len(), self.city.model.window());
        if self.suspects.as_ref().map(|c| c.key) != Some(key) {
            let model = &self.city.model;
            let all = memcity_city::suspects::suspects(model);
            let lines = all
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let leaking = s.leaking.first().cloned().unwrap_or_default();
                    let root = if s.root.is_empty() {
                        "root unknown"
                    } else {
                        s.root.as_str()
                    };
                    SuspectLine {
                        text: format!(
                            "{}. {} <- {} <- {} ({})",
                            i + 1,
                            short_type(&leaking),
                            short_type(&s.holder),
                            root,
                            s.confidence.label()
                        ),
                        node: details::node_named(model, &leaking),
                    }
                })
                .collect();
            self.suspects = Some(SuspectsCache { key, all, lines });
        }
        self.suspects.as_ref().map_or(&[], |c| &c.lines)
    }

    /// The scene at the current time, rebuilt only when something it depends on changed.
    fn refresh_scene(&mut self) {
        let key = SceneKey {
            t: self.travel.t(),
            len: self.city.model.len(),
            window: self.city.model.window(),
            view: self.view_settings(),
            selected: self.selected,
            plan: self.plan_version,
            animation: self.city.animation.as_ref().map(|a| a.1),
        };
        if self.scene_key.as_ref() != Some(&key) {
            self.scene = scene::build(
                &self.city.model,
                &self.city.plan(),
                key.t,
                &key.view,
                key.selected,
            );
            // The selection's leak-suspect trace, drawn through the city.
            self.refresh_details();
            let steps: Option<Vec<(String, bool, bool)>> = self
                .details
                .as_ref()
                .and_then(|d| d.details.trace.as_ref())
                .map(|t| {
                    t.steps
                        .iter()
                        .map(|s| (s.type_name.clone(), s.suspect, s.holder))
                        .collect()
                });
            self.scene.trace =
                steps.map(|steps| scene::trace(&self.city.model, &self.scene, &steps));
            self.scene_key = Some(key);
        }
    }

    fn fly_to(&mut self, to: OrbitCamera) {
        self.flight = Some((self.camera, to, 0.0));
    }

    fn advance_flight(&mut self, dt: f32) {
        if let Some((from, to, progress)) = &mut self.flight {
            *progress = (*progress + dt / FLIGHT_SECONDS).min(1.0);
            self.camera = from.toward(to, *progress);
            if *progress >= 1.0 {
                self.flight = None;
            }
        }
        // A tour flies on to its next stop once a flight lands.
        if self.flight.is_none() {
            if let Some(stop) = self.tour.pop() {
                let mut to = self.camera;
                to.target = stop;
                self.fly_to(to);
            }
        }
    }

    /// Flies the camera along the selection's leak trace, from the symptom up to the root (the
    /// Memory Cities paper's future-work animation).
    fn tour_trace(&mut self) {
        if let Some(trace) = &self.scene.trace {
            // Popped from the end: the root's stop goes first in the list, so it comes last.
            self.tour = trace.stops.clone();
        }
    }

    /// Follows a reference to `node`: selects it and turns the camera toward it, so the next
    /// link of the chain is in view.
    fn follow(&mut self, node: NodeId) {
        self.select(Some(node));
        let center = self
            .scene
            .buildings
            .iter()
            .find(|b| b.node == node)
            .map(|b| b.bounds())
            .or_else(|| {
                self.scene
                    .districts
                    .iter()
                    .find(|d| d.node == node)
                    .map(|d| d.bounds())
            });
        if let Some((min, max)) = center {
            let mut to = self.camera;
            to.target = glam::Vec3::new((min.x + max.x) / 2.0, max.y * 0.3, (min.z + max.z) / 2.0);
            self.fly_to(to);
        }
    }

    /// Selects the next leak suspect's growing type and flies to it: its details panel shows
    /// the trace from the GC root, each step a link.
    fn next_suspect(&mut self) {
        let nodes: Vec<NodeId> = self
            .refresh_suspects()
            .iter()
            .filter_map(|l| l.node)
            .collect();
        if nodes.is_empty() {
            return;
        }
        // After the selected suspect, or the first.
        let next = self
            .selected
            .and_then(|sel| nodes.iter().position(|&n| n == sel))
            .map_or(0, |i| (i + 1) % nodes.len());
        self.follow(nodes[next]);
    }

    fn select(&mut self, node: Option<NodeId>) {
        if node != self.selected {
            self.selected_at = macroquad::time::get_time();
        }
        self.selected = node;
    }

    /// How high the selected building is lifted now: a short hop after it is picked.
    fn lift(&self) -> f32 {
        let Some(node) = self.selected else {
            return 0.0;
        };
        let p = (macroquad::time::get_time() - self.selected_at) / JUMP_SECONDS;
        if !(0.0..1.0).contains(&p) {
            return 0.0;
        }
        let height = self
            .scene
            .buildings
            .iter()
            .find(|b| b.node == node)
            .map_or(0.0, |b| b.shape.height);
        ((p * std::f64::consts::PI).sin() * (height * 0.35).max(12.0)) as f32
    }

    fn apply_setting(&mut self, setting: Setting, dir: i32) {
        match setting.adjust(&mut self.settings, dir) {
            Some(Change::Layout) => self.city.relayout(self.settings.layout_config()),
            Some(Change::Period) => self.travel.period = self.settings.period,
            Some(Change::View) | None => {}
        }
    }

    fn transport(&mut self, t: Transport) {
        let len = self.city.model.len();
        match t {
            Transport::First => self.travel.jump(0, len),
            Transport::Back => self.travel.step_back(len),
            Transport::Play => self.travel.toggle_play(len),
            Transport::Forward => self.travel.step_forward(len),
            Transport::Live => self.travel.follow_live(len),
            Transport::Slower => self.apply_setting(Setting::Period, 1),
            Transport::Faster => self.apply_setting(Setting::Period, -1),
        }
    }

    /// Takes what the network thread has, without waiting for more.
    fn take_events(&mut self, events: &crossbeam_channel::Receiver<Event>) -> anyhow::Result<()> {
        let mut appended = false;
        for event in events.try_iter().take(MESSAGES_PER_FRAME) {
            match event {
                Event::Status(s) => {
                    if let Status::Failed(why) = &s {
                        anyhow::bail!("{why}");
                    }
                    self.status = s;
                }
                Event::Session => {
                    self.city = City::live(self.settings.layout_config());
                    self.travel = TimeTravel::new();
                    self.travel.period = self.settings.period;
                    self.received = 0;
                    self.selected = None;
                    self.plan_version += 1;
                }
                Event::RecordingFailed(why) => self.notes.push(why),
                Event::Message(message) => {
                    match &message.kind {
                        Some(Kind::Snapshot(s)) => {
                            self.received += 1;
                            appended = true;
                            if let Some(cost) = &s.cost {
                                self.last_pause_ms = cost.pause_ns as f64 / 1e6;
                                self.overhead =
                                    cost.total_pause_ns as f64 / cost.wall_ns.max(1) as f64;
                            }
                        }
                        Some(Kind::Notice(n)) => self.dropped += n.dropped_snapshots,
                        _ => {}
                    }
                    // The network thread already refused another protocol version.
                    self.city.model.apply(&message)?;
                }
            }
        }
        if appended {
            self.city.appended();
            self.travel.on_append(self.city.model.len());
        }
        Ok(())
    }

    /// Keyboard: time travel, toggles, and the camera (held keys move it smoothly).
    fn keys(&mut self, dt: f32) {
        let len = self.city.model.len();
        let pressed = is_key_pressed;
        if pressed(KeyCode::Right) {
            self.travel.step_forward(len);
        }
        if pressed(KeyCode::Left) {
            self.travel.step_back(len);
        }
        if pressed(KeyCode::Space) {
            self.travel.toggle_play(len);
        }
        if pressed(KeyCode::Home) {
            self.travel.jump(0, len);
        }
        if pressed(KeyCode::End) || pressed(KeyCode::L) {
            self.travel.follow_live(len);
        }
        if pressed(KeyCode::R) {
            self.references = !self.references;
        }
        if pressed(KeyCode::Tab) {
            self.settings_open = !self.settings_open;
        }
        if pressed(KeyCode::N) {
            self.next_suspect();
        }
        if pressed(KeyCode::F) {
            self.tour_trace();
        }
        if pressed(KeyCode::M) {
            self.apply_setting(Setting::Metric, 1);
        }
        if pressed(KeyCode::LeftBracket) {
            self.apply_setting(Setting::Period, 1);
        }
        if pressed(KeyCode::RightBracket) {
            self.apply_setting(Setting::Period, -1);
        }
        if pressed(KeyCode::B) {
            self.fly_to(OrbitCamera::birds_eye(
                CITY_SIZE,
                self.scene.tallest() as f32,
            ));
        }
        if pressed(KeyCode::C) {
            self.fly_to(OrbitCamera::framing(CITY_SIZE, self.scene.tallest() as f32));
        }
        let held = is_key_down;
        let axis = |neg: KeyCode, pos: KeyCode| (held(pos) as i32 - held(neg) as i32) as f32;
        let yaw = axis(KeyCode::Q, KeyCode::E);
        let pitch = axis(KeyCode::PageDown, KeyCode::PageUp);
        if yaw != 0.0 || pitch != 0.0 {
            self.camera
                .orbit(yaw * KEY_ORBIT * dt, pitch * KEY_ORBIT * dt);
        }
        let right = axis(KeyCode::A, KeyCode::D);
        let forward = axis(KeyCode::S, KeyCode::W);
        if right != 0.0 || forward != 0.0 {
            self.flight = None;
            let step = self.camera.distance * KEY_PAN * dt;
            self.camera.pan(right * step, forward * step);
        }
        let zoom = axis(KeyCode::Equal, KeyCode::Minus) + axis(KeyCode::KpAdd, KeyCode::KpSubtract);
        if zoom != 0.0 {
            self.flight = None;
            self.camera.zoom(1.0 + zoom.signum() * 1.5 * dt);
        }
    }

    /// Mouse: panels first, then the city (drag to orbit, shift-drag or middle-drag to pan,
    /// click to select, wheel to zoom).
    fn mouse(&mut self, screen: &Screen, mouse: (f32, f32), hovered: Option<NodeId>) {
        let len = self.city.model.len();
        let (dx, dy) = (mouse.0 - self.last_mouse.0, mouse.1 - self.last_mouse.1);
        self.last_mouse = mouse;
        let shift = is_key_down(KeyCode::LeftShift) || is_key_down(KeyCode::RightShift);
        if is_mouse_button_pressed(MouseButton::Left) {
            match (self.link_at(screen, mouse), screen.hit(mouse.0, mouse.1)) {
                (Some(node), _) => self.follow(node),
                (None, Some(Hit::Setting(setting, dir))) => self.apply_setting(setting, dir),
                (None, Some(Hit::Settings)) => self.settings_open = !self.settings_open,
                (None, Some(Hit::Transport(t))) => self.transport(t),
                (None, Some(Hit::CloseDetails)) => self.select(None),
                (None, Some(Hit::Suspect(i))) => {
                    let node = self.refresh_suspects().get(i).and_then(|l| l.node);
                    if let Some(node) = node {
                        self.follow(node);
                    }
                }
                (None, Some(Hit::Slider(f))) => {
                    self.drag = Some(Drag::Slider);
                    self.travel.jump(slider_index(f, len), len);
                }
                (None, Some(Hit::Timeline)) if len > 0 => {
                    let now = macroquad::time::get_time();
                    if now - self.last_timeline_click < 0.35 {
                        self.city.model.set_window(None);
                    }
                    self.last_timeline_click = now;
                    self.drag = Some(Drag::Timeline(mouse.0));
                    self.travel.jump(screen.strip.index_at(mouse.0, len), len);
                }
                (None, Some(_)) => {}
                (None, None) => {
                    self.drag = Some(Drag::City {
                        from: mouse,
                        moved: false,
                    })
                }
            }
        }
        match &mut self.drag {
            Some(Drag::City { from, moved }) if is_mouse_button_down(MouseButton::Left) => {
                *moved |= (mouse.0 - from.0).abs() + (mouse.1 - from.1).abs() > 4.0;
                if *moved {
                    self.flight = None;
                    if shift {
                        let d = self.camera.distance / 800.0;
                        self.camera.pan(-dx * d, dy * d);
                    } else {
                        self.camera.orbit(dx * 0.005, dy * 0.005);
                    }
                }
            }
            Some(Drag::Slider) if is_mouse_button_down(MouseButton::Left) => {
                let index = slider_index(screen.slider_fraction(mouse.0), len);
                if index != self.travel.index() {
                    self.travel.jump(index, len);
                }
            }
            _ => {}
        }
        if is_mouse_button_released(MouseButton::Left) {
            match self.drag.take() {
                Some(Drag::City { moved: false, .. }) => self.select(hovered),
                Some(Drag::Timeline(from)) if (mouse.0 - from).abs() > 6.0 => {
                    self.city
                        .model
                        .set_window(Some(screen.strip.window_between(from, mouse.0, len)));
                }
                _ => {}
            }
        }
        let over_panel = screen.hit(mouse.0, mouse.1).is_some();
        let camera_input = is_mouse_button_down(MouseButton::Right)
            || is_mouse_button_down(MouseButton::Middle)
            || mouse_wheel().1 != 0.0;
        if camera_input && !over_panel {
            self.flight = None;
        }
        if is_mouse_button_down(MouseButton::Right) && !over_panel {
            self.camera.orbit(dx * 0.005, dy * 0.005);
        }
        if is_mouse_button_down(MouseButton::Middle) && !over_panel {
            let d = self.camera.distance / 800.0;
            self.camera.pan(-dx * d, dy * d);
        }
        let wheel = mouse_wheel().1;
        if wheel != 0.0 && !over_panel {
            self.camera.zoom(if wheel > 0.0 { 0.9 } else { 1.1 });
        }
    }

    fn status_line(&self, live_source: bool) -> String {
        let len = self.city.model.len();
        let index = self.travel.index();
        let time = self.city.model.frame(index).map_or(0, |f| f.time_ms);
        let connection = match &self.status {
            Status::Connecting => "connecting...".to_string(),
            Status::Live if self.travel.is_live() => "LIVE (following the newest snapshot)".into(),
            Status::Live => "live session, viewing the past (L returns to live)".to_string(),
            Status::Disconnected { retry_in, why } => format!(
                "disconnected ({why}); retrying in {:.1} s",
                retry_in.as_secs_f64()
            ),
            Status::Ended(why) if live_source => {
                format!("session ended ({why}); the city stays for replay")
            }
            Status::Ended(_) => "replay".to_string(),
            Status::Failed(why) => why.clone(),
        };
        // What the snapshot rests on comes early: a long line is cut at its end.
        let basis = timeline::basis(&self.city.model, index)
            .map(|b| format!(" | {}", b.label()))
            .unwrap_or_default();
        let mut line = format!(
            "{connection} | snapshot {}/{} t={:.1}s{basis}{}",
            if len == 0 { 0 } else { index + 1 },
            len,
            time as f64 / 1000.0,
            if self.travel.playing {
                format!(" | playing, {} s per snapshot", self.travel.period)
            } else {
                String::new()
            }
        );
        if self.scene.hidden > 0 {
            line.push_str(&format!(" | {} small groups hidden", self.scene.hidden));
        }
        if live_source {
            line.push_str(&format!(
                " | received {}, dropped {} | agent stop {:.0} ms, {:.2}% of wall time",
                self.received,
                self.dropped,
                self.last_pause_ms,
                self.overhead * 100.0
            ));
        }
        line
    }

    /// Everything drawn over the city.
    fn draw_hud(
        &mut self,
        screen: &Screen,
        mouse: (f32, f32),
        hovered: Option<NodeId>,
        live: bool,
    ) {
        let len = self.city.model.len();
        let index = self.travel.index();
        let metric = self.settings.metric;
        let window = self.city.model.window();
        let chart = screen.strip.chart(&self.city.model, metric);
        let dragging = match self.drag {
            Some(Drag::Timeline(from)) => Some((from, mouse.0)),
            _ => None,
        };
        hud::timeline(screen, &chart, window, index, len, dragging);
        hud::transport(
            screen,
            mouse,
            self.travel.playing,
            self.travel.is_live(),
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
        let line = self.status_line(live);
        hud::text(
            &hud::fit(&line, status.w - 16.0, 18.0),
            8.0,
            status.y + 18.0,
            18.0,
            Color::new(1.0, 1.0, 1.0, 1.0),
        );
        hud::text(
            "arrows step  space play  [ ] period  L live  B/C bird's eye/overview  R references  N leak suspects  F fly the trace  Tab settings  \
             drag orbit  shift-drag pan  wheel zoom  WASD pan  Q/E turn  PgUp/PgDn tilt",
            8.0,
            18.0,
            15.0,
            hud::MUTED,
        );
        for (i, note) in self.notes.iter().enumerate() {
            hud::text(note, 8.0, 38.0 + i as f32 * 18.0, 16.0, hud::LIVE_RED);
        }
        if let (Some(d), Some((area, close))) = (&self.details, screen.details) {
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
        if let (Some((area, rows)), Some(cache)) = (&screen.suspects, &self.suspects) {
            hud::suspects(*area, rows, &cache.lines, self.selected, mouse);
        }
        hud::settings(screen, &self.settings, mouse);
        hud::gear(screen.gear, self.settings_open, mouse);
        if let Some(node) = hovered {
            let text = scene::tooltip(&self.city.model, node, index, metric);
            let room = (screen_width() * 0.6).max(200.0);
            let lines: Vec<String> = text.lines().map(|l| hud::fit(l, room, 17.0)).collect();
            let width = lines
                .iter()
                .map(|l| measure_text(l, None, 17, 1.0).width)
                .fold(0.0, f32::max);
            let (w, h) = (screen_width(), screen_height());
            let x = (mouse.0 + 14.0).min(w - width - 16.0).max(4.0);
            let y = (mouse.1 + 10.0).min(h - 20.0 * lines.len() as f32 - 8.0);
            hud::panel(memcity_viewer::controls::Area::new(
                x - 6.0,
                y,
                width + 12.0,
                lines.len() as f32 * 19.0 + 8.0,
            ));
            for (i, text_line) in lines.iter().enumerate() {
                hud::text(text_line, x, y + 17.0 + i as f32 * 19.0, 17.0, hud::INK);
            }
        }
    }
}

/// Side of the city, as the layout makes it.
const CITY_SIZE: f32 = 1000.0;

async fn app(source: Source, mut options: WindowOptions) -> anyhow::Result<()> {
    let renderer = Renderer::new()?;
    let settings = options.settings;
    let config = settings.layout_config();
    let mut travel = TimeTravel::new();
    travel.period = settings.period;
    let (city, events) = match source {
        Source::Replay(model) => {
            let model = *model;
            travel.jump(options.at.unwrap_or(model.len() - 1), model.len());
            travel.tick(60.0, model.len()); // arrive at once: no tween into the first frame
            (City::replay(model, &config), None)
        }
        Source::Live(events) => (City::live(config), Some(events)),
    };
    let live = events.is_some();
    let mut viewer = Viewer {
        settings,
        references: true,
        city,
        travel,
        camera: initial_camera(options.camera, CITY_SIZE, 0.0),
        flight: None,
        tour: Vec::new(),
        framed: false,
        selected: None,
        selected_at: -1.0,
        settings_open: options.settings_open,
        status: if live {
            Status::Connecting
        } else {
            Status::Ended("replay".into())
        },
        received: 0,
        dropped: 0,
        last_pause_ms: 0.0,
        overhead: 0.0,
        notes: Vec::new(),
        drag: None,
        last_mouse: mouse_position(),
        last_timeline_click: -1.0,
        plan_version: 0,
        scene: Scene::default(),
        scene_key: None,
        details: None,
        suspects: None,
    };
    if let Some(path) = options.select.take() {
        let names: Vec<&str> = path.split('/').collect();
        let found = viewer.city.model.find(&names);
        if found.is_none() {
            anyhow::bail!("{}", no_such_group(&path));
        }
        viewer.selected = found;
    }
    let mut ready_signalled = false;
    let started = std::time::Instant::now();
    loop {
        if let Some(events) = &events {
            viewer.take_events(events)?;
        }
        let len = viewer.city.model.len();
        if len > 0 && !viewer.framed {
            viewer.refresh_scene();
            viewer.camera =
                initial_camera(options.camera, CITY_SIZE, viewer.scene.tallest() as f32);
            viewer.framed = true;
        }
        if let (Some(n), true) = (options.bench_frames, len > 0) {
            return bench(&renderer, &viewer, n, len).await;
        }
        if let Some(path) = &options.screenshot {
            let ready = match options.exit_after {
                Some(n) => viewer.received >= n,
                None => len > 0,
            };
            if !ready && live && started.elapsed() > options.wait {
                let why = match &viewer.status {
                    Status::Disconnected { why, .. } => format!(" (last attempt: {why})"),
                    Status::Failed(why) | Status::Ended(why) => format!(" ({why})"),
                    _ => String::new(),
                };
                anyhow::bail!(
                    "no snapshot arrived within {:.0} s{why}: is the JVM running with the agent, and on this address? (`java -agentpath:.../libmemcity.so=port=N`)",
                    options.wait.as_secs_f64()
                );
            }
            if ready {
                viewer.city.animation = None;
                viewer.travel.tick(60.0, len);
                viewer.refresh_scene();
                viewer.camera =
                    initial_camera(options.camera, CITY_SIZE, viewer.scene.tallest() as f32);
                // A few frames first, so the window is mapped and sized before the read-back.
                for pass in 0..4 {
                    let (w, h) = (screen_width(), screen_height());
                    renderer.draw(&viewer.scene, &viewer.camera, View::plain(w, h));
                    if options.hud {
                        let screen = viewer.screen(w, h);
                        viewer.draw_hud(&screen, (-100.0, -100.0), None, live);
                    }
                    if pass == 3 {
                        render::screenshot(path).await?;
                    } else {
                        next_frame().await;
                    }
                }
                if live {
                    eprintln!("memcity: received {} snapshots", viewer.received);
                }
                return Ok(());
            }
        } else if options.exit_after.is_some_and(|n| viewer.received >= n) {
            eprintln!("memcity: received {} snapshots", viewer.received);
            return Ok(());
        }
        if is_key_pressed(KeyCode::Escape) {
            return Ok(());
        }

        let (w, h) = (screen_width(), screen_height());
        let dt = macroquad::time::get_frame_time();
        let screen = viewer.screen(w, h);
        let mouse = mouse_position();
        viewer.keys(dt);
        // Picking uses last frame's scene: what the pointer is over is what was drawn.
        let (origin, dir) = viewer.camera.ray(mouse.0, mouse.1, w, h);
        let hovered = if screen.hit(mouse.0, mouse.1).is_some() {
            None
        } else {
            scene::pick(&viewer.scene, origin, dir)
        };
        viewer.mouse(&screen, mouse, hovered);
        viewer.travel.tick(dt as f64, viewer.city.model.len());
        viewer.city.advance(dt as f64);
        viewer.advance_flight(dt);
        viewer.refresh_scene();
        let view = View {
            width: w,
            height: h,
            lift: viewer.lift(),
            hovered,
        };
        renderer.draw(&viewer.scene, &viewer.camera, view);
        // The panels' layout may have changed with the selection.
        let screen = viewer.screen(w, h);
        viewer.draw_hud(&screen, mouse, hovered, live);
        if !ready_signalled {
            // Scripts and tests wait for this line before sending input.
            eprintln!("memcity: window ready");
            ready_signalled = true;
        }
        next_frame().await;
    }
}

/// Times `n` still frames, then `n` frames that each step to the next snapshot (scene and
/// drawing), and prints medians.
async fn bench(renderer: &Renderer, viewer: &Viewer, n: usize, len: usize) -> anyhow::Result<()> {
    let plan = viewer.city.plan();
    let view = viewer.view_settings();
    let camera = &viewer.camera;
    let (w, h) = (screen_width(), screen_height());
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let frame = scene::build(&viewer.city.model, &plan, (len - 1) as f64, &view, None);
    let buildings = frame.buildings.len();
    let mut still = Vec::with_capacity(n);
    for _ in 0..n {
        let start = std::time::Instant::now();
        renderer.draw(&frame, camera, View::plain(w, h));
        next_frame().await;
        still.push(start.elapsed().as_secs_f64());
    }
    let mut stepping = Vec::with_capacity(n);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let start = std::time::Instant::now();
        // Mid-tween times, as a step is drawn: every building between two sizes.
        let t = (i % len.max(2).saturating_sub(1)) as f64 + 0.5;
        let frame = scene::build(&viewer.city.model, &plan, t, &view, None);
        steps.push(start.elapsed().as_secs_f64());
        renderer.draw(&frame, camera, View::plain(w, h));
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
