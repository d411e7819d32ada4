//! The city as a web page (issue 19): `memcity serve` serves the viewer compiled to WebAssembly,
//! and a real headless Chromium draws it with software WebGL. The page must draw what the window
//! draws: the golden recording in the page and in a real window (Xvfb) at the same size agree
//! pixel for pixel but for the renderers' edges, and the top grower's roof is red where the
//! model puts it. A damaged file shows its error and the city stays.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use memcity_e2e::browser::{chromium_path, http_get, Browser};
use memcity_e2e::serve::Serve;
use memcity_e2e::*;

const W: u32 = 1280;
const H: u32 = 800;

fn golden() -> PathBuf {
    root().join("proto/tests/data/golden-v1.mcrec")
}

/// The page's files, or why the test cannot run (a skip that fails where `web` is required).
fn page_ready(what: &str) -> bool {
    if chromium_path().is_none() {
        skip(
            "chromium",
            &format!("{what}: no chromium (scripts/setup.sh installs it)"),
        );
        return false;
    }
    if !target_dir().join("web/memcity-web.wasm").is_file() {
        skip(
            "web",
            &format!("{what}: the page is not built (scripts/build-web.sh)"),
        );
        return false;
    }
    true
}

fn pixel(img: &(u32, u32, Vec<u8>), x: u32, y: u32) -> [u8; 3] {
    let (w, _, data) = img;
    let i = (y * w + x) as usize * 4;
    [data[i], data[i + 1], data[i + 2]]
}

/// The window's picture of the golden recording, at the same size (Xvfb), with `look` options.
fn window_picture(dir: &Path, look: &[&str]) -> Option<(u32, u32, Vec<u8>)> {
    window_picture_of(dir, &golden(), look)
}

/// The window's picture of `source`, as [`window_picture`].
fn window_picture_of(dir: &Path, source: &Path, look: &[&str]) -> Option<(u32, u32, Vec<u8>)> {
    let xvfb = PathBuf::from("/usr/bin/xvfb-run");
    if !xvfb.is_file() {
        skip(
            "xvfb",
            "web: no xvfb-run to draw the window beside the page",
        );
        return None;
    }
    ensure_built();
    let out = dir.join("window.png");
    let status = Command::new(&xvfb)
        .args(["-a", "-s", &format!("-screen 0 {W}x{H}x24")])
        .arg(memcity_bin())
        .arg("replay")
        .arg(source)
        .args(look)
        .args(["--size", &format!("{W}x{H}"), "--hud", "--screenshot"])
        .arg(&out)
        .status()
        .expect("xvfb-run memcity replay");
    assert!(status.success(), "the window's screenshot failed");
    let decoder = png::Decoder::new(std::fs::File::open(&out).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    Some((info.width, info.height, buf))
}

/// The page's picture against the window's: the same code draws both; only the rasterizers
/// (SwiftShader, llvmpipe) differ, at edges. A page that differs is kept for a look.
fn same_picture(page: &(u32, u32, Vec<u8>), window: &(u32, u32, Vec<u8>), what: &str) {
    // The same code draws both; only the rasterizers (SwiftShader, llvmpipe) differ, at edges.
    let mut differ = 0;
    for y in 0..H {
        for x in 0..W {
            let (a, b) = (pixel(page, x, y), pixel(window, x, y));
            if a.iter()
                .zip(b)
                .any(|(a, b)| (*a as i32 - b as i32).abs() > 40)
            {
                differ += 1;
            }
        }
    }
    let share = differ as f64 / (W * H) as f64;
    eprintln!(
        "{what}: {:.2} % of the page's pixels differ from the window's",
        share * 100.0
    );
    if share > 0.03 {
        let kept = std::env::temp_dir().join(format!("memcity-{}.png", what.replace(' ', "-")));
        let mut encoder = png::Encoder::new(std::fs::File::create(&kept).unwrap(), page.0, page.1);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder
            .write_header()
            .unwrap()
            .write_image_data(&page.2)
            .unwrap();
        panic!(
            "{:.2} % of the page's pixels differ from the window's (page kept in {})",
            share * 100.0,
            kept.display()
        );
    }
}

#[test]
fn the_page_draws_the_recording_as_the_window_does() {
    if !page_ready("web") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(window) = window_picture(dir.path(), &[]) else {
        return;
    };
    let serve = Serve::start(&[golden().to_str().unwrap()]);
    // The page's own files, with the types a browser needs to run them.
    let index = serve.get("/").body;
    assert!(index.contains("memcity_config"), "{index}");
    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 5 && memcity_page.drawn > 30",
        Duration::from_secs(120),
        "the page draws the golden recording's five snapshots",
    );
    let errors = browser.eval("memcity_page.errors.concat(memcity_page.reports).join('\\n')");
    assert_eq!(errors, "", "the page reported errors");
    // Software WebGL here: the page draws every box's corners written out (render::BoxPath),
    // the window instances; the pictures must agree all the same.
    let renderer = browser.eval("memcity_page.renderer");
    assert!(
        renderer.as_str().unwrap_or("").contains("SwiftShader"),
        "{renderer}"
    );
    let page = browser.screenshot();
    assert_eq!((page.0, page.1), (W, H), "the page's size");
    same_picture(&page, &window, "web");
    // Red is the growth's colour: the page shows the top grower's red roofs.
    let red = (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = pixel(&page, x, y);
            p[0] > 180 && p[1] < 70 && p[2] < 70
        })
        .count();
    assert!(red > 50, "only {red} red pixels in the page");
}

