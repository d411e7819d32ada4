//! The viewer's controls without a window: the settings and what each changes, the views the
//! buttons switch between, and where the panels, buttons and slider sit on screen for a given
//! window size, with hit testing. The window draws these rectangles and sends clicks here, so
//! the layout and the meaning of every click are tested with `cargo test`.

use memcity_city::layout::{LayoutConfig, Scaling};
use memcity_city::mapping::Opacity;
use memcity_city::model::Metric;
use memcity_city::scene::ViewSettings;
use memcity_city::timeline::Strip;
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
                s.metric = match s.metric {
                    Metric::Objects => Metric::Bytes,
                    Metric::Bytes => Metric::Objects,
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

/// A rectangle on screen, in pixels from the top left.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Area {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Area {
    pub fn new(x: f32, y: f32, w: f32, h: f32) -> Self {
        Self { x, y, w, h }
    }

    pub fn contains(&self, px: f32, py: f32) -> bool {
        px >= self.x && px < self.x + self.w && py >= self.y && py < self.y + self.h
    }

    pub fn center(&self) -> (f32, f32) {
        (self.x + self.w / 2.0, self.y + self.h / 2.0)
    }
}

/// What the main area shows (`--view`, key `V`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum ViewKind {
    /// The 3D memory city
    #[default]
    City,
    /// The grouping tree as an icicle: root on the left, one column per level
    Icicle,
    /// The grouping tree as a sunburst: root in the centre, one ring per level
    Sunburst,
    /// The heap over time with small icicles of the picked snapshots side by side
    Timeline,
    /// Where sampled objects were born and where they died: a hive plot of allocation and
    /// death contexts, with the survival of the context under the pointer
    Lifetimes,
}

impl ViewKind {
    pub const ALL: [ViewKind; 5] = [
        ViewKind::City,
        ViewKind::Icicle,
        ViewKind::Sunburst,
        ViewKind::Timeline,
        ViewKind::Lifetimes,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ViewKind::City => "city",
            ViewKind::Icicle => "icicle",
            ViewKind::Sunburst => "sunburst",
            ViewKind::Timeline => "timeline",
            ViewKind::Lifetimes => "lifetimes",
        }
    }

    /// The view after this one, as `V` cycles them.
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&v| v == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// Views drawn flat in the main area, beside the sidebar the details panel and the leak
    /// suspects keep (`views::main_area`): all but the city.
    pub fn is_2d(self) -> bool {
        self != ViewKind::City
    }

    /// Views that draw the grouping tree in 2D.
    pub fn is_tree(self) -> bool {
        matches!(
            self,
            ViewKind::Icicle | ViewKind::Sunburst | ViewKind::Timeline
        )
    }
}

/// The transport buttons, left to right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    First,
    Back,
    Play,
    Forward,
    Live,
    Slower,
    Faster,
}

pub const TRANSPORT: [Transport; 7] = [
    Transport::First,
    Transport::Back,
    Transport::Play,
    Transport::Forward,
    Transport::Live,
    Transport::Slower,
    Transport::Faster,
];

/// What a click landed on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hit {
    /// A settings row's left (-1) or right (+1) arrow, or the row itself (+1).
    Setting(Setting, i32),
    /// The gear: open or close the settings.
    Settings,
    Transport(Transport),
    /// The time slider, at this fraction of the session (0 first snapshot, 1 the newest).
    Slider(f32),
    /// The heap timeline strip.
    Timeline,
    /// The details panel's close box.
    CloseDetails,
    /// A line of the leak-suspects list: choose that suspect.
    Suspect(usize),
    /// A view button: show that view.
    View(ViewKind),
    /// Somewhere on a panel with nothing to click: the city under it must not react.
    Panel,
}

