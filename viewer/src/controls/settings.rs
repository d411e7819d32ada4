//! The settings panel's settings: their values, how each steps, and what a change asks the
//! view to redo.

use memcity_city::layout::{LayoutConfig, Scaling};
use memcity_city::mapping::Opacity;
use memcity_city::model::Metric;
use memcity_city::scene::ViewSettings;
use memcity_city::timetravel::DEFAULT_PERIOD;
use memcity_city::tree2d::SortBy;
use memcity_city::treemap::Tiling;

/// Everything the settings panel changes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub metric: Metric,
    pub scaling: Scaling,
    pub tiling: Tiling,
    /// Lots per parent (Memory Cities' pruning).
    pub children: usize,
    pub opacity: Opacity,
    /// Growth colors; off draws every building gray.
    pub color: bool,
    /// Draw what estimates cannot back as a glass band under roofs (pale in the 2D views).
    pub doubt: bool,
    /// Seconds per snapshot when playing.
    pub period: f64,
    /// The 2D views' fixed sibling order (paper 5.1).
    pub order: SortBy,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            metric: Metric::Objects,
            scaling: Scaling::Sqrt,
            tiling: Tiling::Squarify,
            children: 20,
            opacity: Opacity::default(),
            color: true,
            doubt: true,
            period: DEFAULT_PERIOD,
            order: SortBy::Growth,
        }
    }
}

impl Settings {
    pub fn layout_config(&self) -> LayoutConfig {
        LayoutConfig {
            tiling: self.tiling,
            scaling: self.scaling,
            metric: self.metric,
            children_per_parent: self.children.max(1),
            ..Default::default()
        }
    }

    pub fn view(&self, references: bool) -> ViewSettings {
        ViewSettings {
            metric: self.metric,
            scaling: self.scaling,
            opacity: self.opacity,
            color: self.color,
            references,
            doubt: self.doubt,
        }
    }
}

/// One row of the settings panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Metric,
    Scaling,
    Tiling,
    Children,
    Opacity,
    Opaque,
    Faded,
    Color,
    Period,
    Order,
    Doubt,
}

pub const SETTINGS: [Setting; 11] = [
    Setting::Metric,
    Setting::Scaling,
    Setting::Tiling,
    Setting::Children,
    Setting::Opacity,
    Setting::Opaque,
    Setting::Faded,
    Setting::Color,
    Setting::Period,
    Setting::Order,
    Setting::Doubt,
];

/// What a settings change asks of the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Lots change: lay out again and animate there.
    Layout,
    /// Only colors, opacity or sizes within lots.
    View,
    /// The play period.
    Period,
}