/// The page's address sets its look as the command line sets the window's: the sunburst by
/// bytes in the page is the window's `--view sunburst --metric bytes`, pixel for pixel but for
/// the rasterizers' edges. What the page cannot use is said, and the rest still applies.
#[test]
fn the_page_takes_its_look_from_the_address() {
    if !page_ready("web look") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(window) = window_picture(dir.path(), &["--view", "sunburst", "--metric", "bytes"])
    else {
        return;
    };
    let serve = Serve::start(&[golden().to_str().unwrap()]);
    let url = format!("{}&view=sunburst&metric=bytes", serve.url);
    let mut browser = Browser::open(&url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 5 && memcity_page.drawn > 30",
        Duration::from_secs(120),
        "the page draws the sunburst",
    );
    same_picture(&browser.screenshot(), &window, "web look");
}

/// The lifetimes view in the page is the window's: the hive plot and its survival panel, drawn
/// by the same code from the same recording.
#[test]
fn the_page_draws_the_lifetimes_view_as_the_window_does() {
    if !page_ready("web lifetimes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lives.mcrec");
    memcity_e2e::synthetic::lifetimes_recording(&file).unwrap();
    let Some(window) = window_picture_of(dir.path(), &file, &["--view", "lifetimes"]) else {
        return;
    };
    let serve = Serve::start(&[file.to_str().unwrap()]);
    let mut browser = Browser::open(&format!("{}&view=lifetimes", serve.url), W, H);
    browser.wait_for(
        &format!(
            "window.memcity_page && memcity_page.snapshots === {} && memcity_page.view === 'lifetimes' && memcity_page.drawn > 30",
            memcity_e2e::synthetic::LIFETIMES_SNAPSHOTS
        ),
        Duration::from_secs(120),
        "the page draws the lifetimes view",
    );
    let errors = browser.eval("memcity_page.errors.concat(memcity_page.reports).join('\\n')");
    assert_eq!(errors, "", "the page reported errors");
    same_picture(&browser.screenshot(), &window, "web lifetimes");
}

