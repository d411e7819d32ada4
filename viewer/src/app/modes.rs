//! The window's three modes once its state is set up: interactive (the loop of input, a frame
//! drawn and the network's news), `--screenshot` (one frame to a PNG for scripts, docs and
//! tests) and the hidden FPS benchmark; the last two first wait for the snapshots they need.

use std::path::Path;

use macroquad::prelude::{is_key_pressed, mouse_position, next_frame, set_default_camera};

use super::window::{now, Size, Window};
use super::{ViewKind, WindowOptions};
use crate::keys;
use crate::live::{Event, Status};
use crate::render::{self, Renderer};
use crate::state::ViewerState;

/// Most messages taken from the network per frame, so a backlog cannot stall a frame.
const MESSAGES_PER_FRAME: usize = 2000;

/// Takes what the network thread has, without waiting for more.
fn take_events(
    state: &mut ViewerState,
    events: Option<&crossbeam_channel::Receiver<Event>>,
) -> anyhow::Result<()> {
    if let Some(events) = events {
        for event in events.try_iter().take(MESSAGES_PER_FRAME) {
            state.take(event)?;
        }
    }
    Ok(())
}

/// For screenshots and benchmarks of a live source: waits (drawing nothing but frames, so the
/// window stays responsive) until the snapshots asked for arrived, or gives up with why.
pub(super) async fn wait_for_snapshots(
    state: &mut ViewerState,
    events: Option<&crossbeam_channel::Receiver<Event>>,
    options: &WindowOptions,
) -> anyhow::Result<()> {
    let started = now();
    loop {
        take_events(state, events)?;
        let ready = match options.exit_after {
            Some(n) if events.is_some() => state.received >= n,
            _ => !state.is_empty(),
        };
        if ready {
            return Ok(());
        }
        if now() - started > options.wait.as_secs_f64() {
            let why = match &state.status {
                Status::Disconnected { why, .. } => format!(" (last attempt: {why})"),
                Status::Failed(why) | Status::Ended(why) => format!(" ({why})"),
                _ => String::new(),
            };
            anyhow::bail!(
                "no snapshot arrived within {:.0} s{why}: is the JVM running with the agent, and on this address? (`java -agentpath:.../libmemcity.so=port=N`)",
                options.wait.as_secs_f64()
            );
        }
        next_frame().await;
    }
}

/// Writes one frame, as it stands, to a PNG.
pub(super) async fn screenshot(
    renderer: &Renderer,
    window: &mut Window,
    path: &Path,
    hud: bool,
) -> anyhow::Result<()> {
    // A few frames first, so the window is mapped and sized before the read-back.
    for pass in 0..4 {
        window.draw_frame(renderer, hud)?;
        if pass == 3 {
            render::screenshot(path).await?;
        } else {
            next_frame().await;
        }
    }
    if window.state.live {
        eprintln!("memcity: received {} snapshots", window.state.received);
    }
    Ok(())
}

/// The window as users have it, until they quit or `--exit-after` snapshots arrived: each
/// frame takes the network's news, reads the input, advances time and draws.
pub(super) async fn interactive(
    renderer: &Renderer,
    window: &mut Window,
    events: Option<&crossbeam_channel::Receiver<Event>>,
    options: &WindowOptions,
) -> anyhow::Result<()> {
    let mut ready_signalled = false;
    let mut latency = Latency::new();
    loop {
        take_events(&mut window.state, events)?;
        if !window.state.is_empty() && !window.state.framed {
            window.state.frame_camera(options.camera);
        }
        if options
            .exit_after
            .is_some_and(|n| window.state.received >= n)
        {
            eprintln!("memcity: received {} snapshots", window.state.received);
            latency.report();
            return Ok(());
        }
        if is_key_pressed(keys::QUIT) {
            return Ok(());
        }
        let size = Size::now();
        let dt = macroquad::time::get_frame_time();
        let screen = window.screen(size);
        let pixel = mouse_position();
        let mouse = size.hud(pixel);
        window.keys(dt);
        // Picking uses last frame's picture: what the pointer is over is what was drawn.
        let hovered = window.hovered(&screen, mouse, pixel, size);
        window.mouse(&screen, mouse, hovered);
        window.state.advance(dt as f64);
        // The panels' layout may have changed with the selection.
        let screen = window.screen(size);
        window.layouts.begin(size, window.state.view);
        window.draw_view(renderer, &screen, size, hovered, mouse);
        window.draw_hud(&screen, size, mouse, hovered);
        set_default_camera();
        window.layouts.end()?;
        #[cfg(target_arch = "wasm32")]
        page::drawn(
            window.state.len(),
            window.state.model().handshake.as_ref().map_or(0, |h| h.pid),
            window.state.travel.index(),
            window.state.view,
        );
        if !ready_signalled {
            // Scripts and tests wait for this line before sending input.
            eprintln!("memcity: window ready");
            ready_signalled = true;
        }
        next_frame().await;
        latency.shown(&mut window.state.applied);
    }
}

/// Natively, with `MEMCITY_LATENCY` set (scripts/bench-web.sh): each live snapshot's time from
/// reaching the process to the frame that first showed it, said at `--exit-after`.
struct Latency {
    /// `None` unless asked for (the environment is read once, not every frame).
    ms: Option<Vec<f64>>,
    /// Frames shown, and when the first was.
    frames: usize,
    since: Option<f64>,
}

