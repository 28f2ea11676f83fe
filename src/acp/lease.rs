//! This process's leases on the sessions it runs (`store::lease`): taken by `session/new`,
//! `load` and `resume`, checked by every `session/prompt` (SESSION_BUSY with
//! `data.reason = "leased_elsewhere"` while another daemon holds the session), renewed in the
//! background while the session is active, and released once it is not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::sessions::Sessions;
use crate::rpc::RpcError;
use crate::store::{Fence, Holder, LeaseError, Store, StoreError};

/// The leases one process holds.
pub struct Leases {
    holder: Holder,
    ttl: Duration,
    held: Mutex<HashMap<String, Fence>>,
}

impl Leases {
    pub fn new(ttl: Duration) -> Leases {
        Leases {
            holder: Holder::this_process(),
            ttl,
            held: Mutex::default(),
        }
    }

    /// Who this process is in the lease table.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// The fence this process holds for `session`, if any.
    pub fn fence(&self, session: &str) -> Option<Fence> {
        lock(&self.held).get(session).cloned()
    }

    /// Takes (or refreshes) the lease of `session`; a holder that is a dead process of this
    /// host loses it at once.
    pub async fn claim(&self, store: &Store, session: &str) -> Result<Fence, StoreError> {
        let ttl = self.ttl_ms();
        let fence = match store.acquire_lease(session, &self.holder, ttl).await {
            Err(StoreError::Lease(LeaseError::Held { holder, .. }))
                if Holder::from_name(holder.clone()).is_dead_local_process() =>
            {
                tracing::info!(session, %holder, "taking over the lease of a process that ended");
                store
                    .steal_lease(session, &self.holder, ttl, &holder)
                    .await?
            }
            other => other?,
        };
        lock(&self.held).insert(session.to_owned(), fence.clone());
        Ok(fence)
    }

    /// Forgets `session`'s fence (it was taken over).
    pub fn lost(&self, session: &str) {
        lock(&self.held).remove(session);
    }

    /// Renews the leases of `sessions`' active sessions in `store` every third of the lease
    /// time and releases the others; ends once the leases or the sessions are dropped.
    pub fn spawn_renewal(leases: &Arc<Leases>, store: Option<Store>, sessions: &Arc<Sessions>) {
        let Some(store) = store else {
            return;
        };
        let (leases, sessions) = (Arc::downgrade(leases), Arc::downgrade(sessions));
        let Some(period) = leases.upgrade().map(|l| l.ttl / 3) else {
            return;
        };
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period.max(Duration::from_millis(100)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let (Some(leases), Some(sessions)) = (leases.upgrade(), sessions.upgrade()) else {
                    break;
                };
                leases.renew(&store, &sessions).await;
            }
        });
    }

    async fn renew(&self, store: &Store, sessions: &Sessions) {
        let (active, idle): (Vec<Fence>, Vec<Fence>) = lock(&self.held)
            .values()
            .cloned()
            .partition(|f| sessions.contains(&f.session));
        for fence in idle {
            self.lost(&fence.session);
            if let Err(error) = store.release_lease(fence).await {
                tracing::warn!(%error, "releasing a session lease failed");
            }
        }
        if active.is_empty() {
            return;
        }
        match store.renew_leases(active, self.ttl_ms()).await {
            Ok(lost) => {
                for fence in lost {
                    tracing::warn!(session = %fence.session, "session lease taken over by another daemon");
                    self.lost(&fence.session);
                }
            }
            Err(error) => tracing::warn!(%error, "renewing session leases failed"),
        }
    }

    /// Gives up every lease (a clean exit: other daemons need not wait for expiry).
    pub async fn release_all(&self, store: &Store) {
        let fences: Vec<Fence> = lock(&self.held).drain().map(|(_, f)| f).collect();
        for fence in fences {
            let _ = store.release_lease(fence).await;
        }
    }
}

/// The fence a turn of `session` is written under: the lease this process holds, or a fresh
/// claim; another live holder is SESSION_BUSY (`leased_elsewhere`, naming it).
pub async fn for_turn(
    leases: &Leases,
    store: Option<&Store>,
    session: &str,
) -> Result<Option<Fence>, RpcError> {
    let Some(store) = store else {
        return Ok(None);
    };
    if let Some(fence) = leases.fence(session) {
        return Ok(Some(fence));
    }
    match leases.claim(store, session).await {
        Ok(fence) => Ok(Some(fence)),
        Err(StoreError::Lease(LeaseError::Held {
            holder,
            expires_in_ms,
            ..
        })) => Err(leased_elsewhere(session, &holder, expires_in_ms)),
        Err(error) => Err(RpcError::internal(format!("session store: {error}"))),
    }
}

/// Takes the lease for a loaded or new session; held elsewhere only logs (its prompts will
/// answer SESSION_BUSY until the lease is free).
pub async fn on_open(
    leases: &Leases,
    store: Option<&Store>,
    session: &str,
) -> Result<(), RpcError> {
    let Some(store) = store else {
        return Ok(());
    };
    match leases.claim(store, session).await {
        Ok(_) => Ok(()),
        Err(StoreError::Lease(LeaseError::Held { holder, .. })) => {
            tracing::info!(session, %holder, "session opened while another daemon holds its lease");
            Ok(())
        }
        Err(error) => Err(RpcError::internal(format!("session store: {error}"))),
    }
}

/// -32003 with `data.reason = "leased_elsewhere"` and the holder.
pub fn leased_elsewhere(session: &str, holder: &str, expires_in_ms: i64) -> RpcError {
    RpcError::session_busy(format!(
        "session {session} is running on another daemon ({holder}); its lease expires in {} s unless renewed",
        (expires_in_ms.max(0) + 999) / 1000
    ))
    .with_data(json!({"reason": "leased_elsewhere", "holder": holder}))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
