//! What names a leak across snapshots and runs: the report and its JSON print a suspect's
//! signature, the agent's metrics hash it into a series' label, and runs are compared by it.
//! It is built from the structured parts (the root, the holder's type, where the holder sits)
//! and made text only by `Display`, whose form is fixed: a changed string would be a new leak
//! to every tool that compares runs.

use std::fmt;

use crate::leak::paths::HolderIn;
use crate::leak::roots::RootRef;

/// A suspect's name across snapshots and runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// A holder the paths named: its root, the holder's type and where it sits, not which of
    /// its insides a run's samples happened to pass. The root's thread is named by its family
    /// (`RootRef::stable_name`): a Jetty acceptor's name carries its port and a hash, and which
    /// of a pool's threads holds most varies.
    Held {
        /// The root's run-independent name, empty when no root was found.
        root: String,
        holder_type: String,
        holder_in: HolderIn,
    },
    /// A growing type of a recording without paths: no holder can be named.
    NoPaths { type_name: String },
    /// A growing type none of whose sampled objects a search reached: its holder is not seen.
    NotSeen { type_name: String },
}

impl Signature {
    /// The signature of a holder of type `holder_type`, sitting at `holder_in`, on a path from
    /// `root`.
    pub fn held(root: Option<&RootRef>, holder_type: &str, holder_in: HolderIn) -> Self {
        Signature::Held {
            root: root.map_or(String::new(), RootRef::stable_name),
            holder_type: holder_type.to_string(),
            holder_in,
        }
    }
}

/// A suspect made without a search (`Suspect::default`): no paths.
impl Default for Signature {
    fn default() -> Self {
        Signature::NoPaths {
            type_name: String::new(),
        }
    }
}

impl fmt::Display for Signature {
    /// `root | holder type | where it sits` (a root's own object sits in the root), or
    /// `(no paths) | type`, `(not seen) | type`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signature::Held {
                root,
                holder_type,
                holder_in,
            } => write!(f, "{root} | {holder_type} | {}", holder_in.name(root)),
            Signature::NoPaths { type_name } => write!(f, "(no paths) | {type_name}"),
            Signature::NotSeen { type_name } => write!(f, "(not seen) | {type_name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leak::testing::{local_root, static_root, thread_root};

    fn in_field(owner_type: &str, field: &str) -> HolderIn {
        HolderIn::Field {
            owner_type: owner_type.into(),
            field: field.into(),
        }
    }

    /// The text is what `format!("{} | {} | {}", stable root, holder type, stable holder_in)`
    /// made before the signature had parts, for every kind of root a leak was named under.
    #[test]
    fn a_signature_reads_as_it_always_has() {
        let jetty = thread_root(
            "qtp1702297201-14-acceptor-0@36ae3dd9-ServerConnector@1a2b3c{HTTP/1.1,[http/1.1]}{0.0.0.0:46741}",
        );
        assert_eq!(
            Signature::held(
                Some(&jetty),
                "java.util.concurrent.ConcurrentHashMap",
                in_field(
                    "org.eclipse.jetty.server.session.DefaultSessionCache",
                    "_sessions"
                ),
            )
            .to_string(),
            "thread \"qtp#-#-acceptor-#@#-ServerConnector@#{HTTP/#.#,[http/#.#]}{host:#}\" | \
             java.util.concurrent.ConcurrentHashMap | \
             org.eclipse.jetty.server.session.DefaultSessionCache._sessions"
        );
        // A thread's own object: where it sits is the root, by its family too.
        assert_eq!(
            Signature::held(
                Some(&thread_root("pool-3-thread-7")),
                "java.util.ArrayList",
                HolderIn::Root,
            )
            .to_string(),
            "thread \"pool-#-thread-#\" | java.util.ArrayList | thread \"pool-#-thread-#\""
        );
        // A frame's local: the thread by its family, the frame's line as it is.
        let local = local_root("App.run(App.java:12)", "thread", "worker-3");
        assert_eq!(
            Signature::held(Some(&local), "java.util.HashMap", HolderIn::Root).to_string(),
            "local in App.run(App.java:12) of thread \"worker-#\" | java.util.HashMap | \
             local in App.run(App.java:12) of thread \"worker-#\""
        );
        assert_eq!(
            Signature::held(
                Some(&local),
                "java.util.HashMap",
                in_field("App$Cache", "map")
            )
            .to_string(),
            "local in App.run(App.java:12) of thread \"worker-#\" | java.util.HashMap | \
             App$Cache.map"
        );
        // A static field names itself, digits and all.
        let cache = static_root("LinkedListLeak", "PEOPLE2");
        assert_eq!(
            Signature::held(Some(&cache), "java.util.LinkedList", HolderIn::Root).to_string(),
            "static LinkedListLeak.PEOPLE2 | java.util.LinkedList | static LinkedListLeak.PEOPLE2"
        );
        assert_eq!(
            Signature::held(
                Some(&cache),
                "java.util.HashMap",
                in_field("App$Registry", "byName")
            )
            .to_string(),
            "static LinkedListLeak.PEOPLE2 | java.util.HashMap | App$Registry.byName"
        );
        // No root found, and the types no holder was named for.
        assert_eq!(
            Signature::held(None, "App$Holder", HolderIn::Root).to_string(),
            " | App$Holder | "
        );
        let type_name = "LinkedListLeak$Person".to_string();
        assert_eq!(
            Signature::NoPaths {
                type_name: type_name.clone()
            }
            .to_string(),
            "(no paths) | LinkedListLeak$Person"
        );
        assert_eq!(
            Signature::NotSeen { type_name }.to_string(),
            "(not seen) | LinkedListLeak$Person"
        );
    }

    /// Two runs' signatures of one leak held by a pool's thread are equal as values, not only
    /// as text.
    #[test]
    fn a_pools_threads_in_two_runs_are_one_signature() {
        let run = |thread: &str| {
            Signature::held(
                Some(&local_root("Worker.run(Worker.java:30)", "thread", thread)),
                "java.util.ArrayList",
                in_field("Worker", "pending"),
            )
        };
        assert_eq!(run("pool-1-thread-3"), run("pool-7-thread-12"));
        assert_ne!(run("pool-1-thread-3"), run("scheduler-1"));
    }
}