/// The window's keys work in the page: the arrows and Home travel in time, V switches the view.
#[test]
fn the_page_answers_the_windows_keys() {
    if !page_ready("web keys") {
        return;
    }
    let serve = Serve::start(&[golden().to_str().unwrap()]);
    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 5 && memcity_page.at === 4",
        Duration::from_secs(120),
        "the page shows the last snapshot",
    );
    let press = |browser: &mut Browser, code: &str, key_code: u32| {
        for kind in ["keyDown", "keyUp"] {
            browser.call(
                "Input.dispatchKeyEvent",
                serde_json::json!({
                    "type": kind, "code": code, "key": code, "windowsVirtualKeyCode": key_code
                }),
            );
        }
    };
    press(&mut browser, "ArrowLeft", 37);
    press(&mut browser, "ArrowLeft", 37);
    browser.wait_for(
        "memcity_page.at === 2",
        Duration::from_secs(30),
        "two steps back with the left arrow",
    );
    press(&mut browser, "Home", 36);
    browser.wait_for(
        "memcity_page.at === 0",
        Duration::from_secs(30),
        "Home goes to the first snapshot",
    );
    press(&mut browser, "KeyV", 86);
    browser.wait_for(
        "memcity_page.view === 'icicle'",
        Duration::from_secs(30),
        "V switches to the icicle",
    );
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
}

#[test]
fn a_damaged_file_opened_in_the_page_shows_its_error_and_the_city_stays() {
    if !page_ready("web") {
        return;
    }
    let serve = Serve::start(&[golden().to_str().unwrap()]);
    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 5",
        Duration::from_secs(120),
        "the page opens the golden recording",
    );
    // What a drop or the file dialog hands the page: bytes and a name. These are no recording.
    browser.eval(
        "(() => { const f = new File([new TextEncoder().encode('{\"trees\": []}')], 'notes.json'); \
         const t = new DataTransfer(); t.items.add(f); \
         window.dispatchEvent(new DragEvent('drop', { dataTransfer: t, cancelable: true })); \
         return true; })()",
    );
    browser.wait_for(
        "memcity_page.opened === 2 && memcity_page.drawn > 0",
        Duration::from_secs(30),
        "the dropped file is handed to the viewer",
    );
    // The page says why, in the viewer's words, and keeps the city.
    browser.wait_for(
        "memcity_page.errors.some(e => e.startsWith('cannot open notes.json: notes.json is not a memcity recording'))",
        Duration::from_secs(30),
        "the page says why the file cannot be opened",
    );
    let frames = browser.eval("memcity_page.drawn").as_u64().unwrap();
    browser.wait_for(
        &format!(
            "memcity_page.drawn > {} && memcity_page.snapshots === 5",
            frames + 10
        ),
        Duration::from_secs(30),
        "the city stays",
    );
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
}

/// Live: the page grows the city of a real agent through `memcity serve`, and when the JVM
/// goes and another starts on the same port, the page reconnects and follows the new session.
#[test]
fn the_page_follows_a_live_agent_and_survives_its_restart() {
    if !page_ready("web live") {
        return;
    }
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let mut first = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!(
            "port=0,portfile={},period=500ms",
            portfile.display()
        ))
        .spawn();
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    let port = port.trim().to_string();
    let serve = Serve::start(&[&format!("127.0.0.1:{port}")]);
    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        &format!(
            "window.memcity_page && memcity_page.pid === {} && memcity_page.snapshots >= 3",
            first.pid()
        ),
        Duration::from_secs(120),
        "the page grows the live city",
    );
    first.kill();
    browser.wait_for(
        "memcity_page.closes >= 1",
        Duration::from_secs(30),
        "the page sees the agent go",
    );
    let mut second = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!("port={port},period=500ms"))
        .spawn();
    browser.wait_for(
        &format!(
            "memcity_page.pid === {} && memcity_page.snapshots >= 2",
            second.pid()
        ),
        Duration::from_secs(120),
        "the page reconnects and follows the new JVM",
    );
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
    second.kill();
}

