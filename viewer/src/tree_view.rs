//! Draws the 2D views that `memcity_city::tree2d` and `memcity_viewer::views` lay out: the
//! icicle, the sunburst and the timeline view's row of small trees. Nothing here decides a size
//! or a colour; it paints cells, labels where they fit, and the breadcrumb.

use crate::controls::Area;
use macroquad::prelude::{
    draw_line, draw_mesh, draw_rectangle, draw_rectangle_lines, measure_text, Color, Mesh, Vertex,
};
use memcity_city::model::{CityModel, NodeId};
use memcity_city::tree2d::{Arc, Cell, Icicle, Partition, Sunburst};
use memcity_city::treemap::Rect;

use crate::hud;
use crate::render::{MESH_VERTICES, SELECTED};

/// A cell's colour as drawn: blue when selected, lightened under the pointer, faded when not
/// on a strongest grower's path (as the city fades its buildings).
pub fn cell_color(cell: &Cell, faded: f32, hovered: Option<NodeId>) -> Color {
    let rgb = if cell.selected { SELECTED } else { cell.color };
    let rgb = if hovered == Some(cell.node) {
        rgb.map(|c| c + (1.0 - c) * 0.35)
    } else {
        rgb
    };
    Color::new(rgb[0], rgb[1], rgb[2], if cell.solid { 1.0 } else { faded })
}

/// The part of a cell the numbers cannot back: its colour at a third of its opacity, as the
/// city's glass band (`render::DOUBT_ALPHA`).
fn doubtful(c: Color) -> Color {
    Color::new(c.r, c.g, c.b, c.a * crate::render::DOUBT_ALPHA)
}

/// Dark text on light cells, white on dark ones.
fn ink_on(c: Color) -> Color {
    let light = 0.3 * c.r + 0.59 * c.g + 0.11 * c.b;
    if light * c.a + (1.0 - c.a) > 0.55 {
        hud::INK
    } else {
        Color::new(1.0, 1.0, 1.0, 1.0)
    }
}

/// A cell's label: as the city's (`memcity_viewer::names::label`), but a site without its type,
/// which the column to its left already names.
pub fn label(model: &CityModel, node: NodeId) -> String {
    match model.nearest_type(node) {
        Some(of_type) if of_type != node => crate::names::short_site(&model.node(node).name),
        _ => crate::names::label(model, node),
    }
}

/// The icicle, with labels in cells tall enough for a line.
pub fn icicle(
    model: &CityModel,
    partition: &Partition,
    rect: Rect,
    faded: f32,
    hovered: Option<NodeId>,
    labels: bool,
) {
    let icicle = Icicle::new(rect, partition);
    for cell in &partition.cells {
        let r = icicle.rect(cell);
        if r.h < 0.25 {
            continue;
        }
        let color = cell_color(cell, faded, hovered);
        let (x, y, w, h) = (r.x as f32, r.y as f32, r.w as f32, r.h as f32);
        match cell.doubt_from() {
            // The end of the span the numbers cannot back, pale (the city's band of doubt).
            Some(from) => {
                let split = (icicle.area.y + from * icicle.area.h) as f32;
                draw_rectangle(x, y, w - 1.0, split - y, color);
                draw_rectangle(x, split, w - 1.0, y + h - split, doubtful(color));
            }
            None => draw_rectangle(x, y, w - 1.0, h, color),
        }
        if h >= 3.0 {
            // A hairline between siblings and levels: neighbours of one colour stay apart.
            draw_rectangle_lines(x, y, w - 1.0, h, 1.0, Color::new(1.0, 1.0, 1.0, 0.8));
        }
        if labels && h >= 15.0 && w >= 30.0 {
            let text = hud::fit(&label(model, cell.node), w - 8.0, 15.0);
            hud::text(
                &text,
                x + 4.0,
                y + h.min(30.0) / 2.0 + 5.0,
                15.0,
                ink_on(color),
            );
        }
    }
}

/// Triangles of one ring segment, a fan for the centre disc.
fn push_arc(mesh: &mut Meshes, center: (f64, f64), arc: &Arc, color: Color) {
    // About 2 degrees per step: round at any size a window gives it.
    let steps = (((arc.to - arc.from) / 0.035).ceil() as usize).clamp(1, 180);
    let c = [
        (color.r * 255.0) as u8,
        (color.g * 255.0) as u8,
        (color.b * 255.0) as u8,
        (color.a * 255.0) as u8,
    ];
    let vertex = |r: f64, a: f64| {
        let (x, y) = Arc::point(center, r, a);
        Vertex {
            position: glam::Vec3::new(x as f32, y as f32, 0.0),
            uv: glam::Vec2::ZERO,
            color: c,
            normal: glam::Vec4::ZERO,
        }
    };
    let need = 2 * (steps + 1);
    let (vertices, indices) = mesh.room(need);
    let base = vertices.len() as u16;
    for i in 0..=steps {
        let a = arc.from + (arc.to - arc.from) * i as f64 / steps as f64;
        vertices.push(vertex(arc.inner, a));
        vertices.push(vertex(arc.outer, a));
    }
    for i in 0..steps as u16 {
        let (a, b, c2, d) = (
            base + 2 * i,
            base + 2 * i + 1,
            base + 2 * i + 2,
            base + 2 * i + 3,
        );
        indices.extend_from_slice(&[a, b, c2, b, d, c2]);
    }
}

