//! The keyboard: every key the viewer answers and what it asks for. Keys pressed once are
//! [`Action`]s, found in one table that also writes the hint bar; held keys are camera axes
//! ([`Held`]). The window reads macroquad's keys and asks here what they mean, so the viewer's
//! state never sees a key code and a binding is tested with `cargo test`.

use macroquad::input::KeyCode;
use memcity_city::model::{NodeId, Window};

use crate::controls::{Setting, Transport, ViewKind};

/// The key that closes the window.
pub const QUIT: KeyCode = KeyCode::Escape;

/// Everything a user can ask of the viewer, by key, button or click.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    Transport(Transport),
    ToggleReferences,
    ToggleSettings,
    NextSuspect,
    FlyTrace,
    Setting(Setting, i32),
    BirdsEye,
    Overview,
    NextView,
    SetView(ViewKind),
    /// Heap-scaled 2D views on or off (paper 5.2).
    ToggleScaled,
    /// The 2D views' local root one level up (the breadcrumb's last step back).
    DrillUp,
    /// Make `node` the 2D views' local root (`ROOT` for the whole heap).
    DrillTo(NodeId),
    Select(Option<NodeId>),
    /// Select `node` and turn toward it.
    Follow(NodeId),
    /// The timeline view: show this snapshot's small tree, or stop showing it.
    TogglePick(usize),
    /// Compare two points in time: growth and colours from the first picked snapshot to the
    /// last (with one pick, between it and the current one), shown at the later.
    ComparePicks,
    /// Restrict growth and colours to a window of snapshots (`None`: the whole session).
    SetWindow(Option<Window>),
    /// A click on the heap strip at snapshot `index`: go there; a double click clears the window.
    StripClick(usize),
    Jump(usize),
    /// The lifetimes view: count deaths from the next older (+1) or younger (-1) age bucket on.
    MinAge(i32),
    /// The lifetimes view: show this context's survival (an index into the plot as drawn), and
    /// select its type's group where the session has one.
    SelectContext(usize),
}

/// Keys pressed once, and what they do; the hint bar is made from this table so the two
/// cannot disagree. (Held keys move the camera: [`held`].)
pub const BINDINGS: &[(KeyCode, Action, &str)] = &[
    (
        KeyCode::Right,
        Action::Transport(Transport::Forward),
        "arrows step",
    ),
    (KeyCode::Left, Action::Transport(Transport::Back), ""),
    (
        KeyCode::Space,
        Action::Transport(Transport::Play),
        "space play",
    ),
    (KeyCode::Home, Action::Transport(Transport::First), ""),
    (
        KeyCode::LeftBracket,
        Action::Setting(Setting::Period, 1),
        "[ ] period",
    ),
    (
        KeyCode::RightBracket,
        Action::Setting(Setting::Period, -1),
        "",
    ),
    (KeyCode::L, Action::Transport(Transport::Live), "L live"),
    (KeyCode::End, Action::Transport(Transport::Live), ""),
    (KeyCode::V, Action::NextView, "V view"),
    (KeyCode::H, Action::ToggleScaled, "H heap-scaled"),
    (KeyCode::Backspace, Action::DrillUp, "Backspace up"),
    (KeyCode::B, Action::BirdsEye, "B/C bird's eye/overview"),
    (KeyCode::C, Action::Overview, ""),
    (KeyCode::R, Action::ToggleReferences, "R references"),
    (KeyCode::N, Action::NextSuspect, "N leak suspects"),
    (KeyCode::F, Action::FlyTrace, "F fly the trace"),
    (
        KeyCode::M,
        Action::Setting(Setting::Metric, 1),
        "M objects/bytes",
    ),
    (KeyCode::G, Action::ComparePicks, "G growth between picks"),
    (KeyCode::Period, Action::MinAge(1), ", . min age"),
    (KeyCode::Comma, Action::MinAge(-1), ""),
    (KeyCode::Tab, Action::ToggleSettings, "Tab settings"),
];

/// The action of a key pressed once, if it has one.
pub fn key_action(key: KeyCode) -> Option<Action> {
    BINDINGS.iter().find(|b| b.0 == key).map(|b| b.1)
}

/// Whether the hint bar names `action` in `view`: only what does something there, so that the
/// bar says all of it in two lines (the keys work in every view all the same).
fn hinted_in(action: Action, view: ViewKind) -> bool {
    match action {
        Action::BirdsEye | Action::Overview | Action::ToggleReferences | Action::FlyTrace => {
            view == ViewKind::City
        }
        Action::ToggleScaled | Action::DrillUp => {
            matches!(view, ViewKind::Icicle | ViewKind::Sunburst)
        }
        Action::ComparePicks => view == ViewKind::Timeline,
        Action::MinAge(_) => view == ViewKind::Lifetimes,
        _ => true,
    }
}

/// The hint bar: the keys bound to what the view does, then its mouse and held keys.
pub fn key_hints(view: ViewKind) -> String {
    let keys: Vec<&str> = BINDINGS
        .iter()
        .filter(|b| !b.2.is_empty() && hinted_in(b.1, view))
        .map(|b| b.2)
        .collect();
    let mouse = match view {
        ViewKind::City => {
            "drag orbit  shift-drag pan  wheel zoom  WASD pan  Q/E turn  PgUp/PgDn tilt  click select"
        }
        ViewKind::Icicle | ViewKind::Sunburst => "click select  double-click drill down",
        ViewKind::Timeline => "click the chart to pick snapshots  click a tree to open it",
        ViewKind::Lifetimes => "hover a context for its numbers  click to keep it and select its type",
    };
    format!("{}  {mouse}", keys.join("  "))
}

