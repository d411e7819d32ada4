//! The city being shown and its plan: the model the snapshots fill, where each group stands
//! (the stable live plan, or a replay's plan made once), and a change of plan, animated so the
//! buildings move to their new lots instead of jumping.

use std::borrow::Cow;

use memcity_city::layout::{self, CityLayout, LayoutConfig, LiveLayout, Relayout};
use memcity_city::model::CityModel;

/// Seconds a re-layout takes on screen.
const RELAYOUT_SECONDS: f64 = 0.8;

/// The city being shown, and how it is laid out.
pub struct City {
    pub model: CityModel,
    /// Live sessions: the stable live plan. Replays: `None`, and `layout` is the papers' plan.
    live: Option<Box<LiveLayout>>,
    layout: CityLayout,
    /// A change of plan being animated: the change and how far along it is (0 to 1).
    pub animation: Option<(Relayout, f64)>,
}

impl City {
    pub fn replay(model: CityModel, config: &LayoutConfig) -> Self {
        let layout = layout::layout(&model, config);
        Self {
            model,
            live: None,
            layout,
            animation: None,
        }
    }

    pub fn live(config: LayoutConfig) -> Self {
        Self {
            model: CityModel::new(),
            live: Some(Box::new(LiveLayout::new(config))),
            layout: CityLayout::default(),
            animation: None,
        }
    }

    /// The plan to draw now: borrowed, except mid-animation, when the in-between plan is built.
    pub fn plan(&self) -> Cow<'_, CityLayout> {
        match (&self.animation, &self.live) {
            (Some((relayout, progress)), _) => Cow::Owned(relayout.at(*progress)),
            (None, Some(live)) => Cow::Borrowed(live.layout()),
            (None, None) => Cow::Borrowed(&self.layout),
        }
    }

    fn now_ms(&self) -> u64 {
        self.model.frames().last().map_or(0, |f| f.time_ms)
    }

    /// Lays out again for new layout settings, animating from the plan on screen.
    pub fn relayout(&mut self, config: LayoutConfig) {
        let now = self.now_ms();
        let on_screen = self.plan().into_owned();
        let mut change = match &mut self.live {
            Some(live) => live.set_config(&self.model, config, now),
            None => {
                let new = layout::layout(&self.model, &config);
                let old = std::mem::replace(&mut self.layout, new.clone());
                Relayout { old, new }
            }
        };
        // Start from where things are drawn, even if a previous animation was under way.
        change.old = on_screen;
        self.animation = Some((change, 0.0));
    }

    /// A snapshot arrived: the live plan may need to grow.
    pub fn appended(&mut self) {
        let now = self.now_ms();
        if let Some(live) = &mut self.live {
            if let Some(change) = live.update(&self.model, now) {
                self.animation = Some((change, 0.0));
            }
        }
    }

    /// Moves a re-layout animation on by `dt` seconds.
    pub fn advance(&mut self, dt: f64) {
        if let Some((_, progress)) = &mut self.animation {
            *progress += dt / RELAYOUT_SECONDS;
            if *progress >= 1.0 {
                self.animation = None;
            }
        }
    }
}
