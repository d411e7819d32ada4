//! What the mouse means, without a window. A press of the left button goes to the first target
//! under it of: a link in the details panel, a control on a panel or bar, a step of the
//! breadcrumb, the global view, then the view itself (the city starts a drag; a 2D view
//! selects, drills down or picks). A drag goes on as it began; the right and middle buttons
//! and the wheel move the city's camera. The window reads macroquad's input into a [`Pointer`]
//! and does what [`frame`] returns, so the routing is tested with `cargo test`.

use memcity_city::camera::OrbitCamera;
use memcity_city::model::{NodeId, ROOT};
use memcity_city::tree2d::{Icicle, Sunburst};

use crate::controls::{link_at, slider_index, Area, Hit, Screen, ViewKind};
use crate::keys::Action;
use crate::state::ViewerState;
use crate::views;

/// Pixels (across plus down) a press on the city may move and still be a click that selects.
const CLICK_SLOP: f32 = 4.0;
/// Pixels a drag along the heap strip must cover to set a window rather than stay a click.
const STRIP_SLOP: f32 = 6.0;
/// Radians the camera turns per pixel dragged.
const ORBIT_PER_PIXEL: f32 = 0.005;
/// Pixels dragged to pan the camera by its own distance from the target.
const PAN_PIXELS: f32 = 800.0;
/// The camera's distance is multiplied by these per turn of the wheel, away and toward.
const WHEEL_ZOOM: (f32, f32) = (0.9, 1.1);

/// The mouse this frame as the window read it, in HUD units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pointer {
    pub at: (f32, f32),
    /// How far it moved since the last frame.
    pub moved: (f32, f32),
    /// The left button went down this frame, came up this frame, is down.
    pub pressed: bool,
    pub released: bool,
    pub left: bool,
    /// The right and the middle button are down.
    pub right: bool,
    pub middle: bool,
    /// The wheel's turn this frame; positive away from the user.
    pub wheel: f32,
    /// A shift key is down (a drag on the city pans).
    pub shift: bool,
    /// The group under the pointer in the view as last drawn (none over a panel).
    pub hovered: Option<NodeId>,
}

/// A drag in progress, by what it started on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Drag {
    /// On the city: orbit (or pan with shift); a press without movement selects.
    City {
        from: (f32, f32),
        moved: bool,
    },
    Slider,
    /// On the timeline strip, from this pixel column.
    Timeline(f32),
}

/// What a press of the left button lands on: the first of these under the pointer.
#[derive(Debug, Clone, PartialEq)]
pub enum Click {
    /// A reference or a trace step in the details panel: follow it to its group.
    Link(NodeId),
    /// A control on a panel or bar, or a panel's bare background (the view under a panel must
    /// not react).
    Control(Hit),
    /// A step of the breadcrumb: drill back up to it.
    Crumb(NodeId),
    /// The global view beside a drilled-down tree: drill to the group there, if any.
    Global(Option<NodeId>),
    /// The city: a drag begins; let go without moving, it selects what is under the pointer.
    City,
    /// A 2D view's cell, chart or small tree: what it asks for (see `views::click`).
    View(Vec<Action>),
}

/// A move of the city's camera by the mouse.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CameraMove {
    Orbit {
        yaw: f32,
        pitch: f32,
    },
    Pan {
        right: f32,
        forward: f32,
    },
    /// The distance to the target multiplied by this.
    Zoom(f32),
}

impl CameraMove {
    pub fn apply(self, camera: &mut OrbitCamera) {
        match self {
            CameraMove::Orbit { yaw, pitch } => camera.orbit(yaw, pitch),
            CameraMove::Pan { right, forward } => camera.pan(right, forward),
            CameraMove::Zoom(factor) => camera.zoom(factor),
        }
    }
}

/// One thing the mouse does this frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Effect {
    Apply(Action),
    /// The user takes the camera (a flight under way stops) and moves it.
    Camera(CameraMove),
}

/// What the mouse does this frame: its effects in the order they are to be done, and the drag
/// in progress after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub effects: Vec<Effect>,
    pub drag: Option<Drag>,
}

