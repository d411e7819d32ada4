//! The window: draws what `memcity_city::scene` decided, with macroquad. Nothing here decides
//! what the city looks like.
//!
//! Districts and buildings are instances of one unit box: a frame uploads one small record per
//! box (corner, size, color) and the GPU places them, so a time-travel step that resizes every
//! building rewrites a few hundred kilobytes, not the geometry. Opaque boxes use a pipeline
//! without blending and with back-face culling (under Mesa's llvmpipe, fill rate dominates, and
//! macroquad's default blended pipeline is several times slower); transparent buildings are
//! drawn after, far to near, with blending and without depth writes. The few reference frustums
//! go through macroquad's meshes.

use std::path::Path;

use glam::{Mat4, Vec3};
use macroquad::miniquad::{
    self, BlendFactor, BlendState, BlendValue, BufferId, BufferLayout, BufferSource, BufferType,
    BufferUsage, Comparison, CullFace, Equation, PassAction, Pipeline, ShaderMeta,
    UniformBlockLayout, UniformDesc, UniformType, UniformsSource, VertexAttribute, VertexFormat,
    VertexStep,
};
use macroquad::prelude::{
    clear_background, get_internal_gl, get_screen_data, gl_use_default_material, gl_use_material,
    load_material, next_frame, set_camera, set_default_camera, Camera3D, Color, Material,
    MaterialParams, Mesh, PipelineParams, ShaderSource, Vertex,
};
use memcity_city::camera::OrbitCamera;
use memcity_city::mapping::{self, Rgb};
use memcity_city::model::NodeId;
use memcity_city::scene::Scene;

/// The sky. Tests probe for it.
pub const SKY: Rgb = [0.93, 0.95, 0.98];

/// Draws what follows in HUD units: a `w` x `h` space stretched over the window, y down (the
/// HUD and the 2D views are laid out for about 1280x800 and scaled up on larger windows).
pub fn hud_camera(w: f32, h: f32) {
    let mut camera = macroquad::prelude::Camera2D::from_display_rect(
        macroquad::prelude::Rect::new(0.0, 0.0, w, h),
    );
    // `from_display_rect` puts y up, as in a chart; screen coordinates grow downward.
    camera.zoom.y = -camera.zoom.y;
    set_camera(&camera);
}

/// The sky as a colour to clear with (the 2D views' background too).
pub fn sky() -> Color {
    color(SKY, 1.0)
}

/// A leak suspect's trace (yellow) and its suspect reference and holder (cyan): colors no
/// building, district or reference frustum uses.
const TRACE: mapping::Rgb = [1.0, 0.9, 0.1];
const TRACE_SUSPECT: mapping::Rgb = [0.1, 0.85, 0.9];

/// Vertices per frustum mesh: macroquad meshes index with u16.
pub const MESH_VERTICES: usize = 16_000;

const MESH_VERTEX: &str = r#"#version 100
attribute vec3 position;
attribute vec2 texcoord;
attribute vec4 color0;
varying lowp vec4 color;
uniform mat4 Model;
uniform mat4 Projection;
void main() {
    gl_Position = Projection * Model * vec4(position, 1.0);
    color = color0 / 255.0;
}
"#;

const BOX_VERTEX: &str = r#"#version 100
attribute vec3 corner;
attribute float shade;
attribute vec3 lo;
attribute vec3 size;
attribute vec4 tint;
uniform mat4 view_projection;
varying lowp vec4 color;
void main() {
    gl_Position = view_projection * vec4(lo + corner * size, 1.0);
    color = vec4(tint.rgb * shade, tint.a);
}
"#;

const FRAGMENT: &str = r#"#version 100
varying lowp vec4 color;
void main() {
    gl_FragColor = color;
}
"#;

/// One box to draw: its lower corner, its size and its color.
#[repr(C)]
#[derive(Clone, Copy)]
struct Instance {
    lo: [f32; 3],
    size: [f32; 3],
    tint: [f32; 4],
}

impl Instance {
    fn new(min: Vec3, max: Vec3, rgb: Rgb, alpha: f32) -> Self {
        Self {
            lo: min.to_array(),
            size: (max - min).to_array(),
            tint: [rgb[0], rgb[1], rgb[2], alpha],
        }
    }
}

