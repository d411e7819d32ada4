//! The viewer without a window: where the user is and what arrived. Navigation: time travel,
//! the camera and its flights, the selection and its jump, the view and the 2D views'
//! drill-down. Live state: the city (`plan.rs`) and the session bookkeeping of a live source.
//! What is made from these to be drawn (the scene, the panels, the partitions) is kept in
//! `caches.rs`. Input arrives as [`Action`]s (which key asks for which is `keys.rs`'s) and the
//! clock as an argument, so every state change is tested with `cargo test`; the window
//! (`app.rs`) only turns keys and clicks into actions and draws what is here.

use memcity_city::camera::OrbitCamera;
use memcity_city::model::{CityModel, NodeId, Window, ROOT};
use memcity_city::scene::{Scene, ViewSettings};
use memcity_city::timetravel::TimeTravel;
use memcity_city::tree2d::{Partition, TreeOrder};
use memcity_proto::v1::stream_message::Kind;

use crate::caches::{Caches, DetailsPanel, LifetimesShown, Shown, SuspectLine, Tree};
use crate::controls::{Setting, Settings, Transport, ViewKind};
use crate::keys::{Action, Held};
use crate::live::{Event, Status};
use crate::plan::City;
use memcity_city::lifetimes::{gc_age_floor, Filter, GC_AGE_BUCKETS};

/// Side of the city, as the layout makes it.
pub const CITY_SIZE: f32 = 1000.0;
/// Seconds a camera flight takes (`B`, `C`, following a reference).
const FLIGHT_SECONDS: f32 = 0.6;
/// Seconds the selected building's jump takes.
const JUMP_SECONDS: f64 = 0.45;
/// Camera speeds for held keys: radians and city sizes per second.
const KEY_ORBIT: f32 = 1.4;
const KEY_PAN: f32 = 0.6;
/// Two clicks on the timeline strip this close (seconds) clear the window.
const DOUBLE_CLICK: f64 = 0.35;

/// The camera a view opens with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum CameraView {
    /// From the south-east, above the city
    #[default]
    Overview,
    /// From straight above
    BirdsEye,
}

/// The camera for a city whose tallest roof is `tallest` (the window test computes pixels with
/// the same one).
pub fn initial_camera(view: CameraView, tallest: f32) -> OrbitCamera {
    match view {
        CameraView::Overview => OrbitCamera::framing(CITY_SIZE, tallest),
        CameraView::BirdsEye => OrbitCamera::birds_eye(CITY_SIZE, tallest),
    }
}

pub struct ViewerState {
    pub settings: Settings,
    pub references: bool,
    pub city: City,
    pub travel: TimeTravel,
    pub camera: OrbitCamera,
    /// A camera flight under way: from, to, progress (0 to 1).
    flight: Option<(OrbitCamera, OrbitCamera, f32)>,
    /// Camera targets still to visit on a tour along a leak trace (`F`), next last.
    tour: Vec<glam::Vec3>,
    /// The camera has been placed for the first snapshot.
    pub framed: bool,
    pub selected: Option<NodeId>,
    /// When the selection changed (for its jump).
    selected_at: f64,
    pub settings_open: bool,
    /// Whether the panels and bars are drawn (all but a screenshot without `--hud`): without
    /// them the view has the whole picture.
    pub hud: bool,
    pub view: ViewKind,
    /// The 2D views' local root (paper 4.2: drill-down); `ROOT` is the whole heap.
    pub drill: NodeId,
    /// Heap-scaled 2D views (paper 5.2).
    pub scaled: bool,
    /// Snapshots picked on the timeline view, ascending.
    pub picks: Vec<usize>,
    /// The lifetimes view counts deaths at least this many GCs old (a bucket's floor).
    pub min_gc_age: u64,
    /// The allocation context clicked in the lifetimes view: its survival stays shown.
    pub context: Option<String>,
    /// Live sources: the connection, and what arrived.
    pub live: bool,
    pub status: Status,
    pub received: usize,
    /// When the snapshots announced by `Event::Arrived` reached the process, oldest first, and
    /// those of them applied since the last frame (the window times each to its frame).
    pub arrived: std::collections::VecDeque<std::time::Instant>,
    pub applied: Vec<std::time::Instant>,
    pub dropped: u64,
    pub last_pause_ms: f64,
    pub overhead: f64,
    pub notes: Vec<String>,
    last_strip_click: f64,
    /// What is made from the rest and kept while it stands: scene, panels, partitions.
    caches: Caches,
}

impl ViewerState {
    /// A replay of a whole session, at snapshot `at` (the newest when `None`), arrived there
    /// (no tween into the first frame).
    pub fn replay(model: CityModel, settings: Settings, at: Option<usize>) -> Self {
        let mut travel = TimeTravel::new();
        travel.period = settings.period;
        let len = model.len();
        travel.jump(at.unwrap_or(len.saturating_sub(1)), len);
        travel.tick(60.0, len);
        let city = City::replay(model, &settings.layout_config());
        Self::new(city, travel, settings, false)
    }

