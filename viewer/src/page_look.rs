//! What a page's address asks its viewer to show (`?view=icicle&metric=bytes&children=50`): the
//! command line's look options that make sense in a link, so a view is shared as a URL; and
//! `bench=N`, the window's `--bench-frames N`, for measuring the page as the window is measured.

use memcity_city::model::Metric;

use crate::app::ViewKind;
use crate::controls::Settings;

/// The address's parameters the page takes (besides `token`, the page's own); the README's
/// browser section documents each.
pub const KEYS: [&str; 6] = ["view", "metric", "children", "solid", "bench", "layout"];

/// The look asked for; what was not asked for is the window's default.
#[derive(Debug, Default)]
pub struct PageLook {
    pub view: ViewKind,
    pub settings: Settings,
    pub bench_frames: Option<usize>,
    /// `layout=1`: hand each frame's layout to the page (`memcity_page.layout`), for tests;
    /// unasked, a frame records none.
    pub layout: bool,
}

/// Reads `query` (`location.search`, with or without its `?`). A key it does not know or a value
/// it cannot use is said in the second part and left at its default: a link with a typo still
/// opens the city.
pub fn parse(query: &str) -> (PageLook, Vec<String>) {
    let mut look = PageLook::default();
    let mut problems = Vec::new();
    let query = query.strip_prefix('?').unwrap_or(query);
    let views = ViewKind::ALL.map(|v| v.label()).join(", ");
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (decode(key), decode(value));
        let count = |least: usize| value.parse::<usize>().ok().filter(|n| *n >= least);
        let fine = match key.as_str() {
            "view" => ViewKind::ALL
                .into_iter()
                .find(|v| v.label() == value)
                .map(|v| look.view = v)
                .ok_or(views.as_str()),
            "metric" => match value.as_str() {
                "objects" => Ok(Metric::Objects),
                "bytes" => Ok(Metric::Bytes),
                "retained" => Ok(Metric::Retained),
                _ => Err("objects, bytes or retained"),
            }
            .map(|metric| look.settings.metric = metric),
            "children" => count(1)
                .map(|n| look.settings.children = n)
                .ok_or("a number of lots per parent, at least 1"),
            "solid" => count(0)
                .map(|n| {
                    look.settings.opacity.enabled = n > 0;
                    look.settings.opacity.opaque = n.max(1);
                })
                .ok_or("a number of solid growers (0: all solid)"),
            "layout" => match value.as_str() {
                "1" => Ok(true),
                "0" => Ok(false),
                _ => Err("1 to hand each frame's layout to the page, 0 not to"),
            }
            .map(|on| look.layout = on),
            "bench" => count(1)
                .map(|n| look.bench_frames = Some(n))
                .ok_or("a number of frames to time, at least 1"),
            // The page's own: the token, traded for a cookie before the page loads.
            "token" => Ok(()),
            _ => {
                problems.push(format!(
                    "the address's {key}= is not an option of the page ({}); ignored",
                    KEYS.join(", ")
                ));
                continue;
            }
        };
        if let Err(expected) = fine {
            problems.push(format!(
                "the address's {key}={value}: expected {expected}; the default is used"
            ));
        }
    }
    (look, problems)
}

/// Percent-decoding of a query's part (`+` is a space there).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_sets_the_look_and_says_what_it_cannot_use() {
        let (look, problems) =
            parse("?view=icicle&metric=bytes&children=50&solid=0&bench=40&layout=1");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(look.layout);
        assert_eq!(look.view, ViewKind::Icicle);
        assert_eq!(look.settings.metric, Metric::Bytes);
        assert_eq!(look.settings.children, 50);
        assert!(!look.settings.opacity.enabled);
        assert_eq!(look.bench_frames, Some(40));

        let (look, problems) = parse("view=cube&children=0&zoom=3&token=abc&bench=");
        assert_eq!(look.view, ViewKind::City);
        assert_eq!(look.settings.children, Settings::default().children);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(
            problems[0].contains("view=cube: expected city, icicle, sunburst, timeline, lifetimes")
        );
        assert!(problems[2].contains("zoom= is not an option"));

        let (look, problems) = parse("");
        assert!(problems.is_empty());
        assert_eq!(look.bench_frames, None);
        assert!(!look.layout, "no frame's layout recorded unasked");
    }

    #[test]
    fn query_parts_are_percent_decoded() {
        assert_eq!(decode("a+b%2Fc%24d"), "a b/c$d");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("caf%C3%A9"), "café");
    }
}
