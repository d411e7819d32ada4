//! Where a frame put its text, as the font measured it: each panel's rectangle, the extent of
//! every text drawn in it, and the marks (lines, dots) drawn near text. Whether a line is cut or
//! runs under another panel depends on the font and the window's size, which no window-free test
//! sees; so a frame can say what it laid out, and a test reads it from the real window and the
//! real page: the window writes it to the file `MEMCITY_LAYOUT` names, the page hands it to
//! `memcity_page.layout`. Unasked, nothing is recorded.
//!
//! Rectangles are `[x, y, w, h]` in the HUD's units (pixels divided by `scale`, see
//! `controls::ui_scale`); a text's is its ink, from the top of its tallest glyph to the bottom of
//! its deepest.

use std::cell::RefCell;

use macroquad::prelude::measure_text;
use serde::Serialize;

use crate::controls::Area;

/// What a frame laid out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Layout {
    pub width: f32,
    pub height: f32,
    pub scale: f32,
    pub view: &'static str,
    pub panels: Vec<Panel>,
}

/// A rectangle the frame drew text in, and what it drew there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Panel {
    /// What it is: `status`, `hints`, `suspects`, `label`, `view` (the main area's own), ...
    pub name: String,
    /// `hud` for the panels drawn over the view, `view` for the main area and what lies in it.
    pub layer: &'static str,
    pub rect: [f32; 4],
    pub texts: Vec<Text>,
    /// Lines and dots as `[x0, y0, x1, y1, width]` (a dot is a line of no length, as wide as
    /// it is across): what a chart draws beside its labels, which must keep clear of them.
    pub marks: Vec<[f32; 5]>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Text {
    pub text: String,
    pub size: f32,
    pub rect: [f32; 4],
}

thread_local! {
    /// The frame being recorded, when asked for.
    static FRAME: RefCell<Option<Layout>> = const { RefCell::new(None) };
}

/// Starts recording a frame of `width` x `height` HUD units drawn at `scale`, showing `view`;
/// what it drew is [`end`]'s.
pub fn begin(width: f32, height: f32, scale: f32, view: &'static str) {
    FRAME.with(|f| {
        *f.borrow_mut() = Some(Layout {
            width,
            height,
            scale,
            view,
            panels: Vec::new(),
        })
    });
}

/// The frame recorded since [`begin`], as JSON; `None` when none was begun.
pub fn end() -> Option<String> {
    let layout = FRAME.with(|f| f.borrow_mut().take())?;
    serde_json::to_string(&layout).ok()
}

fn with(record: impl FnOnce(&mut Layout)) {
    FRAME.with(|f| {
        if let Some(layout) = f.borrow_mut().as_mut() {
            record(layout);
        }
    });
}

/// A HUD panel at `area`: the text and marks drawn next belong to it.
pub fn panel(name: &str, area: Area) {
    open(name, "hud", area);
}

/// A part of the main area (the view's own drawing) at `area`.
pub fn view_panel(name: &str, area: Area) {
    open(name, "view", area);
}

fn open(name: &str, layer: &'static str, area: Area) {
    with(|layout| {
        layout.panels.push(Panel {
            name: name.to_string(),
            layer,
            rect: [area.x, area.y, area.w, area.h],
            texts: Vec::new(),
            marks: Vec::new(),
        })
    });
}

/// `s` drawn with its baseline's left end at `(x, y)`, `size` pixels high.
pub fn text(s: &str, x: f32, y: f32, size: f32) {
    with(|layout| {
        let Some(panel) = layout.panels.last_mut() else {
            return;
        };
        let d = measure_text(s, None, size as u16, 1.0);
        panel.texts.push(Text {
            text: s.to_string(),
            size,
            rect: [x, y - d.offset_y, d.width, d.height],
        });
    });
}

/// A line from `(x0, y0)` to `(x1, y1)`, `width` across, in the current panel.
pub fn line(x0: f32, y0: f32, x1: f32, y1: f32, width: f32) {
    with(|layout| {
        if let Some(panel) = layout.panels.last_mut() {
            panel.marks.push([x0, y0, x1, y1, width]);
        }
    });
}

/// A dot of radius `r` at `(x, y)`, in the current panel.
pub fn dot(x: f32, y: f32, r: f32) {
    line(x, y, x, y, 2.0 * r);
}
