//! The viewer in a real window under Xvfb (Mesa llvmpipe): replay the golden recording, render a
//! frame, and check pixels where the city model projects known structures.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use glam::Vec3;
use memcity_city::camera::{ray_box, OrbitCamera};
use memcity_city::layout::{layout, LayoutConfig};
use memcity_city::load;
use memcity_city::model::Metric;
use memcity_city::scene::{self, ViewSettings};
use memcity_e2e::*;

const W: u32 = 1280;
const H: u32 = 720;

fn xvfb_run() -> Option<PathBuf> {
    find_on_path("xvfb-run")
}

/// `memcity` under `xvfb-run`, on a screen of the tests' size; the caller adds its arguments.
/// `xvfb-run`, with memcity built, or `None` after saying why `what` (a test) is skipped.
fn xvfb(what: &str) -> Option<PathBuf> {
    let Some(xvfb) = xvfb_run() else {
        skip(
            "xvfb",
            &format!(
                "xvfb-run not found (scripts/setup.sh installs it): the {what} test is skipped"
            ),
        );
        return None;
    };
    ensure_built();
    Some(xvfb)
}

fn memcity_in_xvfb(xvfb_run: &Path) -> Command {
    let mut command = Command::new(xvfb_run);
    command
        .args(["-a", "-s", &format!("-screen 0 {W}x{H}x24")])
        .arg(memcity_bin());
    command
}

fn golden() -> PathBuf {
    root().join("proto/tests/data/golden-v1.mcrec")
}

fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// `memcity replay ARGS --size WxH --screenshot` in Xvfb, into `dir`; the picture, after the
/// run has succeeded.
fn replay_screenshot(xvfb: &Path, args: &[&str], dir: &Path, name: &str) -> (u32, u32, Vec<u8>) {
    let shot = dir.join(name);
    let out = memcity_in_xvfb(xvfb)
        .arg("replay")
        .args(args)
        .args([
            "--size",
            &format!("{W}x{H}"),
            "--screenshot",
            shot.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let img = read_png(&shot);
    assert_eq!((img.0, img.1), (W, H));
    img
}

fn pixel(img: &(u32, u32, Vec<u8>), x: f32, y: f32) -> [u8; 3] {
    let (w, _, data) = img;
    let i = ((y.round() as u32) * w + x.round() as u32) as usize * 4;
    [data[i], data[i + 1], data[i + 2]]
}

/// A session longer than the memory it is given (`memcity --memory`): its older history is
/// thinned, and said to be; it reports the same growth and suspects as the whole session, and
/// opens in the window.
#[test]
fn a_session_past_its_memory_is_thinned_reported_alike_and_opened() {
    let Some(xvfb) = xvfb("long session") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.mcrec");
    memcity_e2e::synthetic::long_recording(&file, 4_000, 60).unwrap();
    let path = file.to_str().unwrap();
    let report = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["report", path, "--json", "--top", "5"]);
        let out = memcity(&args, Duration::from_secs(120));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (whole, thinned) = (report(&[]), report(&["--memory", "1m"]));
    let warnings = thinned["warnings"].to_string();
    assert!(
        warnings.contains("snapshots were thinned out"),
        "{warnings}"
    );
    assert!(
        !whole["warnings"].to_string().contains("thinned"),
        "{whole}"
    );
    for key in ["suspects", "groups"] {
        assert_eq!(thinned[key], whole[key], "{key}");
    }
    assert_eq!(thinned["window"]["to_ms"], whole["window"]["to_ms"]);
    assert!(
        whole["suspects"].to_string().contains("app.Leak"),
        "{whole}"
    );
    let shot = dir.path().join("long.png");
    let out = memcity_in_xvfb(&xvfb)
        .args([
            "--memory",
            "1m",
            "replay",
            path,
            "--size",
            &format!("{W}x{H}"),
        ])
        .args(["--screenshot", shot.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("snapshots were thinned out"), "{err}");
    let img = read_png(&shot);
    assert_eq!((img.0, img.1), (W, H));
}

#[test]
fn replay_screenshot_shows_the_city_where_the_model_says() {
    let Some(xvfb) = xvfb("window") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let img = replay_screenshot(
        &xvfb,
        &[
            golden().to_str().unwrap(),
            // Counted from 1: the fifth snapshot, index 4 below.
            "--at",
            "5",
            "--camera",
            "birds-eye",
        ],
        dir.path(),
        "city.png",
    );

    // The same city, computed without a window.
    let model = load::recording(&golden()).unwrap();
    let config = LayoutConfig::default();
    let city = layout(&model, &config);
    let frame = scene::build(&model, &city, 4.0, &ViewSettings::default(), None);
    let camera = OrbitCamera::birds_eye(config.size as f32, frame.tallest() as f32);

    // The top grower's roof is red.
    let top = model.strongest_growers(Metric::Objects)[0];
    let building = frame.buildings.iter().find(|b| b.node == top).unwrap();
    let (x, y, z) = building.shape.roof();
    let (px, py) = camera
        .project(Vec3::new(x as f32, y as f32, z as f32), W as f32, H as f32)
        .unwrap();
    let roof = pixel(&img, px, py);
    assert!(
        roof[0] > 180 && roof[1] < 70 && roof[2] < 70,
        "roof of {:?} at {px},{py} is {roof:?}",
        model.path(top)
    );

    // Districts are blue: on a grid over the frame, wherever the model says a district shows
    // (the ray through every pixel within 2 of the probe picks the same district), it must.
    let mut probed = 0;
    for gy in (8..H - 8).step_by(24) {
        for gx in (8..W - 8).step_by(24) {
            let (px, py) = (gx as f32, gy as f32);
            // The nearest opaque surface under a pixel: faded glass buildings only tint it.
            let pick_at = |dx: i32, dy: i32| {
                let (origin, dir) = camera.ray(px + dx as f32, py + dy as f32, W as f32, H as f32);
                let opaque = frame
                    .buildings
                    .iter()
                    .filter(|b| b.opacity >= 1.0)
                    .map(|b| (b.node, b.bounds()));
                let districts = frame.districts.iter().map(|d| (d.node, d.bounds()));
                opaque
                    .chain(districts)
                    .filter_map(|(node, (min, max))| {
                        ray_box(origin, dir, min, max).map(|t| (t, node))
                    })
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, node)| node)
            };
            let Some(node) = pick_at(0, 0) else { continue };
            if !frame.districts.iter().any(|d| d.node == node) {
                continue;
            }
            if !(-2..=2).all(|dx| (-2..=2).all(|dy| pick_at(dx, dy) == Some(node))) {
                continue;
            }
            let seen = pixel(&img, px, py);
            assert!(
                seen[2] > seen[0] + 30,
                "district {:?} at {px},{py} is {seen:?}",
                model.path(node)
            );
            probed += 1;
        }
    }
    eprintln!("window test: {probed} district probes, all blue");
    assert!(probed >= 3, "only {probed} visible district probes");

    // Away from the city: the clear color.
    let sky = pixel(&img, 5.0, 5.0);
    let expected = [0.93f32, 0.95, 0.98].map(|c| (c * 255.0).round() as i32);
    for (got, want) in sky.iter().zip(expected) {
        assert!(
            (*got as i32 - want).abs() <= 2,
            "sky is {sky:?}, expected {expected:?}"
        );
    }
}

