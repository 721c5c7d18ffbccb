//! Page layout: the document shell, the inline stylesheet and the pieces every section uses.
//! Everything is inline so the file stands alone (no fonts, scripts or stylesheets fetched
//! from anywhere).

use maud::{DOCTYPE, Markup, PreEscaped, Render, html};

/// A titled section with an anchor, an optional one-paragraph explanation and a body.
pub(crate) fn section(id: &str, title: &str, intro: impl Render, body: Markup) -> Markup {
    let intro = intro.render();
    html! {
        section id=(id) {
            h2 { (title) }
            @if !intro.0.is_empty() {
                p.intro { (intro) }
            }
            (body)
        }
    }
}

/// A chart with a caption underneath.
pub(crate) fn figure(svg: Markup, caption: impl Render) -> Markup {
    html! { figure { (svg) figcaption { (caption) } } }
}

/// A short note in muted text.
pub(crate) fn note(text: impl Render) -> Markup {
    html! { p.note { (text) } }
}

/// A table that scrolls sideways when it is wider than the page: a header row of `columns`,
/// then `rows`.
pub(crate) fn scroll_table(columns: &[&str], rows: Markup) -> Markup {
    html! {
        div.scroll {
            table {
                tr {
                    @for c in columns {
                        th { (c) }
                    }
                }
                (rows)
            }
        }
    }
}

/// `items` with `sep` between each two.
pub(crate) fn join(items: impl IntoIterator<Item = Markup>, sep: &str) -> Markup {
    html! {
        @for (i, item) in items.into_iter().enumerate() {
            @if i > 0 { (sep) }
            (item)
        }
    }
}

/// Milliseconds from microseconds, with as many digits as are meaningful.
pub(crate) fn ms(us: u64) -> String {
    let v = us as f64 / 1e3;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The complete HTML document.
pub(crate) fn document(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body { main { (body) } }
        }
    }
    .into_string()
}

const CSS: &str = r#"
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-alt: #f6f8fa;
        --bad: #d62728; --bad-bg: #fde8e8; --warn-bg: #fff4d6; --good: #1a7f37; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1400px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 4px 0 2px; }
h2 { font-size: 19px; margin: 20px 0 6px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.intro, p.note { color: var(--muted); margin: 4px 0 10px; max-width: 110ch; }
p.note { font-size: 13px; }
.meta { color: var(--muted); margin: 0 0 8px; }
.meta b { color: var(--fg); font-weight: 600; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600; }
.verdict.valid { background: #dafbe1; color: var(--good); }
.verdict.invalid { background: var(--bad-bg); color: var(--bad); }
.verdict.unknown { background: var(--warn-bg); color: #7d4e00; }
.verdict.met { background: #dafbe1; color: var(--good); }
.verdict.failed { background: var(--bad-bg); color: var(--bad); }
.verdict.incomplete { background: var(--warn-bg); color: #7d4e00; }
.headline { font-size: 1.15em; margin-bottom: 4px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; }
th { background: var(--bg-alt); text-align: left; font-weight: 600; }
td.num { text-align: right; white-space: nowrap; }
td.bad, tr.bad td.safety { background: var(--bad-bg); color: var(--bad); font-weight: 600; }
p.bad, ul.bad { color: var(--bad); }
tr.broken td:first-child, tr.broken td:first-child a { background: var(--bad-bg); color: var(--bad); font-weight: 600; }
#decision td:first-child { white-space: nowrap; }
tr.broken { outline: 2px solid var(--bad); }
td.expected, tr.expected td.safety { background: var(--warn-bg); color: #7d4e00; font-weight: 600; }
td.unknown { background: var(--warn-bg); }
td.ok { color: var(--good); }
tr.error td, td.error { color: var(--muted); }
td small { font-weight: normal; }
table.wide { width: 100%; }
.scroll { overflow-x: auto; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--bg-alt); border: 1px solid var(--line); padding: 10px; overflow-x: auto; }
details { margin: 6px 0; }
summary { cursor: pointer; font-weight: 600; }
figure { margin: 8px 0 16px; }
figure svg { max-width: 100%; height: auto; display: block; }
svg text { font-family: sans-serif; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 2px; max-width: 110ch; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 4px 16px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 4px 16px; }
p.legend { margin: 8px 0 0; }
table.summary { font-size: 13px; }
table.summary th, table.summary td { padding: 2px 6px; }
table.summary td.safety small { font-weight: normal; }
table.summary td { white-space: nowrap; }
table.summary td.safety { white-space: normal; min-width: 15em; }
table.summary td.faults small { color: var(--muted); }
.key { display: inline-block; margin-right: 16px; white-space: nowrap; }
.key i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
section#glance figure { margin: 0 0 4px; }
section#glance figcaption { font-size: 12px; }
details > summary { padding: 3px 0; }
details[open] > summary { margin-bottom: 4px; }
nav.toc { margin: 8px 0; }
nav.toc a { margin-right: 14px; }
a { color: #0969da; }
"#;
