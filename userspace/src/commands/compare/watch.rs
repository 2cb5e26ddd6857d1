//! Follows one running load: rxload's live lines (tailed from its `--live` file) and attach's
//! samples, each sample tagged with the phase the load was in when it arrived (`warmup` or
//! `measure`), so per-CPU figures come from the measured window only. The caller is told of
//! everything through a callback (the live screen draws it) and may ask to stop.
use anyhow::Result;
use rxsteer_records::{LiveLine, Phase, SampleLine};
use serde::{Deserialize, Serialize};
use std::{
    io::{BufRead, BufReader, Seek, SeekFrom},
    path::Path,
    process::Child,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use rxsteer_dataplane::cputime::ProcessClock;

/// A stored sample: attach's line, the phase it belongs to, and the server's and loader's
/// CPU time per CPU over (about) the same interval.
pub struct Tagged {
    pub phase: Phase,
    pub line: SampleLine,
    pub procs: ProcessNs,
}

/// What [`follow`] reports as it goes.
pub enum Event<'a> {
    /// One of rxload's live lines.
    Live(&'a LiveLine),
    /// One of attach's samples.
    Sample(&'a SampleLine),
    /// Nothing new; the caller may redraw or read its keys.
    Idle,
}

/// ns per CPU id the server and the local loader processes ran, over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessNs {
    pub server: std::collections::BTreeMap<u32, u64>,
    pub loader: std::collections::BTreeMap<u32, u64>,
}

/// The server's and the local loaders' CPU clocks, read as each sample arrives (read from
/// outside, /proc/PID/task/*/stat, the same way for both).
pub struct Clocks {
    server: ProcessClock,
    loader: ProcessClock,
}

impl Clocks {
    pub fn new(server: u32, loaders: Vec<u32>) -> Self {
        Self {
            server: ProcessClock::new(vec![server]),
            loader: ProcessClock::new(loaders),
        }
    }

    pub fn take(&mut self) -> ProcessNs {
        ProcessNs {
            server: self.server.take(),
            loader: self.loader.take(),
        }
    }
}

pub enum Ended {
    /// Every rxload exited (their statuses are the loader's to check), or the external
    /// window passed.
    Done,
    /// The user or a signal asked to stop.
    Stopped,
}

/// Reads whole lines appended to a file since the last call.
pub struct Tail {
    path: std::path::PathBuf,
    pos: u64,
    partial: String,
}

impl Tail {
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            pos: 0,
            partial: String::new(),
        }
    }

    pub fn lines(&mut self) -> Vec<String> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return vec![];
        };
        if f.seek(SeekFrom::Start(self.pos)).is_err() {
            return vec![];
        }
        let mut out = vec![];
        let mut r = BufReader::new(f);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    self.pos += n as u64;
                    self.partial.push_str(&line);
                    if self.partial.ends_with('\n') {
                        out.push(std::mem::take(&mut self.partial));
                    }
                }
            }
        }
        out
    }
}

/// Follows the load until every rxload exits (or, with none, for `window`), or until stopped.
#[allow(clippy::too_many_arguments)]
pub fn follow(
    load: &mut [Child],
    window: Duration,
    live_file: &Path,
    samples: &mpsc::Receiver<SampleLine>,
    clocks: &mut Clocks,
    on: &mut dyn FnMut(Event) -> Result<bool>,
    stop: &AtomicBool,
    tagged: &mut Vec<Tagged>,
) -> Result<Ended> {
    let start = Instant::now();
    let mut tail = Tail::new(live_file);
    // With no rxload of ours there is no warm-up line to wait for: all of it is measured.
    let mut phase = if load.is_empty() {
        Phase::Measure
    } else {
        Phase::Warmup
    };
    loop {
        let mut quit = false;
        for line in tail.lines() {
            if let Ok(l) = serde_json::from_str::<LiveLine>(&line) {
                if l.phase == Phase::Measure {
                    phase = Phase::Measure;
                }
                quit |= on(Event::Live(&l))?;
            }
        }
        while let Ok(line) = samples.try_recv() {
            quit |= on(Event::Sample(&line))?;
            tagged.push(Tagged {
                phase,
                line,
                procs: clocks.take(),
            });
        }
        if quit || on(Event::Idle)? || stop.load(Ordering::SeqCst) {
            return Ok(Ended::Stopped);
        }
        let done = if load.is_empty() {
            start.elapsed() >= window
        } else {
            let mut all = true;
            for c in load.iter_mut() {
                all &= c.try_wait()?.is_some();
            }
            all
        };
        if done {
            return Ok(Ended::Done);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn tail_returns_only_whole_new_lines() {
        let p = std::env::temp_dir().join(format!("rxsteer-tail-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let mut t = Tail::new(&p);
        assert!(t.lines().is_empty(), "no file yet");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(b"one\ntw").unwrap();
        assert_eq!(t.lines(), ["one\n"]);
        f.write_all(b"o\nthree\n").unwrap();
        assert_eq!(t.lines(), ["two\n", "three\n"]);
        assert!(t.lines().is_empty());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn live_lines_parse() {
        let l: LiveLine = serde_json::from_str(
            r#"{"t_s":1.5,"phase":"measure","req_per_s":1000.0,"errors":0,"p50_us":80,"p99_us":400,"max_us":900}"#,
        )
        .unwrap();
        assert_eq!(l.phase, Phase::Measure);
        assert_eq!(l.p99_us, 400);
    }
}
