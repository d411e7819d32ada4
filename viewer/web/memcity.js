"use strict";
// memcity's page: hands the viewer (memcity-web.wasm, drawn through miniquad's gl.js) its
// session, as `memcity serve` (or the agent) configured it in `memcity_config`:
// - { kind: "recording", url, name }: one recording, fetched and handed over as it arrives;
// - { kind: "folder", url, name }: a Memory Cities export folder; `url` lists its JSON files
//   (paths below the folder) and `url/PATH` serves each;
// - { kind: "live", url }: a WebSocket whose messages are a recording's bytes (its preamble and
//   header first, then one frame per message); the page reconnects when it drops.
// A recording or a Memory Cities folder dropped on the page or picked with a button replaces the
// city.
// `window.memcity_page` says how far the page got, for tests and the curious.
(function () {
  const config = window.memcity_config || {};
  const page = (window.memcity_page = {
    opened: 0,
    frames: 0,
    connects: 0,
    closes: 0,
    snapshots: 0,
    pid: 0,
    // The snapshot shown (from 0) and the view, as the last frame drew them.
    at: 0,
    view: "city",
    drawn: 0,
    errors: [],
    reports: [],
    // What the viewer lists in its notes as it opens a session (a damaged or thinned file).
    notes: [],
    // The WebGL renderer, as the browser names it.
    renderer: "",
    // The result of a benchmark asked for with bench=N in the address.
    bench: null,
    // Milliseconds from each live message that brought a snapshot to the first frame drawn
    // with it.
    latencies: [],
    // Where the last frame put its panels and text (the viewer's hud::layout): rectangles
    // [x, y, w, h] in the viewer's units, CSS pixels divided by `scale`.
    layout: null,
  });
  // When each live snapshot not drawn yet arrived, oldest first.
  const arrivals = [];
  // The viewer's views, in its order (ViewKind::ALL).
  const VIEWS = ["city", "icicle", "sunburst", "timeline", "lifetimes"];
  const RETRY_START_MS = 500;
  const RETRY_MAX_MS = 5000;

  function showError(text) {
    page.errors.push(text);
    const box = document.getElementById("memcity-error");
    box.textContent = text;
    box.style.display = "block";
  }

  function clearError() {
    document.getElementById("memcity-error").style.display = "none";
  }

  // Copies bytes into a buffer the viewer allocated; the call it is passed to takes it back.
  function give(bytes) {
    const ptr = wasm_exports.memcity_buffer(bytes.length);
    new Uint8Array(wasm_memory.buffer, ptr, bytes.length).set(bytes);
    return ptr;
  }

  function text(s) {
    const bytes = new TextEncoder().encode(s);
    return [give(bytes), bytes.length];
  }

  // Keys go to the viewer again after a button or a drop took the focus.
  function focusViewer() {
    document.getElementById("glcanvas").focus();
  }

  // Hands a recording to the viewer piece by piece as `stream` (a fetch's body, a file's
  // stream) yields them, so that the page never holds it whole: the viewer reads each piece
  // into its model at once. The viewer says itself why a recording cannot be opened.
  async function openStream(stream, name) {
    clearError();
    focusViewer();
    const [n, nlen] = text(name);
    const number = wasm_exports.memcity_open_begin(n, nlen);
    try {
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }
        if (!wasm_exports.memcity_open_piece(number, give(value), value.length)) {
          // The viewer said why; the rest is not wanted.
          reader.cancel().catch(() => {});
          break;
        }
      }
    } catch (e) {
      // Cut off on the way (the server went, the file became unreadable): what came is
      // dropped, and the city stays.
      wasm_exports.memcity_open_abandon(number);
      throw e;
    }
    wasm_exports.memcity_open_end(number);
    page.opened += 1;
  }

  // Hands a folder's JSON files to the viewer, then opens the folder. `files` holds
  // [path from the folder's name down, () => Promise of its bytes].
  async function openFolder(name, files) {
    clearError();
    focusViewer();
    document.getElementById("memcity-source").textContent = name;
    try {
      for (const [path, read] of files) {
        const bytes = await read();
        const [p, plen] = text(path);
        wasm_exports.memcity_folder_file(p, plen, give(bytes), bytes.length);
      }
    } catch (e) {
      // What was handed over is dropped with the next open; the city stays.
      showError(`cannot read the folder ${name}: ${e.message}`);
      return;
    }
    const [n, nlen] = text(name);
    wasm_exports.memcity_open_folder(n, nlen);
    page.opened += 1;
  }

  function fetchBytes(url) {
    return fetch(url).then((response) => {
      if (!response.ok) {
        throw new Error(`${url}: ${response.status} ${response.statusText}`);
      }
      return response.arrayBuffer().then((buffer) => new Uint8Array(buffer));
    });
  }

  function fetchFolder(url, name) {
    fetch(url)
      .then((response) => {
        if (!response.ok) {
          throw new Error(`${url}: ${response.status} ${response.statusText}`);
        }
        return response.json();
      })
      .then((paths) =>
        openFolder(
          name,
          paths.map((path) => [
            `${name}/${path}`,
            () => fetchBytes(`${url}/${path.split("/").map(encodeURIComponent).join("/")}`),
          ]),
        ),
      )
      .catch((e) => showError(`cannot fetch the folder ${name}: ${e.message}`));
  }

  function isJson(name) {
    return name.toLowerCase().endsWith(".json");
  }

  // All of a dropped folder's entries, which a directory reader hands out in batches.
  function entriesOf(directory) {
    return new Promise((resolve, reject) => {
      const reader = directory.createReader();
      const all = [];
      const next = () =>
        reader.readEntries((batch) => {
          if (batch.length === 0) {
            resolve(all);
          } else {
            all.push(...batch);
            next();
          }
        }, reject);
      next();
    });
  }

  async function droppedFiles(entry, out) {
    if (entry.isDirectory) {
      for (const inner of await entriesOf(entry)) {
        await droppedFiles(inner, out);
      }
    } else if (isJson(entry.name)) {
      const read = () =>
        new Promise((resolve, reject) => entry.file(resolve, reject))
          .then((file) => file.arrayBuffer())
          .then((buffer) => new Uint8Array(buffer));
      out.push([entry.fullPath.replace(/^\//, ""), read]);
    }
    return out;
  }

  // The WebGL renderer's name (a scratch context's, not the viewer's), "" when the browser
  // keeps it to itself.
  function rendererName() {
    try {
      const gl = document.createElement("canvas").getContext("webgl2");
      const info = gl && gl.getExtension("WEBGL_debug_renderer_info");
      return info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : "";
    } catch (e) {
      return "";
    }
  }

  function status(state, retryMs, why) {
    const [p, len] = text(why || "");
    wasm_exports.memcity_status(state, retryMs, p, len);
  }

  function fetchRecording(url, name) {
    document.getElementById("memcity-source").textContent = name;
    fetch(url)
      .then((response) => {
        if (!response.ok) {
          throw new Error(`${url}: ${response.status} ${response.statusText}`);
        }
        return openStream(response.body, name);
      })
      .catch((e) => showError(`cannot fetch the recording: ${e.message}`));
  }

  function connect(url) {
    let retry = RETRY_START_MS;
    document.getElementById("memcity-source").textContent = "live";
    const attempt = () => {
      status(0, 0, "");
      const socket = new WebSocket(new URL(url, window.location.href.replace(/^http/, "ws")));
      socket.binaryType = "arraybuffer";
      socket.onopen = () => {
        page.connects += 1;
        retry = RETRY_START_MS;
        status(1, 0, "");
      };
      socket.onmessage = (event) => {
        const bytes = new Uint8Array(event.data);
        const arrived = performance.now();
        const snapshots = wasm_exports.memcity_frame(give(bytes), bytes.length);
        for (let i = 0; i < snapshots; i++) {
          arrivals.push(arrived);
        }
        page.frames += 1;
      };
      socket.onclose = (event) => {
        page.closes += 1;
        const why = event.reason || "the connection to memcity serve closed";
        status(2, retry, why);
        setTimeout(attempt, retry);
        retry = Math.min(retry * 2, RETRY_MAX_MS);
      };
    };
    attempt();
  }

  function openFile(file) {
    openStream(file.stream(), file.name).catch((e) =>
      showError(`cannot read ${file.name}: ${e.message}`),
    );
  }

  function wireFiles() {
    const input = document.getElementById("memcity-file");
    document.getElementById("memcity-open").onclick = () => input.click();
    input.onchange = () => {
      if (input.files.length > 0) {
        openFile(input.files[0]);
      }
      input.value = "";
    };
    const folder = document.getElementById("memcity-folder");
    document.getElementById("memcity-open-folder").onclick = () => folder.click();
    folder.onchange = () => {
      // Each file's webkitRelativePath runs from the picked folder's name down.
      const files = Array.from(folder.files).filter((f) => isJson(f.name));
      if (files.length === 0) {
        showError("that folder holds no JSON files: pick a Memory Cities export folder");
      } else {
        const name = files[0].webkitRelativePath.split("/")[0];
        openFolder(
          name,
          files.map((f) => [f.webkitRelativePath, () => f.arrayBuffer().then((b) => new Uint8Array(b))]),
        );
      }
      folder.value = "";
    };
    const veil = document.getElementById("memcity-drop");
    window.addEventListener("dragover", (event) => {
      event.preventDefault();
      veil.style.display = "flex";
    });
    window.addEventListener("dragleave", (event) => {
      if (event.relatedTarget === null) {
        veil.style.display = "none";
      }
    });
    window.addEventListener("drop", (event) => {
      event.preventDefault();
      veil.style.display = "none";
      // A folder is only reachable through its entry, and only while the drop is handled.
      const item = event.dataTransfer.items[0];
      const entry = item && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
      if (entry && entry.isDirectory) {
        droppedFiles(entry, [])
          .then((files) => openFolder(entry.name, files))
          .catch((e) => showError(`cannot read the folder ${entry.name}: ${e.message}`));
      } else if (event.dataTransfer.files.length > 0) {
        openFile(event.dataTransfer.files[0]);
      }
    });
  }

  // The viewer keeps its status line left of the page's bar (the file name and the buttons over
  // the status bar's right end): it is told how far from the canvas's right edge the bar
  // reaches, now and whenever the bar's size changes (a file opened under another name).
  function reserveBar() {
    const bar = document.getElementById("memcity-bar");
    const canvas = document.getElementById("glcanvas");
    const say = () => {
      const gap = 8;
      const width = canvas.getBoundingClientRect().right - bar.getBoundingClientRect().left + gap;
      wasm_exports.memcity_page_bar(Math.max(0, width));
    };
    new ResizeObserver(say).observe(bar);
    window.addEventListener("resize", say);
    say();
  }

  miniquad_add_plugin({
    name: "memcity",
    version: 1,
    register_plugin: function (importObject) {
      // Each frame the viewer drew: the snapshots its session holds, its JVM's pid, the snapshot
      // shown and the view.
      importObject.env.memcity_drawn = function (snapshots, pid, at, view) {
        page.at = at;
        page.view = VIEWS[view] || String(view);
        if (snapshots < page.snapshots) {
          arrivals.length = 0; // a new session
        }
        const drawn = performance.now();
        for (let shown = page.snapshots; shown < snapshots && arrivals.length > 0; shown++) {
          page.latencies.push(drawn - arrivals.shift());
        }
        page.snapshots = snapshots;
        page.pid = pid;
        page.drawn += 1;
      };
      importObject.env.memcity_layout = function (ptr, len) {
        page.layout = JSON.parse(new TextDecoder().decode(new Uint8Array(wasm_memory.buffer, ptr, len)));
      };
      importObject.env.memcity_bench = function (ptr, len) {
        page.bench = new TextDecoder().decode(new Uint8Array(wasm_memory.buffer, ptr, len));
      };
      // A file the page gave that the viewer could not open: why.
      importObject.env.memcity_note = function (ptr, len) {
        page.notes.push(new TextDecoder().decode(new Uint8Array(wasm_memory.buffer, ptr, len)));
      };
      importObject.env.memcity_refused = function (ptr, len) {
        showError(new TextDecoder().decode(new Uint8Array(wasm_memory.buffer, ptr, len)));
      };
      // The viewer's errors that its window cannot show (it stopped).
      importObject.env.memcity_report = function (ptr, len) {
        const message = new TextDecoder().decode(new Uint8Array(wasm_memory.buffer, ptr, len));
        page.reports.push(message);
        showError(message);
      };
    },
    on_init: function () {
      // Before the viewer starts (miniquad calls main after this): the look the address asks for.
      const [q, qlen] = text(window.location.search);
      wasm_exports.memcity_look(q, qlen);
      page.renderer = rendererName();
      const [r, rlen] = text(page.renderer);
      wasm_exports.memcity_renderer(r, rlen);
      wireFiles();
      reserveBar();
      if (config.kind === "recording") {
        fetchRecording(config.url, config.name);
      } else if (config.kind === "folder") {
        fetchFolder(config.url, config.name);
      } else if (config.kind === "live") {
        connect(config.url);
      }
    },
  });
})();
