//! Fan-out of the session stream to subscribers, with history for late joiners.
//!
//! The agent thread publishes; it never waits. Every subscriber has a bounded queue: when it is
//! full, the snapshot is dropped for that subscriber, counted, and the subscriber is told with a
//! `Notice` before the next message it does get. Name tables are never lost: a subscriber that
//! missed one gets the missing names before its next snapshot. History (everything a late
//! subscriber needs to see the session from its start) is capped in memory: past the cap the
//! oldest snapshots go, except the very first one, which growth is measured against.
//!
//! Also what every port that serves the stream shares (the gRPC server, the page, the metrics):
//! how many may follow it at once, and how a connection refused for the limit is said.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use memcity_proto::v1::{
    stream_message::Kind, Handshake, Notice, Site, StreamMessage, StringTable,
};
use prost::Message;
use tokio::sync::mpsc;

use crate::log::warning;

/// Live subscriptions served at once (each one queues snapshots for its client).
pub const MAX_SUBSCRIBERS: usize = 16;

/// A connection closed for the limit (`memcity_page::conn`): said once, then every 1000, so a
/// flood does not flood the log too.
pub fn log_refusal(peer: SocketAddr, refused: u64) {
    if refused % 1000 == 1 {
        warning!(
            "refused a connection from {peer}: {} are open ({refused} refused so far)",
            memcity_page::conn::MAX_CONNECTIONS
        );
    }
}

/// Messages a subscriber may have queued before it starts losing snapshots.
pub const SUBSCRIBER_QUEUE: usize = 16;

pub type Item = Arc<StreamMessage>;

struct Subscriber {
    tx: mpsc::Sender<Item>,
    /// Snapshots lost since the last notice.
    dropped: u64,
    /// First string id this subscriber has not received, and the first site (`Names::sites`).
    strings_from: u32,
    sites_from: usize,
    /// The agent's own reader (its metrics), not a viewer: it takes no viewer's place.
    internal: bool,
}

/// Every name the session gave, and the allocation sites among them, to send a subscriber what
/// it lacks from any position.
#[derive(Default)]
struct Names {
    names: Vec<String>,
    /// In the order they came; a site's name may be older than the table that carried it (a
    /// one-frame site named as another's frame), so a subscriber's sites are counted apart
    /// from its names (`Subscriber::sites_from`).
    sites: Vec<Site>,
}

impl Names {
    /// Takes in a published table (which may name ids already known again).
    fn apply(&mut self, table: &StringTable) {
        let first = table.first_id.max(1);
        self.names.truncate(first as usize - 1);
        self.names.extend(table.names.iter().cloned());
        self.sites.extend(table.sites.iter().cloned());
    }

    fn len(&self) -> usize {
        self.names.len()
    }

    /// What a subscriber lacks: the names from id `first_id` on, and the sites from the
    /// `sites_from`-th on.
    fn from(&self, first_id: u32, sites_from: usize) -> StringTable {
        StringTable {
            first_id,
            names: self.names[first_id as usize - 1..].to_vec(),
            sites: self.sites[sites_from.min(self.sites.len())..].to_vec(),
        }
    }

    /// Whether a subscriber at these positions lacks anything.
    fn lacks(&self, strings_from: u32, sites_from: usize) -> bool {
        strings_from as usize <= self.names.len() || sites_from < self.sites.len()
    }
}

#[derive(Default)]
struct State {
    handshake: Option<Handshake>,
    strings: Names,
    first: Option<Item>,
    history: VecDeque<(Item, u64)>,
    history_bytes: u64,
    trimmed: u64,
    subscribers: Vec<Subscriber>,
    end: Option<Item>,
}

pub struct Hub {
    state: Mutex<State>,
    cap_bytes: u64,
    dropped_total: AtomicU64,
}

impl Hub {
    pub fn new(cap_bytes: u64) -> Self {
        Self {
            state: Mutex::default(),
            cap_bytes,
            dropped_total: AtomicU64::new(0),
        }
    }