pub const STATUS_HEIGHT: f32 = 26.0;
pub const ROW_HEIGHT: f32 = 24.0;
pub const BUTTON: f32 = 30.0;
pub const SETTINGS_WIDTH: f32 = 350.0;
pub const DETAILS_WIDTH: f32 = 380.0;
/// The leak-suspects list's least width; it widens to its longest line where the window has
/// room (see `Screen::with_suspects`).
pub const SUSPECTS_WIDTH: f32 = 460.0;
/// A character's width in the suspects' lines (the HUD's font is monospaced, drawn at 15
/// pixels there): the list widens by it, and a line still too long is cut with "...".
pub const SUSPECT_CHAR: f32 = 6.7;
/// Height of a line of the leak-suspects list, and of its title.
pub const SUSPECT_LINE: f32 = 18.0;
const SUSPECTS_TITLE: f32 = 24.0;
/// The key-hint band at the top (two lines of hints), which panels start below.
pub const HINTS_HEIGHT: f32 = 42.0;
/// The view buttons, top right beside the gear.
pub const VIEW_BUTTON: (f32, f32) = (86.0, 28.0);
/// The colour legend above the heap strip, right-aligned.
pub const LEGEND: (f32, f32) = (520.0, 42.0);

/// How much the HUD and the 2D views are scaled up in a `width` x `height` window: they are laid
/// out for about 1280x800, so a 1920x1080 window gets 1.2, 2560x1440 1.6 and 4K 2.4; smaller
/// windows are not scaled down (text under 12 pixels would not read).
pub fn ui_scale(width: f32, height: f32) -> f32 {
    (height / 900.0).min(width / 1600.0).max(1.0)
}

/// The leak-suspects list's panel at `(x, y)`, `width` wide, and its `lines` rows.
fn suspects_list(x: f32, y: f32, width: f32, lines: usize) -> (Area, Vec<Area>) {
    let panel = Area::new(
        x,
        y,
        width,
        SUSPECTS_TITLE + lines as f32 * SUSPECT_LINE + 6.0,
    );
    let rows = (0..lines)
        .map(|i| {
            Area::new(
                panel.x + 8.0,
                panel.y + SUSPECTS_TITLE + i as f32 * SUSPECT_LINE,
                panel.w - 16.0,
                SUSPECT_LINE,
            )
        })
        .collect();
    (panel, rows)
}

/// One row of the settings panel: the whole row and its left and right arrows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettingRow {
    pub setting: Setting,
    pub row: Area,
    pub less: Area,
    pub more: Area,
}

/// Where everything sits for one window size and panel state.
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    pub status: Area,
    /// The transport bar: buttons, then the slider.
    pub transport: Vec<(Transport, Area)>,
    pub slider: Area,
    pub strip: Strip,
    pub gear: Area,
    /// The settings panel and its rows, when open.
    pub settings: Option<(Area, Vec<SettingRow>)>,
    /// The details panel and its close box, when something is selected.
    pub details: Option<(Area, Area)>,
    /// The leak-suspects list and its lines, when there are suspects (see `with_suspects`).
    pub suspects: Option<(Area, Vec<Area>)>,
    /// The view buttons, left to right (see `with_views`).
    pub views: Vec<(ViewKind, Area)>,
    /// The legend of colours and opacity.
    pub legend: Area,
}

