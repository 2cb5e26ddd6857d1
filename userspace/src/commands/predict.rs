//! `rxsteer predict DIR --cpus N`: what each arm of a stored run would serve on more CPUs,
//! from its measured costs per request and stage (the model lives in the report crate).
use anyhow::Result;

#[derive(clap::Args)]
pub struct PredictArgs {
    /// A comparison's run directory (its run.json must have every CPU's time split).
    pub dir: std::path::PathBuf,
    /// The CPU count to predict for (1 to 4096).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus: u32,
    /// The run's RX core (default: the lab's, from run.json).
    #[arg(long)]
    pub rx_cpu: Option<u32>,
    /// Where the load generator runs on the predicted box.
    #[arg(long, value_enum, default_value = "remote")]
    pub loader: rxsteer_records::LoaderPlace,
    /// Another stored run (e.g. an open-loop --rate run) to check the fitted costs against.
    #[arg(long)]
    pub check: Option<std::path::PathBuf>,
    /// The predicted box's RX core against the fitted run's, in speed (0.05-20; a GB10's
    /// efficiency core against the lab's: measure, or take cpu_capacity's ratio).
    #[arg(long, default_value = "1", value_parser = speed)]
    pub rx_speed: f64,
    /// The core the irq-affinity arm moves the interrupt to, against the fitted run's RX core
    /// (default: --rx-speed). On the GB10, a Cortex-X925 is about 1024/480 an A725.
    #[arg(long, value_parser = speed)]
    pub irq_core_speed: Option<f64>,
}

/// A core's relative speed: 0.05 to 20.
fn speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.05..=20.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a speed ratio from 0.05 to 20")),
    }
}

pub fn run(a: &PredictArgs) -> Result<()> {
    rxsteer_report::predict::run(&rxsteer_report::predict::Ask {
        dir: &a.dir,
        cpus: a.cpus,
        rx_cpu: a.rx_cpu,
        loader: a.loader,
        check: a.check.as_deref(),
        rx_speed: a.rx_speed,
        irq_core_speed: a.irq_core_speed.unwrap_or(a.rx_speed),
    })
}
