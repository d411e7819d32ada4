//! What the viewer makes from its state and keeps until what it was made from changes: the
//! city's scene and the names it shows, the details panel, the leak suspects, and the 2D views'
//! sibling order, solid paths and partitions. Each is kept with its inputs, so a still frame
//! makes nothing. The state lends those inputs for each call ([`Shown`]); nothing here changes
//! what is shown.

use std::collections::HashSet;

use memcity_city::details::{self, Accuracy, Details};
use memcity_city::hive::Hive;
use memcity_city::leak::suspects::SuspectsInSteps;
use memcity_city::leak::Suspect;
use memcity_city::lifetimes::{Filter, Lives};
use memcity_city::model::{CityModel, Metric, NodeId, Window, ROOT};
use memcity_city::scene::{self, Scene, ViewSettings};
use memcity_city::tree2d::{self, Partition, PartitionOptions, SortBy, TreeOrder};
use memcity_city::units;

use crate::controls::{details_rows, DetailsRow, Settings};
use crate::names::short_type;
use crate::plan::City;

/// Buildings the city names (and half as many top-level districts), tallest first.
const CITY_LABELS: usize = 8;

/// Partitions kept: the large view, the global view and the timeline view's trees, so a still
/// frame partitions nothing (a 50,000-group tree takes milliseconds to cut).
const PARTITIONS: usize = 16;

/// What the caches are made from: the state's city, time, settings and navigation, lent for
/// one call.
pub struct Shown<'a> {
    pub city: &'a City,
    /// The time shown (fractional between snapshots), and the snapshot it is at.
    pub t: f64,
    pub index: usize,
    pub settings: &'a Settings,
    /// The settings as the scene takes them, with the references on or off.
    pub view: ViewSettings,
    pub selected: Option<NodeId>,
    /// The 2D views' local root.
    pub drill: NodeId,
    /// The 2D views heap-scaled.
    pub scaled: bool,
}

impl Shown<'_> {
    fn model(&self) -> &CityModel {
        &self.city.model
    }
}

/// What a scene depends on: the scene is rebuilt only when one of these changes, so a still city
/// costs no scene work per frame.
#[derive(Debug, Clone, PartialEq)]
struct SceneKey {
    t: f64,
    len: usize,
    window: Window,
    view: ViewSettings,
    selected: Option<NodeId>,
    plan: u64,
    animation: Option<f64>,
}

/// One line of the leak-suspects list.
pub struct SuspectLine {
    pub text: String,
    /// The growing type's node, to select when the line is clicked.
    pub node: Option<NodeId>,
}

/// The window's leak suspects, computed once per session length and window for the list and
/// the details panel alike (the search scans every type over the window: not per frame).
struct SuspectsCache {
    key: (usize, Window),
    /// Snapshots that may arrive at the window's followed end before the suspects are worked out
    /// again (see [`live_every`]).
    every: usize,
    all: Vec<Suspect>,
    lines: Vec<SuspectLine>,
}

/// Starts working out the suspects of `model` for `key` beside the drawing, from a copy (its
/// snapshots are shared, not copied): on a thread of their own, or in steps, one a frame, where
/// there is no thread (the page, or `steps_only`).
fn work_beside(model: &CityModel, key: (usize, Window), steps_only: bool) -> Working {
    let copy = model.clone();
    let in_steps = |copy| Working {
        key,
        beside: Beside::Steps(Box::new(SuspectsInSteps::new(copy))),
    };
    if steps_only || cfg!(target_arch = "wasm32") {
        return in_steps(copy);
    }
    let (send, suspects) = std::sync::mpsc::channel();
    let made = std::thread::Builder::new()
        .name("memcity-suspects".into())
        .spawn(move || {
            let _ = send.send(memcity_city::leak::suspects::suspects(&copy));
        });
    match made {
        Ok(_) => Working {
            key,
            beside: Beside::Thread(suspects),
        },
        // No thread to be had: the copy went with the refusal.
        Err(_) => in_steps(model.clone()),
    }
}