impl Screen {
    /// `details`: the height the details panel wants (see [`details_rows`]), when a group is
    /// selected; it gets at most the room above the timeline.
    pub fn new(width: f32, height: f32, settings_open: bool, details: Option<f32>) -> Self {
        let status = Area::new(0.0, height - STATUS_HEIGHT, width, STATUS_HEIGHT);
        let bar_y = status.y - BUTTON - 6.0;
        let mut transport = Vec::new();
        let mut x = 10.0;
        for t in TRANSPORT {
            // A gap between stepping and the period buttons.
            if t == Transport::Slower {
                x += 10.0;
            }
            transport.push((t, Area::new(x, bar_y, BUTTON, BUTTON)));
            x += BUTTON + 4.0;
        }
        let slider = Area::new(x + 10.0, bar_y, (width - x - 20.0).max(40.0), BUTTON);
        let strip = Strip {
            x: 10.0,
            y: bar_y - 6.0 - 50.0,
            w: width - 20.0,
            h: 50.0,
        };
        let gear = Area::new(width - 10.0 - BUTTON, 8.0, BUTTON, BUTTON);
        let settings = settings_open.then(|| {
            let rows_h = SETTINGS.len() as f32 * ROW_HEIGHT;
            let panel = Area::new(
                width - 10.0 - SETTINGS_WIDTH,
                gear.y + BUTTON + 6.0,
                SETTINGS_WIDTH,
                rows_h + 36.0,
            );
            let rows = SETTINGS
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let y = panel.y + 28.0 + i as f32 * ROW_HEIGHT;
                    let row = Area::new(panel.x + 8.0, y, panel.w - 16.0, ROW_HEIGHT - 2.0);
                    let more = Area::new(row.x + row.w - 22.0, y, 22.0, ROW_HEIGHT - 2.0);
                    let less = Area::new(more.x - 160.0, y, 22.0, ROW_HEIGHT - 2.0);
                    SettingRow {
                        setting: s,
                        row,
                        less,
                        more,
                    }
                })
                .collect();
            (panel, rows)
        });
        let details = details.map(|wanted| {
            let top = HINTS_HEIGHT + 6.0;
            let room = (strip.y - 10.0 - top).max(120.0);
            let panel = Area::new(10.0, top, DETAILS_WIDTH, wanted.min(room));
            let close = Area::new(panel.x + panel.w - 24.0, panel.y + 4.0, 20.0, 20.0);
            (panel, close)
        });
        Self {
            status,
            transport,
            slider,
            strip,
            gear,
            settings,
            details,
            suspects: None,
            views: Vec::new(),
            legend: Area::new(
                (width - 10.0 - LEGEND.0).max(10.0),
                strip.y - 6.0 - LEGEND.1,
                LEGEND.0.min(width - 20.0),
                LEGEND.1,
            ),
        }
    }

    /// Adds the view buttons (city, icicle, sunburst, timeline) left of the gear.
    pub fn with_views(mut self) -> Self {
        let (w, h) = VIEW_BUTTON;
        let n = ViewKind::ALL.len() as f32;
        let mut x = self.gear.x - 10.0 - n * (w + 4.0) + 4.0;
        for view in ViewKind::ALL {
            self.views
                .push((view, Area::new(x, self.gear.y + (BUTTON - h) / 2.0, w, h)));
            x += w + 4.0;
        }
        self
    }

    /// Adds the leak-suspects list (`lines` of it, the longest `longest` characters) under the
    /// gear, where the settings open: the settings panel hides it while open. Left of the gear,
    /// it never covers the details panel on a wide window; on a narrow one it keeps clear of
    /// it. As wide as its longest line where there is room (a holder's root and its numbers
    /// read whole: "1. ArrayList in static CatalogLeak.SESSIONS: +95.6 MiB, +3,133,186 objects
    /// (exact)"), at most half the window past `SUSPECTS_WIDTH`.
    pub fn with_suspects(mut self, lines: usize, longest: usize) -> Self {
        if lines == 0 || self.settings.is_some() {
            return self;
        }
        let right = self.gear.x + self.gear.w;
        let left_bound = self
            .details
            .map_or(10.0, |(panel, _)| panel.x + panel.w + 10.0);
        let wanted = (longest as f32 * SUSPECT_CHAR + 20.0)
            .min(SUSPECTS_WIDTH.max(self.status.w / 2.0))
            .max(SUSPECTS_WIDTH);
        let width = wanted.min(right - left_bound);
        if width < 160.0 {
            return self;
        }
        self.suspects = Some(suspects_list(
            right - width,
            self.gear.y + BUTTON + 6.0,
            width,
            lines,
        ));
        self
    }

    /// The 2D views' layout of the leak-suspects list: in the left sidebar the tree views keep
    /// for the details panel, under it (or at its top), so no panel ever covers the tree and the
    /// tree never moves when a cell is selected.
    pub fn with_suspects_in_sidebar(mut self, lines: usize) -> Self {
        let top = self
            .details
            .map_or(HINTS_HEIGHT + 6.0, |(panel, _)| panel.y + panel.h + 8.0);
        let bottom = self.strip.y - 10.0;
        let fit = ((bottom - top - SUSPECTS_TITLE - 6.0) / SUSPECT_LINE)
            .floor()
            .max(0.0) as usize;
        let lines = lines.min(fit);
        if lines == 0 {
            return self;
        }
        self.suspects = Some(suspects_list(10.0, top, DETAILS_WIDTH, lines));
        self
    }

    /// What a click at `(x, y)` lands on; `None` is the city.
    pub fn hit(&self, x: f32, y: f32) -> Option<Hit> {
        if let Some((panel, rows)) = &self.settings {
            for &SettingRow {
                setting,
                row,
                less,
                more,
            } in rows
            {
                if less.contains(x, y) {
                    return Some(Hit::Setting(setting, -1));
                }
                if more.contains(x, y) || row.contains(x, y) {
                    return Some(Hit::Setting(setting, 1));
                }
            }
            if panel.contains(x, y) {
                return Some(Hit::Panel);
            }
        }
        if self.gear.contains(x, y) {
            return Some(Hit::Settings);
        }
        if let Some(&(view, _)) = self.views.iter().find(|(_, a)| a.contains(x, y)) {
            return Some(Hit::View(view));
        }
        if let Some((panel, rows)) = &self.suspects {
            if let Some(i) = rows.iter().position(|r| r.contains(x, y)) {
                return Some(Hit::Suspect(i));
            }
            if panel.contains(x, y) {
                return Some(Hit::Panel);
            }
        }
        if let Some((panel, close)) = &self.details {
            if close.contains(x, y) {
                return Some(Hit::CloseDetails);
            }
            if panel.contains(x, y) {
                return Some(Hit::Panel);
            }
        }
        if let Some(&(t, _)) = self.transport.iter().find(|(_, a)| a.contains(x, y)) {
            return Some(Hit::Transport(t));
        }
        if self.slider.contains(x, y) {
            return Some(Hit::Slider(self.slider_fraction(x)));
        }
        if self.strip.contains(x, y) {
            return Some(Hit::Timeline);
        }
        if self.status.contains(x, y) || (y >= self.slider.y && y < self.status.y) {
            return Some(Hit::Panel);
        }
        None
    }

    /// Where along the slider pixel column `x` is, 0 to 1.
    pub fn slider_fraction(&self, x: f32) -> f32 {
        let track = self.slider_track();
        ((x - track.0) / (track.1 - track.0)).clamp(0.0, 1.0)
    }

    /// The slider's usable track, first and last pixel column (the knob's half width inside).
    pub fn slider_track(&self) -> (f32, f32) {
        (self.slider.x + 8.0, self.slider.x + self.slider.w - 8.0)
    }

    /// The knob's center for snapshot `index` of `len`.
    pub fn slider_knob(&self, index: usize, len: usize) -> f32 {
        let (a, b) = self.slider_track();
        if len <= 1 {
            return b;
        }
        a + (b - a) * index as f32 / (len - 1) as f32
    }
}

