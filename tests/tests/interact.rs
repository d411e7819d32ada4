//! The viewer driven like a user drives it: a real X server (Xvfb, its screen mapped to a file),
//! real pointer and key events (xdotool), and the screen read back after each action. Where to
//! click and what to expect come from the window-free city model and controls layout.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use glam::Vec3;
use memcity_city::camera::{ray_box, OrbitCamera};
use memcity_city::layout::{layout, LayoutConfig};
use memcity_city::load;
use memcity_city::mapping;
use memcity_city::model::{Metric, NodeId};
use memcity_city::scene::{self, Scene, ViewSettings};
use memcity_e2e::*;
use memcity_viewer::controls::{Screen, Setting, Transport};

const W: u32 = 1280;
const H: u32 = 720;
const WAIT: Duration = Duration::from_secs(20);

/// A private X server whose screen is a file we can read. Killed when dropped.
struct Xvfb {
    child: Child,
    display: String,
    fbdir: tempfile::TempDir,
}

impl Xvfb {
    fn start(xvfb: &Path) -> Self {
        let fbdir = tempfile::tempdir().unwrap();
        // -displayfd 1: the server picks a free display and prints its number when it is ready.
        let mut child = Command::new(xvfb)
            .args(["-displayfd", "1", "-nolisten", "tcp", "-screen", "0"])
            .arg(format!("{W}x{H}x24"))
            .arg("-fbdir")
            .arg(fbdir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let number = match rx.recv_timeout(WAIT) {
            Ok(line) if !line.trim().is_empty() => line.trim().to_string(),
            _ => {
                let _ = child.kill();
                panic!("Xvfb did not report a display within {WAIT:?}");
            }
        };
        Self {
            child,
            display: format!(":{number}"),
            fbdir,
        }
    }

    /// The screen now, as RGB rows (the XWD image Xvfb keeps in its -fbdir file).
    fn screen(&self) -> Image {
        let data = std::fs::read(self.fbdir.path().join("Xvfb_screen0")).unwrap();
        let field = |i: usize| u32::from_be_bytes(data[i * 4..i * 4 + 4].try_into().unwrap());
        let (header, width, height) = (field(0) as usize, field(4), field(5));
        let (lsb_first, bits, stride) = (field(7) == 0, field(11), field(12) as usize);
        let masks = [field(14), field(15), field(16)];
        let colors = field(19) as usize;
        assert_eq!(bits, 32, "expected a 32-bit Xvfb screen");
        let start = header + colors * 12;
        let mut rgb = Vec::with_capacity((width * height * 3) as usize);
        for y in 0..height as usize {
            for x in 0..width as usize {
                let at = start + y * stride + x * 4;
                let raw: [u8; 4] = data[at..at + 4].try_into().unwrap();
                let v = if lsb_first {
                    u32::from_le_bytes(raw)
                } else {
                    u32::from_be_bytes(raw)
                };
                for mask in masks {
                    rgb.push(((v & mask) >> mask.trailing_zeros()) as u8);
                }
            }
        }
        Image { width, rgb }
    }

    fn xdotool(&self, args: &[&str]) {
        let status = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.display)
            .status()
            .expect("run xdotool");
        assert!(status.success(), "xdotool {args:?} failed");
    }

    fn click(&self, x: f32, y: f32) {
        let (x, y) = (x.round().to_string(), y.round().to_string());
        self.xdotool(&["mousemove", &x, &y]);
        self.xdotool(&["click", "1"]);
    }

