//! The viewer in the browser: the same window (`memcity_viewer::app`), compiled to WebAssembly
//! and drawn on the page's canvas through miniquad's WebGL loader. The page (`viewer/web/`,
//! served by `memcity serve`) hands it the session through the functions exported here:
//! - a recording (the one served, or a file dropped on the page or picked), piece by piece as
//!   it arrives: [`memcity_open_begin`], [`memcity_open_piece`], [`memcity_open_end`] (or
//!   [`memcity_open_abandon`]);
//! - a Memory Cities export folder (served, dropped or picked), file by file with
//!   [`memcity_folder_file`], then [`memcity_open_folder`];
//! - a live session, one recording frame per socket message (the first is the recording's
//!   preamble and header): [`memcity_frame`], and the socket's state: [`memcity_status`].
//!
//! - the width of the page's own bar over the status bar's right end: [`memcity_page_bar`].
//!
//! Each takes bytes the page wrote into a buffer it asked for with [`memcity_buffer`], and turns
//! them into the window's events; the window takes them at its next frame, as it takes the
//! network thread's natively.
//!
//! Built natively, this binary only says what it is for.

#[cfg(target_arch = "wasm32")]
fn main() {
    page::main();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "memcity-web is the viewer of memcity's web page: built for wasm32-unknown-unknown (scripts/build-web.sh) and served by `memcity serve`"
    );
    std::process::ExitCode::from(2)
}

#[cfg(target_arch = "wasm32")]
mod page {
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use crossbeam_channel::{Receiver, Sender};
    use memcity_city::load;
    use memcity_city::model::CityModel;
    use memcity_proto::recording::{FrameDecoder, FrameError};
    use memcity_proto::v1::stream_message::Kind;
    use memcity_viewer::app::{self, CameraView, Source, WindowOptions};
    use memcity_viewer::live::{ends_stream, Event, Sessions, Status};
    use memcity_viewer::page_look;

    /// What the page's calls feed, and the window's end of it.
    struct Feed {
        events: Sender<Event>,
        window: Option<Receiver<Event>>,
        sessions: Sessions,
        /// The live stream's frames, decoded as they come.
        frames: FrameDecoder,
        /// The stream ended or failed: later frames are ignored until the page reconnects.
        stopped: bool,
        /// The files of a folder being handed over, by their paths from the folder's name down.
        folder: BTreeMap<PathBuf, Vec<u8>>,
        /// The page's address's query (`memcity_look`), read when the window starts.
        query: String,
        /// The recording arriving, if one is.
        opening: Option<Opening>,
        /// The number of the last recording that began to arrive.
        opening_number: u32,
    }

    /// A recording arriving in pieces.
    struct Opening {
        number: u32,
        name: String,
        load: load::Arriving,
    }

    thread_local! {
        static FEED: RefCell<Feed> = RefCell::new({
            let (events, window) = crossbeam_channel::unbounded();
            Feed {
                events,
                window: Some(window),
                sessions: Sessions::default(),
                frames: FrameDecoder::new(),
                stopped: false,
                folder: BTreeMap::new(),
                query: String::new(),
                opening: None,
                opening_number: 0,
            }
        });
    }

    /// What the page's models keep in detail before they thin older history
    /// (`CityModel::thin`): two thirds of a window's 384 MiB. A browser tab's renderer holds
    /// some 380 MB of its own before any session (Chromium with SwiftShader's WebGL), and the
    /// WebAssembly memory a model grew to is never given back: at 384 MiB a long session's
    /// model took the tab past 1 GB.
    const PAGE_DETAIL_BUDGET: usize = 256 << 20;

