//! The built-in `chaos-loss` scenario through `lockbench run` on the managed
//! cluster: both its `packet-loss` windows (20% random, then `nth` every 4th packet, on every
//! client link to every server) are applied, each one's measured dropped share is within the
//! tolerance of the asked rate (the start probe's, and the window's own traffic's, from the
//! rules' counters at heal), and the exit code follows the scenario's expectations (every
//! recipe safe under packet loss alone, as measured: docs/chaos.md, "Packet-loss scenario").
//!
//! One backend, etcd-lease, with the scenario's own schedule (about 18 s). Packet loss needs the
//! coordinator's address in the hosts' subnet, so the run uses a managed cluster, not an
//! external one (which gets no server faults): one of its own (its own state directory,
//! namespaces and subnet; the run starts its etcd members and stops them at its end), so the
//! drops reach no other test's etcd traffic. Needs root and the netns topology, as CI has; it
//! FAILS saying why otherwise (never skips), unless `LOCKBENCH_ALLOW_NO_ROOT=1`.

use crate::common::{PrivateManaged, result_of, results, scratch, text};
use lockbench_core::{Fault, LossMode};
use serde_json::Value;

/// `(dropped, total)` from "`<dropped>` of `<total>` packets dropped" in `note`.
fn counts(note: &str) -> (u64, u64) {
    let (head, _) = note
        .split_once(" packets dropped")
        .unwrap_or_else(|| panic!("no packet counts in {note:?}"));
    let mut words = head.rsplit(' ');
    let total = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("of"), "{note}");
    let dropped = words.next().unwrap().parse().unwrap();
    (dropped, total)
}

/// The DROP rules behind a window: its start note's "(N expected at the rules)" is N = 400
/// probe datagrams per rule (`lockbench_chaos`'s `PROBE`, one way per rule).
fn drop_rules(note: &str) -> u64 {
    let (head, _) = note
        .split_once(" expected at the rules)")
        .unwrap_or_else(|| panic!("no probe count in {note:?}"));
    let n: u64 = head.rsplit('(').next().unwrap().parse().unwrap();
    assert_eq!(n % 400, 0, "{note}");
    n / 400
}

/// Checks a measured `dropped` of `total` against `rate` behind `rules` DROP rules: `nth` to
/// one packet per rule (each rule drops every n-th of its own packets), `random` to four
/// standard deviations of a binomial draw plus one packet per rule.
fn within(what: &str, dropped: u64, total: u64, rate: f64, nth: bool, rules: u64) {
    assert!(total > 0, "{what}: no packet crossed the rules");
    let expected = rate * total as f64;
    let slack = if nth {
        rules as f64
    } else {
        4.0 * (total as f64 * rate * (1.0 - rate)).sqrt() + rules as f64
    };
    assert!(
        (dropped as f64 - expected).abs() <= slack,
        "{what}: {dropped} of {total} packets dropped ({:.1}%), asked {:.1}% (±{slack:.1} \
         packets)",
        100.0 * dropped as f64 / total as f64,
        100.0 * rate
    );
}

#[test]
fn chaos_loss_drops_the_asked_share_and_leaves_the_recipe_safe() {
    if crate::partition::netns_or_skip("packet-loss rules go into the servers' namespaces")
        .is_none()
    {
        return;
    }
    let dir = scratch("loss", "chaos-loss");
    let run = dir.join("run");
    let cluster = PrivateManaged::new("ls", "10.88.2.0/24");
    let out = cluster
        .command(&["run", "chaos-loss", "--quiet", "--out"])
        .arg(&run)
        .args(["--set", "backends=etcd-lease"])
        .args(["--set", "etcd.prefix=/lockbench-loss-test"])
        .output()
        .expect("run lockbench");
    let text = text(&out);
    assert!(run.join("results.json").exists(), "no results.json\n{text}");
    let r = results(&run);

    // The scenario's windows as it states them (its saved `scenario.toml`), in time order,
    // each applied and measured.
    let saved = std::fs::read_to_string(run.join("scenario.toml")).expect("scenario.toml");
    let scenario = lockbench_registry::load_scenario("chaos-loss", &saved, &[]).unwrap();
    let mut asked: Vec<(std::time::Duration, f64, bool)> = scenario
        .faults
        .iter()
        .filter_map(|f| match &f.fault {
            Fault::PacketLoss { rate, mode, .. } => {
                Some((f.at.expect("at"), *rate, *mode == LossMode::Nth))
            }
            _ => None,
        })
        .collect();
    asked.sort_by_key(|a| a.0);
    let asked: Vec<(f64, bool)> = asked.into_iter().map(|a| (a.1, a.2)).collect();
    assert_eq!(asked.len(), 2, "{saved}");
    assert!(
        asked.iter().any(|a| a.1) && asked.iter().any(|a| !a.1),
        "chaos-loss has a random and an nth window: {asked:?}"
    );
    let etcd = result_of(&r, "etcd-lease");
    let windows: Vec<&Value> = etcd["fault_windows"]
        .as_array()
        .unwrap_or_else(|| panic!("no fault windows\n{text}"))
        .iter()
        .filter(|w| w["fault"] == "packet-loss")
        .collect();
    assert_eq!(windows.len(), asked.len(), "{windows:?}\n{text}");
    for (w, (rate, nth)) in windows.iter().zip(&asked) {
        let what = format!(
            "{} window at {} s",
            if *nth { "nth" } else { "random" },
            w["start_s"]
        );
        assert_eq!(w["applied"], true, "{what}: {w}\n{text}");
        assert_eq!(
            w["targets"],
            serde_json::json!(["etcd1", "etcd2", "etcd3"]),
            "{what}"
        );
        let note = w["note"].as_str().unwrap();
        if *nth {
            assert!(note.contains("every 4th packet"), "{what}: {note}");
        } else {
            assert!(note.contains("not seeded"), "{what}: {note}");
        }
        // The probe right after the rules went in: every datagram crossed them.
        let rules = drop_rules(note);
        assert_eq!(
            rules,
            2 * 3,
            "both ways on the coordinator's link to 3 members: {note}"
        );
        let (dropped, total) = counts(note);
        assert!(total >= 400 * rules, "{what}: {note}");
        within(
            &format!("{what}, probe"),
            dropped,
            total,
            *rate,
            *nth,
            rules,
        );
        // The window's own traffic, read from the counters at heal.
        let end = w["end_note"].as_str().unwrap_or_default();
        assert!(
            end.contains("measured over the window's traffic"),
            "{what}: end note {end:?}\n{text}"
        );
        let (dropped, total) = counts(end);
        within(
            &format!("{what}, window's traffic"),
            dropped,
            total,
            *rate,
            *nth,
            rules,
        );
    }

    // Packet loss alone leaves the recipe safe, as the scenario expects; exit 0 says so.
    assert_eq!(
        etcd["safety"]["verdict"], "valid",
        "{}\n{text}",
        etcd["safety"]
    );
    let expectations = r["expectations"].as_array().expect("expectations");
    assert!(!expectations.is_empty(), "{r}");
    for e in expectations {
        assert_eq!(e["outcome"], "met", "{e}\n{text}");
    }
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(etcd["acquisitions"].as_u64() > Some(0), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