/// One line of the details panel, from the top of the panel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetailsRow {
    pub kind: RowKind,
    /// Top of the row, from the panel's top, and its height.
    pub top: f32,
    pub height: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Title,
    Path,
    Numbers,
    /// How much of an estimate may be garbage no old-generation marking has seen (only when
    /// there is any).
    Unconfirmed,
    Growth,
    Sparkline,
    SitesHeading,
    /// The i-th listed site.
    Site(usize),
    /// Line i of the hint shown when the session has no site level.
    SitesHint(usize),
    NoSites,
    IncomingHeading,
    /// The i-th reference into the group (clickable when its group has a node).
    Incoming(usize),
    OutgoingHeading,
    Outgoing(usize),
    /// The leak suspect's trace through this group: its root, then each step (clickable).
    TraceHeading,
    TraceStep(usize),
}

impl DetailsRow {
    /// Where the row is drawn inside `panel`, or `None` when the panel is too short for it (a
    /// short window cuts the rest).
    pub fn area(&self, panel: Area) -> Option<Area> {
        let area = Area::new(
            panel.x + 10.0,
            panel.y + self.top,
            panel.w - 20.0,
            self.height,
        );
        (area.y + area.h <= panel.y + panel.h).then_some(area)
    }
}

/// The group a click at `(x, y)` on the details panel follows: a reference line whose group has
/// a node in the city.
pub fn link_at(
    panel: Area,
    rows: &[DetailsRow],
    d: &memcity_city::details::Details,
    x: f32,
    y: f32,
) -> Option<memcity_city::model::NodeId> {
    let row = rows
        .iter()
        .find(|r| r.area(panel).is_some_and(|a| a.contains(x, y)))?;
    match row.kind {
        RowKind::Incoming(i) => d.incoming.get(i)?.node,
        RowKind::Outgoing(i) => d.outgoing.get(i)?.node,
        RowKind::TraceStep(i) => d.trace.as_ref()?.steps.get(i)?.node,
        _ => None,
    }
}