    /// Sets the page's budget before its first model, whichever call makes it.
    fn page_budget() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            memcity_city::model::set_detail_budget_for_new_models(PAGE_DETAIL_BUDGET)
        });
    }

    pub fn main() {
        page_budget();
        let Some(events) = FEED.with(|f| f.borrow_mut().window.take()) else {
            return;
        };
        let query = FEED.with(|f| std::mem::take(&mut f.borrow_mut().query));
        let (look, problems) = page_look::parse(&query);
        for problem in problems {
            note(format!("warning: {problem}"));
        }
        let options = WindowOptions {
            camera: CameraView::Overview,
            group_by: None,
            view: look.view,
            at: None,
            screenshot: None,
            exit_after: None,
            wait: std::time::Duration::from_secs(60),
            select: None,
            drill: None,
            context: None,
            settings: look.settings,
            settings_open: false,
            scaled: false,
            picks: Vec::new(),
            hud: true,
            bench_frames: look.bench_frames,
            page_layout: look.layout,
            // The canvas decides the size in the browser.
            width: 1280,
            height: 800,
        };
        if let Err(e) = app::run(Source::Live(events), options) {
            report(&format!("{e:#}"));
        }
    }

    /// Tells the page (and its console) something went wrong that the window cannot show.
    fn report(message: &str) {
        let bytes = message.as_bytes();
        // SAFETY: `memcity_report` (viewer/web/memcity.js) reads `len` bytes at `ptr` at once,
        // while they are alive.
        unsafe { memcity_report(bytes.as_ptr(), bytes.len()) };
    }

    extern "C" {
        /// The page's: shows an error the viewer cannot draw.
        fn memcity_report(ptr: *const u8, len: usize);
        /// The page's: shows why a file it gave could not be opened (the viewer goes on).
        fn memcity_refused(ptr: *const u8, len: usize);
        /// The page's: notes what the window shows in its notes (a session's warnings).
        fn memcity_note(ptr: *const u8, len: usize);
    }

    /// A warning the window lists in its notes; the page keeps it too (`memcity_page.notes`).
    fn note(text: String) {
        let bytes = text.as_bytes();
        // SAFETY: as in `report`.
        unsafe { memcity_note(bytes.as_ptr(), bytes.len()) };
        send(Event::Refused(text));
    }

    /// A file the page gave cannot be opened: the page shows why where the user dropped it, and
    /// the window lists it with its notes.
    fn refuse(why: String) {
        let bytes = why.as_bytes();
        // SAFETY: as in `report`.
        unsafe { memcity_refused(bytes.as_ptr(), bytes.len()) };
        send(Event::Refused(why));
    }

    fn send(event: Event) {
        FEED.with(|f| {
            let _ = f.borrow().events.send(event);
        });
    }

    /// The page's address's query (`location.search`), handed over before the window starts:
    /// the look it asks for (`page_look`).
    ///
    /// # Safety
    /// A buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_look(ptr: *mut u8, len: usize) {
        // SAFETY: per contract.
        let query = String::from_utf8_lossy(&unsafe { take(ptr, len) }).into_owned();
        FEED.with(|f| f.borrow_mut().query = query);
    }

    /// The browser's WebGL renderer, as WebGL's debug info names it, handed over before the
    /// window starts: it picks how boxes are drawn (`render::BoxPath`).
    ///
    /// # Safety
    /// A buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_renderer(ptr: *mut u8, len: usize) {
        // SAFETY: per contract.
        let name = String::from_utf8_lossy(&unsafe { take(ptr, len) }).into_owned();
        memcity_viewer::render::set_renderer_name(name);
    }

    /// The page laid its own bar (the file name, the open buttons) over the status bar's right
    /// end, `pixels` wide from the canvas's right edge: the status line keeps left of it. Said
    /// again whenever the bar's size changes (a longer file name).
    #[no_mangle]
    pub extern "C" fn memcity_page_bar(pixels: f32) {
        memcity_viewer::controls::set_page_bar(pixels);
    }

    /// The plugin's version, checked by miniquad's loader against memcity.js's.
    #[no_mangle]
    pub extern "C" fn memcity_crate_version() -> u32 {
        1
    }

    /// A buffer of `len` bytes for the page to fill; handed back to one of the functions below,
    /// which frees it.
    #[no_mangle]
    pub extern "C" fn memcity_buffer(len: usize) -> *mut u8 {
        Box::into_raw(vec![0u8; len].into_boxed_slice()).cast()
    }

    /// Takes back a buffer of [`memcity_buffer`].
    ///
    /// # Safety
    /// `ptr` and `len` must be a buffer `memcity_buffer(len)` returned, not yet taken back.
    unsafe fn take(ptr: *mut u8, len: usize) -> Box<[u8]> {
        // SAFETY: per contract, this is the box `memcity_buffer` leaked.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }
    }

    /// A recording begins to arrive (fetched, or read from a file dropped or picked), named
    /// `name` in messages: it replaces the city once it has all come. Returns the number its
    /// pieces go with; a later recording's beginning ends this one's.
    ///
    /// # Safety
    /// A buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_open_begin(name_ptr: *mut u8, name_len: usize) -> u32 {
        page_budget();
        // SAFETY: per contract.
        let name = String::from_utf8_lossy(&unsafe { take(name_ptr, name_len) }).into_owned();
        FEED.with(|f| {
            let mut feed = f.borrow_mut();
            feed.opening_number += 1;
            feed.opening = Some(Opening {
                number: feed.opening_number,
                load: load::Arriving::new(Path::new(&name)),
                name,
            });
            feed.opening_number
        })
    }

    /// The next piece of recording `number`, read into its model at once (the recording is
    /// never held whole). Returns false when no more is wanted: the recording cannot be opened
    /// (the page is told why; the city stays) or another began.
    ///
    /// # Safety
    /// A buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_open_piece(number: u32, ptr: *mut u8, len: usize) -> bool {
        // SAFETY: per contract.
        let bytes = unsafe { take(ptr, len) };
        let failed = FEED.with(|f| {
            let mut feed = f.borrow_mut();
            let opening = feed.opening.as_mut().filter(|o| o.number == number)?;
            let Err(e) = opening.load.push(&bytes) else {
                return None;
            };
            let name = opening.name.clone();
            feed.opening = None;
            Some(format!("cannot open {name}: {e}"))
        });
        match failed {
            Some(why) => {
                refuse(why);
                false
            }
            None => FEED.with(|f| {
                f.borrow()
                    .opening
                    .as_ref()
                    .is_some_and(|o| o.number == number)
            }),
        }
    }

    /// Recording `number` has all come: the window opens it, or the page says why not.
    #[no_mangle]
    pub extern "C" fn memcity_open_end(number: u32) {
        if let Some(opening) = stop_opening(number) {
            opened(&opening.name, opening.load.finish());
        }
    }

    /// Recording `number` stopped arriving before its end (the page says why): what came of
    /// it is dropped.
    #[no_mangle]
    pub extern "C" fn memcity_open_abandon(number: u32) {
        stop_opening(number);
    }

    fn stop_opening(number: u32) -> Option<Opening> {
        FEED.with(|f| {
            let mut feed = f.borrow_mut();
            match &feed.opening {
                Some(o) if o.number == number => feed.opening.take(),
                _ => None,
            }
        })
    }

    /// One file of a folder being handed over; `path` runs from the folder's name down (as a
    /// browser's `webkitRelativePath`).
    ///
    /// # Safety
    /// Both are buffers of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_folder_file(
        path_ptr: *mut u8,
        path_len: usize,
        ptr: *mut u8,
        len: usize,
    ) {
        // SAFETY: per contract.
        let (path, bytes) = unsafe { (take(path_ptr, path_len), take(ptr, len)) };
        let path = PathBuf::from(String::from_utf8_lossy(&path).into_owned());
        FEED.with(|f| f.borrow_mut().folder.insert(path, bytes.into_vec()));
    }

    /// The folder's files are all handed over: open it as a Memory Cities export, which replaces
    /// the city (or says why not; the city stays).
    ///
    /// # Safety
    /// A buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_open_folder(name_ptr: *mut u8, name_len: usize) {
        page_budget();
        // SAFETY: per contract.
        let name = String::from_utf8_lossy(&unsafe { take(name_ptr, name_len) }).into_owned();
        let files = FEED.with(|f| std::mem::take(&mut f.borrow_mut().folder));
        opened(&name, load::memory_cities_files(&files, Path::new(&name)));
    }

    /// A session the page handed over, loaded: the window opens it, or the page says why not.
    fn opened(name: &str, loaded: Result<CityModel, load::LoadError>) {
        match loaded {
            Ok(model) if model.is_empty() => refuse(format!("{name} holds no snapshot to show")),
            Ok(model) => {
                for warning in &model.warnings {
                    note(format!("warning: {warning}"));
                }
                send(Event::Open(Box::new(model)));
            }
            Err(e) => refuse(format!("cannot open {name}: {e}")),
        }
    }

    /// One socket message of a live session: recording bytes (the preamble and header first,
    /// then one frame per message).
    ///
    /// # Safety
    /// A buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    ///
    /// Returns how many snapshots the message brought, so the page can time each from its
    /// arrival to the frame that first shows it.
    pub unsafe extern "C" fn memcity_frame(ptr: *mut u8, len: usize) -> u32 {
        page_budget();
        // SAFETY: per contract.
        let bytes = unsafe { take(ptr, len) };
        FEED.with(|f| {
            let mut feed = f.borrow_mut();
            let mut snapshots = 0;
            if feed.stopped {
                return snapshots;
            }
            feed.frames.push(&bytes);
            loop {
                let message = match feed.frames.next_message() {
                    Ok(Some(message)) => message,
                    Ok(None) => return snapshots,
                    Err(e) => {
                        feed.stopped = true;
                        let why = match e {
                            FrameError::Damaged(why) | FrameError::NotARecording(why) => why,
                        };
                        let _ = feed.events.send(Event::Status(Status::Failed(why)));
                        return snapshots;
                    }
                };
                for event in feed.sessions.events(message) {
                    if let Event::Message(m) = &event {
                        snapshots += matches!(m.kind, Some(Kind::Snapshot(_))) as u32;
                    }
                    let last = ends_stream(&event);
                    let _ = feed.events.send(event);
                    if last {
                        feed.stopped = true;
                        return snapshots;
                    }
                }
            }
        })
    }

    /// The socket's state: 0 connecting, 1 open (a fresh stream follows: its preamble first),
    /// 2 closed (the page retries in `retry_ms`), with the reason in a buffer of
    /// [`memcity_buffer`].
    ///
    /// # Safety
    /// `ptr`/`len` a buffer of [`memcity_buffer`], handed over.
    #[no_mangle]
    pub unsafe extern "C" fn memcity_status(state: u32, retry_ms: u32, ptr: *mut u8, len: usize) {
        // SAFETY: per contract.
        let why = String::from_utf8_lossy(&unsafe { take(ptr, len) }).into_owned();
        FEED.with(|f| {
            let mut feed = f.borrow_mut();
            let status = match state {
                0 => Status::Connecting,
                1 => {
                    feed.frames = FrameDecoder::new();
                    feed.stopped = false;
                    return;
                }
                _ => Status::Disconnected {
                    retry_in: std::time::Duration::from_millis(retry_ms as u64),
                    why,
                },
            };
            if !feed.stopped {
                let _ = feed.events.send(Event::Status(status));
            }
        });
    }
}
