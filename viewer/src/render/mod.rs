//! The window: draws what `memcity_city::scene` decided, with macroquad. Nothing here decides
//! what the city looks like.
//!
//! Districts and buildings are instances of one unit box: a frame uploads one small record per
//! box (corner, size, color) and the GPU places them, so a time-travel step that resizes every
//! building rewrites a few hundred kilobytes, not the geometry. On SwiftShader (a browser without
//! a GPU) the same boxes are written out corner by corner instead ([`BoxPath`]). Opaque boxes use a pipeline
//! without blending and with back-face culling (under Mesa's llvmpipe, fill rate dominates, and
//! macroquad's default blended pipeline is several times slower); transparent buildings are
//! drawn after, far to near, with blending and without depth writes. The few reference frustums
//! go through macroquad's meshes.
//!
//! The scene's boxes are made in `instances.rs`, reach the GPU as `box_path.rs` chooses
//! (`boxes.rs`; the expanded path's corners in `expanded.rs`) through the shaders of
//! `shaders.rs`; the frustums are `frustums.rs`'s meshes.

mod box_path;
mod boxes;
mod expanded;
mod frustums;
mod instances;
mod shaders;

use std::path::Path;

use glam::Vec3;
use macroquad::prelude::{
    clear_background, get_screen_data, gl_use_default_material, gl_use_material, load_material,
    next_frame, set_camera, set_default_camera, Camera3D, Color, Material, MaterialParams,
    ShaderSource,
};
use memcity_city::camera::OrbitCamera;
use memcity_city::mapping::{self, Rgb};
use memcity_city::model::NodeId;
use memcity_city::scene::Scene;

pub use box_path::{set_renderer_name, BoxPath};
use boxes::Boxes;
use frustums::Batch;
use instances::boxes;
pub use shaders::glass_blend;
use shaders::{pipeline_params, FRAGMENT, MESH_VERTEX};

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

pub struct Renderer {
    boxes: Boxes,
    /// What the boxes last uploaded were made from: the same again needs no new boxes (a still
    /// city costs the GPU's drawing only).
    uploaded_for: std::cell::Cell<Option<UploadKey>>,
    /// Frustums: few, through macroquad's meshes.
    mesh: Material,
}

impl Renderer {
    pub fn new(box_path: BoxPath) -> anyhow::Result<Self> {
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
            boxes: Boxes::new(box_path)?,
            uploaded_for: std::cell::Cell::new(None),
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

        let eye = camera.position();
        let key = UploadKey {
            revision: view.revision,
            eye: eye.to_array().map(f32::to_bits),
            lift: view.lift.to_bits(),
            hovered,
        };
        if self.uploaded_for.get() != Some(key) {
            let (opaque, glass) = boxes(scene, eye, view);
            self.boxes.upload(eye, &opaque, &glass);
            self.uploaded_for.set(Some(key));
        }
        self.boxes.draw(camera.view_projection(width / height));
        set_default_camera();
    }
}

/// What a frame's boxes are made from (see `Renderer::uploaded_for`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct UploadKey {
    revision: u64,
    eye: [u32; 3],
    lift: u32,
    hovered: Option<NodeId>,
}

/// How a frame is drawn: the view's size, the selection's lift, the group under the pointer.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub width: f32,
    pub height: f32,
    pub lift: f32,
    pub hovered: Option<NodeId>,
    /// Which scene this is (`ViewerState::scene_revision`): an unchanged scene seen the same way
    /// reuses the boxes already sent.
    pub revision: u64,
}

/// Opacity of a building's band of doubt (times the building's own).
pub const DOUBT_ALPHA: f32 = 0.35;

pub use memcity_city::mapping::SELECTED;

fn color(rgb: Rgb, alpha: f32) -> Color {
    Color::new(rgb[0], rgb[1], rgb[2], alpha)
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
    // A link planted at the name is replaced, not written through.
    #[cfg(unix)]
    let file = memcity_proto::files::create_replacing(path);
    #[cfg(not(unix))]
    let file = std::fs::File::create(path);
    let file = file.map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
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
