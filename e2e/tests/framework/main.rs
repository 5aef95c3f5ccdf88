//! The reconcile framework against the API emulator: the runner's finalizer lifecycle, panic capture, retries
//! and graceful shutdown, passes never starting from a copy older than their own last write, the children
//! applier's labels, ownership, pruning and no-op skipping, and Lease leader election. Each test is a story
//! about one framework contract.

mod support;

mod children;
mod leader;
mod own_writes;
mod runner;
mod secret_hygiene;
mod trigger_errors;