    fn key(&self, key: &str) {
        self.xdotool(&["key", key]);
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Image {
    width: u32,
    rgb: Vec<u8>,
}

impl Image {
    fn at(&self, x: f32, y: f32) -> [u8; 3] {
        let i = ((y.round() as u32) * self.width + x.round() as u32) as usize * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

fn near(seen: [u8; 3], want: mapping::Rgb, tolerance: i32) -> bool {
    seen.iter()
        .zip(want)
        .all(|(&s, w)| (s as i32 - (w * 255.0).round() as i32).abs() <= tolerance)
}

/// Polls the screen until `check` holds; panics with `what` and the last pixel otherwise.
fn wait_for(x: &Xvfb, what: &str, mut check: impl FnMut(&Image) -> Result<(), String>) {
    let deadline = Instant::now() + WAIT;
    loop {
        match check(&x.screen()) {
            Ok(()) => return,
            Err(last) if Instant::now() >= deadline => {
                panic!("{what}: not seen within {WAIT:?} ({last})")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The viewer process; killed when dropped. Its stderr lines arrive on a channel.
struct Viewer {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Viewer {
    fn wait_line(&self, prefix: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return,
                Ok(_) => {}
                Err(_) => panic!("no '{prefix}' line from the viewer within {WAIT:?}"),
            }
        }
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the roof of `node` shows, if the model says it is visible there and clear of the panels.
fn roof_pixel(
    scene: &Scene,
    camera: &OrbitCamera,
    node: NodeId,
    clear: &dyn Fn(f32, f32) -> bool,
) -> Option<(f32, f32)> {
    let b = scene.buildings.iter().find(|b| b.node == node)?;
    if b.opacity < 1.0 {
        return None;
    }
    let (x, y, z) = b.shape.roof();
    let (px, py) = camera.project(Vec3::new(x as f32, y as f32, z as f32), W as f32, H as f32)?;
    if !clear(px, py) {
        return None;
    }
    // Nothing in front of it around that pixel.
    let first = |dx: f32, dy: f32| {
        let (origin, dir) = camera.ray(px + dx, py + dy, W as f32, H as f32);
        scene
            .buildings
            .iter()
            .map(|b| (b.node, b.bounds()))
            .chain(scene.districts.iter().map(|d| (d.node, d.bounds())))
            .filter_map(|(n, (min, max))| ray_box(origin, dir, min, max).map(|t| (t, n)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| n)
    };
    let around = [-3.0, 0.0, 3.0];
    around
        .iter()
        .all(|&dx| around.iter().all(|&dy| first(dx, dy) == Some(node)))
        .then_some((px, py))
}

#[test]
fn a_user_selects_steps_changes_settings_and_quits() {
    let (Some(xvfb), Some(_)) = (find_on_path("Xvfb"), find_on_path("xdotool")) else {
        skip("xvfb", "Xvfb or xdotool not found (scripts/setup.sh installs both): the interaction test is skipped");
        return;
    };
    ensure_built();
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let x = Xvfb::start(&xvfb);
    let mut viewer = start_viewer(&x, &["--camera", "birds-eye"]);
    // The pointer starts mid-screen; a hovered building is lightened, so park it on the status bar.
    let park = || x.xdotool(&["mousemove", "640", &(H - 10).to_string()]);
    park();

    // The same city, computed without a window: the last snapshot, bird's eye.
    let model = load::recording(&golden).unwrap();
    let last = model.len() - 1;
    let city = layout(&model, &LayoutConfig::default());
    let scene = scene::build(&model, &city, last as f64, &ViewSettings::default(), None);
    let camera = OrbitCamera::birds_eye(1000.0, scene.tallest() as f32);
    let screen = Screen::new(W as f32, H as f32, true, Some(400.0));
    let (details, close) = screen.details.unwrap();
    let (settings, rows) = screen.settings.clone().unwrap();
    let clear = |px: f32, py: f32| {
        let outside = |a: memcity_viewer::controls::Area| {
            !(a.x - 8.0..a.x + a.w + 8.0).contains(&px)
                || !(a.y - 8.0..a.y + a.h + 8.0).contains(&py)
        };
        outside(details) && outside(settings) && py > 40.0 && py < screen.strip.y - 20.0
    };
    // Two solid growers whose roofs show clear of every panel, now and two snapshots back: one
    // to select, one to watch.
    let at3 = scene::build(
        &model,
        &city,
        (last - 2) as f64,
        &ViewSettings::default(),
        None,
    );
    type Pixel = (f32, f32);
    let growers: Vec<(NodeId, Pixel, Pixel)> = model
        .top_growers(Metric::Objects, 10)
        .into_iter()
        .filter_map(|n| {
            let now = roof_pixel(&scene, &camera, n, &clear)?;
            let then = roof_pixel(&at3, &camera, n, &clear)?;
            Some((n, now, then))
        })
        .collect();
    assert!(
        growers.len() >= 2,
        "need two visible growers, found {growers:?}"
    );
    let (picked, at, _) = growers[0];
    let (watched, watched_at, watched_then) = growers[1];
    let color_of = |n: NodeId| scene.buildings.iter().find(|b| b.node == n).unwrap().color;
    wait_for(&x, "the first frame", |img| {
        let seen = img.at(watched_at.0, watched_at.1);
        near(seen, color_of(watched), 3)
            .then_some(())
            .ok_or(format!("{seen:?}"))
    });

    // Hovering a building lightens it (a third of the way to white).
    let (hx, hy) = (
        watched_at.0.round().to_string(),
        watched_at.1.round().to_string(),
    );
    x.xdotool(&["mousemove", &hx, &hy]);
    let lit = color_of(watched).map(|c| c + (1.0 - c) * 0.35);
    wait_for(&x, "the hovered building lightened", |img| {
        let seen = img.at(watched_at.0, watched_at.1);
        near(seen, lit, 3).then_some(()).ok_or(format!("{seen:?}"))
    });
    park();

    // Click a building: it turns the selection blue and the details panel opens.
    x.click(at.0, at.1);
    park();
    wait_for(&x, "the selected building in blue", |img| {
        let seen = img.at(at.0, at.1);
        near(seen, [0.2, 0.45, 1.0], 3)
            .then_some(())
            .ok_or(format!("{seen:?} at {at:?}, {:?}", model.path(picked)))
    });
    wait_for(&x, "the details panel's close box", |img| {
        let seen = img.at(close.x + 2.0, close.y + 2.0);
        near(seen, [0.9, 0.92, 0.96], 3)
            .then_some(())
            .ok_or(format!("{seen:?}"))
    });

    // Two steps back: the timeline's marker moves from the newest snapshot to the third. Each
    // step is awaited: a slow frame sees two quick presses of one key as one.
    x.key("r"); // references off: frustums would cross the roofs watched below
                // The marker runs under the strip's label band.
    let marker = |index: usize| {
        let cx = screen.strip.x_of(index, model.len());
        move |img: &Image| {
            let red = (0..5)
                .filter(|i| {
                    let top = screen.strip.y + memcity_city::timeline::LABEL_BAND;
                    let seen = img.at(cx, top + 4.0 + 7.0 * *i as f32);
                    seen[0] > 180 && seen[1] < 80 && seen[2] < 80
                })
                .count();
            (red >= 4)
                .then_some(())
                .ok_or(format!("{red}/5 red probes at x={cx}"))
        }
    };
    x.key("Left");
    wait_for(&x, "the timeline marker at snapshot 4", marker(last - 1));
    x.key("Left");
    wait_for(&x, "the timeline marker at snapshot 3", marker(last - 2));

    // Open the settings and turn growth colors off: the watched grower turns gray.
    x.click(screen.gear.center().0, screen.gear.center().1);
    let color_row = rows.iter().find(|r| r.setting == Setting::Color).unwrap();
    wait_for(&x, "the settings panel", |img| {
        let seen = img.at(color_row.less.x + 2.0, color_row.less.y + 2.0);
        near(seen, [0.9, 0.92, 0.96], 3)
            .then_some(())
            .ok_or(format!("{seen:?}"))
    });
    x.click(color_row.more.center().0, color_row.more.center().1);
    park();
    // At snapshot 3 the watched building is smaller: probe its roof there.
    let (px, py) = watched_then;
    wait_for(&x, "the watched grower in plain gray", |img| {
        let seen = img.at(px, py);
        near(seen, mapping::GRAY, 3)
            .then_some(())
            .ok_or(format!("{seen:?} at {px},{py}"))
    });

    // The first-snapshot button moves the marker to the start.
    let first = screen
        .transport
        .iter()
        .find(|(t, _)| *t == Transport::First)
        .unwrap()
        .1;
    x.click(first.center().0, first.center().1);
    wait_for(&x, "the timeline marker at the first snapshot", marker(0));

    // Escape quits cleanly.
    x.key("Escape");
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = viewer.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the viewer did not quit on Escape"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the viewer exited with {status}");
}

/// Starts `memcity replay` of the golden recording in `x` with `args`, and waits for its window.
fn start_viewer(x: &Xvfb, args: &[&str]) -> Viewer {
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let mut child = Command::new(memcity_bin())
        .args(["replay", golden.to_str().unwrap()])
        .args(args)
        .args(["--size", &format!("{W}x{H}")])
        .env("DISPLAY", &x.display)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let viewer = Viewer { child, lines };
    viewer.wait_line("memcity: window ready");
    viewer
}

/// The icicle and sunburst driven by a user: `V` switches views, a click selects a cell (blue),
/// a second click drills into it, `Backspace` climbs back; each step is checked on the screen
/// where the window-free viewer state, given the same actions, puts the cells.
#[test]
fn a_user_switches_to_the_icicle_drills_down_and_back() {
    use memcity_city::tree2d::{Icicle, Sunburst};
    use memcity_viewer::controls::{Settings, ViewKind};
    use memcity_viewer::keys::Action;
    use memcity_viewer::state::ViewerState;
    use memcity_viewer::views;

    let (Some(xvfb), Some(_)) = (find_on_path("Xvfb"), find_on_path("xdotool")) else {
        skip("xvfb", "Xvfb or xdotool not found (scripts/setup.sh installs both): the 2D interaction test is skipped");
        return;
    };
    ensure_built();
    let x = Xvfb::start(&xvfb);
    let viewer = start_viewer(&x, &[]);
    let park = || x.xdotool(&["mousemove", "640", &(H - 10).to_string()]);
    park();

    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let mut state =
        ViewerState::replay(load::recording(&golden).unwrap(), Settings::default(), None);
    let faded = state.settings.opacity.faded;
    // Probes below a cell's label line, away from its hairlines; most must show its colour
    // (solid, or faded over the sky).
    let shows = |img: &Image, r: memcity_city::treemap::Rect, rgb: mapping::Rgb, solid: bool| {
        let alpha = if solid { 1.0 } else { faded };
        let want = [0, 1, 2].map(|i| rgb[i] * alpha + [0.93, 0.95, 0.98][i] * (1.0 - alpha));
        let seen: Vec<[u8; 3]> = [(0.3, 0.75), (0.6, 0.8), (0.9, 0.85)]
            .iter()
            .map(|&(fx, fy)| img.at((r.x + r.w * fx) as f32, (r.y + r.h * fy) as f32))
            .collect();
        let ok = seen.iter().filter(|&&s| near(s, want, 12)).count() >= 2;
        ok.then_some(()).ok_or(format!("{seen:?}, want {want:?}"))
    };

    x.key("v");
    state.apply(Action::SetView(ViewKind::Icicle), 0.0);
    let screen = state.screen(W as f32, H as f32);
    let rect = views::tree_rect(&screen);
    let p = state.partition().clone();
    let icicle = Icicle::new(rect, &p);
    // The largest type-level cell with room to click and probe.
    let target = p
        .cells
        .iter()
        .filter(|c| c.level == 2 && !state.model().node(c.node).is_leaf())
        .max_by(|a, b| a.span().total_cmp(&b.span()))
        .unwrap()
        .clone();
    let r = icicle.rect(&target);
    assert!(r.h > 60.0, "{r:?}");
    let what = state.model().path(target.node).join("/");
    wait_for(&x, &format!("the icicle's {what}"), |img| {
        shows(img, r, target.color, target.solid)
    });

    // Click it: selected, blue.
    let (cx, cy) = (r.x + r.w * 0.5, r.y + r.h * 0.5);
    x.click(cx as f32, cy as f32);
    park();
    wait_for(&x, "the selected cell in blue", |img| {
        shows(img, r, mapping::SELECTED, true)
    });
    // Click it again: it becomes the local root, filling the first column.
    x.click(cx as f32, cy as f32);
    park();
    state.apply(Action::Select(Some(target.node)), 0.0);
    state.apply(Action::DrillTo(target.node), 0.0);
    let screen = state.screen(W as f32, H as f32);
    let rect = views::tree_rect(&screen);
    let p = state.partition().clone();
    assert_eq!(p.root, target.node);
    let root = Icicle::new(rect, &p).rect(&p.cells[0]);
    assert!(
        (root.h - rect.h).abs() < 1e-6,
        "the local root spans the height"
    );
    wait_for(&x, "the drilled-down root, still selected", |img| {
        // The global view covers the column's lower left: probe its upper part.
        let upper = memcity_city::treemap::Rect::new(root.x, root.y, root.w, root.h * 0.4);
        shows(img, upper, mapping::SELECTED, true)
    });

    // Backspace climbs to the parent; then V shows the sunburst of the same local root.
    x.key("BackSpace");
    state.apply(Action::DrillUp, 0.0);
    x.key("v");
    state.apply(Action::SetView(ViewKind::Sunburst), 0.0);
    let screen = state.screen(W as f32, H as f32);
    let rect = views::tree_rect(&screen);
    let p = state.partition().clone();
    let sun = Sunburst::new(rect, &p);
    let cell = p
        .cells
        .iter()
        .find(|c| c.node == target.node)
        .expect("the selected type in its parent's sunburst")
        .clone();
    let a = sun.arc(&cell);
    let probes: Vec<(f32, f32)> = [0.3, 0.5, 0.7]
        .iter()
        .map(|&f| {
            let (px, py) = memcity_city::tree2d::Arc::point(
                sun.center,
                a.inner + (a.outer - a.inner) * 0.25,
                a.from + (a.to - a.from) * f,
            );
            (px as f32, py as f32)
        })
        .collect();
    wait_for(&x, "the sunburst's selected segment in blue", |img| {
        let seen: Vec<[u8; 3]> = probes.iter().map(|&(px, py)| img.at(px, py)).collect();
        (seen
            .iter()
            .filter(|&&s| near(s, mapping::SELECTED, 12))
            .count()
            >= 2)
            .then_some(())
            .ok_or(format!("{seen:?} at {probes:?}"))
    });
    drop(viewer);
}
