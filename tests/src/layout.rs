//! What a frame of the viewer laid out (its `hud::layout`: the window writes it to the file
//! `MEMCITY_LAYOUT` names, the page keeps it in `memcity_page.layout`), and the rules every
//! frame keeps: each text inside its panel, no text over another panel's text or over a chart's
//! marks, the HUD's panels apart and inside the frame.

use std::path::Path;

use serde_json::Value;

/// A rectangle, `[x, y, w, h]`.
pub type Rect = [f32; 4];

/// Rectangles touching within this much do not count as overlapping: edges are shared.
const EPSILON: f32 = 0.5;

/// A text as laid out: its panel, its words and where its ink is.
#[derive(Debug, Clone)]
pub struct PlacedText {
    pub panel: String,
    pub text: String,
    pub rect: Rect,
}

/// The layout the window wrote to `path`.
pub fn read_layout(path: &Path) -> Value {
    let json = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no layout at {}: {e}", path.display()));
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}: {json}", path.display()))
}

fn rect(value: &Value) -> Rect {
    let n = |i: usize| value[i].as_f64().unwrap_or(f64::NAN) as f32;
    [n(0), n(1), n(2), n(3)]
}

fn panels(layout: &Value) -> &[Value] {
    layout["panels"].as_array().map_or(&[], |p| p.as_slice())
}

/// The panels of `layout` named `name`, each with its rectangle.
pub fn panel_rects(layout: &Value, name: &str) -> Vec<Rect> {
    panels(layout)
        .iter()
        .filter(|p| p["name"] == name)
        .map(|p| rect(&p["rect"]))
        .collect()
}

/// Every text of `layout`, in the order drawn.
pub fn texts(layout: &Value) -> Vec<PlacedText> {
    panels(layout)
        .iter()
        .flat_map(|p| {
            let panel = p["name"].as_str().unwrap_or_default().to_string();
            p["texts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |t| PlacedText {
                    panel: panel.clone(),
                    text: t["text"].as_str().unwrap_or_default().to_string(),
                    rect: rect(&t["rect"]),
                })
        })
        .collect()
}

/// The texts of the panels named `name`.
pub fn texts_of(layout: &Value, name: &str) -> Vec<String> {
    texts(layout)
        .into_iter()
        .filter(|t| t.panel == name)
        .map(|t| t.text)
        .collect()
}

fn inside(inner: Rect, outer: Rect) -> bool {
    inner[0] >= outer[0] - EPSILON
        && inner[1] >= outer[1] - EPSILON
        && inner[0] + inner[2] <= outer[0] + outer[2] + EPSILON
        && inner[1] + inner[3] <= outer[1] + outer[3] + EPSILON
}

pub fn overlap(a: Rect, b: Rect) -> bool {
    a[0] < b[0] + b[2] - EPSILON
        && b[0] < a[0] + a[2] - EPSILON
        && a[1] < b[1] + b[3] - EPSILON
        && b[1] < a[1] + a[3] - EPSILON
}

/// Whether a mark (`[x0, y0, x1, y1, width]`) covers any of `r`.
fn crosses(mark: &[f32], r: Rect) -> bool {
    let (x0, y0, x1, y1, half) = (mark[0], mark[1], mark[2], mark[3], mark[4] / 2.0);
    let length = ((x1 - x0).powi(2) + (y1 - y0).powi(2)).sqrt();
    let steps = (length * 2.0).ceil().max(1.0) as usize;
    (0..=steps).any(|i| {
        let t = i as f32 / steps as f32;
        let (x, y) = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
        // The distance from the mark's point to the rectangle, against its half width.
        let dx = (r[0] - x).max(x - r[0] - r[2]).max(0.0);
        let dy = (r[1] - y).max(y - r[1] - r[3]).max(0.0);
        (dx * dx + dy * dy).sqrt() < half - EPSILON / 2.0
    })
}

