//! Sources of a city: memcity recordings, and Memory Cities JSON directories as AntTracks writes
//! them (shared/memory-cities-json.md). Both end in the same [`CityModel`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use memcity_proto::arriving::ArrivingRecording;
use memcity_proto::recording::{RecordingError, RecordingReader};
use memcity_proto::v1::RecordingHeader;
use memcity_proto::v1::{stream_message::Kind, StreamMessage};
use serde_json::Value;

use crate::model::{CityModel, Reference, Role};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Recording(#[from] RecordingError),
    #[error("cannot read {path}")] // the cause follows as the error source
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {path}: {problem}")]
    Json {
        file: PathBuf,
        /// Where in the document, e.g. `root.children[2].objects`.
        path: String,
        problem: String,
    },
    #[error("{0}")]
    Protocol(#[from] crate::model::ProtocolError),
    /// A recording read as it arrives that could not be read on (said when it stopped).
    #[error("{0}")]
    Stopped(String),
    #[error("--group-by: {0} is no heap dump; a recording keeps the groups of the agent's classifiers= option")]
    GroupedNotDump(PathBuf),
    /// A heap dump that could not be read (the error names the file and the offset).
    #[error(transparent)]
    Dump(#[from] memcity_dump::SeriesError),
    #[error("{0} holds no Memory Cities tree files: expected an export root, a classifier folder (with anttracks-format/) or a folder of <time>.json tree files")]
    NoTrees(PathBuf),
}

/// Loads a session: a memcity recording, a heap dump (`.hprof`, `.hprof.gz`), or a folder of
/// heap dumps (a series) or of a Memory Cities JSON export. Every command that reads a
/// session takes them all.
pub fn session(source: &Path) -> Result<CityModel, LoadError> {
    session_grouped(source, None)
}

/// The heap dumps at `source` (a dump, or a folder of them); empty when it is neither.
pub fn dumps_at(source: &Path) -> Vec<PathBuf> {
    if source.is_dir() {
        memcity_dump::dumps_in(source)
    } else if memcity_dump::is_dump(source) || memcity_dump::named_as_dump(source) {
        // A file named as a dump is read as one, so what is wrong with it is said of a dump.
        vec![source.to_owned()]
    } else {
        Vec::new()
    }
}

/// Several heap dump files given one by one: a series, in the order they were taken. `None`
/// when any of `paths` is not a dump file (a folder, a recording).
pub fn dump_files(paths: &[PathBuf]) -> Option<Vec<PathBuf>> {
    paths
        .iter()
        .all(|p| p.is_file() && (memcity_dump::is_dump(p) || memcity_dump::named_as_dump(p)))
        .then(|| paths.to_vec())
}

/// As [`session`], heap dumps grouped by `levels` (default package and type); a grouping is
/// refused for other sources, whose groups their recorder chose.
pub fn session_grouped(
    source: &Path,
    levels: Option<&[memcity_dump::Level]>,
) -> Result<CityModel, LoadError> {
    let dumps = dumps_at(source);
    if !dumps.is_empty() {
        return heap_dumps(&dumps, levels.unwrap_or(&memcity_dump::DEFAULT_LEVELS));
    }
    if levels.is_some() {
        return Err(LoadError::GroupedNotDump(source.to_owned()));
    }
    if source.is_dir() {
        memory_cities_json(source)
    } else {
        recording(source)
    }
}

/// Loads heap dumps, one snapshot each in the order they were taken.
pub fn heap_dumps(
    paths: &[PathBuf],
    levels: &[memcity_dump::Level],
) -> Result<CityModel, LoadError> {
    let mut model = CityModel::new();
    for message in memcity_dump::session(paths, levels)? {
        model.apply(&message)?;
    }
    Ok(model)
}

/// Loads a memcity recording. A damaged tail is not an error; it is described in the model's
/// `warnings`, and everything before it is loaded.
pub fn recording(path: &Path) -> Result<CityModel, LoadError> {
    from_reader(RecordingReader::open(path)?, path)
}

/// Loads a recording held in memory (the browser's: a file dropped on the page, or fetched);
/// `name` stands for it in messages. As [`recording`] otherwise.
pub fn recording_bytes(bytes: &[u8], name: &Path) -> Result<CityModel, LoadError> {
    from_reader(
        RecordingReader::new(std::io::Cursor::new(bytes), name)?,
        name,
    )
}

fn from_reader<R: std::io::Read + Send>(
    mut reader: RecordingReader<R>,
    path: &Path,
) -> Result<CityModel, LoadError> {
    let mut model = begin(reader.header())?;
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    // Decoding is half of a long recording's load: a thread of its own decodes the next
    // snapshots while the model takes the last (an 8-hour recording of 3,000 groups, 1.5 GB).
    #[cfg(not(target_arch = "wasm32"))]
    let reader = std::thread::scope(|scope| -> Result<_, LoadError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(8);
        let decoder = scope.spawn(move || {
            loop {
                let next = reader.next_message();
                let last = !matches!(next, Ok(Some(_)));
                if tx.send(next).is_err() || last {
                    break;
                }
            }
            reader
        });
        for next in rx {
            match next.map_err(io)? {
                // A refused message ends the load: the decoder stops at its closed channel.
                Some(message) => model.apply(&message)?,
                None => break,
            }
        }
        Ok(decoder
            .join()
            .expect("the recording's decoder does not panic"))
    })?;
    #[cfg(target_arch = "wasm32")]
    while let Some(message) = reader.next_message().map_err(io)? {
        model.apply(&message)?;
    }
    Ok(end(model, reader.damage_summary(), path))
}

/// A model for a recording with `header`: its JVM, and what its recorder left out.
fn begin(header: &RecordingHeader) -> Result<CityModel, LoadError> {
    let mut model = CityModel::new();
    if let Some(h) = header.handshake.clone() {
        model.apply(&StreamMessage {
            kind: Some(Kind::Handshake(h)),
        })?;
    }
    // What the recorder left out to keep the file under its size.
    model.add_thinned(header.thinned_snapshots);
    Ok(model)
}

/// The model of a recording read to its end: what was damaged, thinned or missing said.
fn end(mut model: CityModel, damage: Option<String>, path: &Path) -> CityModel {
    model.warnings.extend(damage);
    say_thinned(&mut model);
    if model.end.is_none() {
        model.warnings.push(format!(
            "{} has no session end: the JVM or the recorder was killed (or it is still being written); it ends with its last whole snapshot",
            path.display()
        ));
    }
    model
}

/// A recording loaded as its bytes arrive (the page's: a recording fetched or dropped), so
/// that the file is never held whole beside its model: [`Arriving::push`] each piece, then
/// [`Arriving::finish`]. As [`recording`] otherwise.
pub struct Arriving {
    recording: ArrivingRecording,
    model: Option<CityModel>,
    name: PathBuf,
    /// Why the recording could not be read on: every later push and the finish say it again.
    failed: Option<String>,
}

impl Arriving {
    /// `name` stands for the recording in messages.
    pub fn new(name: &Path) -> Self {
        Self {
            recording: ArrivingRecording::new(name),
            model: None,
            name: name.to_owned(),
            failed: None,
        }
    }

    /// The next piece, and every message it completes into the model. After an error, nothing
    /// more is read.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), LoadError> {
        if let Some(why) = &self.failed {
            return Err(LoadError::Stopped(why.clone()));
        }
        self.recording.push(bytes);
        self.take()
    }

    /// No more pieces come: the model of the whole recording.
    pub fn finish(mut self) -> Result<CityModel, LoadError> {
        if let Some(why) = self.failed.take() {
            return Err(LoadError::Stopped(why));
        }
        self.recording.end();
        self.take()?;
        // Past the end, `take` made the model or failed.
        let model = self
            .model
            .take()
            .expect("a recording read to its end has a model");
        let damage = self.recording.reader().and_then(|r| r.damage_summary());
        Ok(end(model, damage, &self.name))
    }

    fn take(&mut self) -> Result<(), LoadError> {
        let taken = self.take_messages();
        if let Err(e) = &taken {
            self.failed = Some(e.to_string());
        }
        taken
    }

    fn take_messages(&mut self) -> Result<(), LoadError> {
        while let Some(message) = self.recording.next_message()? {
            self.model()?.apply(&message)?;
        }
        // A header with no message after it yet.
        if self.recording.reader().is_some() {
            self.model()?;
        }
        Ok(())
    }

    fn model(&mut self) -> Result<&mut CityModel, LoadError> {
        if self.model.is_none() {
            let header = self
                .recording
                .reader()
                .expect("a message comes after its recording's header")
                .header();
            self.model = Some(begin(header)?);
        }
        Ok(self.model.as_mut().expect("made above"))
    }
}

