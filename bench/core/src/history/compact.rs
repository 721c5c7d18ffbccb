//! The compact op line: times and fencing tokens written relative to the line before.
//!
//! # Why
//!
//! An hour of redis-setnx at full speed (8 clients on 1 key, ~12,000 acquisitions/s) is about
//! 260 million op lines. Written with absolute values, zstd (level 9) left ~31 bytes per
//! acquisition, over 1 GB per hour: what it cannot squeeze is the absolute nanosecond times
//! (six per acquisition, whose last five or six digits look random) and the fencing token,
//! repeated as new digits in the grant, the write and the release. Written as differences from
//! the previous line, the same numbers are short and repetitive (a write's invoke is ~1 µs after
//! the grant, its token the grant's: `"dk":0`), and the same history takes ~half the bytes
//! (docs/soak.md has the measurement).
//!
//! Times stay in nanoseconds on purpose: the run's clock is `CLOCK_MONOTONIC`, which has real
//! nanosecond resolution here, and some intervals the checkers order are shorter than a
//! microsecond (a fencing write's invoke to `ok`, ~0.5 µs). Rounding to microseconds would make
//! events of different clients tie and the order the checkers see depend on the tie-break.
//!
//! # The rule
//!
//! Within one zstd frame of `history.jsonl.zst`, an op line's time is either `t` (ns on the
//! run's clock) or `dt` (ns since the previous op line's time; negative when the line arrived
//! out of time order), and its token is either `token` or `dk` (the token minus the previous
//! token written). The writer starts every frame afresh ([`Chain::reset`]): the first op line of
//! a frame has `t`, its first token-bearing line has `token`. So every frame decodes on its
//! own, a reader that starts at any frame boundary (one backend's offset) is right, and
//! fault and server lines, which are frames of their own with absolute `t`, never break a
//! chain. Old histories (every line absolute) read the same way: they simply never use `dt`
//! or `dk`. Each writer's first line is a `"type":"format"` line saying this in words (and,
//! since `"history":3`, that a finished run ends with an end line, [`super::End`]); readers
//! skip it.
//!
//! With standard tools, absolute values are a running sum (`docs/reading-results.md`, the run directory):
//!
//! ```sh
//! zstdcat history.jsonl.zst | jq -c 'foreach . as $l ({}; (if $l.t then .t = $l.t
//!   elif $l.dt then .t += $l.dt else . end) | (if $l.token then .k = $l.token
//!   elif $l.dk then .k += $l.dk else . end) | .l = $l; .l + {t: .t}
//!   + (if .l.dk or .l.token then {token: .k} else {} end) | del(.dt, .dk))'
//! ```

use crate::ids::{ClientId, FencingToken, KeyId};
use crate::op::{ErrorKind, LineNum, Op, OpF, OpType, write_line_start};
use crate::time::Nanos;
use serde::Deserialize;

/// What a writer's first line says about the encoding (after the optional `backend`).
const FORMAT: &str = "\"type\":\"format\",\"history\":3,\
\"dt\":\"ns since the previous op line of the same zstd frame (a frame's first op line has t, ns on the run's clock)\",\
\"dk\":\"fencing token minus the previous token of the same frame (a frame's first token is written as token)\",\
\"end\":\"a backend whose run finished normally has a type end line after its last op; without one its history was cut off\"}\n";

/// Appends the `"type":"format"` line that opens a writer's lines.
pub fn write_format_line(backend: Option<&str>, out: &mut Vec<u8>) {
    write_line_start(backend, out);
    out.extend_from_slice(FORMAT.as_bytes());
}

/// `true` for a `"type":"format"` line (which carries no event).
pub fn is_format_line(line: &str) -> bool {
    line.contains("\"type\":\"format\"")
}

/// The previous time and token of one frame: the encoder's and the decoder's state alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    t: Option<u64>,
    token: Option<u64>,
}

