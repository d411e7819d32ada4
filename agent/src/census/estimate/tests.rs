use super::*;

fn anchor(tracker: &Tracker, objects: Vec<u64>, bytes: Vec<u64>) -> Anchor {
    Anchor {
        seq: 0,
        generation: tracker.generation(),
        total_objects: objects.iter().sum(),
        objects,
        bytes,
        references: IntMap::default(),
    }
}

#[test]
fn without_change_the_estimate_is_the_anchor() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.advance(); // the walk's generation
    let a = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.mark_seen(a, t.generation());
    e.set_anchor(anchor(&t, vec![0, 50, 7], vec![0, 400, 70]));
    t.advance();
    let est = e.estimate(&t, 3, None);
    assert_eq!(est.objects, [0, 50, 7]);
    assert_eq!(est.bytes, [0, 400, 70]);
    assert_eq!(est.variance[1], (0.0, 0.0), "no churn, no error");
    assert_eq!(
        est.sampled.values().map(|c| c.objects).sum::<u64>(),
        1,
        "the anchor's sample still splits sites"
    );
}

#[test]
fn births_add_and_anchor_deaths_subtract_with_their_variance() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.advance();
    let old = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    let garbage = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.mark_seen(old, t.generation());
    e.set_anchor(anchor(&t, vec![0, 50], vec![0, 400]));
    t.advance();
    // Born after the walk: two samples of class 1 (weight 10), one of a new class 2.
    t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.track(2, 2, 1, 4.0, 16, 0, 0, 1).unwrap();
    // The anchor's sample dies, and so does the garbage (which was never counted).
    t.died(old);
    t.died(garbage);
    // Births count once a GC has passed over them.
    let before_gc = e.estimate(&t, 2, None);
    assert_eq!(before_gc.objects, [0, 50 - 10]);
    t.gc_finished();
    let est = e.estimate(&t, 2, None);
    assert_eq!(est.objects, [0, 50 + 20 - 10, 4]);
    assert_eq!(est.bytes, [0, 400 + 160 - 80, 64]);
    // Three samples of weight 10 in the two sums: 3 * 10 * 9.
    assert!((est.variance[1].0 - 270.0).abs() < 1e-9);
    assert!((est.variance[2].0 - 12.0).abs() < 1e-9);
    assert_eq!(est.sampled.values().map(|c| c.objects).sum::<u64>(), 3);
    // Booked once: the dead slots are freed and a second estimate agrees.
    let again = e.estimate(&t, 2, None);
    assert_eq!(again.objects, est.objects);
    assert_eq!(t.in_use(), 3);
}

#[test]
fn estimates_never_go_negative_and_without_an_anchor_count_every_sample() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.track(1, 1, 1, 32.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    let est = e.estimate(&t, 2, None);
    assert_eq!(est.objects, [0, 32]);
    t.advance();
    let s = t.track(1, 1, 1, 1000.0, 8, 0, 0, 1).unwrap();
    t.mark_seen(s, t.generation());
    e.set_anchor(anchor(&t, vec![0, 3], vec![0, 24]));
    t.died(s);
    assert_eq!(e.estimate(&t, 2, None).objects, [0, 0]);
}

#[test]
fn a_gc_count_corrects_the_estimate_and_its_error() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 100], vec![0, 800]));
    t.advance();
    t.track(1, 1, 1, 50.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    let before = e.estimate(&t, 2, None);
    assert_eq!(before.objects[1], 150);
    // The GC counted 130 when the estimate said 150.
    let then = (before.objects[1], before.bytes[1], before.variance[1]);
    assert_eq!(before.unconfirmed[1], (50.0, 400.0));
    e.shift_by(
        1,
        130.0 - then.0 as f64,
        1040.0 - then.1 as f64,
        then.2,
        before.last_gc,
    );
    e.note_gc_count(42);
    let after = e.estimate(&t, 2, None);
    assert_eq!((after.objects[1], after.bytes[1]), (130, 1040));
    assert_eq!(
        after.unconfirmed[1],
        (0.0, 0.0),
        "the count's marking met them"
    );
    assert_eq!(
        after.variance[1],
        (0.0, 0.0),
        "only churn since the count is uncertain"
    );
    assert_eq!(e.gc_counted(), (1, 42));
    // Later births still add, with their variance, once through a GC.
    t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    let later = e.estimate(&t, 2, None);
    assert_eq!(later.objects[1], 140);
    assert!((later.variance[1].0 - 90.0).abs() < 1e-9);
    assert_eq!(later.unconfirmed[1].0, 10.0, "born after the count");
    // A walk starts over.
    e.set_anchor(anchor(&t, vec![0, 7], vec![0, 56]));
    assert_eq!(e.gc_counted().0, 0);
}

