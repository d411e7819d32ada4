//! The details panel's rows: which lines the selected group's details take, where each sits,
//! and the group a click on a line follows.

use super::Area;

/// One line of the details panel, from the top of the panel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetailsRow {
    pub kind: RowKind,
    /// Top of the row, from the panel's top, and its height.
    pub top: f32,
    pub height: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Title,
    Path,
    Numbers,
    /// How much of an estimate may be garbage no old-generation marking has seen (only when
    /// there is any).
    Unconfirmed,
    Growth,
    Sparkline,
    SitesHeading,
    /// The i-th listed site.
    Site(usize),
    /// Line i of the hint shown when the session has no site level.
    SitesHint(usize),
    NoSites,
    IncomingHeading,
    /// The i-th reference into the group (clickable when its group has a node).
    Incoming(usize),
    OutgoingHeading,
    Outgoing(usize),
    /// The leak suspect's trace through this group: its root, then each step (clickable).
    TraceHeading,
    TraceStep(usize),
}

impl DetailsRow {
    /// Where the row is drawn inside `panel`, or `None` when the panel is too short for it (a
    /// short window cuts the rest).
    pub fn area(&self, panel: Area) -> Option<Area> {
        let area = Area::new(
            panel.x + 10.0,
            panel.y + self.top,
            panel.w - 20.0,
            self.height,
        );
        (area.y + area.h <= panel.y + panel.h).then_some(area)
    }
}

/// The group a click at `(x, y)` on the details panel follows: a reference line whose group has
/// a node in the city.
pub fn link_at(
    panel: Area,
    rows: &[DetailsRow],
    d: &memcity_city::details::Details,
    x: f32,
    y: f32,
) -> Option<memcity_city::model::NodeId> {
    let row = rows
        .iter()
        .find(|r| r.area(panel).is_some_and(|a| a.contains(x, y)))?;
    match row.kind {
        RowKind::Incoming(i) => d.incoming.get(i)?.node,
        RowKind::Outgoing(i) => d.outgoing.get(i)?.node,
        RowKind::TraceStep(i) => d.trace.as_ref()?.steps.get(i)?.node,
        _ => None,
    }
}

/// Lines of the hint shown for a type in a session without a site level.
pub const SITES_HINT: [&str; 2] = [
    "not in this session: start the agent with",
    "classifiers=package:type:site",
];