/// Lines of the hint shown for a type in a session without a site level.
pub const SITES_HINT: [&str; 2] = [
    "not in this session: start the agent with",
    "classifiers=package:type:site",
];

/// The details panel's rows for `d`, top to bottom, and the panel's height with all of them.
pub fn details_rows(d: &memcity_city::details::Details) -> (Vec<DetailsRow>, f32) {
    use memcity_city::details::Sites;
    let mut rows = Vec::new();
    let mut top = 6.0;
    let mut push = |kind: RowKind, height: f32, top: &mut f32| {
        rows.push(DetailsRow {
            kind,
            top: *top,
            height,
        });
        *top += height;
    };
    push(RowKind::Title, 22.0, &mut top);
    push(RowKind::Path, 18.0, &mut top);
    push(RowKind::Numbers, 20.0, &mut top);
    if d.unconfirmed != (0, 0) {
        push(RowKind::Unconfirmed, 17.0, &mut top);
    }
    push(RowKind::Growth, 20.0, &mut top);
    push(RowKind::Sparkline, 62.0, &mut top);
    // The root cause first: it is what the panel is opened for when a group leaks.
    if let Some(trace) = &d.trace {
        push(RowKind::TraceHeading, 20.0, &mut top);
        for i in 0..trace.steps.len() {
            push(RowKind::TraceStep(i), 17.0, &mut top);
        }
        top += 6.0;
    }
    match &d.sites {
        Sites::Listed { sites, .. } => {
            push(RowKind::SitesHeading, 20.0, &mut top);
            if sites.is_empty() {
                push(RowKind::NoSites, 17.0, &mut top);
            }
            for i in 0..sites.len() {
                push(RowKind::Site(i), 17.0, &mut top);
            }
            top += 6.0;
        }
        Sites::NotClassified => {
            push(RowKind::SitesHeading, 20.0, &mut top);
            for i in 0..SITES_HINT.len() {
                push(RowKind::SitesHint(i), 17.0, &mut top);
            }
            top += 6.0;
        }
        Sites::NotApplicable => {}
    }
    if !d.incoming.is_empty() {
        push(RowKind::IncomingHeading, 20.0, &mut top);
        for i in 0..d.incoming.len() {
            push(RowKind::Incoming(i), 17.0, &mut top);
        }
        top += 6.0;
    }
    if !d.outgoing.is_empty() {
        push(RowKind::OutgoingHeading, 20.0, &mut top);
        for i in 0..d.outgoing.len() {
            push(RowKind::Outgoing(i), 17.0, &mut top);
        }
    }
    (rows, top + 8.0)
}