/// A Memory Cities folder of two snapshots of a two-type heap, written as the original tools do.
fn small_export(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (time, strings) in [(100, 10), (200, 900)] {
        let tree = serde_json::json!({
            "time": time,
            "classifiers": [{"id": 0, "name": "Type"}],
            "root": {"key": "Overall", "fullKey": ["Overall"], "fullKeyAsString": "Overall",
                     "objects": strings + 5, "bytes": (strings + 5) * 24, "children": [
                {"key": "Person", "fullKey": ["Overall", "Person"], "classifierId": 0,
                 "objects": 5, "bytes": 120},
                {"key": "String", "fullKey": ["Overall", "String"], "classifierId": 0,
                 "objects": strings, "bytes": strings * 24}]}
        });
        std::fs::write(dir.join(format!("{time}.json")), tree.to_string()).unwrap();
    }
}

/// The page reads a recording as it arrives, piece by piece, and so a long one cut off mid-frame
/// (a killed recorder) opens in the page as the window opens it: every whole snapshot, and
/// the cut said.
#[test]
fn a_cut_recording_opens_in_the_page_as_in_the_window() {
    if !page_ready("web") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cut.mcrec");
    memcity_e2e::synthetic::long_recording(&file, 2_000, 60).unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    // Many of the browser's pieces (64 KiB or less each).
    assert!(size > 1 << 20, "the premise: {size} bytes");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(size - 7)
        .unwrap();
    let window = load_recording(&file).expect("the cut recording loads");
    let serve = Serve::start(&[file.to_str().unwrap()]);
    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots > 0 && memcity_page.drawn > 0",
        Duration::from_secs(120),
        "the page opens the cut recording",
    );
    let shown = browser.eval("memcity_page.snapshots").as_u64().unwrap();
    assert_eq!(
        shown,
        window.len() as u64,
        "snapshots in the page and the window"
    );
    assert!(shown > 1_500, "{shown} of 2,000 snapshots");
    browser.wait_for(
        "memcity_page.notes.some(e => e.includes('is cut off at byte'))",
        Duration::from_secs(30),
        "the page says the recording is cut off",
    );
    let reports = browser.eval("memcity_page.reports.concat(memcity_page.errors).join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
}

/// A recording past the page's share of `--memory` is handed to the page as a thinned copy:
/// smaller than the file, its older history evenly thinned, and the page says so and draws it.
#[test]
fn a_recording_past_the_pages_memory_opens_thinned_and_says_so() {
    if !page_ready("web") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.mcrec");
    memcity_e2e::synthetic::long_recording(&file, 4_000, 60).unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    // `--memory 1m`: the page gets at most 512 KiB of the file.
    assert!(size > 1 << 20, "the premise: {size} bytes");
    let serve = Serve::start(&["--memory", "1m", file.to_str().unwrap()]);
    let copy = serve.get("/session.mcrec");
    assert_eq!(copy.status, 200, "{}", copy.head);
    let handed: u64 = copy
        .head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no length: {}", copy.head));
    assert!(
        handed <= 512 << 10,
        "the page was handed {handed} of {size} bytes"
    );
    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots > 0 && memcity_page.drawn > 0",
        Duration::from_secs(120),
        "the page opens the thinned copy",
    );
    browser.wait_for(
        "memcity_page.notes.some(e => e.includes('snapshots were thinned out'))",
        Duration::from_secs(30),
        "the page says the history was thinned",
    );
    let shown = browser.eval("memcity_page.snapshots").as_u64().unwrap();
    assert!(shown > 1 && shown < 4_000, "{shown} snapshots shown");
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
}

