//! What the status bar says, and how it says it in the room it has: the connection, the
//! snapshot shown and what it rests on, the growth window, and what the view leaves out or the
//! live session counts. A line cut mid-word at the window's edge loses what matters at its end
//! (the lifetimes view's filter), so each part has a short form and a rank: where the line does
//! not fit, the least important parts are said shorter first, then left out.

use memcity_city::timeline;

use crate::controls::ViewKind;
use crate::live::Status;
use crate::state::ViewerState;

/// One part of the status line.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub full: String,
    /// What it says where room is short; `None`: only the full form.
    pub short: Option<String>,
    /// Which parts give way first: the lowest rank. Parts of [`KEPT`] rank are never left out.
    pub rank: u8,
}

/// The rank of the parts the line always says: the connection and the snapshot shown.
pub const KEPT: u8 = u8::MAX;

fn part(full: String, short: impl Into<Option<String>>, rank: u8) -> Part {
    Part {
        full,
        short: short.into(),
        rank,
    }
}

/// The status line's parts, in the order they read.
pub fn parts(s: &ViewerState) -> Vec<Part> {
    let len = s.len();
    let index = s.travel.index();
    let time = s.model().frame(index).map_or(0, |f| f.time_ms);
    let mut parts = vec![
        connection(s),
        part(
            format!(
                "snapshot {}/{} t={:.1}s",
                if len == 0 { 0 } else { index + 1 },
                len,
                time as f64 / 1000.0
            ),
            None,
            KEPT,
        ),
    ];
    if let Some(basis) = timeline::basis(s.model(), index) {
        let label = basis.label();
        let short = label.split(',').next().unwrap_or(&label).to_string();
        parts.push(part(label.clone(), (short != label).then_some(short), 6));
    }
    if s.travel.playing {
        parts.push(part(
            format!("playing, {} s per snapshot", s.travel.period),
            "playing".to_string(),
            5,
        ));
    }
    let window = s.model().window();
    if len > 1 {
        let (from, to) = (window.start + 1, window.end + 1);
        parts.push(part(
            format!("growth from snapshot {from} to {to}"),
            format!("growth {from}-{to}"),
            4,
        ));
    }
    if s.view == ViewKind::Lifetimes {
        parts.push(lifetimes_filter(s));
    }
    if s.view == ViewKind::City && s.scene().hidden > 0 {
        let hidden = s.scene().hidden;
        parts.push(part(
            format!("{hidden} small groups hidden"),
            format!("{hidden} hidden"),
            2,
        ));
    }
    if s.live {
        parts.extend(agent_figures(s));
    }
    parts
}

/// Where the session stands: connecting, live, in the past, disconnected, ended.
fn connection(s: &ViewerState) -> Part {
    match &s.status {
        Status::Connecting => part("connecting...".into(), None, KEPT),
        Status::Live if s.travel.is_live() => part(
            "LIVE (following the newest snapshot)".into(),
            "LIVE".to_string(),
            KEPT,
        ),
        Status::Live => part(
            "live session, viewing the past (L returns to live)".into(),
            "live, viewing the past (L: live)".to_string(),
            KEPT,
        ),
        Status::Disconnected { retry_in, why } => {
            let retry = format!("retrying in {:.1} s", retry_in.as_secs_f64());
            part(
                format!("disconnected ({why}); {retry}"),
                format!("disconnected; {retry}"),
                KEPT,
            )
        }
        Status::Ended(why) if s.live => part(
            format!("session ended ({why}); the city stays for replay"),
            "session ended".to_string(),
            KEPT,
        ),
        Status::Ended(_) => part("replay".into(), None, KEPT),
        Status::Failed(why) => part(why.clone(), None, KEPT),
    }
}

/// The lifetimes view's own filter: what its plot counts.
fn lifetimes_filter(s: &ViewerState) -> Part {
    let filter = s.lifetimes_filter();
    let model = s.model();
    let from = filter.from_ms as f64 / 1000.0;
    let to = filter
        .to_ms
        .min(model.frames().last().map_or(0, |f| f.time_ms)) as f64
        / 1000.0;
    let age = filter.min_gc_age;
    part(
        format!(
            "deaths booked from t={from:.1}s to t={to:.1}s, at least {age} GCs old (, . change)"
        ),
        format!("deaths t={from:.1}-{to:.1}s, >= {age} GCs old"),
        7,
    )
}