/// The list's lines of suspects `all` of `model`'s window `key`.
fn suspects_cache(model: &CityModel, key: (usize, Window), all: Vec<Suspect>) -> SuspectsCache {
    // Backed suspects numbered (they come first), then the rest on one line of their
    // own: risen within the estimates' doubt and not explained, no leak.
    let backed = all.iter().take_while(|s| s.is_backed()).count();
    let rising: Vec<String> = all[backed..]
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                short_type(s.leaking.first().map_or("", String::as_str)),
                units::signed_amount(s.growth, Metric::Objects)
            )
        })
        .collect();
    let rising_line = (!rising.is_empty()).then(|| SuspectLine {
        text: format!("rising, not yet explained: {}", rising.join(", ")),
        node: all[backed]
            .leaking
            .first()
            .and_then(|t| model.node_named(t)),
    });
    let lines = all[..backed]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let leaking = s.leaking.first().cloned().unwrap_or_default();
            let (objects, bytes) = s.held();
            // The holder and what it keeps alive lead (the growing type it selects
            // is in the details panel); a type whose holder is not seen yet says so.
            let text = if s.holder.is_empty() {
                format!(
                    "{}. {} {}, holder not seen yet",
                    i + 1,
                    short_type(&leaking),
                    units::signed_amount(s.growth, Metric::Objects),
                )
            } else {
                format!(
                    "{}. {} in {}{}: {}, {} ({}{})",
                    i + 1,
                    short_type(&s.holder),
                    if s.root.is_none() {
                        "root unknown"
                    } else {
                        s.root_name()
                    },
                    memcity_city::leak::roots::more_threads(s.root_name(), s.co_holders.len()),
                    units::signed_amount(bytes, Metric::Bytes),
                    units::signed_amount(objects, Metric::Objects),
                    s.confidence.label(),
                    if s.confirmed { "" } else { ", unconfirmed" }
                )
            };
            SuspectLine {
                text,
                node: model.node_named(&leaking),
            }
        })
        .chain(rising_line)
        .collect();
    SuspectsCache {
        key,
        every: live_every(model),
        all,
        lines,
    }
}

/// Trend cells (groups times the snapshots a trend reads) the suspects may cost per live
/// snapshot, on average: about 45 ms on this project's 2-core machine. Working them out costs
/// every type's trend over up to [`memcity_city::leak::trends::MAX_TREND_POINTS`] snapshots, 270 ms
/// at 3,000 groups, which at every snapshot of a session with two a second kept the viewer busy
/// half the time; past this, live snapshots are taken in several at a time.
const LIVE_CELLS_PER_SNAPSHOT: usize = 1 << 20;

/// How many snapshots arriving at the window's followed end the suspects of `model` wait for:
/// 1 for a session of a few hundred groups, 6 for 3,000 groups over 2,048 snapshots.
fn live_every(model: &CityModel) -> usize {
    let w = model.window();
    let points = (w.end + 1 - w.start.min(w.end)).min(memcity_city::leak::trends::MAX_TREND_POINTS);
    (model.nodes().len() * points)
        .div_ceil(LIVE_CELLS_PER_SNAPSHOT)
        .max(1)
}

/// Whether the suspects computed for `was` still stand for `now`: the same session length and
/// window, or a live session whose window follows its end and has had fewer than `every` new
/// snapshots since (the user's own moves of the window are answered at once).
fn suspects_stand(was: (usize, Window), every: usize, now: (usize, Window)) -> bool {
    was == now || (follows_on(was, now) && now.0 - was.0 < every)
}

/// Whether the window of `now` is the window of `was` followed to newer snapshots of a live
/// session: both end at their session's end, from the same start.
fn follows_on(was: (usize, Window), now: (usize, Window)) -> bool {
    let following = |(len, w): (usize, Window)| len > 0 && w.end + 1 == len;
    following(was) && following(now) && was.1.start == now.1.start && now.0 > was.0
}

