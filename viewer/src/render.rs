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

/// The expanded path's: every corner written out, its color already shaded (0-255).
const EXPANDED_VERTEX: &str = r#"#version 100
attribute vec3 position;
attribute vec4 color0;
uniform mat4 view_projection;
varying lowp vec4 color;
void main() {
    gl_Position = view_projection * vec4(position, 1.0);
    color = color0 / 255.0;
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

/// One corner of the expanded path: where it is and its shaded color.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Corner {
    position: [f32; 3],
    color: [u8; 4],
}

/// Faces of the unit box (its bottom is never seen), and corners of a face.
const BOX_FACES: usize = 5;
const FACE_CORNERS: usize = 4;

/// Whether face `face` of the unit box (`unit_box`'s order: top, +x, -x, +z, -z), placed at
/// `lo` and sized `size`, turns toward `eye`: the others are culled anyway, so the expanded path
/// does not send them (most boxes show three of five).
fn faces_eye(face: usize, lo: [f32; 3], size: [f32; 3], eye: Vec3) -> bool {
    match face {
        0 => eye.y > lo[1] + size[1],
        1 => eye.x > lo[0] + size[0],
        2 => eye.x < lo[0],
        3 => eye.z > lo[2] + size[2],
        _ => eye.z < lo[2],
    }
}

/// How much of a box is written out, by how wide it looks (radians seen from the eye; 0.001 is
/// about a pixel of a 720 px high window at the camera's 45 degrees). Triangles, not pixels,
/// are what a city of many small buildings costs a software rasterizer (llvmpipe's rasterizer
/// threads spend most of a 50,000-building frame on triangles a few pixels across), so small
/// boxes get fewer of them, drawn where the box's faces would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Every face toward the eye: two triangles each, six for most boxes.
    Faces,
    /// Under about 8 px: the box's outline, the hexagon its roof and two sides make, as four
    /// triangles shaded as the faces are at its corners (the shades blend across it).
    Outline,
    /// Under about 4 px: the outline as one quad, from the far roof corner to the near bottom
    /// corner and half-way down the two sides (it leaves out about half of each side).
    Coarse,
}

impl Detail {
    fn of(b: &Instance, eye: Vec3) -> Detail {
        let center = Vec3::from(b.lo) + Vec3::from(b.size) / 2.0;
        let across = b.size[0].max(b.size[1]).max(b.size[2]) / center.distance(eye);
        if across < 0.004 {
            Detail::Coarse
        } else if across < 0.008 {
            Detail::Outline
        } else {
            Detail::Faces
        }
    }
}

/// Writes the corner of box `b` at `unit` (a corner of the unit box) shaded `shade`.
fn push_corner(out: &mut Vec<Corner>, b: &Instance, unit: [f32; 3], shade: f32) {
    let byte = |v: f32| (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8;
    out.push(Corner {
        position: [
            b.lo[0] + unit[0] * b.size[0],
            b.lo[1] + unit[1] * b.size[1],
            b.lo[2] + unit[2] * b.size[2],
        ],
        color: [
            byte(b.tint[0] * shade),
            byte(b.tint[1] * shade),
            byte(b.tint[2] * shade),
            byte(b.tint[3]),
        ],
    });
}

/// Box `b`'s outline seen from `eye` (`Outline` or `Coarse`), when it shows its roof and two
/// sides; false, with nothing written, when it shows fewer faces (from straight above a row
/// of boxes), which then go face by face.
///
/// The outline is the hexagon of the far roof corner, the roof corners on either side of it
/// and the three bottom corners below those and the near corner: two quads fanned from the far
/// corner, counter-clockwise as the faces are. Coarse, one quad: the far corner, the side
/// corners half-way down, the near bottom corner.
fn outline(
    b: &Instance,
    unit: &[[f32; 4]],
    eye: Vec3,
    detail: Detail,
    out: &mut Vec<Corner>,
) -> bool {
    let shows = |face: usize| faces_eye(face, b.lo, b.size, eye);
    if !shows(0) {
        return false;
    }
    // The near corner's x and z in the unit box, and the sides that meet there.
    let (near_x, x_face) = match (shows(1), shows(2)) {
        (true, _) => (1.0, 1),
        (_, true) => (0.0, 2),
        _ => return false,
    };
    let (near_z, z_face) = match (shows(3), shows(4)) {
        (true, _) => (1.0, 3),
        (_, true) => (0.0, 4),
        _ => return false,
    };
    let shade = |face: usize| unit[face * FACE_CORNERS][3];
    // The roof's corners (x, z) in the top face's counter-clockwise order, from the far one.
    let roof = [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0f32]];
    let far = roof
        .iter()
        .position(|c| c[0] != near_x && c[1] != near_z)
        .expect("one roof corner differs from the near one in both x and z");
    let [t, a, n, c] = [0, 1, 2, 3].map(|k| roof[(far + k) % 4]);
    // The side under the roof's edge from corner `r` to the near corner.
    let side = |r: [f32; 2]| {
        if r[0] == near_x {
            shade(x_face)
        } else {
            shade(z_face)
        }
    };
    let (top, near) = (shade(0), (shade(x_face) + shade(z_face)) / 2.0);
    let mut corner = |xz: [f32; 2], y: f32, shade: f32| {
        push_corner(out, b, [xz[0], y, xz[1]], shade);
    };
    if detail == Detail::Coarse {
        corner(t, 1.0, top);
        corner(a, 0.5, (top + side(a)) / 2.0);
        corner(n, 0.0, near);
        corner(c, 0.5, (top + side(c)) / 2.0);
    } else {
        for quad in [
            [(t, 1.0), (a, 1.0), (a, 0.0), (n, 0.0)],
            [(t, 1.0), (n, 0.0), (c, 0.0), (c, 1.0)],
        ] {
            for (xz, y) in quad {
                let shade = match (y == 1.0, xz == n) {
                    (true, _) => top,
                    (false, true) => near,
                    (false, false) => side(xz),
                };
                corner(xz, y, shade);
            }
        }
    }
    true
}

