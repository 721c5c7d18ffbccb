//! Whether output is coloured: `--color auto|always|never` and NO_COLOR (<https://no-color.org>).
//!
//! One decision per stream, made once at start ([`init`]) and asked wherever colour is drawn:
//! the tables (comfy-table), the verdict lines ([`paint`]), the progress bars (indicatif, through
//! `console`), the log lines (tracing-subscriber's ANSI) and clap's help ([`for_clap`]). `auto`
//! colours a stream only when it is a terminal and NO_COLOR is unset or empty; an explicit
//! `always` or `never` wins over NO_COLOR, as the convention asks of a per-invocation flag. A
//! file or a pipe therefore never gets escape codes unless asked for.

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::sync::OnceLock;

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Choice {
    /// Colour a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Colour every stream, a file or pipe too.
    Always,
    /// Never colour.
    Never,
}

/// The decision for each stream.
#[derive(Clone, Copy, Debug)]
struct Streams {
    stdout: bool,
    stderr: bool,
}

static STREAMS: OnceLock<Streams> = OnceLock::new();

/// Decides for stdout and stderr, and tells indicatif's styling library.
pub fn init(choice: Choice) {
    let no_color = std::env::var_os("NO_COLOR");
    let streams = Streams {
        stdout: wanted(choice, no_color.as_deref(), std::io::stdout().is_terminal()),
        stderr: wanted(choice, no_color.as_deref(), std::io::stderr().is_terminal()),
    };
    let streams = *STREAMS.get_or_init(|| streams);
    console::set_colors_enabled(streams.stdout);
    console::set_colors_enabled_stderr(streams.stderr);
}

/// Whether stdout is coloured (the tables, the verdict lines).
pub fn stdout() -> bool {
    STREAMS.get().is_some_and(|s| s.stdout)
}

/// Whether stderr is coloured (log lines, progress bars).
pub fn stderr() -> bool {
    STREAMS.get().is_some_and(|s| s.stderr)
}

fn wanted(choice: Choice, no_color: Option<&OsStr>, terminal: bool) -> bool {
    match choice {
        Choice::Always => true,
        Choice::Never => false,
        Choice::Auto => terminal && no_color.is_none_or(OsStr::is_empty),
    }
}

/// The `--color` the command line gives, read before clap parses it, so that clap's own help
/// and errors follow it too; anything unreadable is `auto` (clap then names the mistake).
pub fn from_args(args: impl IntoIterator<Item = OsString>) -> Choice {
    let mut choice = Choice::Auto;
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.to_str() {
            Some("--") => break,
            Some("--color") => args.next(),
            Some(a) => a.strip_prefix("--color=").map(OsString::from),
            None => None,
        };
        if let Some(v) = value {
            choice = match v.to_str() {
                Some("always") => Choice::Always,
                Some("never") => Choice::Never,
                _ => Choice::Auto,
            };
        }
    }
    choice
}

/// clap's setting for `choice` (its `auto` honours NO_COLOR too).
pub fn for_clap(choice: Choice) -> clap::ColorChoice {
    match choice {
        Choice::Auto => clap::ColorChoice::Auto,
        Choice::Always => clap::ColorChoice::Always,
        Choice::Never => clap::ColorChoice::Never,
    }
}

/// A terminal colour for [`paint`].
#[derive(Clone, Copy, Debug)]
pub enum Ink {
    /// Failed, violated.
    Red,
    /// Met, valid.
    Green,
    /// Unknown.
    Yellow,
}

/// `text` in `ink` when stdout is coloured, else as it is (console's styling, which [`init`]
/// told whether stdout is coloured).
pub fn paint(text: &str, ink: Ink) -> String {
    let styled = console::style(text);
    match ink {
        Ink::Red => styled.red(),
        Ink::Green => styled.green(),
        Ink::Yellow => styled.yellow(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_a_terminal_unless_no_color_is_set_and_not_empty() {
        let set = Some(OsStr::new("1"));
        let empty = Some(OsStr::new(""));
        assert!(wanted(Choice::Auto, None, true));
        assert!(
            wanted(Choice::Auto, empty, true),
            "an empty NO_COLOR is unset"
        );
        assert!(!wanted(Choice::Auto, set, true));
        assert!(!wanted(Choice::Auto, None, false), "a pipe is not coloured");
        assert!(wanted(Choice::Always, set, false), "the flag wins");
        assert!(!wanted(Choice::Never, None, true));
    }

    #[test]
    fn the_choice_is_read_before_parsing_in_both_spellings_and_the_last_wins() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(from_args(args(&["lockbench", "run"])), Choice::Auto);
        assert_eq!(
            from_args(args(&["lockbench", "--color", "never", "run"])),
            Choice::Never
        );
        assert_eq!(
            from_args(args(&["lockbench", "run", "--color=always"])),
            Choice::Always
        );
        assert_eq!(
            from_args(args(&["lockbench", "--color=never", "--color", "always"])),
            Choice::Always
        );
        assert_eq!(
            from_args(args(&["lockbench", "run", "--", "--color=never"])),
            Choice::Auto,
            "after -- it is an operand"
        );
    }
}
