//! A session: the stream of one JVM, from a live agent or a recording, in one model.
//!
//! Live and replay feed the same [`Session::apply`]; nothing downstream knows which it was.

use std::path::Path;

use memcity_proto::recording::{RecordingError, RecordingReader};
use memcity_proto::strings::StringResolver;
use memcity_proto::v1::{
    stream_message::Kind, Handshake, Node, SessionEnd, Snapshot, StreamMessage,
};
use memcity_proto::version_mismatch_hint;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Recording(#[from] RecordingError),
    #[error("{0}")]
    Protocol(String),
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One leaf group of a snapshot: its path of names below the root, and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub path: Vec<String>,
    pub objects: u64,
    pub bytes: u64,
}

/// A reference count between two type groups, with names resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedReference {
    pub from: String,
    pub to: String,
    pub referrers: u64,
    pub references: u64,
}

#[derive(Debug, Default, Clone)]
pub struct Session {
    pub handshake: Option<Handshake>,
    pub strings: StringResolver,
    pub snapshots: Vec<Snapshot>,
    /// Snapshots the agent said this client lost (slow reader).
    pub dropped: u64,
    /// Snapshots trimmed from the agent's history before this client joined.
    pub trimmed: u64,
    pub end: Option<SessionEnd>,
    /// Warnings about the source (a damaged recording), for the user.
    pub warnings: Vec<String>,
}

impl Session {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one stream message. The handshake must come first; a protocol mismatch is an error
    /// that says what to upgrade.
    pub fn apply(&mut self, message: StreamMessage) -> Result<(), SessionError> {
        match message.kind {
            Some(Kind::Handshake(handshake)) => {
                if let Some(hint) = version_mismatch_hint(handshake.protocol_version) {
                    return Err(SessionError::Protocol(hint));
                }
                self.handshake = Some(handshake);
            }
            Some(Kind::Strings(table)) => self.strings.apply(&table),
            // A late joiner may see a snapshot twice only if the agent misbehaves; keep order.
            Some(Kind::Snapshot(snapshot))
                if self
                    .snapshots
                    .last()
                    .is_none_or(|last| snapshot.seq > last.seq) =>
            {
                self.snapshots.push(snapshot);
            }
            Some(Kind::Snapshot(_)) => {}
            Some(Kind::Notice(notice)) => {
                self.dropped += notice.dropped_snapshots;
                self.trimmed += notice.trimmed_history;
            }
            Some(Kind::End(end)) => self.end = Some(end),
            None => {}
        }
        Ok(())
    }

    /// Loads a whole recording. A damaged tail is not an error: what could be read is kept and
    /// the damage is described in `warnings`.
    pub fn load(path: &Path) -> Result<Session, SessionError> {
        let mut reader = RecordingReader::open(path)?;
        let mut session = Session::new();
        session.apply(StreamMessage {
            kind: reader.header().handshake.clone().map(Kind::Handshake),
        })?;
        while let Some(message) = reader.next_message().map_err(|source| SessionError::Io {
            path: path.display().to_string(),
            source,
        })? {
            session.apply(message)?;
        }
        if let Some(damage) = reader.damage_summary() {
            session.warnings.push(damage);
        }
        Ok(session)
    }

    pub fn name(&self, id: u32) -> &str {
        self.strings.resolve(id)
    }

    /// The leaf groups of snapshot `index`, paths resolved to names.
    pub fn leaves(&self, index: usize) -> Vec<Leaf> {
        let mut out = Vec::new();
        if let Some(root) = self.snapshots.get(index).and_then(|s| s.root.as_ref()) {
            let mut path = Vec::new();
            self.collect_leaves(root, &mut path, &mut out, true);
        }
        out
    }

    fn collect_leaves(&self, node: &Node, path: &mut Vec<String>, out: &mut Vec<Leaf>, root: bool) {
        if !root {
            path.push(self.name(node.name).to_string());
        }
        if node.children.is_empty() {
            if !root {
                out.push(Leaf {
                    path: path.clone(),
                    objects: node.objects,
                    bytes: node.bytes,
                });
            }
        } else {
            for child in &node.children {
                self.collect_leaves(child, path, out, false);
            }
        }
        if !root {
            path.pop();
        }
    }

    /// References of snapshot `index`, names resolved.
    pub fn references(&self, index: usize) -> Vec<ResolvedReference> {
        self.snapshots
            .get(index)
            .map(|s| {
                s.references
                    .iter()
                    .map(|r| ResolvedReference {
                        from: self.name(r.from_type).to_string(),
                        to: self.name(r.to_type).to_string(),
                        referrers: r.referrers,
                        references: r.references,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Classifier chain of the last snapshot (or the handshake's).
    pub fn classifiers(&self) -> Vec<String> {
        self.snapshots
            .last()
            .map(|s| s.classifiers.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| self.handshake.as_ref().map(|h| h.classifiers.clone()))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_proto::v1::StringTable;

    fn msg(kind: Kind) -> StreamMessage {
        StreamMessage { kind: Some(kind) }
    }

    fn node(name: u32, objects: u64, children: Vec<Node>) -> Node {
        Node {
            name,
            objects,
            bytes: objects * 10,
            estimated: false,
            children,
        }
    }

    #[test]
    fn apply_builds_leaves_with_names() {
        let mut s = Session::new();
        s.apply(msg(Kind::Handshake(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            ..Default::default()
        })))
        .unwrap();
        s.apply(msg(Kind::Strings(StringTable {
            first_id: 1,
            names: vec![
                "java.util".into(),
                "java.util.LinkedList$Node".into(),
                "java.lang".into(),
                "java.lang.String".into(),
            ],
        })))
        .unwrap();
        s.apply(msg(Kind::Snapshot(Snapshot {
            seq: 0,
            root: Some(node(
                0,
                30,
                vec![
                    node(1, 10, vec![node(2, 10, vec![])]),
                    node(3, 20, vec![node(4, 20, vec![])]),
                ],
            )),
            ..Default::default()
        })))
        .unwrap();
        let leaves = s.leaves(0);
        assert_eq!(leaves.len(), 2);
        assert_eq!(leaves[0].path, ["java.util", "java.util.LinkedList$Node"]);
        assert_eq!(leaves[1].bytes, 200);
        assert!(s.leaves(5).is_empty());
    }

    #[test]
    fn newer_protocol_is_rejected_with_an_upgrade_hint() {
        let mut s = Session::new();
        let err = s
            .apply(msg(Kind::Handshake(Handshake {
                protocol_version: memcity_proto::PROTOCOL_VERSION + 1,
                ..Default::default()
            })))
            .unwrap_err();
        assert!(
            err.to_string().contains("upgrade the memcity viewer"),
            "{err}"
        );
    }
}
