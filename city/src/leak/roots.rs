//! The GC roots that hold what a path search found, as the protocol sends them: their kind, and
//! the parts the agent names them by (thread, declaring class and field, frame) kept apart
//! beside the readable name, so that code asks the parts and only people read the name.

use crate::names::stable_thread_name;

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

/// A GC root as the wire gives it (`Root`), names resolved; a part the root has not, or an older
/// recording did not send, is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootRef {
    pub kind: RootKind,
    /// Readable, as the agent wrote it: `static LinkedListLeak.PEOPLE`, `thread "main"`,
    /// `local in App.run(App.java:12) of virtual thread "events-17"`.
    pub name: String,
    /// The thread's name: threads, stack and JNI locals (empty when the thread started after
    /// the walk began, and for other kinds).
    pub thread: String,
    /// Static fields: the declaring type and the field.
    pub holder_type: String,
    pub field: String,
    /// Stack and JNI locals: the method, `Class.method(File.java:line)`.
    pub frame: String,
}

impl RootRef {
    /// The root of the protocol's `root`, its string ids resolved by `resolve` (id 0: empty).
    pub fn from_proto(root: &memcity_proto::v1::Root, resolve: impl Fn(u32) -> String) -> Self {
        RootRef {
            kind: root.kind(),
            name: resolve(root.name),
            thread: resolve(root.thread),
            holder_type: resolve(root.holder_type),
            field: resolve(root.field),
            frame: resolve(root.frame),
        }
    }

    /// The readable name with the thread's name made run-independent
    /// (`names::stable_thread_name`), so that a pool's threads, or a server's acceptor whose
    /// name carries its port and hashes, name the same root in every run. The agent ends the
    /// name of a root that has a thread with the thread's name, quoted (`root_proto` in
    /// agent/src/worker/naming.rs: `thread "..."`, `... of virtual thread "..."`), so the
    /// structured thread says which part of the name it is. A root without a thread keeps its
    /// name as it is.
    pub fn stable_name(&self) -> String {
        let quoted = format!("\"{}\"", self.thread);
        match self.name.strip_suffix(&quoted) {
            Some(before) if !self.thread.is_empty() => {
                format!("{before}\"{}\"", stable_thread_name(&self.thread))
            }
            _ => self.name.clone(),
        }
    }
}

/// " and N more threads" after a root that a pool's threads share (`Suspect::co_holders`),
/// " and N more virtual threads" after a virtual thread's frame, else nothing.
pub fn more_threads(root: &str, n: usize) -> String {
    let kind = if root.contains("virtual thread \"") {
        "virtual thread"
    } else {
        "thread"
    };
    match n {
        0 => String::new(),
        1 => format!(" and 1 more {kind}"),
        n => format!(" and {n} more {kind}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leak::testing::{local_root, static_root, thread_root};

    #[test]
    fn more_threads_say_which_kind_of_thread_holds_alike() {
        let platform = "local in App.run(App.java:12) of thread \"pool-3-thread-7\"";
        let virtual_ = "local in Events.run(Events.java:40) of virtual thread \"events-17\"";
        assert_eq!(more_threads(platform, 0), "");
        assert_eq!(more_threads(platform, 1), " and 1 more thread");
        assert_eq!(more_threads(platform, 5), " and 5 more threads");
        assert_eq!(more_threads(virtual_, 1), " and 1 more virtual thread");
        assert_eq!(more_threads(virtual_, 199), " and 199 more virtual threads");
        // One family, as a pool's: the numbers go.
        let events = local_root("Events.run(Events.java:40)", "virtual thread", "events-17");
        assert_eq!(events.name, virtual_);
        assert_eq!(
            events.stable_name(),
            "local in Events.run(Events.java:40) of virtual thread \"events-#\""
        );
    }

    #[test]
    fn signatures_name_threads_by_their_family() {
        assert_eq!(
            thread_root("qtp1702297201-14-acceptor-0@36ae3dd9-ServerConnector@1a2b3c{HTTP/1.1,[http/1.1]}{0.0.0.0:46741}").stable_name(),
            "thread \"qtp#-#-acceptor-#@#-ServerConnector@#{HTTP/#.#,[http/#.#]}{host:#}\""
        );
        assert_eq!(
            local_root("App.run(App.java:12)", "thread", "pool-3-thread-7").stable_name(),
            "local in App.run(App.java:12) of thread \"pool-#-thread-#\""
        );
        assert_eq!(
            static_root("App", "CACHE2").stable_name(),
            "static App.CACHE2"
        );
    }

    /// The thread's part of a name is the structured thread, wherever the name's text looks
    /// like one: a thread named with quotes and the word `thread` in it keeps its words, and a
    /// root with no thread keeps a name that mentions one.
    #[test]
    fn a_stable_name_takes_the_thread_from_the_structured_root() {
        let quoted = thread_root("reader of thread \"db-7\" 12");
        assert_eq!(quoted.name, "thread \"reader of thread \"db-7\" 12\"");
        assert_eq!(
            quoted.stable_name(),
            "thread \"reader of thread \"db-#\" #\""
        );
        let local = local_root("App.run(App.java:12)", "thread", "worker-3");
        assert_eq!(
            local.stable_name(),
            "local in App.run(App.java:12) of thread \"worker-#\""
        );
        // The walk met the thread before it had a name: no thread, the name as it is.
        let unnamed = RootRef {
            name: "local in App.run(App.java:12) of a thread".into(),
            thread: String::new(),
            ..local.clone()
        };
        assert_eq!(unnamed.stable_name(), unnamed.name);
        // A name that does not end with its thread is not the agent's: left as it is.
        let other = RootRef {
            name: "monitor".into(),
            kind: RootKind::Monitor,
            ..local
        };
        assert_eq!(other.stable_name(), "monitor");
    }

    /// Every part the wire sends is kept apart; a part it leaves out (0, as older recordings
    /// do for a root's class, field and frame) is empty.
    #[test]
    fn a_root_from_the_wire_keeps_its_parts() {
        let strings = [
            "",
            "local in App.run(App.java:12) of thread \"main\"",
            "main",
            "App.run(App.java:12)",
        ];
        let resolve = |id: u32| strings[id as usize].to_string();
        let wire = memcity_proto::v1::Root {
            kind: RootKind::StackLocal as i32,
            name: 1,
            thread: 2,
            holder_type: 0,
            field: 0,
            frame: 3,
        };
        let root = RootRef::from_proto(&wire, resolve);
        assert_eq!(root, local_root("App.run(App.java:12)", "thread", "main"));
        let old = memcity_proto::v1::Root { frame: 0, ..wire };
        assert_eq!(RootRef::from_proto(&old, resolve).frame, "");
        let statics = ["", "static App.CACHE", "App", "CACHE"];
        let wire = memcity_proto::v1::Root {
            kind: RootKind::StaticField as i32,
            name: 1,
            holder_type: 2,
            field: 3,
            ..Default::default()
        };
        assert_eq!(
            RootRef::from_proto(&wire, |id| statics[id as usize].to_string()),
            static_root("App", "CACHE")
        );
    }
}