/// Says what the model thinned to keep its memory bounded (`CityModel::thin`), if anything.
fn say_thinned(model: &mut CityModel) {
    let thinned = model.thinned();
    if thinned > 0 {
        model.warnings.push(format!(
            "{thinned} of its {} snapshots were thinned out to keep memory or the file bounded: the older history is kept evenly spaced (walks and snapshots with object paths first); the first snapshot, the window's ends and the newest ones are whole (`memcity --memory SIZE` keeps more)",
            thinned + model.len() as u64
        ));
    }
}

/// Where a Memory Cities export's files come from: the disk, or the files a page was handed
/// (a folder dropped on it, or fetched from `memcity serve`), which have no disk to read.
trait Files {
    /// The entries of `dir` as `(path, is a folder)`.
    fn entries(&self, dir: &Path) -> std::io::Result<Vec<(PathBuf, bool)>>;
    /// A file's bytes; `None` when there is no such file.
    fn read(&self, file: &Path) -> std::io::Result<Option<Vec<u8>>>;

    fn is_dir(&self, path: &Path) -> bool {
        self.entries(path).is_ok()
    }
}

struct Disk;

impl Files for Disk {
    fn entries(&self, dir: &Path) -> std::io::Result<Vec<(PathBuf, bool)>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| (e.path(), e.path().is_dir())))
            .collect()
    }

    fn read(&self, file: &Path) -> std::io::Result<Option<Vec<u8>>> {
        match std::fs::read(file) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Files held in memory, by their paths (each begins with the folder's own name, as a browser's
/// `webkitRelativePath` does).
struct InMemory<'a>(&'a BTreeMap<PathBuf, Vec<u8>>);

impl Files for InMemory<'_> {
    fn entries(&self, dir: &Path) -> std::io::Result<Vec<(PathBuf, bool)>> {
        let mut out: Vec<(PathBuf, bool)> = Vec::new();
        for path in self.0.keys() {
            let Ok(rest) = path.strip_prefix(dir) else {
                continue;
            };
            let mut parts = rest.components();
            let (Some(first), more) = (parts.next(), parts.next().is_some()) else {
                continue;
            };
            let entry = (dir.join(first), more);
            // Keys are sorted, so one folder's files are adjacent.
            if out.last() != Some(&entry) {
                out.push(entry);
            }
        }
        if out.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such folder among the files given",
            ));
        }
        Ok(out)
    }

    fn read(&self, file: &Path) -> std::io::Result<Option<Vec<u8>>> {
        Ok(self.0.get(file).cloned())
    }
}

