//! `serve --io epoll`: tokio's current-thread runtime over epoll, one per worker thread.
use anyhow::{Context, Result};
use std::{net::TcpListener, sync::Arc};

use crate::{
    admit,
    busy_poll::{self, BusyPoll},
    config::ConnConfig,
    framing::with_framing,
    Proto, Served,
};

mod conn;

/// One worker's engine: a tokio current-thread runtime, one accept task per listener, one
/// task per connection. `started` hears whether the runtime came up (with busy polling, if
/// asked).
pub fn worker(
    listeners: Vec<(Proto, TcpListener)>,
    conn: Arc<ConnConfig>,
    served: Arc<Served>,
    bp: Option<BusyPoll>,
    mut started: impl FnMut(&Result<()>),
) -> Result<()> {
    // Which epoll instances there were before the runtime's, only where they are asked about.
    let before = bp.map(|bp| (bp, busy_poll::epoll_fds()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("starting a tokio runtime")
        .and_then(|rt| {
            if let Some((bp, before)) = &before {
                with_busy_poll(before, *bp)?;
            }
            Ok(rt)
        });
    let rt = match rt {
        Ok(rt) => {
            started(&Ok(()));
            rt
        }
        Err(e) => {
            started(&Err(e));
            return Ok(());
        }
    };
    // One limit for the worker, whichever listener a connection came in on.
    let limit = Arc::new(admit::Limit::new(conn.max_connections));
    rt.block_on(async move {
        for (t, l) in listeners {
            let l = tokio::net::TcpListener::from_std(l)?;
            let (conn, served, limit) =
                (Arc::clone(&conn), Arc::clone(&served), Arc::clone(&limit));
            tokio::spawn(accept_loop(t, l, conn, served, limit));
        }
        std::future::pending::<Result<()>>().await
    })
}

/// Busy polling on the runtime's epoll instance, which tokio keeps to itself: the one that
/// appeared among the process's descriptors while it was built (another worker's, built at
/// the same moment, may be set twice: the same values).
fn with_busy_poll(before: &[std::os::fd::RawFd], bp: BusyPoll) -> Result<()> {
    let new: Vec<_> = busy_poll::epoll_fds()
        .into_iter()
        .filter(|fd| !before.contains(fd))
        .collect();
    if new.is_empty() {
        anyhow::bail!("busy polling: no epoll instance appeared with the worker's runtime");
    }
    new.into_iter()
        .try_for_each(|fd| busy_poll::on_epoll(fd, bp))
}

/// Accepts on one listener for ever: past the worker's limit a connection is closed at once
/// and counted; out of descriptors or memory, accepting pauses (see `admit`).
async fn accept_loop(
    t: Proto,
    l: tokio::net::TcpListener,
    conn: Arc<ConnConfig>,
    served: Arc<Served>,
    limit: Arc<admit::Limit>,
) {
    let mut backoff = admit::Backoff::default();
    loop {
        let s = match l.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                served
                    .accept_errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (pause, line) = backoff.on_error(&e, std::time::Instant::now());
                if let Some(line) = line {
                    eprintln!("{line}");
                }
                if let Some(p) = pause {
                    tokio::time::sleep(p).await;
                }
                continue;
            }
        };
        backoff.on_accept();
        let Some(place) = limit.admit(&served.refused) else {
            admit::refuse(&s);
            drop(s);
            // A flood past the limit must not take the worker's turns from the connections
            // it holds: tokio would let this task refuse a whole budget (128) of them before
            // any other ran (serve_limits' flood test saw p99 in milliseconds). One refusal
            // per turn: the open connections run between any two.
            tokio::task::yield_now().await;
            continue;
        };
        let _ = s.set_nodelay(true);
        let (conn, served) = (Arc::clone(&conn), Arc::clone(&served));
        tokio::spawn(async move {
            let _place = place;
            let _ = with_framing!(t, F => conn::serve::<F>(s, &conn, served.of(t)).await);
        });
    }
}
