//! The audit of a call's network: the egress proxy's [`Observer`] for one tool call, writing a
//! `network.connection` record ([`crate::audit::network`]) per connection and a
//! `credential.use` record per request a credential went into (or was refused), with the
//! call's fields. The connection cannot be undone, so a record that cannot be written is logged
//! ([`crate::audit::note`]), not failed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::ToolContext;
use crate::approval::gate;
use crate::audit;
use crate::egress::proxy::{Connection, CredentialUse, Observer};

/// The observer of the connections of the call `ctx`.
pub fn for_call(ctx: &ToolContext) -> Arc<dyn Observer> {
    let base = gate::call_event(ctx, audit::network::KIND, "network");
    let credential = gate::call_event(ctx, audit::network::CREDENTIAL_KIND, "network");
    Arc::new(CallNetwork { base, credential })
}

/// Records the connections of one call.
struct CallNetwork {
    /// The call fields every record carries.
    base: audit::Event,
    /// The same, for `credential.use` records.
    credential: audit::Event,
}

impl Observer for CallNetwork {
    fn connection<'a>(&'a self, c: Connection) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let event = audit::network::with_connection(self.base.clone().at_now(), &c);
        Box::pin(audit::note(event))
    }

    fn credential<'a>(&'a self, u: CredentialUse) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let event = audit::network::with_credential(self.credential.clone().at_now(), &u);
        Box::pin(audit::note(event))
    }
}
