//! Where the panels, buttons and slider sit for one window size and panel state, and what a
//! click at a point lands on.

use memcity_city::timeline::Strip;

use super::settings::{Setting, SETTINGS};
use super::{Area, ViewKind};

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

/// The width in pixels of what the page lays over the status bar's right end (its file name
/// and buttons), as the page last said (`set_page_bar`); natively nothing covers it.
static PAGE_BAR: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The page's bar is `pixels` wide, counted from the window's right edge, margins included.
pub fn set_page_bar(pixels: f32) {
    PAGE_BAR.store(
        pixels.max(0.0).to_bits(),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// See [`set_page_bar`].
pub fn page_bar() -> f32 {
    f32::from_bits(PAGE_BAR.load(std::sync::atomic::Ordering::Relaxed))
}

/// How much the HUD and the 2D views are scaled up in a `width` x `height` window: they are laid
/// out for about 1280x800, so a 1920x1080 window gets 1.2, 2560x1440 1.6 and 4K 2.4; smaller
/// windows are not scaled down (text under 12 pixels would not read).
pub fn ui_scale(width: f32, height: f32) -> f32 {
    (height / 900.0).min(width / 1600.0).max(1.0)
}

/// Most rows a suspect's line takes in the list; what is left after them is cut.
pub const SUSPECT_ROWS: usize = 3;

/// A suspect's line in rows of at most `width` pixels (at [`SUSPECT_CHAR`] a character), each
/// row after the first indented under the line's number; at most [`SUSPECT_ROWS`] of them, the
/// last cut with "..." if more is left. Rows break after a phrase (at ": " and ", "), so that a
/// holder and its root, and an amount and its unit, stay on one row; a phrase longer than a row
/// breaks between words. A holder's root and its numbers read whole on two rows of the 2D
/// views' sidebar.
pub fn suspect_rows(text: &str, width: f32) -> Vec<String> {
    const INDENT: &str = "   ";
    let chars = ((width / SUSPECT_CHAR).floor() as usize).max(INDENT.len() + 4);
    let mut units: Vec<String> = Vec::new();
    let mut phrase = String::new();
    for word in text.split(' ') {
        if !phrase.is_empty() {
            phrase.push(' ');
        }
        phrase.push_str(word);
        if word.ends_with(':') || word.ends_with(',') {
            units.push(std::mem::take(&mut phrase));
        }
    }
    units.push(phrase);
    let units: Vec<String> = units
        .into_iter()
        .flat_map(|unit| {
            if unit.chars().count() + INDENT.len() <= chars {
                vec![unit]
            } else {
                unit.split(' ').map(str::to_string).collect()
            }
        })
        .filter(|unit| !unit.is_empty())
        .collect();
    let mut rows: Vec<String> = Vec::new();
    let mut row = String::new();
    for unit in units {
        let candidate = if row.is_empty() {
            let lead = if rows.is_empty() { "" } else { INDENT };
            format!("{lead}{unit}")
        } else {
            format!("{row} {unit}")
        };
        if candidate.chars().count() <= chars || row.is_empty() {
            row = candidate;
        } else {
            rows.push(std::mem::take(&mut row));
            row = format!("{INDENT}{unit}");
        }
        // A word longer than a row is broken where the row ends.
        while row.chars().count() > chars {
            rows.push(row.chars().take(chars).collect());
            row = format!("{INDENT}{}", row.chars().skip(chars).collect::<String>());
        }
    }
    if !row.trim().is_empty() {
        rows.push(row);
    }
    if rows.len() > SUSPECT_ROWS {
        rows.truncate(SUSPECT_ROWS);
        let last = &mut rows[SUSPECT_ROWS - 1];
        let kept: String = last.chars().take(chars.saturating_sub(3)).collect();
        *last = format!("{kept}...");
    }
    rows
}

/// The leak-suspects list's panel at `(x, y)`, `width` wide, and its lines' areas, each of its
/// `rows` (see [`suspect_rows`]).
fn suspects_list(x: f32, y: f32, width: f32, rows: &[usize]) -> (Area, Vec<Area>) {
    let total: usize = rows.iter().sum();
    let panel = Area::new(
        x,
        y,
        width,
        SUSPECTS_TITLE + total as f32 * SUSPECT_LINE + 6.0,
    );
    let mut top = panel.y + SUSPECTS_TITLE;
    let lines = rows
        .iter()
        .map(|&n| {
            let line = Area::new(panel.x + 8.0, top, panel.w - 16.0, n as f32 * SUSPECT_LINE);
            top += line.h;
            line
        })
        .collect();
    (panel, lines)
}

/// The room a line of the suspects list has for its text: its area less the margins.
pub fn suspect_text_width(line: Area) -> f32 {
    line.w - 4.0
}

/// How many rows each of `lines` takes in a suspects list `width` wide.
fn rows_of(lines: &[&str], width: f32) -> Vec<usize> {
    let line = suspects_list(0.0, 0.0, width, &[1]).1[0];
    lines
        .iter()
        .map(|l| suspect_rows(l, suspect_text_width(line)).len().max(1))
        .collect()
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
    /// The status bar's right end that something else covers (the page's own bar), where its
    /// text does not go (see `reserving_status_end`).
    pub status_reserved: f32,
    /// Whether the panels and bars are drawn: a screenshot without `--hud` is the view alone,
    /// which then has the whole picture (see `without_hud`).
    pub hud: bool,
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
            status_reserved: 0.0,
            hud: true,
        }
    }

    /// The screen of a picture with no panels or bars (a screenshot without `--hud`): nothing
    /// to click, and the view's main area is all of it (`views::main_area`).
    pub fn without_hud(mut self) -> Self {
        self.hud = false;
        self.settings = None;
        self.details = None;
        self.suspects = None;
        self.views.clear();
        self
    }

    /// The picture's width and height.
    pub fn size(&self) -> (f32, f32) {
        (self.status.w, self.status.y + self.status.h)
    }

    /// Leaves the status bar's last `width` units to what covers them: the page lays its file
    /// name and its buttons over that end of the bar (`viewer/web/`), and the line says what
    /// it has to say left of them.
    pub fn reserving_status_end(mut self, width: f32) -> Self {
        self.status_reserved = width.clamp(0.0, self.status.w);
        self
    }

    /// The part of the status bar its text goes in.
    pub fn status_text(&self) -> Area {
        let s = self.status;
        Area::new(s.x, s.y, s.w - self.status_reserved, s.h)
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

    /// Adds the leak-suspects list (its `lines`) under the gear, where the settings open: the
    /// settings panel hides it while open. Left of the gear, it never covers the details panel
    /// on a wide window; on a narrow one it keeps clear of it. As wide as its longest line where
    /// there is room (a holder's root and its numbers read whole: "1. ArrayList in static
    /// CatalogLeak.SESSIONS: +95.6 MiB, +3,133,186 objects (exact)"), at most half the window
    /// past `SUSPECTS_WIDTH`; a line longer still takes more rows.
    pub fn with_suspects(mut self, lines: &[&str]) -> Self {
        if lines.is_empty() || self.settings.is_some() {
            return self;
        }
        let longest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
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
        let rows = rows_of(lines, width);
        self.suspects = Some(suspects_list(
            right - width,
            self.gear.y + BUTTON + 6.0,
            width,
            &rows,
        ));
        self
    }

    /// The 2D views' layout of the leak-suspects list: in the left sidebar the tree views keep
    /// for the details panel, under it (or at its top), so no panel ever covers the tree and the
    /// tree never moves when a cell is selected.
    /// The lines that fit are shown whole, each in as many rows as it takes.
    pub fn with_suspects_in_sidebar(mut self, lines: &[&str]) -> Self {
        let top = self
            .details
            .map_or(HINTS_HEIGHT + 6.0, |(panel, _)| panel.y + panel.h + 8.0);
        let bottom = self.strip.y - 10.0;
        let fit = ((bottom - top - SUSPECTS_TITLE - 6.0) / SUSPECT_LINE)
            .floor()
            .max(0.0) as usize;
        let mut rows = rows_of(lines, DETAILS_WIDTH);
        let mut used = 0;
        rows.retain(|&n| {
            used += n;
            used <= fit
        });
        if rows.is_empty() {
            return self;
        }
        self.suspects = Some(suspects_list(10.0, top, DETAILS_WIDTH, &rows));
        self
    }

    /// What a click at `(x, y)` lands on; `None` is the city.
    pub fn hit(&self, x: f32, y: f32) -> Option<Hit> {
        if !self.hud {
            return None;
        }
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

    #[test]
    fn a_suspects_line_is_broken_between_words_into_rows_that_fit() {
        let line =
            "1. LinkedList in static LinkedListLeak.PEOPLE: +15.8 MiB, +620,039 objects (exact)";
        let rows = suspect_rows(line, 364.0 - 4.0);
        assert_eq!(
            rows,
            [
                "1. LinkedList in static LinkedListLeak.PEOPLE:",
                "   +15.8 MiB, +620,039 objects (exact)"
            ]
        );
        for row in &rows {
            assert!(row.chars().count() as f32 * SUSPECT_CHAR <= 360.0, "{row}");
        }
        assert_eq!(suspect_rows(line, 1000.0), [line]);
        // A word longer than a row is broken; past the last row the rest is cut.
        let rows = suspect_rows(&"x".repeat(30), 10.0 * SUSPECT_CHAR);
        assert_eq!(rows, ["xxxxxxxxxx", "   xxxxxxx", "   xxxx..."]);
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
        let forty = "x".repeat(40);
        let three = [forty.as_str(); 3];
        let listed = Screen::new(1280.0, 720.0, false, Some(400.0)).with_suspects(&three);
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
        assert!(screen.clone().with_suspects(&three).suspects.is_none());
        // A long line widens the list to read whole, up to half the window, still clear of
        // the details panel and right of the window's middle.
        let eighty = "x".repeat(80);
        let long = Screen::new(1280.0, 720.0, false, Some(400.0)).with_suspects(&[&eighty]);
        let (wide, rows) = long.suspects.unwrap();
        assert!(rows[0].w >= 80.0 * SUSPECT_CHAR, "{wide:?}");
        assert_eq!(rows[0].h, SUSPECT_LINE, "one row");
        assert!(wide.w <= 640.0 && wide.x > details_panel.x + details_panel.w);
        // Longer still, it takes more rows, the list at its widest.
        let words = "word ".repeat(25);
        let longest = Screen::new(1280.0, 720.0, false, None).with_suspects(&[&words, "short"]);
        let (list, rows) = longest.suspects.unwrap();
        assert_eq!(list.w, 640.0);
        assert_eq!((rows[0].h, rows[1].h), (2.0 * SUSPECT_LINE, SUSPECT_LINE));
        assert_eq!(rows[1].y, rows[0].y + rows[0].h);
        assert!(list.y + list.h >= rows[1].y + rows[1].h);
        assert!(Screen::new(1280.0, 720.0, false, None)
            .with_suspects(&[])
            .suspects
            .is_none());
        // Closed panels take no clicks.
        let bare = Screen::new(1280.0, 720.0, false, None);
        assert_eq!(bare.hit(panel.center().0, panel.center().1), None);
        assert_eq!(bare.hit(details.center().0, details.center().1), None);
        // A picture without the HUD has nothing to click.
        let view_alone = screen.clone().without_hud();
        assert_eq!(view_alone.hit(close.center().0, close.center().1), None);
        assert_eq!(view_alone.size(), (1280.0, 720.0));
    }
}