/// A Memory Cities export folder opens in the page: served by `memcity serve FOLDER`, and
/// picked with the page's folder button (the browser hands over the folder's files).
#[test]
fn the_page_opens_memory_cities_folders_served_and_picked() {
    if !page_ready("web folders") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("golden-export");
    let out = memcity(
        &[
            "export",
            golden().to_str().unwrap(),
            "--memory-cities",
            export.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let serve = Serve::start(&[export.to_str().unwrap()]);
    // Only the folder's own JSON files are served, and nothing the listing does not name.
    let listing: Vec<String> = serde_json::from_str(&serve.get("/folder").body).unwrap();
    assert!(
        listing.iter().all(|p| p.ends_with(".json"))
            && listing.iter().any(|p| p.contains("anttracks-format/")),
        "{listing:?}"
    );
    let outside = serve.get("/folder/..%2F..%2Fetc%2Fpasswd");
    assert!(
        outside.body.ends_with("is not in the folder"),
        "{outside:?}"
    );

    let mut browser = Browser::open(&serve.url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.opened === 1 && memcity_page.snapshots === 5",
        Duration::from_secs(120),
        "the page opens the served export, all five snapshots",
    );
    let errors = browser.eval("memcity_page.errors.join('\\n')");
    assert_eq!(errors, "", "the export opens without a word");

    let small = dir.path().join("two-snapshots");
    small_export(&small);
    let input = browser.call(
        "Runtime.evaluate",
        serde_json::json!({ "expression": "document.getElementById('memcity-folder')" }),
    )["result"]["objectId"]
        .clone();
    browser.call(
        "DOM.setFileInputFiles",
        serde_json::json!({ "files": [small.to_str().unwrap()], "objectId": input }),
    );
    browser.wait_for(
        "memcity_page.opened === 2 && memcity_page.snapshots === 2",
        Duration::from_secs(60),
        "the picked folder replaces the city",
    );
    let source = browser.eval("document.getElementById('memcity-source').textContent");
    assert_eq!(source, "two-snapshots");
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
}

/// Everything `serve` serves needs the token of the URL it printed: the URL's token becomes a
/// cookie for this port and leaves the address bar; a script may send it as a bearer token; a
/// page of another site is refused even when the browser holds the cookie.
#[test]
fn everything_served_needs_the_printed_token() {
    let serve = Serve::start(&[golden().to_str().unwrap()]);
    for path in ["/", "/memcity-web.wasm", "/session.mcrec", "/stream"] {
        let r = http_get(serve.port(), path, &[]).expect("an answer");
        assert_eq!(r.status, 401, "{path}: {r:?}");
        assert!(
            r.body.contains("this page needs its token") && r.body.contains("?token="),
            "{path}: {}",
            r.body
        );
    }
    let wrong = http_get(
        serve.port(),
        "/?token=0123456789abcdef0123456789abcdef",
        &[],
    )
    .unwrap();
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("wrong token"), "{}", wrong.body);

    let traded = http_get(serve.port(), &format!("/?token={}", serve.token), &[]).unwrap();
    assert_eq!(traded.status, 303, "{traded:?}");
    let head = traded.head.to_ascii_lowercase();
    assert!(head.contains("\r\nlocation: /\r\n"), "{}", traded.head);
    let cookie = format!("memcity_token_{}={}", serve.port(), serve.token);
    assert!(traded.head.contains(&cookie), "{}", traded.head);
    assert!(head.contains("httponly") && head.contains("samesite=strict"));

    let with_cookie = http_get(serve.port(), "/", &[&format!("Cookie: {cookie}")]).unwrap();
    assert_eq!(with_cookie.status, 200);
    assert!(with_cookie.body.contains("memcity_config"));
    assert_eq!(serve.get("/session.mcrec").status, 200);
    let foreign = http_get(
        serve.port(),
        "/stream",
        &[&format!("Cookie: {cookie}"), "Origin: https://evil.example"],
    )
    .unwrap();
    assert_eq!(foreign.status, 403, "{foreign:?}");
}

/// Beyond loopback, `serve` speaks TLS with the certificate given: the page opens over https
/// (the browser told to accept the test CA's certificate) and draws the city; a plain-text
/// client gets no page.
#[test]
fn serve_beyond_loopback_speaks_tls() {
    if !page_ready("web tls") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Certificates { cert, key, .. } = certificates(dir.path());
    let serve = Serve::start(&[
        golden().to_str().unwrap(),
        "--bind",
        "0.0.0.0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(serve.url.starts_with("https://0.0.0.0:"), "{}", serve.url);
    let plain = http_get(serve.port(), "/", &[]);
    assert!(plain.is_none(), "a plain-text client got {plain:?}");
    let url = serve.url.replace("0.0.0.0", "127.0.0.1");
    let mut browser = Browser::open_with(&url, W, H, &["--ignore-certificate-errors"]);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 5 && memcity_page.drawn > 10",
        Duration::from_secs(120),
        "the page opens over https",
    );
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
}

/// The agent serves the page itself (`http=PORT`): `memcity list` shows its URL with the token,
/// and the page grows the city of the JVM it is served from. Without its files the agent says
/// why and its gRPC port serves on.
#[test]
fn the_agent_serves_its_own_page() {
    if !page_ready("agent page") {
        return;
    }
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!(
            "port=0,portfile={},http=0,period=500ms",
            portfile.display()
        ))
        .spawn();
    wait_for_file(&portfile, Duration::from_secs(30));
    let out = memcity(&["list"], Duration::from_secs(30));
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let prefix = format!("page of {}: ", app.pid());
    let line = listing
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("memcity list shows no page for {}: {listing}", app.pid()));
    assert!(line.ends_with(" (open it in a browser)"), "{line}");
    let url = line[prefix.len()..].split_whitespace().next().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/?token="),
        "{url}"
    );
    let port: u16 = url["http://127.0.0.1:".len()..]
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    let refused = http_get(port, "/", &[]).expect("an answer");
    assert_eq!(refused.status, 401);
    assert!(refused.body.contains("memcity list"), "{}", refused.body);

    let mut browser = Browser::open(url, W, H);
    browser.wait_for(
        &format!(
            "window.memcity_page && memcity_page.pid === {} && memcity_page.snapshots >= 3",
            app.pid()
        ),
        Duration::from_secs(120),
        "the agent's page grows the city",
    );
    let reports = browser.eval("memcity_page.reports.join('\\n')");
    assert_eq!(reports, "", "the viewer stopped");
    drop(browser);
    app.kill();

    // On a network bind the page follows the gRPC port's TLS: https, with the certificate given.
    let Certificates { cert, key, .. } = certificates(dir.path());
    let portfile = dir.path().join("port-tls");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!(
            "port=0,portfile={},http=0,period=500ms,bind=0.0.0.0,tls_cert={},tls_key={}",
            portfile.display(),
            cert.display(),
            key.display()
        ))
        .spawn();
    wait_for_file(&portfile, Duration::from_secs(30));
    let out = memcity(&["list"], Duration::from_secs(30));
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let prefix = format!("page of {}: ", app.pid());
    let url = listing
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no TLS page listed: {listing}"))
        .replace("0.0.0.0", "127.0.0.1");
    assert!(url.starts_with("https://"), "{url}");
    let mut browser = Browser::open_with(&url, W, H, &["--ignore-certificate-errors"]);
    browser.wait_for(
        &format!(
            "window.memcity_page && memcity_page.pid === {} && memcity_page.snapshots >= 2",
            app.pid()
        ),
        Duration::from_secs(120),
        "the agent's page over TLS grows the city",
    );
    drop(browser);
    app.kill();

    let portfile = dir.path().join("port2");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!(
            "port=0,portfile={},http=0,web={}",
            portfile.display(),
            dir.path().join("no-page").display()
        ))
        .spawn();
    wait_for_file(&portfile, Duration::from_secs(30));
    let stderr = app.stderr();
    assert!(
        stderr.contains("no web page: the web page's files are not built")
            && stderr.contains("no-page"),
        "{stderr}"
    );
    app.kill();
}

