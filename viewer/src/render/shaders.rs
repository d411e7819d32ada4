//! The city's shaders, and how their pipelines test depth, cull and blend.

use macroquad::miniquad::{
    BlendFactor, BlendState, BlendValue, Comparison, CullFace, Equation, PipelineParams,
};

pub(super) const MESH_VERTEX: &str = r#"#version 100
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

pub(super) const BOX_VERTEX: &str = r#"#version 100
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
pub(super) const EXPANDED_VERTEX: &str = r#"#version 100
attribute vec3 position;
attribute vec4 color0;
uniform mat4 view_projection;
varying lowp vec4 color;
void main() {
    gl_Position = view_projection * vec4(position, 1.0);
    color = color0 / 255.0;
}
"#;

pub(super) const FRAGMENT: &str = r#"#version 100
varying lowp vec4 color;
void main() {
    gl_FragColor = color;
}
"#;

pub(super) fn pipeline_params(blend: bool) -> PipelineParams {
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
