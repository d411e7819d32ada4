//! Driving the path search (`paths/`): starting one when it is due (full, or focused on the
//! growth since the last), running it in slices between the worker's other work, ending it,
//! and running it to a deadline when the Java heap ran out. Separate because it has its own
//! schedule (`paths::Schedule`) beside the snapshots'.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use memcity_proto::v1::{snapshot::Trigger, OutOfMemory};

use super::classes::class_ids;
use super::schedule::POLL;
use super::Worker;
use crate::census::estimate::{age_bin, AgedFates, AGE_BINS};
use crate::log::debug;
use crate::paths;
use crate::sampling::Sampler;

/// The path search under way, its schedule, and what the last ones found and left for the next.
pub(super) struct Searches {
    /// The search under way (`paths/`), when one runs.
    pub(super) current: Option<paths::Search>,
    /// The last search finished, until a snapshot carries it.
    pub(super) found: Option<paths::Found>,
    pub(super) schedule: paths::Schedule,
    /// Weak references of samples the tracker freed while a search held them as targets:
    /// deleted when no search does (`delete_released`).
    pub(super) released_later: Vec<usize>,
    /// The search being started is a count out of turn (`search_step`): its targets include
    /// the samples born since the last GC.
    pub(super) recounting: bool,
    /// When each tracker generation began, to date samples (`paths::Sample::born_s`).
    pub(super) born_at: paths::Births,
    /// For focused searches: the first generation the last kept search (`keep_found`) did not
    /// look at (the last GC's as it started: younger samples are left out), the same of the
    /// search under way, and the roots the last kept one's finds were under.
    pub(super) from_gen: u32,
    pub(super) started_gen: u32,
    pub(super) preferred_roots: Vec<paths::RootKey>,
    /// What frames, JNI locals and monitors held at the last enumeration of the roots: the
    /// next search enters such a root only if its object is one of these (`Search::start`).
    pub(super) lasting_locals: paths::Identities,
    /// The next search lists the roots again (`keep_found`), and the one under way is that.
    pub(super) relist: bool,
    pub(super) relisting: bool,
    /// The tracker generation the last complete search ended at: the births since are the
    /// next one's verdicts for the estimates (`Estimator::set_search_count`).
    pub(super) counted_gen: u32,
    /// The tracker generation the search under way started at.
    pub(super) gen: u32,
    /// A focused search through the preferred roots found too few there: the growth went
    /// elsewhere, and a focused search through the statics and threads starts next, without
    /// waiting for its turn (a full search of a big heap may be a minute away).
    pub(super) refocus: bool,
}

impl Searches {
    /// `share`: the part of the pause budget searches may spend (the `paths` option).
    pub(super) fn new(share: f64) -> Searches {
        Searches {
            current: None,
            found: None,
            schedule: paths::Schedule::new(share),
            released_later: Vec::new(),
            recounting: false,
            born_at: paths::Births::default(),
            from_gen: 0,
            started_gen: 0,
            preferred_roots: Vec::new(),
            lasting_locals: Default::default(),
            relist: false,
            relisting: false,
            counted_gen: 0,
            gen: 0,
            refocus: false,
        }
    }
}

impl Worker {
    /// Runs the path search's next slice, or starts a search when one is due; returns how long
    /// the worker may sleep as far as the search is concerned.
    pub(super) fn search_step(&mut self) -> Duration {
        let Some(sampler) = self.sampler() else {
            return POLL;
        };
        if self.agent.options.paths.is_none() {
            return POLL;
        }
        let now = Instant::now();
        if self.searches.current.is_none() {
            return self.start_due_search(sampler, now);
        }
        if let Some(wait) = self.searches.schedule.slice_wait(now) {
            return wait;
        }
        let mut env = self.search_env();
        let filling = self.filling();
        let search = self.searches.current.as_mut().expect("a search under way");
        let outgrown = self
            .searches
            .schedule
            .outgrown(now, self.live_objects_published, filling)
            && search.found_so_far() >= paths::ENOUGH_TO_SHOW;
        if outgrown {
            search.interrupt(
                if filling {
                    "the heap began filling during the search: its finds so far stand, shown before the heap may run out"
                } else {
                    "the heap doubled during the search: its finds so far stand, and the next search starts from the bigger heap"
                }
                .to_string(),
            );
        }
        if outgrown || search.run(&mut env, paths::SLICE) {
            self.search_done(sampler, &mut env);
            POLL
        } else {
            self.searches.schedule.sliced(Instant::now());
            paths::SLICE_REST
        }
    }

