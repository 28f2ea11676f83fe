//! A tool's update sink that forwards everything and keeps the `plan` updates, so the turn can
//! store the plan the client saw and `session/load` can replay it.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::tools::{BoxFuture, UpdateSink};

/// Forwards a tool's updates and keeps the `plan` ones, so the history can replay them.
pub struct PlanRecorder {
    inner: Arc<dyn UpdateSink>,
    plans: Mutex<Vec<Value>>,
}

impl PlanRecorder {
    pub fn new(inner: Arc<dyn UpdateSink>) -> Self {
        Self {
            inner,
            plans: Mutex::default(),
        }
    }

    pub fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.plans.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl UpdateSink for PlanRecorder {
    fn send(&self, update: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if update["sessionUpdate"] == "plan" {
                let entries = update["entries"].clone();
                self.plans
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(entries);
            }
            self.inner.send(update).await;
        })
    }
}