/// The snapshot a slider fraction stands for.
pub fn slider_index(fraction: f32, len: usize) -> usize {
    if len <= 1 {
        return 0;
    }
    (fraction.clamp(0.0, 1.0) * (len - 1) as f32).round() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page names the view it shows by its place in `ALL` (`web::drawn`): its own list
    /// must be this one, in this order.
    #[test]
    fn the_page_knows_the_views_in_their_order() {
        let js = include_str!("../web/memcity.js");
        let line = js
            .lines()
            .find(|l| l.trim_start().starts_with("const VIEWS = ["))
            .expect("memcity.js lists the views");
        let names: Vec<&str> = ViewKind::ALL.iter().map(|v| v.label()).collect();
        let listed = format!("const VIEWS = [\"{}\"];", names.join("\", \""));
        assert_eq!(line.trim(), listed);
    }

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

    #[test]
    fn clicks_land_on_what_is_drawn_there() {
        let screen = Screen::new(1280.0, 720.0, true, Some(5000.0));
        let at = |a: Area| screen.hit(a.center().0, a.center().1);
        for &(t, area) in &screen.transport {
            assert_eq!(at(area), Some(Hit::Transport(t)));
        }
        assert_eq!(at(screen.gear), Some(Hit::Settings));
        let (panel, rows) = screen.settings.clone().unwrap();
        assert_eq!(rows.len(), SETTINGS.len());
        for SettingRow {
            setting,
            row,
            less,
            more,
        } in rows
        {
            assert_eq!(at(less), Some(Hit::Setting(setting, -1)));
            assert_eq!(at(more), Some(Hit::Setting(setting, 1)));
            assert_eq!(
                screen.hit(row.x + 4.0, row.center().1),
                Some(Hit::Setting(setting, 1))
            );
            assert!(panel.contains(row.x, row.y) && panel.contains(more.x + more.w - 1.0, row.y));
        }
        let (details, close) = screen.details.unwrap();
        assert_eq!(at(close), Some(Hit::CloseDetails));
        assert_eq!(
            screen.hit(details.x + 5.0, details.y + 60.0),
            Some(Hit::Panel)
        );
        // Panels do not overlap each other or the bottom bars.
        assert!(details.x + details.w < panel.x);
        assert!(details.y + details.h < screen.strip.y);
        assert_eq!(
            screen.hit(screen.strip.x + 50.0, screen.strip.y + 10.0),
            Some(Hit::Timeline)
        );
        // The slider maps its ends to the first and the newest snapshot, and back.
        let (a, b) = screen.slider_track();
        assert_eq!(
            screen.hit(a, screen.slider.center().1),
            Some(Hit::Slider(0.0))
        );
        assert_eq!(slider_index(screen.slider_fraction(b), 10), 9);
        for i in 0..10 {
            assert_eq!(
                slider_index(screen.slider_fraction(screen.slider_knob(i, 10)), 10),
                i
            );
        }
        // The middle of the window is the city.
        assert_eq!(screen.hit(640.0, 300.0), None);
        // The leak-suspects list sits under the gear, clear of the details panel, each line a
        // suspect; the open settings hide it.
        let listed = Screen::new(1280.0, 720.0, false, Some(400.0)).with_suspects(3, 40);
        let (list, lines) = listed.suspects.clone().unwrap();
        assert_eq!(lines.len(), 3);
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(
                listed.hit(line.center().0, line.center().1),
                Some(Hit::Suspect(i))
            );
        }
        let (details_panel, _) = listed.details.unwrap();
        assert!(list.x > details_panel.x + details_panel.w);
        assert!(list.y > listed.gear.y + listed.gear.h);
        assert!(screen.clone().with_suspects(3, 40).suspects.is_none());
        // A long line widens the list to read whole, up to half the window, still clear of
        // the details panel and right of the window's middle.
        let long = Screen::new(1280.0, 720.0, false, Some(400.0)).with_suspects(1, 80);
        let (wide, rows) = long.suspects.unwrap();
        assert!(rows[0].w >= 80.0 * SUSPECT_CHAR, "{wide:?}");
        assert!(wide.w <= 640.0 && wide.x > details_panel.x + details_panel.w);
        let longest = Screen::new(1280.0, 720.0, false, None).with_suspects(1, 400);
        assert_eq!(longest.suspects.unwrap().0.w, 640.0);
        assert!(Screen::new(1280.0, 720.0, false, None)
            .with_suspects(0, 0)
            .suspects
            .is_none());
        // Closed panels take no clicks.
        let bare = Screen::new(1280.0, 720.0, false, None);
        assert_eq!(bare.hit(panel.center().0, panel.center().1), None);
        assert_eq!(bare.hit(details.center().0, details.center().1), None);
    }

    #[test]
    fn details_rows_follow_the_content() {
        use memcity_city::details::{Details, Link, Sites};
        let link = |name: &str| Link {
            name: name.into(),
            node: Some(3),
            referrers: 5,
            references: 7,
        };
        let mut d = Details {
            node: 2,
            name: "Node".into(),
            role: memcity_city::model::Role::Type,
            path: vec!["Type: Node".into()],
            objects: 10,
            bytes: 240,
            growth: 9,
            series: vec![1, 10],
            estimated: false,
            unconfirmed: (0, 0),
            sites: Sites::Listed {
                sites: vec![("a".into(), 6), ("b".into(), 4)],
                of: 10,
                estimated: true,
            },
            incoming: vec![link("List")],
            outgoing: vec![],
            trace: None,
        };
        let (rows, height) = details_rows(&d);
        let kinds: Vec<RowKind> = rows.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RowKind::Title,
                RowKind::Path,
                RowKind::Numbers,
                RowKind::Growth,
                RowKind::Sparkline,
                RowKind::SitesHeading,
                RowKind::Site(0),
                RowKind::Site(1),
                RowKind::IncomingHeading,
                RowKind::Incoming(0),
            ]
        );
        for pair in rows.windows(2) {
            assert!(pair[0].top + pair[0].height <= pair[1].top, "{pair:?}");
        }
        let last = rows.last().unwrap();
        assert!(height >= last.top + last.height);
        // No sites level: the hint instead; more links: a taller panel.
        d.sites = Sites::NotClassified;
        d.outgoing = vec![link("Person"), link("String")];
        let (rows, taller) = details_rows(&d);
        assert!(rows.iter().any(|r| r.kind == RowKind::SitesHint(1)));
        assert!(rows.iter().any(|r| r.kind == RowKind::Outgoing(1)));
        assert!(taller > height);
        // An estimate with garbage in doubt says so under its numbers.
        assert!(!rows.iter().any(|r| r.kind == RowKind::Unconfirmed));
        let doubt = details_rows(&Details {
            unconfirmed: (3, 72),
            ..d.clone()
        })
        .0;
        let kinds: Vec<RowKind> = doubt.iter().take(5).map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RowKind::Title,
                RowKind::Path,
                RowKind::Numbers,
                RowKind::Unconfirmed,
                RowKind::Growth
            ]
        );
        // A click on a reference line follows it; elsewhere it does not.
        let panel = Area::new(10.0, 30.0, 380.0, taller);
        let line = |kind| {
            rows.iter()
                .find(|r| r.kind == kind)
                .unwrap()
                .area(panel)
                .unwrap()
        };
        let (x, y) = line(RowKind::Outgoing(1)).center();
        assert_eq!(link_at(panel, &rows, &d, x, y), Some(3));
        let (x, y) = line(RowKind::Title).center();
        assert_eq!(link_at(panel, &rows, &d, x, y), None);
        d.outgoing[1].node = None;
        assert_eq!(
            link_at(panel, &rows, &d, x, y),
            None,
            "a group not in the city"
        );
        // A panel cut short hides, and so cannot follow, the lines past its end.
        let short = Area { h: 100.0, ..panel };
        assert!(line(RowKind::Outgoing(1)).y > short.y + short.h);
        assert_eq!(
            rows.iter()
                .find(|r| r.kind == RowKind::Outgoing(1))
                .unwrap()
                .area(short),
            None
        );

        // A leak suspect's trace comes right under the sparkline, each step a link.
        use memcity_city::details::{Trace, TraceStep};
        let step = |label: &str, node| TraceStep {
            label: label.into(),
            type_name: label.into(),
            holder: false,
            node,
            suspect: false,
            content: false,
            growth: 0,
        };
        d.trace = Some(Trace {
            root: "static App.PEOPLE".into(),
            confidence: "exact",
            confirmed: true,
            steps: vec![
                step("java.util.LinkedList", Some(7)),
                step(".first Node", None),
            ],
        });
        let (rows, _) = details_rows(&d);
        let kinds: Vec<RowKind> = rows.iter().map(|r| r.kind).take(8).collect();
        assert_eq!(
            kinds[5..],
            [
                RowKind::TraceHeading,
                RowKind::TraceStep(0),
                RowKind::TraceStep(1)
            ]
        );
        let at = |kind| {
            rows.iter()
                .find(|r| r.kind == kind)
                .unwrap()
                .area(Area::new(10.0, 30.0, 380.0, 2000.0))
                .unwrap()
                .center()
        };
        let big = Area::new(10.0, 30.0, 380.0, 2000.0);
        let (x, y) = at(RowKind::TraceStep(0));
        assert_eq!(link_at(big, &rows, &d, x, y), Some(7));
        let (x, y) = at(RowKind::TraceStep(1));
        assert_eq!(
            link_at(big, &rows, &d, x, y),
            None,
            "a type not in the city"
        );

        // The screen gives the panel what it wants, up to the room above the timeline.
        let screen = Screen::new(1280.0, 720.0, false, Some(taller));
        assert_eq!(screen.details.unwrap().0.h, taller);
        let small = Screen::new(1280.0, 300.0, false, Some(taller));
        assert!(small.details.unwrap().0.h < taller);
    }
}