const CHILDREN: [usize; 8] = [5, 10, 20, 50, 100, 200, 500, 1000];
const OPAQUE: [usize; 7] = [1, 3, 5, 10, 20, 50, 100];
const FADED: [f32; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const PERIODS: [f64; 7] = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
const TILINGS: [Tiling; 5] = [
    Tiling::Squarify,
    Tiling::Binary,
    Tiling::Slice,
    Tiling::Dice,
    Tiling::SliceDice,
];
const ORDERS: [SortBy; 3] = [SortBy::Growth, SortBy::Start, SortBy::End];
const SCALINGS: [Scaling; 3] = [Scaling::Sqrt, Scaling::Linear, Scaling::Quadratic];

/// The next value of a list in direction `dir` (-1 or +1) from the one nearest `now`, clamped at
/// the ends (numbers) or cycling (choices).
fn step<T: Copy>(list: &[T], now: usize, dir: i32, cycle: bool) -> T {
    let n = list.len() as i32;
    let i = now as i32 + dir.signum();
    let i = if cycle {
        i.rem_euclid(n)
    } else {
        i.clamp(0, n - 1)
    };
    list[i as usize]
}

/// Index of the entry nearest `value`.
fn nearest<T: Copy + Into<f64>>(list: &[T], value: f64) -> usize {
    (0..list.len())
        .min_by(|&a, &b| {
            let d = |i: usize| (list[i].into() - value).abs();
            d(a).total_cmp(&d(b))
        })
        .unwrap_or(0)
}

impl Setting {
    pub fn label(self) -> &'static str {
        match self {
            Setting::Metric => "size by",
            Setting::Scaling => "scaling",
            Setting::Tiling => "tiling",
            Setting::Children => "lots per parent",
            Setting::Opacity => "opacity",
            Setting::Opaque => "solid growers (N)",
            Setting::Faded => "faded level",
            Setting::Color => "colors",
            Setting::Period => "play period",
            Setting::Order => "tree order",
            Setting::Doubt => "estimates' doubt",
        }
    }

    pub fn value(self, s: &Settings) -> String {
        match self {
            Setting::Metric => match s.metric {
                Metric::Objects => "objects",
                Metric::Bytes => "bytes",
                Metric::Retained => "retained bytes",
            }
            .into(),
            Setting::Scaling => match s.scaling {
                Scaling::Sqrt => "square root",
                Scaling::Linear => "linear",
                Scaling::Quadratic => "quadratic",
            }
            .into(),
            Setting::Tiling => match s.tiling {
                Tiling::Squarify => "squarify",
                Tiling::Binary => "binary",
                Tiling::Slice => "slice",
                Tiling::Dice => "dice",
                Tiling::SliceDice => "slice and dice",
            }
            .into(),
            Setting::Children => s.children.to_string(),
            Setting::Opacity => if s.opacity.enabled {
                "fade the rest"
            } else {
                "all solid"
            }
            .into(),
            Setting::Opaque => s.opacity.opaque.to_string(),
            Setting::Faded => format!("{:.0} %", s.opacity.faded * 100.0),
            Setting::Color => if s.color { "by growth" } else { "plain" }.into(),
            Setting::Period => format!("{} s/snapshot", s.period),
            Setting::Order => match s.order {
                SortBy::Growth => "most grown first",
                SortBy::Start => "largest at start",
                SortBy::End => "largest at end",
            }
            .into(),
            Setting::Doubt => if s.doubt {
                "drawn as glass"
            } else {
                "not drawn"
            }
            .into(),
        }
    }

    /// Moves the setting one notch in direction `dir` (-1 or +1); says what the view must redo,
    /// or `None` when nothing changed (already at an end).
    pub fn adjust(self, s: &mut Settings, dir: i32) -> Option<Change> {
        let before = *s;
        let change = match self {
            Setting::Metric => {
                // Retained sizes only where a heap dump gave them (the state skips it otherwise).
                s.metric = match s.metric {
                    Metric::Objects => Metric::Bytes,
                    Metric::Bytes => Metric::Retained,
                    Metric::Retained => Metric::Objects,
                };
                Change::Layout
            }
            Setting::Scaling => {
                let now = SCALINGS.iter().position(|&x| x == s.scaling).unwrap_or(0);
                s.scaling = step(&SCALINGS, now, dir, true);
                Change::Layout
            }
            Setting::Tiling => {
                let now = TILINGS.iter().position(|&x| x == s.tiling).unwrap_or(0);
                s.tiling = step(&TILINGS, now, dir, true);
                Change::Layout
            }
            Setting::Children => {
                let now = nearest(&CHILDREN.map(|c| c as f64), s.children as f64);
                s.children = step(&CHILDREN, now, dir, false);
                Change::Layout
            }
            Setting::Opacity => {
                s.opacity.enabled = !s.opacity.enabled;
                Change::View
            }
            Setting::Opaque => {
                let now = nearest(&OPAQUE.map(|c| c as f64), s.opacity.opaque as f64);
                s.opacity.opaque = step(&OPAQUE, now, dir, false);
                Change::View
            }
            Setting::Faded => {
                s.opacity.faded = step(&FADED, nearest(&FADED, s.opacity.faded as f64), dir, false);
                Change::View
            }
            Setting::Color => {
                s.color = !s.color;
                Change::View
            }
            Setting::Period => {
                s.period = step(&PERIODS, nearest(&PERIODS, s.period), dir, false);
                Change::Period
            }
            Setting::Order => {
                let now = ORDERS.iter().position(|&x| x == s.order).unwrap_or(0);
                s.order = step(&ORDERS, now, dir, true);
                Change::View
            }
            Setting::Doubt => {
                s.doubt = !s.doubt;
                Change::View
            }
        };
        (*s != before).then_some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_step_through_their_values_and_say_what_to_redo() {
        let mut s = Settings::default();
        assert_eq!(Setting::Metric.adjust(&mut s, 1), Some(Change::Layout));
        assert_eq!(s.metric, Metric::Bytes);
        assert_eq!(s.layout_config().metric, Metric::Bytes);
        assert_eq!(s.view(true).metric, Metric::Bytes);
        assert_eq!(Setting::Tiling.adjust(&mut s, -1), Some(Change::Layout));
        assert_eq!(s.tiling, Tiling::SliceDice, "choices cycle");
        assert_eq!(Setting::Children.adjust(&mut s, 1), Some(Change::Layout));
        assert_eq!(s.children, 50);
        s.children = 1000;
        assert_eq!(
            Setting::Children.adjust(&mut s, 1),
            None,
            "numbers stop at the end"
        );
        assert_eq!(Setting::Faded.adjust(&mut s, -1), Some(Change::View));
        assert!((s.opacity.faded - 0.3).abs() < 1e-6);
        assert_eq!(Setting::Opacity.adjust(&mut s, 1), Some(Change::View));
        assert!(!s.opacity.enabled);
        assert_eq!(Setting::Opaque.value(&s), "10", "the papers' default");
        assert_eq!(Setting::Period.adjust(&mut s, 1), Some(Change::Period));
        assert_eq!(s.period, 1.0);
        assert_eq!(Setting::Period.value(&s), "1 s/snapshot");
        s.period = 0.1;
        assert_eq!(Setting::Period.adjust(&mut s, -1), None);
        assert_eq!(Setting::Color.adjust(&mut s, 1), Some(Change::View));
        assert_eq!(Setting::Color.value(&s), "plain");
        assert!(s.view(true).doubt);
        assert_eq!(Setting::Doubt.adjust(&mut s, 1), Some(Change::View));
        assert_eq!(Setting::Doubt.value(&s), "not drawn");
        assert!(!s.view(true).doubt);
        // Every row shows a value.
        for setting in SETTINGS {
            assert!(!setting.value(&s).is_empty() && !setting.label().is_empty());
        }
    }
}
