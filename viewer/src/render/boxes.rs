//! The boxes on the GPU: the unit box, a pipeline for opaque boxes and one for glass, and the
//! buffers each frame's boxes are uploaded to, instanced or expanded.

use glam::{Mat4, Vec3};
use macroquad::miniquad::{
    self, BufferId, BufferLayout, BufferSource, BufferType, BufferUsage, PassAction, Pipeline,
    ShaderMeta, UniformBlockLayout, UniformDesc, UniformType, UniformsSource, VertexAttribute,
    VertexFormat, VertexStep,
};
use macroquad::prelude::get_internal_gl;

use super::box_path::BoxPath;
use super::expanded::{expand, unit_box, Corner, FACE_CORNERS};
use super::instances::Instance;
use super::shaders::{pipeline_params, BOX_VERTEX, EXPANDED_VERTEX, FRAGMENT};

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
pub(super) struct Boxes {
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
    pub(super) fn new(path: BoxPath) -> anyhow::Result<Self> {
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
    pub(super) fn upload(&self, eye: Vec3, opaque: &[Instance], glass: &[Instance]) {
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
    pub(super) fn draw(&self, view_projection: Mat4) {
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