/// Boxes reach the GPU two ways (render::BoxPath): instanced, for GPUs, and written out corner by
/// corner, only the faces toward the eye, for software rasterizers such as this llvmpipe. Both
/// draw the same city.
#[test]
fn both_box_paths_draw_the_same_city() {
    let Some(xvfb) = xvfb("box paths") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shot = |mode: &str| {
        let path = dir.path().join(format!("{mode}.png"));
        let out = memcity_in_xvfb(&xvfb)
            .env("MEMCITY_BOXES", mode)
            .arg("replay")
            .arg(golden())
            .args(["--size", &format!("{W}x{H}"), "--screenshot"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        read_png(&path)
    };
    let (instanced, expanded) = (shot("instanced"), shot("expanded"));
    let differ = (0..W * H)
        .filter(|i| {
            let i = *i as usize * 4;
            (0..3).any(|c| (instanced.2[i + c] as i32 - expanded.2[i + c] as i32).abs() > 8)
        })
        .count();
    eprintln!("box paths: {differ} pixels differ");
    // Colors round to bytes one way and not the other; edges may land a pixel apart.
    assert!(
        differ < (W * H / 200) as usize,
        "{differ} of {} pixels differ between the paths",
        W * H
    );
    let sky = instanced
        .2
        .chunks(4)
        .filter(|p| p[2] > 240 && p[0] > 230)
        .count();
    assert!(sky < (W * H) as usize * 9 / 10, "the city is drawn at all");
}

#[test]
fn replay_without_a_display_says_what_to_do() {
    ensure_built();
    let out = Command::new(memcity_bin())
        .args(["replay", golden().to_str().unwrap()])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no display") && err.contains("xvfb-run") && err.contains("memcity report"),
        "{err}"
    );
}

#[test]
fn replay_names_a_group_it_cannot_select_before_opening_a_window() {
    ensure_built();
    let out = Command::new(memcity_bin())
        .args([
            "replay",
            golden().to_str().unwrap(),
            "--select",
            "java.util/NoSuchType",
        ])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--select java.util/NoSuchType: no such group")
            && err.contains("memcity report"),
        "{err}"
    );
}

#[test]
fn live_view_receives_snapshots_from_a_real_agent() {
    let Some(xvfb) = xvfb("live window") else {
        return;
    };
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 60.0)
        .agent(format!(
            "port=0,portfile={},budget=50,min_interval=300ms,period=500ms",
            portfile.display()
        ))
        .spawn();
    let port = wait_for_file(&portfile, std::time::Duration::from_secs(30));
    let shot = dir.path().join("live.png");
    let recording = dir.path().join("viewed.mcrec");
    let out = memcity_in_xvfb(&xvfb)
        .args([
            "view",
            &port,
            "--exit-after",
            "3",
            "--record",
            recording.to_str().unwrap(),
        ])
        .args(["--screenshot", shot.to_str().unwrap()])
        .output()
        .unwrap();
    // The same live session as a sunburst: the 2D views follow a live agent too.
    let sunburst = dir.path().join("live-sunburst.png");
    let out_2d = memcity_in_xvfb(&xvfb)
        .args(["view", &port, "--view", "sunburst", "--exit-after", "2"])
        .args(["--screenshot", sunburst.to_str().unwrap()])
        .output()
        .unwrap();
    app.kill();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "view failed: {stderr}");
    assert!(stderr.contains("received 3 snapshots"), "{stderr}");
    assert!(
        out_2d.status.success(),
        "view --view sunburst failed: {}",
        String::from_utf8_lossy(&out_2d.stderr)
    );
    // The heap's disc in the middle of the main area, in the darkest district blue.
    let img = read_png(&sunburst);
    // Without the HUD, the sunburst has the whole picture.
    let screen =
        memcity_viewer::controls::Screen::new(W as f32, H as f32, false, None).without_hud();
    let (cx, cy) = memcity_city::tree2d::Sunburst::new(
        memcity_viewer::views::tree_rect(&screen),
        &Default::default(),
    )
    .center;
    let seen = pixel(&img, cx as f32, cy as f32);
    let dark = memcity_city::mapping::DISTRICT_DARK.map(|c| (c * 255.0).round() as i32);
    assert!(
        seen.iter()
            .zip(dark)
            .all(|(&s, d)| (s as i32 - d).abs() <= 12),
        "the heap's disc at {cx},{cy} is {seen:?}, expected {dark:?}"
    );
    // The city was drawn: the frame is not all sky.
    let img = read_png(&shot);
    let not_sky = img
        .2
        .chunks(4)
        .filter(|p| (p[0] as i32 - 237).abs() > 6)
        .count();
    assert!(
        not_sky > (W * H / 20) as usize,
        "only {not_sky} non-sky pixels"
    );
    // --record wrote what arrived.
    let session = load_recording(&recording).unwrap();
    assert!(session.len() >= 3, "{}", session.len());
}