    /// A live session, empty until the first snapshot arrives.
    pub fn live(settings: Settings) -> Self {
        let mut travel = TimeTravel::new();
        travel.period = settings.period;
        Self::new(City::live(settings.layout_config()), travel, settings, true)
    }

    fn new(city: City, travel: TimeTravel, settings: Settings, live: bool) -> Self {
        Self {
            settings,
            references: true,
            city,
            travel,
            camera: initial_camera(CameraView::Overview, 0.0),
            flight: None,
            tour: Vec::new(),
            framed: false,
            selected: None,
            selected_at: f64::NEG_INFINITY,
            settings_open: false,
            hud: true,
            view: ViewKind::City,
            drill: ROOT,
            scaled: false,
            picks: Vec::new(),
            min_gc_age: 0,
            context: None,
            live,
            status: if live {
                Status::Connecting
            } else {
                Status::Ended("replay".into())
            },
            received: 0,
            arrived: Default::default(),
            applied: Vec::new(),
            dropped: 0,
            last_pause_ms: 0.0,
            overhead: 0.0,
            notes: Vec::new(),
            last_strip_click: f64::NEG_INFINITY,
            caches: Caches::default(),
        }
    }

    pub fn model(&self) -> &CityModel {
        &self.city.model
    }

    pub fn len(&self) -> usize {
        self.city.model.len()
    }

    pub fn is_empty(&self) -> bool {
        self.city.model.is_empty()
    }

    pub fn view_settings(&self) -> ViewSettings {
        self.settings.view(self.references)
    }

    /// Does what `action` asks, at clock time `now` (seconds; only differences matter).
    pub fn apply(&mut self, action: Action, now: f64) {
        let len = self.len();
        match action {
            Action::Transport(t) => match t {
                Transport::First => self.travel.jump(0, len),
                Transport::Back => self.travel.step_back(len),
                Transport::Play => self.travel.toggle_play(len),
                Transport::Forward => self.travel.step_forward(len),
                Transport::Live => self.travel.follow_live(len),
                Transport::Slower => self.apply_setting(Setting::Period, 1),
                Transport::Faster => self.apply_setting(Setting::Period, -1),
            },
            Action::ToggleReferences => self.references = !self.references,
            Action::ToggleSettings => self.settings_open = !self.settings_open,
            Action::NextSuspect => self.next_suspect(now),
            Action::FlyTrace => self.tour_trace(),
            Action::Setting(setting, dir) => self.apply_setting(setting, dir),
            Action::BirdsEye => self.fly_to(initial_camera(
                CameraView::BirdsEye,
                self.scene().tallest() as f32,
            )),
            Action::Overview => self.fly_to(initial_camera(
                CameraView::Overview,
                self.scene().tallest() as f32,
            )),
            Action::NextView => self.view = self.view.next(),
            Action::SetView(view) => self.view = view,
            Action::ToggleScaled => self.scaled = !self.scaled,
            Action::DrillUp => {
                self.drill = self.city.model.node(self.drill).parent.unwrap_or(ROOT);
            }
            Action::DrillTo(node) => self.drill_to(node),
            Action::Select(node) => self.select(node, now),
            Action::Follow(node) => self.follow(node, now),
            Action::TogglePick(index) if index < len => self.toggle_pick(index),
            Action::TogglePick(_) => {}
            Action::ComparePicks => self.compare_picks(),
            Action::SetWindow(window) => self.city.model.set_window(window),
            Action::StripClick(index) => self.strip_click(index, now),
            Action::Jump(index) => {
                if index != self.travel.index() {
                    self.travel.jump(index, len);
                }
            }
            Action::MinAge(dir) => self.step_min_age(dir),
            Action::SelectContext(index) => self.select_context(index, now),
        }
    }

    /// Drills down into `node`. A leaf has nothing below it to show: drilling stops at its
    /// parent.
    fn drill_to(&mut self, node: NodeId) {
        let node = if self.city.model.node(node).is_leaf() {
            self.city.model.node(node).parent.unwrap_or(ROOT)
        } else {
            node
        };
        self.drill = node;
    }

    /// Picks snapshot `index` for the timeline view, or unpicks it; the picks stay in order.
    fn toggle_pick(&mut self, index: usize) {
        match self.picks.binary_search(&index) {
            Ok(at) => {
                self.picks.remove(at);
            }
            Err(at) => self.picks.insert(at, index),
        }
    }

    /// The growth window from the first pick to the last (with one pick, between it and the
    /// snapshot shown), shown at its end.
    fn compare_picks(&mut self) {
        let len = self.len();
        let current = self.travel.index();
        let (start, end) = match (self.picks.first(), self.picks.last()) {
            (Some(&a), Some(&b)) if a != b => (a, b),
            (Some(&a), _) => (a.min(current), a.max(current)),
            _ => return,
        };
        if start < end {
            self.city.model.set_window(Some(Window { start, end }));
            self.travel.jump(end, len);
        }
    }