/// A hostile client cannot take the page away: `serve` keeps at most 16 connections that have
/// not shown the token (a newcomer closes the oldest at once), closes the rest 10 s after they
/// opened, and answers a client with the token all along.
#[test]
fn serve_bounds_its_connections_and_closes_silent_ones() {
    use std::io::Read;
    use std::net::TcpStream;
    let serve = Serve::start(&[golden().to_str().unwrap()]);
    let connect = || {
        let stream = TcpStream::connect(("127.0.0.1", serve.port())).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream
    };
    let mut held: Vec<TcpStream> = (0..70).map(|_| connect()).collect();
    let started = std::time::Instant::now();
    // The oldest strangers made room for the newer: closed as soon as those were accepted.
    let closed = matches!(held[0].read(&mut [0u8; 16]), Ok(0) | Err(_));
    assert!(closed, "the oldest of 70 silent connections is served");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the oldest connection was closed only after {:?}",
        started.elapsed()
    );
    // The page answers a client with the token while strangers hold what they may.
    assert_eq!(serve.get("/").status, 200);
    // The newest stranger is closed once its 10 s are up, not before.
    let closed = matches!(held[69].read(&mut [0u8; 16]), Ok(0) | Err(_));
    assert!(closed, "a silent connection stays open");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "closed before its time"
    );
    held.clear();
    assert_eq!(serve.get("/").status, 200);
}