#[test]
fn births_no_old_marking_has_met_are_unconfirmed_until_one_has() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.advance();
    let kept = t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.mark_seen(kept, t.generation());
    e.set_anchor(anchor(&t, vec![0, 30], vec![0, 240]));
    t.advance();
    // Promoted before a canary was let go: the one that dies stays counted until an old
    // marking clears its reference.
    let promoted = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    let promoted_dead = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    let let_go = t.generation();
    let young = t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    let est = e.estimate(&t, 2, None);
    assert_eq!(est.objects[1], 60);
    assert_eq!(
        est.unconfirmed[1],
        (30.0, 240.0),
        "every birth since the anchor"
    );
    assert_eq!(
        est.sampled.values().map(|c| c.unconfirmed).sum::<f64>(),
        30.0,
        "split by sample key for sites and threads"
    );
    assert_eq!(
        est.variance[1].0, 270.0,
        "the sampling error is stated apart"
    );
    // A marking that began after the canary was let go: it cleared the dead one, and the
    // births before the canary are confirmed; the young one is not.
    t.died(promoted_dead);
    e.set_confirmed(let_go);
    let est = e.estimate(&t, 2, None);
    assert_eq!(est.objects[1], 50);
    assert_eq!(est.unconfirmed[1], (10.0, 80.0));
    // The point never goes back, and the anchor's sample is never unconfirmed.
    e.set_confirmed(0);
    assert_eq!(e.estimate(&t, 2, None).unconfirmed[1].0, 10.0);
    let _ = (promoted, young);
}

/// The path search walks from the GC roots: a sample it reached is alive, and its growth
/// confirmed at once, with no old-generation marking since (`LinkedListLeak` at the
/// agent's defaults was grey until one came).
#[test]
fn a_sample_the_path_search_reached_is_confirmed_without_a_marking() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 0], vec![0, 0]));
    t.advance();
    let reached = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    let unreached = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    t.gc_finished();
    assert_eq!(e.estimate(&t, 2, None).unconfirmed[1], (20.0, 160.0));
    let born = t.get(reached).unwrap().birth.allocated;
    t.set_holder(reached, born, 7, 1, t.ms());
    let est = e.estimate(&t, 2, None);
    assert_eq!(
        est.unconfirmed[1],
        (10.0, 80.0),
        "only the one no search reached"
    );
    assert_eq!(
        est.objects[1], 20,
        "the count is the same, only its doubt changes"
    );
    // A search that missed another sample since taken into the slot does not end this one.
    t.unreached(reached, born + 1);
    assert_eq!(e.estimate(&t, 2, None).objects[1], 20);
    // A later search through every root missed both: perhaps moved under the search (a
    // map's resize), so they stand; missed by the next one too, they are garbage, counted
    // no more, though no marking cleared their weak references.
    let other = t.get(unreached).unwrap().birth.allocated;
    t.unreached(reached, born);
    t.unreached(unreached, other);
    assert_eq!(e.estimate(&t, 2, None).objects[1], 20, "one miss");
    // A search that reaches one between two misses starts its count again.
    t.set_holder(reached, born, 7, 1, t.ms());
    t.unreached(reached, born);
    t.unreached(unreached, other);
    assert_eq!(
        e.estimate(&t, 2, None).objects[1],
        10,
        "missed twice in a row"
    );
    t.unreached(reached, born);
    let est = e.estimate(&t, 2, None);
    assert_eq!((est.objects[1], est.unconfirmed[1]), (0, (0.0, 0.0)));
}