/// Suspects being worked out beside the drawing, from a copy of the model (which shares its
/// snapshots), for the session length and window `key`.
struct Working {
    key: (usize, Window),
    beside: Beside,
}

/// Where suspects worked out beside the drawing are.
enum Beside {
    /// On a thread of their own.
    Thread(std::sync::mpsc::Receiver<Vec<Suspect>>),
    /// A step at each frame: the page, whose WebAssembly has no threads.
    Steps(Box<SuspectsInSteps>),
}

/// What a frame gives suspects worked out in steps: 4 ms, in steps of [`STEP_CELLS`] (a type's
/// nodes times the snapshots a trend reads; one such step costs 1-5 ms natively at 3,000
/// types over 1,960 snapshots, `bench_push`). At 3,000 types, some 1.8 s of steps in all.
const STEP_SECONDS: f64 = 0.004;
const STEP_CELLS: usize = 1 << 13;

type DetailsKey = (NodeId, usize, Metric, Window, usize);

/// The selected group's details as the panel shows them, and what they were computed for.
pub struct DetailsPanel {
    key: DetailsKey,
    pub details: Details,
    pub accuracy: Accuracy,
    pub rows: Vec<DetailsRow>,
    /// The panel's height with every row.
    pub height: f32,
}

/// What the 2D views' fixed sibling order depends on: recomputed when one changes.
type OrderKey = (usize, Window, Metric, SortBy);

type SolidKey = (usize, Window, Metric, memcity_city::mapping::Opacity);

/// What a 2D partition depends on.
#[derive(Debug, Clone, PartialEq)]
struct PartitionKey {
    order: OrderKey,
    tree: Tree,
    /// The time shown, for the trees that follow it (0 for `Tree::At`, which names its own).
    now: f64,
    drill: NodeId,
    selected: Option<NodeId>,
    color: bool,
    doubt: bool,
    opacity: memcity_city::mapping::Opacity,
}

/// Which partition a 2D view draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tree {
    /// The large view: below the local root, at the time shown, heap-scaled as set.
    Main,
    /// Below the local root at fractional time `t`, leaving out cells thinner than `min_span`
    /// of the extent (a small tree cannot show them): the timeline view's trees.
    At { t: f64, scaled: bool, min_span: f64 },
    /// The whole heap at the time shown, the drill-down's branch solid: the global view.
    Global { min_span: f64 },
}

/// The next scene's number; numbers are never reused in a process (0: no scene built yet).
static SCENE_REVISIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Everything kept between frames because it is costly to make, each with what it was made of.
#[derive(Default)]
pub struct Caches {
    scene: Scene,
    scene_key: Option<SceneKey>,
    /// This scene's number among all built in this process (`SCENE_REVISIONS`), so the renderer
    /// tells an unchanged scene from a new one, of this state or of one that replaced it.
    scene_revision: u64,
    /// Bumped whenever the plan changes outside an animation (a new session), so the scene is
    /// rebuilt though the rest of its key may look the same.
    plan_version: u64,
    details: Option<DetailsPanel>,
    suspects: Option<SuspectsCache>,
    /// The suspects of a newer live window, being worked out beside the drawing while the
    /// last ones are shown: at 3,000 groups they cost a frame 200 ms.
    working: Option<Working>,
    /// Work suspects out beside the drawing in steps even where threads can be made (the
    /// page's way, tested natively).
    #[cfg(test)]
    steps_only: bool,
    order: Option<(OrderKey, TreeOrder)>,
    /// The opacity rule's solid nodes, and the session length, window, metric and rule they
    /// are of.
    solid: Option<(SolidKey, HashSet<NodeId>)>,
    /// Partitions last made, the newest last.
    partitions: Vec<(PartitionKey, Partition)>,
    /// What the city names, as of the scene (see `label_points`).
    labels: Vec<(NodeId, glam::Vec3)>,
    /// The lifetimes view's plot, and the session length and filter it is of.
    lifetimes: Option<((usize, Filter), LifetimesShown)>,
}