/// Finds the tree files below `dir`: the export root, one classifier folder in it, or the folder
/// of tree files itself.
fn tree_files(files: &dyn Files, dir: &Path) -> Result<(Vec<PathBuf>, Option<PathBuf>), LoadError> {
    let io = |source| LoadError::Io {
        path: dir.to_owned(),
        source,
    };
    let json_files = |d: &Path| -> Result<Vec<PathBuf>, LoadError> {
        let mut found: Vec<PathBuf> = files
            .entries(d)
            .map_err(io)?
            .into_iter()
            .filter(|(p, folder)| !folder && p.extension().is_some_and(|e| e == "json"))
            .map(|(p, _)| p)
            .collect();
        found.sort();
        Ok(found)
    };
    let classifier_folder = |d: &Path| files.is_dir(&d.join("anttracks-format"));
    let folder = if classifier_folder(dir) {
        dir.to_owned()
    } else if let Some(inner) = files
        .entries(dir)
        .map_err(io)?
        .into_iter()
        .filter(|(p, folder)| *folder && classifier_folder(p))
        .map(|(p, _)| p)
        .min()
    {
        inner
    } else {
        let found = json_files(dir)?;
        if found.is_empty() {
            return Err(LoadError::NoTrees(dir.to_owned()));
        }
        return Ok((found, None));
    };
    let found = json_files(&folder.join("anttracks-format"))?;
    if found.is_empty() {
        return Err(LoadError::NoTrees(dir.to_owned()));
    }
    Ok((found, Some(folder.join("default-format"))))
}

struct Doc<'a> {
    file: &'a Path,
}

impl Doc<'_> {
    fn err(&self, path: &str, problem: impl Into<String>) -> LoadError {
        LoadError::Json {
            file: self.file.to_owned(),
            path: path.to_string(),
            problem: problem.into(),
        }
    }

    fn field<'v>(&self, v: &'v Value, path: &str, key: &str) -> Result<&'v Value, LoadError> {
        v.get(key)
            .ok_or_else(|| self.err(&format!("{path}.{key}"), "missing"))
    }

    fn u64(&self, v: &Value, path: &str, key: &str) -> Result<u64, LoadError> {
        let value = self.field(v, path, key)?;
        value
            .as_u64()
            .or_else(|| value.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .ok_or_else(|| {
                self.err(
                    &format!("{path}.{key}"),
                    format!("expected a count, found {value}"),
                )
            })
    }

    fn str<'v>(&self, v: &'v Value, path: &str, key: &str) -> Result<&'v str, LoadError> {
        let value = self.field(v, path, key)?;
        value.as_str().ok_or_else(|| {
            self.err(
                &format!("{path}.{key}"),
                format!("expected text, found {value}"),
            )
        })
    }
}

fn read_json(files: &dyn Files, file: &Path) -> Result<Value, LoadError> {
    let io = |source| LoadError::Io {
        path: file.to_owned(),
        source,
    };
    let bytes = files
        .read(file)
        .map_err(io)?
        .ok_or_else(|| io(std::io::ErrorKind::NotFound.into()))?;
    parse_json(file, &bytes)
}

fn parse_json(file: &Path, bytes: &[u8]) -> Result<Value, LoadError> {
    serde_json::from_slice(bytes).map_err(|e| {
        // The message ends with the position, which the error's path already gives.
        let message = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        LoadError::Json {
            file: file.to_owned(),
            path: format!("line {}, column {}", e.line(), e.column()),
            problem: message
                .strip_suffix(&position)
                .unwrap_or(&message)
                .to_string(),
        }
    })
}

/// One node of the tree into `(path below the root, role, objects, bytes)`.
type FlatNode = (Vec<String>, String, u64, u64);

fn flatten(
    doc: &Doc<'_>,
    node: &Value,
    path: &str,
    roles: &HashMap<i64, String>,
    out: &mut Vec<FlatNode>,
) -> Result<(), LoadError> {
    let children = match node.get("children") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(children)) => children,
        Some(other) => {
            return Err(doc.err(
                &format!("{path}.children"),
                format!("expected a list, found {other}"),
            ))
        }
    };
    for (i, child) in children.iter().enumerate() {
        let here = format!("{path}.children[{i}]");
        let full_key = doc.field(child, &here, "fullKey")?;
        let keys: Vec<String> = full_key
            .as_array()
            .ok_or_else(|| doc.err(&format!("{here}.fullKey"), "expected a list of keys"))?
            .iter()
            .map(|k| {
                k.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| k.to_string())
            })
            .collect();
        if keys.len() < 2 {
            return Err(doc.err(
                &format!("{here}.fullKey"),
                "a child needs the root's key and its own",
            ));
        }
        let classifier = child
            .get("classifierId")
            .and_then(Value::as_i64)
            .unwrap_or(-1);
        out.push((
            keys[1..].to_vec(),
            roles.get(&classifier).cloned().unwrap_or_default(),
            doc.u64(child, &here, "objects")?,
            doc.u64(child, &here, "bytes")?,
        ));
        flatten(doc, child, &here, roles, out)?;
    }
    Ok(())
}

