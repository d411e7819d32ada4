//! What the leak stages' tests share: small sessions of a few types over three snapshots, and
//! the paths of a map that leaks beside one that does not.

use crate::leak::paths::{PathNode, Paths};
use crate::leak::roots::{RootKind, RootRef};
use crate::model::CityModel;

/// Three snapshots of types `(name, objects)` a second apart.
pub(crate) fn session(types: &[(&str, [u64; 3])]) -> CityModel {
    snapshots_of(types, &[0, 1, 2])
}

/// The snapshots `at` of types `(name, objects at 0, 1, 2)`, at their seconds.
pub(crate) fn snapshots_of(types: &[(&str, [u64; 3])], at: &[usize]) -> CityModel {
    let mut m = CityModel::new();
    for &i in at {
        let rows: Vec<(Vec<String>, String, u64, u64)> = types
            .iter()
            .map(|(name, counts)| {
                (
                    vec!["p".into(), name.to_string()],
                    "Type".into(),
                    counts[i],
                    counts[i] * 16,
                )
            })
            .collect();
        let total: u64 = types.iter().map(|t| t.1[i]).sum();
        m.push_tree(i as u64 * 1000, (total, total * 16), &rows, Vec::new());
    }
    m
}

pub(crate) const MAP_LEAK_TYPES: &[(&str, [u64; 3])] = &[
    ("Item", [110, 10_010, 20_010]),
    ("java.util.HashMap$Node", [105, 10_005, 20_005]),
    ("java.util.HashMap$Node[]", [3, 3, 3]),
    ("java.util.HashMap", [3, 3, 3]),
];

pub(crate) fn node(
    parent: Option<usize>,
    type_name: &str,
    field: &str,
    root: Option<&str>,
) -> PathNode {
    PathNode {
        parent,
        type_name: type_name.into(),
        field: field.into(),
        root: root.map(named_root),
        chain: 1,
        length: 0,
        identity: 7,
        targets: Vec::new(),
        reached: Vec::new(),
        also: Vec::new(),
    }
}

/// Paths of 40 sampled `Item`s in a map under `static App.CACHE`, beside a JDK map under
/// `static java.util.Registry.MAPS` with 2.
pub(crate) fn map_paths() -> Paths {
    let mut nodes = vec![
        node(None, "java.util.HashMap", "", Some("static App.CACHE")),
        node(Some(0), "java.util.HashMap$Node[]", "table", None),
    ];
    for i in 0..40 {
        nodes.push(node(Some(1), "java.util.HashMap$Node", "[]", None));
        let mut item = node(Some(nodes.len() - 1), "Item", "value", None);
        item.targets = vec![("Item".into(), 1, 10.0, 2)];
        item.identity = i;
        nodes.push(item);
    }
    nodes.push(node(
        None,
        "java.util.HashMap",
        "",
        Some("static java.util.Registry.MAPS"),
    ));
    let at = nodes.len() - 1;
    let mut item = node(Some(at), "Item", "value", None);
    item.targets = vec![("Item".into(), 2, 20.0, 2)];
    nodes.push(item);
    Paths::new(nodes)
}

/// A static field's root, named as the agent names it.
pub(crate) fn static_root(holder_type: &str, field: &str) -> RootRef {
    RootRef {
        kind: RootKind::StaticField,
        name: format!("static {holder_type}.{field}"),
        thread: String::new(),
        holder_type: holder_type.into(),
        field: field.into(),
        frame: String::new(),
    }
}

/// A thread's root.
pub(crate) fn thread_root(thread: &str) -> RootRef {
    RootRef {
        kind: RootKind::Thread,
        name: format!("thread \"{thread}\""),
        thread: thread.into(),
        holder_type: String::new(),
        field: String::new(),
        frame: String::new(),
    }
}

/// A stack local's root in `frame` of a thread, `of` saying which kind (`thread`, `virtual
/// thread`).
pub(crate) fn local_root(frame: &str, of: &str, thread: &str) -> RootRef {
    RootRef {
        kind: RootKind::StackLocal,
        name: format!("local in {frame} of {of} \"{thread}\""),
        thread: thread.into(),
        holder_type: String::new(),
        field: String::new(),
        frame: frame.into(),
    }
}

/// A root of a test's table by its name: `thread "..."` or `static Class.FIELD`.
pub(crate) fn named_root(name: &str) -> RootRef {
    if let Some(thread) = name
        .strip_prefix("thread \"")
        .and_then(|t| t.strip_suffix('"'))
    {
        return thread_root(thread);
    }
    let path = name
        .strip_prefix("static ")
        .expect("a static field or a thread");
    let (holder_type, field) = path.rsplit_once('.').expect("Class.FIELD");
    static_root(holder_type, field)
}