/// A live session's traffic and the agent's cost.
fn agent_figures(s: &ViewerState) -> [Part; 2] {
    [
        part(
            format!("received {}, dropped {}", s.received, s.dropped),
            format!("dropped {}", s.dropped),
            3,
        ),
        part(
            format!(
                "agent stop {:.0} ms, {:.2}% of wall time",
                s.last_pause_ms,
                s.overhead * 100.0
            ),
            format!("agent {:.2}%", s.overhead * 100.0),
            1,
        ),
    ]
}

/// The line `parts` make where `fits` says which lines have room: all of them in full if they
/// fit, else the lowest ranks said shorter, then left out, until it fits. What still does not
/// fit (the kept parts alone in a narrow window) is the caller's to cut.
pub fn line(parts: &[Part], fits: impl Fn(&str) -> bool) -> String {
    let mut said: Vec<Option<&str>> = parts.iter().map(|p| Some(p.full.as_str())).collect();
    let join = |said: &[Option<&str>]| {
        said.iter()
            .flatten()
            .copied()
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| parts[i].rank);
    for i in &order {
        if fits(&join(&said)) {
            return join(&said);
        }
        if let Some(short) = &parts[*i].short {
            said[*i] = Some(short);
        }
    }
    for i in order.iter().filter(|&&i| parts[i].rank != KEPT) {
        if fits(&join(&said)) {
            break;
        }
        said[*i] = None;
    }
    join(&said)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> Vec<Part> {
        vec![
            part("replay".into(), None, KEPT),
            part("snapshot 13/13 t=6.1s".into(), None, KEPT),
            part(
                "estimated, references from the walk of snapshot 9".into(),
                "estimated".to_string(),
                6,
            ),
            part(
                "growth from snapshot 2 to 13".into(),
                "growth 2-13".to_string(),
                4,
            ),
            part(
                "deaths booked from t=0.5s to t=6.1s, at least 0 GCs old (, . change)".into(),
                "deaths t=0.5-6.1s, >= 0 GCs old".to_string(),
                7,
            ),
        ]
    }

    #[test]
    fn a_line_short_of_room_says_its_least_parts_shorter_then_leaves_them_out() {
        let within = |n: usize| move |s: &str| s.chars().count() <= n;
        let whole = "replay | snapshot 13/13 t=6.1s | estimated, references from the walk of snapshot 9 | growth from snapshot 2 to 13 | deaths booked from t=0.5s to t=6.1s, at least 0 GCs old (, . change)";
        assert_eq!(line(&parts(), within(500)), whole);
        // The growth window first, then what the snapshot rests on, said shorter.
        assert_eq!(
            line(&parts(), within(170)),
            "replay | snapshot 13/13 t=6.1s | estimated, references from the walk of snapshot 9 | growth 2-13 | deaths booked from t=0.5s to t=6.1s, at least 0 GCs old (, . change)"
        );
        assert_eq!(
            line(&parts(), within(130)),
            "replay | snapshot 13/13 t=6.1s | estimated | growth 2-13 | deaths booked from t=0.5s to t=6.1s, at least 0 GCs old (, . change)"
        );
        // The view's own filter is the last said shorter, and left out last.
        assert_eq!(
            line(&parts(), within(90)),
            "replay | snapshot 13/13 t=6.1s | estimated | growth 2-13 | deaths t=0.5-6.1s, >= 0 GCs old"
        );
        assert_eq!(
            line(&parts(), within(70)),
            "replay | snapshot 13/13 t=6.1s | deaths t=0.5-6.1s, >= 0 GCs old"
        );
        // The connection and the snapshot always: what does not fit then is cut by the caller.
        assert_eq!(line(&parts(), within(10)), "replay | snapshot 13/13 t=6.1s");
    }
}