    /// Which search is due now, if any: a full one (its rest over, or the heap doubled) first;
    /// else a refocus at once; a full one instead of a focused one to list the roots again and
    /// see which of the locals the last left out lasted (see `keep_found`), once, whatever it
    /// finds; and a full one to count again where the estimates rest on the last count and
    /// have moved far from it (generational ZGC). Starts it; returns how long to rest.
    fn start_due_search(&mut self, sampler: &'static Sampler, now: Instant) -> Duration {
        let live = sampler.tracker.in_use() as usize;
        let mut relisting = false;
        let due = match (
            std::mem::take(&mut self.searches.refocus),
            self.searches
                .schedule
                .due(now, live, self.live_objects_published),
        ) {
            (_, Some(paths::Due::Full)) => Some(paths::Due::Full),
            (true, _) => Some(paths::Due::Focused),
            (false, Some(_)) if self.searches.relist => {
                relisting = true;
                Some(paths::Due::Full)
            }
            (false, due) => due,
        };
        let moved = if due != Some(paths::Due::Full)
            && sampler.tracker.hold_limited()
            && self.searches.schedule.recount_allowed(now, live)
        {
            self.estimator.births_since_count(&sampler.tracker)
        } else {
            0.0
        };
        let recount = moved >= crate::census::estimate::RECOUNT_SHARE;
        if recount {
            debug!(
                "path search: a full one to count again: births since the last count add {:.0} % to a class's",
                moved * 100.0
            );
        }
        let due = if recount { Some(paths::Due::Full) } else { due };
        self.searches.recounting = recount;
        if due == Some(paths::Due::Full) {
            self.searches.relist = false;
            self.searches.relisting = relisting;
        }
        let Some(due) = due else {
            return self
                .searches
                .schedule
                .next_in(now)
                .unwrap_or(POLL)
                .clamp(Duration::from_millis(1), POLL);
        };
        self.refresh_classes();
        self.searches
            .schedule
            .started(now, self.live_objects_published, self.filling());
        self.searches.current = self.start_search(sampler, due, false);
        self.searches.schedule.sliced(Instant::now());
        if self.searches.current.is_none() {
            self.searches
                .schedule
                .ended(Instant::now(), Duration::ZERO, due);
        }
        paths::SLICE_REST
    }

    /// The search under way is done: what it found is kept, its counts go to the estimator,
    /// and the next snapshot carries it.
    fn search_done(&mut self, sampler: &'static Sampler, env: &mut paths::Env) {
        let search = self.searches.current.take().expect("a search under way");
        if crate::log::enabled(crate::log::Level::Debug) {
            let mut by: Vec<(u32, u64)> =
                search.found_by_root.iter().map(|(&r, &n)| (r, n)).collect();
            by.sort_by_key(|&(r, _)| r);
            debug!("path search: found per root (in search order): {by:?}");
        }
        let found = search.finish(env);
        self.delete_released(sampler);
        self.searches
            .schedule
            .ended(Instant::now(), found.cpu, found.kind());
        debug!(
            "path search: {} of {} samples reached through {} objects in {} ms on the worker ({} ms stopped for the roots; {} locals left out as a moment's){}",
            found.found,
            found.targets,
            found.visited,
            found.cpu.as_millis(),
            found.roots_pause.as_millis(),
            found.transient_locals,
            if found.incomplete.is_empty() { String::new() } else { format!("; {}", found.incomplete) }
        );
        if crate::log::enabled(crate::log::Level::Debug) {
            let missed: Vec<String> = found
                .missed
                .iter()
                .take(6)
                .map(|&(c, n, _)| format!("{n} {}", self.class_label(c)))
                .collect();
            debug!("path search: not reached: {}", missed.join(", "));
        }
        if !found.counted.is_empty() {
            self.take_search_counts(sampler, &found);
        }
        self.keep_found(found, paths::ENOUGH_TO_KEEP);
        // Published with the next snapshot: an estimate soon, when estimates run.
        self.clock.estimate_pending = true;
    }

