//! The string table: class, package, site and thread names travel once and are referenced by id.

use std::collections::HashMap;

use crate::v1::StringTable;

/// Assigns ids to names on the sending side and hands out what is new since the last call.
#[derive(Debug, Default)]
pub struct StringInterner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    /// Index into `names` of the first entry not yet handed out by [`StringInterner::take_new`].
    sent: usize,
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
        if self.sent == self.names.len() {
            return None;
        }
        let table = StringTable {
            first_id: self.sent as u32 + 1,
            names: self.names[self.sent..].to_vec(),
        };
        self.sent = self.names.len();
        Some(table)
    }

    /// Every entry assigned so far, for a subscriber that joins late.
    pub fn full_table(&self) -> StringTable {
        StringTable {
            first_id: 1,
            names: self.names.clone(),
        }
    }
}

/// Resolves ids on the receiving side.
#[derive(Debug, Default, Clone)]
pub struct StringResolver {
    /// `None`: an id no table gave (a lost frame's), shown as a placeholder.
    names: Vec<Option<String>>,
}

/// Ids a table may skip past what is known. A lost frame skips the names one snapshot
/// introduced (thousands); a table far past that is damaged or crafted, and filling the gap
/// would cost memory for nothing (a `first_id` of 4e9 asked for hundreds of gigabytes).
pub const MAX_ID_GAP: usize = 1 << 20;
/// Names a session may hold in all.
pub const MAX_NAMES: usize = 1 << 26;

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
        Ok(())
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
                first_id: 4_000_000_000,
                names: vec!["x".into()],
            })
            .unwrap_err();
        assert!(err.to_string().contains("damaged or crafted"), "{err}");
        assert!(r.is_empty(), "nothing was filled");
        assert!(r
            .apply(&StringTable {
                first_id: (MAX_ID_GAP + 1) as u32,
                names: vec!["y".into()],
            })
            .is_ok());
        assert_eq!(r.resolve((MAX_ID_GAP + 1) as u32), "y");
    }
}
