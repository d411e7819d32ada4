//! The viewer's controls without a window: the settings and what each changes, the views the
//! buttons switch between, and where the panels, buttons and slider sit on screen for a given
//! window size, with hit testing. The window draws these rectangles and sends clicks here, so
//! the layout and the meaning of every click are tested with `cargo test`.
//!
//! The settings in `settings.rs`, the views in `view_kind.rs`, the screen's layout and its hit
//! testing in `screen.rs`, and the details panel's rows in `details.rs`.

mod details;
mod screen;
mod settings;
mod view_kind;

pub use details::{details_rows, link_at, DetailsRow, RowKind, SITES_HINT};
pub use screen::{
    page_bar, set_page_bar, slider_index, suspect_rows, suspect_text_width, ui_scale, Hit, Screen,
    SettingRow, Transport, BUTTON, DETAILS_WIDTH, HINTS_HEIGHT, LEGEND, ROW_HEIGHT, SETTINGS_WIDTH,
    STATUS_HEIGHT, SUSPECTS_WIDTH, SUSPECT_CHAR, SUSPECT_LINE, SUSPECT_ROWS, TRANSPORT,
    VIEW_BUTTON,
};
pub use settings::{Change, Setting, Settings, SETTINGS};
pub use view_kind::ViewKind;

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