/// A unit box without its bottom face: 5 faces of 4 corners, counter-clockwise seen from outside,
/// each with a shade by direction so neighbours read apart.
fn unit_box() -> (Vec<[f32; 4]>, Vec<u16>) {
    let faces: [([[f32; 3]; 4], f32); 5] = [
        // top (+y)
        (
            [[0., 1., 0.], [0., 1., 1.], [1., 1., 1.], [1., 1., 0.]],
            1.0,
        ),
        // +x
        (
            [[1., 0., 0.], [1., 1., 0.], [1., 1., 1.], [1., 0., 1.]],
            0.82,
        ),
        // -x
        (
            [[0., 0., 1.], [0., 1., 1.], [0., 1., 0.], [0., 0., 0.]],
            0.62,
        ),
        // +z
        (
            [[1., 0., 1.], [1., 1., 1.], [0., 1., 1.], [0., 0., 1.]],
            0.72,
        ),
        // -z
        (
            [[0., 0., 0.], [0., 1., 0.], [1., 1., 0.], [1., 0., 0.]],
            0.55,
        ),
    ];
    let mut corners = Vec::new();
    let mut indices = Vec::new();
    for (quad, shade) in faces {
        let base = corners.len() as u16;
        corners.extend(quad.iter().map(|c| [c[0], c[1], c[2], shade]));
        indices.extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    (corners, indices)
}

/// The instanced boxes: one unit box, a growable instance buffer, two pipelines.
struct Boxes {
    opaque: Pipeline,
    glass: Pipeline,
    corners: BufferId,
    indices: BufferId,
    index_count: i32,
    /// Opaque and glass instances: a buffer and its capacity each (drawing takes `&self`).
    instances: [std::cell::Cell<(BufferId, usize)>; 2],
}

impl Boxes {
    fn new() -> anyhow::Result<Self> {
        // SAFETY: called on the render thread inside macroquad's window, and the context is not
        // kept past this function (macroquad's own state is untouched).
        let gl = unsafe { get_internal_gl() };
        let ctx = gl.quad_context;
        if !ctx.info().features.instancing {
            anyhow::bail!(
                "this OpenGL cannot draw instances (it needs OpenGL 3.3 or OpenGL ES 3); \
                 update the graphics driver, or use `memcity report` for the same session as text"
            );
        }
        let (corners, indices) = unit_box();
        let corner_buffer = ctx.new_buffer(
            BufferType::VertexBuffer,
            BufferUsage::Immutable,
            BufferSource::slice(&corners),
        );
        let index_buffer = ctx.new_buffer(
            BufferType::IndexBuffer,
            BufferUsage::Immutable,
            BufferSource::slice(&indices),
        );
        let shader = ctx
            .new_shader(
                miniquad::ShaderSource::Glsl {
                    vertex: BOX_VERTEX,
                    fragment: FRAGMENT,
                },
                ShaderMeta {
                    images: vec![],
                    uniforms: UniformBlockLayout {
                        uniforms: vec![UniformDesc::new("view_projection", UniformType::Mat4)],
                    },
                },
            )
            .map_err(|e| anyhow::anyhow!("cannot compile the city shaders: {e:?}"))?;
        let layouts = [
            BufferLayout::default(),
            BufferLayout {
                step_func: VertexStep::PerInstance,
                ..Default::default()
            },
        ];
        let attributes = [
            VertexAttribute::with_buffer("corner", VertexFormat::Float3, 0),
            VertexAttribute::with_buffer("shade", VertexFormat::Float1, 0),
            VertexAttribute::with_buffer("lo", VertexFormat::Float3, 1),
            VertexAttribute::with_buffer("size", VertexFormat::Float3, 1),
            VertexAttribute::with_buffer("tint", VertexFormat::Float4, 1),
        ];
        let mut pipeline =
            |blend: bool| ctx.new_pipeline(&layouts, &attributes, shader, pipeline_params(blend));
        let (opaque, glass) = (pipeline(false), pipeline(true));
        let capacity = 4096;
        let mut instances = || {
            let buffer = ctx.new_buffer(
                BufferType::VertexBuffer,
                BufferUsage::Stream,
                BufferSource::empty::<Instance>(capacity),
            );
            std::cell::Cell::new((buffer, capacity))
        };
        let instances = [instances(), instances()];
        Ok(Self {
            opaque,
            glass,
            corners: corner_buffer,
            indices: index_buffer,
            index_count: indices.len() as i32,
            instances,
        })
    }

    /// Draws `opaque` then `glass` (already sorted far to near) over what is on screen.
    fn draw(&self, view_projection: Mat4, opaque: &[Instance], glass: &[Instance]) {
        // SAFETY: as in `new`: the render thread, no reference kept; macroquad's queued draws are
        // flushed first so its state and ours do not interleave.
        let mut gl = unsafe { get_internal_gl() };
        // What macroquad queued so far (the frustums) goes first, so the depth buffer has it.
        gl.flush();
        let ctx = gl.quad_context;
        ctx.begin_default_pass(PassAction::Nothing);
        for (pipeline, slot, boxes) in [(&self.opaque, 0, opaque), (&self.glass, 1, glass)] {
            if boxes.is_empty() {
                continue;
            }
            let (mut buffer, capacity) = self.instances[slot].get();
            if boxes.len() > capacity {
                ctx.delete_buffer(buffer);
                let capacity = boxes.len().next_power_of_two();
                buffer = ctx.new_buffer(
                    BufferType::VertexBuffer,
                    BufferUsage::Stream,
                    BufferSource::empty::<Instance>(capacity),
                );
                self.instances[slot].set((buffer, capacity));
            }
            ctx.buffer_update(buffer, BufferSource::slice(boxes));
            ctx.apply_pipeline(pipeline);
            ctx.apply_bindings(&miniquad::Bindings {
                vertex_buffers: vec![self.corners, buffer],
                index_buffer: self.indices,
                images: vec![],
            });
            ctx.apply_uniforms(UniformsSource::table(&view_projection));
            ctx.draw(0, self.index_count, boxes.len() as i32);
        }
        ctx.end_render_pass();
    }
}

fn pipeline_params(blend: bool) -> PipelineParams {
    PipelineParams {
        depth_test: Comparison::LessOrEqual,
        depth_write: !blend,
        cull_face: CullFace::Back,
        color_blend: blend.then(|| {
            BlendState::new(
                Equation::Add,
                BlendFactor::Value(BlendValue::SourceAlpha),
                BlendFactor::OneMinusValue(BlendValue::SourceAlpha),
            )
        }),
        ..Default::default()
    }
}

pub struct Renderer {
    boxes: Boxes,
    /// Frustums: few, through macroquad's meshes.
    mesh: Material,
}

impl Renderer {
    pub fn new() -> anyhow::Result<Self> {
        let mesh = load_material(
            ShaderSource::Glsl {
                vertex: MESH_VERTEX,
                fragment: FRAGMENT,
            },
            MaterialParams {
                pipeline_params: pipeline_params(false),
                ..Default::default()
            },
        )
        .map_err(|e| anyhow::anyhow!("cannot compile the city shaders: {e:?}"))?;
        Ok(Self {
            boxes: Boxes::new()?,
            mesh,
        })
    }

    /// Draws one frame of `scene` seen by `camera` into a `width` x `height` view; the selected
    /// building stands `lift` above its place (the jump when it is picked), and the one under the
    /// pointer is lightened.
    pub fn draw(&self, scene: &Scene, camera: &OrbitCamera, view: View) {
        let View {
            width,
            height,
            hovered,
            ..
        } = view;
        clear_background(color(SKY, 1.0));
        set_camera(&Camera3D {
            position: camera.position(),
            target: camera.target,
            up: Vec3::Y,
            fovy: camera.fovy,
            aspect: Some(width / height),
            z_near: camera.clip_planes().0,
            z_far: camera.clip_planes().1,
            ..Default::default()
        });
        let mut frustums = Batch::default();
        for (frustum, from, to) in &scene.frustums {
            let rgb = if frustum.incoming {
                mapping::INCOMING
            } else {
                mapping::OUTGOING
            };
            frustums.push_frustum(
                *from,
                *to,
                frustum.start_radius as f32,
                frustum.end_radius as f32,
                rgb,
            );
        }
        if let Some(trace) = &scene.trace {
            for &(from, to, radius, suspect) in &trace.links {
                let rgb = if suspect { TRACE_SUSPECT } else { TRACE };
                frustums.push_frustum(from, to, radius, radius, rgb);
            }
            for (&(bottom, top), rgb) in trace
                .root
                .iter()
                .zip([TRACE])
                .chain(trace.holder.iter().zip([TRACE_SUSPECT]))
            {
                frustums.push_frustum(bottom, top, 1.6, 0.4, rgb);
            }
        }
        gl_use_material(&self.mesh);
        frustums.draw();
        gl_use_default_material();

        let mut opaque = Vec::with_capacity(scene.districts.len() + scene.buildings.len());
        for d in &scene.districts {
            let (min, max) = d.bounds();
            let rgb = if d.selected { SELECTED } else { d.color };
            let rgb = if hovered == Some(d.node) {
                lighten(rgb)
            } else {
                rgb
            };
            opaque.push(Instance::new(min, max, rgb, 1.0));
        }
        let mut glass = Vec::new();
        building_instances(scene, camera.position(), view, &mut opaque, &mut glass);
        // Far to near, so nearer glass blends over farther glass.
        glass.sort_by(|a, b| b.0.total_cmp(&a.0));
        let glass: Vec<Instance> = glass.into_iter().map(|(_, i)| i).collect();
        self.boxes
            .draw(camera.view_projection(width / height), &opaque, &glass);
        set_default_camera();
    }
}

/// The buildings' boxes: solid ones to `opaque`; faded ones and the bands of doubt to `glass`,
/// each with its distance from `eye` for sorting.
fn building_instances(
    scene: &Scene,
    eye: Vec3,
    view: View,
    opaque: &mut Vec<Instance>,
    glass: &mut Vec<(f32, Instance)>,
) {
    let View { lift, hovered, .. } = view;
    for b in &scene.buildings {
        let (mut min, mut max) = b.bounds();
        let rgb = if b.selected {
            min.y += lift;
            max.y += lift;
            SELECTED
        } else {
            b.color
        };
        let rgb = if hovered == Some(b.node) {
            lighten(rgb)
        } else {
            rgb
        };
        // The share the numbers cannot back: the top of the building as glass of its own
        // color over the solid body (from above, the roof still shows the body's color
        // through it; from the side, the top is haze).
        let (body_max, band) = match b.doubt_from() {
            Some(from) => {
                let split = from as f32 + (min.y - b.shape.bottom as f32);
                (
                    Vec3::new(max.x, split, max.z),
                    Some(Vec3::new(min.x, split, min.z)),
                )
            }
            None => (max, None),
        };
        if body_max.y <= min.y {
            // All of it in doubt: only the band.
        } else if b.opacity >= 1.0 {
            opaque.push(Instance::new(min, body_max, rgb, 1.0));
        } else {
            let far = ((min + body_max) / 2.0).distance_squared(eye);
            glass.push((far, Instance::new(min, body_max, rgb, b.opacity)));
        }
        if let Some(band_min) = band {
            let far = ((band_min + max) / 2.0).distance_squared(eye);
            let alpha = DOUBT_ALPHA * b.opacity;
            glass.push((far, Instance::new(band_min, max, rgb, alpha)));
        }
    }
}

/// How a frame is drawn: the view's size, the selection's lift, the group under the pointer.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub width: f32,
    pub height: f32,
    pub lift: f32,
    pub hovered: Option<NodeId>,
}

