//! The tunnels' idle watchdog: one clock for the copying relay (`tunnel`) and the splicing
//! one (`splice`), which both note the time of their last transfer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Ends once nothing has moved for `idle`: `last` holds the milliseconds since `start` of
/// the last transfer (the tunnel relays, copying or splicing, keep it).
pub(super) async fn quiet_for(idle: Duration, start: Instant, last: &AtomicU64) {
    loop {
        let quiet = start
            .elapsed()
            .saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
        if quiet >= idle {
            return;
        }
        tokio::time::sleep(idle - quiet).await;
    }
}
