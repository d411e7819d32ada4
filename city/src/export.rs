//! Writes a session in the Memory Cities JSON format (shared/memory-cities-json.md), so that the
//! original tools open memcity sessions: per snapshot, the tree in both formats AntTracks writes
//! (`anttracks-format`, `default-format`) and the points-to and pointed-from maps. [`load`]
//! reads it back; a round trip gives the same city, group by group (tested below).
//!
//! What the format has no place for stays behind: estimates' errors, the reference graph by
//! field, roots and paths, and the session's JVM details.
//!
//! [`load`]: crate::load

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::model::{CityModel, NodeId, Role, ROOT};

/// The root's key, as AntTracks names it.
const ROOT_KEY: &str = "Overall";

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The classifier folder (`<dir>/<classifiers>`), which `memcity replay` and the original
    /// tools open.
    pub folder: PathBuf,
    pub snapshots: usize,
}

/// Writes `model` below `dir` (created if missing; files of the same names are replaced).
pub fn memory_cities_json(model: &CityModel, dir: &Path) -> std::io::Result<Written> {
    let classifiers = model.level_roles();
    let folder_name: String = classifiers
        .iter()
        .map(|c| c.split_whitespace().collect::<String>())
        .collect();
    let folder = dir.join(if folder_name.is_empty() {
        "Unclassified".to_string()
    } else {
        folder_name
    });
    let anttracks = folder.join("anttracks-format");
    let default = folder.join("default-format");
    for d in [
        &anttracks,
        &default,
        &default.join("points-to-maps"),
        &default.join("pointed-from-maps"),
    ] {
        std::fs::create_dir_all(d)?;
    }
    let ids: HashMap<&str, i64> = classifiers
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i as i64))
        .collect();
    let keys = full_keys(model);
    let mut names_used: HashMap<u64, usize> = HashMap::new();
    for (index, frame) in model.frames().iter().enumerate() {
        // One file per point in time; a time twice gets a suffix (the time inside stays).
        let n = names_used.entry(frame.time_ms).or_default();
        let name = match *n {
            0 => format!("{}.json", frame.time_ms),
            k => format!("{}_{k}.json", frame.time_ms),
        };
        *n += 1;
        let values: HashMap<NodeId, (u64, u64)> = model
            .values(index)
            .iter()
            .map(|&(id, objects, bytes)| (id, (objects, bytes)))
            .collect();
        let mut tree = json!({
            "classifiers": classifiers
                .iter()
                .enumerate()
                .map(|(i, c)| json!({ "name": c, "id": i }))
                .collect::<Vec<_>>(),
            "time": frame.time_ms,
            "root": anttracks_node(model, ROOT, index, &values, &keys, &ids),
        });
        warm_up(model, index, &mut tree);
        write(&anttracks.join(&name), &tree)?;
        let mut tree = json!({
            "time": frame.time_ms,
            "root": default_node(model, ROOT, &values, &keys),
        });
        warm_up(model, index, &mut tree);
        write(&default.join(&name), &tree)?;
        let (points_to, pointed_from) = pointer_maps(model, index, &keys);
        write(
            &default.join("points-to-maps").join(&name),
            &json!({ "time": frame.time_ms, "pointerMap": points_to }),
        )?;
        write(
            &default.join("pointed-from-maps").join(&name),
            &json!({ "time": frame.time_ms, "pointerMap": pointed_from }),
        )?;
    }
    Ok(Written {
        folder,
        snapshots: model.len(),
    })
}

/// The key an exported tree carries when the growth window leaves its snapshot out as warm-up
/// (the VM's start): the original tools ignore keys they do not know, and memcity reads it
/// back, so an export's growth is measured over the recording's window.
pub const WARM_UP_KEY: &str = "memcityWarmUp";

fn warm_up(model: &CityModel, index: usize, tree: &mut Value) {
    if model.is_warm_up(index) {
        tree[WARM_UP_KEY] = Value::Bool(true);
    }
}

/// Each node's full key, from the root's down.
fn full_keys(model: &CityModel) -> Vec<Vec<String>> {
    let mut keys: Vec<Vec<String>> = Vec::with_capacity(model.nodes().len());
    for (id, node) in model.nodes().iter().enumerate() {
        let key = match node.parent {
            None => vec![ROOT_KEY.to_string()],
            Some(parent) => {
                let mut key = keys[parent as usize].clone();
                key.push(node.name.clone());
                key
            }
        };
        debug_assert_eq!(keys.len(), id, "parents come before their children");
        keys.push(key);
    }
    keys
}