/// Opacity of a building's band of doubt (times the building's own).
pub const DOUBT_ALPHA: f32 = 0.35;

/// A hovered structure: a third of the way to white, so it reads as "this one" in any color.
fn lighten(rgb: Rgb) -> Rgb {
    rgb.map(|c| c + (1.0 - c) * 0.35)
}

pub use memcity_city::mapping::SELECTED;

fn color(rgb: Rgb, alpha: f32) -> Color {
    Color::new(rgb[0], rgb[1], rgb[2], alpha)
}

/// Meshes of boxes, split where u16 indices run out.
#[derive(Default)]
struct Batch {
    meshes: Vec<Mesh>,
}

impl Batch {
    fn current(&mut self) -> &mut Mesh {
        if self
            .meshes
            .last()
            .is_none_or(|m| m.vertices.len() + 8 > MESH_VERTICES)
        {
            self.meshes.push(Mesh {
                vertices: Vec::new(),
                indices: Vec::new(),
                texture: None,
            });
        }
        self.meshes.last_mut().expect("just pushed")
    }

    /// A frustum from roof to roof (thesis 5.5): an 8-sided tube whose radius goes from `r0` at
    /// `from` to `r1` at `to`, shaded around its axis, drawn from both sides (it is open).
    fn push_frustum(&mut self, from: Vec3, to: Vec3, r0: f32, r1: f32, rgb: Rgb) {
        const SIDES: usize = 8;
        let axis = (to - from).normalize_or_zero();
        if axis == Vec3::ZERO {
            return;
        }
        // Thin references stay visible: at least a sliver.
        let (r0, r1) = (r0.max(0.6), r1.max(0.6));
        let helper = if axis.y.abs() < 0.9 { Vec3::Y } else { Vec3::X };
        let u = axis.cross(helper).normalize();
        let v = axis.cross(u);
        for side in 0..SIDES {
            let mesh = self.current();
            let angle = |k: usize| k as f32 / SIDES as f32 * std::f32::consts::TAU;
            let dir = |k: usize| u * angle(k).cos() + v * angle(k).sin();
            let shade = 0.7 + 0.3 * dir(side).y.max(0.0);
            let c = color([rgb[0] * shade, rgb[1] * shade, rgb[2] * shade], 1.0);
            let base = mesh.vertices.len() as u16;
            for p in [
                from + dir(side) * r0,
                from + dir(side + 1) * r0,
                to + dir(side + 1) * r1,
                to + dir(side) * r1,
            ] {
                mesh.vertices.push(Vertex::new(p.x, p.y, p.z, 0.0, 0.0, c));
            }
            mesh.indices
                .extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
            mesh.indices
                .extend_from_slice(&[base, base + 2, base + 1, base, base + 3, base + 2]);
        }
    }