/// `memcity demo` shows the bundled leaking app live; `--hud` draws the panels into its
/// screenshot, as `view` and `replay` do.
#[test]
fn demo_launches_the_bundled_app_and_shows_it_live() {
    let Some(xvfb) = xvfb("demo window") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("demo.png");
    let layout = dir.path().join("demo.json");
    let out = memcity_in_xvfb(&xvfb)
        .args([
            "demo",
            "--exit-after",
            "2",
            "--hud",
            "--screenshot",
            shot.to_str().unwrap(),
        ])
        .env("MEMCITY_LAYOUT", &layout)
        .env(
            "PATH",
            format!(
                "{}:{}",
                jdk17().home.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed: {stderr}");
    assert!(
        stderr.contains("demo app LinkedListLeak") && stderr.contains("received 2 snapshots"),
        "{stderr}"
    );
    assert!(shot.exists());
    // The panels are in the picture: the status bar says the session is live.
    let layout = memcity_e2e::layout::read_layout(&layout);
    let status = memcity_e2e::layout::texts_of(&layout, "status").join(" ");
    assert!(status.starts_with("LIVE"), "the status bar says {status:?}");
    memcity_e2e::layout::assert_laid_out(&layout, &[], "memcity demo --hud");
}

#[test]
fn selected_building_shows_its_references_as_colored_frustums() {
    let Some(xvfb) = xvfb("references window") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let select =
        "(default package)/LinkedListLeak$Person/LinkedListLeak.main(LinkedListLeak.java:33)";
    let img = replay_screenshot(
        &xvfb,
        &[golden().to_str().unwrap(), "--select", select],
        dir.path(),
        "refs.png",
    );

    let model = load::recording(&golden()).unwrap();
    let config = LayoutConfig::default();
    let city = layout(&model, &config);
    let names: Vec<&str> = select.split('/').collect();
    let person = model.find(&names).unwrap();
    let frame = scene::build(&model, &city, 4.0, &ViewSettings::default(), Some(person));
    let camera = OrbitCamera::framing(config.size as f32, frame.tallest() as f32);
    assert!(
        frame.frustums.iter().any(|f| f.0.incoming) && frame.frustums.iter().any(|f| !f.0.incoming)
    );
    let mut checked = (0, 0);
    for (frustum, from, to) in &frame.frustums {
        for k in 1..10 {
            let point = *from + (*to - *from) * (k as f32 / 10.0);
            let Some((px, py)) = camera.project(point, W as f32, H as f32) else {
                continue;
            };
            // Skip points a building hides (by the model's own geometry).
            let (origin, dir) = camera.ray(px, py, W as f32, H as f32);
            let distance = (point - origin).length();
            let hidden = frame.buildings.iter().any(|b| {
                let (min, max) = b.bounds();
                b.opacity >= 1.0
                    && ray_box(origin, dir, min, max).is_some_and(|t| t < distance - 2.0)
            });
            if hidden {
                continue;
            }
            // Tubes cross each other, so a probe may show the other direction's color; it must
            // show a frustum either way, and each direction must be seen in its own color.
            let [r, g, b] = pixel(&img, px, py).map(i32::from);
            let purple = r > g + 40 && b > g + 40;
            let green = g > r + 40 && g > b + 20;
            assert!(
                purple || green,
                "frustum probe at {px},{py} is {:?}",
                [r, g, b]
            );
            if frustum.incoming && purple {
                checked.0 += 1;
            }
            if !frustum.incoming && green {
                checked.1 += 1;
            }
        }
    }
    assert!(
        checked.0 >= 2 && checked.1 >= 2,
        "too few visible frustum probes: {checked:?}"
    );
}

/// A leaking app recorded with the real agent, replayed in a real window with its growing type
/// selected: the details panel's leak-suspect heading is drawn where the panel's layout puts it,
/// in the suspect's red, and the trace runs through the city in its own colors.
#[test]
fn details_panel_shows_the_leak_suspect_trace() {
    let Some(xvfb) = xvfb("suspect trace window") else {
        return;
    };
    let jdk = jdk17();
    // Long enough for a path search to have named the holder on a slow machine (here about
    // 3 s after the JVM's start; CI's machines are slower and busier).
    let (dir, file) = record_run(&jdk, "LinkedListLeak", &[], "", 8.0);

    let select = "(default package)/LinkedListLeak$Person";
    let img = replay_screenshot(
        &xvfb,
        &[file.to_str().unwrap(), "--select", select, "--hud"],
        dir.path(),
        "trace.png",
    );

    // Where the panel draws the trace, from the same window-free code the viewer uses.
    let model = load::recording(&file).unwrap();
    let names: Vec<&str> = select.split('/').collect();
    let person = model.find(&names).unwrap();
    let suspects = memcity_city::leak::suspects::suspects(&model);
    let d =
        memcity_city::details::details(&model, person, model.len() - 1, Metric::Objects, &suspects);
    // What the session said, for a failure's message: CI shows only the output, and this
    // recording is made anew at each run.
    let said = format!(
        "{} snapshots; suspects: {:?}",
        model.len(),
        suspects
            .iter()
            .map(|s| (&s.root, &s.holder, s.confidence.label(), s.confirmed))
            .collect::<Vec<_>>()
    );
    let trace = d
        .trace
        .as_ref()
        .unwrap_or_else(|| panic!("the Person type is on no suspect's trace: {said}"));
    assert_eq!(trace.root, "static LinkedListLeak.PEOPLE", "{said}");
    let (rows, height) = memcity_viewer::controls::details_rows(&d);
    let screen = memcity_viewer::controls::Screen::new(W as f32, H as f32, false, Some(height));
    let (panel, _) = screen.details.unwrap();
    let heading = rows
        .iter()
        .find(|r| r.kind == memcity_viewer::controls::RowKind::TraceHeading)
        .unwrap()
        .area(panel)
        .expect("the heading fits the panel");
    // On the panel (near white over anything behind it), the heading's text in red.
    let (mut red, mut light, mut all) = (0, 0, 0);
    let mut y = heading.y;
    while y < heading.y + heading.h {
        let mut x = heading.x;
        while x < heading.x + heading.w {
            let [r, g, b] = pixel(&img, x, y);
            all += 1;
            if r > 150 && g < 110 && b < 110 {
                red += 1;
            }
            if r > 200 && g > 200 && b > 200 {
                light += 1;
            }
            x += 1.0;
        }
        y += 1.0;
    }
    assert!(
        light * 2 > all,
        "no panel where the heading goes ({light} of {all} light, at {heading:?}); {said}"
    );
    assert!(
        red >= 30,
        "the trace heading is not drawn in red ({red} red pixels, at {heading:?}); {said}"
    );

    // And through the city: tubes from step to step, where the same window-free scene puts
    // them, in colors no building or reference frustum has. Probed on a picture without the
    // panels and labels, which are drawn over the city, beside the same city with nothing
    // selected (no trace): the tubes run along the roofs, so where a building's glass (a band
    // of doubt) is in front of them their yellow shows tinted, but changed.
    let img = replay_screenshot(
        &xvfb,
        &[file.to_str().unwrap(), "--select", select],
        dir.path(),
        "trace-city.png",
    );
    let plain = replay_screenshot(
        &xvfb,
        &[file.to_str().unwrap()],
        dir.path(),
        "plain-city.png",
    );
    let config = LayoutConfig::default();
    let city = layout(&model, &config);
    let last = (model.len() - 1) as f64;
    let mut frame = scene::build(&model, &city, last, &ViewSettings::default(), Some(person));
    let steps: Vec<(String, bool, bool)> = trace
        .steps
        .iter()
        .map(|s| (s.type_name.clone(), s.suspect, s.holder))
        .collect();
    let trace3d = scene::trace(&model, &frame, &steps);
    assert!(!trace3d.links.is_empty(), "{steps:?}");
    frame.trace = Some(trace3d.clone());
    let camera = OrbitCamera::framing(config.size as f32, frame.tallest() as f32);
    let (mut probes, mut seen, mut misses) = (0, 0, Vec::new());
    for &(from, to, radius, _) in &trace3d.links {
        for k in 2..9 {
            let point = from + (to - from) * (k as f32 / 10.0);
            let Some((px, py)) = camera.project(point, W as f32, H as f32) else {
                continue;
            };
            // Not behind a building: a solid one hides the tube, a glass one (a faded building,
            // a band of doubt) tints it. The tube's near side is about its radius before its
            // axis.
            let (origin, dir) = camera.ray(px, py, W as f32, H as f32);
            let distance = (point - origin).length();
            let hidden = frame.buildings.iter().any(|b| {
                let (min, max) = b.bounds();
                ray_box(origin, dir, min, max).is_some_and(|t| t < distance - radius)
            });
            if hidden {
                continue;
            }
            probes += 1;
            let [r, g, b] = pixel(&img, px, py).map(i32::from);
            let before = pixel(&plain, px, py).map(i32::from);
            let changed = (0..3).any(|i| ([r, g, b][i] - before[i]).abs() > 24);
            // Yellow, or yellow through a building's red to blue glass: warm with little blue.
            let yellow = r > 150 && g > 80 && b < 90;
            let cyan = r < 90 && g > 150 && b > 150;
            if changed && (yellow || cyan) {
                seen += 1;
            } else {
                misses.push(((px, py), [r, g, b], before));
            }
        }
    }
    assert!(
        probes >= 3 && seen * 3 >= probes * 2,
        "the trace is drawn at {seen} of {probes} visible probes (missed: {misses:?}); steps {steps:?}; {said}"
    );
}

/// `view` with a bad address refuses at once, before any window; `view --screenshot` with no
/// agent on the port gives up after `--wait` with a message that says what to check, instead of
/// waiting forever.
#[test]
fn view_refuses_bad_addresses_and_gives_up_waiting_for_a_missing_agent() {
    ensure_built();
    let bad = memcity(
        &["view", "127.0.0.1:abc"],
        std::time::Duration::from_secs(30),
    );
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("is not an agent address"), "{stderr}");

    let Some(xvfb) = xvfb("missing-agent window") else {
        return;
    };
    let port = closed_port();
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = memcity_in_xvfb(&xvfb)
        .args(["view", &format!("127.0.0.1:{port}"), "--wait", "3"])
        .args(["--size", &format!("{W}x{H}"), "--screenshot"])
        .arg(dir.path().join("never.png"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no snapshot arrived within 3 s") && stderr.contains("agent"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// The colour a cell of `rgb` at opacity `alpha` shows over the sky (the 2D views' background).
fn over_sky(rgb: [f32; 3], alpha: f32) -> [i32; 3] {
    let sky = [0.93f32, 0.95, 0.98];
    [0, 1, 2].map(|i| ((rgb[i] * alpha + sky[i] * (1.0 - alpha)) * 255.0).round() as i32)
}

fn near(seen: [u8; 3], want: [i32; 3]) -> bool {
    seen.iter()
        .zip(want)
        .all(|(&s, w)| (s as i32 - w).abs() <= 12)
}

/// The icicle, sunburst and timeline views in a real window: every cell large enough to probe
/// shows its colour where the window-free geometry (`tree2d`, `views`, the viewer state the
/// window itself uses) puts it, and `--view X --screenshot` works for every view.
#[test]
fn the_2d_views_draw_cells_where_the_geometry_says() {
    use memcity_city::tree2d::{Icicle, Sunburst};
    use memcity_viewer::controls::{Settings, ViewKind};
    use memcity_viewer::keys::Action;
    use memcity_viewer::state::ViewerState;
    use memcity_viewer::views;

    let Some(xvfb) = xvfb("2D window") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = load::recording(&golden()).unwrap();
    for view in ["city", "icicle", "sunburst", "timeline"] {
        let img = replay_screenshot(
            &xvfb,
            &[golden().to_str().unwrap(), "--view", view, "--pick", "1"],
            dir.path(),
            &format!("{view}.png"),
        );

        let kind = match view {
            "icicle" => ViewKind::Icicle,
            "sunburst" => ViewKind::Sunburst,
            "timeline" => ViewKind::Timeline,
            _ => continue, // the city's pixels: the test above
        };
        let mut state = ViewerState::replay(model.clone(), Settings::default(), None);
        state.apply(Action::SetView(kind), 0.0);
        state.apply(Action::TogglePick(0), 0.0);
        // Screenshots without --hud: the view has the whole picture.
        state.hud = false;
        let faded = state.settings.opacity.faded;
        let screen = state.screen(W as f32, H as f32);
        let area = views::main_area(&screen);
        let mut probed = 0;
        let mut check = |points: &[(f64, f64)], rgb: [f32; 3], solid: bool, what: &str| {
            let want = over_sky(rgb, if solid { 1.0 } else { faded });
            let seen: Vec<[u8; 3]> = points
                .iter()
                .map(|&(x, y)| pixel(&img, x as f32, y as f32))
                .collect();
            // Labels may cover one probe; most must show the cell.
            let matching = seen.iter().filter(|&&s| near(s, want)).count();
            assert!(
                matching * 2 > points.len(),
                "--view {view}: {what} at {points:?} shows {seen:?}, expected {want:?}"
            );
            probed += 1;
        };
        match kind {
            ViewKind::Icicle => {
                let p = state.partition().clone();
                let icicle = Icicle::new(views::tree_rect(&screen), &p);
                for cell in &p.cells {
                    let r = icicle.rect(cell);
                    if r.w < 20.0 || r.h < 40.0 {
                        continue;
                    }
                    // Below the label line, away from the hairlines.
                    let points: Vec<(f64, f64)> = [(0.3, 0.75), (0.6, 0.8), (0.9, 0.85)]
                        .iter()
                        .map(|&(fx, fy)| (r.x + r.w * fx, r.y + r.h * fy))
                        .collect();
                    let what = model.path(cell.node).join("/");
                    check(&points, cell.color, cell.solid, &what);
                }
            }
            ViewKind::Sunburst => {
                let p = state.partition().clone();
                let sun = Sunburst::new(views::tree_rect(&screen), &p);
                for cell in &p.cells {
                    let a = sun.arc(cell);
                    let ring = a.outer - a.inner;
                    if ring < 20.0 || (a.to - a.from) * a.outer < 60.0 {
                        continue;
                    }
                    let points: Vec<(f64, f64)> = [0.2, 0.4, 0.6, 0.8]
                        .iter()
                        .map(|&f| {
                            let angle = a.from + (a.to - a.from) * f;
                            let radius = a.inner + ring * if a.inner == 0.0 { 0.8 } else { 0.25 };
                            memcity_city::tree2d::Arc::point(sun.center, radius, angle)
                        })
                        .collect();
                    let what = model.path(cell.node).join("/");
                    check(&points, cell.color, cell.solid, &what);
                }
            }
            ViewKind::Timeline => {
                let index = state.travel.index();
                let layout = views::timeline_layout(area, &views::shown(&state.picks, index));
                assert_eq!(
                    layout.trees.len(),
                    2,
                    "the picked snapshot and the current one"
                );
                for &(at, rect) in &layout.trees {
                    // Under each tree's caption, the heap's root cell (heap-scaled: it fills the
                    // small icicle's height in proportion to its heap).
                    let p = state.partition_at(at as f64, true, 0.0);
                    let mut small = rect;
                    small.y += 20.0;
                    small.h -= 20.0;
                    let icicle = Icicle::new(small, p);
                    let root = icicle.rect(&p.cells[0]);
                    if root.h < 4.0 {
                        continue;
                    }
                    let centre = root.center();
                    check(
                        &[centre],
                        p.cells[0].color,
                        true,
                        &format!("the root of snapshot {}", at + 1),
                    );
                }
            }
            // Not among the views above; the lifetimes view has its own test below.
            ViewKind::City | ViewKind::Lifetimes => unreachable!(),
        }
        eprintln!("--view {view}: {probed} cells probed");
        assert!(probed >= 1, "--view {view}: nothing large enough to probe");
    }
}

/// Writes a recording of one package of twelve types over two snapshots with the same values:
/// a walk, then an estimate in which each is ±`error_percent` % of its objects. Only the
/// doubt differs.
fn doubt_recording(path: &Path, error_percent: u64) {
    use memcity_proto::recording::RecordingWriter;
    use memcity_proto::v1::{
        exactness::Source, stream_message::Kind, Exactness, Node, SessionEnd, Snapshot,
        StreamMessage, StringTable,
    };
    let classifiers = memcity_e2e::synthetic::package_and_type();
    let header = memcity_e2e::synthetic::header("window test");
    let mut w = RecordingWriter::create(path, &header).unwrap();
    let mut names = vec!["app".to_string()];
    names.extend((0..12).map(|i| format!("app.T{i}")));
    w.write(&StreamMessage {
        kind: Some(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names,
        })),
    })
    .unwrap();
    let objects = |i: u32| 1000 + 100 * u64::from(i);
    let total: u64 = (0..12).map(objects).sum();
    for seq in 0..2u64 {
        let estimated = seq == 1;
        let types: Vec<Node> = (0..12u32)
            .map(|i| Node {
                name: i + 2,
                objects: objects(i),
                bytes: objects(i) * 32,
                estimated,
                objects_error: if estimated {
                    objects(i) * error_percent / 100
                } else {
                    0
                },
                ..Default::default()
            })
            .collect();
        let package = Node {
            name: 1,
            objects: total,
            bytes: total * 32,
            estimated,
            children: types,
            ..Default::default()
        };
        w.write(&StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                classifiers: classifiers.clone(),
                root: Some(Node {
                    objects: total,
                    bytes: total * 32,
                    estimated,
                    children: vec![package],
                    ..Default::default()
                }),
                exactness: Some(Exactness {
                    source: if estimated {
                        Source::Estimate
                    } else {
                        Source::Walk
                    } as i32,
                    ..Default::default()
                }),
                ..Default::default()
            })),
        })
        .unwrap();
    }
    w.write(&StreamMessage {
        kind: Some(Kind::End(SessionEnd {
            reason: "window test".into(),
            ..Default::default()
        })),
    })
    .unwrap();
    w.finish().unwrap();
}