/// What the mouse does this frame, given where the panels sit (`screen`), the breadcrumb's
/// steps as last drawn (`crumbs`), the state, the drag in progress and the pointer. The state
/// is borrowed mutably for its caches only (the partitions a click picks in, the suspects'
/// lines): nothing is applied here.
pub fn frame(
    screen: &Screen,
    crumbs: &[(NodeId, Area)],
    state: &mut ViewerState,
    drag: Option<Drag>,
    pointer: &Pointer,
) -> Outcome {
    let mut out = Outcome {
        effects: Vec::new(),
        drag,
    };
    let at = pointer.at;
    if pointer.pressed {
        let click = click(screen, crumbs, state, at);
        out.press(click, screen, state, at);
    }
    out.hold(screen, state, pointer);
    if pointer.released {
        out.release(screen, state.len(), pointer);
    }
    // The other buttons and the wheel only move the city's camera, and not through a panel.
    if state.view != ViewKind::City || screen.hit(at.0, at.1).is_some() {
        return out;
    }
    let (dx, dy) = pointer.moved;
    if pointer.right {
        out.camera(orbit(dx, dy));
    }
    if pointer.middle {
        out.camera(pan(state, dx, dy));
    }
    if pointer.wheel != 0.0 {
        let factor = if pointer.wheel > 0.0 {
            WHEEL_ZOOM.0
        } else {
            WHEEL_ZOOM.1
        };
        out.camera(CameraMove::Zoom(factor));
    }
    out
}

/// What a press at `at` lands on (see [`Click`] for the order).
pub fn click(
    screen: &Screen,
    crumbs: &[(NodeId, Area)],
    state: &mut ViewerState,
    at: (f32, f32),
) -> Click {
    if let Some(node) = link(screen, state, at) {
        return Click::Link(node);
    }
    if let Some(hit) = screen.hit(at.0, at.1) {
        return Click::Control(hit);
    }
    if let Some(&(node, _)) = crumbs.iter().find(|(_, a)| a.contains(at.0, at.1)) {
        return Click::Crumb(node);
    }
    if in_global_view(screen, state, at) {
        return Click::Global(global_pick(screen, state, at));
    }
    if state.view == ViewKind::City {
        return Click::City;
    }
    Click::View(view_click(screen, state, at))
}

/// The group a link at `at` in the details panel follows, if the panel shows one there.
fn link(screen: &Screen, state: &ViewerState, at: (f32, f32)) -> Option<NodeId> {
    let (panel, _) = screen.details?;
    let d = state.details()?;
    link_at(panel, &d.rows, &d.details, at.0, at.1)
}

/// Whether `at` is over the global view (shown while drilled down in a tree view).
fn in_global_view(screen: &Screen, state: &ViewerState, at: (f32, f32)) -> bool {
    matches!(state.view, ViewKind::Icicle | ViewKind::Sunburst)
        && state.drill != ROOT
        && views::global_rect(screen).contains(at.0 as f64, at.1 as f64)
}

/// The group at `at` in the global view.
fn global_pick(screen: &Screen, state: &mut ViewerState, at: (f32, f32)) -> Option<NodeId> {
    let global = views::global_rect(screen);
    let icicle = state.view == ViewKind::Icicle;
    // As drawn: cells under half a pixel left out.
    let whole = state.global_partition(0.5 / global.h);
    let (x, y) = (at.0 as f64, at.1 as f64);
    if icicle {
        Icicle::new(global, whole).pick(whole, x, y)
    } else {
        Sunburst::new(global, whole).pick(whole, x, y)
    }
}

/// What a click at `at` on the 2D view in the main area asks for.
fn view_click(screen: &Screen, state: &mut ViewerState, at: (f32, f32)) -> Vec<Action> {
    let area = views::main_area(screen);
    if state.view == ViewKind::Lifetimes {
        let hive = &state.lifetimes().hive;
        let layout = views::lifetimes_layout(area, hive.panels.len());
        return views::hive_pick(&layout, hive, at)
            .map(|context| vec![Action::SelectContext(context)])
            .unwrap_or_default();
    }
    let timeline = (state.view == ViewKind::Timeline)
        .then(|| views::timeline_in(screen, &state.picks, state.travel.index()));
    let (view, len, selected) = (state.view, state.len(), state.selected);
    views::click(
        view,
        views::tree_rect(screen),
        state.partition(),
        timeline.as_ref(),
        len,
        selected,
        at,
    )
}