    fn class_label(&self, class: u32) -> &str {
        self.classes
            .names
            .get(class as usize)
            .map_or("?", String::as_str)
    }

    /// A complete search's counts of classes become the estimator's base, with its verdicts on
    /// the births since the last count.
    fn take_search_counts(&mut self, sampler: &'static Sampler, found: &paths::Found) {
        let verdicts = search_verdicts(&sampler.tracker, found, self.searches.counted_gen);
        // A generation of its own: births from here on are the count's births since (with no
        // GC between two searches, the generation would not have moved, and the count's own
        // objects counted again as births).
        self.searches.counted_gen = sampler.tracker.advance();
        if crate::log::enabled(crate::log::Level::Debug) {
            let said: Vec<String> = found
                .counted
                .iter()
                .map(|&(class, n, _)| {
                    let v = crate::census::estimate::Fates::pooled(
                        verdicts.get(class as usize).into_iter().flatten(),
                    );
                    format!(
                        "{} {n} (births since the last count: {:.0} alive, {:.0} dead, {} samples)",
                        self.class_label(class),
                        v.alive,
                        v.dead,
                        v.samples
                    )
                })
                .collect();
            debug!("path search: counted {}", said.join(", "));
        }
        self.estimator.set_search_count(
            &found.counted,
            self.searches.gen,
            self.searches.counted_gen,
            verdicts,
        );
    }

    /// A search's finds become the newest paths: the next snapshot carries them, the next
    /// focused search looks under their roots, and their samples' holders are noted.
    ///
    /// A focused search that found too few to name a holder by leaves the last paths the
    /// newest (an empty tree would take the suspects' holders away until the next full
    /// search), and its roots no longer preferred: the growth went elsewhere, and the next
    /// search says where, with the same samples counted as recent: at once through the
    /// statics and threads when this one went through preferred roots, else a full one.
    ///
    /// One that found more, but fewer than `enough` (`paths::ENOUGH_TO_KEEP`), found where the
    /// growth is, too thinly to name its holder by: its roots become the preferred ones, and
    /// the last paths and the samples counted as recent stand, so that the next focused search
    /// looks for these again with those born since.
    ///
    /// A full search that left locals out as a moment's (see `paths::Search::start`) and
    /// missed many of its targets is followed by another full one at its turn, not a focused
    /// one: the leak may be in a frame's local made since the listing before (a list that
    /// `main` fills from then on), which the next listing finds lasting; focused searches list
    /// no roots. Once: a heap of maps built and dropped in locals misses its samples in them at
    /// every search.
    fn keep_found(&mut self, found: paths::Found, enough: u64) {
        self.note_holders(&found);
        if !found.focused && !std::mem::take(&mut self.searches.relisting) {
            self.searches.relist = found.transient_locals > 0
                && (found.found as f64) < paths::ENOUGH_FOUND * found.targets as f64;
        }
        if found.focused && found.found < paths::ENOUGH_TO_SHOW {
            self.searches.refocus = !self.searches.preferred_roots.is_empty();
            self.searches.preferred_roots.clear();
            return;
        }
        self.searches.preferred_roots = found.top_roots.clone();
        if found.focused && found.found < enough {
            return;
        }
        self.searches.from_gen = self.searches.started_gen;
        self.searches.found = Some(found);
    }

