//! The GC roots that hold what a path search found: their kinds as the protocol names them,
//! and a root as the city keeps it (named, with its thread).

/// What kind of GC root holds a path: the protocol's own enum (`Root.Kind`), kept beside the
/// root's readable name so code asks for a thread or a static field by matching the kind, never
/// by reading the name's text.
pub use memcity_proto::v1::root::Kind as RootKind;

/// A root kind as the report and its JSON name it (`root_kind`: "static field", "thread").
pub fn root_kind_label(kind: RootKind) -> &'static str {
    match kind {
        RootKind::StaticField => "static field",
        RootKind::Thread => "thread",
        RootKind::StackLocal => "stack local",
        RootKind::JniLocal => "JNI local",
        RootKind::JniGlobal => "JNI global",
        RootKind::Monitor => "monitor",
        RootKind::Other | RootKind::Unspecified => "VM internal",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootRef {
    pub kind: RootKind,
    /// Readable: `static LinkedListLeak.PEOPLE`, `thread "main"`.
    pub name: String,
    pub thread: String,
}