/// The camera turned by a drag of `(dx, dy)` pixels.
fn orbit(dx: f32, dy: f32) -> CameraMove {
    CameraMove::Orbit {
        yaw: dx * ORBIT_PER_PIXEL,
        pitch: dy * ORBIT_PER_PIXEL,
    }
}

/// The camera moved along the ground by a drag of `(dx, dy)` pixels: the city follows the
/// pointer, further the further the camera is.
fn pan(state: &ViewerState, dx: f32, dy: f32) -> CameraMove {
    let d = state.camera.distance / PAN_PIXELS;
    CameraMove::Pan {
        right: -dx * d,
        forward: dy * d,
    }
}

impl Outcome {
    fn apply(&mut self, action: Action) {
        self.effects.push(Effect::Apply(action));
    }

    fn camera(&mut self, change: CameraMove) {
        self.effects.push(Effect::Camera(change));
    }

    /// The left button went down on `click`.
    fn press(&mut self, click: Click, screen: &Screen, state: &mut ViewerState, at: (f32, f32)) {
        let len = state.len();
        match click {
            Click::Link(node) => self.apply(Action::Follow(node)),
            Click::Control(Hit::Setting(setting, dir)) => self.apply(Action::Setting(setting, dir)),
            Click::Control(Hit::Settings) => self.apply(Action::ToggleSettings),
            Click::Control(Hit::View(view)) => self.apply(Action::SetView(view)),
            Click::Control(Hit::Transport(tr)) => self.apply(Action::Transport(tr)),
            Click::Control(Hit::CloseDetails) => self.apply(Action::Select(None)),
            Click::Control(Hit::Suspect(i)) => {
                if let Some(node) = state.suspect_lines().get(i).and_then(|l| l.node) {
                    self.apply(Action::Follow(node));
                }
            }
            Click::Control(Hit::Slider(f)) => {
                self.drag = Some(Drag::Slider);
                self.apply(Action::Jump(slider_index(f, len)));
            }
            Click::Control(Hit::Timeline) if len > 0 => {
                self.drag = Some(Drag::Timeline(at.0));
                self.apply(Action::StripClick(screen.strip.index_at(at.0, len)));
            }
            Click::Control(_) => {}
            Click::Crumb(node) => self.apply(Action::DrillTo(node)),
            Click::Global(Some(node)) => self.apply(Action::DrillTo(node)),
            Click::Global(None) => {}
            Click::City => {
                self.drag = Some(Drag::City {
                    from: at,
                    moved: false,
                })
            }
            Click::View(actions) => self.effects.extend(actions.into_iter().map(Effect::Apply)),
        }
    }

    /// The left button is held: a drag goes on.
    fn hold(&mut self, screen: &Screen, state: &ViewerState, pointer: &Pointer) {
        if !pointer.left {
            return;
        }
        let (at, (dx, dy)) = (pointer.at, pointer.moved);
        match &mut self.drag {
            Some(Drag::City { from, moved }) => {
                *moved |= (at.0 - from.0).abs() + (at.1 - from.1).abs() > CLICK_SLOP;
                if *moved {
                    let change = if pointer.shift {
                        pan(state, dx, dy)
                    } else {
                        orbit(dx, dy)
                    };
                    self.camera(change);
                }
            }
            Some(Drag::Slider) => {
                let index = slider_index(screen.slider_fraction(at.0), state.len());
                self.apply(Action::Jump(index));
            }
            _ => {}
        }
    }