/// Generational ZGC: a class a complete search counted is its count, its births since
/// that a search reached, and its other births since at the share of the births the
/// search judged alive (a ring's dead arrays stand, their weak references kept, and were
/// counted whole); the count splits by site as the samples it reached do. A walk, newer,
/// ends it; elsewhere standing samples count as before.
#[test]
fn where_young_collections_keep_referents_a_search_count_is_the_base() {
    let t = Tracker::new(64);
    let mut e = Estimator::default();
    // The hold limit is how the tracker knows young collections keep referents.
    t.set_hold_limit(1 << 30);
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 0, 0], vec![0, 0, 0]));
    t.advance();
    // Ten samples of 8 bytes, each for 10 objects: two a search reached at sites 2 and 3,
    // eight dead but standing.
    let mut before = Vec::new();
    for site in [2, 3, 4, 4, 4, 4, 4, 4, 4, 4] {
        before.push(t.track(1, site, 1, 10.0, 8, 0, 0, 1).unwrap());
    }
    t.gc_finished();
    t.gc_finished();
    for &id in &before[..2] {
        let born = t.get(id).unwrap().birth.allocated;
        t.set_holder(id, born, 7, 1, t.ms());
    }
    assert_eq!(
        e.estimate(&t, 2, None).objects[1],
        100,
        "standing, all of them"
    );
    // The search counted 25 reachable and judged two of ten alive.
    let mut judged = AgedFates::default();
    judged[0] = Fates {
        alive: 20.0,
        dead: 80.0,
        samples: 10.0,
    };
    let verdicts = vec![AgedFates::default(), judged];
    // One made while it ran (site 7): perhaps in its count, perhaps not.
    let started = t.advance();
    t.track(1, 7, 1, 10.0, 8, 0, 0, 1).unwrap();
    e.set_search_count(&[(1, 25, 0.0)], started, t.advance(), verdicts);
    // Since: one birth a search reached, four judged by nothing.
    let known = t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    for _ in 0..4 {
        t.track(1, 5, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    t.gc_finished();
    let born = t.get(known).unwrap().birth.allocated;
    t.set_holder(known, born, 7, 1, t.ms());
    let est = e.estimate(&t, 2, None);
    let pooled = (0.2 * 10.0 + 0.5) / 11.0;
    let m = (0.2 * 10.0 + pooled * CLASS_PRIOR_SAMPLES) / (10.0 + CLASS_PRIOR_SAMPLES);
    let since = 10.0 + 40.0 * m + 10.0 * m / 2.0;
    assert_eq!(est.objects[1], (25.0 + since).round() as u64);
    assert_eq!(est.bytes[1], ((25.0 + since) * 8.0).round() as u64);
    assert!((est.unconfirmed[1].0 - 45.0 * m).abs() < 1e-9);
    // Its error spans none to all of the one made during the search.
    assert!(est.variance[1].0 >= (5.0 * m / 1.96).powi(2));
    // By site: the count as the reached split it (12.5 each at sites 2 and 3), the birth
    // reached since at site 2, the unjudged at site 5; the dead at site 4 nowhere.
    let weight = |site: u32| {
        est.sampled
            .iter()
            .filter(|((c, k), _)| *c == 1 && site_of(*k) == site)
            .map(|(_, n)| n.weight)
            .sum::<f64>()
    };
    assert!((weight(2) - 22.5).abs() < 1e-9, "{}", weight(2));
    assert!((weight(3) - 12.5).abs() < 1e-9);
    assert_eq!(weight(4), 0.0);
    assert!((weight(5) - 40.0 * m).abs() < 1e-9);
    assert!((weight(7) - 5.0 * m).abs() < 1e-9);
    // A class no search counted: its births since the anchor that no search reached count
    // at the share the searches judged (its own none: every class's), and one a search
    // through every root missed not at all.
    let other: Vec<_> = (0..3)
        .map(|_| t.track(2, 6, 1, 10.0, 8, 0, 0, 1).unwrap())
        .collect();
    t.gc_finished();
    t.gc_finished();
    let est = e.estimate(&t, 3, None);
    assert_eq!(est.objects[2], (30.0 * pooled).round() as u64);
    assert!((est.unconfirmed[2].0 - 30.0 * pooled).abs() < 1e-9);
    let born = t.get(other[0]).unwrap().birth.allocated;
    t.unreached(other[0], born);
    assert_eq!(
        e.estimate(&t, 3, None).objects[2],
        (20.0 * pooled).round() as u64
    );
    // Elsewhere standing samples count.
    t.set_hold_limit(u64::MAX);
    assert_eq!(e.estimate(&t, 3, None).objects[1], 160);
    assert_eq!(e.estimate(&t, 3, None).objects[2], 30);
    // A walk is newer than the count.
    t.set_hold_limit(1 << 30);
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 30, 0], vec![0, 240, 0]));
    assert_eq!(e.estimate(&t, 3, None).objects[1], 30);
}