/// What `serve` cannot serve is refused before it listens, with what to do instead.
#[test]
fn serve_refuses_what_it_cannot_serve_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.mcrec");
    std::fs::write(&text, "not a recording").unwrap();
    let golden = golden();
    let gone = dir.path().join("gone.mcrec");
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["serve", gone.to_str().unwrap()],
            "gone.mcrec: no such recording",
        ),
        (
            vec!["serve", text.to_str().unwrap()],
            "is not a memcity recording",
        ),
        (
            vec!["serve", dir.path().to_str().unwrap()],
            "holds no Memory Cities tree files",
        ),
        (
            vec!["serve", golden.to_str().unwrap(), "--bind", "0.0.0.0"],
            "Give --tls-cert and --tls-key, or reach it through an SSH tunnel",
        ),
        (
            vec![
                "serve",
                golden.to_str().unwrap(),
                "--bind",
                "0.0.0.0",
                "--tls-cert",
                text.to_str().unwrap(),
                "--tls-key",
                text.to_str().unwrap(),
            ],
            "notes.mcrec: holds no certificate",
        ),
    ];
    for (args, want) in cases {
        let out = memcity(&args, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing served");
    }
}

/// `serve` of an address nothing answers at serves (the agent may come later) and says so on
/// its terminal, with what to start, rather than leave the page at "connecting..." unexplained.
#[test]
fn serve_says_when_no_agent_answers_and_what_to_start() {
    if !target_dir().join("web/memcity-web.wasm").is_file() {
        skip(
            "web",
            "serve with no agent: the page is not built (scripts/build-web.sh)",
        );
        return;
    }
    let port = closed_port();
    let mut serve = Serve::start(&[&format!("127.0.0.1:{port}")]);
    let stderr = serve.child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("serve said nothing of the missing agent within 30 s");
    assert!(
        line.starts_with("memcity: nothing answers yet: ")
            && line.contains(&format!("127.0.0.1:{port}: Connection refused"))
            && line.contains("-agentpath:")
            && line.contains("memcity attach PID")
            && line.contains("The page keeps trying"),
        "{line}"
    );
    // Still serving: the page is there for when the agent comes.
    assert_eq!(serve.get("/").status, 200);
}

/// The page as it stands once its session is drawn: its layout (`memcity_page.layout`) and the
/// rectangles of its own bar's parts over the status bar (the file name, the open buttons), in
/// the layout's units.
fn page_layout(browser: &mut Browser, what: &str) -> (serde_json::Value, Vec<(String, [f32; 4])>) {
    browser.wait_for(
        "window.memcity_page && memcity_page.drawn > 30 && memcity_page.layout !== null",
        Duration::from_secs(120),
        what,
    );
    let layout = browser.eval("memcity_page.layout");
    let scale = layout["scale"].as_f64().unwrap_or(1.0) as f32;
    let parts = browser.eval(
        "['memcity-source', 'memcity-open', 'memcity-open-folder'].map(id => { \
           const r = document.getElementById(id).getBoundingClientRect(); \
           return [id, r.x, r.y, r.width, r.height]; })",
    );
    let foreign = parts
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let n = |i: usize| p[i].as_f64().unwrap_or(f64::NAN) as f32 / scale;
            (
                p[0].as_str().unwrap_or("?").to_string(),
                [n(1), n(2), n(3), n(4)],
            )
        })
        .collect();
    (layout, foreign)
}

