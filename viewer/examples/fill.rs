//! How fast this machine's OpenGL fills pixels, whatever memcity draws: LAYERS full-window
//! rectangles a frame, opaque or blended as the city's glass, in a 1280x720 window
//! (`scripts/bench-web.sh` runs it under Xvfb beside `scripts/bench/fill.html` in the browser).
//! Prints the median frame time over 100 frames.
//!
//! Usage: fill LAYERS [blend]

use macroquad::prelude::*;

fn conf() -> Conf {
    Conf {
        window_title: "memcity fill".to_string(),
        window_width: 1280,
        window_height: 720,
        window_resizable: false,
        sample_count: 1,
        ..Default::default()
    }
}

#[macroquad::main(conf)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let layers: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: fill LAYERS [blend]");
    let blend = args.next().as_deref() == Some("blend");
    let material = load_material(
        ShaderSource::Glsl {
            vertex: "#version 100
attribute vec3 position;
uniform mat4 Model;
uniform mat4 Projection;
void main() { gl_Position = Projection * Model * vec4(position, 1.0); }",
            fragment: "#version 100
precision lowp float;
uniform vec4 tint;
void main() { gl_FragColor = tint; }",
        },
        MaterialParams {
            uniforms: vec![UniformDesc::new("tint", UniformType::Float4)],
            pipeline_params: PipelineParams {
                color_blend: blend.then(memcity_viewer::render::glass_blend),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .expect("the fill shader compiles");
    let mut times = Vec::new();
    let mut last = get_time();
    while times.len() < 120 {
        clear_background(Color::new(0.93, 0.95, 0.98, 1.0));
        gl_use_material(&material);
        for i in 0..layers {
            // One draw call a layer, as the page's drawArrays per layer.
            material.set_uniform("tint", [0.5f32, 0.3 * i as f32 / layers as f32, 0.2, 0.3]);
            draw_rectangle(0.0, 0.0, screen_width(), screen_height(), WHITE);
            // SAFETY: on macroquad's render thread, inside its window; nothing kept.
            unsafe { get_internal_gl() }.flush();
        }
        gl_use_default_material();
        next_frame().await;
        let now = get_time();
        times.push(now - last);
        last = now;
    }
    let mut measured = times.split_off(20);
    measured.sort_by(f64::total_cmp);
    let ms = measured[measured.len() / 2] * 1e3;
    let pixels = layers as f64 * screen_width() as f64 * screen_height() as f64;
    println!(
        "{layers} {} full-window layers at {}x{}: {ms:.1} ms/frame, {:.0} Mpixels/s",
        if blend { "blended" } else { "opaque" },
        screen_width(),
        screen_height(),
        pixels / ms / 1e3
    );
}