/// An op line as written, absolute or relative.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    backend: Option<&'a str>,
    #[serde(default)]
    t: Option<u64>,
    #[serde(default)]
    dt: Option<i64>,
    client: ClientId,
    #[serde(rename = "type")]
    ty: OpType,
    f: OpF,
    key: KeyId,
    #[serde(default)]
    token: Option<u64>,
    #[serde(default)]
    dk: Option<i64>,
    #[serde(default)]
    error: Option<ErrorKind>,
    #[serde(default)]
    stale: Option<bool>,
    #[serde(default)]
    grant: Option<u32>,
}

impl Chain {
    /// Forgets the previous line: the next op line is written with absolute values. The writer
    /// calls this at every frame start.
    pub fn reset(&mut self) {
        *self = Chain::default();
    }

    /// Decodes a time given as `t` or `dt` (`None` when neither, or `dt` with no time before).
    pub fn time(&mut self, t: Option<u64>, dt: Option<i64>) -> Option<u64> {
        let t = t.or_else(|| Some(self.t?.wrapping_add_signed(dt?)))?;
        self.t = Some(t);
        Some(t)
    }

    /// Decodes a token given as `token` or `dk` (`None` when neither).
    pub fn token(&mut self, token: Option<u64>, dk: Option<i64>) -> Option<u64> {
        let token = token.or_else(|| Some(self.token?.wrapping_add_signed(dk?)))?;
        self.token = Some(token);
        Some(token)
    }

    /// Parses one op line (compact or absolute) and its `backend` field.
    pub fn parse_op<'a>(
        &mut self,
        line: &'a str,
    ) -> Result<(Option<&'a str>, Op), serde_json::Error> {
        use serde::de::Error;
        let w: Wire = serde_json::from_str(line)?;
        let time = self.time(w.t, w.dt).ok_or_else(|| {
            serde_json::Error::custom("op line without t, or dt with no t before")
        })?;
        let token = self.token(w.token, w.dk).map(FencingToken);
        if w.token.is_none() && w.dk.is_some() && token.is_none() {
            return Err(serde_json::Error::custom("dk with no token before"));
        }
        let op = Op {
            time: Nanos(time),
            client: w.client,
            ty: w.ty,
            f: w.f,
            key: w.key,
            token,
            error: w.error,
            stale: w.stale,
            grant: w.grant,
        };
        Ok((w.backend, op))
    }

    /// The line with absolute `t` and `token` (what `serde_json` writes for an [`Op`], with its
    /// `backend`); any line that is not an op (a fault, a server observation, the format line)
    /// is returned as it is.
    pub fn expand(&mut self, line: &str) -> String {
        if is_format_line(line) {
            return line.to_string();
        }
        match self.parse_op(line.trim_end()) {
            Ok((backend, op)) => {
                let mut out = Vec::with_capacity(line.len() + 16);
                op.write_json_line(backend, &mut out);
                String::from_utf8(out).unwrap_or_default()
            }
            Err(_) => line.to_string(),
        }
    }

    /// Appends `op` as one compact JSON line (with a leading `"backend"` field when given).
    ///
    /// Written without serde: the history writer encodes every op of a run while the run is
    /// going, on the same cores as the clients and servers.
    pub fn write_op(&mut self, op: &Op, backend: Option<&str>, out: &mut Vec<u8>) {
        let time = relative(self.t.replace(op.time.0), op.time.0);
        let token = op.token.map(|t| relative(self.token.replace(t.0), t.0));
        op.write_json_line_as(backend, time, token, out);
    }
}