/// `pointerMap` of a points-to or pointed-from file: `A -> B -> count`, keys as
/// `fullKeyAsString`; a missing file or a null map is empty.
fn pointer_map(
    files: &dyn Files,
    file: &Path,
) -> Result<HashMap<(String, String), u64>, LoadError> {
    let mut out = HashMap::new();
    let bytes = files.read(file).map_err(|source| LoadError::Io {
        path: file.to_owned(),
        source,
    })?;
    let Some(bytes) = bytes else {
        return Ok(out);
    };
    let doc = Doc { file };
    let json = parse_json(file, &bytes)?;
    let map = match json.get("pointerMap") {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(doc.err("pointerMap", format!("expected an object, found {other}")))
        }
    };
    for (a, targets) in map {
        let targets = targets
            .as_object()
            .ok_or_else(|| doc.err(&format!("pointerMap[{a:?}]"), "expected an object"))?;
        for (b, count) in targets {
            let n = count.as_u64().ok_or_else(|| {
                doc.err(
                    &format!("pointerMap[{a:?}][{b:?}]"),
                    format!("expected a count, found {count}"),
                )
            })?;
            out.insert((a.clone(), b.clone()), n);
        }
    }
    Ok(out)
}

/// The reference group (the name references use: the nearest type at or above a group, else the
/// group's own name, as `CityModel::reference_name`) each `fullKeyAsString` of a tree stands
/// for, so pointer maps filled at any level (AntTracks fills them at the leaves) join the tree.
struct ReferenceGroups<'a> {
    /// Each group's role, by its path below the root.
    roles: HashMap<&'a [String], &'a str>,
    root_key: &'a str,
}

impl<'a> ReferenceGroups<'a> {
    fn new(nodes: &'a [FlatNode], root_key: &'a str) -> Self {
        Self {
            roles: nodes
                .iter()
                .map(|(path, role, _, _)| (path.as_slice(), role.as_str()))
                .collect(),
            root_key,
        }
    }

    /// `None` for a key that names no group of the tree.
    fn of(&self, full_key: &str) -> Option<String> {
        let rest = full_key.strip_prefix(self.root_key)?.strip_prefix('#')?;
        let path: Vec<String> = rest.split('#').map(str::to_string).collect();
        self.roles.get(path.as_slice())?;
        let typed = (1..=path.len())
            .rev()
            .find(|&n| self.roles.get(&path[..n]).copied() == Some(Role::Type.label()));
        Some(path[typed.unwrap_or(path.len()) - 1].clone())
    }
}

/// Loads a Memory Cities export folder (an AntTracks export root, a classifier folder, or a
/// folder of tree files), snapshots ordered by `time`. A file that cannot be read or parsed is
/// skipped and named in the model's `warnings`, so one broken snapshot does not lose the rest;
/// only a folder with no good tree file at all is an error (the first file's).
pub fn memory_cities_json(dir: &Path) -> Result<CityModel, LoadError> {
    memory_cities(&Disk, dir)
}

/// As [`memory_cities_json`], for a folder's files held in memory (a folder dropped on the page):
/// each path begins with the folder's name, `folder`.
pub fn memory_cities_files(
    files: &BTreeMap<PathBuf, Vec<u8>>,
    folder: &Path,
) -> Result<CityModel, LoadError> {
    memory_cities(&InMemory(files), folder)
}

fn memory_cities(source: &dyn Files, dir: &Path) -> Result<CityModel, LoadError> {
    let (files, maps) = tree_files(source, dir)?;
    let mut failed = Vec::new();
    let mut trees = Vec::new();
    for file in &files {
        let parsed = read_json(source, file).and_then(|json| {
            let time = Doc { file }.u64(&json, "$", "time")?;
            Ok((time, file.clone(), json))
        });
        match parsed {
            Ok(tree) => trees.push(tree),
            Err(e) => failed.push(e),
        }
    }
    trees.sort_by_key(|t| t.0);
    let mut model = CityModel::new();
    let mut unmatched = 0;
    for (time, file, json) in &trees {
        match tree_of(source, file, json, maps.as_deref()) {
            Ok((root_values, nodes, references, missed)) => {
                unmatched += missed;
                model.push_tree(*time, root_values, &nodes, references);
                if json.get(crate::export::WARM_UP_KEY) == Some(&Value::Bool(true)) {
                    model.set_warm_up(model.len() - 1);
                }
            }
            Err(e) => failed.push(e),
        }
    }
    if unmatched > 0 {
        model.warnings.push(format!(
            "{unmatched} pointer-map entries name groups that are in no tree of their snapshot (their keys are not the trees' fullKeyAsString); those references are left out"
        ));
    }
    if model.is_empty() && !failed.is_empty() {
        return Err(failed.swap_remove(0));
    }
    let skipped = failed.len();
    for e in failed {
        model.warnings.push(format!("skipped {e}"));
    }
    if skipped > 0 {
        model.warnings.push(format!(
            "{skipped} of {} tree files could not be loaded; the city shows the other {}",
            files.len(),
            model.len()
        ));
    }
    say_thinned(&mut model);
    Ok(model)
}

