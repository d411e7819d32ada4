//! Times the page in a real headless Chromium (scripts/bench-web.sh): opens URL (a page of
//! `memcity serve`, with `bench=N` in its address) at WIDTHxHEIGHT and prints the page's own
//! benchmark line, as `memcity replay --bench-frames N` prints the window's. With `--live N`
//! instead, waits for N live snapshots and prints the median and worst time from a snapshot's
//! arrival to its first frame.
//!
//! With `--profile`, also prints where the page's main thread spent its time meanwhile (the
//! DevTools CPU profile's top functions by self time; the GPU process, where software WebGL
//! draws, is not in it).
//!
//! Usage: bench_page URL WIDTHxHEIGHT [--live N] [--profile] [CHROMIUM FLAG...]

use std::time::Duration;

use memcity_e2e::browser::Browser;

/// The profile's functions by self time (samples), top 25.
fn print_profile(profile: &serde_json::Value) {
    let nodes = profile["nodes"].as_array().expect("profile nodes");
    let mut by_name: std::collections::HashMap<String, u64> = Default::default();
    let mut total = 0;
    for node in nodes {
        let hits = node["hitCount"].as_u64().unwrap_or(0);
        let frame = &node["callFrame"];
        let name = format!(
            "{} ({})",
            frame["functionName"].as_str().unwrap_or("?"),
            frame["url"]
                .as_str()
                .unwrap_or("")
                .rsplit('/')
                .next()
                .unwrap_or("")
        );
        *by_name.entry(name).or_default() += hits;
        total += hits;
    }
    let mut top: Vec<_> = by_name.into_iter().collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    for (name, hits) in top.into_iter().take(25) {
        println!(
            "{:5.1} %  {name}",
            100.0 * hits as f64 / total.max(1) as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(size)) = (args.first(), args.get(1)) else {
        eprintln!(
            "usage: bench_page URL WIDTHxHEIGHT [--live N] [--count-gl] [--profile] [--open-time] [CHROMIUM FLAG...]"
        );
        std::process::exit(2);
    };
    let (w, h) = size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        .expect("a size as WIDTHxHEIGHT");
    let mut rest = &args[2..];
    let mut live = None;
    if rest.first().map(String::as_str) == Some("--live") {
        live = Some(
            rest[1]
                .parse::<usize>()
                .expect("--live N: a number of snapshots"),
        );
        rest = &rest[2..];
    }
    let count_gl = rest.first().map(String::as_str) == Some("--count-gl");
    if count_gl {
        rest = &rest[1..];
    }
    let profile = rest.first().map(String::as_str) == Some("--profile");
    if profile {
        rest = &rest[1..];
    }
    let open_time = rest.first().map(String::as_str) == Some("--open-time");
    if open_time {
        rest = &rest[1..];
    }
    let flags: Vec<&str> = rest.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let mut browser = Browser::open_with(url, w, h, &flags);
    if open_time {
        print_open_time(&mut browser, started);
        return;
    }
    if count_gl {
        print_gl_calls(&mut browser);
        return;
    }
    if profile {
        browser.call("Profiler.enable", serde_json::json!({}));
        browser.call(
            "Profiler.setSamplingInterval",
            serde_json::json!({ "interval": 200 }),
        );
        browser.call("Profiler.start", serde_json::json!({}));
    }
    print_bench(&mut browser, live);
    if profile {
        let stopped = browser.call("Profiler.stop", serde_json::json!({}));
        print_profile(&stopped["profile"]);
    }
}

/// From the browser's start to the page's first frame of the session (fetched, loaded into its
/// model and laid out): what a user waits for, with the renderer's memory.
fn print_open_time(browser: &mut Browser, started: std::time::Instant) {
    browser.wait_for(
        "window.memcity_page && memcity_page.opened > 0",
        Duration::from_secs(600),
        "the page opens its session",
    );
    let opened = started.elapsed().as_secs_f64();
    // Where the renderer's memory is: the WebAssembly memory (never given back: its most
    // since the start) and the JavaScript heap.
    let wasm = browser
        .eval("wasm_memory.buffer.byteLength")
        .as_u64()
        .unwrap_or(0);
    let js = browser
        .eval("performance.memory ? performance.memory.totalJSHeapSize : 0")
        .as_u64()
        .unwrap_or(0);
    println!(
        "opened in {opened:.2} s, renderer peak {} MB (WebAssembly {} MB, JavaScript heap {} MB)",
        browser.renderers_peak_kib() / 1024,
        wasm >> 20,
        js >> 20
    );
}

/// The WebGL calls the page makes per frame, by method.
fn print_gl_calls(browser: &mut Browser) {
    browser.wait_for(
        "window.memcity_page && memcity_page.opened > 0",
        Duration::from_secs(120),
        "the page opens its session",
    );
    std::thread::sleep(Duration::from_secs(3));
    // Counts the WebGL calls the page makes per frame, by method.
    browser.eval(
        "(() => { window.gl_calls = {}; for (const proto of [WebGL2RenderingContext.prototype, WebGLRenderingContext.prototype]) { \
           for (const name of Object.getOwnPropertyNames(proto)) { \
             const d = Object.getOwnPropertyDescriptor(proto, name); \
             if (typeof d.value !== 'function') continue; \
             const f = d.value; proto[name] = function (...a) { gl_calls[name] = (gl_calls[name] || 0) + 1; return f.apply(this, a); }; } } \
           window.gl_frames = 0; const tick = () => { gl_frames += 1; requestAnimationFrame(tick); }; \
           requestAnimationFrame(tick); return true; })()",
    );
    std::thread::sleep(Duration::from_secs(3));
    let counts = browser.eval(
        "(() => { const n = gl_frames; const out = {}; for (const k in gl_calls) out[k] = gl_calls[k] / n; return JSON.stringify({frames: n, per_frame: out}); })()",
    );
    println!("WebGL calls per frame: {}", counts.as_str().unwrap());
}

/// The page's own benchmark, or with `live` snapshots, their latency to the screen.
fn print_bench(browser: &mut Browser, live: Option<usize>) {
    match live {
        None => {
            browser.wait_for(
                "window.memcity_page && memcity_page.bench !== null",
                Duration::from_secs(600),
                "the page's benchmark",
            );
            println!("{}", browser.eval("memcity_page.bench").as_str().unwrap());
        }
        Some(n) => {
            browser.wait_for(
                &format!("window.memcity_page && memcity_page.latencies.length >= {n}"),
                Duration::from_secs(600),
                "the live snapshots",
            );
            let mut ms: Vec<f64> = browser
                .eval("memcity_page.latencies")
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| v.as_f64())
                .collect();
            ms.sort_by(f64::total_cmp);
            println!(
            "{} live snapshots: from arrival to the first frame showing it, median {:.1} ms, worst {:.1} ms",
            ms.len(),
            ms[ms.len() / 2],
            ms[ms.len() - 1]
        );
        }
    }
}