/// A node and the children present at this snapshot, in the anttracks format.
fn anttracks_node(
    model: &CityModel,
    id: NodeId,
    index: usize,
    values: &HashMap<NodeId, (u64, u64)>,
    keys: &[Vec<String>],
    classifier_ids: &HashMap<&str, i64>,
) -> Value {
    let node = model.node(id);
    let (objects, bytes) = values.get(&id).copied().unwrap_or_default();
    let key = &keys[id as usize];
    let mut out = Map::new();
    out.insert("key".into(), json!(key.last().expect("a key")));
    out.insert("fullKey".into(), json!(key));
    out.insert("fullKeyAsString".into(), json!(key.join("#")));
    let classifier = if id == ROOT || node.role == Role::Unclassified {
        -1
    } else {
        classifier_ids.get(node.role.label()).copied().unwrap_or(-1)
    };
    out.insert("classifierId".into(), json!(classifier));
    out.insert("objects".into(), json!(objects));
    out.insert("bytes".into(), json!(bytes));
    out.insert("transitiveClosureSize".into(), json!(-1));
    // Known for snapshots read from heap dumps (their dominator trees'); -1, the format's
    // "not computed", otherwise.
    let retained = model.retained(id, index).map_or(-1, |r| r as i64);
    out.insert("retainedSize".into(), json!(retained));
    let children: Vec<Value> = node
        .children
        .iter()
        .filter(|c| values.contains_key(c))
        .map(|&c| anttracks_node(model, c, index, values, keys, classifier_ids))
        .collect();
    if !children.is_empty() {
        out.insert("children".into(), Value::Array(children));
    }
    Value::Object(out)
}

/// The same in the default format.
fn default_node(
    model: &CityModel,
    id: NodeId,
    values: &HashMap<NodeId, (u64, u64)>,
    keys: &[Vec<String>],
) -> Value {
    let node = model.node(id);
    let (objects, bytes) = values.get(&id).copied().unwrap_or_default();
    let key = &keys[id as usize];
    let children: Vec<Value> = node
        .children
        .iter()
        .filter(|c| values.contains_key(c))
        .map(|&c| default_node(model, c, values, keys))
        .collect();
    json!({
        "key": key.join("#"),
        "name": key.last().expect("a key"),
        "role": if id == ROOT { "" } else { node.role.label() },
        "objects": objects,
        "bytes": bytes,
        "children": children,
    })
}

type PointerMap = BTreeMap<String, BTreeMap<String, u64>>;

/// Points-to (A -> B: distinct objects of B that A's objects reference, which memcity bounds by
/// its reference count) and pointed-from (B <- A: distinct objects of A referencing B), keyed by
/// the full keys of the groups the references name (types).
fn pointer_maps(
    model: &CityModel,
    index: usize,
    keys: &[Vec<String>],
) -> (Option<PointerMap>, Option<PointerMap>) {
    let frame = &model.frames()[index];
    if frame.references.is_empty() {
        return (None, None);
    }
    // A reference names types; the key is the type's group in this snapshot's tree (the
    // application's share before memcity's own), so that a reader finds it there. The first
    // group of that name anywhere in the session may be absent from this snapshot.
    let mut here: HashMap<&str, NodeId> = HashMap::new();
    for &(id, _, _) in model.values(index) {
        let node = model.node(id);
        if node.role != crate::model::Role::Type {
            continue;
        }
        let slot = here.entry(node.name.as_str()).or_insert(id);
        if model.is_own(*slot) && !model.is_own(id) {
            *slot = id;
        }
    }
    let key = |name: &str| here.get(name).map(|&id| keys[id as usize].join("#"));
    let mut points_to = PointerMap::new();
    let mut pointed_from = PointerMap::new();
    for r in &frame.references {
        let (Some(from), Some(to)) = (key(&r.from), key(&r.to)) else {
            continue;
        };
        points_to
            .entry(from.clone())
            .or_default()
            .insert(to.clone(), r.references);
        pointed_from
            .entry(to)
            .or_default()
            .insert(from, r.referrers);
    }
    (Some(points_to), Some(pointed_from))
}

