//! The window around the state: what the keys and the mouse mean this frame, and the frame
//! drawn (the main area, then everything over it).

use macroquad::prelude::{
    is_key_down, is_key_pressed, is_mouse_button_down, is_mouse_button_pressed,
    is_mouse_button_released, mouse_wheel, screen_height, screen_width, set_default_camera,
    MouseButton,
};
use memcity_city::model::NodeId;
use memcity_city::scene;
use memcity_city::tree2d::{Icicle, Sunburst};

use super::{main_area, overlay};
use crate::controls::{ui_scale, Area, Screen, ViewKind};
use crate::keys::{self, BINDINGS};
use crate::pointer::{self, Drag, Effect, Pointer};
use crate::render::Renderer;
use crate::state::ViewerState;
use crate::views;

/// The window around the state: input in progress and what the frame drew where.
pub(super) struct Window {
    pub(super) state: ViewerState,
    pub(super) drag: Option<Drag>,
    pub(super) last_mouse: (f32, f32),
    /// The breadcrumb's steps as last drawn, for clicks.
    pub(super) crumbs: Vec<(NodeId, Area)>,
    /// Where the frames' layouts go, when asked for.
    pub(super) layouts: Layouts,
}

/// Where each frame's layout (`hud::layout`) goes: natively to the file `MEMCITY_LAYOUT` names,
/// if it is set (replaced whole, so a reader never sees half of one); in the page to the page
/// (`memcity_page.layout`). Only a layout that changed is handed on.
pub(super) struct Layouts {
    #[cfg(not(target_arch = "wasm32"))]
    path: Option<std::path::PathBuf>,
    /// The page asked for them (`layout=1`).
    #[cfg(target_arch = "wasm32")]
    page: bool,
    last: String,
}

impl Layouts {
    pub(super) fn new(page: bool) -> Self {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = page;
        Self {
            #[cfg(not(target_arch = "wasm32"))]
            path: std::env::var_os("MEMCITY_LAYOUT").map(Into::into),
            #[cfg(target_arch = "wasm32")]
            page,
            last: String::new(),
        }
    }

    fn wanted(&self) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        return self.path.is_some();
        #[cfg(target_arch = "wasm32")]
        return self.page;
    }

    /// A frame of `size` showing `view` begins.
    pub(super) fn begin(&self, size: Size, view: ViewKind) {
        if self.wanted() {
            crate::hud::layout::begin(size.w, size.h, size.scale, view.label());
        }
    }

    /// The frame begun is drawn: its layout goes on if it changed.
    pub(super) fn end(&mut self) -> anyhow::Result<()> {
        let Some(json) = crate::hud::layout::end() else {
            return Ok(());
        };
        if json == self.last {
            return Ok(());
        }
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(path) = &self.path {
            let part = path.with_extension("part");
            std::fs::write(&part, &json)
                .and_then(|()| std::fs::rename(&part, path))
                .map_err(|e| anyhow::anyhow!("MEMCITY_LAYOUT {}: {e}", path.display()))?;
        }
        #[cfg(target_arch = "wasm32")]
        super::modes::page::layout(&json);
        self.last = json;
        Ok(())
    }
}

/// The window's size in pixels, and in the units the HUD and the 2D views are laid out in: they
/// are designed for about 1280x800 and scaled up on larger windows (`ui_scale`), so panels and
/// text keep their share of a 1920x1080 or 4K screen.
#[derive(Debug, Clone, Copy)]
pub(super) struct Size {
    pub(super) pixels: (f32, f32),
    pub(super) scale: f32,
    pub(super) w: f32,
    pub(super) h: f32,
}

impl Size {
    pub(super) fn now() -> Self {
        let pixels = (screen_width(), screen_height());
        let scale = ui_scale(pixels.0, pixels.1);
        Self {
            pixels,
            scale,
            w: pixels.0 / scale,
            h: pixels.1 / scale,
        }
    }

    /// A pixel position in HUD units.
    pub(super) fn hud(&self, at: (f32, f32)) -> (f32, f32) {
        (at.0 / self.scale, at.1 / self.scale)
    }
}

/// Seconds on the window's clock.
pub(super) fn now() -> f64 {
    macroquad::time::get_time()
}

impl Window {
    /// Where everything sits in a window of `size`, the status bar's text left of the page's
    /// own bar (in the browser).
    pub(super) fn screen(&mut self, size: Size) -> Screen {
        self.state
            .screen(size.w, size.h)
            .reserving_status_end(crate::controls::page_bar() / size.scale)
    }

