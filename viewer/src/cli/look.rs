//! How the city is drawn, as the window's commands take it.

use std::time::Duration;

use memcity_viewer::app;
use memcity_viewer::controls::Settings;

use super::values::{lots, period, Size};

/// How the city is drawn; the settings panel (Tab) changes the same things in the window.
#[derive(clap::Args, Clone)]
pub struct Look {
    /// Size buildings by live objects, by bytes, or by the bytes they keep alive (retained: heap dumps only)
    #[arg(long, value_enum, default_value = "objects")]
    metric: MetricArg,
    /// How a size maps to an area
    #[arg(long, value_enum, default_value = "sqrt")]
    scaling: ScalingArg,
    /// How lots are cut (treemap tiling)
    #[arg(long, value_enum, default_value = "squarify")]
    tiling: TilingArg,
    /// Lots per parent: the N largest children get one (Memory Cities' pruning)
    #[arg(long, default_value_t = 20, value_parser = lots)]
    children: usize,
    /// The N strongest growers stay solid, the rest fade (0: every building solid)
    #[arg(long, default_value_t = memcity_city::mapping::DEFAULT_OPAQUE)]
    solid: usize,
    /// Seconds per snapshot when playing
    #[arg(long, default_value_t = memcity_city::timetravel::DEFAULT_PERIOD, value_parser = period)]
    period: f64,
    /// Open with the settings panel shown
    #[arg(long)]
    settings: bool,
    /// What the window shows: the 3D city, the grouping tree as an icicle or a sunburst, or the
    /// timeline of small trees (key V switches)
    #[arg(long, value_enum, default_value = "city")]
    view: app::ViewKind,
    /// Icicle and sunburst: start drilled down into this group (names from the top level down,
    /// separated by '/')
    #[arg(long, value_name = "GROUP")]
    drill: Option<String>,
    /// Icicle and sunburst: the order of siblings, fixed over the session (most grown over the
    /// window first, or largest at its start or end)
    #[arg(long, value_enum, default_value = "growth")]
    order: OrderArg,
    /// Icicle and sunburst: scale each snapshot's tree by its heap against the largest, so
    /// growth shows as length (key H)
    #[arg(long)]
    heap_scaled: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OrderArg {
    Growth,
    Start,
    End,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MetricArg {
    Objects,
    Bytes,
    Retained,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ScalingArg {
    Sqrt,
    Linear,
    Quadratic,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TilingArg {
    Squarify,
    Binary,
    Slice,
    Dice,
    SliceDice,
}

impl Look {
    /// Window options with these settings, a window of `size` and every script option off;
    /// commands set the ones they have.
    pub fn window(&self, size: Size) -> app::WindowOptions {
        app::WindowOptions {
            camera: app::CameraView::Overview,
            group_by: None,
            view: self.view,
            drill: self.drill.clone(),
            scaled: self.heap_scaled,
            picks: Vec::new(),
            at: None,
            screenshot: None,
            exit_after: None,
            wait: Duration::from_secs(60),
            select: None,
            context: None,
            bench_frames: None,
            page_layout: false,
            settings: self.settings(),
            settings_open: self.settings,
            hud: false,
            width: size.width,
            height: size.height,
        }
    }

    fn settings(&self) -> Settings {
        use memcity_city::layout::Scaling;
        use memcity_city::model::Metric;
        use memcity_city::treemap::Tiling;
        let mut settings = Settings {
            metric: match self.metric {
                MetricArg::Objects => Metric::Objects,
                MetricArg::Bytes => Metric::Bytes,
                MetricArg::Retained => Metric::Retained,
            },
            scaling: match self.scaling {
                ScalingArg::Sqrt => Scaling::Sqrt,
                ScalingArg::Linear => Scaling::Linear,
                ScalingArg::Quadratic => Scaling::Quadratic,
            },
            tiling: match self.tiling {
                TilingArg::Squarify => Tiling::Squarify,
                TilingArg::Binary => Tiling::Binary,
                TilingArg::Slice => Tiling::Slice,
                TilingArg::Dice => Tiling::Dice,
                TilingArg::SliceDice => Tiling::SliceDice,
            },
            children: self.children,
            period: self.period,
            order: match self.order {
                OrderArg::Growth => memcity_city::tree2d::SortBy::Growth,
                OrderArg::Start => memcity_city::tree2d::SortBy::Start,
                OrderArg::End => memcity_city::tree2d::SortBy::End,
            },
            ..Default::default()
        };
        settings.opacity.enabled = self.solid > 0;
        settings.opacity.opaque = self.solid.max(1);
        settings
    }
}