fn write(path: &Path, value: &Value) -> std::io::Result<()> {
    // Its names (`<time>.json`) are easy to guess: one planted as a link in a shared folder is
    // replaced, never written through (what `memcity`, often root, writes is its user's alone).
    #[cfg(unix)]
    let file = memcity_proto::files::create_replacing(path)?;
    #[cfg(not(unix))]
    let file = std::fs::File::create(path)?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, value)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;
    use crate::model::Metric;

    fn golden() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto/tests/data/golden-v1.mcrec")
    }

    /// Recording -> export -> import: the same city, group by group, snapshot by snapshot, and
    /// the same references.
    #[test]
    fn a_recording_exported_and_imported_is_the_same_city() {
        let original = load::recording(&golden()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = memory_cities_json(&original, dir.path()).unwrap();
        assert_eq!(written.snapshots, original.len());
        assert!(written.folder.join("anttracks-format").is_dir());
        let imported = load::memory_cities_json(dir.path()).unwrap();
        assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
        assert_eq!(imported.len(), original.len());
        let mut compared = 0;
        for index in 0..original.len() {
            assert_eq!(
                imported.frames()[index].time_ms,
                original.frames()[index].time_ms
            );
            for &(id, objects, bytes) in original.values(index) {
                let path = original.path(id);
                let there = imported
                    .find(&path)
                    .unwrap_or_else(|| panic!("{path:?} is missing after the round trip"));
                assert_eq!(
                    imported.value(there, index, Metric::Objects),
                    objects,
                    "{path:?} at {index}"
                );
                assert_eq!(imported.value(there, index, Metric::Bytes), bytes);
                assert_eq!(
                    imported.node(there).role,
                    original.node(id).role,
                    "{path:?}"
                );
                compared += 1;
            }
            let mut want = original.frames()[index].references.clone();
            let mut got = imported.frames()[index].references.clone();
            let order = |r: &crate::model::Reference| (r.from.clone(), r.to.clone());
            want.sort_by_key(order);
            got.sort_by_key(order);
            assert_eq!(got, want, "references at {index}");
        }
        assert!(compared > 100, "only {compared} groups compared");
        // No group appears from nowhere.
        let groups = |m: &CityModel| (0..m.len()).map(|i| m.values(i).len()).sum::<usize>();
        assert_eq!(groups(&imported), groups(&original));
        assert_eq!(imported.window(), original.window());
    }

    /// A type that appears under memcity's own group too, first there: the pointer maps name
    /// the application's group of this snapshot, which the reader finds in its tree.
    #[test]
    fn pointer_maps_name_the_groups_of_their_own_snapshot() {
        let row = |path: &[&str], objects: u64| {
            (
                path.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                "Type".to_string(),
                objects,
                objects * 16,
            )
        };
        let reference = crate::model::Reference {
            from: "App".into(),
            to: "byte[]".into(),
            referrers: 10,
            references: 10,
        };
        let mut m = CityModel::new();
        m.push_tree(
            0,
            (30, 480),
            &[
                row(&[crate::model::MEMCITY], 10),
                row(&[crate::model::MEMCITY, "byte[]"], 10),
                row(&["app"], 20),
                row(&["app", "App"], 20),
            ],
            vec![],
        );
        m.push_tree(
            1000,
            (50, 800),
            &[
                row(&["app"], 20),
                row(&["app", "App"], 20),
                row(&["(primitive arrays)"], 30),
                row(&["(primitive arrays)", "byte[]"], 30),
            ],
            vec![reference.clone()],
        );
        let dir = tempfile::tempdir().unwrap();
        memory_cities_json(&m, dir.path()).unwrap();
        let imported = load::memory_cities_json(dir.path()).unwrap();
        assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
        assert_eq!(imported.frames()[1].references, [reference]);
    }

    /// What decides a recording's growth window (the VM-start snapshot left out as warm-up)
    /// survives the export: the import measures growth over the same snapshots.
    #[test]
    fn the_warm_up_snapshot_survives_the_round_trip() {
        let mut original = load::recording(&golden()).unwrap();
        original.set_warm_up(0);
        assert_eq!(original.window().start, 1, "the premise");
        let dir = tempfile::tempdir().unwrap();
        memory_cities_json(&original, dir.path()).unwrap();
        let imported = load::memory_cities_json(dir.path()).unwrap();
        assert_eq!(imported.window(), original.window());
        assert!(imported.is_warm_up(0) && !imported.is_warm_up(1));
    }

    #[test]
    fn the_files_are_laid_out_as_anttracks_writes_them() {
        let original = load::recording(&golden()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = memory_cities_json(&original, dir.path()).unwrap();
        let time = original.frames()[0].time_ms;
        for sub in [
            "anttracks-format",
            "default-format",
            "default-format/points-to-maps",
            "default-format/pointed-from-maps",
        ] {
            let file = written.folder.join(sub).join(format!("{time}.json"));
            assert!(file.is_file(), "{}", file.display());
        }
        let tree: Value = serde_json::from_str(
            &std::fs::read_to_string(written.folder.join(format!("anttracks-format/{time}.json")))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(tree["root"]["fullKeyAsString"], "Overall");
        assert_eq!(tree["root"]["classifierId"], -1);
        let child = &tree["root"]["children"][0];
        assert_eq!(
            child["fullKeyAsString"].as_str().unwrap(),
            child["fullKey"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("#")
        );
    }
}