    /// A click on the heap strip at snapshot `index`, at clock time `now`: there; a double
    /// click also resets the growth window.
    fn strip_click(&mut self, index: usize, now: f64) {
        let len = self.len();
        if now - self.last_strip_click < DOUBLE_CLICK {
            self.city.model.set_window(None);
        }
        self.last_strip_click = now;
        self.travel.jump(index, len);
    }

    /// The lifetimes view's least age one bucket up (`dir` +1) or down (-1).
    fn step_min_age(&mut self, dir: i32) {
        let floors = (0..GC_AGE_BUCKETS).map(gc_age_floor);
        let at = floors
            .clone()
            .position(|f| f >= self.min_gc_age)
            .unwrap_or(0);
        let to = at
            .saturating_add_signed(dir as isize)
            .min(GC_AGE_BUCKETS - 1);
        self.min_gc_age = gc_age_floor(to);
    }

    /// Keeps the lifetimes view's allocation context `index` in focus, and selects its type
    /// where the city has it.
    fn select_context(&mut self, index: usize, now: f64) {
        let Some(name) = self
            .lifetimes()
            .hive
            .nodes
            .get(index)
            .map(|n| n.name.clone())
        else {
            return;
        };
        let model = self.model();
        let node = model
            .node_named(&name)
            .filter(|&n| model.node(n).role == memcity_city::model::Role::Type);
        self.context = Some(name);
        if node.is_some() {
            self.select(node, now);
        }
    }

    /// Which deaths the lifetimes view counts: at least `min_gc_age` GCs old, booked from the
    /// growth window's start to the snapshot shown, so stepping through time grows the plot.
    pub fn lifetimes_filter(&self) -> Filter {
        let model = self.model();
        let time = |index: usize| model.frame(index).map_or(0, |f| f.time_ms);
        Filter {
            min_gc_age: self.min_gc_age,
            from_ms: time(model.window().start),
            to_ms: time(self.travel.index()),
        }
    }

    /// The lifetimes view's plot as things stand (made again only when they changed).
    pub fn lifetimes(&mut self) -> &LifetimesShown {
        let filter = self.lifetimes_filter();
        self.caches.lifetimes(&self.city.model, filter)
    }

    fn apply_setting(&mut self, setting: Setting, dir: i32) {
        use crate::controls::Change;
        let mut change = setting.adjust(&mut self.settings, dir);
        if self.settings.metric == memcity_city::model::Metric::Retained
            && !self.city.model.has_retained()
        {
            // Only heap dumps carry retained sizes: a live session goes on to the next metric.
            change = setting.adjust(&mut self.settings, dir);
        }
        match change {
            Some(Change::Layout) => self.city.relayout(self.settings.layout_config()),
            Some(Change::Period) => self.travel.period = self.settings.period,
            Some(Change::View) | None => {}
        }
    }

    pub fn select(&mut self, node: Option<NodeId>, now: f64) {
        if node != self.selected {
            self.selected_at = now;
        }
        self.selected = node;
    }

    /// Moves the camera by held keys over `dt` seconds; any move ends a flight.
    pub fn hold(&mut self, held: Held, dt: f32) {
        if held.yaw != 0.0 || held.pitch != 0.0 {
            self.camera
                .orbit(held.yaw * KEY_ORBIT * dt, held.pitch * KEY_ORBIT * dt);
        }
        if held.right != 0.0 || held.forward != 0.0 {
            self.flight = None;
            let step = self.camera.distance * KEY_PAN * dt;
            self.camera.pan(held.right * step, held.forward * step);
        }
        if held.zoom != 0.0 {
            self.flight = None;
            self.camera.zoom(1.0 - held.zoom.signum() * 1.5 * dt);
        }
    }

    /// The user took the camera (drag, wheel): a flight or tour under way stops.
    pub fn take_camera(&mut self) -> &mut OrbitCamera {
        self.flight = None;
        self.tour.clear();
        &mut self.camera
    }

    /// Places the camera for the city as it now stands (first snapshot, screenshots).
    pub fn frame_camera(&mut self, view: CameraView) {
        self.refresh_scene();
        self.camera = initial_camera(view, self.scene().tallest() as f32);
        self.flight = None;
        self.framed = true;
    }