/// The page at 1280x720 and 1920x1080: the status line keeps left of the page's own bar (its
/// file name and open buttons over the bar's right end), says what it has to say there without
/// being cut, and every text of the HUD is inside its panel and clear of the others'.
#[test]
fn the_pages_status_line_keeps_clear_of_its_own_bar() {
    use memcity_e2e::layout::{assert_laid_out, texts_of};
    if !page_ready("web status bar") {
        return;
    }
    let golden = root().join("proto/tests/data/golden-v2.mcrec");
    let serve = Serve::start(&[golden.to_str().unwrap()]);
    for ((w, h), view) in [
        ((1280, 720), "city"),
        ((1280, 720), "lifetimes"),
        ((1920, 1080), "city"),
    ] {
        let what = format!("the page's {view} view at {w}x{h}");
        // layout=1: the page hands each frame's layout over only when asked.
        let url = format!("{}&view={view}&layout=1", serve.url);
        let mut browser = Browser::open(&url, w, h);
        let (layout, bar) = page_layout(&mut browser, &what);
        assert_eq!(browser.eval("memcity_page.snapshots"), 13, "{what}");
        assert_eq!(bar.len(), 3, "{what}: {bar:?}");
        assert_laid_out(&layout, &bar, &what);
        let status = texts_of(&layout, "status").join(" ");
        assert!(
            status.contains("snapshot 13/13") && !status.ends_with("..."),
            "{what}: the status line says {status:?}"
        );
        if view == "lifetimes" {
            assert!(status.contains("deaths"), "{what}: {status:?}");
        }
    }
}

/// In the page as in the window, memcity's own objects are labelled apart from the
/// application's of the same types.
#[test]
fn the_page_labels_memcitys_own_objects_apart_from_the_applications() {
    use memcity_e2e::layout::{assert_laid_out, texts_of};
    if !page_ready("web own labels") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("own.mcrec");
    memcity_e2e::synthetic::own_and_app_recording(&file).unwrap();
    let serve = Serve::start(&[file.to_str().unwrap()]);
    let mut browser = Browser::open(&format!("{}&layout=1", serve.url), 1280, 720);
    let (layout, bar) = page_layout(&mut browser, "the page of own and application objects");
    assert_laid_out(&layout, &bar, "the page of own and application objects");
    let labels = texts_of(&layout, "label");
    for wanted in ["String", "byte[]", "memcity: String", "memcity: byte[]"] {
        assert!(
            labels.iter().any(|l| l == wanted),
            "no label {wanted:?} among {labels:?}"
        );
    }
}

/// Heap dumps served: `memcity serve` turns a folder of dumps into the recording the page
/// reads, and the page draws their city by retained size as the window draws it.
#[test]
fn the_page_draws_heap_dumps_by_retained_size_as_the_window_does() {
    if !page_ready("web dumps") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    for (i, items) in [100u64, 400, 900].into_iter().enumerate() {
        let time = 1_700_000_000_000 + 1000 * i as u64;
        std::fs::write(
            dumps.join(format!("{}.hprof", i + 1)),
            memcity_dump::synthetic::growing_heap(items, time),
        )
        .unwrap();
    }
    let Some(window) = window_picture_of(dir.path(), &dumps, &["--metric", "retained"]) else {
        return;
    };
    let serve = Serve::start(&[dumps.to_str().unwrap()]);
    let url = format!("{}&metric=retained", serve.url);
    let mut browser = Browser::open(&url, W, H);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 3 && memcity_page.drawn > 30",
        Duration::from_secs(120),
        "the page draws the three dumps",
    );
    let errors = browser.eval("memcity_page.errors.concat(memcity_page.reports).join('\\n')");
    assert_eq!(errors, "", "the page reported errors");
    same_picture(&browser.screenshot(), &window, "web dumps");
}