    /// The group under the pointer (`mouse` in HUD units, `pixel` in the window's) in the
    /// current view; none over a panel.
    pub(super) fn hovered(
        &mut self,
        screen: &Screen,
        mouse: (f32, f32),
        pixel: (f32, f32),
        size: Size,
    ) -> Option<NodeId> {
        if screen.hit(mouse.0, mouse.1).is_some() {
            return None;
        }
        let (x, y) = (mouse.0 as f64, mouse.1 as f64);
        let rect = views::tree_rect(screen);
        match self.state.view {
            ViewKind::City => {
                let (w, h) = size.pixels;
                let (origin, dir) = self.state.camera.ray(pixel.0, pixel.1, w, h);
                scene::pick(self.state.scene(), origin, dir)
            }
            ViewKind::Icicle => {
                let p = self.state.partition();
                Icicle::new(rect, p).pick(p, x, y)
            }
            ViewKind::Sunburst => {
                let p = self.state.partition();
                Sunburst::new(rect, p).pick(p, x, y)
            }
            // The lifetimes view's dots are contexts, not groups: `draw_view` picks them.
            ViewKind::Timeline | ViewKind::Lifetimes => None,
        }
    }

    /// Keys pressed once are actions; held keys move the city's camera.
    pub(super) fn keys(&mut self, dt: f32) {
        let t = now();
        for &(key, action, _) in BINDINGS {
            if is_key_pressed(key) {
                self.state.apply(action, t);
            }
        }
        if self.state.view != ViewKind::City {
            return;
        }
        self.state.hold(keys::held(is_key_down), dt);
    }

    /// Mouse: reads the pointer, asks `pointer::frame` what it means (panels first, then the
    /// view: the city drags to orbit, shift-drag or middle-drag to pan, click to select, wheel
    /// to zoom; the 2D views click to select, again to drill down) and does it.
    pub(super) fn mouse(&mut self, screen: &Screen, mouse: (f32, f32), hovered: Option<NodeId>) {
        let t = now();
        let moved = (mouse.0 - self.last_mouse.0, mouse.1 - self.last_mouse.1);
        self.last_mouse = mouse;
        let pointer = Pointer {
            at: mouse,
            moved,
            pressed: is_mouse_button_pressed(MouseButton::Left),
            released: is_mouse_button_released(MouseButton::Left),
            left: is_mouse_button_down(MouseButton::Left),
            right: is_mouse_button_down(MouseButton::Right),
            middle: is_mouse_button_down(MouseButton::Middle),
            wheel: mouse_wheel().1,
            shift: keys::shift(is_key_down),
            hovered,
        };
        let outcome = pointer::frame(screen, &self.crumbs, &mut self.state, self.drag, &pointer);
        self.drag = outcome.drag;
        for effect in outcome.effects {
            match effect {
                Effect::Apply(action) => self.state.apply(action, t),
                Effect::Camera(change) => change.apply(self.state.take_camera()),
            }
        }
    }

    /// The main area: the city, or a 2D view.
    pub(super) fn draw_view(
        &mut self,
        renderer: &Renderer,
        screen: &Screen,
        size: Size,
        hovered: Option<NodeId>,
        mouse: (f32, f32),
    ) {
        self.crumbs.clear();
        match self.state.view {
            ViewKind::City => main_area::city(&mut self.state, renderer, size, hovered),
            ViewKind::Icicle | ViewKind::Sunburst => {
                self.crumbs = main_area::tree(&mut self.state, screen, size, hovered, mouse);
            }
            ViewKind::Lifetimes => main_area::lifetimes(&mut self.state, screen, size, mouse),
            ViewKind::Timeline => main_area::timeline(&mut self.state, screen, size),
        }
    }

    /// Everything drawn over the view.
    pub(super) fn draw_hud(
        &mut self,
        screen: &Screen,
        size: Size,
        mouse: (f32, f32),
        hovered: Option<NodeId>,
    ) {
        overlay::draw(&self.state, self.drag, screen, size, mouse, hovered);
    }

    /// One whole frame as a user sees it (no input).
    pub(super) fn draw_frame(&mut self, renderer: &Renderer, hud: bool) -> anyhow::Result<()> {
        let size = Size::now();
        self.layouts.begin(size, self.state.view);
        let screen = self.screen(size);
        self.draw_view(renderer, &screen, size, None, (-100.0, -100.0));
        if hud {
            let screen = self.screen(size);
            self.draw_hud(&screen, size, (-100.0, -100.0), None);
        }
        set_default_camera();
        self.layouts.end()
    }
}
