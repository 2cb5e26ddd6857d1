//! `rxsteer top`: attach the observe programs to an interface and show where the receive
//! work runs, per CPU and over time, until Ctrl-C, SIGTERM or `--count`.
use anyhow::Result;
use rxsteer_dataplane::{PortConfig, RX_ACCOUNT};

use crate::{
    iface,
    observe::{check_tc, observe_only, say_observed, Exporter, ObserveArgs},
    ports::check_disjoint,
    privilege,
    signals::stop_on_signals,
};

pub fn run(args: &ObserveArgs) -> Result<()> {
    // Handlers first: a Ctrl-C or SIGTERM during setup must still end in a clean exit that
    // detaches and reverts, not the default death.
    let stop = stop_on_signals()?;
    check_disjoint(&args.http_ports.0, &args.zap_ports.0)?;
    check_tc(args.tc)?;
    privilege::require("rxsteer top", privilege::OBSERVE)?;
    iface::require_up(&args.iface)?;
    let endpoint = args.open_metrics()?;
    rxsteer_dataplane::clsact::recover_crashed()?;
    let ports = PortConfig {
        http: args.http_ports.0.clone(),
        zap: args.zap_ports.0.clone(),
    };
    // Everything attached below is owned by `dp` and detached when it drops: on return, on
    // error and on panic (unwinding). XDP uses a bpf_link, so a SIGKILL detaches it too.
    let (dp, how, sampler) = observe_only(args, &ports)?;
    say_observed(&how, &args.iface, RX_ACCOUNT, args.xdp_mode, "none");
    let exporter = endpoint.map(|e| Exporter::new(e, &args.iface, &how, "none"));
    let shown = args.show(sampler, how, &stop, exporter);
    drop(dp);
    shown
}