    /// Moves time, animations and the camera on by `dt` seconds.
    pub fn advance(&mut self, dt: f64) {
        self.travel.tick(dt, self.len());
        self.city.advance(dt);
        if let Some((from, to, progress)) = &mut self.flight {
            *progress = (*progress + dt as f32 / FLIGHT_SECONDS).min(1.0);
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

    /// Arrives at once: time, layout animation and camera flight jump to their ends (for a
    /// screenshot of the state reached).
    pub fn settle(&mut self) {
        self.city.animation = None;
        self.travel.tick(60.0, self.len());
        if let Some((_, to, _)) = self.flight.take() {
            self.camera = to;
        }
    }

    pub fn flying(&self) -> bool {
        self.flight.is_some()
    }

    fn fly_to(&mut self, to: OrbitCamera) {
        self.flight = Some((self.camera, to, 0.0));
    }

    /// Flies the camera along the selection's leak trace, from the symptom up to the root (the
    /// Memory Cities paper's future-work animation).
    fn tour_trace(&mut self) {
        self.refresh_scene();
        if let Some(trace) = &self.scene().trace {
            // Popped from the end: the root's stop goes first in the list, so it comes last.
            self.tour = trace.stops.clone();
        }
    }

    /// Follows a reference to `node`: selects it and turns the camera toward it, so the next
    /// link of the chain is in view. In a 2D view, drills to its parent so it is in sight.
    fn follow(&mut self, node: NodeId, now: f64) {
        self.select(Some(node), now);
        if self.view.is_tree() {
            let model = &self.city.model;
            let mut inside = false;
            let mut at = Some(node);
            while let Some(n) = at {
                inside |= n == self.drill;
                at = model.node(n).parent;
            }
            if !inside {
                self.drill = model.node(node).parent.unwrap_or(ROOT);
            }
            return;
        }
        self.refresh_scene();
        let scene = self.scene();
        let center = scene
            .buildings
            .iter()
            .find(|b| b.node == node)
            .map(|b| b.bounds())
            .or_else(|| {
                scene
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
    fn next_suspect(&mut self, now: f64) {
        let nodes: Vec<NodeId> = self.suspect_lines().iter().filter_map(|l| l.node).collect();
        if nodes.is_empty() {
            return;
        }
        // After the selected suspect, or the first.
        let next = self
            .selected
            .and_then(|sel| nodes.iter().position(|&n| n == sel))
            .map_or(0, |i| (i + 1) % nodes.len());
        self.follow(nodes[next], now);
    }

    /// How high the selected building is lifted at `now`: a short hop after it is picked.
    pub fn lift(&self, now: f64) -> f32 {
        let Some(node) = self.selected else {
            return 0.0;
        };
        let p = (now - self.selected_at) / JUMP_SECONDS;
        if !(0.0..1.0).contains(&p) {
            return 0.0;
        }
        let height = self
            .scene()
            .buildings
            .iter()
            .find(|b| b.node == node)
            .map_or(0.0, |b| b.shape.height);
        ((p * std::f64::consts::PI).sin() * (height * 0.35).max(12.0)) as f32
    }

    /// Takes one event of the network thread. A failure the session cannot survive (another
    /// protocol version) is the error.
    pub fn take(&mut self, event: Event) -> anyhow::Result<()> {
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
                self.arrived.clear();
                self.selected = None;
                self.drill = ROOT;
                self.picks.clear();
                self.caches.plan_changed();
            }
            Event::RecordingFailed(why) | Event::Refused(why) => self.notes.push(why),
            Event::Arrived(at) => self.arrived.push_back(at),
            Event::Open(model) => {
                // The view and its settings stay; the session, selection and camera are new.
                let mut opened = ViewerState::replay(*model, self.settings, None);
                opened.view = self.view;
                opened.scaled = self.scaled;
                opened.settings_open = self.settings_open;
                *self = opened;
            }
            Event::Message(message) => {
                let snapshot = match &message.kind {
                    Some(Kind::Snapshot(s)) => {
                        self.received += 1;
                        self.applied.extend(self.arrived.pop_front());
                        if let Some(cost) = &s.cost {
                            self.last_pause_ms = cost.pause_ns as f64 / 1e6;
                            self.overhead = cost.total_pause_ns as f64 / cost.wall_ns.max(1) as f64;
                        }
                        true
                    }
                    Some(Kind::Notice(n)) => {
                        self.dropped += n.dropped_snapshots;
                        false
                    }
                    _ => false,
                };
                // The network thread already refused another protocol version.
                self.city.model.apply(&message)?;
                if let Some(map) = self.city.model.take_thinning() {
                    // Older snapshots went to keep memory bounded: the same moments, renumbered.
                    self.travel.remap(&map);
                    for pick in &mut self.picks {
                        *pick = map.get(*pick).copied().unwrap_or(*pick);
                    }
                    self.picks.dedup();
                    self.caches.thinned(&map);
                    const THINNED: &str = "older snapshots are thinned to keep memory bounded (evenly spaced; walks, paths and the newest kept whole)";
                    if !self.notes.iter().any(|n| n == THINNED) {
                        self.notes.push(THINNED.to_string());
                    }
                }
                if snapshot {
                    self.city.appended();
                    self.travel.on_append(self.len());
                }
            }
        }
        Ok(())
    }

    /// Where the panels and controls sit in a `w` x `h` window as things stand (the details
    /// panel's height follows the selection, the suspects list the session).
    pub fn screen(&mut self, w: f32, h: f32) -> crate::controls::Screen {
        let details = self.refresh_details();
        let settings_open = self.settings_open;
        let view = self.view;
        let lines: Vec<&str> = self
            .suspect_lines()
            .iter()
            .map(|l| l.text.as_str())
            .collect();
        let screen = crate::controls::Screen::new(w, h, settings_open, details);
        let screen = if view.is_2d() {
            screen.with_suspects_in_sidebar(&lines).with_views()
        } else {
            screen.with_suspects(&lines).with_views()
        };
        if self.hud {
            screen
        } else {
            screen.without_hud()
        }
    }

    /// The caches and what they are made from, borrowed apart so that a cache can be filled
    /// while the state it is made from is read.
    fn cached(&mut self) -> (&mut Caches, Shown<'_>) {
        let shown = Shown {
            city: &self.city,
            t: self.travel.t(),
            index: self.travel.index(),
            settings: &self.settings,
            view: self.view_settings(),
            selected: self.selected,
            drill: self.drill,
            scaled: self.scaled,
        };
        (&mut self.caches, shown)
    }

    /// The city's scene as last built (see [`ViewerState::refresh_scene`]).
    pub fn scene(&self) -> &Scene {
        self.caches.scene()
    }

    /// Which scene [`ViewerState::scene`] is: a new number with every scene built.
    pub fn scene_revision(&self) -> u64 {
        self.caches.scene_revision()
    }

    /// The scene at the current time, rebuilt only when something it depends on changed.
    pub fn refresh_scene(&mut self) {
        let (caches, shown) = self.cached();
        caches.refresh_scene(&shown);
    }

    /// What the city names on screen, most important first (see [`Caches::label_points`]).
    pub fn label_points(&self) -> &[(NodeId, glam::Vec3)] {
        self.caches.label_points()
    }

    /// The details panel as last made (see [`ViewerState::refresh_details`]).
    pub fn details(&self) -> Option<&DetailsPanel> {
        self.caches.details()
    }

    /// The selected group's details (recomputed when the selection, time, metric or window
    /// change), and the panel height they want.
    pub fn refresh_details(&mut self) -> Option<f32> {
        let (caches, shown) = self.cached();
        caches.refresh_details(&shown)
    }

    /// The leak suspects of the window, one line each (recomputed when the session or the
    /// window changed).
    pub fn suspect_lines(&mut self) -> &[SuspectLine] {
        let (caches, shown) = self.cached();
        caches.suspect_lines(&shown)
    }

    /// The suspects' lines as last computed (for drawing without `&mut`).
    pub fn cached_suspect_lines(&self) -> Option<&[SuspectLine]> {
        self.caches.cached_suspect_lines()
    }

    /// The 2D views' fixed sibling order (recomputed when the session, window or metric change).
    pub fn tree_order(&mut self) -> &TreeOrder {
        let (caches, shown) = self.cached();
        caches.tree_order(&shown)
    }

    /// The partition `which` as things stand, with the model it cuts; made only when nothing
    /// kept matches (a still frame makes none).
    pub fn tree(&mut self, which: Tree) -> (&CityModel, &Partition) {
        let (caches, shown) = self.cached();
        let city = shown.city;
        (&city.model, caches.tree(&shown, which))
    }

    /// The large view's tree: below the local root at the time shown.
    pub fn partition(&mut self) -> &Partition {
        self.tree(Tree::Main).1
    }

    /// The tree below the local root at fractional time `t` (see [`Tree::At`]).
    pub fn partition_at(&mut self, t: f64, scaled: bool, min_span: f64) -> &Partition {
        self.tree(Tree::At {
            t,
            scaled,
            min_span,
        })
        .1
    }

    /// The whole tree at the time shown for the global view, with the drill-down's branch
    /// solid and the rest faded.
    pub fn global_partition(&mut self, min_span: f64) -> &Partition {
        self.tree(Tree::Global { min_span }).1
    }

    /// The local root's path from the heap down: the breadcrumb of a drill-down.
    pub fn breadcrumb(&self) -> Vec<(NodeId, String)> {
        let model = &self.city.model;
        let mut steps = Vec::new();
        let mut at = Some(self.drill);
        while let Some(node) = at {
            let name = if node == ROOT {
                "Heap".to_string()
            } else {
                model.node(node).name.clone()
            };
            steps.push((node, name));
            at = model.node(node).parent;
        }
        steps.reverse();
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::leak;
    use memcity_city::model::Metric;
    use memcity_city::tree2d::SortBy;

    fn state() -> ViewerState {
        ViewerState::replay(leak(vec![]), Settings::default(), None)
    }

    #[test]
    fn transport_steps_through_time_and_jumps_to_the_ends() {
        let mut s = state();
        assert_eq!(s.travel.index(), 2);
        s.apply(Action::Transport(Transport::Back), 0.0);
        assert_eq!(s.travel.index(), 1);
        s.apply(Action::Transport(Transport::First), 0.0);
        assert_eq!(s.travel.index(), 0);
        s.apply(Action::Transport(Transport::Forward), 0.0);
        assert_eq!(s.travel.index(), 1);
        s.apply(Action::Transport(Transport::Live), 0.0);
        assert_eq!(s.travel.index(), 2);
        assert!(s.travel.is_live());
        s.apply(Action::Transport(Transport::Play), 0.0);
        assert!(s.travel.playing);
    }

    #[test]
    fn next_view_cycles_the_views_and_keeps_the_drill_down() {
        let mut s = state();
        let node = s.model().find(&["app", "Node"]).unwrap();
        s.apply(Action::DrillTo(node), 0.0);
        let mut seen = vec![s.view];
        for _ in 0..5 {
            s.apply(Action::NextView, 0.0);
            seen.push(s.view);
            assert_eq!(s.drill, node, "the drill-down survives a change of view");
        }
        assert_eq!(
            seen,
            [
                ViewKind::City,
                ViewKind::Icicle,
                ViewKind::Sunburst,
                ViewKind::Timeline,
                ViewKind::Lifetimes,
                ViewKind::City
            ]
        );
    }

    #[test]
    fn the_minimum_age_steps_through_the_agents_buckets() {
        let mut s = state();
        let mut seen = vec![s.min_gc_age];
        for _ in 0..7 {
            s.apply(Action::MinAge(1), 0.0);
            seen.push(s.min_gc_age);
        }
        assert_eq!(seen, [0, 1, 2, 4, 8, 16, 32, 32]);
        s.apply(Action::MinAge(-1), 0.0);
        assert_eq!(s.lifetimes_filter().min_gc_age, 16);
        // No lifetimes in this session: an empty plot, and a click on it selects nothing.
        assert!(s.lifetimes().hive.nodes.is_empty());
        s.apply(Action::SelectContext(0), 0.0);
        assert_eq!((s.context.as_deref(), s.selected), (None, None));
    }

    #[test]
    fn drill_down_and_back_up_with_a_breadcrumb() {
        let mut s = state();
        s.apply(Action::SetView(ViewKind::Icicle), 0.0);
        let node = s.model().find(&["app", "Node"]).unwrap();
        let site = s.model().find(&["app", "Node", "a()"]).unwrap();
        // A leaf has nothing below it: drilling to it shows its parent.
        s.apply(Action::DrillTo(site), 0.0);
        assert_eq!(s.drill, node);
        let crumbs: Vec<String> = s.breadcrumb().into_iter().map(|c| c.1).collect();
        assert_eq!(crumbs, ["Heap", "app", "Node"]);
        assert_eq!(s.partition().root, node);
        s.apply(Action::DrillUp, 0.0);
        assert_eq!(s.breadcrumb().len(), 2);
        s.apply(Action::DrillUp, 0.0);
        s.apply(Action::DrillUp, 0.0);
        assert_eq!(s.drill, ROOT, "up from the heap stays at the heap");
    }

    #[test]
    fn the_global_view_holds_the_drill_down_branch_solid() {
        let mut s = state();
        let node = s.model().find(&["app", "Node"]).unwrap();
        s.apply(Action::DrillTo(node), 0.0);
        let global = s.global_partition(0.0).clone();
        assert_eq!(global.root, ROOT);
        let solid: Vec<String> = global
            .cells
            .iter()
            .filter(|c| c.solid)
            .map(|c| s.model().path(c.node).join("/"))
            .collect();
        assert_eq!(solid, ["", "app", "app/Node", "app/Node/a()"]);
        assert!(
            global.cell(node).unwrap().selected,
            "the local root is marked"
        );
    }

    #[test]
    fn a_still_frame_cuts_no_tree_again() {
        let mut s = state();
        let cut = |s: &mut ViewerState| {
            s.partition();
            s.global_partition(0.01);
            s.partition_at(0.0, true, 0.01);
        };
        cut(&mut s);
        assert_eq!(s.caches.partitions_kept(), 3);
        cut(&mut s);
        assert_eq!(s.caches.partitions_kept(), 3, "all three kept");
        // A step in time cuts the large and the global view again, not the timeline's tree.
        s.apply(Action::Jump(0), 0.0);
        s.advance(10.0);
        cut(&mut s);
        assert_eq!(s.caches.partitions_kept(), 5);
    }

    #[test]
    fn heap_scaled_follows_its_toggle_and_time() {
        let mut s = state();
        assert_eq!(s.partition().extent, 1.0);
        s.apply(Action::ToggleScaled, 0.0);
        assert!(s.scaled);
        s.apply(Action::Transport(Transport::First), 0.0);
        s.advance(10.0);
        // 500 of at most 1,300 objects.
        assert!((s.partition().extent - 500.0 / 1300.0).abs() < 1e-9);
    }

    #[test]
    fn the_metric_switches_and_the_order_follows() {
        let mut s = state();
        assert_eq!(s.settings.metric, Metric::Objects);
        s.apply(Action::Setting(Setting::Metric, 1), 0.0);
        assert_eq!(s.settings.metric, Metric::Bytes);
        assert_eq!(s.tree_order().metric(), Metric::Bytes);
    }

    #[test]
    fn the_tree_order_setting_reorders_siblings() {
        let mut s = state();
        let types = |s: &mut ViewerState| -> Vec<String> {
            let p = s.partition().clone();
            p.cells
                .iter()
                .filter(|c| c.level == 2)
                .map(|c| s.model().path(c.node).join("/"))
                .collect()
        };
        // Node grew from 100 to 900; String stayed at 400.
        assert_eq!(types(&mut s), ["app/Node", "app/String"]);
        s.apply(Action::Setting(Setting::Order, 1), 0.0);
        assert_eq!(s.settings.order, SortBy::Start);
        assert_eq!(
            types(&mut s),
            ["app/String", "app/Node"],
            "String was larger at the start"
        );
        s.apply(Action::Setting(Setting::Order, 1), 0.0);
        assert_eq!(
            types(&mut s),
            ["app/Node", "app/String"],
            "Node is larger at the end"
        );
    }

    #[test]
    fn the_selection_jumps_for_a_moment() {
        let mut s = state();
        let node = s.model().find(&["app", "Node", "a()"]).unwrap();
        s.refresh_scene();
        s.apply(Action::Select(Some(node)), 100.0);
        assert_eq!(s.lift(100.0), 0.0, "at the start of the hop");
        assert!(s.lift(100.0 + JUMP_SECONDS / 2.0) > 0.0);
        assert_eq!(s.lift(100.0 + JUMP_SECONDS), 0.0, "landed");
        // Selecting the same group again does not restart the hop.
        s.apply(Action::Select(Some(node)), 100.2);
        assert!(s.lift(100.0 + JUMP_SECONDS / 2.0) > 0.0);
    }

    #[test]
    fn a_double_click_on_the_strip_clears_the_window() {
        let mut s = state();
        s.apply(Action::SetWindow(Some(Window { start: 1, end: 2 })), 0.0);
        assert_eq!(s.model().window().start, 1);
        s.apply(Action::StripClick(0), 10.0);
        assert_eq!(s.travel.index(), 0);
        assert_eq!(s.model().window().start, 1, "one click keeps the window");
        s.apply(Action::StripClick(0), 10.0 + DOUBLE_CLICK / 2.0);
        assert_eq!(s.model().window().start, 0);
    }

    #[test]
    fn comparing_picks_sets_the_window_between_them() {
        let mut s = state();
        let before = s.model().window();
        s.apply(Action::ComparePicks, 0.0);
        assert_eq!(s.model().window(), before, "no pick: unchanged");
        s.apply(Action::TogglePick(0), 0.0);
        s.apply(Action::TogglePick(1), 0.0);
        s.apply(Action::ComparePicks, 0.0);
        assert_eq!(s.model().window(), Window { start: 0, end: 1 });
        assert_eq!(s.travel.index(), 1, "shown at the later pick");
        // One pick: between it and the snapshot shown.
        s.apply(Action::TogglePick(0), 0.0);
        s.apply(Action::Jump(2), 0.0);
        s.apply(Action::ComparePicks, 0.0);
        assert_eq!(s.model().window(), Window { start: 1, end: 2 });
        // The growth colours follow: Node grew 400 between snapshots 2 and 3.
        let node = s.model().find(&["app", "Node"]).unwrap();
        assert_eq!(s.model().absolute_growth(node, Metric::Objects), 400);
    }

    #[test]
    fn the_city_names_the_selection_then_the_tallest_then_districts() {
        let mut s = state();
        let string = s.model().find(&["app", "String"]).unwrap();
        s.apply(Action::Select(Some(string)), 0.0);
        s.refresh_scene();
        let points = s.label_points().to_vec();
        let names: Vec<String> = points
            .iter()
            .map(|p| s.model().path(p.0).join("/"))
            .collect();
        // String (400) is selected; the site a() (900) is the tallest; app the one district.
        assert_eq!(names[0], "app/String");
        assert_eq!(names[1], "app/Node/a()");
        assert!(names.contains(&"app".to_string()));
        for (node, point) in &points {
            if let Some(b) = s.scene().buildings.iter().find(|b| b.node == *node) {
                let roof = b.shape.bottom + b.shape.height;
                assert!((point.y as f64 - roof).abs() < 1e-3, "at the roof");
            }
        }
    }

    #[test]
    fn timeline_picks_toggle_in_order() {
        let mut s = state();
        for i in [2, 0, 1, 0, 9] {
            s.apply(Action::TogglePick(i), 0.0);
        }
        assert_eq!(s.picks, [1, 2]);
    }

    #[test]
    fn held_keys_move_the_camera_and_end_a_flight() {
        let mut s = state();
        s.frame_camera(CameraView::Overview);
        let before = s.camera;
        s.apply(Action::BirdsEye, 0.0);
        assert!(s.flying());
        s.hold(
            Held {
                right: 1.0,
                ..Default::default()
            },
            0.1,
        );
        assert!(!s.flying());
        assert_ne!(s.camera.target, before.target);
        let d = s.camera.distance;
        s.hold(
            Held {
                zoom: 1.0,
                ..Default::default()
            },
            0.1,
        );
        assert!(s.camera.distance < d, "zoom in brings the camera closer");
    }

    #[test]
    fn bird_s_eye_flies_and_settles_above_the_city() {
        let mut s = state();
        s.frame_camera(CameraView::Overview);
        s.apply(Action::BirdsEye, 0.0);
        s.advance(0.3);
        assert!(s.flying());
        s.advance(1.0);
        assert!(!s.flying());
        assert!(s.camera.pitch > 1.4, "looking down: {}", s.camera.pitch);
    }

    #[test]
    fn references_and_settings_toggle() {
        let mut s = state();
        s.apply(Action::ToggleReferences, 0.0);
        assert!(!s.references);
        assert!(!s.view_settings().references);
        s.apply(Action::ToggleSettings, 0.0);
        assert!(s.settings_open);
    }

    /// The window times each live snapshot from its arrival (`Event::Arrived`, just before its
    /// message) to its frame: the arrival moves to `applied` when the snapshot is applied, and
    /// a new session forgets arrivals of the old one.
    /// A live stream's message as the network thread hands it over.
    fn message(kind: Kind) -> Event {
        Event::Message(Box::new(memcity_proto::v1::StreamMessage {
            kind: Some(kind),
        }))
    }

    /// A live viewer whose session has begun with the agent's handshake.
    fn live_after_handshake() -> ViewerState {
        let mut s = ViewerState::live(Settings::default());
        s.take(Event::Session).unwrap();
        let handshake = memcity_proto::v1::Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            ..Default::default()
        };
        s.take(message(Kind::Handshake(handshake))).unwrap();
        s
    }

    #[test]
    fn a_snapshots_arrival_is_kept_until_it_is_applied() {
        use memcity_proto::v1::Snapshot;
        let mut s = live_after_handshake();
        let (t0, t1) = (std::time::Instant::now(), std::time::Instant::now());
        s.take(Event::Arrived(t0)).unwrap();
        assert!(s.applied.is_empty(), "not applied yet");
        s.take(message(Kind::Snapshot(Snapshot::default())))
            .unwrap();
        assert_eq!(s.applied, [t0]);
        assert!(s.arrived.is_empty());
        s.take(Event::Arrived(t1)).unwrap();
        s.take(Event::Session).unwrap();
        assert!(s.arrived.is_empty(), "an arrival of the old session");
    }

    #[test]
    fn a_new_live_session_starts_clean() {
        let mut s = ViewerState::live(Settings::default());
        s.apply(Action::DrillTo(ROOT), 0.0);
        s.picks.push(3);
        s.take(Event::Session).unwrap();
        assert!(s.is_empty());
        assert!(s.picks.is_empty());
        assert!(s.take(Event::Status(Status::Failed("v2".into()))).is_err());
        s.take(Event::RecordingFailed("disk full".into())).unwrap();
        assert_eq!(s.notes, ["disk full"]);
    }

    /// A live session that outgrows its memory thins its older snapshots: the snapshot being
    /// looked at and the picks stay on the same moments, and the viewer says so once.
    #[test]
    fn a_live_session_thinned_under_the_viewer_keeps_its_place() {
        use memcity_proto::v1::{Node, Snapshot};
        let mut s = live_after_handshake();
        s.city.model.set_detail_budget(Some(64 << 10));
        let snapshot = |seq: u64| {
            Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                root: Some(Node {
                    objects: seq,
                    ..Default::default()
                }),
                ..Default::default()
            })
        };
        for seq in 1..=100 {
            s.take(message(snapshot(seq))).unwrap();
        }
        assert_eq!(s.city.model.thinned(), 0);
        s.travel.jump(40, s.len());
        s.picks = vec![10, 41];
        let time_of = |s: &ViewerState, i: usize| s.city.model.frames()[i].time_ms;
        let (looked, picked) = (time_of(&s, 40), [time_of(&s, 10), time_of(&s, 41)]);
        for seq in 101..=2_000 {
            s.take(message(snapshot(seq))).unwrap();
        }
        assert!(s.city.model.thinned() > 500, "{}", s.city.model.thinned());
        assert!(time_of(&s, s.travel.index()) >= looked);
        assert!(time_of(&s, s.travel.index()) < looked + 100_000);
        for (pick, time) in s.picks.iter().zip(picked) {
            assert!(time_of(&s, *pick) >= time && time_of(&s, *pick) < time + 100_000);
        }
        assert_eq!(
            s.notes.iter().filter(|n| n.contains("thinned")).count(),
            1,
            "{:?}",
            s.notes
        );
    }
}