impl Latency {
    fn new() -> Self {
        #[cfg(not(target_arch = "wasm32"))]
        let asked = std::env::var_os("MEMCITY_LATENCY").is_some();
        #[cfg(target_arch = "wasm32")]
        let asked = false;
        Self {
            ms: asked.then(Vec::new),
            frames: 0,
            since: None,
        }
    }

    /// The frame just shown first showed the snapshots that arrived at `applied`.
    fn shown(&mut self, applied: &mut Vec<std::time::Instant>) {
        self.frames += 1;
        self.since.get_or_insert_with(now);
        if let Some(ms) = self.ms.as_mut() {
            ms.extend(applied.iter().map(|at| at.elapsed().as_secs_f64() * 1e3));
        }
        applied.clear();
    }

    fn report(&self) {
        let Some(mut ms) = self.ms.clone().filter(|ms| !ms.is_empty()) else {
            return;
        };
        ms.sort_by(f64::total_cmp);
        let seconds = self.since.map_or(0.0, |since| now() - since);
        eprintln!(
            "memcity: {} live snapshots from arrival to the first frame showing it: median {:.1} ms, worst {:.1} ms ({:.1} frames a second meanwhile)",
            ms.len(),
            ms[ms.len() / 2],
            ms[ms.len() - 1],
            self.frames as f64 / seconds.max(1e-9)
        );
    }
}

/// The page around the window in the browser (`viewer/web/memcity.js`).
#[cfg(target_arch = "wasm32")]
pub(super) mod page {
    extern "C" {
        fn memcity_drawn(snapshots: u32, pid: u32, at: u32, view: u32);
        fn memcity_bench(ptr: *const u8, len: usize);
        fn memcity_layout(ptr: *const u8, len: usize);
    }

    /// Where the frame put its text (`hud::layout`, as JSON), for the page to keep.
    pub fn layout(json: &str) {
        // SAFETY: the page's function reads `len` bytes at `ptr` at once, while they are alive.
        unsafe { memcity_layout(json.as_ptr(), json.len()) };
    }

    /// The benchmark's result line (`bench=N` in the page's address), for the page to show.
    pub fn bench(line: &str) {
        // SAFETY: the page's function reads `len` bytes at `ptr` at once, while they are alive.
        unsafe { memcity_bench(line.as_ptr(), line.len()) };
    }

    /// A frame was drawn with `snapshots` in the session of the JVM `pid`, showing snapshot
    /// `at` in `view`: the page's signal that the city is there (tests wait on it as natively
    /// on "window ready"), and what it shows.
    pub fn drawn(snapshots: usize, pid: u32, at: usize, view: super::ViewKind) {
        let view = super::ViewKind::ALL
            .iter()
            .position(|v| *v == view)
            .unwrap_or(0);
        // SAFETY: the page's function takes four numbers and keeps nothing.
        unsafe { memcity_drawn(snapshots as u32, pid, at as u32, view as u32) };
    }
}

/// Times `n` still frames, then `n` frames that each step to the next snapshot (the view's
/// geometry and drawing), in the view asked for, and prints medians.
pub(super) async fn bench(
    renderer: &Renderer,
    window: &mut Window,
    n: usize,
) -> anyhow::Result<()> {
    let size = Size::now();
    let (w, h) = size.pixels;
    let len = window.state.len();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let screen = window.screen(size);
    let mut still = Vec::with_capacity(n);
    for _ in 0..n {
        let start = now();
        window.draw_view(renderer, &screen, size, None, (-100.0, -100.0));
        next_frame().await;
        still.push(now() - start);
    }
    let shapes = match window.state.view {
        ViewKind::City => window.state.scene().buildings.len(),
        _ => window.state.partition().cells.len(),
    };
    let mut stepping = Vec::with_capacity(n);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let start = now();
        // Mid-tween times, as a step is drawn: every shape between two sizes. Each frame's time
        // is new, so no cached partition of an earlier frame answers it.
        let t = (i % len.max(2).saturating_sub(1)) as f64 + 0.25 + 0.5 * i as f64 / n as f64;
        window.state.travel.hold_at(t, len);
        match window.state.view {
            ViewKind::City => window.state.refresh_scene(),
            _ => {
                window.state.partition();
            }
        }
        steps.push(now() - start);
        window.draw_view(renderer, &screen, size, None, (-100.0, -100.0));
        next_frame().await;
        stepping.push(now() - start);
    }
    let (still, stepping, step) = (median(still), median(stepping), median(steps));
    let what = match window.state.view {
        ViewKind::City => "buildings".to_string(),
        // Cells thinner than 1/10,000 of the heap (under a twentieth of a pixel) are not drawn.
        view => format!(
            "{} cells (of a {}-group tree)",
            view.label(),
            window.state.model().nodes().len() - 1
        ),
    };
    let line = format!(
        "{shapes} {what} at {w}x{h}: {:.1} FPS still ({:.1} ms/frame), {:.1} FPS while stepping in time ({:.1} ms/frame; the step itself {:.2} ms)",
        1.0 / still,
        still * 1e3,
        1.0 / stepping,
        stepping * 1e3,
        step * 1e3
    );
    #[cfg(target_arch = "wasm32")]
    page::bench(&line);
    #[cfg(not(target_arch = "wasm32"))]
    println!("{line}");
    Ok(())
}