    /// What a path search borrows of the JVM: the worker's JNIEnv and class ids.
    fn search_env(&self) -> paths::Env {
        paths::Env {
            jvmti: self.agent.jvmti,
            jni: self.jni,
            class_id: Box::new(class_ids(self.agent)),
        }
    }

    /// Starts a search for the live samples not allocated by memcity's own threads: all that
    /// survived a GC (a full search), or, between full ones, only those born since the last
    /// kept search started (a focused search: the growth's objects, looked for under the roots
    /// that held the last search's finds alone, or under the application's statics and every
    /// thread when none did, newest first, so that it costs what the growth added rather than
    /// the heap's size; roots it never saw hold nothing new until the next full search says
    /// so).
    ///
    /// A focused search with too few samples born since the last one starts nothing (the next
    /// one waits for more), or, with `or_full`, a full search instead.
    fn start_search(
        &mut self,
        sampler: &'static Sampler,
        due: paths::Due,
        or_full: bool,
    ) -> Option<paths::Search> {
        let last_gc = sampler.tracker.last_gc();
        let LiveTargets {
            young,
            mut survivors,
            mut recent,
        } = self.live_targets(sampler, last_gc);
        let focused = due == paths::Due::Focused && recent.len() >= paths::MIN_TARGETS;
        if due == paths::Due::Focused && !focused && !or_full {
            return None;
        }
        let scope = if !focused {
            paths::Scope::Full
        } else if self.searches.preferred_roots.is_empty() {
            paths::Scope::StaticsAndThreads
        } else {
            paths::Scope::Preferred
        };
        let (samples, preferred): (Vec<paths::Sample>, &[paths::RootKey]) = if focused {
            // The youngest too: a focused search walks newest first and ends once gone dry
            // (`paths::gone_dry`), so garbage among them costs it nothing, and without them a
            // fast leak's newest objects (all born since the last GC) would be a stretch of
            // nothing to find before its first find.
            recent.extend(young);
            (recent, &self.searches.preferred_roots)
        } else {
            survivors.extend(recent);
            // A count out of turn is for the births since the last one: with no GC since
            // (none came for 14 s on a server's 1 GB heap) every one of them is young, and
            // left out it judged none of them and counted nothing new.
            if survivors.len() < paths::MIN_TARGETS || std::mem::take(&mut self.searches.recounting)
            {
                survivors.extend(young);
            }
            (survivors, &[])
        };
        if crate::log::enabled(crate::log::Level::Debug) {
            let mut by: std::collections::BTreeMap<u32, u32> = Default::default();
            for t in &samples {
                *by.entry(t.born_s).or_default() += 1;
            }
            debug!(
                "path search: {} targets ({scope:?}), by second taken: {by:?}; generation {} last GC {}",
                samples.len(),
                sampler.tracker.generation(),
                last_gc
            );
        }
        // The first generation this search does not look at: samples born since the last GC
        // are left out as young (above), and the next focused search looks for them with
        // those born later. From the search's own start instead, the samples born between
        // that GC and this start would wait for the next full search: on Parallel, a steady
        // server's buffers promoted in the meantime went unlooked at for the full search's
        // whole rest.
        self.searches.started_gen = last_gc;
        // A generation of its own from the start: what is made while the search runs it may
        // or may not count (`Estimator::set_search_count`).
        self.searches.gen = sampler.tracker.advance();
        let mut env = self.search_env();
        let facts = paths::ClassFacts {
            names: &self.classes.names,
            application: &self.classes.application,
        };
        let used = self.heap_used();
        let allowed = or_full || self.may_list_roots(used);
        let mut search = paths::Search::start(
            &mut env,
            &facts,
            &samples,
            self.live_objects_published,
            preferred,
            scope,
            paths::Listing {
                allowed,
                lasting: &self.searches.lasting_locals,
            },
        )?;
        if let Some(locals) = search.locals.take() {
            self.searches.lasting_locals = locals;
        }
        let pause = search.roots_pause();
        if !pause.is_zero() {
            self.clock.budget.spend(pause);
            self.clock.roots_stop.record(pause, used.unwrap_or(0));
        }
        Some(search)
    }