/// An estimate's doubt is drawn as a glass band under the roof, where the model says and only
/// there: the same city at a walk and at an estimate of the same values differs on the band's
/// part of the building's face, and not on the body below it.
#[test]
fn an_estimates_doubt_is_drawn_as_a_band_under_the_roof() {
    let Some(xvfb) = xvfb("window") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doubt.mcrec");
    doubt_recording(&file, 30);
    // Every building solid: the body's pixels are its own color, not a blend.
    let shoot = |at: &str| {
        replay_screenshot(
            &xvfb,
            &[file.to_str().unwrap(), "--at", at, "--solid", "0"],
            dir.path(),
            &format!("at-{at}.png"),
        )
    };
    let (walked, estimated) = (shoot("1"), shoot("2"));

    let model = load::recording(&file).unwrap();
    let config = LayoutConfig::default();
    let city = layout(&model, &config);
    let frame = scene::build(&model, &city, 1.0, &ViewSettings::default(), None);
    let camera = memcity_viewer::state::initial_camera(
        memcity_viewer::state::CameraView::Overview,
        frame.tallest() as f32,
    );
    // The building nearest the camera: nothing stands in front of it.
    let building = frame
        .buildings
        .iter()
        .min_by(|a, b| {
            let far = |b: &scene::Building| {
                let (lo, hi) = b.bounds();
                ((lo + hi) / 2.0).distance_squared(camera.position())
            };
            far(a).total_cmp(&far(b))
        })
        .unwrap();
    let big = building.node;
    assert!((building.doubt - 0.3).abs() < 1e-6, "{building:?}");
    let from = building.doubt_from().unwrap() as f32;
    let (min, max) = building.bounds();
    // Points on the building's faces toward the camera, at a height, that the building itself
    // is the first thing a ray through them meets.
    let on_face = |y: f32| {
        let eye = camera.position();
        let center = (min + max) / 2.0;
        let candidates = [
            Vec3::new(if eye.x > center.x { max.x } else { min.x }, y, center.z),
            Vec3::new(center.x, y, if eye.z > center.z { max.z } else { min.z }),
        ];
        candidates
            .into_iter()
            .filter_map(|p| camera.project(p, W as f32, H as f32))
            .find(|&(px, py)| {
                let (origin, dir) = camera.ray(px, py, W as f32, H as f32);
                let hits = |b: &scene::Building| {
                    let (lo, hi) = b.bounds();
                    ray_box(origin, dir, lo, hi)
                };
                let mine = hits(building);
                mine.is_some()
                    && frame
                        .buildings
                        .iter()
                        .filter(|b| b.node != big)
                        .all(|b| hits(b).is_none_or(|t| t > mine.unwrap()))
            })
            .unwrap_or_else(|| panic!("no face of {building:?} in view at height {y}"))
    };
    let differs = |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).any(|(x, y)| x.abs_diff(y) > 12);
    let height = max.y - min.y;
    let (bx, by) = on_face(min.y + height * 0.6);
    assert!(
        !differs(pixel(&walked, bx, by), pixel(&estimated, bx, by)),
        "the body at {bx},{by} is the same: {:?} and {:?}",
        pixel(&walked, bx, by),
        pixel(&estimated, bx, by)
    );
    let (tx, ty) = on_face(from + (max.y - from) * 0.5);
    assert!(
        differs(pixel(&walked, tx, ty), pixel(&estimated, tx, ty)),
        "the band at {tx},{ty} is drawn: {:?} at the walk, {:?} at the estimate",
        pixel(&walked, tx, ty),
        pixel(&estimated, tx, ty)
    );
}

