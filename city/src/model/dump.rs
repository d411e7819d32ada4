//! What a snapshot read from a heap dump says of the dump itself (`Snapshot.dump`), names
//! resolved: the file, what reading it found, and the objects that keep most of it alive.

use crate::leak::roots::RootRef;

/// `DumpInfo`, names resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DumpFacts {
    pub file: String,
    pub file_bytes: u64,
    pub compressed: bool,
    pub objects: u64,
    pub references: u64,
    pub unreachable_objects: u64,
    pub unreachable_bytes: u64,
    pub layout: String,
    pub sizes_confirmed: f64,
    pub dangling_references: u64,
    pub read_ms: u64,
    /// Bytes kept in files while it was read (it needed more memory than was free).
    pub spilled_bytes: u64,
    pub retainers: Vec<Retainer>,
}

/// One of the objects that keep most of a dump alive (MAT's leak suspects of one dump).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retainer {
    /// The GC root of its path, when a path reaches it.
    pub root: Option<RootRef>,
    /// The path from the root's object to the accumulation point, each step's type, the field
    /// it was reached through (empty for the first) and what it keeps alive.
    pub steps: Vec<RetainerStep>,
    pub retained_bytes: u64,
    pub reachable_bytes: u64,
    pub objects: u64,
    /// The types it keeps that take most bytes: (type, objects, bytes).
    pub content: Vec<(String, u64, u64)>,
    /// For a group of objects of one type that keep this together (none alone): the type and
    /// how many; `steps` then lead to where their paths meet (empty when they meet nowhere).
    pub group: Option<(String, u64)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetainerStep {
    pub type_name: String,
    pub field: String,
    pub retained_bytes: u64,
    /// An array's length (0 for other objects).
    pub length: u64,
}

impl Retainer {
    /// The accumulation point's type: the last step's.
    pub fn holder(&self) -> &str {
        self.steps.last().map_or("", |s| s.type_name.as_str())
    }

    /// The same retainer in another dump of the series: the same root, holder type and group.
    pub fn same_as(&self, other: &Retainer) -> bool {
        self.holder() == other.holder()
            && self.root.as_ref().map(|r| &r.name) == other.root.as_ref().map(|r| &r.name)
            && self.group.as_ref().map(|g| &g.0) == other.group.as_ref().map(|g| &g.0)
    }
}

impl DumpFacts {
    pub(super) fn from_proto(
        info: &memcity_proto::v1::DumpInfo,
        name: impl Fn(u32) -> String,
        root: impl Fn(&memcity_proto::v1::Root) -> RootRef,
    ) -> Self {
        DumpFacts {
            file: info.file.clone(),
            file_bytes: info.file_bytes,
            compressed: info.compressed,
            objects: info.objects,
            references: info.references,
            unreachable_objects: info.unreachable_objects,
            unreachable_bytes: info.unreachable_bytes,
            layout: info.layout.clone(),
            sizes_confirmed: info.sizes_confirmed,
            dangling_references: info.dangling_references,
            read_ms: info.read_ms,
            spilled_bytes: info.spilled_bytes,
            retainers: info
                .retainers
                .iter()
                .map(|r| Retainer {
                    root: r.path.first().and_then(|n| n.root.as_ref()).map(&root),
                    steps: r
                        .path
                        .iter()
                        .map(|n| RetainerStep {
                            type_name: name(n.r#type),
                            field: if n.field == 0 {
                                String::new()
                            } else {
                                name(n.field)
                            },
                            retained_bytes: n.retained_bytes,
                            length: n.length,
                        })
                        .collect(),
                    retained_bytes: r.retained_bytes,
                    reachable_bytes: r.reachable_bytes,
                    objects: r.objects,
                    content: r
                        .content
                        .iter()
                        .map(|c| (name(c.r#type), c.objects, c.weight as u64))
                        .collect(),
                    group: (r.group_type != 0).then(|| (name(r.group_type), r.group_objects)),
                })
                .collect(),
        }
    }
}