/// `value` relative to `prev`, or absolute when there is no previous value.
fn relative(prev: Option<u64>, value: u64) -> LineNum {
    match prev {
        Some(prev) => LineNum::Relative(value.wrapping_sub(prev) as i64),
        None => LineNum::Absolute(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<Op> {
        let mut write = Op::complete(
            Nanos(1_000_900),
            ClientId(2),
            OpF::Write,
            KeyId(0),
            OpType::Ok,
            Some(FencingToken(u64::MAX - 1)),
            None,
        );
        write.stale = Some(false);
        write.grant = Some(3);
        vec![
            Op::invoke(Nanos(1_000_000), ClientId(2), OpF::Acquire, KeyId(0)),
            Op::complete(
                Nanos(1_000_500),
                ClientId(2),
                OpF::Acquire,
                KeyId(0),
                OpType::Ok,
                Some(FencingToken(9)),
                None,
            ),
            write,
            // Out of time order (another client's chunk), and a failure with an error.
            Op::complete(
                Nanos(10),
                ClientId(5),
                OpF::Acquire,
                KeyId(3),
                OpType::Info,
                Some(FencingToken(3)),
                Some(ErrorKind::Timeout),
            ),
        ]
    }

    #[test]
    fn compact_lines_decode_to_the_same_ops_and_expand_to_the_absolute_text() {
        let mut enc = Chain::default();
        let mut text = Vec::new();
        write_format_line(Some("redis-setnx"), &mut text);
        for op in ops() {
            enc.write_op(&op, Some("redis-setnx"), &mut text);
        }
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(is_format_line(lines[0]));
        assert!(lines[1].contains("\"t\":1000000,"), "{}", lines[1]);
        assert!(lines[2].contains("\"dt\":500,") && lines[2].contains("\"token\":9"));
        assert!(lines[3].contains("\"dt\":400,") && lines[3].contains("\"dk\":-11,"));
        assert!(lines[4].contains("\"dt\":-1000890,"), "{}", lines[4]);
        let mut dec = Chain::default();
        let mut exp = Chain::default();
        for (line, op) in lines[1..].iter().zip(ops()) {
            let (backend, back) = dec.parse_op(line).unwrap();
            assert_eq!((backend, back), (Some("redis-setnx"), op));
            let mut absolute = Vec::new();
            op.write_json_line(Some("redis-setnx"), &mut absolute);
            assert_eq!(exp.expand(line).as_bytes(), absolute);
            // An absolute line (an old history) reads as it always did.
            let old = String::from_utf8(absolute).unwrap();
            assert_eq!(Chain::default().parse_op(&old).unwrap().1, op);
        }
        assert_eq!(exp.expand(lines[0]), lines[0]);
    }

    #[test]
    fn a_reset_chain_writes_absolute_values_and_a_headless_delta_is_an_error() {
        let mut enc = Chain::default();
        let mut text = Vec::new();
        let ops = ops();
        enc.write_op(&ops[1], None, &mut text);
        enc.reset();
        enc.write_op(&ops[2], None, &mut text);
        let text = String::from_utf8(text).unwrap();
        let second = text.lines().nth(1).unwrap();
        assert!(second.contains("\"t\":1000900,") && second.contains("\"token\":"));
        let err = Chain::default()
            .parse_op("{\"dt\":5,\"client\":0,\"type\":\"invoke\",\"f\":\"acquire\",\"key\":0}")
            .unwrap_err();
        assert!(err.to_string().contains("dt with no t"), "{err}");
    }

    /// The compact lines to the byte (histories are compared as text): every field in its
    /// place, `t`/`dt` and `token`/`dk` as the chain says, `error`, `stale` and `grant` last.
    #[test]
    fn compact_lines_are_written_to_the_byte() {
        let mut enc = Chain::default();
        let mut text = Vec::new();
        write_format_line(Some("redlock"), &mut text);
        for op in ops() {
            enc.write_op(&op, Some("redlock"), &mut text);
        }
        let format = format!("{{\"backend\":\"redlock\",{}", FORMAT.trim_end());
        let expected = [
            format.as_str(),
            "{\"backend\":\"redlock\",\"t\":1000000,\"client\":2,\"type\":\"invoke\",\"f\":\"acquire\",\"key\":0}",
            "{\"backend\":\"redlock\",\"dt\":500,\"client\":2,\"type\":\"ok\",\"f\":\"acquire\",\"key\":0,\"token\":9}",
            "{\"backend\":\"redlock\",\"dt\":400,\"client\":2,\"type\":\"ok\",\"f\":\"write\",\"key\":0,\"dk\":-11,\"stale\":false,\"grant\":3}",
            "{\"backend\":\"redlock\",\"dt\":-1000890,\"client\":5,\"type\":\"info\",\"f\":\"acquire\",\"key\":3,\"dk\":5,\"error\":\"timeout\"}",
        ];
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        assert!(text.ends_with("}\n"));
    }
}