    /// The left button came up: a drag ends, as a click on the city or a window on the strip.
    fn release(&mut self, screen: &Screen, len: usize, pointer: &Pointer) {
        let x = pointer.at.0;
        match self.drag.take() {
            Some(Drag::City { moved: false, .. }) => self.apply(Action::Select(pointer.hovered)),
            Some(Drag::Timeline(from)) if (x - from).abs() > STRIP_SLOP => {
                let window = screen.strip.window_between(from, x, len);
                self.apply(Action::SetWindow(Some(window)));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controls::{RowKind, Settings};
    use crate::testing::leak;
    use memcity_city::model::{Reference, Window};

    const W: f32 = 1280.0;
    const H: f32 = 800.0;
    /// In the city view, away from every panel and bar.
    const OPEN_GROUND: (f32, f32) = (700.0, 400.0);

    /// The leak session at its last snapshot, `String` holding the `Node`s.
    fn state() -> ViewerState {
        let held = Reference {
            from: "String".into(),
            to: "Node".into(),
            referrers: 400,
            references: 400,
        };
        ViewerState::replay(leak(vec![held]), Settings::default(), None)
    }

    fn node(s: &ViewerState, path: &[&str]) -> NodeId {
        s.model().find(path).unwrap()
    }

    fn press(at: (f32, f32)) -> Pointer {
        Pointer {
            at,
            pressed: true,
            left: true,
            ..Default::default()
        }
    }

    /// The left button held, the pointer moved from `from` to `at`.
    fn held(from: (f32, f32), at: (f32, f32)) -> Pointer {
        Pointer {
            at,
            moved: (at.0 - from.0, at.1 - from.1),
            left: true,
            ..Default::default()
        }
    }

    fn release(at: (f32, f32), hovered: Option<NodeId>) -> Pointer {
        Pointer {
            at,
            released: true,
            hovered,
            ..Default::default()
        }
    }

    fn applied(actions: &[Action]) -> Vec<Effect> {
        actions.iter().copied().map(Effect::Apply).collect()
    }

    #[test]
    fn a_link_in_the_details_panel_comes_before_the_panel_under_it() {
        let mut s = state();
        let string = node(&s, &["app", "String"]);
        s.apply(Action::Select(Some(node(&s, &["app", "Node"]))), 0.0);
        let screen = s.screen(W, H);
        let (panel, close) = screen.details.unwrap();
        let d = s.details().unwrap();
        let row = d.rows.iter().find(|r| r.kind == RowKind::Incoming(0));
        let at = row.unwrap().area(panel).unwrap().center();
        assert_eq!(screen.hit(at.0, at.1), Some(Hit::Panel), "on the panel too");
        assert_eq!(click(&screen, &[], &mut s, at), Click::Link(string));
        let out = frame(&screen, &[], &mut s, None, &press(at));
        assert_eq!(out.effects, applied(&[Action::Follow(string)]));
        assert_eq!(out.drag, None);
        // The panel's bare background answers, so the city under it does not.
        let bare = (panel.x + 100.0, panel.y + panel.h - 2.0);
        assert_eq!(
            click(&screen, &[], &mut s, bare),
            Click::Control(Hit::Panel)
        );
        assert!(frame(&screen, &[], &mut s, None, &press(bare))
            .effects
            .is_empty());
        let out = frame(&screen, &[], &mut s, None, &press(close.center()));
        assert_eq!(out.effects, applied(&[Action::Select(None)]));
    }

    #[test]
    fn controls_do_what_they_show() {
        let mut s = state();
        let growing = node(&s, &["app", "Node"]);
        let screen = s.screen(W, H);
        let mut effects = |at: (f32, f32)| frame(&screen, &[], &mut s, None, &press(at)).effects;
        assert_eq!(
            effects(screen.gear.center()),
            applied(&[Action::ToggleSettings])
        );
        let (view, button) = screen.views[1];
        assert_eq!(effects(button.center()), applied(&[Action::SetView(view)]));
        let (transport, button) = screen.transport[0];
        assert_eq!(
            effects(button.center()),
            applied(&[Action::Transport(transport)])
        );
        // The only suspect's line follows its growing type.
        let (_, lines) = screen.suspects.clone().unwrap();
        assert_eq!(
            effects(lines[0].center()),
            applied(&[Action::Follow(growing)])
        );
    }

    #[test]
    fn an_open_panel_comes_before_the_tree_under_it() {
        let mut s = state();
        s.apply(Action::SetView(ViewKind::Icicle), 0.0);
        s.apply(Action::ToggleSettings, 0.0);
        let screen = s.screen(W, H);
        let (_, rows) = screen.settings.clone().unwrap();
        // On the row's name, left of its arrows.
        let at = (rows[0].row.x + 10.0, rows[0].row.y + rows[0].row.h / 2.0);
        assert!(!view_click(&screen, &mut s, at).is_empty(), "over a cell");
        let setting = rows[0].setting;
        assert_eq!(
            click(&screen, &[], &mut s, at),
            Click::Control(Hit::Setting(setting, 1))
        );
        let out = frame(&screen, &[], &mut s, None, &press(at));
        assert_eq!(out.effects, applied(&[Action::Setting(setting, 1)]));
    }

    #[test]
    fn the_global_view_comes_before_the_tree_and_a_breadcrumb_before_both() {
        let mut s = state();
        s.apply(Action::SetView(ViewKind::Icicle), 0.0);
        let app = node(&s, &["app"]);
        s.apply(Action::DrillTo(node(&s, &["app", "Node"])), 0.0);
        let screen = s.screen(W, H);
        let global = views::global_rect(&screen);
        // The second of the global icicle's four columns, the whole heap's one package.
        let at = (
            (global.x + global.w * 0.375) as f32,
            (global.y + global.h * 0.5) as f32,
        );
        assert!(!view_click(&screen, &mut s, at).is_empty(), "over a cell");
        assert_eq!(click(&screen, &[], &mut s, at), Click::Global(Some(app)));
        let out = frame(&screen, &[], &mut s, None, &press(at));
        assert_eq!(out.effects, applied(&[Action::DrillTo(app)]));
        // A breadcrumb step drawn there would come first.
        let crumbs = [(ROOT, Area::new(at.0 - 5.0, at.1 - 5.0, 10.0, 10.0))];
        assert_eq!(click(&screen, &crumbs, &mut s, at), Click::Crumb(ROOT));
        let out = frame(&screen, &crumbs, &mut s, None, &press(at));
        assert_eq!(out.effects, applied(&[Action::DrillTo(ROOT)]));
    }

    #[test]
    fn a_click_in_a_tree_selects_and_a_second_drills_down() {
        let mut s = state();
        s.apply(Action::SetView(ViewKind::Icicle), 0.0);
        let screen = s.screen(W, H);
        let string = node(&s, &["app", "String"]);
        let rect = views::tree_rect(&screen);
        let p = s.partition().clone();
        let cell = Icicle::new(rect, &p).rect(p.cell(string).unwrap());
        let at = (cell.x + cell.w / 2.0, cell.y + cell.h / 2.0);
        let at = (at.0 as f32, at.1 as f32);
        let select = vec![Action::Select(Some(string))];
        assert_eq!(click(&screen, &[], &mut s, at), Click::View(select.clone()));
        assert_eq!(
            frame(&screen, &[], &mut s, None, &press(at)).effects,
            applied(&select)
        );
        s.apply(Action::Select(Some(string)), 0.0);
        let out = frame(&screen, &[], &mut s, None, &press(at));
        assert_eq!(out.effects, applied(&[Action::DrillTo(string)]));
    }

    #[test]
    fn a_still_press_on_the_city_selects_on_release() {
        let mut s = state();
        let screen = s.screen(W, H);
        let at = OPEN_GROUND;
        assert_eq!(screen.hit(at.0, at.1), None);
        assert_eq!(click(&screen, &[], &mut s, at), Click::City);
        let out = frame(&screen, &[], &mut s, None, &press(at));
        assert!(out.effects.is_empty());
        let dragging = Some(Drag::City {
            from: at,
            moved: false,
        });
        assert_eq!(out.drag, dragging);
        // A tremble under the slop is still a click.
        let near = (at.0 + 2.0, at.1 + 1.0);
        let out = frame(&screen, &[], &mut s, out.drag, &held(at, near));
        assert!(out.effects.is_empty());
        assert_eq!(out.drag, dragging);
        let string = node(&s, &["app", "String"]);
        let out = frame(&screen, &[], &mut s, out.drag, &release(near, Some(string)));
        assert_eq!(out.effects, applied(&[Action::Select(Some(string))]));
        assert_eq!(out.drag, None);
    }

    #[test]
    fn a_drag_on_the_city_orbits_or_with_shift_pans_and_selects_nothing() {
        let mut s = state();
        let screen = s.screen(W, H);
        let from = OPEN_GROUND;
        let to = (from.0 + 10.0, from.1 - 4.0);
        let start = frame(&screen, &[], &mut s, None, &press(from)).drag;
        let out = frame(&screen, &[], &mut s, start, &held(from, to));
        let orbit = CameraMove::Orbit {
            yaw: 10.0 * ORBIT_PER_PIXEL,
            pitch: -4.0 * ORBIT_PER_PIXEL,
        };
        assert_eq!(out.effects, [Effect::Camera(orbit)]);
        assert_eq!(out.drag, Some(Drag::City { from, moved: true }));
        let shifted = Pointer {
            shift: true,
            ..held(from, to)
        };
        let d = s.camera.distance / PAN_PIXELS;
        let pan = CameraMove::Pan {
            right: -10.0 * d,
            forward: -4.0 * d,
        };
        assert_eq!(
            frame(&screen, &[], &mut s, start, &shifted).effects,
            [Effect::Camera(pan)]
        );
        let out = frame(&screen, &[], &mut s, out.drag, &release(to, Some(ROOT)));
        assert!(out.effects.is_empty(), "a drag is not a click");
        assert_eq!(out.drag, None);
    }

    #[test]
    fn the_slider_drags_through_time() {
        let mut s = state();
        let screen = s.screen(W, H);
        let (first, last) = screen.slider_track();
        let y = screen.slider.y + screen.slider.h / 2.0;
        // The press jumps, and the button held in the same frame asks again: a no-op.
        let out = frame(&screen, &[], &mut s, None, &press((first, y)));
        assert_eq!(out.effects, applied(&[Action::Jump(0), Action::Jump(0)]));
        assert_eq!(out.drag, Some(Drag::Slider));
        let out = frame(
            &screen,
            &[],
            &mut s,
            out.drag,
            &held((first, y), (last, y + 80.0)),
        );
        assert_eq!(out.effects, applied(&[Action::Jump(2)]), "off the bar too");
        let out = frame(&screen, &[], &mut s, out.drag, &release((last, y), None));
        assert!(out.effects.is_empty());
        assert_eq!(out.drag, None);
    }

    #[test]
    fn a_drag_along_the_strip_sets_a_window_and_a_short_one_does_not() {
        let mut s = state();
        let screen = s.screen(W, H);
        let strip = screen.strip;
        let (left, right, y) = (strip.x + 2.0, strip.x + strip.w - 2.0, strip.y + 10.0);
        let out = frame(&screen, &[], &mut s, None, &press((left, y)));
        assert_eq!(out.effects, applied(&[Action::StripClick(0)]));
        assert_eq!(out.drag, Some(Drag::Timeline(left)));
        let out = frame(&screen, &[], &mut s, out.drag, &release((right, y), None));
        let window = Window { start: 0, end: 2 };
        assert_eq!(out.effects, applied(&[Action::SetWindow(Some(window))]));
        let short = frame(
            &screen,
            &[],
            &mut s,
            Some(Drag::Timeline(left)),
            &release((left + 5.0, y), None),
        );
        assert!(short.effects.is_empty());
    }

    #[test]
    fn the_wheel_and_other_buttons_move_the_city_camera_but_not_through_a_panel() {
        let mut s = state();
        let screen = s.screen(W, H);
        let turn = |at: (f32, f32)| Pointer {
            at,
            moved: (4.0, 2.0),
            right: true,
            middle: true,
            wheel: -1.0,
            ..Default::default()
        };
        let d = s.camera.distance / PAN_PIXELS;
        let out = frame(&screen, &[], &mut s, None, &turn(OPEN_GROUND));
        assert_eq!(
            out.effects,
            [
                Effect::Camera(CameraMove::Orbit {
                    yaw: 4.0 * ORBIT_PER_PIXEL,
                    pitch: 2.0 * ORBIT_PER_PIXEL
                }),
                Effect::Camera(CameraMove::Pan {
                    right: -4.0 * d,
                    forward: 2.0 * d
                }),
                Effect::Camera(CameraMove::Zoom(WHEEL_ZOOM.1)),
            ]
        );
        let out = frame(&screen, &[], &mut s, None, &turn(screen.gear.center()));
        assert!(out.effects.is_empty(), "over the gear");
        s.apply(Action::SetView(ViewKind::Sunburst), 0.0);
        let screen = s.screen(W, H);
        let out = frame(&screen, &[], &mut s, None, &turn(OPEN_GROUND));
        assert!(out.effects.is_empty(), "a 2D view has no camera");
    }
}