/// What breaks the rules in `layout`, one line each (none: it keeps them). `foreign` are
/// rectangles something else draws over the frame (the page's own buttons), which no text of
/// the frame may be under.
pub fn problems(layout: &Value, foreign: &[(String, Rect)]) -> Vec<String> {
    let mut problems = Vec::new();
    let frame = [
        0.0,
        0.0,
        layout["width"].as_f64().unwrap_or(0.0) as f32,
        layout["height"].as_f64().unwrap_or(0.0) as f32,
    ];
    // The tooltip floats over everything by design; a test parks the pointer away.
    let all: Vec<&Value> = panels(layout)
        .iter()
        .filter(|p| p["name"] != "tooltip")
        .collect();
    // The settings panel opens over the main area for a moment, opaque: the view's text and
    // lines under it are hidden, not overprinted.
    let popovers: Vec<Rect> = all
        .iter()
        .filter(|p| p["name"] == "settings")
        .map(|p| rect(&p["rect"]))
        .collect();
    let hidden =
        |p: &Value, r: Rect| p["layer"] == "view" && popovers.iter().any(|s| overlap(r, *s));
    if all.is_empty() {
        problems.push("the layout holds no panel".to_string());
    }
    let placed: Vec<(usize, PlacedText)> = all
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            let name = p["name"].as_str().unwrap_or_default().to_string();
            p["texts"].as_array().into_iter().flatten().map(move |t| {
                (
                    i,
                    PlacedText {
                        panel: name.clone(),
                        text: t["text"].as_str().unwrap_or_default().to_string(),
                        rect: rect(&t["rect"]),
                    },
                )
            })
        })
        // Blank text leaves no ink.
        .filter(|(i, t)| t.rect[2] > 0.0 && t.rect[3] > 0.0 && !hidden(all[*i], t.rect))
        .collect();
    for (i, t) in &placed {
        let panel = rect(&all[*i]["rect"]);
        if !inside(t.rect, panel) {
            problems.push(format!(
                "{:?} of {} at {:?} leaves its panel {panel:?}",
                t.text, t.panel, t.rect
            ));
        }
    }
    for (a, (i, t)) in placed.iter().enumerate() {
        // Within a panel its own drawing keeps texts apart; between panels, nothing does.
        for (_, u) in placed[a + 1..].iter().filter(|(j, _)| j != i) {
            if overlap(t.rect, u.rect) {
                problems.push(format!(
                    "{:?} of {} at {:?} and {:?} of {} at {:?} overlap",
                    t.text, t.panel, t.rect, u.text, u.panel, u.rect
                ));
            }
        }
        for p in &all {
            for mark in p["marks"].as_array().into_iter().flatten() {
                let mark: Vec<f32> = mark
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| v.as_f64().unwrap_or(f64::NAN) as f32)
                    .collect();
                if mark.len() != 5 {
                    continue;
                }
                let extent = [
                    mark[0].min(mark[2]) - mark[4] / 2.0,
                    mark[1].min(mark[3]) - mark[4] / 2.0,
                    (mark[2] - mark[0]).abs() + mark[4],
                    (mark[3] - mark[1]).abs() + mark[4],
                ];
                if !hidden(p, extent) && crosses(&mark, t.rect) {
                    problems.push(format!(
                        "{:?} of {} at {:?} is under a mark of {} at {mark:?}",
                        t.text, t.panel, t.rect, p["name"]
                    ));
                    break;
                }
            }
        }
        for (name, r) in foreign {
            if overlap(t.rect, *r) {
                problems.push(format!(
                    "{:?} of {} at {:?} is under the {name} at {r:?}",
                    t.text, t.panel, t.rect
                ));
            }
        }
    }
    let hud: Vec<(String, Rect)> = all
        .iter()
        .filter(|p| p["layer"] == "hud")
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                rect(&p["rect"]),
            )
        })
        .collect();
    for (a, (name, r)) in hud.iter().enumerate() {
        if !inside(*r, frame) {
            problems.push(format!(
                "the {name} panel at {r:?} leaves the frame {frame:?}"
            ));
        }
        for (other, s) in &hud[a + 1..] {
            if overlap(*r, *s) {
                problems.push(format!(
                    "the {name} panel at {r:?} and the {other} panel at {s:?} overlap"
                ));
            }
        }
    }
    problems
}

/// Panics with what breaks the rules in `layout`, and `what` it is.
pub fn assert_laid_out(layout: &Value, foreign: &[(String, Rect)], what: &str) {
    let problems = problems(layout, foreign);
    assert!(
        problems.is_empty(),
        "{what}: {} layout problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