    /// The live samples as targets, memcity's own left out: born since the last GC (often
    /// garbage no GC has met yet, which no path reaches and which would keep the search from
    /// stopping early), born since the last kept search, and the older survivors.
    /// `last_gc`: the tracker's generation at the last GC, read once for the search (it is also
    /// where the search's own look ends, `Searches::started_gen`).
    fn live_targets(&self, sampler: &'static Sampler, last_gc: u32) -> LiveTargets {
        let ours = sampler.memcity_threads();
        let mut targets = LiveTargets::default();
        let from_gen = self.searches.from_gen;
        sampler.tracker.for_each_live(|slot, sample, weak| {
            if crate::sampling::is_memcity(&ours, sample.thread) {
                return;
            }
            let target = paths::Sample {
                slot,
                born: sample.birth.allocated,
                weak,
                identity: sample.identity,
                class: sample.class,
                weight: sample.weight,
                born_s: self.searches.born_at.seconds(sample.born),
                recent: sample.born >= from_gen,
                settled: sample.born < last_gc,
            };
            if !target.settled {
                targets.young.push(target);
            } else if sample.born >= from_gen {
                targets.recent.push(target);
            } else {
                targets.survivors.push(target);
            }
        });
        targets
    }

    /// Whether this search may list the roots: that stops the JVM, so only within the agent's
    /// budget for stops, as walks are (`used`: the heap's used bytes, which predict the stop).
    fn may_list_roots(&self, used: Option<u64>) -> bool {
        let predicted = used.and_then(|used| self.clock.roots_stop.predict(used));
        let allowed = predicted.is_none_or(|cost| self.clock.budget.affords(Instant::now(), cost));
        if !allowed {
            debug!(
                "path search: the roots not listed: predicted {} ms, credit short or past max_pause",
                predicted.unwrap_or_default().as_millis()
            );
        }
        allowed
    }

    /// Ends a search under way (the session ends): its references go, its findings too.
    pub(super) fn end_search(&mut self) {
        if let Some(search) = self.searches.current.take() {
            let mut env = self.search_env();
            drop(search.finish(&mut env));
        }
        if let Some(sampler) = self.sampler() {
            self.delete_released(sampler);
        }
    }