/// Screen points to probe.
type Points = Vec<(f64, f64)>;

/// A cell's probes: points in its body and in its band of doubt.
struct Probe {
    what: String,
    rgb: [f32; 3],
    body: Points,
    band: Points,
}

/// The 2D views draw the same doubt: the end of a cell's span the numbers cannot back is its
/// colour at the band's opacity, the rest its full colour, at the estimate; at the walk, the
/// whole cell is full.
#[test]
fn the_2d_views_draw_an_estimates_doubt_at_the_end_of_each_span() {
    use memcity_city::tree2d::{Arc, Icicle, Sunburst};
    use memcity_viewer::controls::{Settings, ViewKind};
    use memcity_viewer::keys::Action;
    use memcity_viewer::state::ViewerState;
    use memcity_viewer::views;

    let Some(xvfb) = xvfb("2D doubt") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doubt.mcrec");
    doubt_recording(&file, 30);
    let model = load::recording(&file).unwrap();
    for (view, kind) in [
        ("icicle", ViewKind::Icicle),
        ("sunburst", ViewKind::Sunburst),
    ] {
        let shoot = |at: &str| {
            replay_screenshot(
                &xvfb,
                &[
                    file.to_str().unwrap(),
                    "--view",
                    view,
                    "--at",
                    at,
                    "--solid",
                    "0",
                ],
                dir.path(),
                &format!("{view}-{at}.png"),
            )
        };
        let (walked, estimated) = (shoot("1"), shoot("2"));
        let settings = Settings {
            opacity: memcity_city::mapping::Opacity {
                enabled: false,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut state = ViewerState::replay(model.clone(), settings, Some(1));
        state.apply(Action::SetView(kind), 0.0);
        state.hud = false;
        let screen = state.screen(W as f32, H as f32);
        let rect = views::tree_rect(&screen);
        let p = state.partition().clone();
        // Per type cell (all ±30 %): points in the body and in the band.
        let mut probes: Vec<Probe> = Vec::new();
        for cell in p.cells.iter().filter(|c| c.level == 2) {
            let from = cell
                .doubt_from()
                .unwrap_or_else(|| panic!("{view}: {cell:?}"));
            assert!((cell.doubt - 0.3).abs() < 1e-6, "{view}: {cell:?}");
            let (body, band): (Points, Points) = match kind {
                ViewKind::Icicle => {
                    let icicle = Icicle::new(rect, &p);
                    let r = icicle.rect(cell);
                    let split = rect.y + from * rect.h;
                    if r.h < 30.0 {
                        continue;
                    }
                    let xs = [0.3, 0.6, 0.9].map(|f| r.x + r.w * f);
                    (
                        xs.iter().map(|&x| (x, r.y + (split - r.y) * 0.8)).collect(),
                        xs.iter()
                            .map(|&x| (x, split + (r.y + r.h - split) * 0.5))
                            .collect(),
                    )
                }
                _ => {
                    let sun = Sunburst::new(rect, &p);
                    let a = sun.arc(cell);
                    let split = a.to - (a.to - a.from) * cell.doubt;
                    if (a.to - a.from) * a.inner < 60.0 {
                        continue;
                    }
                    let radii = [0.3, 0.5, 0.7].map(|f| a.inner + (a.outer - a.inner) * f);
                    let at = |angle: f64| -> Vec<(f64, f64)> {
                        radii
                            .iter()
                            .map(|&r| Arc::point(sun.center, r, angle))
                            .collect()
                    };
                    (
                        at(a.from + (split - a.from) * 0.5),
                        at(split + (a.to - split) * 0.5),
                    )
                }
            };
            probes.push(Probe {
                what: model.path(cell.node).join("/"),
                rgb: cell.color,
                body,
                band,
            });
        }
        assert!(
            probes.len() >= 3,
            "{view}: {} cells to probe of {:?}",
            probes.len(),
            p.cells
                .iter()
                .map(|c| (c.level, c.start, c.end))
                .collect::<Vec<_>>()
        );
        for Probe {
            what,
            rgb,
            body,
            band,
        } in &probes
        {
            // Labels may cover a probe; most must show the cell.
            let most = |img: &(u32, u32, Vec<u8>), points: &[(f64, f64)], want: [i32; 3]| {
                points
                    .iter()
                    .filter(|&&(x, y)| near(pixel(img, x as f32, y as f32), want))
                    .count()
                    * 2
                    > points.len()
            };
            let full = over_sky(*rgb, 1.0);
            let pale = over_sky(*rgb, 0.35);
            assert!(
                most(&estimated, body, full),
                "{view}: {what}'s body is its colour"
            );
            assert!(
                most(&estimated, band, pale),
                "{view}: {what}'s band is pale"
            );
            assert!(
                most(&walked, band, full),
                "{view}: {what} at the walk is whole"
            );
        }
    }
}

/// The lifetimes view in a real window: every context's dot shows its package's colour where
/// the hive geometry puts it (on both the south and east axes for a context that allocates and
/// holds), and the self edge is green along its curve.
#[test]
fn the_lifetimes_view_draws_the_hive_where_the_geometry_says() {
    use memcity_city::hive::{axis_point, edge_curve, package_color};
    use memcity_viewer::controls::{Settings, ViewKind};
    use memcity_viewer::keys::Action;
    use memcity_viewer::state::ViewerState;
    use memcity_viewer::views;

    let Some(xvfb) = xvfb("lifetimes window") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lives.mcrec");
    memcity_e2e::synthetic::lifetimes_recording(&file).unwrap();
    let img = replay_screenshot(
        &xvfb,
        &[file.to_str().unwrap(), "--view", "lifetimes"],
        dir.path(),
        "lifetimes.png",
    );

    let model = load::recording(&file).unwrap();
    let mut state = ViewerState::replay(model, Settings::default(), None);
    state.apply(Action::SetView(ViewKind::Lifetimes), 0.0);
    state.hud = false;
    let screen = state.screen(W as f32, H as f32);
    let area = views::main_area(&screen);
    let hive = state.lifetimes().hive.clone();
    assert_eq!(hive.nodes.len(), 5, "{:?}", hive.nodes);
    let layout = views::lifetimes_layout(area, hive.panels.len());
    let plot = layout.plots[0];
    let mut dots = 0;
    for node in &hive.nodes {
        for &axis in node.role.axes() {
            let (x, y) = views::hive_point(plot, axis_point(axis, node.t));
            let seen = pixel(&img, x, y);
            let want = over_sky(package_color(node.package), 1.0);
            assert!(
                near(seen, want),
                "{} on {axis:?} at {x},{y} shows {seen:?}, expected {want:?}",
                node.name
            );
            dots += 1;
        }
    }
    assert_eq!(dots, 6, "five contexts, one of them on two axes");
    let self_edge = hive.edges.iter().find(|e| e.is_self()).unwrap();
    let curve = edge_curve(hive.source(self_edge), hive.target(self_edge), 8);
    for &point in &curve[2..7] {
        let (x, y) = views::hive_point(plot, point);
        // Lines are antialiased and a pixel wide or more: the greenest pixel around the point.
        let green = (-2..=2)
            .flat_map(|dx| (-2..=2).map(move |dy| (dx as f32, dy as f32)))
            .map(|(dx, dy)| pixel(&img, x + dx, y + dy))
            .any(|p| p[1] as i32 > p[0] as i32 + 60 && p[1] as i32 > p[2] as i32 + 40);
        assert!(green, "the self edge at {x},{y} is not green");
    }
}

/// `--context` keeps an allocation context in focus: its dot ringed, its survival panel drawn
/// (the curve and the bars where the panel otherwise only asks for a context); a context the
/// session does not have is refused before any window opens.
#[test]
fn the_lifetimes_view_shows_the_survival_of_the_context_in_focus() {
    use memcity_city::hive::axis_point;
    use memcity_viewer::controls::{Settings, ViewKind};
    use memcity_viewer::keys::Action;
    use memcity_viewer::state::ViewerState;
    use memcity_viewer::views;

    let Some(xvfb) = xvfb("lifetimes context") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lives.mcrec");
    memcity_e2e::synthetic::lifetimes_recording(&file).unwrap();
    let file = file.to_str().unwrap();
    let plain = replay_screenshot(
        &xvfb,
        &[file, "--view", "lifetimes"],
        dir.path(),
        "plain.png",
    );
    let focused = replay_screenshot(
        &xvfb,
        &[file, "--view", "lifetimes", "--context", "app.Loader"],
        dir.path(),
        "focused.png",
    );

    let model = load::recording(std::path::Path::new(file)).unwrap();
    let mut state = ViewerState::replay(model, Settings::default(), None);
    state.apply(Action::SetView(ViewKind::Lifetimes), 0.0);
    state.hud = false;
    let screen = state.screen(W as f32, H as f32);
    let hive = state.lifetimes().hive.clone();
    let layout = views::lifetimes_layout(views::main_area(&screen), hive.panels.len());
    let s = layout.survival;
    let panel: Vec<(u32, u32)> = (s.y.max(0.0) as u32..(s.y + s.h).min(H as f32) as u32)
        .flat_map(|y| (s.x.max(0.0) as u32..(s.x + s.w).min(W as f32) as u32).map(move |x| (x, y)))
        .collect();
    let changed = panel
        .iter()
        .filter(|&&(x, y)| {
            let (a, b) = (
                pixel(&plain, x as f32, y as f32),
                pixel(&focused, x as f32, y as f32),
            );
            (0..3).any(|c| (a[c] as i32 - b[c] as i32).abs() > 40)
        })
        .count();
    let share = changed as f32 / panel.len().max(1) as f32;
    assert!(
        share > 0.02,
        "the survival panel changed on {:.1} % of its pixels",
        share * 100.0
    );

    let loader = hive
        .nodes
        .iter()
        .find(|n| n.name == "app.Loader")
        .expect("app.Loader in the plot");
    let axis = loader.role.axes()[0];
    let (x, y) = views::hive_point(layout.plots[0], axis_point(axis, loader.t));
    let ring = memcity_viewer::hive_view::DOT + 3.0;
    // The ring is 2 pixels wide, a polygon: where it falls between pixel centres depends on the
    // dot's place, so each probe looks a pixel in and out too.
    let ringed = |img: &(u32, u32, Vec<u8>)| {
        (0..16)
            .map(|k| std::f32::consts::TAU * k as f32 / 16.0)
            .filter(|a| {
                [ring - 1.0, ring, ring + 1.0].iter().any(|r| {
                    let p = pixel(img, x + r * a.cos(), y + r * a.sin());
                    p.iter().all(|&c| c < 110)
                })
            })
            .count()
    };
    let (dark, before) = (ringed(&focused), ringed(&plain));
    assert!(
        dark >= 8 && before < 8,
        "app.Loader's dot at {x},{y} is ringed at only {dark} of 16 points ({before} before)"
    );

    let out = memcity_in_xvfb(&xvfb)
        .args([
            "replay",
            file,
            "--view",
            "lifetimes",
            "--context",
            "app.Nowhere",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--context app.Nowhere: no allocation context"),
        "{stderr}"
    );
    assert!(
        stderr.contains("app.Loader"),
        "names some that exist: {stderr}"
    );
}

/// The README's own-application path, at the agent's defaults (its port aside): 30 s of
/// LinkedListLeak followed by `memcity record`. The path search reaches the leak's samples
/// from `PEOPLE`, so the leak is confirmed without waiting for an old-generation marking, and
/// its strongest grower is drawn red; nothing of memcity's own is coloured.
#[test]
fn the_readme_path_shows_the_leak_confirmed_and_red() {
    let Some(xvfb) = xvfb("the README path in a window") else {
        return;
    };
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 30.0)
        .release_agent()
        .agent(format!("port=0,portfile={}", portfile.display()))
        .spawn();
    let port = wait_for_file(&portfile, Duration::from_secs(60));
    let file = dir.path().join("app.mcrec");
    let out = memcity(
        &[
            "record",
            &format!("127.0.0.1:{}", port.trim()),
            "-o",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, _) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "{}", app.stderr());
    let report = report_json(&file);
    let first = &report["suspects"][0];
    assert!(
        first["holder"]
            .as_str()
            .unwrap_or("")
            .contains("LinkedList")
            && first["root"].as_str().unwrap_or("").contains("PEOPLE"),
        "{first}"
    );
    assert_eq!(first["confirmed"], true, "{first}");

    let img = replay_screenshot(
        &xvfb,
        &[file.to_str().unwrap(), "--camera", "birds-eye"],
        dir.path(),
        "leak.png",
    );
    let model = load::recording(&file).unwrap();
    let config = LayoutConfig::default();
    let city = layout(&model, &config);
    let last = (model.len() - 1) as f64;
    let frame = scene::build(&model, &city, last, &ViewSettings::default(), None);
    let camera = OrbitCamera::birds_eye(config.size as f32, frame.tallest() as f32);
    // Nothing of memcity's own is coloured as growth.
    for b in frame.buildings.iter().filter(|b| model.is_own(b.node)) {
        assert_eq!(
            b.color,
            memcity_city::mapping::GRAY,
            "{:?} is coloured",
            model.path(b.node)
        );
    }
    // The strongest grower is one of the leak's types, and its roof is red.
    let top = model.top_growers(Metric::Objects, 1)[0];
    let name = model.node(top).name.clone();
    assert!(
        [
            "java.lang.String",
            "byte[]",
            "java.util.LinkedList$Node",
            "LinkedListLeak$Person"
        ]
        .contains(&name.as_str()),
        "{name}"
    );
    let building = frame.buildings.iter().find(|b| b.node == top).unwrap();
    let (x, y, z) = building.shape.roof();
    let (px, py) = camera
        .project(Vec3::new(x as f32, y as f32, z as f32), W as f32, H as f32)
        .unwrap();
    let roof = pixel(&img, px, py);
    assert!(
        roof[0] > 180 && roof[1] < 70 && roof[2] < 70,
        "roof of {name} at {px},{py} is {roof:?}"
    );
}

/// `memcity replay SOURCE ARGS --hud --screenshot` in an Xvfb of `size`: the picture and the
/// layout its frame recorded (`MEMCITY_LAYOUT`).
fn hud_layout(
    xvfb: &Path,
    source: &Path,
    args: &[&str],
    (w, h): (u32, u32),
    dir: &Path,
    name: &str,
) -> ((u32, u32, Vec<u8>), serde_json::Value) {
    let shot = dir.join(format!("{name}.png"));
    let layout = dir.join(format!("{name}.json"));
    let out = Command::new(xvfb)
        .args(["-a", "-s", &format!("-screen 0 {w}x{h}x24")])
        .arg(memcity_bin())
        .arg("replay")
        .arg(source)
        .args(args)
        .args(["--size", &format!("{w}x{h}"), "--hud", "--screenshot"])
        .arg(&shot)
        .env("MEMCITY_LAYOUT", &layout)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (read_png(&shot), memcity_e2e::layout::read_layout(&layout))
}

/// The panels' text as a new user meets it, in every view at 1280x720 and at 1920x1080, with the
/// details panel open and with the settings: each text inside its panel, no text over another
/// panel's or under a chart's line, the panels apart; and nothing cut that has room to be said
/// whole: the key hints all there, the status bar and the leak suspects' lines not cut short.
#[test]
fn the_hud_keeps_every_text_inside_its_panel_and_says_it_whole() {
    use memcity_e2e::layout::{problems, texts_of};
    use memcity_viewer::controls::ViewKind;

    let Some(xvfb) = xvfb("HUD layout") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let golden = root().join("proto/tests/data/golden-v2.mcrec");
    let select = ["--select", "(default package)/LinkedListLeak$Person"];
    // Every case's problems, so that one run shows them all.
    let mut failures = Vec::new();
    for size in [(1280, 720), (1920, 1080)] {
        for view in ViewKind::ALL {
            for extra in [&[][..], &select[..], &["--settings"][..]] {
                if !extra.is_empty() && size.0 > 1280 {
                    continue;
                }
                let what = format!("--view {} {extra:?} at {}x{}", view.label(), size.0, size.1);
                let mut args = vec!["--view", view.label()];
                args.extend(extra);
                let name = format!("{}-{}-{}", view.label(), size.0, extra.len());
                let (_, layout) = hud_layout(&xvfb, &golden, &args, size, dir.path(), &name);
                let mut fail = |problem: String| failures.push(format!("{what}: {problem}"));
                problems(&layout, &[]).into_iter().for_each(&mut fail);
                let hints = texts_of(&layout, "hints").join("  ");
                let wanted = memcity_viewer::keys::key_hints(view);
                if hints != wanted {
                    fail(format!("the key hints drawn are {hints:?}, not {wanted:?}"));
                }
                let cut: Vec<String> = ["status", "suspects", "hints", "legend", "strip"]
                    .iter()
                    .flat_map(|panel| texts_of(&layout, panel))
                    .filter(|t| t.ends_with("..."))
                    .collect();
                if !cut.is_empty() {
                    fail(format!("cut short: {cut:?}"));
                }
                let status = texts_of(&layout, "status").join(" ");
                let deaths = view != ViewKind::Lifetimes || status.contains("deaths");
                if !status.contains("snapshot 13/13") || !deaths {
                    fail(format!("the status bar says {status:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} layout problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The application's `String`s and `byte[]`s and memcity's own (its JFR stream's, under the
/// `(memcity)` group) are told apart on the city's labels: `memcity: String` beside `String`.
#[test]
fn the_city_labels_memcitys_own_objects_apart_from_the_applications() {
    use memcity_e2e::layout::{assert_laid_out, texts_of};

    let Some(xvfb) = xvfb("own labels") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("own.mcrec");
    memcity_e2e::synthetic::own_and_app_recording(&file).unwrap();
    let (_, layout) = hud_layout(&xvfb, &file, &[], (W, H), dir.path(), "own");
    assert_laid_out(&layout, &[], "the city of own and application objects");
    let labels = texts_of(&layout, "label");
    for wanted in ["String", "byte[]", "memcity: String", "memcity: byte[]"] {
        assert!(
            labels.iter().any(|l| l == wanted),
            "no label {wanted:?} among {labels:?}"
        );
    }
    let mut unique = labels.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "labels alike: {labels:?}");
}

/// A screenshot of a 2D view without `--hud` is the view alone, and the view has the whole
/// picture: no strip left blank where the sidebar and the bottom bars would be, the sunburst
/// in the middle.
#[test]
fn screenshots_of_the_2d_views_have_the_whole_picture() {
    let Some(xvfb) = xvfb("2D screenshots") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sky = over_sky([0.93, 0.95, 0.98], 1.0);
    let drawn = |img: &(u32, u32, Vec<u8>), xs: std::ops::Range<u32>, ys: std::ops::Range<u32>| {
        let all = (xs.end - xs.start) * (ys.end - ys.start);
        let drawn = ys
            .flat_map(|y| xs.clone().map(move |x| (x, y)))
            .filter(|&(x, y)| !near(pixel(img, x as f32, y as f32), sky))
            .count();
        drawn as f32 / all as f32
    };
    for view in ["icicle", "sunburst", "timeline"] {
        let img = replay_screenshot(
            &xvfb,
            &[golden().to_str().unwrap(), "--view", view],
            dir.path(),
            &format!("{view}.png"),
        );
        // Where the sidebar and the legend, strip and bars of the HUD would be.
        let left = drawn(&img, 10..400, 10..H - 10);
        let bottom = drawn(&img, 10..W - 10, H - 170..H - 10);
        assert!(
            left > 0.1 && bottom > 0.1,
            "--view {view}: the view draws on {:.0} % of the left 400 columns and {:.0} % of the \
             bottom 170 rows",
            left * 100.0,
            bottom * 100.0
        );
        if view == "sunburst" {
            // The heap's disc in the middle, in the darkest district blue.
            let seen = pixel(&img, W as f32 / 2.0, H as f32 / 2.0);
            let dark = memcity_city::mapping::DISTRICT_DARK.map(|c| (c * 255.0).round() as i32);
            assert!(
                near(seen, dark),
                "the middle of the sunburst's picture is {seen:?}, not the heap's {dark:?}"
            );
        }
    }
}
