//! The string table: class, package, site and thread names travel once and are referenced by id.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use crate::sites::SiteFrames;
use crate::v1::{Site, StringTable};

/// Assigns ids to names on the sending side and hands out what is new since the last call.
#[derive(Debug, Default)]
pub struct StringInterner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    /// Index into `names` of the first entry not yet handed out by [`StringInterner::take_new`].
    sent: usize,
    /// The allocation sites named, in the order they were named, and the first not yet handed
    /// out; the ids of the names that have one.
    sites: Vec<Site>,
    sites_sent: usize,
    site_names: HashSet<u32>,
}

impl StringInterner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `name`, assigning the next one if it is new. Ids start at 1; 0 means "no name".
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        self.names.push(name.to_owned());
        let id = self.names.len() as u32;
        self.ids.insert(name.to_owned(), id);
        id
    }

    /// The id of an allocation site's name, assigning its frames and name if it is new; a new
    /// site travels with the names (`StringTable.sites`), its frames as ids.
    pub fn intern_site(&mut self, site: &SiteFrames<impl AsRef<str>>) -> u32 {
        let frames = site
            .frames
            .iter()
            .map(|f| self.intern(f.as_ref()))
            .collect();
        // The name may be known already (one frame's site, named as another's frame): its
        // frames are recorded all the same, once.
        let id = self.intern(&site.name());
        if self.site_names.insert(id) {
            self.sites.push(Site {
                name: id,
                frames,
                skipped: site.skipped,
            });
        }
        id
    }

    /// The name behind `id`, if assigned.
    pub fn name(&self, id: u32) -> Option<&str> {
        let index = (id as usize).checked_sub(1)?;
        self.names.get(index).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Entries assigned since the previous call, or `None` if there are none.
    pub fn take_new(&mut self) -> Option<StringTable> {
        if self.sent == self.names.len() && self.sites_sent == self.sites.len() {
            return None;
        }
        let table = StringTable {
            first_id: self.sent as u32 + 1,
            names: self.names[self.sent..].to_vec(),
            sites: self.sites[self.sites_sent..].to_vec(),
        };
        self.sent = self.names.len();
        self.sites_sent = self.sites.len();
        Some(table)
    }

    /// Every entry assigned so far, for a subscriber that joins late.
    pub fn full_table(&self) -> StringTable {
        StringTable {
            first_id: 1,
            names: self.names.clone(),
            sites: self.sites.clone(),
        }
    }
}

/// Resolves ids on the receiving side.
#[derive(Debug, Default, Clone)]
pub struct StringResolver {
    /// `None`: an id no table gave (a lost frame's), shown as a placeholder.
    names: Vec<Option<String>>,
    /// Allocation sites by the hash of their names (`StringTable.sites`): the name's id, its
    /// frames' ids and whether frames were skipped. Ids, not strings: a crafted table naming
    /// one long string many times costs its ids alone.
    sites: HashMap<u64, Vec<(u32, Vec<u32>, bool)>>,
    /// Frame ids kept in all (against [`MAX_SITE_IDS`]).
    site_ids: usize,
}

fn name_hash(name: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish()
}

/// Ids a table may skip past what is known. A lost frame skips the names one snapshot
/// introduced (thousands); a table far past that is damaged or crafted, and filling the gap
/// would cost memory for nothing (a `first_id` of 4e9 asked for hundreds of gigabytes).
pub const MAX_ID_GAP: usize = 1 << 20;
/// Names a session may hold in all.
pub const MAX_NAMES: usize = 1 << 26;
/// Frames a site may have; a site with more is left to its name's split (the agent names a
/// site by a few frames, `site_frames=` at most).
pub const MAX_SITE_FRAMES: usize = 256;
/// Frame ids a session's sites may hold in all (16 MiB); past it, the rest's names are split.
pub const MAX_SITE_IDS: usize = 1 << 22;

/// A string table this side refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StringTableError {
    #[error("a string table starts at id {first_id} while {known} names are known: a gap of more than {MAX_ID_GAP} ids means a damaged or crafted stream")]
    Gap { first_id: u32, known: usize },
    #[error("string tables name more than {MAX_NAMES} strings: a damaged or crafted stream")]
    TooMany,
}