    /// Drops the session's history and strings (a detach: the hub itself stays with the
    /// agent's struct, which outlives the session).
    pub fn clear(&self) {
        *self.lock() = State::default();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_handshake(&self, handshake: Handshake) {
        self.lock().handshake = Some(handshake);
    }

    /// Snapshots lost to slow subscribers so far, all subscribers together.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total.load(Ordering::Relaxed)
    }

    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.len()
    }

    /// Viewers whose client is still reading (closed ones are dropped here, not only at the
    /// next publish); the agent's own readers are not counted.
    pub fn live_subscribers(&self) -> usize {
        let mut state = self.lock();
        state.subscribers.retain(|s| !s.tx.is_closed());
        state.subscribers.iter().filter(|s| !s.internal).count()
    }

    /// Whether every subscriber's queue is empty (used to let the last messages out at exit).
    pub fn drained(&self) -> bool {
        self.lock()
            .subscribers
            .iter()
            .all(|s| s.tx.capacity() == s.tx.max_capacity() || s.tx.is_closed())
    }

    pub fn publish(&self, message: StreamMessage) {
        let mut state = self.lock();
        let item = Arc::new(message);
        match &item.kind {
            Some(Kind::Strings(table)) => state.strings.apply(table),
            Some(Kind::Snapshot(_)) => {
                if state.first.is_none() {
                    state.first = Some(item.clone());
                } else {
                    let size = item.encoded_len() as u64;
                    state.history.push_back((item.clone(), size));
                    state.history_bytes += size;
                    while state.history_bytes > self.cap_bytes {
                        let Some((_, size)) = state.history.pop_front() else {
                            break;
                        };
                        state.history_bytes -= size;
                        state.trimmed += 1;
                    }
                }
            }
            Some(Kind::End(_)) => state.end = Some(item.clone()),
            _ => {}
        }
        let is_snapshot = matches!(item.kind, Some(Kind::Snapshot(_)));
        let State {
            subscribers,
            strings,
            ..
        } = &mut *state;
        let mut lost = 0;
        subscribers.retain_mut(|sub| {
            let sent = send(sub, &item, strings);
            match sent {
                Sent::Yes => true,
                Sent::Closed => false,
                Sent::Full => {
                    if is_snapshot {
                        sub.dropped += 1;
                        lost += 1;
                    }
                    true
                }
            }
        });
        self.dropped_total.fetch_add(lost, Ordering::Relaxed);
    }

    /// Registers a subscriber. Returns what it must see first (handshake, names, retained
    /// history) and the queue of live messages that follow without a gap.
    pub fn subscribe(&self) -> (Vec<Item>, mpsc::Receiver<Item>) {
        self.subscribe_as(false)
    }

    /// `subscribe` for the agent's own reader, which takes no viewer's place.
    pub fn subscribe_internal(&self) -> (Vec<Item>, mpsc::Receiver<Item>) {
        self.subscribe_as(true)
    }

    fn subscribe_as(&self, internal: bool) -> (Vec<Item>, mpsc::Receiver<Item>) {
        let mut state = self.lock();
        let mut backlog = Vec::with_capacity(state.history.len() + 4);
        if let Some(handshake) = &state.handshake {
            backlog.push(Arc::new(StreamMessage {
                kind: Some(Kind::Handshake(handshake.clone())),
            }));
        }
        if !state.strings.names.is_empty() {
            backlog.push(Arc::new(StreamMessage {
                kind: Some(Kind::Strings(state.strings.from(1, 0))),
            }));
        }
        if let Some(first) = &state.first {
            backlog.push(first.clone());
        }
        if state.trimmed > 0 {
            backlog.push(Arc::new(StreamMessage {
                kind: Some(Kind::Notice(Notice {
                    dropped_snapshots: 0,
                    trimmed_history: state.trimmed,
                    message: format!(
                        "{} early snapshots were trimmed from the agent's history (history= cap); the first snapshot and the newest are here",
                        state.trimmed
                    ),
                })),
            }));
        }
        backlog.extend(state.history.iter().map(|(item, _)| item.clone()));
        if let Some(end) = &state.end {
            backlog.push(end.clone());
        }
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let strings_from = state.strings.len() as u32 + 1;
        let sites_from = state.strings.sites.len();
        state.subscribers.push(Subscriber {
            tx,
            dropped: 0,
            strings_from,
            sites_from,
            internal,
        });
        (backlog, rx)
    }
}