    /// The Java heap ran out (`oom.rs`): the failing thread waits while this takes the heap's
    /// last snapshot. The path search under way, or a new one, runs to the deadline without
    /// rests (the paths at the moment of the error are the answer the user needs most); then
    /// an estimate carries its paths and the error.
    pub(super) fn out_of_memory(&mut self) {
        let request = self
            .agent
            .oom
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(request) = request else {
            return;
        };
        let deadline = request.at + request.wait.mul_f64(crate::oom::SEARCH_SHARE_OF_WAIT);
        let mut search_finished = false;
        if let (Some(sampler), Some(_)) = (self.sampler(), self.agent.options.paths) {
            // A JVM exiting meanwhile gets the paths found by then, not a new search.
            if self.searches.current.is_none() && !self.agent.phase.get().stopping() {
                self.refresh_classes();
                // The quickest answer: the roots that held the growth, if any; else all.
                let due = if self.searches.preferred_roots.is_empty() {
                    paths::Due::Full
                } else {
                    paths::Due::Focused
                };
                self.searches.current = self.start_search(sampler, due, true);
            }
            let mut env = self.search_env();
            if let Some(mut search) = self.searches.current.take() {
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if self.agent.phase.get().stopping() {
                        search.interrupt(
                            "the search stopped as the JVM exited (another thread's uncaught OutOfMemoryError)"
                                .to_string(),
                        );
                        break;
                    }
                    if left.is_zero() {
                        search.interrupt(format!(
                            "the search stopped at the OutOfMemoryError's deadline (oom_wait={} ms)",
                            request.wait.as_millis()
                        ));
                        break;
                    }
                    if search.run(&mut env, left.min(paths::SLICE * 10)) {
                        search_finished = true;
                        break;
                    }
                }
                let found = search.finish(&mut env);
                self.delete_released(sampler);
                self.searches
                    .schedule
                    .ended(Instant::now(), found.cpu, found.kind());
                // Threads failing to allocate force full GCs one after another, and each JNI
                // read waits for them: a search at the error may reach nothing. Then the last
                // finished search's paths stay the newest, rather than an empty tree.
                let keep = search_finished || found.found > 0;
                debug!(
                    "path search at the OutOfMemoryError: {} of {} samples reached through {} objects in {} ms",
                    found.found,
                    found.targets,
                    found.visited,
                    found.cpu.as_millis()
                );
                // At the error, whatever names a holder is kept: there is no next search.
                if keep {
                    self.keep_found(found, paths::ENOUGH_TO_SHOW);
                }
            }
        }
        self.out_of_memory = Some(OutOfMemory {
            message: request.message,
            thread: request.thread,
            search_finished,
            time_ms: request.at.duration_since(self.agent.start).as_millis() as u64,
        });
        self.estimate_snapshot(Trigger::OutOfMemory);
        self.agent
            .oom_state
            .store(crate::oom::OOM_DONE, Ordering::Release);
    }
}

/// Per class, the fates a search through every root judged of the samples born at or after
/// generation `from` (since the search before it), by the age they had then
/// (`estimate::AgedFates`): those it reached alive, those it missed dead, by the objects they
/// stand for. A sample whose slot was taken again meanwhile is left out. The samples are
/// counted as many as their weights make them worth, `(Σw)² / Σw²`: a type sampled by bytes
/// mixes small objects, each standing for thousands, with big ones standing for a few, and the
/// share by weight rests on the few heavy ones (`byte[]`: a leak's 24-byte names beside
/// 256-byte scratch arrays).
fn search_verdicts(
    tracker: &crate::sampling::tracker::Tracker,
    found: &paths::Found,
    from: u32,
) -> Vec<AgedFates> {
    let now_ms = tracker.ms();
    let mut verdicts: Vec<AgedFates> = Vec::new();
    let mut squares: Vec<[f64; AGE_BINS]> = Vec::new();
    for (samples, alive) in [(&found.found_samples, true), (&found.missed_samples, false)] {
        for &(slot, born) in samples {
            let Some(sample) = tracker.get(slot) else {
                continue;
            };
            if sample.birth.allocated != born || sample.born < from {
                continue;
            }
            let class = sample.class as usize;
            if verdicts.len() <= class {
                verdicts.resize(class + 1, Default::default());
                squares.resize(class + 1, Default::default());
            }
            let bin = age_bin(now_ms.saturating_sub(sample.birth.ms));
            let fates = &mut verdicts[class][bin];
            if alive {
                fates.alive += sample.weight;
            } else {
                fates.dead += sample.weight;
            }
            squares[class][bin] += sample.weight * sample.weight;
        }
    }
    for (aged, squares) in verdicts.iter_mut().zip(squares) {
        for (fates, square) in aged.iter_mut().zip(squares) {
            let weight = fates.alive + fates.dead;
            if square > 0.0 {
                fates.samples = weight * weight / square;
            }
        }
    }
    verdicts
}

/// The live samples a search may look for, by age (see `Worker::live_targets`).
#[derive(Default)]
struct LiveTargets {
    young: Vec<paths::Sample>,
    survivors: Vec<paths::Sample>,
    recent: Vec<paths::Sample>,
}
