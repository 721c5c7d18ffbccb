//! `history.jsonl.zst`: the history on disk, as zstd-framed JSON lines written while the run goes.
//!
//! An hour of redis-setnx at full speed is about 12 GB of JSON lines; compressed it is a
//! fraction of that, and still readable with standard tools: `zstdcat history.jsonl.zst | head`.
//! The file is a sequence of independent zstd *frames* (the zstd format allows any number of
//! frames back to back, and `zstdcat` prints them all). The writer ([`FrameWriter`]) gathers
//! lines in memory and closes a frame, in one `write(2)`, every [`FRAME_BYTES`] of text or
//! [`FRAME_EVERY`], whichever comes first; fault events are appended as frames of their own
//! ([`append_frame`]) the moment they happen. So a run that is killed (even `kill -9`) keeps
//! every frame written before: at most the last [`FRAME_EVERY`] of ops is lost, and a frame
//! torn by the kill is read up to where it was cut ([`open`] treats a decoding error as the end
//! of the file and says so in [`Reader::truncated`]).
//!
//! Op lines are compact: times and fencing tokens relative to the line before in the same
//! frame ([`super::compact`]; ~half the bytes of absolute values once compressed).
//!
//! Lines are in arrival order, not time order: each client slot ships its ops in chunks (see
//! `lockbench_workloads::recorder`). [`super::ordered`] puts them back in time order.

use super::compact::{self, Chain};
use crate::op::Op;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The history's file name in a run directory.
pub const FILE_NAME: &str = "history.jsonl.zst";
/// The name runs made before compression used (plain JSON lines); still read.
pub const LEGACY_FILE_NAME: &str = "history.jsonl";
/// A frame is closed once this much text is buffered.
pub const FRAME_BYTES: usize = 4 << 20;
/// ... or once its first line is this old.
pub const FRAME_EVERY: Duration = Duration::from_secs(1);
/// zstd level. The history is compressed while the run measures, on the same cores as its
/// clients, so the level is the fastest: with level 9, compressing took 14 % of lockbench's CPU
/// in `redis-throughput` (50 clients on 50 keys, `perf record`), and level 1 cut lockbench's CPU
/// per acquisition from 37.5-44.4 us to 31.8-36.6 us (three runs each, interleaved). On compact
/// lines ([`compact`]) in 4 MB frames level 1 writes 1.37x level 9's bytes (32.4 B per
/// acquisition against 23.7, docs/soak.md): an hour at full speed still fits well under 1 GB.
const LEVEL: i32 = 1;

/// The history file of run directory `dir`: the compressed one, or a legacy plain one.
pub fn path_in(dir: &Path) -> PathBuf {
    let zst = dir.join(FILE_NAME);
    let legacy = dir.join(LEGACY_FILE_NAME);
    if !zst.exists() && legacy.exists() {
        legacy
    } else {
        zst
    }
}

/// Appends text to the history file as zstd frames.
pub struct FrameWriter {
    file: File,
    zstd: zstd::bulk::Compressor<'static>,
    raw: Vec<u8>,
    since: Option<Instant>,
    written: u64,
    /// The compact encoding's state within the frame being gathered.
    chain: Chain,
    /// Whether the format line was written.
    described: bool,
}

impl FrameWriter {
    /// Opens (creating it) `path` for appending.
    pub fn append(path: &Path) -> io::Result<FrameWriter> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        Ok(FrameWriter {
            file,
            zstd: zstd::bulk::Compressor::new(LEVEL)?,
            raw: Vec::with_capacity(FRAME_BYTES + (64 << 10)),
            since: None,
            written,
            chain: Chain::default(),
            described: false,
        })
    }

    /// The buffer to append whole lines to; call [`FrameWriter::maybe_flush`] after. The next
    /// [`FrameWriter::push_op`] writes absolute values again.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        self.since.get_or_insert_with(Instant::now);
        self.chain.reset();
        &mut self.raw
    }

    /// Appends `op` as a compact line (time and token relative to the line before in the same
    /// frame, see [`compact`]), after a `"type":"format"` line if it is the writer's first.
    pub fn push_op(&mut self, op: &Op, backend: Option<&str>) {
        self.since.get_or_insert_with(Instant::now);
        if !self.described {
            compact::write_format_line(backend, &mut self.raw);
            self.described = true;
        }
        self.chain.write_op(op, backend, &mut self.raw);
    }

    /// Closes a frame if the buffer is big or old enough.
    pub fn maybe_flush(&mut self) -> io::Result<()> {
        let old = self.since.is_some_and(|t| t.elapsed() >= FRAME_EVERY);
        if self.raw.len() >= FRAME_BYTES || old {
            self.flush()?;
        }
        Ok(())
    }

    /// Compresses the buffered lines into one frame and appends it in one write.
    pub fn flush(&mut self) -> io::Result<()> {
        self.since = None;
        // Every frame decodes on its own: its first op line has absolute values.
        self.chain.reset();
        if self.raw.is_empty() {
            return Ok(());
        }
        let frame = self.zstd.compress(&self.raw)?;
        self.raw.clear();
        self.file.write_all(&frame)?;
        self.written += frame.len() as u64;
        Ok(())
    }

    /// The file's length after the last frame written.
    pub fn len(&self) -> u64 {
        self.written
    }

    /// `true` when nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }
}

