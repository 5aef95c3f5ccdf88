//! Waiting for a condition with a deadline, instead of sleeping and hoping (shared with the emulators' own
//! tests through `emulator-kit`).

pub use emulator_kit::wait::{Deadline, try_wait_until, wait_until};
