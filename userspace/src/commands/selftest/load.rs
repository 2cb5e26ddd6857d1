//! The self-check's load in the lab: rxsteer's HTTP server in the server namespace, counting
//! what it answers, and rxload in the client namespace sending exactly `requests` paced
//! requests (open loop). Both stop by themselves: rxload at its count or its deadline, the
//! server with this process.
use anyhow::{bail, Context, Result};
use std::{
    net::SocketAddr,
    process::{Child, Stdio},
    sync::{atomic::Ordering, Arc},
    time::Duration,
};

use rxsteer_records::LoadResult;
use rxsteer_server::{PerProto, Proto, ServeConfig, Served};
use rxsteer_tune::cpus::format_cpu_list;

use crate::{
    child::{die_with_parent, rxload_path, stderr_of, terminate},
    embedded_lab::{EmbeddedLab, Roles},
};

/// The lab's HTTP port, counted as HTTP by the observer's default ports.
const PORT: u16 = 8080;

pub struct PacedLoad {
    served: Arc<Served>,
    rxload: Child,
    /// rxload's result file, in the lab's own private directory, removed on drop.
    json: std::path::PathBuf,
}

impl Drop for PacedLoad {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.json);
    }
}

impl PacedLoad {
    /// Starts the server, then rxload: `requests` at `rate` per second over `connections`,
    /// no warm-up, and a deadline well past the schedule's end.
    pub fn start(
        lab: &EmbeddedLab,
        roles: &Roles,
        requests: u64,
        rate: u32,
        connections: u32,
    ) -> Result<Self> {
        let addr = SocketAddr::from((lab.veth.server_ip, PORT));
        let cpus = roles.server_cpus.clone();
        let server = lab
            .veth
            .server
            .spawn(None, move || {
                let cfg = ServeConfig {
                    listen: PerProto::each(|p| (p == Proto::Http).then_some(addr)),
                    threads: cpus.len(),
                    cpus: Some(cpus),
                    ..ServeConfig::default()
                };
                rxsteer_server::start(cfg)
            })
            .join()
            .expect("server thread")?;
        // /run/rxsteer is the lab owner's directory (0700, root's).
        let json =
            std::path::PathBuf::from(format!("/run/rxsteer/selftest-{}.json", std::process::id()));
        let deadline = Duration::from_secs_f64(requests as f64 / rate as f64) + LATE;
        let mut c = lab.veth.client.command("taskset");
        c.args(["-c", &format_cpu_list(&roles.loader_cpus)])
            .arg(rxload_path()?)
            .arg(format!("http://{addr}/health"))
            .args(["-c", &connections.to_string(), "-t", "1"])
            .args(["-n", &requests.to_string(), "--rate", &rate.to_string()])
            .args(["--warmup", "0s", "--max-errors", "100"])
            .arg("-d")
            .arg(format!("{}ms", deadline.as_millis()))
            .arg("--json")
            .arg(&json)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        die_with_parent(&mut c);
        let rxload = c.spawn().context("starting rxload in the lab")?;
        Ok(Self {
            served: server.served,
            rxload,
            json,
        })
    }

    /// Waits for rxload to finish (it stops by itself), then its result and the server's
    /// count of what it answered.
    pub fn finish(mut self) -> Result<(LoadResult, u64)> {
        let status = self.rxload.wait()?;
        let stderr = stderr_of(&mut self.rxload);
        if !status.success() {
            bail!("rxload failed ({status}): {}", stderr.trim());
        }
        let text = std::fs::read_to_string(&self.json)
            .with_context(|| format!("reading rxload's result {}", self.json.display()))?;
        let result: LoadResult =
            serde_json::from_str(&text).context("rxload's result is not a load result")?;
        Ok((result, self.served.of(Proto::Http).load(Ordering::SeqCst)))
    }

    /// Ends rxload now (an interrupted check).
    pub fn stop(mut self) {
        terminate(&mut self.rxload);
    }
}

/// How long past its schedule rxload may run before its deadline ends it.
const LATE: Duration = Duration::from_secs(10);