impl Drop for FrameWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Appends `lines` to `path` as one frame, in one `write(2)` on an `O_APPEND` file, so it never
/// interleaves with a [`FrameWriter`]'s frames.
pub fn append_frame(path: &Path, lines: &[u8]) -> io::Result<()> {
    let frame = zstd::bulk::compress(lines, LEVEL)?;
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&frame)
}

/// A decompressing reader that ends, rather than fails, where the file stops decoding (a frame
/// torn by a kill), remembering that it did.
pub struct Reader {
    inner: Box<dyn Read + Send>,
    truncated: Option<String>,
}

impl Reader {
    /// Why reading stopped before the end of the file, if it did.
    pub fn truncated(&self) -> Option<&str> {
        self.truncated.as_deref()
    }
}

impl Read for Reader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.truncated.is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                self.truncated = Some(e.to_string());
                Ok(0)
            }
            other => other,
        }
    }
}

/// Opens a history file for reading lines, from byte `offset` (a frame boundary, e.g. where one
/// backend's frames start): zstd-decoded when the name ends in `.zst`, plain otherwise.
pub fn open(path: &Path, offset: u64) -> io::Result<BufReader<Reader>> {
    use std::io::{Seek, SeekFrom};
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let inner: Box<dyn Read + Send> = if path.extension().is_some_and(|e| e == "zst") {
        Box::new(zstd::stream::read::Decoder::new(file)?)
    } else {
        Box::new(file)
    };
    Ok(BufReader::with_capacity(
        1 << 16,
        Reader {
            inner,
            truncated: None,
        },
    ))
}

/// The lines of a history file, lossily decoded, op lines expanded to absolute `t` and
/// `token` ([`Chain::expand`]) and the format line (which describes the compact lines) left
/// out: the text of a history written before the compact lines.
pub fn lines(reader: BufReader<Reader>) -> impl Iterator<Item = String> {
    let mut reader = reader;
    let mut buf = Vec::with_capacity(256);
    let mut chain = Chain::default();
    std::iter::from_fn(move || {
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    if !compact::is_format_line(&line) {
                        return Some(chain.expand(&line));
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_concatenate_and_a_torn_frame_reads_up_to_the_cut() {
        let dir = std::env::temp_dir().join(format!("lb-frames-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        let _ = std::fs::remove_file(&path);
        let mut w = FrameWriter::append(&path).unwrap();
        for i in 0..1000 {
            writeln!(w.buffer(), "{{\"t\":{i}}}").unwrap();
        }
        w.flush().unwrap();
        append_frame(&path, b"{\"t\":1000}\n").unwrap();
        for i in 1001..2000 {
            writeln!(w.buffer(), "{{\"t\":{i}}}").unwrap();
        }
        drop(w);
        let all: Vec<String> = lines(open(&path, 0).unwrap()).collect();
        assert_eq!(all.len(), 2000);
        assert_eq!(all[1000], "{\"t\":1000}\n");
        // Cut the last frame in half, as a kill in the middle of its write would.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 200]).unwrap();
        let mut r = open(&path, 0).unwrap();
        let mut text = String::new();
        r.read_to_string(&mut text).unwrap();
        assert!(r.get_ref().truncated().is_some());
        assert!(
            text.lines().count() >= 1001,
            "the whole frames are still there"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lines_expand_compact_ops_in_every_frame_and_leave_out_the_format_line() {
        use crate::{ClientId, KeyId, Nanos, OpF};
        let dir = std::env::temp_dir().join(format!("lb-compact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        let _ = std::fs::remove_file(&path);
        let mut w = FrameWriter::append(&path).unwrap();
        let ops: Vec<Op> = (0..6)
            .map(|i| Op::invoke(Nanos(1_000 + 7 * i), ClientId(1), OpF::Acquire, KeyId(0)))
            .collect();
        for (i, op) in ops.iter().enumerate() {
            w.push_op(op, Some("b"));
            if i == 2 {
                w.flush().unwrap();
                append_frame(&path, b"{\"type\":\"nemesis\",\"t\":5}\n").unwrap();
            }
        }
        drop(w);
        let text: Vec<String> = lines(open(&path, 0).unwrap()).collect();
        let mut want: Vec<String> = ops
            .iter()
            .map(|op| {
                let mut line = Vec::new();
                op.write_json_line(Some("b"), &mut line);
                String::from_utf8(line).unwrap()
            })
            .collect();
        want.insert(3, "{\"type\":\"nemesis\",\"t\":5}\n".to_string());
        assert_eq!(text, want);
        let raw = std::fs::read(&path).unwrap();
        let raw = zstd::stream::decode_all(raw.as_slice()).unwrap();
        let raw = String::from_utf8(raw).unwrap();
        assert!(raw.lines().next().unwrap().contains("\"type\":\"format\""));
        assert_eq!(raw.matches("\"dt\":7,").count(), 4, "{raw}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
