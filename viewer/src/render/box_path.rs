//! Which path the boxes take to the GPU, by the renderer's name.

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
    /// their outlines, `expanded::Detail`), instanced on GPUs. `MEMCITY_BOXES=expanded` or `instanced` overrides it.
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