impl StringResolver {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a table message. Entries may overlap what is known (a late joiner's full table
    /// followed by live deltas); a gap, which only a lost frame causes, is filled with placeholders
    /// so later ids still land in the right place.
    /// A table past a gap of [`MAX_ID_GAP`] ids, or past [`MAX_NAMES`], is refused whole.
    pub fn apply(&mut self, table: &StringTable) -> Result<(), StringTableError> {
        let first = table.first_id.max(1) as usize - 1;
        if first > self.names.len() + MAX_ID_GAP {
            return Err(StringTableError::Gap {
                first_id: table.first_id,
                known: self.names.len(),
            });
        }
        if first.saturating_add(table.names.len()) > MAX_NAMES {
            return Err(StringTableError::TooMany);
        }
        if self.names.len() < first {
            self.names.resize(first, None);
        }
        for (offset, name) in table.names.iter().enumerate() {
            let index = first + offset;
            if index < self.names.len() {
                self.names[index] = Some(name.clone());
            } else {
                self.names.push(Some(name.clone()));
            }
        }
        for site in &table.sites {
            self.add_site(site);
        }
        Ok(())
    }

    /// Keeps a site's frames by its name's hash; one naming more frames than a site has, or
    /// past what a session's sites may hold, is left to its name's split.
    fn add_site(&mut self, site: &Site) {
        let frames = site.frames.len();
        if frames == 0 || frames > MAX_SITE_FRAMES || self.site_ids + frames > MAX_SITE_IDS {
            return;
        }
        let Some(Some(name)) = self.names.get((site.name as usize).wrapping_sub(1)) else {
            return;
        };
        let same = self.sites.entry(name_hash(name)).or_default();
        same.retain(|(id, _, _)| *id != site.name);
        same.push((site.name, site.frames.clone(), site.skipped));
        self.site_ids += frames;
    }

    /// An allocation site's frames: as its string table gave them, else its name split (an
    /// older recording's, a site whose frames name ids no table gave, or a name memcity gives
    /// such as `(unsampled)`).
    pub fn site<'a>(&'a self, name: &'a str) -> SiteFrames<&'a str> {
        let given = self.sites.get(&name_hash(name)).and_then(|same| {
            same.iter().find(|(id, frames, _)| {
                self.resolve(*id) == name && frames.iter().all(|&f| self.knows(f))
            })
        });
        match given {
            Some((_, frames, skipped)) => SiteFrames {
                frames: frames.iter().map(|&f| self.resolve(f)).collect(),
                skipped: *skipped,
            },
            None => crate::sites::split(name),
        }
    }

    /// The name behind `id`; unknown ids resolve to a visible placeholder rather than failing,
    /// because one lost frame must not make a whole session unreadable.
    pub fn resolve(&self, id: u32) -> &str {
        if id == 0 {
            return "";
        }
        match self.names.get(id as usize - 1) {
            Some(Some(name)) => name,
            Some(None) => "<lost name>",
            None => "<unknown name>",
        }
    }

    /// Whether `id` names a string a table gave (not a placeholder: a later table may still).
    pub fn knows(&self, id: u32) -> bool {
        id != 0 && matches!(self.names.get(id as usize - 1), Some(Some(_)))
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_assigns_stable_ids_from_one() {
        let mut s = StringInterner::new();
        assert_eq!(s.intern("java.lang.String"), 1);
        assert_eq!(s.intern("byte[]"), 2);
        assert_eq!(s.intern("java.lang.String"), 1);
        assert_eq!(s.name(2), Some("byte[]"));
        assert_eq!(s.name(0), None);
        assert_eq!(s.name(3), None);
    }

    #[test]
    fn deltas_carry_only_new_names_and_resolve_round_trip() {
        let mut s = StringInterner::new();
        s.intern("a");
        s.intern("b");
        let first = s.take_new().unwrap();
        assert_eq!(first.first_id, 1);
        assert_eq!(first.names, ["a", "b"]);
        assert!(s.take_new().is_none());
        s.intern("a");
        s.intern("c");
        let second = s.take_new().unwrap();
        assert_eq!(second.first_id, 3);
        assert_eq!(second.names, ["c"]);

        let mut r = StringResolver::new();
        r.apply(&first).unwrap();
        r.apply(&second).unwrap();
        assert_eq!(r.resolve(1), "a");
        assert_eq!(r.resolve(3), "c");
        assert_eq!(r.resolve(0), "");
        assert_eq!(r.resolve(9), "<unknown name>");
    }

    #[test]
    fn sites_travel_with_their_names_and_resolve_to_their_frames() {
        let mut s = StringInterner::new();
        s.intern("java.lang.String");
        let site = SiteFrames {
            frames: vec![
                "java.util.Arrays.copyOf(Arrays.java:3)",
                "App.run(App.java:12)",
            ],
            skipped: true,
        };
        let id = s.intern_site(&site);
        assert_eq!(s.intern_site(&site), id, "a site is named once");
        assert_eq!(s.name(id), Some(site.name().as_str()));
        let table = s.take_new().unwrap();
        assert_eq!(table.sites.len(), 1);
        assert_eq!(table.sites[0].name, id);
        assert!(s.take_new().is_none());
        let mut r = StringResolver::new();
        r.apply(&table).unwrap();
        assert_eq!(r.site(r.resolve(id)), site);
        // Older recordings carry no sites: the name is split.
        let mut old = table.clone();
        old.sites.clear();
        let mut r = StringResolver::new();
        r.apply(&old).unwrap();
        assert_eq!(r.site(r.resolve(id)), site);
        // A late joiner's full table carries every site.
        assert_eq!(s.full_table().sites, table.sites);
        // The frames are the table's, not the name's split: one with the separator in it
        // stays one.
        let odd = SiteFrames {
            frames: vec!["a <- b", "c"],
            skipped: false,
        };
        let id = s.intern_site(&odd);
        r.apply(&s.take_new().unwrap()).unwrap();
        assert_eq!(r.site(r.resolve(id)), odd);
        assert_eq!(crate::sites::split(r.resolve(id)).frames, ["a", "b", "c"]);
    }

    #[test]
    fn a_site_whose_name_is_known_already_still_travels_once() {
        let mut s = StringInterner::new();
        // A one-frame site's name is the frame, named earlier as another site's frame.
        let two = SiteFrames {
            frames: vec!["a.B.c(B.java:1)", "d.E.f(E.java:2)"],
            skipped: false,
        };
        s.intern_site(&two);
        let first = s.take_new().unwrap();
        let one = SiteFrames {
            frames: vec!["a.B.c(B.java:1)"],
            skipped: false,
        };
        let id = s.intern_site(&one);
        let second = s.take_new().expect("the site, though no name is new");
        assert!(second.names.is_empty());
        assert_eq!(second.sites.len(), 1);
        assert_eq!(second.sites[0].name, id);
        s.intern_site(&one);
        assert!(s.take_new().is_none(), "once");
        let mut r = StringResolver::new();
        r.apply(&first).unwrap();
        r.apply(&second).unwrap();
        assert_eq!(r.site(r.resolve(id)), one);
    }

    #[test]
    fn a_crafted_site_costs_its_ids_and_past_the_limits_is_left_to_its_name() {
        let long = "x <- y".repeat(1 << 16);
        let table = StringTable {
            first_id: 1,
            names: vec![long.clone()],
            sites: vec![
                Site {
                    name: 1,
                    frames: vec![1; MAX_SITE_FRAMES + 1],
                    skipped: false,
                },
                Site {
                    name: 1,
                    frames: vec![],
                    skipped: false,
                },
            ],
        };
        let mut r = StringResolver::new();
        r.apply(&table).unwrap();
        assert_eq!(r.site_ids, 0, "too many frames, or none: not kept");
        assert_eq!(r.site(&long), crate::sites::split(&long));
        let within = Site {
            name: 1,
            frames: vec![1; MAX_SITE_FRAMES],
            skipped: false,
        };
        for _ in 0..3 {
            r.apply(&StringTable {
                first_id: 1,
                names: vec![long.clone()],
                sites: vec![within.clone()],
            })
            .unwrap();
        }
        assert_eq!(
            r.site(&long).frames.len(),
            MAX_SITE_FRAMES,
            "kept once, as ids"
        );
    }

    #[test]
    fn a_site_naming_ids_no_table_gave_is_left_to_its_name() {
        let table = StringTable {
            first_id: 1,
            names: vec!["a.B.c(B.java:1) <- d.E.f(E.java:2)".into()],
            sites: vec![Site {
                name: 1,
                frames: vec![7, 9],
                skipped: false,
            }],
        };
        let mut r = StringResolver::new();
        r.apply(&table).unwrap();
        assert_eq!(
            r.site(r.resolve(1)).frames,
            ["a.B.c(B.java:1)", "d.E.f(E.java:2)"]
        );
    }

    #[test]
    fn resolver_accepts_full_table_then_overlapping_delta() {
        let mut s = StringInterner::new();
        s.intern("a");
        let delta = s.take_new().unwrap();
        s.intern("b");
        let full = s.full_table();
        let mut r = StringResolver::new();
        r.apply(&full).unwrap();
        r.apply(&delta).unwrap(); // already known: harmless
        assert_eq!(r.len(), 2);
        assert_eq!(r.resolve(2), "b");
    }

    #[test]
    fn resolver_fills_a_gap_with_placeholders() {
        let mut r = StringResolver::new();
        r.apply(&StringTable {
            sites: Vec::new(),
            first_id: 3,
            names: vec!["c".into()],
        })
        .unwrap();
        assert_eq!(r.resolve(3), "c");
        assert_eq!(r.resolve(1), "<lost name>");
    }

    #[test]
    fn a_huge_gap_or_table_is_refused_without_allocating_it() {
        let mut r = StringResolver::new();
        let err = r
            .apply(&StringTable {
                sites: Vec::new(),
                first_id: 4_000_000_000,
                names: vec!["x".into()],
            })
            .unwrap_err();
        assert!(err.to_string().contains("damaged or crafted"), "{err}");
        assert!(r.is_empty(), "nothing was filled");
        assert!(r
            .apply(&StringTable {
                sites: Vec::new(),
                first_id: (MAX_ID_GAP + 1) as u32,
                names: vec!["y".into()],
            })
            .is_ok());
        assert_eq!(r.resolve((MAX_ID_GAP + 1) as u32), "y");
    }
}