    fn draw(&self) {
        for mesh in &self.meshes {
            macroquad::models::draw_mesh(mesh);
        }
    }
}

/// Writes the current frame to a PNG, top row first.
pub async fn screenshot(path: &Path) -> anyhow::Result<()> {
    let image = get_screen_data();
    let (w, h) = (image.width as usize, image.height as usize);
    // The framebuffer's first row is the bottom of the screen.
    let mut rows = Vec::with_capacity(w * h * 4);
    for y in (0..h).rev() {
        rows.extend_from_slice(&image.bytes[y * w * 4..(y + 1) * w * 4]);
    }
    let file = std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), w as u32, h as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&rows))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    next_frame().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_city::mapping::BuildingBox;
    use memcity_city::scene::Building;
    use memcity_city::treemap::Rect;

    fn building(node: NodeId, opacity: f32, doubt: f32) -> Building {
        Building {
            node,
            shape: BuildingBox {
                base: Rect::new(0.0, 0.0, 10.0, 10.0),
                bottom: 2.0,
                height: 100.0,
            },
            color: [0.9, 0.1, 0.1],
            opacity,
            selected: false,
            doubt,
        }
    }

    fn boxes(scene: &Scene) -> (Vec<Instance>, Vec<Instance>) {
        let view = View {
            width: 100.0,
            height: 100.0,
            lift: 0.0,
            hovered: None,
        };
        let (mut opaque, mut glass) = (Vec::new(), Vec::new());
        building_instances(scene, Vec3::splat(500.0), view, &mut opaque, &mut glass);
        (opaque, glass.into_iter().map(|(_, i)| i).collect())
    }

    #[test]
    fn doubt_is_a_glass_band_of_the_buildings_color_above_its_solid_body() {
        let scene = Scene {
            buildings: vec![building(1, 1.0, 0.3)],
            ..Default::default()
        };
        let (opaque, glass) = boxes(&scene);
        assert_eq!((opaque.len(), glass.len()), (1, 1));
        // The body: from the ground to 70 % of the height; the band: the rest, as glass.
        assert_eq!(opaque[0].lo[1], 2.0);
        assert!((opaque[0].size[1] - 70.0).abs() < 1e-3);
        assert!((glass[0].lo[1] - 72.0).abs() < 1e-3);
        assert!((glass[0].size[1] - 30.0).abs() < 1e-3);
        assert_eq!(glass[0].tint, [0.9, 0.1, 0.1, DOUBT_ALPHA]);
        assert_eq!(opaque[0].tint, [0.9, 0.1, 0.1, 1.0]);
    }

    #[test]
    fn exact_faded_and_wholly_doubtful_buildings() {
        let scene = Scene {
            buildings: vec![
                building(1, 1.0, 0.0),
                building(2, 0.4, 0.5),
                building(3, 1.0, 1.0),
            ],
            ..Default::default()
        };
        let (opaque, glass) = boxes(&scene);
        // Exact: one solid box, whole.
        assert_eq!(opaque.len(), 1);
        assert!((opaque[0].size[1] - 100.0).abs() < 1e-3);
        // Faded: its body and its band are both glass, the band fainter; wholly doubtful: the
        // band alone.
        let alphas: Vec<f32> = glass.iter().map(|g| g.tint[3]).collect();
        assert_eq!(alphas.len(), 3, "{alphas:?}");
        assert!(alphas.contains(&0.4));
        assert!(alphas.contains(&(DOUBT_ALPHA * 0.4)));
        assert!(alphas.contains(&DOUBT_ALPHA));
    }
}