/// Births since a search's count are valued at the share judged among births of their
/// age or older: a type whose births live a few seconds (alive when judged at 1-2 s, dead
/// at 4-8 s) counts its births of 12 s at the share of the oldest judged, next to none,
/// and its young births at the share of every age.
#[test]
fn births_since_a_count_count_at_the_share_judged_at_their_age() {
    let t = Tracker::new(64);
    let mut e = Estimator::default();
    t.set_hold_limit(1 << 30);
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 0], vec![0, 0]));
    t.advance();
    let mut judged = AgedFates::default();
    judged[1] = Fates {
        alive: 100.0,
        dead: 0.0,
        samples: 20.0,
    };
    judged[3] = Fates {
        alive: 0.0,
        dead: 100.0,
        samples: 20.0,
    };
    let started = t.advance();
    e.set_search_count(
        &[(1, 100, 0.0)],
        started,
        t.advance(),
        vec![AgedFates::default(), judged],
    );
    for _ in 0..4 {
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    t.pass_ms(12_000);
    for _ in 0..4 {
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    t.gc_finished();
    t.gc_finished();
    let est = e.estimate(&t, 2, None);
    // Every class's verdicts are this class's: its own share drawn toward the same.
    let toward = |alive: f64, n: f64| {
        let pooled = (alive * n + 0.5) / (n + 1.0);
        (alive * n + pooled * CLASS_PRIOR_SAMPLES) / (n + CLASS_PRIOR_SAMPLES)
    };
    let (young, old) = (toward(0.5, 40.0), toward(0.0, 20.0));
    assert!(old < 0.01, "{old}");
    let expected = 100.0 + 40.0 * young + 40.0 * old;
    assert_eq!(est.objects[1], expected.round() as u64);
    assert!((est.unconfirmed[1].0 - 40.0 * (young + old)).abs() < 1e-9);
}

/// How far the estimate moved from a count, as the live samples say it without an
/// estimate: the births since it valued at a share, over the count (what the estimate
/// adds), for counts large enough to say; none where the estimates do not rest on counts.
#[test]
fn births_since_a_count_say_how_far_the_estimate_moved_from_it() {
    let t = Tracker::new(1024);
    let mut e = Estimator::default();
    t.set_hold_limit(1 << 30);
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 0, 0], vec![0, 0, 0]));
    t.advance();
    let mut alive = AgedFates::default();
    alive[0] = Fates {
        alive: 100.0,
        dead: 0.0,
        samples: 20.0,
    };
    let started = t.advance();
    e.set_search_count(
        &[(1, 20_000, 0.0), (2, 100, 0.0)],
        started,
        t.advance(),
        vec![AgedFates::default(), alive, alive],
    );
    // 3,000 of class 1 since (a sixth of its count at a share near one), and as many of
    // class 2, whose count is too small to say.
    for _ in 0..300 {
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
        t.track(2, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    t.gc_finished();
    t.gc_finished();
    let est = e.estimate(&t, 3, None);
    let moved = e.births_since_count(&t);
    assert!(moved >= RECOUNT_SHARE, "{moved}");
    assert!(
        (moved - (est.objects[1] as f64 - 20_000.0) / 20_000.0).abs() < 1e-4,
        "{moved} {}",
        est.objects[1]
    );
    t.set_hold_limit(u64::MAX);
    assert_eq!(e.births_since_count(&t), 0.0);
}

#[test]
fn before_jdk_25_large_samples_carry_the_outside_tlab_bias_in_their_error() {
    let t = Tracker::new(16);
    let mut e = Estimator::default();
    t.advance();
    let old_large = t.track(2, 1, 1, 2.0, 64 * 1024, 0, 0, 1).unwrap();
    t.mark_seen(old_large, t.generation());
    e.set_anchor(anchor(&t, vec![0, 0, 5], vec![0, 0, 5 * 65536]));
    t.advance();
    // Class 1: small objects; class 2: 64 KB arrays (weight 2 each).
    t.track(1, 1, 1, 10.0, 24, 0, 0, 1).unwrap();
    t.track(2, 1, 1, 2.0, 64 * 1024, 0, 0, 1).unwrap();
    t.track(2, 1, 1, 2.0, 64 * 1024, 0, 0, 1).unwrap();
    t.died(old_large);
    t.gc_finished();
    let exact = e.estimate(&t, 3, None);
    assert_eq!(
        exact.variance[2].0,
        3.0 * 2.0,
        "sampling alone: three samples of w = 2"
    );
    e.set_outside_tlab_bias(true);
    let biased = e.estimate(&t, 3, None);
    assert_eq!(biased.objects, exact.objects, "stated, not corrected");
    // Two births and one death of weight 2 (u = ln 2: a loss of 69 %, capped at 60 %, so
    // 150 % of the estimate): a 95 % bound of 9 objects.
    let bound = 1.96 * (biased.variance[2].0 - exact.variance[2].0).sqrt();
    assert!((bound - 9.0).abs() < 1e-9, "{bound}");
    let bound_bytes = 1.96 * (biased.variance[2].1 - exact.variance[2].1).sqrt();
    assert!((bound_bytes - 9.0 * 65536.0).abs() < 1e-6);
    assert_eq!(
        biased.variance[1], exact.variance[1],
        "small objects are unaffected"
    );
}

#[test]
fn the_outside_tlab_bound_fades_with_objects_of_many_intervals() {
    let weight = |u: f64| 1.0 / (1.0 - (-u).exp());
    assert_eq!(outside_tlab_bound(1.0), 0.0, "sampled for certain");
    assert!(
        (outside_tlab_bound(weight(0.5)) - 1.5).abs() < 1e-9,
        "capped at 60 % lost"
    );
    let at = |u: f64| {
        let loss = u / u.exp_m1();
        loss / (1.0 - loss)
    };
    assert!((outside_tlab_bound(weight(2.0)) - at(2.0)).abs() < 1e-9);
    assert!(outside_tlab_bound(weight(2.0)) < 0.5);
    assert!(outside_tlab_bound(weight(8.0)) < 0.005);
}

/// The LinkedListLeak case: a leaking class keeps its births, a garbage class loses them;
/// births since the last GC count at each class's share, and what the GC's own count is
/// compared with leaves them out.
#[test]
fn pending_births_count_at_their_class_survival_share() {
    let t = Tracker::new(64);
    let mut e = Estimator::default();
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 100, 50], vec![0, 800, 400]));
    t.advance();
    // No GC has judged anything yet: nothing to predict from, so births wait for one.
    t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    let unjudged = e.estimate(&t, 3, None);
    assert_eq!(unjudged.objects, [0, 100, 50]);
    assert_eq!(unjudged.pending[1], Pending::default());
    t.gc_finished();
    // That birth survived; four of class 2 were born and died in the next GC.
    let garbage: Vec<_> = (0..4)
        .map(|_| t.track(2, 1, 1, 10.0, 8, 0, 0, 1).unwrap())
        .collect();
    t.gc_finished();
    for &g in &garbage {
        t.died(g);
    }
    // Two more judged survivors of class 1, then pending births: 4 of class 1, 3 of class 2.
    t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    for _ in 0..4 {
        t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    for _ in 0..3 {
        t.track(2, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    let est = e.estimate(&t, 3, None);
    // Of every judged sample, 30 of 70 weight alive over 7 samples: the pooled share
    // (3 + 0.5) / 8. Class 1: 3 of 3 judged samples alive, drawn two samples toward it;
    // class 2: none of 4.
    let pooled = 3.5 / 8.0;
    let (m1, m2) = ((3.0 + 2.0 * pooled) / 5.0, (2.0 * pooled) / 6.0);
    assert!((est.pending[1].objects - 40.0 * m1).abs() < 1e-9);
    assert!((est.pending[2].objects - 30.0 * m2).abs() < 1e-9);
    assert_eq!(est.objects, [0, 100 + 30 + 31, 50 + 4]);
    assert_eq!(est.bytes, [0, 800 + 240 + 248, 400 + 35]);
    // Sampling (m w (w - 1)), fates (m (1 - m) w^2) and the share (var_m P^2), on top of the
    // three judged births' 3 * 90.
    let var_m1 = m1 * (1.0 - m1) / 6.0;
    let pending_var = 4.0 * (m1 * 90.0 + m1 * (1.0 - m1) * 100.0) + var_m1 * 1600.0;
    assert!((est.variance[1].0 - (270.0 + pending_var)).abs() < 1e-9);
    assert!((est.pending[1].variance.0 - pending_var).abs() < 1e-9);
    assert!(
        (est.unconfirmed[1].0 - (30.0 + 40.0 * m1)).abs() < 1e-9,
        "no marking has met a pending birth"
    );
    assert!(
        (est.sampled.values().map(|c| c.weight).sum::<f64>() - (30.0 + 40.0 * m1 + 30.0 * m2))
            .abs()
            < 1e-9,
        "sites and threads split the prediction too"
    );
    // The GC's count is compared with the heap that GC saw.
    let (objects, bytes, variance) = at_last_gc(&est);
    assert_eq!(objects, [0, 130, 50]);
    assert_eq!(bytes, [0, 1040, 400]);
    assert!((variance[1].0 - 270.0).abs() < 1e-6);
    // Deaths are booked once: a second estimate agrees.
    assert_eq!(e.estimate(&t, 3, None).objects, est.objects);
    // Right after a walk nothing since is judged: the shares from before it still hold.
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 200, 60], vec![0, 1600, 480]));
    t.advance();
    t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
    let after_walk = e.estimate(&t, 3, None);
    assert!((after_walk.pending[1].objects - 10.0 * m1).abs() < 1e-9);
    assert_eq!(after_walk.objects[1], 200 + 8);
    // Once a GC judges births since the walk, those decide: the one born died.
    t.gc_finished();
    let s = t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
    t.gc_finished();
    t.died(s);
    t.track(1, 3, 1, 10.0, 8, 0, 0, 1).unwrap();
    let judged = e.estimate(&t, 3, None);
    // Judged since the walk: one alive (weight 10), one dead, drawn toward the pooled share
    // of those two and class 2's four dead from before, (10 of 60 * 6 + 0.5) / 7; its
    // site's share (the same two) drawn toward the class's.
    let pooled = 1.5 / 7.0;
    let class = (0.5 * 2.0 + 2.0 * pooled) / 4.0;
    let m = (0.5 * 2.0 + 2.0 * class) / 4.0;
    assert!((judged.pending[1].objects - 10.0 * m).abs() < 1e-9);
    assert_eq!(judged.objects[1], 200 + 10 + 4);
}