/// Edges one hive plot holds before the view splits it into panels by in-degree: past some
/// sixty curves the gray ones merge into a blot.
pub const HIVE_EDGES: usize = 60;

/// What the lifetimes view draws: the hive plot of the deaths the filter counts, and the lives
/// of each allocation context (its survival panel).
pub struct LifetimesShown {
    pub filter: Filter,
    pub hive: Hive,
    pub contexts: Vec<Lives>,
}

impl LifetimesShown {
    /// The lives of allocation context `name`, if it allocated anything sampled.
    pub fn context(&self, name: &str) -> Option<&Lives> {
        self.contexts.iter().find(|l| l.name == name)
    }
}

impl Caches {
    /// The lifetimes view's plot for `filter`, made again only when the session grew or the
    /// filter changed (time travel moves its window of deaths).
    pub fn lifetimes(&mut self, model: &CityModel, filter: Filter) -> &LifetimesShown {
        let key = (model.len(), filter);
        if self.lifetimes.as_ref().map(|c| c.0) != Some(key) {
            let lifetimes = model.lifetimes();
            let pairs = lifetimes.pairs(&filter);
            let hive = Hive::build(
                pairs
                    .iter()
                    .map(|p| (p.alloc.as_str(), p.death.as_str(), p.objects)),
                HIVE_EDGES,
            );
            let shown = LifetimesShown {
                filter,
                hive,
                contexts: lifetimes.allocation_contexts(&filter),
            };
            self.lifetimes = Some((key, shown));
        }
        &self.lifetimes.as_ref().expect("made above").1
    }

    /// The plan changed outside an animation (a new session): the next scene is built anew.
    pub fn plan_changed(&mut self) {
        self.plan_version += 1;
        // Of the session before.
        self.suspects = None;
        self.working = None;
    }

    /// The model thinned its older snapshots (`map`: each old index's new one): the same
    /// session, renumbered. The suspects shown, and those being worked out, stand for the same
    /// windows under their new numbers, so a live session goes on working them out beside the
    /// drawing rather than all at once on it.
    pub fn thinned(&mut self, map: &[usize]) {
        self.plan_version += 1;
        let renumber = |(len, w): (usize, Window)| -> (usize, Window) {
            let at = |i: usize| map.get(i).copied().unwrap_or(i);
            (
                at(len.saturating_sub(1)) + 1,
                Window {
                    start: at(w.start),
                    end: at(w.end),
                },
            )
        };
        if let Some(cache) = &mut self.suspects {
            cache.key = renumber(cache.key);
        }
        if let Some(working) = &mut self.working {
            working.key = renumber(working.key);
        }
    }

    /// The scene as last built (see [`Caches::refresh_scene`]).
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// Which scene [`Caches::scene`] is: a new number with every scene built.
    pub fn scene_revision(&self) -> u64 {
        self.scene_revision
    }

    /// The details panel as last made (see [`Caches::refresh_details`]).
    pub fn details(&self) -> Option<&DetailsPanel> {
        self.details.as_ref()
    }