/// Held keys this frame, as axes from -1 to 1: the camera moves while they are down.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Held {
    pub yaw: f32,
    pub pitch: f32,
    pub right: f32,
    pub forward: f32,
    /// Positive zooms in.
    pub zoom: f32,
}

/// The held keys' axes, given which keys are down (the window passes macroquad's
/// `is_key_down`): the camera moves by these in `ViewerState::hold`.
pub fn held(down: impl Fn(KeyCode) -> bool) -> Held {
    // Both keys of an axis down cancel out, as neither.
    let axis = |neg: KeyCode, pos: KeyCode| (down(pos) as i32 - down(neg) as i32) as f32;
    Held {
        yaw: axis(KeyCode::Q, KeyCode::E),
        pitch: axis(KeyCode::PageDown, KeyCode::PageUp),
        right: axis(KeyCode::A, KeyCode::D),
        forward: axis(KeyCode::S, KeyCode::W),
        zoom: axis(KeyCode::Minus, KeyCode::Equal) + axis(KeyCode::KpSubtract, KeyCode::KpAdd),
    }
}

/// Whether a shift key is down: a drag on the city then pans instead of orbiting.
pub fn shift(down: impl Fn(KeyCode) -> bool) -> bool {
    down(KeyCode::LeftShift) || down(KeyCode::RightShift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_is_one_key_and_every_hint_names_a_bound_key() {
        let mut keys: Vec<String> = BINDINGS.iter().map(|b| format!("{:?}", b.0)).collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "a key bound twice");
        let hints = key_hints(ViewKind::City);
        for hint in [
            "arrows step",
            "V view",
            "B/C bird's eye/overview",
            "M objects/bytes",
            "PgUp/PgDn tilt",
        ] {
            assert!(hints.contains(hint), "{hint} missing from {hints}");
        }
        // Each view names what does something there.
        assert!(!hints.contains("Backspace up") && !hints.contains(", . min age"));
        let icicle = key_hints(ViewKind::Icicle);
        for hint in ["H heap-scaled", "Backspace up", "double-click drill down"] {
            assert!(icicle.contains(hint), "{hint} missing from {icicle}");
        }
        assert!(!icicle.contains("R references"));
        assert!(key_hints(ViewKind::Timeline).contains("G growth between picks"));
        assert!(key_hints(ViewKind::Lifetimes).contains(", . min age"));
        // Every hint is in some view's bar.
        for binding in BINDINGS.iter().filter(|b| !b.2.is_empty()) {
            assert!(
                ViewKind::ALL
                    .iter()
                    .any(|&v| key_hints(v).contains(binding.2)),
                "{} in no view's hints",
                binding.2
            );
        }
    }

    /// The keys the hint bar names ask for what it says (what each action does to the state
    /// is tested in `state.rs`).
    #[test]
    fn the_keys_ask_for_what_their_hints_say() {
        for (key, action) in [
            (KeyCode::Right, Action::Transport(Transport::Forward)),
            (KeyCode::Left, Action::Transport(Transport::Back)),
            (KeyCode::Space, Action::Transport(Transport::Play)),
            (KeyCode::Home, Action::Transport(Transport::First)),
            (KeyCode::End, Action::Transport(Transport::Live)),
            (KeyCode::L, Action::Transport(Transport::Live)),
            (KeyCode::V, Action::NextView),
            (KeyCode::H, Action::ToggleScaled),
            (KeyCode::Backspace, Action::DrillUp),
            (KeyCode::B, Action::BirdsEye),
            (KeyCode::C, Action::Overview),
            (KeyCode::R, Action::ToggleReferences),
            (KeyCode::M, Action::Setting(Setting::Metric, 1)),
            (KeyCode::G, Action::ComparePicks),
            (KeyCode::Tab, Action::ToggleSettings),
        ] {
            assert_eq!(key_action(key), Some(action), "{key:?}");
        }
        assert_eq!(key_action(KeyCode::W), None, "held, not pressed once");
        assert_eq!(key_action(QUIT), None, "the window's own");
    }

    #[test]
    fn held_keys_are_axes_and_opposite_keys_cancel() {
        let down = |keys: &'static [KeyCode]| move |k: KeyCode| keys.contains(&k);
        assert_eq!(
            held(down(&[
                KeyCode::E,
                KeyCode::W,
                KeyCode::Equal,
                KeyCode::KpAdd
            ])),
            Held {
                yaw: 1.0,
                forward: 1.0,
                zoom: 2.0,
                ..Default::default()
            }
        );
        let axes = held(down(&[KeyCode::A, KeyCode::D, KeyCode::PageDown]));
        assert_eq!((axes.right, axes.pitch), (0.0, -1.0));
        assert!(shift(down(&[KeyCode::RightShift])));
        assert!(!shift(down(&[KeyCode::A])));
    }
}