#[test]
fn pending_births_count_at_their_sites_share() {
    // One class made at two lines: site 1 keeps what it makes (a leak), site 2 makes
    // garbage. Four of each judged by a GC, then pending births: three at site 1, one at
    // site 2.
    let t = Tracker::new(64);
    let mut e = Estimator::default();
    t.advance();
    e.set_anchor(anchor(&t, vec![0, 100], vec![0, 800]));
    t.advance();
    let garbage: Vec<_> = (0..4)
        .map(|_| {
            t.track(1, 1, 1, 10.0, 8, 0, 0, 1).unwrap();
            t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap()
        })
        .collect();
    t.gc_finished();
    for &g in &garbage {
        t.died(g);
    }
    for site in [1, 1, 1, 2] {
        t.track(1, site, 1, 10.0, 8, 0, 0, 1).unwrap();
    }
    let est = e.estimate(&t, 2, None);
    // The class: 40 of 80 judged alive over 8 samples, m = (0.5 * 8 + 0.5) / 9 = 0.5. Each
    // site's own, drawn toward it by two samples: (4 + 1) / 6 and (0 + 1) / 6.
    let (m1, m2) = (5.0 / 6.0, 1.0 / 6.0);
    assert!((est.pending[1].objects - (30.0 * m1 + 10.0 * m2)).abs() < 1e-9);
    assert_eq!(est.objects[1], 100 + 40 + 27);
    let var = |m: f64, n: f64, k: f64| {
        n * (m * 90.0 + m * (1.0 - m) * 100.0) + m * (1.0 - m) / 7.0 * (k * k)
    };
    assert!((est.pending[1].variance.0 - (var(m1, 3.0, 30.0) + var(m2, 1.0, 10.0))).abs() < 1e-9);
    // The sites' split carries the same shares.
    let at_site = |site: u32| -> f64 {
        est.sampled
            .iter()
            .filter(|((_, key), _)| site_of(*key) == site)
            .map(|(_, c)| c.weight)
            .sum()
    };
    assert!((at_site(1) - (40.0 + 30.0 * m1)).abs() < 1e-9);
    assert!((at_site(2) - 10.0 * m2).abs() < 1e-9);
    // After a walk no birth since is judged: the sites' fates before it still hold, then
    // weigh half at each further walk.
    let walk = |e: &mut Estimator| {
        t.advance();
        e.set_anchor(anchor(&t, vec![0, 200], vec![0, 1600]));
        t.advance();
    };
    walk(&mut e);
    t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    let after_walk = e.estimate(&t, 2, None);
    assert!((after_walk.pending[1].objects - 10.0 * m2).abs() < 1e-9);
    walk(&mut e);
    t.track(1, 2, 1, 10.0, 8, 0, 0, 1).unwrap();
    let halved = (0.0 * 2.0 + 0.5 * 2.0) / 4.0;
    assert!((e.estimate(&t, 2, None).pending[1].objects - 10.0 * halved).abs() < 1e-9);
}