/// One tree file: the root's `(objects, bytes)`, the flattened tree, the references, and how
/// many pointer-map entries named a group that is not in the tree.
type Tree = ((u64, u64), Vec<FlatNode>, Vec<Reference>, usize);

/// The root's totals, the flattened tree and the references of one tree file.
fn tree_of(
    files: &dyn Files,
    file: &Path,
    json: &Value,
    maps: Option<&Path>,
) -> Result<Tree, LoadError> {
    let doc = Doc { file };
    let mut roles = HashMap::new();
    if let Some(list) = json.get("classifiers").and_then(Value::as_array) {
        for (i, c) in list.iter().enumerate() {
            let here = format!("$.classifiers[{i}]");
            let id = doc
                .field(c, &here, "id")?
                .as_i64()
                .ok_or_else(|| doc.err(&here, "id is not a number"))?;
            roles.insert(id, doc.str(c, &here, "name")?.to_string());
        }
    }
    let root = doc.field(json, "$", "root")?;
    let mut nodes = Vec::new();
    flatten(&doc, root, "$.root", &roles, &mut nodes)?;
    let root_values = (
        doc.u64(root, "$.root", "objects")?,
        doc.u64(root, "$.root", "bytes")?,
    );
    let mut references = Vec::new();
    let mut unmatched = 0;
    if let Some(maps) = maps {
        let name = file.file_name().expect("a file");
        let points_to = pointer_map(files, &maps.join("points-to-maps").join(name))?;
        let pointed_from = pointer_map(files, &maps.join("pointed-from-maps").join(name))?;
        let root_key = root
            .get("fullKeyAsString")
            .or_else(|| root.get("key"))
            .and_then(Value::as_str)
            .unwrap_or("Overall");
        let groups = ReferenceGroups::new(&nodes, root_key);
        // Each map's pair, by the reference groups (types) its keys stand for: maps filled at
        // the site level add up per type. pointed-from is keyed by the referenced group first.
        let mut pairs: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
        for ((a, b), n) in &points_to {
            match (groups.of(a), groups.of(b)) {
                (Some(a), Some(b)) => pairs.entry((a, b)).or_default().1 += n,
                _ => unmatched += 1,
            }
        }
        for ((b, a), n) in &pointed_from {
            match (groups.of(a), groups.of(b)) {
                (Some(a), Some(b)) => pairs.entry((a, b)).or_default().0 += n,
                _ => unmatched += 1,
            }
        }
        for ((from, to), (referrers, count)) in pairs {
            references.push(Reference {
                from,
                to,
                referrers,
                references: count,
            });
        }
    }
    Ok((root_values, nodes, references, unmatched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Metric, NodeId, Role};

    fn golden() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto/tests/data/golden-v1.mcrec")
    }

    #[test]
    fn golden_recording_becomes_a_city() {
        let model = recording(&golden()).unwrap();
        assert!(model.warnings.is_empty());
        assert_eq!(model.len(), 5);
        let person = model
            .find(&["(default package)", "LinkedListLeak$Person"])
            .unwrap();
        assert_eq!(model.node(person).role, Role::Type);
        assert_eq!(
            model.node(model.node(person).parent.unwrap()).role,
            Role::Package
        );
        let site = model.node(person).children[0];
        assert_eq!(model.node(site).role, Role::AllocationSite);
        assert_eq!(model.value(person, 0, Metric::Objects), 0);
        assert!(model.value(person, 4, Metric::Objects) > 10_000);
        assert!(model
            .frame(4)
            .unwrap()
            .references
            .iter()
            .any(|r| r.from == "java.util.LinkedList$Node" && r.to == "LinkedListLeak$Person"));
    }

    /// Format version 2's golden recording (scripts/make-golden.sh): a real agent session with
    /// paths, estimates and lifetimes becomes a city whose suspect is the static list.
    #[test]
    fn golden_v2_names_its_leak() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto/tests/data/golden-v2.mcrec");
        let model = recording(&path).unwrap();
        assert!(model.warnings.is_empty(), "{:?}", model.warnings);
        assert!(!model.lifetimes().is_empty(), "lifetimes");
        let suspects = crate::leak::suspects::suspects(&model);
        assert_eq!(
            suspects.first().map(|s| s.root_name()),
            Some("static LinkedListLeak.PEOPLE"),
            "{suspects:#?}"
        );
    }

    #[test]
    fn a_recording_in_memory_loads_as_its_file_does() {
        let bytes = std::fs::read(golden()).unwrap();
        let from_bytes = recording_bytes(&bytes, Path::new("dropped.mcrec")).unwrap();
        let from_file = recording(&golden()).unwrap();
        assert_eq!(from_bytes.len(), from_file.len());
        assert_eq!(from_bytes.nodes().len(), from_file.nodes().len());
        let cut = recording_bytes(&bytes[..bytes.len() / 2], Path::new("cut.mcrec")).unwrap();
        assert!(cut.len() < from_file.len());
        assert!(
            cut.warnings.iter().any(|w| w.starts_with("cut.mcrec")),
            "the name given stands for the bytes: {:?}",
            cut.warnings
        );
        let err = recording_bytes(b"{\"not\": 1}", Path::new("notes.json")).unwrap_err();
        assert!(err.to_string().contains("notes.json"), "{err}");
    }

    fn arriving(bytes: &[u8], piece: usize, name: &str) -> Result<CityModel, LoadError> {
        let mut arriving = Arriving::new(Path::new(name));
        for chunk in bytes.chunks(piece) {
            arriving.push(chunk)?;
        }
        arriving.finish()
    }

    #[test]
    fn a_recording_arriving_in_pieces_loads_as_its_file_does() {
        let bytes = std::fs::read(golden()).unwrap();
        let mut damaged = bytes.clone();
        damaged[bytes.len() * 2 / 3] ^= 0x55;
        for (what, bytes) in [
            ("whole", &bytes[..]),
            ("cut", &bytes[..bytes.len() / 2]),
            ("damaged", &damaged[..]),
        ] {
            let whole = recording_bytes(bytes, Path::new("r.mcrec")).unwrap();
            for piece in [1, 100, 65536] {
                let model = arriving(bytes, piece, "r.mcrec").unwrap();
                assert_eq!(model.len(), whole.len(), "{what}, {piece}");
                assert_eq!(model.nodes().len(), whole.nodes().len(), "{what}, {piece}");
                assert_eq!(model.warnings, whole.warnings, "{what}, {piece}");
                let last = model.len() - 1;
                for (node, other) in model.nodes().iter().zip(whole.nodes()) {
                    assert_eq!(node.name, other.name);
                }
                for id in 0..model.nodes().len() as u32 {
                    for metric in [Metric::Objects, Metric::Bytes] {
                        assert_eq!(
                            model.value(id, last, metric),
                            whole.value(id, last, metric),
                            "{what}, {piece}"
                        );
                    }
                }
            }
        }
        // After an error nothing more is read, and the finish says why.
        let mut refused = Arriving::new(Path::new("notes.json"));
        assert!(refused.push(b"{\"not\": 1}").is_err());
        let again = refused.push(&bytes).unwrap_err().to_string();
        assert!(
            again.contains("notes.json is not a memcity recording"),
            "{again}"
        );
        assert!(refused.finish().is_err());
        let err = arriving(b"{\"not\": 1}", 4, "notes.json").unwrap_err();
        assert!(
            err.to_string()
                .contains("notes.json is not a memcity recording"),
            "{err}"
        );
        assert!(matches!(
            arriving(b"", 4, "empty.mcrec"),
            Err(LoadError::Recording(RecordingError::Empty { .. }))
        ));
    }

    /// Writes a Memory Cities export of a two-snapshot session as AntTracks lays it out.
    fn write_export(root: &Path) {
        let folder = root.join("TypeAllocationSite");
        let trees = folder.join("anttracks-format");
        let maps = folder.join("default-format");
        std::fs::create_dir_all(&trees).unwrap();
        std::fs::create_dir_all(maps.join("points-to-maps")).unwrap();
        std::fs::create_dir_all(maps.join("pointed-from-maps")).unwrap();
        for (time, person, string) in [(100u64, 10u64, 20u64), (200, 1000, 2000)] {
            let tree = serde_json::json!({
                "classifiers": [{"name": "Type", "id": 0}, {"name": "Allocation Site", "id": 1}],
                "time": time,
                "root": {"key": "Overall", "fullKey": ["Overall"], "fullKeyAsString": "Overall",
                         "classifierId": -1, "objects": person + string, "bytes": (person + string) * 24,
                         "transitiveClosureSize": -1, "retainedSize": -1,
                  "children": [
                    {"key": "Person", "fullKey": ["Overall", "Person"], "fullKeyAsString": "Overall#Person",
                     "classifierId": 0, "objects": person, "bytes": person * 24,
                     "children": [{"key": "main()", "fullKey": ["Overall", "Person", "main()"],
                                   "fullKeyAsString": "Overall#Person#main()", "classifierId": 1,
                                   "objects": person, "bytes": person * 24}]},
                    {"key": "String", "fullKey": ["Overall", "String"], "fullKeyAsString": "Overall#String",
                     "classifierId": 0, "objects": string, "bytes": string * 24}
                  ]}
            });
            // Children order is arbitrary in the format: reverse it in the second file.
            let mut tree = tree;
            if time == 200 {
                tree["root"]["children"].as_array_mut().unwrap().reverse();
            }
            std::fs::write(trees.join(format!("{time}.json")), tree.to_string()).unwrap();
            let to = serde_json::json!({"time": time, "pointerMap": {"Overall#Person": {"Overall#String": string}}});
            let from = serde_json::json!({"time": time, "pointerMap": {"Overall#String": {"Overall#Person": person}}});
            write_maps(&maps, time, &to, &from);
        }
    }

    /// Writes one snapshot's points-to and pointed-from maps under `maps` (default-format/).
    fn write_maps(maps: &Path, time: u64, to: &serde_json::Value, from: &serde_json::Value) {
        for (folder, map) in [("points-to-maps", to), ("pointed-from-maps", from)] {
            std::fs::write(
                maps.join(folder).join(format!("{time}.json")),
                map.to_string(),
            )
            .unwrap();
        }
    }

    /// AntTracks fills its pointer maps at the leaves: site-level keys join their types, their
    /// counts add up per type pair, and keys that name no group are left out with a warning.
    #[test]
    fn pointer_maps_keyed_at_the_leaves_give_the_types_references() {
        let dir = tempfile::tempdir().unwrap();
        write_export(dir.path());
        let maps = dir.path().join("TypeAllocationSite/default-format");
        for time in [100, 200] {
            let to = serde_json::json!({"time": time, "pointerMap": {
                "Overall#Person#main()": {"Overall#String": 7},
                "Overall#Ghost#gone()": {"Overall#String": 3}}});
            let from = serde_json::json!({"time": time, "pointerMap": {
                "Overall#String": {"Overall#Person#main()": 5}}});
            write_maps(&maps, time, &to, &from);
        }
        let model = memory_cities_json(dir.path()).unwrap();
        assert_eq!(
            model.frames()[1].references,
            vec![Reference {
                from: "Person".into(),
                to: "String".into(),
                referrers: 5,
                references: 7,
            }]
        );
        assert!(
            model
                .warnings
                .iter()
                .any(|w| w.starts_with("2 pointer-map entries name groups that are in no tree")),
            "{:?}",
            model.warnings
        );
    }

    /// A folder handed over as files (the page's: dropped, picked or fetched) loads as it does
    /// from the disk, at each level one may pick: the export root, a classifier folder, the trees.
    #[test]
    fn a_folder_in_memory_loads_as_it_does_from_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("export");
        write_export(&root);
        for (folder, depth) in [
            ("export", 0),
            ("TypeAllocationSite", 1),
            ("anttracks-format", 2),
        ] {
            let on_disk = [
                root.clone(),
                root.join("TypeAllocationSite"),
                root.join("TypeAllocationSite/anttracks-format"),
            ][depth]
                .clone();
            // As a browser names a picked folder's files: from the folder's own name down.
            let mut files = BTreeMap::new();
            for entry in walk(&on_disk) {
                let rel = entry.strip_prefix(on_disk.parent().unwrap()).unwrap();
                files.insert(rel.to_owned(), std::fs::read(&entry).unwrap());
            }
            let memory = memory_cities_files(&files, Path::new(folder)).unwrap();
            let disk = memory_cities_json(&on_disk).unwrap();
            assert_eq!(memory.len(), 2, "{folder}");
            assert_eq!(memory.nodes().len(), disk.nodes().len(), "{folder}");
            for i in 0..2 {
                for id in 0..disk.nodes().len() {
                    let id = id as NodeId;
                    assert_eq!(memory.path(id), disk.path(id), "{folder}");
                    for metric in [Metric::Objects, Metric::Bytes] {
                        assert_eq!(memory.value(id, i, metric), disk.value(id, i, metric));
                    }
                }
                let refs = |m: &CityModel| m.frame(i).unwrap().references.clone();
                assert_eq!(refs(&memory), refs(&disk), "{folder} snapshot {i}");
                assert!(!refs(&memory).is_empty() || depth == 2, "{folder}");
            }
        }
        let err = memory_cities_files(&BTreeMap::new(), Path::new("empty"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot read empty"), "{err}");
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }

    #[test]
    fn json_export_root_classifier_folder_and_tree_folder_all_load() {
        let dir = tempfile::tempdir().unwrap();
        write_export(dir.path());
        let folder = dir.path().join("TypeAllocationSite");
        for path in [
            dir.path().to_path_buf(),
            folder.clone(),
            folder.join("anttracks-format"),
        ] {
            let model = memory_cities_json(&path).unwrap();
            assert_eq!(model.len(), 2, "{}", path.display());
            let site = model.find(&["Person", "main()"]).unwrap();
            assert_eq!(model.node(site).role, Role::AllocationSite);
            assert_eq!(model.value(site, 1, Metric::Objects), 1000);
            assert_eq!(model.absolute_growth(site, Metric::Objects), 990);
        }
        let model = memory_cities_json(dir.path()).unwrap();
        let refs = &model.frame(1).unwrap().references;
        assert_eq!(
            refs,
            &[Reference {
                from: "Person".into(),
                to: "String".into(),
                referrers: 1000,
                references: 2000
            }]
        );
        // Without the maps (tree folder given directly) there are no references, not an error.
        let bare = memory_cities_json(&folder.join("anttracks-format")).unwrap();
        assert!(bare.frame(1).unwrap().references.is_empty());
    }

    #[test]
    fn recording_and_json_of_the_same_session_give_the_same_city() {
        use memcity_proto::recording::RecordingWriter;
        use memcity_proto::v1::{Handshake, Node, RecordingHeader, Snapshot, StringTable};
        let dir = tempfile::tempdir().unwrap();
        write_export(dir.path());
        let json = memory_cities_json(dir.path()).unwrap();
        // The same session as a memcity recording: type and site levels.
        let file = dir.path().join("same.mcrec");
        let header = RecordingHeader {
            handshake: Some(Handshake {
                protocol_version: memcity_proto::PROTOCOL_VERSION,
                classifiers: vec!["type".into(), "site".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut w = RecordingWriter::create(&file, &header).unwrap();
        w.write(&StreamMessage {
            kind: Some(Kind::Strings(StringTable {
                sites: Vec::new(),
                first_id: 1,
                names: vec!["Person".into(), "main()".into(), "String".into()],
            })),
        })
        .unwrap();
        let node = |name, objects: u64, children| Node {
            name,
            objects,
            bytes: objects * 24,
            estimated: false,
            children,
            ..Default::default()
        };
        for (seq, (time, person, string)) in [(100u64, 10u64, 20u64), (200, 1000, 2000)]
            .into_iter()
            .enumerate()
        {
            w.write(&StreamMessage {
                kind: Some(Kind::Snapshot(Snapshot {
                    seq: seq as u64,
                    time_ms: time,
                    classifiers: vec!["type".into(), "site".into()],
                    root: Some(node(
                        0,
                        person + string,
                        vec![
                            node(1, person, vec![node(2, person, vec![])]),
                            node(3, string, vec![]),
                        ],
                    )),
                    references: vec![memcity_proto::v1::Reference {
                        from_type: 1,
                        to_type: 3,
                        referrers: person,
                        references: string,
                    }],
                    ..Default::default()
                })),
            })
            .unwrap();
        }
        w.finish().unwrap();
        let rec = recording(&file).unwrap();
        // Same nodes by path, same values, same references, in every snapshot.
        assert_eq!(rec.len(), json.len());
        for (id, info) in json.nodes().iter().enumerate() {
            let path = json.path(id as NodeId);
            let other = rec
                .find(&path)
                .unwrap_or_else(|| panic!("{path:?} missing from the recording's city"));
            assert_eq!(rec.node(other).role, info.role, "{path:?}");
            for i in 0..json.len() {
                for metric in [Metric::Objects, Metric::Bytes] {
                    assert_eq!(
                        rec.value(other, i, metric),
                        json.value(id as NodeId, i, metric),
                        "{path:?} at {i}"
                    );
                }
            }
        }
        assert_eq!(rec.nodes().len(), json.nodes().len());
        assert_eq!(
            rec.frame(1).unwrap().references,
            json.frame(1).unwrap().references
        );
        // And therefore the same layout.
        let config = crate::layout::LayoutConfig::default();
        let (a, b) = (
            crate::layout::layout(&rec, &config),
            crate::layout::layout(&json, &config),
        );
        for (id, _) in json.nodes().iter().enumerate() {
            let other = rec.find(&json.path(id as NodeId)).unwrap();
            assert_eq!(a.lot(other), b.lot(id as NodeId));
        }
    }

    /// A key path 100,000 levels deep (a crafted file) loads, lays out and draws without
    /// overflowing the stack: the tree code walks without recursion.
    #[test]
    fn a_deep_key_path_does_not_overflow_the_stack() {
        let dir = tempfile::tempdir().unwrap();
        let trees = dir.path().join("Deep").join("anttracks-format");
        std::fs::create_dir_all(&trees).unwrap();
        let mut full_key = vec!["Overall".to_string()];
        full_key.extend((0..100_000).map(|i| format!("k{i}")));
        let tree = serde_json::json!({
            "classifiers": [{"name": "Type", "id": 0}],
            "time": 1,
            "root": {"key": "Overall", "fullKey": ["Overall"], "fullKeyAsString": "Overall",
                     "classifierId": -1, "objects": 5, "bytes": 80,
                     "children": [{"key": "leaf", "fullKey": full_key, "fullKeyAsString": "deep",
                                   "classifierId": 0, "objects": 5, "bytes": 80}]}
        });
        std::fs::write(trees.join("1.json"), tree.to_string()).unwrap();
        let model = memory_cities_json(dir.path()).unwrap();
        assert!(model.nodes().len() > 100_000);
        let config = crate::layout::LayoutConfig::default();
        let city = crate::layout::layout(&model, &config);
        let scene = crate::scene::build(
            &model,
            &city,
            0.0,
            &crate::scene::ViewSettings::default(),
            None,
        );
        assert_eq!(scene.buildings.len(), 1);
        assert!(crate::leak::suspects::suspects(&model).is_empty());
    }

    #[test]
    fn malformed_json_names_the_file_and_the_json_path() {
        let dir = tempfile::tempdir().unwrap();
        write_export(dir.path());
        let folder = dir.path().join("TypeAllocationSite/anttracks-format");
        let file = folder.join("200.json");
        let mut tree: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        tree["root"]["children"][1]["objects"] = Value::String("many".into());
        std::fs::write(&file, tree.to_string()).unwrap();
        // One broken file: the good one loads, the broken one is named with where it broke.
        let model = memory_cities_json(dir.path()).unwrap();
        assert_eq!(model.len(), 1);
        let warnings = model.warnings.join("\n");
        assert!(
            warnings.contains("200.json") && warnings.contains("$.root.children[1].objects"),
            "{warnings}"
        );
        assert!(warnings.contains("1 of 2 tree files"), "{warnings}");
        // A syntax error says where, once.
        std::fs::write(&file, "{\"time\": 200, \"root\": ").unwrap();
        let warnings = memory_cities_json(dir.path()).unwrap().warnings.join("\n");
        assert!(warnings.contains("200.json"), "{warnings}");
        assert_eq!(warnings.matches("line 1").count(), 1, "{warnings}");
        // Nothing loadable: an error, the first file's.
        std::fs::write(folder.join("100.json"), "[").unwrap();
        let err = memory_cities_json(dir.path()).unwrap_err().to_string();
        assert!(err.contains(".json") && err.contains("line 1"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let err = memory_cities_json(empty.path()).unwrap_err().to_string();
        assert!(err.contains("holds no Memory Cities tree files"), "{err}");
    }
}
