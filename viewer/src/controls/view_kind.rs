//! The views the main area shows, in the order the buttons and `V` go through them.

/// What the main area shows (`--view`, key `V`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum ViewKind {
    /// The 3D memory city
    #[default]
    City,
    /// The grouping tree as an icicle: root on the left, one column per level
    Icicle,
    /// The grouping tree as a sunburst: root in the centre, one ring per level
    Sunburst,
    /// The heap over time with small icicles of the picked snapshots side by side
    Timeline,
    /// Where sampled objects were born and where they died: a hive plot of allocation and
    /// death contexts, with the survival of the context under the pointer
    Lifetimes,
}

impl ViewKind {
    pub const ALL: [ViewKind; 5] = [
        ViewKind::City,
        ViewKind::Icicle,
        ViewKind::Sunburst,
        ViewKind::Timeline,
        ViewKind::Lifetimes,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ViewKind::City => "city",
            ViewKind::Icicle => "icicle",
            ViewKind::Sunburst => "sunburst",
            ViewKind::Timeline => "timeline",
            ViewKind::Lifetimes => "lifetimes",
        }
    }

    /// The view after this one, as `V` cycles them.
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&v| v == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// Views drawn flat in the main area, beside the sidebar the details panel and the leak
    /// suspects keep (`views::main_area`): all but the city.
    pub fn is_2d(self) -> bool {
        self != ViewKind::City
    }

    /// Views that draw the grouping tree in 2D.
    pub fn is_tree(self) -> bool {
        matches!(
            self,
            ViewKind::Icicle | ViewKind::Sunburst | ViewKind::Timeline
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page names the view it shows by its place in `ALL` (`web::drawn`): its own list
    /// must be this one, in this order.
    #[test]
    fn the_page_knows_the_views_in_their_order() {
        let js = include_str!("../../web/memcity.js");
        let line = js
            .lines()
            .find(|l| l.trim_start().starts_with("const VIEWS = ["))
            .expect("memcity.js lists the views");
        let names: Vec<&str> = ViewKind::ALL.iter().map(|v| v.label()).collect();
        let listed = format!("const VIEWS = [\"{}\"];", names.join("\", \""));
        assert_eq!(line.trim(), listed);
    }
}