/// `boxes` written out corner by corner as the instanced shader would place and shade them,
/// seen from `eye`: four corners a face, or fewer for boxes a few pixels across ([`Detail`]).
fn expand(boxes: &[Instance], unit: &[[f32; 4]], eye: Vec3, out: &mut Vec<Corner>) {
    out.clear();
    out.reserve(boxes.len() * 3 * FACE_CORNERS);
    for b in boxes {
        let detail = Detail::of(b, eye);
        if detail != Detail::Faces && outline(b, unit, eye, detail, out) {
            continue;
        }
        for face in 0..BOX_FACES {
            if faces_eye(face, b.lo, b.size, eye) {
                for c in &unit[face * FACE_CORNERS..(face + 1) * FACE_CORNERS] {
                    push_corner(out, b, [c[0], c[1], c[2]], c[3]);
                }
            }
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

/// How the boxes reach the GPU. Instanced, a frame uploads one 40-byte record per box and the
/// GPU places the unit box's corners. Software rasterizers that run an instanced draw as one
/// draw per instance (SwiftShader, the browser's fallback without a GPU: its Vulkan draw loops
/// over instances, some 10 us each) are many times faster with every corner written out
/// (320 bytes a box) and one draw for all: expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxPath {
    Instanced,
    Expanded,
}

impl BoxPath {
    /// The path for a renderer that calls itself `renderer` (GL_RENDERER, or WebGL's unmasked
    /// renderer): expanded on the software rasterizers (SwiftShader, Mesa's llvmpipe, where
    /// it measured faster too: only the faces toward the eye, and boxes a few pixels across as
    /// their outlines, [`Detail`]), instanced on GPUs. `MEMCITY_BOXES=expanded` or `instanced` overrides it.
    pub fn for_renderer(renderer: &str, forced: Option<&str>) -> BoxPath {
        match forced {
            Some("expanded") => return BoxPath::Expanded,
            Some("instanced") => return BoxPath::Instanced,
            _ => {}
        }
        let renderer = renderer.to_ascii_lowercase();
        if ["swiftshader", "llvmpipe", "softpipe"]
            .iter()
            .any(|software| renderer.contains(software))
        {
            BoxPath::Expanded
        } else {
            BoxPath::Instanced
        }
    }
}

/// What the page says its WebGL renderer is (WebGL's unmasked renderer), for the box path;
/// unset in the window.
static RENDERER_NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The page's renderer name, before the window starts ([`BoxPath::chosen`]).
pub fn set_renderer_name(name: String) {
    let _ = RENDERER_NAME.set(name);
}

impl BoxPath {
    /// The path for this window or page: by the renderer's name, and `MEMCITY_BOXES` in the
    /// window's environment.
    pub fn chosen() -> BoxPath {
        #[cfg(not(target_arch = "wasm32"))]
        let (forced, renderer) = (std::env::var("MEMCITY_BOXES").ok(), gl_renderer());
        #[cfg(target_arch = "wasm32")]
        let (forced, renderer): (Option<String>, String) =
            (None, RENDERER_NAME.get().cloned().unwrap_or_default());
        BoxPath::for_renderer(&renderer, forced.as_deref())
    }
}

/// The window's GL_RENDERER ("llvmpipe (LLVM 15.0.6, 256 bits)", a GPU's name).
#[cfg(not(target_arch = "wasm32"))]
fn gl_renderer() -> String {
    use macroquad::miniquad::gl::glGetString;
    // OpenGL's constant, which miniquad's bindings leave out (they have GL_VERSION, 0x1F02).
    const GL_RENDERER: u32 = 0x1F01;
    // SAFETY: called on the render thread inside macroquad's window, whose GL context is
    // current; the string GL returns is NUL-terminated and lives as long as the context.
    unsafe {
        let name = glGetString(GL_RENDERER);
        if name.is_null() {
            return String::new();
        }
        std::ffi::CStr::from_ptr(name.cast())
            .to_string_lossy()
            .into_owned()
    }
}

/// A growable GPU buffer of `T`s and its capacity (drawing takes `&self`).
struct Grown {
    buffer: std::cell::Cell<(BufferId, usize)>,
    kind: BufferType,
}

impl Grown {
    fn new<T>(ctx: &mut dyn miniquad::RenderingBackend, kind: BufferType, capacity: usize) -> Self {
        let buffer = ctx.new_buffer(
            kind,
            BufferUsage::Stream,
            BufferSource::empty::<T>(capacity),
        );
        Self {
            buffer: std::cell::Cell::new((buffer, capacity)),
            kind,
        }
    }

    /// The buffer, holding `data` from its start.
    fn upload<T>(&self, ctx: &mut dyn miniquad::RenderingBackend, data: &[T]) -> BufferId {
        let (buffer, capacity) = self.buffer.get();
        if data.len() == capacity {
            ctx.buffer_update(buffer, BufferSource::slice(data));
            return buffer;
        }
        // A buffer of exactly the data, made with it: a partial update of a buffer the GPU may
        // still be reading makes ANGLE (the browser's WebGL) copy the whole buffer first.
        ctx.delete_buffer(buffer);
        let buffer = ctx.new_buffer(self.kind, BufferUsage::Stream, BufferSource::slice(data));
        self.buffer.set((buffer, data.len()));
        buffer
    }
}

/// The boxes: one unit box and two pipelines (opaque, glass) for each path.
struct Boxes {
    path: BoxPath,
    opaque: Pipeline,
    glass: Pipeline,
    corners: BufferId,
    indices: BufferId,
    index_count: i32,
    /// Opaque and glass: instances (instanced) or corners (expanded).
    data: [Grown; 2],
    /// Expanded: the unit box's corners, and indices for as many faces as drawn so far (the
    /// same pattern for every face, so they are written only when more faces come).
    unit: Vec<[f32; 4]>,
    expanded_indices: Grown,
    expanded_faces: std::cell::Cell<usize>,
    scratch: std::cell::RefCell<Vec<Corner>>,
    /// What the last upload left to draw, opaque and glass: its buffer, and its index count and
    /// instances.
    uploaded: [std::cell::Cell<Option<(BufferId, i32, i32)>>; 2],
}

impl Boxes {
    fn new(path: BoxPath) -> anyhow::Result<Self> {
        // SAFETY: called on the render thread inside macroquad's window, and the context is not
        // kept past this function (macroquad's own state is untouched).
        let gl = unsafe { get_internal_gl() };
        let ctx = gl.quad_context;
        if path == BoxPath::Instanced && !ctx.info().features.instancing {
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
        let uniforms = ShaderMeta {
            images: vec![],
            uniforms: UniformBlockLayout {
                uniforms: vec![UniformDesc::new("view_projection", UniformType::Mat4)],
            },
        };
        let vertex = match path {
            BoxPath::Instanced => BOX_VERTEX,
            BoxPath::Expanded => EXPANDED_VERTEX,
        };
        let shader = ctx
            .new_shader(
                miniquad::ShaderSource::Glsl {
                    vertex,
                    fragment: FRAGMENT,
                },
                uniforms,
            )
            .map_err(|e| anyhow::anyhow!("cannot compile the city shaders: {e:?}"))?;
        let (layouts, attributes) = match path {
            BoxPath::Instanced => (
                vec![
                    BufferLayout::default(),
                    BufferLayout {
                        step_func: VertexStep::PerInstance,
                        ..Default::default()
                    },
                ],
                vec![
                    VertexAttribute::with_buffer("corner", VertexFormat::Float3, 0),
                    VertexAttribute::with_buffer("shade", VertexFormat::Float1, 0),
                    VertexAttribute::with_buffer("lo", VertexFormat::Float3, 1),
                    VertexAttribute::with_buffer("size", VertexFormat::Float3, 1),
                    VertexAttribute::with_buffer("tint", VertexFormat::Float4, 1),
                ],
            ),
            BoxPath::Expanded => (
                vec![BufferLayout::default()],
                vec![
                    VertexAttribute::new("position", VertexFormat::Float3),
                    VertexAttribute::new("color0", VertexFormat::Byte4),
                ],
            ),
        };
        let mut pipeline =
            |blend: bool| ctx.new_pipeline(&layouts, &attributes, shader, pipeline_params(blend));
        let (opaque, glass) = (pipeline(false), pipeline(true));
        let data = match path {
            BoxPath::Instanced => [
                Grown::new::<Instance>(ctx, BufferType::VertexBuffer, 4096),
                Grown::new::<Instance>(ctx, BufferType::VertexBuffer, 4096),
            ],
            BoxPath::Expanded => [
                Grown::new::<Corner>(ctx, BufferType::VertexBuffer, 4096 * FACE_CORNERS),
                Grown::new::<Corner>(ctx, BufferType::VertexBuffer, 4096 * FACE_CORNERS),
            ],
        };
        let expanded_indices = Grown::new::<u32>(ctx, BufferType::IndexBuffer, 6);
        Ok(Self {
            path,
            opaque,
            glass,
            corners: corner_buffer,
            indices: index_buffer,
            index_count: indices.len() as i32,
            data,
            unit: corners,
            expanded_indices,
            expanded_faces: std::cell::Cell::new(0),
            scratch: Default::default(),
            uploaded: Default::default(),
        })
    }

    /// Sends `opaque` and `glass` (already sorted far to near), seen from `eye`, for the next
    /// [`Boxes::draw`]s.
    fn upload(&self, eye: Vec3, opaque: &[Instance], glass: &[Instance]) {
        // SAFETY: as in `new`: the render thread, no reference kept.
        let gl = unsafe { get_internal_gl() };
        let ctx = gl.quad_context;
        for (slot, boxes) in [opaque, glass].into_iter().enumerate() {
            let uploaded = match (boxes.is_empty(), self.path) {
                (true, _) => None,
                (false, BoxPath::Instanced) => {
                    let buffer = self.data[slot].upload(ctx, boxes);
                    Some((buffer, self.index_count, boxes.len() as i32))
                }
                (false, BoxPath::Expanded) => {
                    let mut corners = self.scratch.borrow_mut();
                    expand(boxes, &self.unit, eye, &mut corners);
                    let faces = corners.len() / FACE_CORNERS;
                    self.grow_indices(ctx, faces);
                    let buffer = self.data[slot].upload(ctx, &corners);
                    Some((buffer, (faces * 6) as i32, 1))
                }
            };
            self.uploaded[slot].set(uploaded);
        }
    }

    /// Draws what was last uploaded, opaque then glass, over what is on screen.
    fn draw(&self, view_projection: Mat4) {
        // SAFETY: as in `new`: the render thread, no reference kept; macroquad's queued draws are
        // flushed first so its state and ours do not interleave.
        let mut gl = unsafe { get_internal_gl() };
        // What macroquad queued so far (the frustums) goes first, so the depth buffer has it.
        gl.flush();
        let ctx = gl.quad_context;
        ctx.begin_default_pass(PassAction::Nothing);
        for (slot, pipeline) in [&self.opaque, &self.glass].into_iter().enumerate() {
            let Some((buffer, count, instances)) = self.uploaded[slot].get() else {
                continue;
            };
            let bindings = match self.path {
                BoxPath::Instanced => miniquad::Bindings {
                    vertex_buffers: vec![self.corners, buffer],
                    index_buffer: self.indices,
                    images: vec![],
                },
                BoxPath::Expanded => miniquad::Bindings {
                    vertex_buffers: vec![buffer],
                    index_buffer: self.expanded_indices.buffer.get().0,
                    images: vec![],
                },
            };
            ctx.apply_pipeline(pipeline);
            ctx.apply_bindings(&bindings);
            ctx.apply_uniforms(UniformsSource::table(&view_projection));
            ctx.draw(0, count, instances);
        }
        ctx.end_render_pass();
    }

    /// Indices for at least `faces` faces: two triangles on each face's four corners.
    fn grow_indices(&self, ctx: &mut dyn miniquad::RenderingBackend, faces: usize) {
        if faces <= self.expanded_faces.get() {
            return;
        }
        let faces = faces.next_power_of_two();
        let indices: Vec<u32> = (0..faces as u32)
            .flat_map(|f| {
                let base = f * FACE_CORNERS as u32;
                [base, base + 1, base + 2, base, base + 2, base + 3]
            })
            .collect();
        self.expanded_indices.upload(ctx, &indices);
        self.expanded_faces.set(faces);
    }
}

fn pipeline_params(blend: bool) -> PipelineParams {
    PipelineParams {
        depth_test: Comparison::LessOrEqual,
        depth_write: !blend,
        cull_face: CullFace::Back,
        color_blend: blend.then(glass_blend),
        ..Default::default()
    }
}

/// How glass (faded buildings, bands of doubt) blends over what is behind it.
pub fn glass_blend() -> BlendState {
    BlendState::new(
        Equation::Add,
        BlendFactor::Value(BlendValue::SourceAlpha),
        BlendFactor::OneMinusValue(BlendValue::SourceAlpha),
    )
}

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

/// The districts' and buildings' boxes: opaque ones sorted near to far from `eye`, and glass
/// ones far to near (nearer glass blends over farther glass).
///
/// Near to far, a box's hidden pixels fail the depth test before they are written: a city of
/// solid buildings draws 5-11 % faster in the page (SwiftShader, whose frames are bound by
/// filling pixels); the window (llvmpipe) measured the same either way (BENCHMARKS.md).
fn boxes(scene: &Scene, eye: Vec3, view: View) -> (Vec<Instance>, Vec<Instance>) {
    let mut opaque = Vec::with_capacity(scene.districts.len() + scene.buildings.len());
    for d in &scene.districts {
        let (min, max) = d.bounds();
        let rgb = if d.selected { SELECTED } else { d.color };
        let rgb = if view.hovered == Some(d.node) {
            lighten(rgb)
        } else {
            rgb
        };
        opaque.push(far(min, max, eye, rgb, 1.0));
    }
    let mut glass = Vec::new();
    building_instances(scene, eye, view, &mut opaque, &mut glass);
    // Unstable: boxes at the same distance may blend in either order; no allocation.
    glass.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    (
        near_to_far(&opaque),
        glass.into_iter().map(|(_, i)| i).collect(),
    )
}

/// `boxes` nearly in order of their distances, nearest first: by distance bands, in linear
/// time, as every step and turn of the eye sorts them again. Opaque boxes need no exact order
/// (the depth test decides what shows).
fn near_to_far(boxes: &[(f32, Instance)]) -> Vec<Instance> {
    const BANDS: usize = 1024;
    let (near, far) = boxes
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &(d, _)| {
            (lo.min(d), hi.max(d))
        });
    let scale = (BANDS - 1) as f32 / (far - near).max(f32::MIN_POSITIVE);
    let band = |d: f32| (((d - near) * scale) as usize).min(BANDS - 1);
    // Counting sort: where each band starts, then each box into its band's next place.
    let mut starts = vec![0usize; BANDS + 1];
    for &(d, _) in boxes {
        starts[band(d) + 1] += 1;
    }
    for i in 1..=BANDS {
        starts[i] += starts[i - 1];
    }
    let mut sorted = vec![Instance::new(Vec3::ZERO, Vec3::ZERO, [0.0; 3], 0.0); boxes.len()];
    for &(d, instance) in boxes {
        let at = &mut starts[band(d)];
        sorted[*at] = instance;
        *at += 1;
    }
    sorted
}

/// A box and its center's squared distance from `eye`, to sort by.
fn far(min: Vec3, max: Vec3, eye: Vec3, rgb: Rgb, alpha: f32) -> (f32, Instance) {
    let distance = ((min + max) / 2.0).distance_squared(eye);
    (distance, Instance::new(min, max, rgb, alpha))
}

/// The buildings' boxes, each with its distance from `eye` for sorting: solid ones to `opaque`;
/// faded ones and the bands of doubt to `glass`.
fn building_instances(
    scene: &Scene,
    eye: Vec3,
    view: View,
    opaque: &mut Vec<(f32, Instance)>,
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
            opaque.push(far(min, body_max, eye, rgb, 1.0));
        } else {
            glass.push(far(min, body_max, eye, rgb, b.opacity));
        }
        if let Some(band_min) = band {
            glass.push(far(band_min, max, eye, rgb, DOUBT_ALPHA * b.opacity));
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
    /// Which scene this is (`ViewerState::scene_revision`): an unchanged scene seen the same way
    /// reuses the boxes already sent.
    pub revision: u64,
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
            revision: 0,
        };
        super::boxes(scene, Vec3::splat(500.0), view)
    }

    /// The expanded path writes out what the instanced shader computes: each corner at
    /// `lo + corner * size`, colored `tint * shade`, the unit box's indices repeated per box.
    #[test]
    fn expanded_boxes_are_the_instanced_boxes_written_out() {
        let (unit, indices) = unit_box();
        assert_eq!(
            (unit.len(), indices.len()),
            (BOX_FACES * FACE_CORNERS, BOX_FACES * 6)
        );
        let boxes = [
            Instance::new(
                Vec3::new(1.0, 2.0, 3.0),
                Vec3::new(3.0, 12.0, 4.0),
                [1.0, 0.5, 0.0],
                1.0,
            ),
            Instance::new(Vec3::ZERO, Vec3::ONE, [0.2, 0.2, 0.2], 0.4),
        ];
        let mut out = Vec::new();
        // Seen from above, +x and +z, near enough that neither box is drawn as its outline: the
        // top, +x and +z faces of each box, no others.
        expand(&boxes, &unit, Vec3::splat(20.0), &mut out);
        let per_box = 3 * FACE_CORNERS;
        assert_eq!(out.len(), 2 * per_box);
        // The first box's top face (shade 1): its far corner at lo + size.
        assert!(out[..4].iter().any(|c| c.position == [3.0, 12.0, 4.0]));
        assert_eq!(out[0].color, [255, 128, 0, 255]);
        // The +x face, darker by its shade, all at x = 3; the glass box keeps its alpha.
        assert!(out[4..8].iter().all(|c| c.position[0] == 3.0));
        assert_eq!(out[4].color[0], (0.82f32 * 255.0 + 0.5) as u8);
        assert_eq!(out[per_box].color[3], (0.4f32 * 255.0 + 0.5) as u8);
        assert!(out[per_box..]
            .iter()
            .all(|c| c.position.iter().all(|&v| v == 0.0 || v == 1.0)));
        // From below and -x, -z: the -x and -z faces only (the top turns away).
        expand(&boxes[..1], &unit, Vec3::splat(-100.0), &mut out);
        assert_eq!(out.len(), 2 * FACE_CORNERS);
        assert!(out[..4].iter().all(|c| c.position[0] == 1.0));
        assert!(out[4..].iter().all(|c| c.position[2] == 3.0));
    }

    /// Signed areas on screen, seen from `eye` toward the origin, of the triangles in
    /// `corners` (quads of four; positive: counter-clockwise, kept by back-face culling).
    fn screen_areas(corners: &[Corner], eye: Vec3) -> Vec<f32> {
        let view_projection = Mat4::perspective_rh_gl(0.8, 1.0, 0.1, 1e5)
            * Mat4::look_at_rh(eye, Vec3::ZERO, Vec3::Y);
        let screen = |c: &Corner| {
            let p = view_projection * Vec3::from(c.position).extend(1.0);
            glam::Vec2::new(p.x / p.w, p.y / p.w)
        };
        corners
            .chunks(FACE_CORNERS)
            .flat_map(|quad| {
                let q: Vec<glam::Vec2> = quad.iter().map(screen).collect();
                [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]
            })
            .map(|[a, b, c]| (b - a).perp_dot(c - a) / 2.0)
            .collect()
    }

    /// A box a few pixels across is drawn as its outline: from each side, the outline covers on
    /// screen what the box's three faces cover, in four triangles instead of six, all turned
    /// toward the eye; smaller still, one quad covers most of it.
    #[test]
    fn small_boxes_are_drawn_as_their_outline() {
        let (unit, _) = unit_box();
        let b = Instance::new(Vec3::ZERO, Vec3::new(1.0, 1.5, 0.8), [0.5; 3], 0.3);
        let faces = |eye: Vec3| {
            let mut corners = Vec::new();
            for face in (0..BOX_FACES).filter(|&f| faces_eye(f, b.lo, b.size, eye)) {
                for c in &unit[face * FACE_CORNERS..(face + 1) * FACE_CORNERS] {
                    push_corner(&mut corners, &b, [c[0], c[1], c[2]], c[3]);
                }
            }
            screen_areas(&corners, eye)
        };
        let expanded = |eye: Vec3| {
            let mut corners = Vec::new();
            expand(&[b], &unit, eye, &mut corners);
            screen_areas(&corners, eye)
        };
        for (dx, dz) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
            let direction = Vec3::new(dx * 0.8, 1.0, dz * 0.6).normalize();
            // Seen from `distance` times the box's width away.
            let eye = |distance: f32| Vec3::new(0.5, 0.75, 0.4) + direction * 1.5 * distance;
            let near = expanded(eye(50.0));
            assert_eq!(near, faces(eye(50.0)), "near, every face");
            assert_eq!(near.len(), 6);
            // About 6 px (0.006 rad).
            let (outline, whole) = (expanded(eye(166.0)), faces(eye(166.0)));
            assert_eq!(outline.len(), 4, "from {dx}, {dz}");
            assert!(outline.iter().all(|&a| a > 0.0), "{outline:?}");
            let covered = outline.iter().sum::<f32>() / whole.iter().sum::<f32>();
            assert!((covered - 1.0).abs() < 1e-3, "the outline covers {covered}");
            // About 3 px.
            let (coarse, whole) = (expanded(eye(333.0)), faces(eye(333.0)));
            assert_eq!(coarse.len(), 2, "from {dx}, {dz}");
            assert!(coarse.iter().all(|&a| a > 0.0), "{coarse:?}");
            let covered = coarse.iter().sum::<f32>() / whole.iter().sum::<f32>();
            assert!((0.6..1.0).contains(&covered), "the quad covers {covered}");
        }
    }

    #[test]
    fn software_rasterizers_get_the_expanded_path() {
        let swiftshader = "ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)";
        assert_eq!(BoxPath::for_renderer(swiftshader, None), BoxPath::Expanded);
        assert_eq!(
            BoxPath::for_renderer("ANGLE (NVIDIA, GeForce RTX 3060)", None),
            BoxPath::Instanced
        );
        assert_eq!(
            BoxPath::for_renderer("llvmpipe (LLVM 15.0.6, 256 bits)", None),
            BoxPath::Expanded
        );
        assert_eq!(BoxPath::for_renderer("", None), BoxPath::Instanced);
        assert_eq!(
            BoxPath::for_renderer("", Some("expanded")),
            BoxPath::Expanded
        );
        assert_eq!(
            BoxPath::for_renderer(swiftshader, Some("instanced")),
            BoxPath::Instanced
        );
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
    fn opaque_boxes_come_near_to_far_and_glass_far_to_near() {
        // Buildings along x, the eye at (500, 500, 500): the farther from x = 500, the farther.
        let at = |node: NodeId, x: f32, opacity: f32| {
            let mut b = building(node, opacity, 0.0);
            b.shape.base = Rect::new(x as f64, 0.0, 10.0, 10.0);
            b
        };
        let scene = Scene {
            buildings: vec![
                at(1, 0.0, 1.0),
                at(2, 480.0, 1.0),
                at(3, 200.0, 1.0),
                at(4, 0.0, 0.5),
                at(5, 480.0, 0.5),
                at(6, 200.0, 0.5),
            ],
            ..Default::default()
        };
        let (opaque, glass) = boxes(&scene);
        let xs = |boxes: &[Instance]| boxes.iter().map(|b| b.lo[0]).collect::<Vec<_>>();
        assert_eq!(xs(&opaque), [480.0, 200.0, 0.0]);
        assert_eq!(xs(&glass), [0.0, 200.0, 480.0]);
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