/// Meshes of at most `MESH_VERTICES` vertices each (macroquad indexes with u16).
#[derive(Default)]
struct Meshes {
    done: Vec<Mesh>,
    vertices: Vec<Vertex>,
    indices: Vec<u16>,
}

impl Meshes {
    fn room(&mut self, need: usize) -> (&mut Vec<Vertex>, &mut Vec<u16>) {
        if self.vertices.len() + need > MESH_VERTICES {
            self.flush();
        }
        (&mut self.vertices, &mut self.indices)
    }

    fn flush(&mut self) {
        if !self.vertices.is_empty() {
            self.done.push(Mesh {
                vertices: std::mem::take(&mut self.vertices),
                indices: std::mem::take(&mut self.indices),
                texture: None,
            });
        }
    }

    fn draw(mut self) {
        self.flush();
        for mesh in &self.done {
            draw_mesh(mesh);
        }
    }
}

/// The sunburst, with labels on segments wide and long enough.
pub fn sunburst(
    model: &CityModel,
    partition: &Partition,
    rect: Rect,
    faded: f32,
    hovered: Option<NodeId>,
    labels: bool,
) {
    let sun = Sunburst::new(rect, partition);
    let mut meshes = Meshes::default();
    let mut texts = Vec::new();
    for cell in &partition.cells {
        let arc = sun.arc(cell);
        let mid = (arc.inner + arc.outer) / 2.0;
        // Under a third of a pixel along its middle: nothing would show.
        if (arc.to - arc.from) * mid.max(1.0) < 0.3 {
            continue;
        }
        let color = cell_color(cell, faded, hovered);
        match cell.doubt_from() {
            Some(_) => {
                let split = arc.to - (arc.to - arc.from) * cell.doubt;
                push_arc(&mut meshes, sun.center, &Arc { to: split, ..arc }, color);
                push_arc(
                    &mut meshes,
                    sun.center,
                    &Arc { from: split, ..arc },
                    doubtful(color),
                );
            }
            None => push_arc(&mut meshes, sun.center, &arc, color),
        }
        let ring = arc.outer - arc.inner;
        let length = (arc.to - arc.from) * mid;
        if labels && ring >= 18.0 && length >= 40.0 {
            texts.push((cell.node, arc, color));
        }
    }
    meshes.draw();
    // Spokes between segments, so neighbours of one colour stay apart.
    for cell in partition.cells.iter().filter(|c| c.level > 0) {
        let arc = sun.arc(cell);
        if (arc.to - arc.from) * arc.outer >= 3.0 {
            let (x0, y0) = Arc::point(sun.center, arc.inner, arc.from);
            let (x1, y1) = Arc::point(sun.center, arc.outer, arc.from);
            draw_line(
                x0 as f32,
                y0 as f32,
                x1 as f32,
                y1 as f32,
                1.0,
                Color::new(1.0, 1.0, 1.0, 0.8),
            );
        }
    }
    for (node, arc, color) in texts {
        let mid = (arc.inner + arc.outer) / 2.0;
        let angle = (arc.from + arc.to) / 2.0;
        // Horizontal text stays inside its segment when its radial extent fits the ring and its
        // tangential extent the arc: at 3 o'clock only the ring's width is free, at 12 the arc's.
        let room = if arc.inner == 0.0 {
            arc.outer * 1.6
        } else {
            let ring = arc.outer - arc.inner;
            let along = (arc.to - arc.from) * mid;
            (ring / angle.sin().abs().max(1e-3)).min(along / angle.cos().abs().max(1e-3))
        };
        if room < 28.0 {
            continue;
        }
        let text = hud::fit(&label(model, node), (room as f32 - 6.0).min(160.0), 14.0);
        let width = measure_text(&text, None, 14, 1.0).width;
        let (x, y) = if arc.inner == 0.0 {
            sun.center
        } else {
            Arc::point(sun.center, mid, angle)
        };
        hud::text(
            &text,
            x as f32 - width / 2.0,
            y as f32 + 5.0,
            14.0,
            ink_on(color),
        );
    }
}

/// The drill-down's breadcrumb, left to right from the heap; returns each step's area for
/// clicks.
pub fn breadcrumb(
    area: Area,
    steps: &[(NodeId, String)],
    mouse: (f32, f32),
) -> Vec<(NodeId, Area)> {
    let mut x = area.x;
    let mut out = Vec::new();
    for (i, (node, name)) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let text = hud::fit(name, 260.0, 16.0);
        let w = measure_text(&text, None, 16, 1.0).width + 12.0;
        let button = Area::new(x, area.y, w, 20.0);
        let color = if last {
            hud::INK
        } else if button.contains(mouse.0, mouse.1) {
            hud::ACCENT
        } else {
            hud::LINK
        };
        hud::text(&text, x + 6.0, area.y + 15.0, 16.0, color);
        if !last {
            draw_line(
                x + 6.0,
                area.y + 18.0,
                x + w - 6.0,
                area.y + 18.0,
                1.0,
                color,
            );
            hud::text(">", x + w + 2.0, area.y + 15.0, 16.0, hud::MUTED);
        }
        out.push((*node, button));
        x += w + 16.0;
    }
    out
}
