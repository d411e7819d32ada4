//! The window: draws what `memcity_city::scene` decided, with macroquad. Nothing here decides
//! what the city looks like.
//!
//! Geometry is batched into meshes of shaded boxes. Opaque structures use a custom opaque
//! material with back-face culling (under Mesa's llvmpipe, fill rate dominates, and the default
//! blended pipeline is several times slower); transparent buildings are drawn after, far to
//! near, with blending and without depth writes.

use std::path::Path;

use glam::Vec3;
use macroquad::miniquad::{BlendFactor, BlendState, BlendValue, Comparison, CullFace, Equation};
use macroquad::prelude::{
    clear_background, get_screen_data, gl_use_default_material, gl_use_material, load_material,
    next_frame, set_camera, set_default_camera, Camera3D, Color, Material, MaterialParams, Mesh,
    PipelineParams, ShaderSource, Vertex,
};
use memcity_city::camera::{OrbitCamera, Z_FAR, Z_NEAR};
use memcity_city::mapping::{self, Rgb};
use memcity_city::scene::Scene;

/// The sky. Tests probe for it.
pub const SKY: Rgb = [0.93, 0.95, 0.98];

/// Vertices per mesh: macroquad meshes index with u16.
pub const MESH_VERTICES: usize = 60_000;

const VERTEX: &str = r#"#version 100
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

const FRAGMENT: &str = r#"#version 100
varying lowp vec4 color;
void main() {
    gl_FragColor = color;
}
"#;

pub struct Renderer {
    opaque: Material,
    blended: Material,
}

impl Renderer {
    pub fn new() -> anyhow::Result<Self> {
        let material = |blend: bool| {
            load_material(
                ShaderSource::Glsl {
                    vertex: VERTEX,
                    fragment: FRAGMENT,
                },
                MaterialParams {
                    pipeline_params: PipelineParams {
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
                    },
                    ..Default::default()
                },
            )
            .map_err(|e| anyhow::anyhow!("cannot compile the city shaders: {e:?}"))
        };
        Ok(Self {
            opaque: material(false)?,
            blended: material(true)?,
        })
    }

    /// Draws one frame of `scene` seen by `camera` into a `width` x `height` view.
    pub fn draw(&self, scene: &Scene, camera: &OrbitCamera, width: f32, height: f32) {
        clear_background(color(SKY, 1.0));
        set_camera(&Camera3D {
            position: camera.position(),
            target: camera.target,
            up: Vec3::Y,
            fovy: camera.fovy,
            aspect: Some(width / height),
            z_near: Z_NEAR,
            z_far: Z_FAR,
            ..Default::default()
        });
        let mut opaque = Batch::default();
        for d in &scene.districts {
            let (min, max) = d.bounds();
            opaque.push_box(min, max, d.color, 1.0);
        }
        let mut transparent = Vec::new();
        for b in &scene.buildings {
            let (min, max) = b.bounds();
            let rgb = if b.selected { SELECTED } else { b.color };
            if b.opacity >= 1.0 {
                opaque.push_box(min, max, rgb, 1.0);
            } else {
                transparent.push((min, max, rgb, b.opacity));
            }
        }
        for (frustum, from, to) in &scene.frustums {
            let rgb = if frustum.incoming {
                mapping::INCOMING
            } else {
                mapping::OUTGOING
            };
            opaque.push_frustum(
                *from,
                *to,
                frustum.start_radius as f32,
                frustum.end_radius as f32,
                rgb,
            );
        }
        gl_use_material(&self.opaque);
        opaque.draw();
        // Far to near, so nearer glass blends over farther glass.
        let eye = camera.position();
        transparent.sort_by(|a, b| {
            let da = ((a.0 + a.1) / 2.0).distance_squared(eye);
            let db = ((b.0 + b.1) / 2.0).distance_squared(eye);
            db.total_cmp(&da)
        });
        let mut glass = Batch::default();
        for (min, max, rgb, alpha) in transparent {
            glass.push_box(min, max, rgb, alpha);
        }
        gl_use_material(&self.blended);
        glass.draw();
        gl_use_default_material();
        set_default_camera();
    }
}

/// The highlight of a selected building (the papers use a distinct hue: blue).
pub const SELECTED: Rgb = [0.2, 0.45, 1.0];

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
            .is_none_or(|m| m.vertices.len() + 20 > MESH_VERTICES)
        {
            self.meshes.push(Mesh {
                vertices: Vec::with_capacity(MESH_VERTICES),
                indices: Vec::with_capacity(MESH_VERTICES * 3 / 2),
                texture: None,
            });
        }
        self.meshes.last_mut().expect("just pushed")
    }

    /// A box without its bottom face; faces shaded by direction so neighbours read apart.
    fn push_box(&mut self, min: Vec3, max: Vec3, rgb: Rgb, alpha: f32) {
        let mesh = self.current();
        // (corner order counter-clockwise seen from outside, shade)
        let faces: [([Vec3; 4], f32); 5] = [
            // top (+y)
            (
                [
                    Vec3::new(min.x, max.y, min.z),
                    Vec3::new(min.x, max.y, max.z),
                    Vec3::new(max.x, max.y, max.z),
                    Vec3::new(max.x, max.y, min.z),
                ],
                1.0,
            ),
            // +x
            (
                [
                    Vec3::new(max.x, min.y, min.z),
                    Vec3::new(max.x, max.y, min.z),
                    Vec3::new(max.x, max.y, max.z),
                    Vec3::new(max.x, min.y, max.z),
                ],
                0.82,
            ),
            // -x
            (
                [
                    Vec3::new(min.x, min.y, max.z),
                    Vec3::new(min.x, max.y, max.z),
                    Vec3::new(min.x, max.y, min.z),
                    Vec3::new(min.x, min.y, min.z),
                ],
                0.62,
            ),
            // +z
            (
                [
                    Vec3::new(max.x, min.y, max.z),
                    Vec3::new(max.x, max.y, max.z),
                    Vec3::new(min.x, max.y, max.z),
                    Vec3::new(min.x, min.y, max.z),
                ],
                0.72,
            ),
            // -z
            (
                [
                    Vec3::new(min.x, min.y, min.z),
                    Vec3::new(min.x, max.y, min.z),
                    Vec3::new(max.x, max.y, min.z),
                    Vec3::new(max.x, min.y, min.z),
                ],
                0.55,
            ),
        ];
        for (corners, shade) in faces {
            let base = mesh.vertices.len() as u16;
            let c = color([rgb[0] * shade, rgb[1] * shade, rgb[2] * shade], alpha);
            for p in corners {
                mesh.vertices.push(Vertex::new(p.x, p.y, p.z, 0.0, 0.0, c));
            }
            mesh.indices
                .extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
        }
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
            if self.current().vertices.len() + 8 > MESH_VERTICES {
                self.meshes.push(Mesh {
                    vertices: Vec::new(),
                    indices: Vec::new(),
                    texture: None,
                });
            }
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
