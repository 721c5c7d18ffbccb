//! Server-side truth (`observe_server`): one short table, one row per backend, of the
//! lost-while-held episodes (the servers had given the lock to someone else, or no one, while
//! a client still believed it held it) and how long clients took to learn of them.

use super::load::Run;
use super::page::{self, esc};

/// The section, or nothing when no backend of the run was observed.
pub(crate) fn section(run: &Run) -> String {
    let mut rows = String::new();
    for r in &run.results.results {
        let Some(truth) = &r.server_truth else {
            continue;
        };
        let Some(f) = &truth.figures else {
            rows.push_str(&format!(
                "<tr><td>{}</td><td colspan=\"7\">{}</td></tr>\n",
                esc(&r.backend),
                esc(truth.note.as_deref().unwrap_or("nothing observed"))
            ));
            continue;
        };
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let lost = if f.lost_while_held > 0 {
            format!("<b>{}</b>", f.lost_while_held)
        } else {
            "0".into()
        };
        let never = if f.undetected > 0 {
            format!("<b style=\"color:#d62728\">{}</b>", f.undetected)
        } else {
            "0".into()
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{lost}</td><td class=\"num\">{:.0}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{never}</td><td class=\"num\">{} / {:.0}</td></tr>\n",
            esc(&r.backend),
            f.lost_ms,
            ms(f.detection_p50_ms),
            ms(f.detection_p99_ms),
            ms(f.detection_max_ms),
            f.observations,
            f.blind_ms,
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    let table = format!(
        "<div class=\"scroll\"><table>\n<tr><th>backend</th><th>lost while held</th><th>time lost ms</th><th>detection p50 ms</th><th>p99</th><th>max</th><th>never learned</th><th>observations / blind ms</th></tr>\n{rows}</table></div>\n"
    );
    page::section(
        "truth",
        "Server-side truth",
        "Who the servers said held each lock (a watch from lockbench's own session: ZooKeeper's lowest lock node, etcd's lowest create revision, the Redis key's value, the value a majority of the Redlock servers holds), against what the clients believed. Lost while held: the servers had given the lock to someone else, or to no one, while a client still believed it held it. Detection: from then until that client learned it (a release or renew refused, a session or lease found expired). Per fault window in results.json (server_truth).",
        &table,
    )
}