    /// The selected group's details (recomputed when the selection, time, metric or window
    /// change), and the panel height they want.
    pub fn refresh_details(&mut self, shown: &Shown) -> Option<f32> {
        let Some(node) = shown.selected else {
            self.details = None;
            return None;
        };
        let model = shown.model();
        let key = (
            node,
            shown.index,
            shown.settings.metric,
            model.window(),
            model.len(),
        );
        if self.details.as_ref().map(|d| &d.key) != Some(&key) {
            self.suspect_lines(shown);
            let suspects = self.suspects.as_ref().map_or(&[][..], |c| &c.all);
            let d = details::details(model, node, key.1, key.2, suspects);
            let accuracy = details::accuracy(model, node, key.1);
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

    /// The leak suspects of the window, one line each (recomputed when the session or the
    /// window changed).
    pub fn suspect_lines(&mut self, shown: &Shown) -> &[SuspectLine] {
        let model = shown.model();
        let key = (model.len(), model.window());
        if let Some(working) = &mut self.working {
            // `Some` once it ended: with the suspects, or without (its thread went).
            let ended = match &mut working.beside {
                Beside::Thread(suspects) => match suspects.try_recv() {
                    Ok(all) => Some(Some(all)),
                    Err(std::sync::mpsc::TryRecvError::Empty) => None,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => Some(None),
                },
                Beside::Steps(steps) => {
                    let now = macroquad::miniquad::date::now;
                    let until = now() + STEP_SECONDS;
                    loop {
                        if let Some(all) = steps.step(STEP_CELLS) {
                            break Some(Some(all));
                        }
                        if now() >= until {
                            break None;
                        }
                    }
                }
            };
            if let Some(all) = ended {
                let key = working.key;
                self.working = None;
                match (all, &mut self.suspects) {
                    (Some(all), _) => self.suspects = Some(suspects_cache(model, key, all)),
                    // Its thread went without an answer (a panic, said on stderr): the last
                    // suspects stand for that window, so it is not tried again at every frame,
                    // only after the next `every` snapshots.
                    (None, Some(cache)) => cache.key = key,
                    (None, None) => {}
                }
            }
        }
        let stands = self
            .suspects
            .as_ref()
            .is_some_and(|c| suspects_stand(c.key, c.every, key));
        let live = self
            .suspects
            .as_ref()
            .is_some_and(|c| follows_on(c.key, key));
        if !stands && live {
            // A live window followed on: the last suspects stay shown until the newer ones
            // come (one computation at a time; the next starts when it ends).
            if self.working.is_none() {
                self.working = Some(work_beside(model, key, self.steps_only()));
            }
        } else if !stands {
            // The user's own move (or the first): answered at once, and a computation for
            // an older window is dropped.
            self.working = None;
            let all = memcity_city::leak::suspects::suspects(model);
            self.suspects = Some(suspects_cache(model, key, all));
        }
        self.suspects.as_ref().map_or(&[], |c| &c.lines)
    }

    /// Whether suspects are worked out beside the drawing in steps even where a thread could
    /// be made (tests of the page's way).
    fn steps_only(&self) -> bool {
        #[cfg(test)]
        return self.steps_only;
        #[cfg(not(test))]
        false
    }

    /// The suspects' lines as last computed (for drawing without `&mut`).
    pub fn cached_suspect_lines(&self) -> Option<&[SuspectLine]> {
        self.suspects.as_ref().map(|c| c.lines.as_slice())
    }

    /// The scene at the time shown, rebuilt only when something it depends on changed.
    pub fn refresh_scene(&mut self, shown: &Shown) {
        let model = shown.model();
        let key = SceneKey {
            t: shown.t,
            len: model.len(),
            window: model.window(),
            view: shown.view,
            selected: shown.selected,
            plan: self.plan_version,
            animation: shown.city.animation.as_ref().map(|a| a.1),
        };
        if self.scene_key.as_ref() == Some(&key) {
            return;
        }
        self.scene = scene::build(model, &shown.city.plan(), key.t, &key.view, key.selected);
        // The selection's leak-suspect trace, drawn through the city.
        self.refresh_details(shown);
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
        self.scene.trace = steps.map(|steps| scene::trace(model, &self.scene, &steps));
        self.labels = self.rank_labels(shown.selected);
        self.scene_key = Some(key);
        self.scene_revision = SCENE_REVISIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the city names on screen, most important first, with the 3D point each label
    /// points at: the selection, the tallest buildings, then the largest top-level districts
    /// (the placement leaves out whatever would not fit: `views::place_labels`).
    pub fn label_points(&self) -> &[(NodeId, glam::Vec3)] {
        &self.labels
    }

    /// Ranks what the city names, once per scene (the render loop only projects them).
    fn rank_labels(&self, selected: Option<NodeId>) -> Vec<(NodeId, glam::Vec3)> {
        let scene = &self.scene;
        let roof = |b: &scene::Building| {
            let (x, y, z) = b.shape.roof();
            glam::Vec3::new(x as f32, y as f32, z as f32)
        };
        let district_top = |d: &scene::District| {
            let (x, z) = d.rect.center();
            let top = (d.depth + 1) as f64 * memcity_city::mapping::DISTRICT_HEIGHT;
            glam::Vec3::new(x as f32, top as f32, z as f32)
        };
        let mut points = Vec::new();
        if let Some(node) = selected {
            if let Some(b) = scene.buildings.iter().find(|b| b.node == node) {
                points.push((node, roof(b)));
            } else if let Some(d) = scene.districts.iter().find(|d| d.node == node) {
                points.push((node, district_top(d)));
            }
        }
        let mut tallest: Vec<&scene::Building> = scene.buildings.iter().collect();
        tallest.sort_by(|a, b| b.shape.height.total_cmp(&a.shape.height));
        points.extend(tallest.iter().take(CITY_LABELS).map(|b| (b.node, roof(b))));
        let mut districts: Vec<&scene::District> =
            scene.districts.iter().filter(|d| d.depth == 1).collect();
        districts.sort_by(|a, b| b.rect.area().total_cmp(&a.rect.area()));
        points.extend(
            districts
                .iter()
                .take(CITY_LABELS / 2)
                .map(|d| (d.node, district_top(d))),
        );
        points
    }

    /// The 2D views' fixed sibling order (recomputed when the session, window or metric change).
    pub fn tree_order(&mut self, shown: &Shown) -> &TreeOrder {
        let model = shown.model();
        let key = (
            model.len(),
            model.window(),
            shown.settings.metric,
            shown.settings.order,
        );
        if self.order.as_ref().map(|o| o.0) != Some(key) {
            let order = TreeOrder::new(model, key.2, key.3);
            self.order = Some((key, order));
        }
        &self.order.as_ref().expect("just set").1
    }

    /// The opacity rule's solid nodes (recomputed when the session, window, metric or rule
    /// change).
    fn solid(&mut self, shown: &Shown) -> &HashSet<NodeId> {
        let model = shown.model();
        let settings = shown.settings;
        let key = (
            model.len(),
            model.window(),
            settings.metric,
            settings.opacity,
        );
        if self.solid.as_ref().map(|s| s.0) != Some(key) {
            let solid = tree2d::solid_paths(model, &settings.opacity, settings.metric);
            self.solid = Some((key, solid));
        }
        &self.solid.as_ref().expect("just set").1
    }

    /// The partition `which` as things stand; made only when nothing kept matches (a still
    /// frame makes none).
    pub fn tree(&mut self, shown: &Shown, which: Tree) -> &Partition {
        self.tree_order(shown);
        let model = shown.model();
        let settings = shown.settings;
        let key = PartitionKey {
            order: (model.len(), model.window(), settings.metric, settings.order),
            tree: which,
            now: match which {
                Tree::At { .. } => 0.0,
                _ => shown.t,
            },
            drill: shown.drill,
            selected: shown.selected,
            color: settings.color,
            doubt: settings.doubt,
            opacity: settings.opacity,
        };
        // The large view and the global view follow time and settings held in the state.
        let key = match which {
            Tree::Main => PartitionKey {
                tree: Tree::At {
                    t: shown.t,
                    scaled: shown.scaled,
                    min_span: PartitionOptions::default().min_span,
                },
                ..key
            },
            _ => key,
        };
        let found = match self.partitions.iter().position(|p| p.0 == key) {
            Some(i) => i,
            None => {
                let partition = self.make_partition(shown, &key);
                if self.partitions.len() >= PARTITIONS {
                    self.partitions.remove(0);
                }
                self.partitions.push((key, partition));
                self.partitions.len() - 1
            }
        };
        &self.partitions[found].1
    }

    fn make_partition(&mut self, shown: &Shown, key: &PartitionKey) -> Partition {
        let t = shown.t;
        let (root, t, scaled, min_span, selected) = match key.tree {
            Tree::Main => unreachable!("keyed as `At`"),
            Tree::At {
                t,
                scaled,
                min_span,
            } => (shown.drill, t, scaled, min_span, shown.selected),
            Tree::Global { min_span } => (ROOT, t, false, min_span, Some(shown.drill)),
        };
        let solid = match key.tree {
            Tree::Global { .. } => branch(shown.model(), shown.drill),
            _ => self.solid(shown).clone(),
        };
        let options = PartitionOptions {
            scaled,
            min_span,
            color: shown.settings.color,
            doubt: shown.settings.doubt,
            ..Default::default()
        };
        let order = &self.order.as_ref().expect("made by `tree`").1;
        tree2d::partition(shown.model(), order, root, t, &options, &solid, selected)
    }

    /// How many partitions are kept, for the test that a still frame cuts none.
    #[cfg(test)]
    pub(crate) fn partitions_kept(&self) -> usize {
        self.partitions.len()
    }
}

/// The drill-down's branch: the local root `drill`, what holds it and what it holds.
fn branch(model: &CityModel, drill: NodeId) -> HashSet<NodeId> {
    let mut branch = HashSet::new();
    let mut at = Some(drill);
    while let Some(node) = at {
        branch.insert(node);
        at = model.node(node).parent;
    }
    let mut below = vec![drill];
    while let Some(node) = below.pop() {
        branch.insert(node);
        below.extend_from_slice(&model.node(node).children);
    }
    branch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::City;

    fn at(len: usize, start: usize, end: usize) -> (usize, Window) {
        (len, Window { start, end })
    }

    /// Live snapshots at a followed end are taken `every` at a time; anything the user does to
    /// the window, or a window that stopped following the end, is answered at once.
    #[test]
    fn live_snapshots_wait_for_their_turn_and_the_users_moves_do_not() {
        let was = at(100, 0, 99);
        assert!(suspects_stand(was, 1, was));
        assert!(!suspects_stand(was, 1, at(101, 0, 100)), "one at a time");
        assert!(suspects_stand(was, 3, at(102, 0, 101)));
        assert!(
            !suspects_stand(was, 3, at(103, 0, 102)),
            "the third is its turn"
        );
        assert!(!suspects_stand(was, 3, at(101, 5, 100)), "the start moved");
        assert!(!suspects_stand(was, 3, at(100, 0, 50)), "the end went back");
        assert!(
            !suspects_stand(was, 3, at(101, 0, 50)),
            "the end stays behind"
        );
        assert!(
            !suspects_stand(at(100, 0, 50), 3, at(101, 0, 100)),
            "came back to the end"
        );
    }

    /// A session whose `app.Node` rises by `per_snapshot` a second over `snapshots`, as a
    /// window following its end holds it.
    fn rising(snapshots: u64, per_snapshot: u64) -> City {
        let mut model = CityModel::new();
        for step in 0..snapshots {
            push_rising(&mut model, step, per_snapshot);
        }
        City::replay(model, &Settings::default().layout_config())
    }

    fn push_rising(model: &mut CityModel, step: u64, per_snapshot: u64) {
        let node = 100 + step * per_snapshot;
        let row = |name: &str, n: u64| {
            (
                vec!["app".to_string(), name.to_string()],
                "Type".to_string(),
                n,
                n * 24,
            )
        };
        model.push_tree(
            step * 1000,
            (node + 400, (node + 400) * 24),
            &[row("Node", node), row("String", 400)],
            Vec::new(),
        );
    }

    fn lines(caches: &mut Caches, city: &City) -> Vec<String> {
        let settings = Settings::default();
        let shown = Shown {
            city,
            t: city.model.len().saturating_sub(1) as f64,
            index: city.model.len().saturating_sub(1),
            settings: &settings,
            view: ViewSettings::default(),
            selected: None,
            drill: ROOT,
            scaled: false,
        };
        caches
            .suspect_lines(&shown)
            .iter()
            .map(|l| l.text.clone())
            .collect()
    }

    /// A live window followed to a newer snapshot keeps the suspects it has on screen while the
    /// newer ones are worked out on a thread of their own (at 3,000 groups they held a frame
    /// 200 ms), and takes those in when they come; a window the user moves is answered at once.
    #[test]
    fn a_followed_live_window_works_its_suspects_out_beside_the_drawing() {
        followed_on_beside_the_drawing(false);
    }

    /// A live session whose older snapshots were thinned (renumbered) goes on working its
    /// suspects out beside the drawing: thinning once cleared them, and every thinning of a
    /// long session stopped a frame for all of them.
    #[test]
    fn a_thinned_live_session_goes_on_beside_the_drawing() {
        let mut city = rising(20, 50);
        let mut caches = Caches::default();
        let first = lines(&mut caches, &city);
        let map = city.model.retain_frames(|i, _| i % 2 == 0 || i >= 15);
        assert!(city.model.len() < 20, "the premise: thinned");
        caches.thinned(&map);
        push_rising(&mut city.model, 20, 50);
        assert_eq!(
            lines(&mut caches, &city),
            first,
            "the last suspects stay on screen"
        );
        assert!(caches.working.is_some(), "worked out beside the drawing");
    }

    /// The page's way: in steps, one a frame, where there is no thread.
    #[test]
    fn a_followed_live_window_works_its_suspects_out_in_steps() {
        followed_on_beside_the_drawing(true);
    }

    fn followed_on_beside_the_drawing(steps_only: bool) {
        let mut city = rising(20, 50);
        let mut caches = Caches {
            steps_only,
            ..Caches::default()
        };
        let first = lines(&mut caches, &city);
        assert!(
            first.iter().any(|l| l.contains("Node")),
            "the first suspects, worked out at once: {first:?}"
        );
        assert!(caches.working.is_none());
        for step in 20..40 {
            push_rising(&mut city.model, step, 50);
        }
        assert_eq!(
            lines(&mut caches, &city),
            first,
            "the last suspects stay on screen meanwhile"
        );
        assert!(
            matches!(
                caches.working.as_ref().map(|w| &w.beside),
                Some(Beside::Steps(_)) if steps_only
            ) || matches!(
                caches.working.as_ref().map(|w| &w.beside),
                Some(Beside::Thread(_)) if !steps_only
            ),
            "worked out beside the drawing"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let newer = loop {
            let now = lines(&mut caches, &city);
            if caches.working.is_none() {
                break now;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the suspects beside the drawing did not come"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_ne!(newer, first, "the newer window's suspects (a larger rise)");
        let key = caches.suspects.as_ref().unwrap().key;
        assert_eq!(key, (city.model.len(), city.model.window()));
        // The user's own move: at once, on the drawing's thread.
        city.model.set_window(Some(Window { start: 10, end: 30 }));
        let moved = lines(&mut caches, &city);
        assert!(caches.working.is_none());
        assert_ne!(moved, newer);
        assert_eq!(
            caches.suspects.as_ref().unwrap().key,
            (city.model.len(), city.model.window())
        );
    }

    /// Sessions of a few hundred groups work their suspects out at every snapshot; the number
    /// waited for grows with the trends' cells, bounded however long the session.
    #[test]
    fn the_wait_follows_the_trends_cells() {
        let mut small = CityModel::new();
        let mut big = CityModel::new();
        let rows = |n: usize, step: u64| -> Vec<(Vec<String>, String, u64, u64)> {
            (0..n)
                .map(|i| {
                    let objects = 100 + step + i as u64;
                    (
                        vec!["p".to_string(), format!("T{i}")],
                        "Type".to_string(),
                        objects,
                        objects * 16,
                    )
                })
                .collect()
        };
        for step in 0..1100u64 {
            small.push_tree(step * 1000, (1, 1), &rows(10, step), Vec::new());
            big.push_tree(step * 1000, (1, 1), &rows(1000, step), Vec::new());
        }
        assert_eq!(live_every(&small), 1);
        // 1,002 nodes (the root, the package, 1,000 types) over 1,100 snapshots: 1.1 M cells.
        assert_eq!(live_every(&big), 2);
    }
}
