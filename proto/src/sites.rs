//! An allocation site's frames and its name: one rule for the agent that names sites and every
//! reader that takes the frames back out of an older recording's names.

/// Between two frames of a site's name.
pub const SEPARATOR: &str = " <- ";
/// Where library frames were skipped, in a site's name.
pub const SKIPPED: &str = "...";

/// A site's frames, top (the allocating method) first; `skipped`: library frames were skipped
/// between the last frame and those above it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SiteFrames<S> {
    pub frames: Vec<S>,
    pub skipped: bool,
}

impl<S: AsRef<str>> SiteFrames<S> {
    /// The site's name, its frames joined: what a `site` level's groups are keyed by.
    pub fn name(&self) -> String {
        let mut name = String::new();
        let last = self.frames.len().saturating_sub(1);
        for (i, frame) in self.frames.iter().enumerate() {
            if i > 0 {
                name.push_str(SEPARATOR);
                if self.skipped && i == last {
                    name.push_str(SKIPPED);
                    name.push_str(SEPARATOR);
                }
            }
            name.push_str(frame.as_ref());
        }
        name
    }

    /// The frames as a name lists them, `SKIPPED` where library frames were skipped.
    pub fn as_listed(&self) -> Vec<&str> {
        let mut listed: Vec<&str> = self.frames.iter().map(AsRef::as_ref).collect();
        if self.skipped && listed.len() > 1 {
            listed.insert(listed.len() - 1, SKIPPED);
        }
        listed
    }
}

impl<'a> SiteFrames<&'a str> {
    /// As [`as_listed`](Self::as_listed), the frames borrowed from where they live.
    pub fn listed(&self) -> Vec<&'a str> {
        let mut listed = self.frames.clone();
        if self.skipped && listed.len() > 1 {
            listed.insert(listed.len() - 1, SKIPPED);
        }
        listed
    }
}

/// The frames of a site's name as [`SiteFrames::name`] writes it: for recordings whose string
/// tables carry no sites, and for names memcity gives (`(unsampled)`), one frame.
pub fn split(name: &str) -> SiteFrames<&str> {
    let mut frames: Vec<&str> = name.split(SEPARATOR).collect();
    let skipped = frames.len() > 2 && frames[frames.len() - 2].trim() == SKIPPED;
    if skipped {
        frames.remove(frames.len() - 2);
    }
    SiteFrames { frames, skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_splits_back_into_its_frames() {
        for (frames, skipped) in [
            (vec!["a.B.c(B.java:1)"], false),
            (vec!["a.B.c(B.java:1)", "a.D.e(D.java:2)"], false),
            (
                vec![
                    "java.lang.StringConcatHelper.newString(StringConcatHelper.java:9)",
                    "App.run(App.java:12)",
                ],
                true,
            ),
            (
                vec![
                    "x.Y.z(Unknown Source)",
                    "x.Y.w(Y.java)",
                    "App.main(App.java:3)",
                ],
                true,
            ),
        ] {
            let site = SiteFrames { frames, skipped };
            let name = site.name();
            assert_eq!(split(&name), site, "{name}");
        }
    }

    #[test]
    fn a_name_shows_skipped_frames_before_the_application_frame() {
        let site = SiteFrames {
            frames: vec![
                "java.util.Arrays.copyOf(Arrays.java:3)",
                "App.run(App.java:12)",
            ],
            skipped: true,
        };
        assert_eq!(
            site.name(),
            "java.util.Arrays.copyOf(Arrays.java:3) <- ... <- App.run(App.java:12)"
        );
        assert_eq!(
            site.as_listed(),
            [
                "java.util.Arrays.copyOf(Arrays.java:3)",
                "...",
                "App.run(App.java:12)"
            ]
        );
        assert_eq!(split("(unsampled)").frames, ["(unsampled)"]);
    }
}