#[test]
fn a_sites_share_leans_toward_its_class() {
    let class = (0.3, 0.01);
    assert_eq!(Fates::default().survival_within(class), class);
    let (m, var) = Fates {
        alive: 0.0,
        dead: 20.0,
        samples: 2.0,
    }
    .survival_within(class);
    assert!(
        (m - 0.3 * 2.0 / 4.0).abs() < 1e-12,
        "half its class's, two samples each"
    );
    assert!((var - m * (1.0 - m) / 5.0).abs() < 1e-12);
    let (m, _) = Fates {
        alive: 1_000.0,
        dead: 0.0,
        samples: 998.0,
    }
    .survival_within(class);
    assert!(
        (m - (998.0 + 0.6) / 1_000.0).abs() < 1e-12,
        "many samples: its own"
    );
}

#[test]
fn a_class_with_few_judged_samples_starts_from_the_pooled_share() {
    // What the JVM's judged samples say in general: most die young.
    let pooled = Fates::pooled(&[
        Fates {
            alive: 50.0,
            dead: 950.0,
            samples: 100.0,
        },
        Fates {
            alive: 0.0,
            dead: 0.0,
            samples: 0.0,
        },
    ])
    .survival()
    .unwrap()
    .0;
    assert!((pooled - (5.0 + 0.5) / 101.0).abs() < 1e-12);
    // None judged: no prediction.
    assert_eq!(Fates::default().survival_among(pooled), None);
    // One judged sample that died: near the pooled share's half, not 0.25 as from one half.
    let (m, _) = Fates {
        alive: 0.0,
        dead: 512.0,
        samples: 1.0,
    }
    .survival_among(pooled)
    .unwrap();
    assert!((m - 2.0 * pooled / 3.0).abs() < 1e-12 && m < 0.05, "{m}");
    // One that lived: a third of the way from the pooled share to all.
    let (m, var) = Fates {
        alive: 512.0,
        dead: 0.0,
        samples: 1.0,
    }
    .survival_among(pooled)
    .unwrap();
    assert!((m - (1.0 + 2.0 * pooled) / 3.0).abs() < 1e-12);
    assert!((var - m * (1.0 - m) / 4.0).abs() < 1e-12);
    // Many: its own share, whatever the pool says.
    let (m, _) = Fates {
        alive: 9_990.0,
        dead: 10.0,
        samples: 10_000.0,
    }
    .survival_among(pooled)
    .unwrap();
    assert!((m - 0.999).abs() < 1e-3);
}

#[test]
fn survival_shares_lean_half_a_sample_toward_even() {
    assert_eq!(
        Fates::default().survival(),
        None,
        "no evidence, no prediction"
    );
    let all = Fates {
        alive: 300.0,
        dead: 0.0,
        samples: 3.0,
    };
    let (m, var) = all.survival().unwrap();
    assert!((m - 3.5 / 4.0).abs() < 1e-12);
    assert!((var - m * (1.0 - m) / 5.0).abs() < 1e-12);
    // By weight, not by sample: one large dead sample outweighs three small live ones.
    let (m, _) = Fates {
        alive: 30.0,
        dead: 90.0,
        samples: 4.0,
    }
    .survival()
    .unwrap();
    assert!((m - (0.25 * 4.0 + 0.5) / 5.0).abs() < 1e-12);
    // Many samples: the share is the observed one.
    let (m, var) = Fates {
        alive: 9_900.0,
        dead: 100.0,
        samples: 10_000.0,
    }
    .survival()
    .unwrap();
    assert!((m - 0.99).abs() < 1e-4 && var < 1e-5);
}

#[test]
fn error95_is_two_standard_deviations() {
    assert_eq!(error95(100.0), 20);
    assert_eq!(error95(-1.0), 0);
}