/// The details panel's rows for `d`, top to bottom, and the panel's height with all of them.
pub fn details_rows(d: &memcity_city::details::Details) -> (Vec<DetailsRow>, f32) {
    use memcity_city::details::Sites;
    let mut rows = Vec::new();
    let mut top = 6.0;
    let mut push = |kind: RowKind, height: f32, top: &mut f32| {
        rows.push(DetailsRow {
            kind,
            top: *top,
            height,
        });
        *top += height;
    };
    push(RowKind::Title, 22.0, &mut top);
    push(RowKind::Path, 18.0, &mut top);
    push(RowKind::Numbers, 20.0, &mut top);
    if d.unconfirmed != (0, 0) {
        push(RowKind::Unconfirmed, 17.0, &mut top);
    }
    push(RowKind::Growth, 20.0, &mut top);
    push(RowKind::Sparkline, 62.0, &mut top);
    // The root cause first: it is what the panel is opened for when a group leaks.
    if let Some(trace) = &d.trace {
        push(RowKind::TraceHeading, 20.0, &mut top);
        for i in 0..trace.steps.len() {
            push(RowKind::TraceStep(i), 17.0, &mut top);
        }
        top += 6.0;
    }
    match &d.sites {
        Sites::Listed { sites, .. } => {
            push(RowKind::SitesHeading, 20.0, &mut top);
            if sites.is_empty() {
                push(RowKind::NoSites, 17.0, &mut top);
            }
            for i in 0..sites.len() {
                push(RowKind::Site(i), 17.0, &mut top);
            }
            top += 6.0;
        }
        Sites::NotClassified => {
            push(RowKind::SitesHeading, 20.0, &mut top);
            for i in 0..SITES_HINT.len() {
                push(RowKind::SitesHint(i), 17.0, &mut top);
            }
            top += 6.0;
        }
        Sites::NotApplicable => {}
    }
    if !d.incoming.is_empty() {
        push(RowKind::IncomingHeading, 20.0, &mut top);
        for i in 0..d.incoming.len() {
            push(RowKind::Incoming(i), 17.0, &mut top);
        }
        top += 6.0;
    }
    if !d.outgoing.is_empty() {
        push(RowKind::OutgoingHeading, 20.0, &mut top);
        for i in 0..d.outgoing.len() {
            push(RowKind::Outgoing(i), 17.0, &mut top);
        }
    }
    (rows, top + 8.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controls::Screen;

    #[test]
    fn details_rows_follow_the_content() {
        use memcity_city::details::{Details, Link, Sites};
        let link = |name: &str| Link {
            name: name.into(),
            node: Some(3),
            referrers: 5,
            references: 7,
        };
        let mut d = Details {
            node: 2,
            name: "Node".into(),
            role: memcity_city::model::Role::Type,
            path: vec!["Type: Node".into()],
            objects: 10,
            bytes: 240,
            retained: None,
            growth: 9,
            series: vec![1, 10],
            estimated: false,
            unconfirmed: (0, 0),
            sites: Sites::Listed {
                sites: vec![("a".into(), 6), ("b".into(), 4)],
                of: 10,
                estimated: true,
            },
            incoming: vec![link("List")],
            outgoing: vec![],
            trace: None,
        };
        let (rows, height) = details_rows(&d);
        let kinds: Vec<RowKind> = rows.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RowKind::Title,
                RowKind::Path,
                RowKind::Numbers,
                RowKind::Growth,
                RowKind::Sparkline,
                RowKind::SitesHeading,
                RowKind::Site(0),
                RowKind::Site(1),
                RowKind::IncomingHeading,
                RowKind::Incoming(0),
            ]
        );
        for pair in rows.windows(2) {
            assert!(pair[0].top + pair[0].height <= pair[1].top, "{pair:?}");
        }
        let last = rows.last().unwrap();
        assert!(height >= last.top + last.height);
        // No sites level: the hint instead; more links: a taller panel.
        d.sites = Sites::NotClassified;
        d.outgoing = vec![link("Person"), link("String")];
        let (rows, taller) = details_rows(&d);
        assert!(rows.iter().any(|r| r.kind == RowKind::SitesHint(1)));
        assert!(rows.iter().any(|r| r.kind == RowKind::Outgoing(1)));
        assert!(taller > height);
        // An estimate with garbage in doubt says so under its numbers.
        assert!(!rows.iter().any(|r| r.kind == RowKind::Unconfirmed));
        let doubt = details_rows(&Details {
            unconfirmed: (3, 72),
            ..d.clone()
        })
        .0;
        let kinds: Vec<RowKind> = doubt.iter().take(5).map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RowKind::Title,
                RowKind::Path,
                RowKind::Numbers,
                RowKind::Unconfirmed,
                RowKind::Growth
            ]
        );
        // A click on a reference line follows it; elsewhere it does not.
        let panel = Area::new(10.0, 30.0, 380.0, taller);
        let line = |kind| {
            rows.iter()
                .find(|r| r.kind == kind)
                .unwrap()
                .area(panel)
                .unwrap()
        };
        let (x, y) = line(RowKind::Outgoing(1)).center();
        assert_eq!(link_at(panel, &rows, &d, x, y), Some(3));
        let (x, y) = line(RowKind::Title).center();
        assert_eq!(link_at(panel, &rows, &d, x, y), None);
        d.outgoing[1].node = None;
        assert_eq!(
            link_at(panel, &rows, &d, x, y),
            None,
            "a group not in the city"
        );
        // A panel cut short hides, and so cannot follow, the lines past its end.
        let short = Area { h: 100.0, ..panel };
        assert!(line(RowKind::Outgoing(1)).y > short.y + short.h);
        assert_eq!(
            rows.iter()
                .find(|r| r.kind == RowKind::Outgoing(1))
                .unwrap()
                .area(short),
            None
        );

        // A leak suspect's trace comes right under the sparkline, each step a link.
        use memcity_city::details::{Trace, TraceStep};
        let step = |label: &str, node| TraceStep {
            label: label.into(),
            type_name: label.into(),
            holder: false,
            node,
            suspect: false,
            content: false,
            growth: 0,
        };
        d.trace = Some(Trace {
            root: "static App.PEOPLE".into(),
            confidence: "exact",
            confirmed: true,
            steps: vec![
                step("java.util.LinkedList", Some(7)),
                step(".first Node", None),
            ],
        });
        let (rows, _) = details_rows(&d);
        let kinds: Vec<RowKind> = rows.iter().map(|r| r.kind).take(8).collect();
        assert_eq!(
            kinds[5..],
            [
                RowKind::TraceHeading,
                RowKind::TraceStep(0),
                RowKind::TraceStep(1)
            ]
        );
        let at = |kind| {
            rows.iter()
                .find(|r| r.kind == kind)
                .unwrap()
                .area(Area::new(10.0, 30.0, 380.0, 2000.0))
                .unwrap()
                .center()
        };
        let big = Area::new(10.0, 30.0, 380.0, 2000.0);
        let (x, y) = at(RowKind::TraceStep(0));
        assert_eq!(link_at(big, &rows, &d, x, y), Some(7));
        let (x, y) = at(RowKind::TraceStep(1));
        assert_eq!(
            link_at(big, &rows, &d, x, y),
            None,
            "a type not in the city"
        );

        // The screen gives the panel what it wants, up to the room above the timeline.
        let screen = Screen::new(1280.0, 720.0, false, Some(taller));
        assert_eq!(screen.details.unwrap().0.h, taller);
        let small = Screen::new(1280.0, 300.0, false, Some(taller));
        assert!(small.details.unwrap().0.h < taller);
    }
}