enum Sent {
    Yes,
    Full,
    Closed,
}

fn try_send(sub: &Subscriber, item: Item) -> Sent {
    match sub.tx.try_send(item) {
        Ok(()) => Sent::Yes,
        Err(mpsc::error::TrySendError::Full(_)) => Sent::Full,
        Err(mpsc::error::TrySendError::Closed(_)) => Sent::Closed,
    }
}

/// Sends `item`, preceded by whatever the subscriber still lacks: names it missed and a notice
/// of lost snapshots.
fn send(sub: &mut Subscriber, item: &Item, strings: &Names) -> Sent {
    let known = strings.len() as u32;
    // Names and sites are sent from the subscriber's own position, so a missed table is never
    // a gap; a table is never passed on as it came.
    if strings.lacks(sub.strings_from, sub.sites_from) {
        let table = strings.from(sub.strings_from, sub.sites_from);
        match try_send(
            sub,
            Arc::new(StreamMessage {
                kind: Some(Kind::Strings(table)),
            }),
        ) {
            Sent::Yes => {
                sub.strings_from = known + 1;
                sub.sites_from = strings.sites.len();
            }
            other => return other,
        }
    }
    if let Some(Kind::Strings(_)) = item.kind {
        return Sent::Yes;
    }
    if sub.dropped > 0 {
        let notice = Notice {
            dropped_snapshots: sub.dropped,
            trimmed_history: 0,
            message: format!(
                "this viewer read too slowly and lost {} snapshot(s); the agent never waits for viewers",
                sub.dropped
            ),
        };
        match try_send(
            sub,
            Arc::new(StreamMessage {
                kind: Some(Kind::Notice(notice)),
            }),
        ) {
            Sent::Yes => sub.dropped = 0,
            other => return other,
        }
    }
    try_send(sub, item.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_proto::v1::{SessionEnd, Snapshot};

    fn snap(seq: u64) -> StreamMessage {
        StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                ..Default::default()
            })),
        }
    }

    fn strings(first_id: u32, names: &[&str]) -> StreamMessage {
        StreamMessage {
            kind: Some(Kind::Strings(StringTable {
                sites: Vec::new(),
                first_id,
                names: names.iter().map(|s| s.to_string()).collect(),
            })),
        }
    }

    fn kinds(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|m| match &m.kind {
                Some(Kind::Handshake(_)) => "hello".to_string(),
                Some(Kind::Strings(t)) => format!("names{}+{}", t.first_id, t.names.len()),
                Some(Kind::Snapshot(s)) => format!("snap{}", s.seq),
                Some(Kind::Notice(n)) => {
                    format!("lost{}/trim{}", n.dropped_snapshots, n.trimmed_history)
                }
                Some(Kind::End(_)) => "end".to_string(),
                None => "?".to_string(),
            })
            .collect()
    }

    fn drain(rx: &mut mpsc::Receiver<Item>) -> Vec<Item> {
        let mut out = Vec::new();
        while let Ok(item) = rx.try_recv() {
            out.push(item);
        }
        out
    }

    #[test]
    fn late_subscriber_gets_handshake_names_and_history_then_live() {
        let hub = Hub::new(1 << 20);
        hub.set_handshake(Handshake::default());
        hub.publish(strings(1, &["a", "b"]));
        hub.publish(snap(0));
        hub.publish(strings(3, &["c"]));
        hub.publish(snap(1));
        let (backlog, mut rx) = hub.subscribe();
        assert_eq!(kinds(&backlog), ["hello", "names1+3", "snap0", "snap1"]);
        hub.publish(strings(4, &["d"]));
        hub.publish(snap(2));
        hub.publish(StreamMessage {
            kind: Some(Kind::End(SessionEnd::default())),
        });
        assert_eq!(kinds(&drain(&mut rx)), ["names4+1", "snap2", "end"]);
    }

    #[test]
    fn sites_reach_late_subscribers_and_those_that_missed_their_table() {
        use memcity_proto::sites::SiteFrames;
        use memcity_proto::strings::{StringInterner, StringResolver};
        // A frame with the separator in it: its name's split would give three frames, so two
        // come only from the site's own table.
        let site = SiteFrames {
            frames: vec!["a.B.c <- odd", "App.run(App.java:2)"],
            skipped: false,
        };
        let mut names = StringInterner::new();
        names.intern("java.lang.String");
        let first = names.take_new().expect("a table");
        let id = names.intern_site(&site);
        let second = names.take_new().expect("a table");
        let hub = Hub::new(1 << 20);
        let (_, mut slow) = hub.subscribe();
        for seq in 0..SUBSCRIBER_QUEUE as u64 {
            hub.publish(snap(seq));
        }
        for table in [first, second] {
            hub.publish(StreamMessage {
                kind: Some(Kind::Strings(table)),
            });
        }
        let resolved = |items: &[Item]| {
            let mut r = StringResolver::new();
            for item in items {
                if let Some(Kind::Strings(t)) = &item.kind {
                    r.apply(t).unwrap();
                }
            }
            let name = r.resolve(id).to_string();
            r.site(&name)
                .frames
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
        };
        let (backlog, mut late) = hub.subscribe();
        assert_eq!(resolved(&backlog), site.frames);
        drain(&mut slow);
        hub.publish(snap(100));
        let lagged = drain(&mut slow);
        assert_eq!(resolved(&lagged), site.frames);
        // A site whose name is known already comes in a table of no new names: it reaches a
        // subscriber that has every name as well as one that lags.
        let one = SiteFrames {
            frames: vec!["a.B.c <- odd"],
            skipped: false,
        };
        let one_id = names.intern_site(&one);
        let third = names.take_new().expect("a table of the site alone");
        hub.publish(StreamMessage {
            kind: Some(Kind::Strings(third)),
        });
        let got = drain(&mut late);
        let mut r = StringResolver::new();
        for item in backlog.iter().chain(&got) {
            if let Some(Kind::Strings(t)) = &item.kind {
                r.apply(t).unwrap();
            }
        }
        let name = r.resolve(one_id).to_string();
        assert_eq!(r.site(&name).frames, one.frames);
    }

    #[test]
    fn slow_subscriber_loses_snapshots_never_names_and_is_told() {
        let hub = Hub::new(1 << 20);
        let (_, mut rx) = hub.subscribe();
        for seq in 0..SUBSCRIBER_QUEUE as u64 {
            hub.publish(snap(seq));
        }
        // The queue is full: these are lost for this subscriber...
        hub.publish(snap(100));
        hub.publish(strings(1, &["x"]));
        hub.publish(snap(101));
        assert_eq!(hub.dropped_total(), 2);
        let first = drain(&mut rx);
        assert_eq!(first.len(), SUBSCRIBER_QUEUE);
        // ... and once it reads, it gets the missed names and a notice before the next snapshot.
        hub.publish(snap(102));
        assert_eq!(
            kinds(&drain(&mut rx)),
            ["names1+1", "lost2/trim0", "snap102"]
        );
    }

    #[test]
    fn history_cap_keeps_first_and_newest_and_says_so() {
        let one = snap(1).encoded_len() as u64;
        let hub = Hub::new(3 * one);
        for seq in 0..10 {
            hub.publish(snap(seq));
        }
        let (backlog, _rx) = hub.subscribe();
        assert_eq!(
            kinds(&backlog),
            ["snap0", "lost0/trim6", "snap7", "snap8", "snap9"]
        );
    }

    #[test]
    fn closed_subscribers_are_forgotten() {
        let hub = Hub::new(1 << 20);
        let (_, rx) = hub.subscribe();
        assert_eq!(hub.subscriber_count(), 1);
        drop(rx);
        hub.publish(snap(0));
        assert_eq!(hub.subscriber_count(), 0);
        assert!(hub.drained());
    }

    #[test]
    fn the_agents_own_reader_takes_no_viewers_place() {
        let hub = Hub::new(1 << 20);
        let (_, _metrics) = hub.subscribe_internal();
        let (_, _viewer) = hub.subscribe();
        assert_eq!(hub.live_subscribers(), 1);
        assert_eq!(hub.subscriber_count(), 2);
    }
}
